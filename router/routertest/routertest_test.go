package routertest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosmosd/cosmosd/cluster"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/router/routertest"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/storage"
)

// Every goroutine a Node and its server start ends with the test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const table = 7

// A started node serves its internal service on loopback: a write sent
// there reaches the bootstrapped partition's replica and is read back from
// it, through gRPC and in process.
func TestNodeServesItsPartitions(t *testing.T) {
	n := routertest.Start(t, routertest.Config{NodeID: 3})
	addr := n.Serve(t, router.NewServer(n.Store))
	if addr == "" || n.Addr != addr {
		t.Fatalf("Serve returned %q, node address %q", addr, n.Addr)
	}
	d := routertest.Whole(table, 100, 1, 2, 3) // the routing copy lists others too
	rep := n.Bootstrap(t, d)
	st, err := rep.Status(false)
	if err != nil || !st.GetLeader() || len(st.GetDesc().GetReplicas()) != 1 || st.GetDesc().GetReplicas()[0].GetNodeId() != 3 {
		t.Fatalf("bootstrapped replica %v %v, want the leader and only replica, on node 3", st, err)
	}

	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cc.Close() }()
	kv := kvpb.NewInternalClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pk := []byte("served")
	tok, now := ring.Token(pk), time.Now().UnixMicro()
	w, err := kv.Write(ctx, &kvpb.WriteRequest{PartitionId: 100, TableId: table, NowMicros: now, Mutations: []*kvpb.Mutation{{
		Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: pk, Timestamp: now, Marker: true,
		Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kvpb.ColumnOp_SET, Value: []byte("v")}},
	}}})
	if err != nil || w.GetError() != nil {
		t.Fatalf("write over gRPC: %v %v", w, err)
	}
	read := &kvpb.ReadRequest{PartitionId: 100, TableId: table, NowMicros: now, Keys: []*kvpb.PartitionKey{{Token: tok, Pk: pk}}}
	r, err := rep.Read(ctx, read)
	if err != nil || len(r.GetRows()) != 1 {
		t.Fatalf("read in process: %v %v, want the row written", r, err)
	}
	row, err := storage.DecodeRow(r.GetRows()[0].GetValue())
	if err != nil || row.Cell(1) == nil || string(row.Cell(1).Value) != "v" {
		t.Fatalf("row %+v %v, want v in column 1", row, err)
	}
}

// Reconcile starts the replicas the rings list on the node, once per
// revision (an older or equal one changes nothing), and removes those of a
// table that is gone.
func TestReconcileFollowsRevisions(t *testing.T) {
	n := routertest.Start(t, routertest.Config{NodeID: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	state := func(rev int64, tables []uint64, descs ...*kvpb.Descriptor) *cluster.State {
		sc := schema.Empty()
		for _, id := range tables {
			sc.ByID[id] = &schema.Table{ID: id, Keyspace: "ks", Name: "t"}
		}
		return &cluster.State{Revision: rev, Schema: sc, Rings: map[uint64]*ring.Ring{table: ring.New(table, descs)}}
	}
	has := func(id uint64) bool { _, ok := n.Store.Replica(id); return ok }

	lo, hi := routertest.Desc(table, 10, -100, -1, 1), routertest.Desc(table, 11, 0, 100, 1)
	if err := n.Reconcile(ctx, state(5, []uint64{table}, lo, hi, routertest.Desc(table, 12, 101, 200, 2))); err != nil {
		t.Fatal(err)
	}
	if !has(10) || !has(11) || has(12) {
		t.Fatalf("replicas 10 %v, 11 %v, 12 %v: want those listing node 1 (10, 11) only", has(10), has(11), has(12))
	}
	// A state no newer than the one reconciled is skipped: its dropped
	// table (schema and ring gone) would otherwise remove the replicas.
	if err := n.Reconcile(ctx, state(5, nil)); err != nil {
		t.Fatal(err)
	}
	if !has(10) || !has(11) {
		t.Fatal("a state of the revision already reconciled removed replicas")
	}
	if err := n.Reconcile(ctx, state(6, nil)); err != nil {
		t.Fatal(err)
	}
	if has(10) || has(11) {
		t.Fatal("replicas of a dropped table kept")
	}
	// A state without a schema (the router's tests publish rings only)
	// has no live table.
	if err := n.Reconcile(ctx, &cluster.State{Revision: 7}); err != nil {
		t.Fatal(err)
	}
}

// Open refuses a node without an id; Close is safe to call twice.
func TestOpenAndClose(t *testing.T) {
	if _, err := routertest.Open(routertest.Config{}); err == nil {
		t.Fatal("a node without an id opened")
	}
	n, err := routertest.Open(routertest.Config{NodeID: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// ServeGRPC serves until the test ends or the server is stopped; nothing
// listens at RefusedAddr.
func TestServeAndRefused(t *testing.T) {
	addr, srv := routertest.ServeGRPC(t, func(*grpc.Server) {})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial the served address: %v", err)
	}
	_ = c.Close()
	srv.Stop() // the cleanup's Stop then finds it stopped
	if c, err := net.Dial("tcp", addr); err == nil {
		_ = c.Close()
		t.Fatal("a stopped server still accepts connections")
	}
	if c, err := net.Dial("tcp", routertest.RefusedAddr(t)); err == nil {
		_ = c.Close()
		t.Fatal("something listens at RefusedAddr")
	}
}
