package router

import (
	"context"
	"maps"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/local"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// table is the table every test partition belongs to.
const table = 7

// testMeta is an in-memory metaView: the test publishes each State, as the
// etcd watch would, and subscribers are told.
type testMeta struct {
	state atomic.Pointer[cluster.State]

	mu   sync.Mutex
	subs map[int]chan struct{}
	next int
}

func newTestMeta() *testMeta {
	m := &testMeta{subs: map[int]chan struct{}{}}
	m.state.Store(&cluster.State{Rings: map[uint64]*ring.Ring{}, Nodes: map[uint64]*cluster.NodeInfo{}})
	return m
}

func (m *testMeta) State() *cluster.State { return m.state.Load() }

func (m *testMeta) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	id := m.next
	m.next++
	m.subs[id] = ch
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		delete(m.subs, id)
		m.mu.Unlock()
	}
}

// subscribers counts the waiters: a router subscribes only while its
// retry loop waits for a newer routing copy.
func (m *testMeta) subscribers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.subs)
}

// update publishes a copy of the current state changed by f (a State is
// immutable once published).
func (m *testMeta) update(f func(st *cluster.State)) {
	old := m.state.Load()
	st := &cluster.State{Revision: old.Revision + 1, Rings: maps.Clone(old.Rings), Nodes: maps.Clone(old.Nodes)}
	f(st)
	m.state.Store(st)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ch := range m.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// register publishes node's internal address; an empty addr unregisters it.
func (m *testMeta) register(node consensus.NodeID, addr string) {
	m.update(func(st *cluster.State) {
		if addr == "" {
			delete(st.Nodes, uint64(node))
			return
		}
		st.Nodes[uint64(node)] = &cluster.NodeInfo{ID: uint64(node), PeerAddr: addr}
	})
}

// setRing publishes the routing copy of the test table.
func (m *testMeta) setRing(descs ...*kvpb.Descriptor) {
	m.update(func(st *cluster.State) { st.Rings[table] = ring.New(table, descs) })
}

// desc is a descriptor of the test table listing voters on nodes.
func desc(id uint64, start, end int64, nodes ...consensus.NodeID) *kvpb.Descriptor {
	d := &kvpb.Descriptor{Id: id, TableId: table, Start: start, End: end}
	for i, n := range nodes {
		d.Replicas = append(d.Replicas, &kvpb.ReplicaDescriptor{NodeId: uint64(n), ReplicaId: uint64(i + 1)})
	}
	d.NextReplicaId = uint64(len(nodes) + 1)
	return d
}

// whole is a partition covering every token.
func whole(id uint64, nodes ...consensus.NodeID) *kvpb.Descriptor {
	return desc(id, math.MinInt64, math.MaxInt64, nodes...)
}

// testNode is one node of a test cluster: real Pebble (in memory), the
// single-replica consensus engine, a partition store, the internal
// service on loopback, and a router over the shared metadata.
type testNode struct {
	id     consensus.NodeID
	store  *partition.Store
	addr   string
	router *Router
}

// startNode starts node id and registers it in m.
func startNode(t *testing.T, m *testMeta, id consensus.NodeID, cfg Config) *testNode {
	t.Helper()
	eng, err := storage.Open(storage.Config{FS: vfs.NewMem(), CacheBytes: 8 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := local.New(local.Config{NodeID: id, Storage: eng})
	if err != nil {
		t.Fatal(err)
	}
	store := partition.NewStore(partition.StoreConfig{NodeID: id, Storage: eng, Consensus: cons})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	kvpb.RegisterInternalServer(srv, NewServer(store))
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	cfg.NodeID, cfg.Store = id, store
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = -1 // tests that probe say so
	}
	r := newRouter(cfg, m)
	t.Cleanup(func() {
		r.Close()
		srv.Stop()
		<-served
		store.Close()
		_ = cons.Close()
		_ = eng.Close()
	})
	n := &testNode{id: id, store: store, addr: ln.Addr().String(), router: r}
	m.register(id, n.addr)
	return n
}

// bootstrap starts a replica of d on n alone (the local engine has one
// replica per group), whatever replicas d lists for the routing copy.
func (n *testNode) bootstrap(t *testing.T, d *kvpb.Descriptor) {
	t.Helper()
	own := &kvpb.Descriptor{Id: d.GetId(), TableId: d.GetTableId(), Start: d.GetStart(), End: d.GetEnd(),
		Replicas: []*kvpb.ReplicaDescriptor{{NodeId: uint64(n.id), ReplicaId: 1}}, NextReplicaId: 2}
	if _, err := n.store.Bootstrap(context.Background(), own); err != nil {
		t.Fatal(err)
	}
}

// servedServer serves srv on loopback until the test ends and returns
// its address.
func servedServer(t *testing.T, impl kvpb.InternalServer) (addr string, srv *grpc.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv = grpc.NewServer()
	kvpb.RegisterInternalServer(srv, impl)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	return ln.Addr().String(), srv
}

// refusedAddr is a loopback address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// keyWithToken returns a partition key whose token satisfies ok.
func keyWithToken(t *testing.T, ok func(int64) bool) ([]byte, int64) {
	t.Helper()
	for i := range 1000 {
		k := []byte{'k', byte(i), byte(i >> 8)}
		if tok := ring.Token(k); ok(tok) {
			return k, tok
		}
	}
	t.Fatal("no key with a suitable token")
	return nil, 0
}

// upsertReq writes value v to column 1 of the row of partition key pk.
func upsertReq(pk []byte, v string) *kvpb.WriteRequest {
	return &kvpb.WriteRequest{NowMicros: time.Now().UnixMicro(), Mutations: []*kvpb.Mutation{{
		Kind: kvpb.Mutation_UPSERT, Token: ring.Token(pk), Pk: pk, Timestamp: time.Now().UnixMicro(), Marker: true,
		Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kvpb.ColumnOp_SET, Value: []byte(v)}},
	}}}
}

// readReq reads the rows of partition key pk.
func readReq(pk []byte) *kvpb.ReadRequest {
	return &kvpb.ReadRequest{NowMicros: time.Now().UnixMicro(), Keys: []*kvpb.PartitionKey{{Token: ring.Token(pk), Pk: pk}}}
}

// values returns column 1 of each row read.
func values(t *testing.T, resp *kvpb.ReadResponse) []string {
	t.Helper()
	var out []string
	for _, r := range resp.GetRows() {
		row, err := storage.DecodeRow(r.GetValue())
		if err != nil {
			t.Fatal(err)
		}
		if c := row.Cell(1); c != nil {
			out = append(out, string(c.Value))
		}
	}
	return out
}

// readValue reads pk through r and returns its column-1 value ("" when
// the row is absent).
func readValue(t *testing.T, r *Router, pk []byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.Read(ctx, Target{Table: table, Token: ring.Token(pk)}, readReq(pk))
	if err != nil {
		t.Fatalf("read %q: %v", pk, err)
	}
	vs := values(t, resp)
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// storeValue reads pk from partition id straight from n's store, without
// any router: what the replica holds.
func (n *testNode) storeValue(t *testing.T, id uint64, pk []byte) string {
	t.Helper()
	rep, ok := n.store.Replica(id)
	if !ok {
		t.Fatalf("node %d has no replica of partition %d", n.id, id)
	}
	req := readReq(pk)
	req.PartitionId, req.TableId = id, table
	resp, err := rep.Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	vs := values(t, resp)
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// hint returns the cached leader of partition id (0 when none).
func (r *Router) hint(id uint64) consensus.NodeID {
	if h, ok := r.leaders.Load(id); ok {
		return h.(consensus.NodeID)
	}
	return 0
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
