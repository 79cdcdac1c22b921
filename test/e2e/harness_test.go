package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/placement"
	"github.com/cosmosd/cosmosd/test/blackbox"
	"github.com/cosmosd/cosmosd/test/dockertest"
)

// Timings of the cluster under test: a node that stops renewing its
// registration disappears after registrationTTL and is replaced deadAfter
// later. See the package documentation for why the TTL is 15s.
const (
	registrationTTL = 15 * time.Second
	deadAfter       = 5 * time.Second
	etcdPrefix      = "/cosmosd/"
)

// nodeConfig is the YAML given to every node for what has no flag.
var nodeConfig = fmt.Sprintf("registration_ttl: %s\nrequest_timeout: 8s\nshutdown_timeout: 10s\n", registrationTTL)

// requireDocker skips the test, with the reason, when the e2e tests cannot
// or should not run.
func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: skipped in -short mode (the scenarios take minutes)")
	}
	if v := os.Getenv("COSMOSD_E2E"); v == "0" || v == "false" || v == "off" {
		t.Skip("e2e: skipped because COSMOSD_E2E=" + v)
	}
	if why := dockertest.Problem(); why != "" {
		t.Skip("e2e: needs Docker: " + why)
	}
}

// Container is one host of the cluster.
type Container struct {
	Name string // docker container name
	Host string // cosmosd node name (node-N) or etcd member name (eN)
	IP   string
	ID   uint64 // cosmosd node id; 0 for etcd members
}

// Cluster is 3 etcd members and 5 cosmosd nodes in containers on one
// private network. Methods are for the test goroutine.
type Cluster struct {
	t       *testing.T
	art     *dockertest.Artifacts
	run     *dockertest.Run
	network string
	prefix  string // "10.x.y."
	dir     string
	Etcd    []*Container
	Nodes   []*Container
	etcd    *metakv.EtcdClient
	gocql   *blackbox.LogBuffer
	certs   *certs // the cluster's CA and client certificate (secure_test.go)

	mu     sync.Mutex
	faulty map[*Container]string // nodes that cannot answer now, and why
}

// startCluster starts a cluster that is removed when the test ends.
func startCluster(t *testing.T) *Cluster {
	t.Helper()
	start := time.Now()
	art, err := dockertest.Build(imageRepo)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	c := &Cluster{t: t, art: art, run: dockertest.NewRun(suite), dir: t.TempDir(), gocql: &blackbox.LogBuffer{}, faulty: map[*Container]string{}}
	c.network = "cosmosd-e2e-" + c.run.ID
	if c.prefix, err = c.run.CreateNetwork(c.network); err != nil {
		t.Fatalf("network: %v", err)
	}
	t.Cleanup(c.remove)
	t.Logf("run %s: image %s, network %s (%s0/24), built in %s", c.run.ID, art.Image, c.network, c.prefix, time.Since(start).Round(100*time.Millisecond))
	if c.certs, err = makeCerts(filepath.Join(c.dir, "certs")); err != nil {
		t.Fatalf("certificates: %v", err)
	}
	// The host's cosmosctl (blackbox.Ctl) presents the client certificate,
	// as an operator's does with this variable.
	t.Setenv("COSMOSCTL_CERTS_DIR", c.certs.dir)
	clientTLS, err := c.certs.clientTLS()
	if err != nil {
		t.Fatalf("client TLS: %v", err)
	}

	var initial, endpoints []string
	for i := 1; i <= 3; i++ {
		e := &Container{Name: fmt.Sprintf("%s-e%d", c.network, i), Host: fmt.Sprintf("e%d", i), IP: fmt.Sprintf("%s%d", c.prefix, 10+i)}
		c.Etcd = append(c.Etcd, e)
		initial = append(initial, fmt.Sprintf("%s=https://%s:2380", e.Host, e.IP))
		endpoints = append(endpoints, e.IP+":2379")
	}
	for _, e := range c.Etcd {
		c.create(t, e, "etcd", "--name", e.Host, "--data-dir", "/data",
			"--listen-client", "0.0.0.0:2379", "--listen-peer", "0.0.0.0:2380",
			"--advertise-client", e.IP+":2379", "--advertise-peer", e.IP+":2380",
			"--initial-cluster", strings.Join(initial, ","), "--certs-dir", "/certs")
		c.copyCerts(t, e)
		c.docker(t, "start", e.Name)
	}
	c.etcd, err = metakv.DialEtcd(metakv.EtcdClientConfig{Endpoints: endpoints, Prefix: etcdPrefix,
		DialOptions: []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(clientTLS))}})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = c.etcd.Close() })
	for _, e := range c.Etcd {
		blackbox.WaitFor(t, 60*time.Second, "etcd member "+e.Host+" serving", func() (bool, string) { return c.etcdMemberOK(e) })
	}

	cfgPath := filepath.Join(c.dir, "cosmosd.yaml")
	if err := os.WriteFile(cfgPath, []byte(nodeConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	pwPath := filepath.Join(c.dir, "superuser-password")
	if err := os.WriteFile(pwPath, []byte(superuserPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		n := &Container{Name: fmt.Sprintf("%s-node-%d", c.network, i), Host: fmt.Sprintf("node-%d", i), IP: fmt.Sprintf("%s%d", c.prefix, 20+i)}
		c.Nodes = append(c.Nodes, n)
		c.create(t, n, "--config", "/cosmosd.yaml", "--name", n.Host, "--data-dir", "/data",
			"--etcd-endpoints", strings.Join(endpoints, ","), "--advertise-host", n.IP,
			"--cql-addr", "0.0.0.0:9042", "--peer-addr", "0.0.0.0:7000", "--admin-addr", "0.0.0.0:7070", "--http-addr", "0.0.0.0:8080",
			"--consensus", "raft", "--dead-after", deadAfter.String(),
			"--label", fmt.Sprintf("zone=z%d", i), "--label", fmt.Sprintf("rack=r%d", i),
			"--certs-dir", "/certs", "--etcd-ca-file", "/certs/ca.crt", "--etcd-cert-file", "/certs/node.crt", "--etcd-key-file", "/certs/node.key",
			"--authenticator", "password", "--superuser", superuser, "--superuser-password-file", "/superuser-password")
		// A scratch image has no shell to write files with: copy the
		// configuration into the created container before it starts.
		c.docker(t, "cp", cfgPath, n.Name+":/cosmosd.yaml")
		c.docker(t, "cp", pwPath, n.Name+":/superuser-password")
		c.copyCerts(t, n)
		c.docker(t, "start", n.Name)
	}
	blackbox.WaitFor(t, 90*time.Second, "5 nodes up", func() (bool, string) {
		nodes, err := c.NodesList()
		if err != nil {
			return false, err.Error()
		}
		byName := map[string]blackbox.Node{}
		for _, n := range nodes {
			byName[n.Name] = n
		}
		for _, n := range c.Nodes {
			if byName[n.Host].State != "up" {
				return false, fmt.Sprint(nodes)
			}
			n.ID = byName[n.Host].ID
		}
		return true, ""
	})
	t.Logf("cluster up in %s: %s", time.Since(start).Round(100*time.Millisecond), c.describe())
	return c
}

// create creates a container of the cluster (not started).
func (c *Cluster) create(t testing.TB, x *Container, args ...string) {
	t.Helper()
	base := append([]string{"create", "--name", x.Name, "--hostname", x.Host}, c.run.Labels()...)
	base = append(base, "--network", c.network, "--ip", x.IP, "--init", "-v", "/data", c.art.Image)
	c.docker(t, append(base, args...)...)
}

// copyCerts gives a created container its certificates in /certs: the CA
// certificate and a node certificate for its name and address.
func (c *Cluster) copyCerts(t testing.TB, x *Container) {
	t.Helper()
	dir, err := c.certs.forHost(x)
	if err != nil {
		t.Fatalf("certificates of %s: %v", x.Host, err)
	}
	c.docker(t, "cp", dir, x.Name+":/certs")
}

// docker runs a docker command that must succeed.
func (c *Cluster) docker(t testing.TB, args ...string) string {
	t.Helper()
	out, err := dockertest.DockerT(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (c *Cluster) describe() string {
	var s []string
	for _, n := range c.Nodes {
		s = append(s, fmt.Sprintf("%s=n%d@%s", n.Host, n.ID, n.IP))
	}
	return strings.Join(s, " ")
}

// remove dumps logs when the test failed (or COSMOSD_E2E_LOGS=1) and
// removes the run's containers and network.
func (c *Cluster) remove() {
	if c.t.Failed() || os.Getenv("COSMOSD_E2E_LOGS") == "1" {
		c.dumpLogs()
	}
	if err := c.run.Remove(c.network); err != nil {
		c.t.Errorf("cleanup: %v", err)
	}
}

// dumpLogs prints the tail of every container's log and keeps the full
// logs in a directory for later reading.
func (c *Cluster) dumpLogs() {
	dir := filepath.Join(os.TempDir(), "cosmosd-e2e-logs-"+c.run.ID)
	_ = os.MkdirAll(dir, 0o755)
	for _, x := range append(append([]*Container{}, c.Etcd...), c.Nodes...) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, "docker", "logs", "-t", x.Name).CombinedOutput()
		cancel()
		if err != nil {
			c.t.Logf("logs of %s: %v", x.Name, err)
		}
		_ = os.WriteFile(filepath.Join(dir, x.Host+".log"), out, 0o644)
		c.t.Logf("---- last lines of %s (%s) ----\n%s", x.Host, x.IP, blackbox.Tail(string(out), 40))
	}
	_ = os.WriteFile(filepath.Join(dir, "gocql.log"), []byte(c.gocql.String()), 0o644)
	c.t.Logf("---- last gocql log lines ----\n%s", blackbox.Tail(c.gocql.String(), 20))
	c.t.Logf("full container logs in %s", dir)
}

// Faults. Each records whether the node can answer, so cosmosctl is
// pointed at nodes that can.

func (c *Cluster) setFaulty(x *Container, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if why == "" {
		delete(c.faulty, x)
	} else {
		c.faulty[x] = why
	}
}

// Stop stops a container gracefully (SIGTERM; SIGKILL after 30s).
func (c *Cluster) Stop(t testing.TB, x *Container) {
	t.Helper()
	c.setFaulty(x, "stopped")
	c.docker(t, "stop", "-t", "30", x.Name)
}

// Kill kills a container (SIGKILL).
func (c *Cluster) Kill(t testing.TB, x *Container) {
	t.Helper()
	c.setFaulty(x, "killed")
	c.docker(t, "kill", x.Name)
}

// Start starts a stopped or killed container with its data.
func (c *Cluster) Start(t testing.TB, x *Container) {
	t.Helper()
	c.docker(t, "start", x.Name)
	c.setFaulty(x, "")
}

// Pause freezes every process of a container.
func (c *Cluster) Pause(t testing.TB, x *Container) {
	t.Helper()
	c.setFaulty(x, "paused")
	c.docker(t, "pause", x.Name)
}

// Unpause thaws a paused container.
func (c *Cluster) Unpause(t testing.TB, x *Container) {
	t.Helper()
	c.docker(t, "unpause", x.Name)
	c.setFaulty(x, "")
}

// Disconnect takes a container off the network.
func (c *Cluster) Disconnect(t testing.TB, x *Container) {
	t.Helper()
	c.setFaulty(x, "disconnected")
	c.docker(t, "network", "disconnect", c.network, x.Name)
}

// Connect puts a disconnected container back, at its address.
func (c *Cluster) Connect(t testing.TB, x *Container) {
	t.Helper()
	c.docker(t, "network", "connect", "--ip", x.IP, c.network, x.Name)
	c.setFaulty(x, "")
}

// restore undoes whatever fault a container is under; scenarios register
// it as a cleanup so that one that fails half-way does not leave the next
// with a broken cluster.
func (c *Cluster) restore(t testing.TB, x *Container) {
	c.mu.Lock()
	why := c.faulty[x]
	c.mu.Unlock()
	var err error
	switch why {
	case "":
		return
	case "stopped", "killed":
		_, err = dockertest.DockerT("start", x.Name)
	case "paused":
		_, err = dockertest.DockerT("unpause", x.Name)
	case "disconnected":
		_, err = dockertest.DockerT("network", "connect", "--ip", x.IP, c.network, x.Name)
	}
	if err != nil {
		t.Errorf("restore %s (%s): %v", x.Host, why, err)
		return
	}
	c.setFaulty(x, "")
}

// byID returns the node container with a node id.
func (c *Cluster) byID(id uint64) *Container {
	for _, n := range c.Nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Sessions.

// clusterConfig is the driver configuration of the test's clients, with
// the given nodes (default: all) as contact points.
func (c *Cluster) clusterConfig(hosts ...*Container) *gocql.ClusterConfig {
	if len(hosts) == 0 {
		hosts = c.Nodes
	}
	var ips []string
	for _, n := range hosts {
		ips = append(ips, n.IP)
	}
	return c.certs.secureCQL(blackbox.ClusterConfig(c.gocql, ips...))
}

// Session opens a session over all nodes, closed when the test ends.
func (c *Cluster) Session(t testing.TB) *gocql.Session {
	t.Helper()
	s, err := c.clusterConfig().CreateSession()
	if err != nil {
		t.Fatalf("gocql session: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// NodeSession opens a session that talks to one node only.
func (c *Cluster) NodeSession(t testing.TB, n *Container) *gocql.Session {
	t.Helper()
	cc := c.clusterConfig(n)
	cc.HostFilter = gocql.WhiteListHostFilter(n.IP)
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatalf("gocql session on %s: %v", n.Host, err)
	}
	t.Cleanup(s.Close)
	return s
}

// Controller and operations, read from etcd.

// ControllerNode returns the id of the node that leads (0: none).
func (c *Cluster) ControllerNode() (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cluster.NewOperations(c.etcd.Store()).Controller(ctx)
}

// Operations lists the placement operations.
func (c *Cluster) Operations() ([]*placement.Operation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return placement.ListOperations(ctx, cluster.NewOperations(c.etcd.Store()))
}

// etcdMemberOK reports whether an etcd member answers and knows a leader.
func (c *Cluster) etcdMemberOK(e *Container) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := c.etcd.MemberStatus(ctx, e.IP+":2379")
	if err != nil {
		return false, err.Error()
	}
	if st.Leader == 0 {
		return false, "no leader"
	}
	return true, ""
}

// etcdLeaderSeenBy returns the member id of the leader an etcd member
// follows.
func (c *Cluster) etcdLeaderSeenBy(e *Container) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := c.etcd.MemberStatus(ctx, e.IP+":2379")
	if err != nil {
		return 0, err
	}
	return st.Leader, nil
}

// EtcdLeader returns the container of the etcd leader.
func (c *Cluster) EtcdLeader() (*Container, error) {
	for _, e := range c.Etcd {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		st, err := c.etcd.MemberStatus(ctx, e.IP+":2379")
		cancel()
		if err == nil && st.Leader != 0 && st.Leader == st.ID {
			return e, nil
		}
	}
	return nil, fmt.Errorf("no etcd member says it leads")
}
