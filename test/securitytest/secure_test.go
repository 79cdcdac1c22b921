package securitytest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/daemon"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
	"github.com/cosmosd/cosmosd/security"
	sectest "github.com/cosmosd/cosmosd/security/securitytest"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

func exec(t *testing.T, s *gocql.Session, q string, args ...any) {
	t.Helper()
	if err := s.Query(q, args...).Exec(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// identity is how an outsider connects to a TLS port: it trusts the
// cluster CA (so that a failure is the server refusing it) and presents
// cert, or nothing.
type identity struct {
	name string
	cert *tls.Certificate
}

func (id identity) config(t *testing.T, certsDir string) *tls.Config {
	t.Helper()
	r, err := security.NewReloader(security.Files{CA: filepath.Join(certsDir, security.CAFile)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	for _, c := range r.CAs() {
		pool.AddCert(c)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if id.cert != nil {
		cfg.Certificates = []tls.Certificate{*id.cert}
	}
	return cfg
}

func loadPair(t *testing.T, f security.Files) *tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// outsiders are the identities the internode port refuses: none, a node
// certificate of another CA, and the cluster's own client certificate
// (an operator's: not a node).
func outsiders(t *testing.T, certsDir string) []identity {
	t.Helper()
	other := t.TempDir()
	sectest.PKI(t, other)
	return []identity{
		{name: "no certificate"},
		{name: "node certificate of another CA", cert: loadPair(t, security.NodeFiles(other))},
		{name: "cluster client certificate", cert: loadPair(t, security.ClientFiles(certsDir, "root"))},
	}
}

// tableReplicas returns the status of every replica of a table partition
// in the cluster.
func tableReplicas(c *testcluster.Cluster) map[[2]uint64]consensus.Status {
	out := map[[2]uint64]consensus.Status{}
	for _, n := range c.Nodes {
		for _, r := range n.Store().Replicas() {
			if r.Descriptor().GetTableId() == 0 {
				continue
			}
			st := r.Group().Status()
			out[[2]uint64{n.ID(), uint64(st.ID)}] = st
		}
	}
	return out
}

// TestSecureCluster runs a 4-node secure cluster (raft between nodes over
// mutual TLS, TLS etcd) end to end and probes its ports as outsiders.
func TestSecureCluster(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 4, Consensus: "raft", TLS: true})
	cc := c.NewClusterConfig(0)
	cc.Timeout = 12 * time.Second
	cc.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 5}
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, s, "CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
	for i := 0; i < 20; i++ {
		exec(t, s, "INSERT INTO ks.t (k, v) VALUES (?, ?)", i, "v")
	}
	// Read through another node: forwarded over the internode mTLS.
	s3 := c.Session(t, 3)
	var n int
	if err := s3.Query("SELECT count(*) FROM ks.t").Consistency(gocql.Quorum).Scan(&n); err != nil || n != 20 {
		t.Fatalf("count through node 3 = %d, %v; want 20", n, err)
	}
	admin := c.Admin(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := admin.ListNodes(ctx, &adminpb.ListNodesRequest{})
	if err != nil || len(nodes.GetNodes()) != 4 {
		t.Fatalf("admin ListNodes over TLS: %v, %v; want 4 nodes", nodes, err)
	}

	t.Run("ForgedRaftMessages", func(t *testing.T) { testForgedRaft(t, c, s) })
	t.Run("ForgedForwarding", func(t *testing.T) { testForgedForwarding(t, c) })
	t.Run("PlaintextCQL", func(t *testing.T) { testPlaintextCQL(t, c, s) })
}

// peerConn dials node's peer port as id.
func peerConn(t *testing.T, c *testcluster.Cluster, node *daemon.Node, id identity) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(node.PeerAddr(), grpc.WithTransportCredentials(credentials.NewTLS(id.config(t, c.CertsDir))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// refusedByTLS checks that an RPC failed at the transport: the TLS
// handshake or the server's alert right after it, never an answer of the
// service.
func refusedByTLS(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: accepted", what)
	}
	// Without a certificate, TLS 1.3 lets the client finish its
	// handshake; the server's "certificate required" alert and close then
	// meet the client writing its first frame (broken pipe, reset).
	msg := err.Error()
	if status.Code(err) != codes.Unavailable || !slices.ContainsFunc([]string{"tls: ", "handshake", "broken pipe", "connection reset", "EOF"},
		func(s string) bool { return strings.Contains(msg, s) }) {
		t.Fatalf("%s: %v; want a TLS refusal", what, err)
	}
	t.Logf("%s: %v", what, err)
}

// testForgedRaft: a process without a node certificate of the cluster CA
// cannot deliver a raft message: a heartbeat claiming a far higher term
// and commit, sent to every replica of every table partition, leaves the
// groups' terms and commits alone and the cluster serving.
func testForgedRaft(t *testing.T, c *testcluster.Cluster, s *gocql.Session) {
	before := tableReplicas(c)
	if len(before) == 0 {
		t.Fatal("no table replicas")
	}
	var maxTerm, maxCommit uint64
	for _, st := range before {
		maxTerm, maxCommit = max(maxTerm, st.Term), max(maxCommit, st.Commit)
	}
	forgedTerm, forgedCommit := maxTerm+1000, maxCommit+1_000_000
	for _, id := range outsiders(t, c.CertsDir) {
		for _, node := range c.Nodes {
			batch := &transportpb.MessageBatch{FromNode: 999, ToNode: node.ID()}
			for key, st := range before {
				if key[0] != node.ID() {
					continue
				}
				m := &pb.Message{Type: pb.MsgHeartbeat.Enum(), From: proto.Uint64(uint64(st.Leader) + 100), To: proto.Uint64(uint64(st.ReplicaID)),
					Term: proto.Uint64(forgedTerm), Commit: proto.Uint64(forgedCommit)}
				raw, err := proto.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				batch.Messages = append(batch.Messages, &transportpb.RaftMessage{Group: uint64(st.ID), FromReplica: m.GetFrom(),
					ToReplica: m.GetTo(), Message: raw})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			stream, err := transportpb.NewRaftTransportClient(peerConn(t, c, node, id)).Messages(ctx)
			if err == nil {
				if err = stream.Send(batch); err == nil {
					_, err = stream.CloseAndRecv()
				}
			}
			cancel()
			refusedByTLS(t, id.name+" to node "+node.PeerAddr(), err)
		}
	}
	for key, st := range tableReplicas(c) {
		if st.Term >= forgedTerm || st.Commit >= forgedCommit {
			t.Fatalf("replica %v took the forged heartbeat: term %d commit %d (forged %d, %d)", key, st.Term, st.Commit, forgedTerm, forgedCommit)
		}
	}
	exec(t, s, "INSERT INTO ks.t (k, v) VALUES (100, 'after')")
	var v string
	if err := s.Query("SELECT v FROM ks.t WHERE k = 100").Consistency(gocql.Quorum).Scan(&v); err != nil || v != "after" {
		t.Fatalf("read after forged messages: %q, %v", v, err)
	}
}

// testForgedForwarding: the forwarding service on the peer port refuses
// the same outsiders: neither a ping nor a write reaches it.
func testForgedForwarding(t *testing.T, c *testcluster.Cluster) {
	var desc *kvpb.Descriptor
	for _, r := range c.Nodes[0].Store().Replicas() {
		if r.Descriptor().GetTableId() != 0 {
			desc = r.Descriptor()
			break
		}
	}
	for _, id := range outsiders(t, c.CertsDir) {
		cli := kvpb.NewInternalClient(peerConn(t, c, c.Nodes[0], id))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := cli.Ping(ctx, &kvpb.PingRequest{})
		refusedByTLS(t, id.name+": ping", err)
		if desc != nil {
			_, err = cli.Write(ctx, &kvpb.WriteRequest{PartitionId: desc.GetId(), Generation: desc.GetGeneration(), TableId: desc.GetTableId()})
			refusedByTLS(t, id.name+": write", err)
		}
		cancel()
	}
}

// testPlaintextCQL: a plaintext CQL client gets no answer from the TLS
// port, and a driver presenting a certificate of another CA (while
// trusting the cluster CA) is refused: client certificates are verified
// when given, even where none is required. The node keeps serving the
// others.
func testPlaintextCQL(t *testing.T, c *testcluster.Cluster, s *gocql.Session) {
	nc, err := net.DialTimeout("tcp", c.Nodes[0].CQLAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// OPTIONS, protocol v4, stream 1.
	if _, err := nc.Write([]byte{0x04, 0, 0, 1, 0x05, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 64)
	n, err := nc.Read(buf)
	if err == nil && n > 0 && buf[0] == 0x84 {
		t.Fatalf("plaintext OPTIONS answered: % x", buf[:n])
	}
	t.Logf("plaintext CQL: read %d bytes, %v", n, err)

	other := outsiders(t, c.CertsDir)[1]
	cc := c.NewClusterConfig(0)
	cc.ConnectTimeout = 5 * time.Second
	cc.DisableInitialHostLookup = true
	cfg := other.config(t, c.CertsDir)
	cc.SslOpts = &gocql.SslOptions{Config: cfg, EnableHostVerification: true}
	if bad, err := cc.CreateSession(); err == nil {
		bad.Close()
		t.Fatal("gocql with a certificate of another CA connected")
	} else {
		t.Logf("gocql with another CA's certificate: %v", err)
	}
	var v string
	if err := s.Query("SELECT v FROM ks.t WHERE k = 1").Scan(&v); err != nil || v != "v" {
		t.Fatalf("the node stopped serving: %q, %v", v, err)
	}
}
