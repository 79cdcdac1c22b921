package admin

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/placement"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/router/routertest"
	"github.com/cosmosd/cosmosd/schema"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The tests run the admin service as a node runs it: cluster.Meta and
// Catalog on the in-memory metadata store (metakv.Mem), nodes with real
// partition stores (Pebble on an in-memory filesystem, the single-replica
// consensus engine) serving the internal service on loopback, node 1's
// router, and the admin service itself on loopback, called through the
// generated client as cosmosctl calls it.

// errInjected is the failure of a faultKV that is told to fail.
var errInjected = errors.New("injected metadata store failure")

// faultKV is the metadata store with reads and transactions that fail on
// demand (an etcd that cannot be reached); the watch keeps running, so
// the published state stays as it was.
type faultKV struct {
	metakv.Store
	fail atomic.Bool
}

func (f *faultKV) Get(ctx context.Context, key string) (metakv.KeyValue, bool, error) {
	if f.fail.Load() {
		return metakv.KeyValue{}, false, errInjected
	}
	return f.Store.Get(ctx, key)
}

func (f *faultKV) List(ctx context.Context, prefix string) ([]metakv.KeyValue, int64, error) {
	if f.fail.Load() {
		return nil, 0, errInjected
	}
	return f.Store.List(ctx, prefix)
}

func (f *faultKV) Txn(ctx context.Context, t metakv.Txn) (metakv.TxnResult, error) {
	if f.fail.Load() {
		return metakv.TxnResult{}, errInjected
	}
	return f.Store.Txn(ctx, t)
}

// testCluster is the metadata, the nodes and node 1's router.
type testCluster struct {
	t       *testing.T
	mem     *metakv.Mem
	kv      *faultKV
	meta    *cluster.Meta
	catalog *cluster.Catalog
	nodes   map[uint64]*testNode
	router  *router.Router
}

// testNode is one node (routertest.Node: a partition store on real
// Pebble and the local engine, serving the internal service on loopback)
// and its registration in the metadata.
type testNode struct {
	*routertest.Node
	reg *cluster.Registration
}

// newCluster starts nodes 1..len(names), named names, and node 1's
// router; labels[i], when given, are node i+1's labels.
func newCluster(t *testing.T, names ...string) *testCluster {
	t.Helper()
	mem := metakv.NewMem()
	t.Cleanup(mem.Close)
	c := &testCluster{t: t, mem: mem, kv: &faultKV{Store: mem}, nodes: map[uint64]*testNode{}}
	meta, err := cluster.OpenMeta(tctx(t), c.kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(meta.Close)
	c.meta, c.catalog = meta, cluster.NewCatalog(meta)
	if err := c.catalog.EnsureSchemaVersion(tctx(t)); err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		c.startNode(uint64(i+1), name, nil)
	}
	r := router.New(router.Config{NodeID: 1, Store: c.nodes[1].Store, Meta: meta, ProbeInterval: -1})
	t.Cleanup(r.Close)
	c.router = r
	c.catchUp()
	return c
}

// tctx is a context that ends with the test, or after a minute.
func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// throughput is what the daemon gives the stores: a table's provisioned
// RU/s, shared by its partitions.
func (c *testCluster) throughput(table uint64) (float64, int) {
	st := c.meta.State()
	t := st.Schema.ByID[table]
	if t == nil {
		return 0, 1
	}
	return float64(t.Options.Throughput), max(1, len(st.Ring(table).Partitions()))
}

// startNode starts a node with a store and registers it.
func (c *testCluster) startNode(id uint64, name string, labels map[string]string) *testNode {
	t := c.t
	t.Helper()
	node := routertest.Start(t, routertest.Config{NodeID: consensus.NodeID(id), Throughput: c.throughput})
	node.Serve(t, router.NewServer(node.Store))
	n := &testNode{Node: node, reg: c.register(id, name, node.Addr, labels)}
	c.nodes[id] = n
	return n
}

// register registers node id at addr (its internal service) without
// starting anything there.
func (c *testCluster) register(id uint64, name, addr string, labels map[string]string) *cluster.Registration {
	t := c.t
	t.Helper()
	info := cluster.NodeInfo{ID: id, Name: name, PeerAddr: addr, CQLAddr: "127.0.0.1:9042", AdminAddr: "127.0.0.1:7000",
		Labels: labels, Version: "test", StartedAt: time.Unix(1700000000, 0).UTC()}
	reg, err := cluster.Register(tctx(t), c.kv, info, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	c.catchUp()
	return reg
}

// registerUnreachable registers node id at a loopback address nothing
// listens on: a node that registered and then stopped answering.
func (c *testCluster) registerUnreachable(id uint64, name string) {
	c.t.Helper()
	c.register(id, name, routertest.RefusedAddr(c.t), nil)
}

// member writes the member record of node id (creating it) changed by f:
// a node that joined once and is not registered now, or a mark (draining,
// decommissioned) on a registered one.
func (c *testCluster) member(id uint64, f func(m *cluster.Member)) {
	c.t.Helper()
	if err := c.meta.UpdateMember(tctx(c.t), id, func(m *cluster.Member) bool {
		if m.Info.ID == 0 {
			m.Info.ID = id
		}
		f(m)
		return true
	}); err != nil {
		c.t.Fatal(err)
	}
	c.catchUp()
}

// catchUp waits until the published state shows every completed write.
func (c *testCluster) catchUp() {
	c.t.Helper()
	if err := c.meta.CatchUp(tctx(c.t)); err != nil {
		c.t.Fatal(err)
	}
}

// halves are the two partitions ids id and id+1 of table covering every
// token, split at 0, with replicas on nodes.
func halves(table, id uint64, nodes ...uint64) []*kvpb.Descriptor {
	return []*kvpb.Descriptor{routertest.Desc(table, id, math.MinInt64, -1, nodes...), routertest.Desc(table, id+1, 0, math.MaxInt64, nodes...)}
}

// createTable creates keyspace ks (if needed) and table ks.name with id,
// partition-key columns of types pk and a text column v, and the
// partitions parts; each partition's replica starts on its first node
// when that node runs a store (the single-replica engine runs one replica
// per group: the first node leads, the routing copy lists the others).
func (c *testCluster) createTable(ks, name string, id uint64, pk []string, parts []*kvpb.Descriptor) *schema.Table {
	t := c.t
	t.Helper()
	if _, err := c.catalog.CreateKeyspace(tctx(t), &schema.Keyspace{Name: ks, Replication: map[string]string{"class": "SimpleStrategy", "replication_factor": "3"}}, true); err != nil {
		t.Fatal(err)
	}
	tab := testTable(t, ks, name, id, pk...)
	tab.UUID = cluster.NewUUID()
	if ok, err := c.catalog.CreateTable(tctx(t), tab, parts, false); !ok || err != nil {
		t.Fatalf("create table %s.%s: %v %v", ks, name, ok, err)
	}
	for _, d := range parts {
		if n := c.nodes[d.GetReplicas()[0].GetNodeId()]; n != nil {
			n.Bootstrap(t, d)
		}
	}
	c.catchUp()
	return c.meta.State().Schema.Table(ks, name)
}

// testTable is table ks.name with id, partition-key columns k0, k1, ...
// of types pk (CQL type names) and a text column v.
func testTable(t testing.TB, ks, name string, id uint64, pk ...string) *schema.Table {
	t.Helper()
	tab := &schema.Table{ID: id, Keyspace: ks, Name: name}
	for i, typ := range pk {
		ct, err := cqltype.Parse(typ)
		if err != nil {
			t.Fatal(err)
		}
		tab.Columns = append(tab.Columns, schema.Column{ID: uint32(i), Name: "k" + string(rune('0'+i)), Type: ct, Kind: schema.PartitionKey, Position: i})
	}
	tab.Columns = append(tab.Columns, schema.Column{ID: uint32(len(pk)), Name: "v", Type: cqltype.Scalar(cqltype.Varchar), Kind: schema.Regular, Position: -1})
	tab.NextColumnID = uint32(len(pk) + 1)
	tab.Canonicalize()
	return tab
}

// write upserts v into the row of partition key pk (CQL literals, one per
// partition-key column) of table through node 1's router.
func (c *testCluster) write(tab *schema.Table, v string, pk ...string) error {
	c.t.Helper()
	var vals [][]byte
	for i, col := range tab.PartitionKey() {
		b, err := literal(col.Type, pk[i])
		if err != nil {
			c.t.Fatal(err)
		}
		vals = append(vals, b)
	}
	key, err := ring.RoutingKey(vals)
	if err != nil {
		c.t.Fatal(err)
	}
	now := time.Now().UnixMicro()
	tok := ring.Token(key)
	wctx, cancel := context.WithTimeout(tctx(c.t), 10*time.Second)
	defer cancel()
	_, err = c.router.Write(wctx, router.Target{Table: tab.ID, Token: tok}, &kvpb.WriteRequest{NowMicros: now, Mutations: []*kvpb.Mutation{{
		Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: key, Timestamp: now, Marker: true,
		Ops: []*kvpb.ColumnOp{{Column: uint32(len(vals)), Kind: kvpb.ColumnOp_SET, Value: []byte(v)}},
	}}})
	return err
}

// serve runs the admin service configured by cfg on loopback and returns
// a client of it. Meta and Router default to the cluster's; Catalog too,
// unless noCatalog.
func (c *testCluster) serve(cfg Config, noCatalog bool) adminpb.AdminClient {
	t := c.t
	t.Helper()
	if cfg.Meta == nil {
		cfg.Meta = c.meta
	}
	if cfg.Router == nil {
		cfg.Router = c.router
	}
	if cfg.Catalog == nil && !noCatalog {
		cfg.Catalog = c.catalog
	}
	return serveAdmin(t, NewServer(cfg))
}

// serveAdmin serves srv on loopback until the test ends and returns a
// client of it.
func serveAdmin(t *testing.T, srv *Server) adminpb.AdminClient {
	t.Helper()
	addr, _ := routertest.ServeGRPC(t, func(gs *grpc.Server) { adminpb.RegisterAdminServer(gs, srv) })
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return adminpb.NewAdminClient(cc)
}

// operations lists the operations in the store, newest first.
func (c *testCluster) operations() []*placement.Operation {
	c.t.Helper()
	ops, err := placement.ListOperations(tctx(c.t), c.meta.Operations())
	if err != nil {
		c.t.Fatal(err)
	}
	return ops
}

// wantCode fails t unless err is a gRPC status with code and, when
// contains is not empty, a message containing it.
func wantCode(t *testing.T, err error, code codes.Code, contains string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("error %T %v is not a gRPC status (want %v)", err, err, code)
	}
	if st.Code() != code || !strings.Contains(st.Message(), contains) {
		t.Fatalf("error %v %q, want %v with %q", st.Code(), st.Message(), code, contains)
	}
}
