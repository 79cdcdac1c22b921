package router

import (
	"context"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/router/routertest"
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
	ids := make([]uint64, len(nodes))
	for i, n := range nodes {
		ids[i] = uint64(n)
	}
	return routertest.Desc(table, id, start, end, ids...)
}

// whole is a partition of the test table covering every token.
func whole(id uint64, nodes ...consensus.NodeID) *kvpb.Descriptor {
	return desc(id, math.MinInt64, math.MaxInt64, nodes...)
}

// testNode is one node of a test cluster (a routertest.Node: real Pebble
// in memory, the single-replica consensus engine, a partition store, the
// internal service on loopback) and its router over the shared metadata.
type testNode struct {
	*routertest.Node
	router *Router
}

// startNode starts node id and registers it in m.
func startNode(t *testing.T, m *testMeta, id consensus.NodeID, cfg Config) *testNode {
	t.Helper()
	node := routertest.Start(t, routertest.Config{NodeID: id})
	node.Serve(t, NewServer(node.Store))
	cfg.NodeID, cfg.Store = id, node.Store
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = -1 // tests that probe say so
	}
	r := newRouter(cfg, m)
	t.Cleanup(r.Close) // first: cleanups run last-in first-out
	m.register(id, node.Addr)
	return &testNode{Node: node, router: r}
}

// twoNodes starts nodes 1 and 2 (node 2's router configured by cfg2) with
// partition 100 of the test table running on node 1; publishing a routing
// copy of it is left to the test.
func twoNodes(t *testing.T, cfg2 Config) (m *testMeta, n1, n2 *testNode) {
	t.Helper()
	m = newTestMeta()
	n1 = startNode(t, m, 1, Config{})
	n2 = startNode(t, m, 2, cfg2)
	n1.Bootstrap(t, whole(100, 1))
	return m, n1, n2
}

// servedServer serves impl on loopback until the test ends and returns
// its address.
func servedServer(t *testing.T, impl kvpb.InternalServer) (addr string, srv *grpc.Server) {
	t.Helper()
	return routertest.ServeInternal(t, impl)
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

// writeValue writes v to column 1 of the row of pk through r.
func writeValue(ctx context.Context, r *Router, pk []byte, v string) error {
	_, err := r.Write(ctx, Target{Table: table, Token: ring.Token(pk)}, upsertReq(pk, v))
	return err
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
	return firstValue(t, resp)
}

// storeValue reads pk from partition id straight from n's store, without
// any router: what the replica holds.
func (n *testNode) storeValue(t *testing.T, id uint64, pk []byte) string {
	t.Helper()
	rep, ok := n.Store.Replica(id)
	if !ok {
		t.Fatalf("node %d has no replica of partition %d", n.ID, id)
	}
	req := readReq(pk)
	req.PartitionId, req.TableId = id, table
	resp, err := rep.Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return firstValue(t, resp)
}

// firstValue returns column 1 of the first row read ("" when none).
func firstValue(t *testing.T, resp *kvpb.ReadResponse) string {
	t.Helper()
	if vs := values(t, resp); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// hint returns the cached leader of partition id (0 when none).
func (r *Router) hint(id uint64) consensus.NodeID {
	if h, ok := r.leaders.Load(id); ok {
		return h.(consensus.NodeID)
	}
	return 0
}
