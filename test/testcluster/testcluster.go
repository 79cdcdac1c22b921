// Package testcluster starts real cosmosd nodes in the test process: an
// embedded etcd and N nodes, each with its own Pebble store on disk and its
// own listeners on loopback, for tests that drive the database through
// real drivers and real gRPC.
//
// Single-node clusters listen on 127.0.0.1 with ports chosen by the kernel.
// Multi-node clusters put node i on 127.0.0.(i+1) and give every node the
// same CQL port, because drivers reach discovered peers on the port they
// were configured with.
package testcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosmosd/cosmosd/cluster/embedded"
	"github.com/cosmosd/cosmosd/daemon"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	"github.com/cosmosd/cosmosd/security"
)

// Options configures a test cluster.
type Options struct {
	// Nodes is the number of nodes (default 1).
	Nodes int
	// Consensus is "local" (default for one node) or "raft".
	Consensus string
	// Configure adjusts node i's configuration before it starts.
	Configure func(i int, cfg *daemon.Config)
	// TLS runs the cluster secure (docs/security.md): a CA, a node
	// certificate for 127.0.0.1-127.0.0.9 and a client certificate
	// "root" are made in CertsDir; every node serves TLS with mutual TLS
	// between nodes, etcd serves TLS and requires client certificates,
	// and the cluster's clients (Session, NewClusterConfig, Admin)
	// present the root certificate.
	TLS bool
	// CQLRequireClientCert sets cql_require_client_cert (with TLS).
	CQLRequireClientCert bool
	// Password turns authentication on (authenticator password): the
	// superuser role Superuser is created with this password on the
	// first start, and the cluster's clients (Session, NewClusterConfig)
	// log in as it. Passwords are hashed at bcrypt's lowest cost, as
	// logins at the default cost take a second under the race detector.
	Password string
}

// Cluster is a running test cluster.
type Cluster struct {
	t     testing.TB
	opts  Options
	Etcd  *embedded.Server
	Nodes []*daemon.Node
	cfgs  []daemon.Config
	dir   string
	port  string
	// CertsDir holds the certificates of a TLS cluster (Options.TLS).
	CertsDir string
	// passwordFile holds Options.Password for the nodes.
	passwordFile string
}

// Superuser is the role the clients of a cluster with Options.Password
// log in as.
const Superuser = "cassandra"

// Start starts a cluster and stops it when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Nodes == 0 {
		opts.Nodes = 1
	}
	if opts.Consensus == "" {
		opts.Consensus = "local"
		if opts.Nodes > 1 {
			opts.Consensus = "raft"
		}
	}
	c := &Cluster{t: t, opts: opts, dir: t.TempDir()}
	if opts.Password != "" {
		c.passwordFile = filepath.Join(c.dir, "superuser-password")
		if err := os.WriteFile(c.passwordFile, []byte(opts.Password+"\n"), 0o600); err != nil {
			t.Fatalf("superuser password file: %v", err)
		}
	}
	ecfg := embedded.Config{Dir: filepath.Join(c.dir, "etcd"), ClientAddr: "127.0.0.1:0", UnsafeNoFsync: true}
	if opts.TLS {
		c.CertsDir = filepath.Join(c.dir, "certs")
		MakeCerts(t, c.CertsDir)
		f := security.NodeFiles(c.CertsDir)
		ecfg.TLS = &embedded.TLS{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA}
	}
	var err error
	c.Etcd, err = embedded.Start(ecfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(c.Stop)
	if opts.Nodes > 1 {
		c.port = freePort(t)
	}
	for i := 0; i < opts.Nodes; i++ {
		cfg := c.nodeConfig(i)
		c.cfgs = append(c.cfgs, cfg)
		n, err := daemon.Start(context.Background(), cfg)
		if err != nil {
			t.Fatalf("start node %d: %v", i, err)
		}
		// A restart must listen where clients knew the node, also when
		// the kernel chose the port.
		c.cfgs[i].CQLAddr = n.CQLAddr()
		c.Nodes = append(c.Nodes, n)
	}
	return c
}

func (c *Cluster) nodeConfig(i int) daemon.Config {
	host := "127.0.0.1"
	cqlPort := "0"
	if c.opts.Nodes > 1 {
		host = fmt.Sprintf("127.0.0.%d", i+1)
		cqlPort = c.port
	}
	cfg := daemon.Config{
		Name:                     fmt.Sprintf("node-%d", i+1),
		DataDir:                  filepath.Join(c.dir, fmt.Sprintf("node-%d", i+1)),
		CQLAddr:                  net.JoinHostPort(host, cqlPort),
		PeerAddr:                 net.JoinHostPort(host, "0"),
		AdminAddr:                net.JoinHostPort(host, "0"),
		HTTPAddr:                 net.JoinHostPort(host, "0"),
		EtcdEndpoints:            c.Etcd.Endpoints(),
		Consensus:                c.opts.Consensus,
		LogLevel:                 "error",
		ShutdownTimeout:          5 * time.Second,
		Labels:                   map[string]string{"dc": "datacenter1", "rack": "rack1"},
		MaxRequestsPerConnection: 2048,
		RegistrationTTL:          2 * time.Second,
	}
	if c.opts.TLS {
		// The test's etcd is external to the nodes: they reach it with
		// etcd_*_file, the node certificate serving as client certificate.
		f := security.NodeFiles(c.CertsDir)
		cfg.CertsDir, cfg.CQLRequireClientCert = c.CertsDir, c.opts.CQLRequireClientCert
		cfg.EtcdCAFile, cfg.EtcdCertFile, cfg.EtcdKeyFile = f.CA, f.Cert, f.Key
	}
	if c.passwordFile != "" {
		cfg.Authenticator, cfg.Superuser, cfg.SuperuserPasswordFile = "password", Superuser, c.passwordFile
		cfg.Knobs = &daemon.Knobs{PasswordHashCost: bcrypt.MinCost}
	}
	if c.opts.Configure != nil {
		c.opts.Configure(i, &cfg)
	}
	return cfg
}

// MakeCerts makes, in dir, what `cosmosd cert` makes for a local test
// cluster: a CA, a node certificate for localhost and 127.0.0.1-127.0.0.9,
// and the client certificate "root".
func MakeCerts(t testing.TB, dir string) {
	t.Helper()
	o := security.CertOptions{Dir: dir}
	if _, err := security.CreateCA(o); err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for i := 1; i <= 9; i++ {
		hosts = append(hosts, fmt.Sprintf("127.0.0.%d", i))
	}
	if _, err := security.CreateNode(o, hosts); err != nil {
		t.Fatal(err)
	}
	if _, err := security.CreateClient(o, "root"); err != nil {
		t.Fatal(err)
	}
}

// ClientTLS returns a TLS configuration that presents client name's
// certificate from dir and trusts its ca.crt, as cosmosctl does.
func ClientTLS(t testing.TB, dir, name string) *tls.Config {
	t.Helper()
	r, err := security.NewReloader(security.ClientFiles(dir, name), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.ClientConfig(security.ClientOptions{})
}

func freePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p
}

// Stop stops every node and etcd. Safe to call twice.
func (c *Cluster) Stop() {
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		if c.Nodes[i] != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := c.Nodes[i].Close(ctx); err != nil {
				c.t.Logf("stop node %d: %v", i, err)
			}
			cancel()
			c.Nodes[i] = nil
		}
	}
	if c.Etcd != nil {
		c.Etcd.Close()
		c.Etcd = nil
	}
}

// StopNode stops node i cleanly.
func (c *Cluster) StopNode(i int) {
	c.t.Helper()
	if c.Nodes[i] == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Nodes[i].Close(ctx); err != nil {
		c.t.Logf("stop node %d: %v", i, err)
	}
	c.Nodes[i] = nil
}

// AddNode starts one more node and returns its index.
func (c *Cluster) AddNode() int {
	c.t.Helper()
	i := len(c.Nodes)
	if c.opts.Nodes == 1 {
		c.t.Fatal("AddNode needs a multi-node cluster (distinct loopback addresses)")
	}
	cfg := c.nodeConfig(i)
	n, err := daemon.Start(context.Background(), cfg)
	if err != nil {
		c.t.Fatalf("start node %d: %v", i, err)
	}
	c.cfgs = append(c.cfgs, cfg)
	c.Nodes = append(c.Nodes, n)
	return i
}

// Admin returns an admin API client on node i, closed when the test ends.
func (c *Cluster) Admin(t testing.TB, i int) adminpb.AdminClient {
	t.Helper()
	creds := insecure.NewCredentials()
	if c.opts.TLS {
		creds = credentials.NewTLS(ClientTLS(t, c.CertsDir, "root"))
	}
	cc, err := grpc.NewClient(c.Nodes[i].AdminAddr(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return adminpb.NewAdminClient(cc)
}

// Live returns the first node that runs.
func (c *Cluster) Live() *daemon.Node {
	for _, n := range c.Nodes {
		if n != nil {
			return n
		}
	}
	c.t.Fatal("no live node")
	return nil
}

// KillNode stops node i abruptly, as a crash would.
func (c *Cluster) KillNode(i int) {
	c.t.Helper()
	if c.Nodes[i] != nil {
		c.Nodes[i].Kill()
		c.Nodes[i] = nil
	}
}

// RestartNode starts node i again with its data.
func (c *Cluster) RestartNode(i int) *daemon.Node {
	c.t.Helper()
	c.StopNode(i)
	cfg := c.cfgs[i]
	// Reuse the ports the node had, so clients find it where it was.
	n, err := daemon.Start(context.Background(), cfg)
	if err != nil {
		c.t.Fatalf("restart node %d: %v", i, err)
	}
	c.Nodes[i] = n
	return n
}

// CQLHostPort returns node i's CQL host and port.
func (c *Cluster) CQLHostPort(i int) (string, int) {
	host, port, _ := net.SplitHostPort(c.Nodes[i].CQLAddr())
	p, _ := strconv.Atoi(port)
	return host, p
}

// NewClusterConfig returns a gocql configuration for node i.
func (c *Cluster) NewClusterConfig(i int) *gocql.ClusterConfig {
	host, port := c.CQLHostPort(i)
	cc := gocql.NewCluster(host)
	cc.Port = port
	cc.ProtoVersion = 4
	cc.Timeout = 15 * time.Second
	cc.ConnectTimeout = 10 * time.Second
	cc.Consistency = gocql.Quorum
	if c.opts.Password != "" {
		cc.Authenticator = gocql.PasswordAuthenticator{Username: Superuser, Password: c.opts.Password}
	}
	if c.opts.TLS {
		cc.SslOpts = &gocql.SslOptions{CaPath: filepath.Join(c.CertsDir, security.CAFile), EnableHostVerification: true,
			CertPath: filepath.Join(c.CertsDir, security.ClientCertFile("root")), KeyPath: filepath.Join(c.CertsDir, security.ClientKeyFile("root"))}
	}
	return cc
}

// Session opens a gocql session on node i, closed when the test ends.
func (c *Cluster) Session(t testing.TB, i int) *gocql.Session {
	t.Helper()
	s, err := c.NewClusterConfig(i).CreateSession()
	if err != nil {
		t.Fatalf("gocql session on node %d: %v", i, err)
	}
	t.Cleanup(s.Close)
	return s
}
