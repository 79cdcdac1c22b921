package admin

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/placement"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// putOperation writes op's record as placement encodes it.
func (c *testCluster) putOperation(op *placement.Operation) {
	c.t.Helper()
	raw, err := json.Marshal(op)
	if err != nil {
		c.t.Fatal(err)
	}
	if ok, err := c.meta.Operations().Put(tctx(c.t), op.ID, raw); !ok || err != nil {
		c.t.Fatalf("put operation %d: %v %v", op.ID, ok, err)
	}
}

// ListOperations lists newest first, the active ones only when asked,
// at most limit; GetOperation returns one with its steps.
func TestListAndGetOperations(t *testing.T) {
	c := opsCluster(t)
	admin := c.serve(Config{}, false)
	var ids []uint64
	for _, p := range []uint64{100, 101, 100} {
		op, err := admin.Split(tctx(t), &adminpb.SplitRequest{Partition: p})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, op.GetId())
	}
	// The controller ran the first and is running the second.
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	first := c.stored(ids[0])
	first.State, first.Progress, first.Error = placement.StateFailed, 0.5, "partition moved"
	first.Steps = []placement.Step{{Name: "split", State: "failed", Detail: "generation changed", At: at}}
	first.SplitToken, first.RightID = ptr(int64(-7)), 102
	c.putOperation(first)
	c.setState(ids[1], placement.StateRunning)
	parent := &placement.Operation{ID: 99, Kind: placement.KindRebalance, State: placement.StateRunning, Children: []uint64{ids[0]}, Created: at, Updated: at}
	c.putOperation(parent)
	child := &placement.Operation{ID: 98, Kind: placement.KindMoveKey, State: placement.StateDone, Parent: 99, Table: 77, ToNodes: []uint64{4}, Created: at, Updated: at}
	c.putOperation(child) // of a table since dropped

	list := func(req *adminpb.ListOperationsRequest) []uint64 {
		t.Helper()
		resp, err := admin.ListOperations(tctx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, op := range resp.GetOperations() {
			out = append(out, op.GetId())
		}
		return out
	}
	all := []uint64{99, 98, ids[2], ids[1], ids[0]}
	slices.SortFunc(all, func(a, b uint64) int { return int(b) - int(a) })
	if got := list(&adminpb.ListOperationsRequest{}); !slices.Equal(got, all) {
		t.Errorf("all: %v, want %v", got, all)
	}
	active := slices.DeleteFunc(slices.Clone(all), func(id uint64) bool { return id == 98 || id == ids[0] })
	if got := list(&adminpb.ListOperationsRequest{Active: true}); !slices.Equal(got, active) {
		t.Errorf("active: %v, want %v", got, active)
	}
	if got := list(&adminpb.ListOperationsRequest{Active: true, Limit: 2}); !slices.Equal(got, active[:2]) {
		t.Errorf("active, limit 2: %v, want %v", got, active[:2])
	}

	op, err := admin.GetOperation(tctx(t), &adminpb.GetOperationRequest{Id: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	if op.GetState() != placement.StateFailed || op.GetProgress() != 0.5 || op.GetError() != "partition moved" || op.GetTable() != "ks.users" ||
		!op.GetHasSplitToken() || op.GetSplitToken() != -7 || op.GetReason() != "requested by an operator" || op.GetCreated() == "" || op.GetUpdated() == "" {
		t.Fatalf("operation %v", op)
	}
	if s := op.GetSteps(); len(s) != 1 || s[0].GetName() != "split" || s[0].GetState() != "failed" || s[0].GetDetail() != "generation changed" || s[0].GetAt() != "2024-05-06T07:08:09Z" {
		t.Fatalf("steps %v", s)
	}
	op, err = admin.GetOperation(tctx(t), &adminpb.GetOperationRequest{Id: 98})
	if err != nil {
		t.Fatal(err)
	}
	if op.GetParent() != 99 || op.GetTable() != "" || !slices.Equal(op.GetToNodes(), []uint64{4}) || op.GetCreated() != "2024-05-06T07:08:09Z" {
		t.Fatalf("operation 98: %v", op)
	}
	if op, err = admin.GetOperation(tctx(t), &adminpb.GetOperationRequest{Id: 99}); err != nil || !slices.Equal(op.GetChildren(), []uint64{ids[0]}) {
		t.Fatalf("operation 99: %v %v", op, err)
	}
	_, err = admin.GetOperation(tctx(t), &adminpb.GetOperationRequest{Id: 12345})
	wantCode(t, err, codes.NotFound, "operation 12345 does not exist")

	// A record that does not decode is the store's fault, not a missing
	// operation.
	if ok, err := c.meta.Operations().Put(tctx(t), 555, []byte("{not json")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	_, err = admin.GetOperation(tctx(t), &adminpb.GetOperationRequest{Id: 555})
	wantCode(t, err, codes.Internal, "operation 555: stored operation does not decode")
	// Listing skips it and shows the rest.
	listed, err := admin.ListOperations(tctx(t), &adminpb.ListOperationsRequest{})
	if err != nil {
		t.Fatalf("a corrupt record failed the listing: %v", err)
	}
	for _, op := range listed.GetOperations() {
		if op.GetId() == 555 {
			t.Fatal("the corrupt record was listed")
		}
	}
	if len(listed.GetOperations()) == 0 {
		t.Fatal("a corrupt record hid every other operation")
	}
}

// SetThroughput changes a table's or keyspace's provisioned RU/s within
// the configured maximum and says how many partitions the table needs.
func TestSetThroughput(t *testing.T) {
	c := opsCluster(t) // ks.users has 2 partitions
	admin := c.serve(Config{PhysicalPartitionMaxRU: 1000, MaxProvisionedThroughput: 100000}, false)
	for _, tc := range []struct {
		ru          int64
		partsNeeded uint32
	}{{5000, 5}, {1500, 2}, {1, 2}, {0, 2}, {100000, 100}} {
		resp, err := admin.SetThroughput(tctx(t), &adminpb.SetThroughputRequest{Table: "ks.users", RuPerSec: tc.ru})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetRuPerSec() != tc.ru || resp.GetPartitions() != 2 || resp.GetPartitionsNeeded() != tc.partsNeeded {
			t.Errorf("%d RU/s: %v, want %d partitions needed", tc.ru, resp, tc.partsNeeded)
		}
		c.catchUp()
		if got := c.meta.State().Schema.Table("ks", "users").Options.Throughput; got != tc.ru {
			t.Errorf("%d RU/s: the catalog says %d", tc.ru, got)
		}
	}
	resp, err := admin.SetThroughput(tctx(t), &adminpb.SetThroughputRequest{Keyspace: "ks", RuPerSec: 300})
	if err != nil {
		t.Fatal(err)
	}
	c.catchUp()
	if resp.GetRuPerSec() != 300 || resp.GetPartitions() != 0 || c.meta.State().Schema.Keyspaces["ks"].Throughput != 300 {
		t.Fatalf("keyspace: %v, catalog %+v", resp, c.meta.State().Schema.Keyspaces["ks"])
	}

	for _, tc := range []struct {
		name     string
		req      *adminpb.SetThroughputRequest
		code     codes.Code
		contains string
	}{
		{"negative", &adminpb.SetThroughputRequest{Table: "ks.users", RuPerSec: -1}, codes.InvalidArgument, "must not be negative"},
		{"over the maximum", &adminpb.SetThroughputRequest{Table: "ks.users", RuPerSec: 100001}, codes.InvalidArgument, "exceeds the maximum of 100000 RU/s"},
		{"table and keyspace", &adminpb.SetThroughputRequest{Table: "ks.users", Keyspace: "ks", RuPerSec: 5}, codes.InvalidArgument, "not both"},
		{"neither", &adminpb.SetThroughputRequest{RuPerSec: 5}, codes.InvalidArgument, "want keyspace.table"},
		{"unknown keyspace", &adminpb.SetThroughputRequest{Keyspace: "nope", RuPerSec: 5}, codes.NotFound, "keyspace does not exist"},
		{"unknown table", &adminpb.SetThroughputRequest{Table: "ks.nope", RuPerSec: 5}, codes.NotFound, "table ks.nope does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := admin.SetThroughput(tctx(t), tc.req)
			wantCode(t, err, tc.code, tc.contains)
		})
	}
	if got := c.meta.State().Schema.Table("ks", "users").Options.Throughput; got != 100000 {
		t.Fatalf("refused changes left %d RU/s", got)
	}

	// A node without a catalog writer cannot change it.
	_, err = c.serve(Config{}, true).SetThroughput(tctx(t), &adminpb.SetThroughputRequest{Table: "ks.users", RuPerSec: 5})
	wantCode(t, err, codes.Unimplemented, "cannot change the catalog")
}

// partitionsFor rounds up without overflowing and stays within uint32.
func TestPartitionsFor(t *testing.T) {
	for _, tc := range []struct {
		ru, maxRU int64
		want      uint32
	}{
		{0, 1000, 0}, {-5, 1000, 0}, {5, 0, 0}, {5, -1, 0},
		{1, 1000, 1}, {1000, 1000, 1}, {1001, 1000, 2},
		{math.MaxInt64, 1 << 40, 1 << 23},
		{math.MaxInt64, 10000, math.MaxUint32}, // 922337203685478 partitions: more than the field holds
		{math.MaxInt64, math.MaxInt64, 1},
	} {
		if got := partitionsFor(tc.ru, tc.maxRU); got != tc.want {
			t.Errorf("partitionsFor(%d, %d) = %d, want %d", tc.ru, tc.maxRU, got, tc.want)
		}
	}
}

// When the metadata store cannot be reached, every call that reads or
// writes it says so (Unavailable, which cosmosctl retries) rather than
// reporting a missing object or an empty list.
func TestMetadataStoreDown(t *testing.T) {
	c := opsCluster(t)
	admin := c.serve(Config{}, false)
	op, err := admin.Split(tctx(t), &adminpb.SplitRequest{Partition: 100})
	if err != nil {
		t.Fatal(err)
	}
	c.kv.fail.Store(true)
	defer c.kv.fail.Store(false)
	for _, tc := range []struct {
		name     string
		call     func() error
		contains string
	}{
		{"split", func() error { _, err := admin.Split(tctx(t), &adminpb.SplitRequest{Partition: 101}); return err }, "submit operation"},
		{"drain", func() error { _, err := admin.DrainNode(tctx(t), &adminpb.NodeRequest{Node: "alpha"}); return err }, "submit operation"},
		{"rebalance", func() error { _, err := admin.Rebalance(tctx(t), &adminpb.RebalanceRequest{}); return err }, "submit operation"},
		{"rebalance plan", func() error {
			_, err := admin.Rebalance(tctx(t), &adminpb.RebalanceRequest{DryRun: true})
			return err
		}, "rebalance plan"},
		{"list operations", func() error { _, err := admin.ListOperations(tctx(t), &adminpb.ListOperationsRequest{}); return err }, errInjected.Error()},
		{"get operation", func() error {
			_, err := admin.GetOperation(tctx(t), &adminpb.GetOperationRequest{Id: op.GetId()})
			return err
		}, errInjected.Error()},
		{"undrain", func() error { _, err := admin.UndrainNode(tctx(t), &adminpb.NodeRequest{Node: "bravo"}); return err }, "undrain bravo (id 2)"},
		{"table throughput", func() error {
			_, err := admin.SetThroughput(tctx(t), &adminpb.SetThroughputRequest{Table: "ks.users", RuPerSec: 5})
			return err
		}, errInjected.Error()},
		{"keyspace throughput", func() error {
			_, err := admin.SetThroughput(tctx(t), &adminpb.SetThroughputRequest{Keyspace: "ks", RuPerSec: 5})
			return err
		}, errInjected.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.call(), codes.Unavailable, tc.contains) })
	}
	// What needs only the watched state still answers.
	if _, err := admin.ShowRing(tctx(t), &adminpb.ShowRingRequest{}); err != nil {
		t.Fatalf("show ring without the store: %v", err)
	}
}

// Undrain reports the operations of the node from the store: when the
// store fails after the mark was cleared, the call fails.
func TestUndrainListFails(t *testing.T) {
	c := opsCluster(t)
	c.member(2, func(m *cluster.Member) { m.Draining = true })
	srv := NewServer(Config{Meta: &failingOps{MetaView: c.meta, c: c}, Router: c.router})
	_, err := serveAdmin(t, srv).UndrainNode(tctx(t), &adminpb.NodeRequest{Node: "bravo"})
	wantCode(t, err, codes.Unavailable, errInjected.Error())
	c.catchUp()
	if c.meta.State().Members[2].Draining {
		t.Fatal("the draining mark was not cleared")
	}
}

// failingOps is the cluster's metadata whose store fails once a member
// record has been updated.
type failingOps struct {
	MetaView
	c *testCluster
}

func (f *failingOps) UpdateMember(ctx context.Context, id uint64, mutate func(m *cluster.Member) bool) error {
	err := f.MetaView.UpdateMember(ctx, id, mutate)
	f.c.kv.fail.Store(true)
	f.c.t.Cleanup(func() { f.c.kv.fail.Store(false) })
	return err
}
