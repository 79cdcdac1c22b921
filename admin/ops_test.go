package admin

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/placement"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
)

// opsCluster is four live nodes (alpha, bravo, charlie, delta) and a dead
// member (echo), with ks.users (text key) in partitions 100 [min, -1] and
// 101 [0, max], each with replicas on alpha, bravo and charlie.
func opsCluster(t *testing.T) *testCluster {
	c := newCluster(t, "alpha", "bravo", "charlie", "delta")
	c.member(5, func(m *cluster.Member) { m.Info.Name, m.DownSince = "echo", time.Now().Add(-time.Hour) })
	c.createTable("ks", "users", 10, []string{"text"}, halves(10, 100, 1, 2, 3))
	return c
}

// stored returns the operation id as the store holds it.
func (c *testCluster) stored(id uint64) *placement.Operation {
	c.t.Helper()
	op, err := placement.GetOperation(tctx(c.t), c.meta.Operations(), id)
	if err != nil {
		c.t.Fatalf("operation %d: %v", id, err)
	}
	return op
}

// keyIn returns a text key whose token lies in [start, end].
func keyIn(t *testing.T, start, end int64) (string, int64) {
	t.Helper()
	for i := range 10000 {
		k := "key" + string(rune('a'+i%26)) + strings.Repeat("z", i/26)
		if tok := ring.Token([]byte(k)); tok >= start && tok <= end {
			return k, tok
		}
	}
	t.Fatal("no key with a token in range")
	return "", 0
}

// Split submits a split of a partition, at a token, at a key's token or
// where the controller chooses, after checking that it can split there.
func TestSplit(t *testing.T) {
	c := opsCluster(t)
	admin := c.serve(Config{MaxPartitionsPerTable: 3}, false)
	inLeft, leftTok := keyIn(t, math.MinInt64, -1)
	inRight, _ := keyIn(t, 1, math.MaxInt64)
	for _, tc := range []struct {
		name     string
		req      *adminpb.SplitRequest
		code     codes.Code
		contains string
		token    *int64 // the split token the operation carries
	}{
		{"controller chooses", &adminpb.SplitRequest{Partition: 100}, codes.OK, "", nil},
		{"at a token", &adminpb.SplitRequest{Partition: 101, HasAt: true, At: 5}, codes.OK, "", ptr(int64(5))},
		{"at the last token", &adminpb.SplitRequest{Partition: 101, HasAt: true, At: math.MaxInt64}, codes.OK, "", ptr(int64(math.MaxInt64))},
		{"at a key", &adminpb.SplitRequest{Partition: 100, Key: []string{inLeft}}, codes.OK, "", ptr(leftTok)},
		{"at the first token", &adminpb.SplitRequest{Partition: 101, HasAt: true, At: 0}, codes.InvalidArgument, "token 0 does not split partition 101: it holds tokens [0, 9223372036854775807]", nil},
		{"token outside", &adminpb.SplitRequest{Partition: 101, HasAt: true, At: -5}, codes.InvalidArgument, "does not split partition 101", nil},
		{"key outside", &adminpb.SplitRequest{Partition: 100, Key: []string{inRight}}, codes.InvalidArgument, "does not split partition 100", nil},
		{"token and key", &adminpb.SplitRequest{Partition: 101, HasAt: true, At: 5, Key: []string{inRight}}, codes.InvalidArgument, "not both", nil},
		{"bad key", &adminpb.SplitRequest{Partition: 101, Key: []string{"a", "b"}}, codes.InvalidArgument, "got 2 values", nil},
		{"unknown partition", &adminpb.SplitRequest{Partition: 7}, codes.NotFound, "partition 7 does not exist", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(c.operations())
			op, err := admin.Split(tctx(t), tc.req)
			if tc.code != codes.OK {
				wantCode(t, err, tc.code, tc.contains)
				if n := len(c.operations()); n != before {
					t.Fatalf("a refused split left %d operations, had %d", n, before)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if op.GetKind() != placement.KindSplit || op.GetState() != placement.StatePending || op.GetPartition() != tc.req.GetPartition() ||
				op.GetTable() != "ks.users" || op.GetHasSplitToken() != (tc.token != nil) || (tc.token != nil && op.GetSplitToken() != *tc.token) {
				t.Fatalf("operation %v", op)
			}
			st := c.stored(op.GetId())
			if st.Kind != placement.KindSplit || st.Partition != tc.req.GetPartition() || st.Table != 10 || !st.Active() ||
				(tc.token == nil) != (st.SplitToken == nil) || (tc.token != nil && *st.SplitToken != *tc.token) {
				t.Fatalf("stored operation %+v", st)
			}
		})
	}

	// A table with max_partitions_per_table partitions splits no more.
	limited := c.serve(Config{MaxPartitionsPerTable: 2}, false)
	_, err := limited.Split(tctx(t), &adminpb.SplitRequest{Partition: 100})
	wantCode(t, err, codes.FailedPrecondition, "table ks.users has 2 physical partitions, the maximum (max_partitions_per_table)")
}

func ptr[T any](v T) *T { return &v }

// Move submits the move of one replica after checking its nodes.
func TestMove(t *testing.T) {
	c := opsCluster(t)
	admin := c.serve(Config{}, false)
	op, err := admin.Move(tctx(t), &adminpb.MoveRequest{Partition: 100, From: "alpha", To: "n4"})
	if err != nil {
		t.Fatal(err)
	}
	if op.GetKind() != placement.KindMove || op.GetPartition() != 100 || op.GetFromNode() != 1 || op.GetToNode() != 4 || op.GetTable() != "ks.users" {
		t.Fatalf("operation %v", op)
	}
	if st := c.stored(op.GetId()); st.Kind != placement.KindMove || st.From != 1 || st.To != 4 || st.Partition != 100 || st.State != placement.StatePending {
		t.Fatalf("stored operation %+v", st)
	}
	for _, tc := range []struct {
		name     string
		req      *adminpb.MoveRequest
		code     codes.Code
		contains string
	}{
		{"unknown partition", &adminpb.MoveRequest{Partition: 7, From: "alpha", To: "delta"}, codes.NotFound, "partition 7 does not exist"},
		{"unknown from", &adminpb.MoveRequest{Partition: 100, From: "zulu", To: "delta"}, codes.NotFound, `no node named "zulu"`},
		{"unknown to", &adminpb.MoveRequest{Partition: 100, From: "alpha", To: "n99"}, codes.NotFound, `no node named "n99"`},
		{"from holds no replica", &adminpb.MoveRequest{Partition: 100, From: "delta", To: "alpha"}, codes.FailedPrecondition, "partition 100 has no replica on node delta"},
		{"to holds one", &adminpb.MoveRequest{Partition: 100, From: "alpha", To: "bravo"}, codes.FailedPrecondition, "partition 100 already has a replica on node bravo"},
		{"to is not live", &adminpb.MoveRequest{Partition: 100, From: "alpha", To: "echo"}, codes.FailedPrecondition, "node echo is not live"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := admin.Move(tctx(t), tc.req)
			wantCode(t, err, tc.code, tc.contains)
		})
	}
	if n := len(c.operations()); n != 1 {
		t.Fatalf("%d operations after one accepted move", n)
	}
	// A draining node takes no replicas: the controller would move this
	// one away again at once.
	c.member(4, func(m *cluster.Member) { m.Draining = true })
	_, err = admin.Move(tctx(t), &adminpb.MoveRequest{Partition: 100, From: "alpha", To: "n4"})
	wantCode(t, err, codes.FailedPrecondition, "is draining or decommissioned and takes no replicas")
	if n := len(c.operations()); n != 1 {
		t.Fatalf("%d operations after a refused move", n)
	}
}

// MoveKey submits the move of one logical partition to the named nodes,
// and refuses what could not move anything.
func TestMoveKey(t *testing.T) {
	c := opsCluster(t)
	admin := c.serve(Config{}, false)
	key, tok := keyIn(t, 0, math.MaxInt64)
	op, err := admin.MoveKey(tctx(t), &adminpb.MoveKeyRequest{Table: "ks.users", Key: []string{key}, To: []string{"delta", "n4", "alpha"}})
	if err != nil {
		t.Fatal(err)
	}
	if op.GetKind() != placement.KindMoveKey || !slices.Equal(op.GetToNodes(), []uint64{4, 1}) || op.GetTable() != "ks.users" ||
		!strings.Contains(op.GetReason(), "move logical partition ("+key+") of ks.users") {
		t.Fatalf("operation %v", op)
	}
	if st := c.stored(op.GetId()); st.Token == nil || *st.Token != tok || st.Table != 10 || !slices.Equal(st.ToNodes, []uint64{4, 1}) {
		t.Fatalf("stored operation %+v, want token %d", st, tok)
	}
	for _, tc := range []struct {
		name     string
		req      *adminpb.MoveKeyRequest
		code     codes.Code
		contains string
	}{
		{"no target", &adminpb.MoveKeyRequest{Table: "ks.users", Key: []string{key}}, codes.InvalidArgument, "give at least one target node"},
		{"unknown table", &adminpb.MoveKeyRequest{Table: "ks.nope", Key: []string{key}, To: []string{"delta"}}, codes.NotFound, "does not exist"},
		{"bad key", &adminpb.MoveKeyRequest{Table: "ks.users", To: []string{"delta"}}, codes.InvalidArgument, "got 0 values"},
		{"unknown node", &adminpb.MoveKeyRequest{Table: "ks.users", Key: []string{key}, To: []string{"zulu"}}, codes.NotFound, `no node named "zulu"`},
		{"dead node", &adminpb.MoveKeyRequest{Table: "ks.users", Key: []string{key}, To: []string{"echo"}}, codes.FailedPrecondition, "node echo is not live"},
		{"targets hold it", &adminpb.MoveKeyRequest{Table: "ks.users", Key: []string{key}, To: []string{"alpha", "bravo"}}, codes.FailedPrecondition,
			"nothing to move: alpha, bravo already hold replicas of the key"},
		{"too many targets", &adminpb.MoveKeyRequest{Table: "ks.users", Key: []string{key}, To: []string{"alpha", "bravo", "charlie", "delta"}}, codes.InvalidArgument,
			"--to names 4 nodes, but the key's partition keeps 3 replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := admin.MoveKey(tctx(t), tc.req)
			wantCode(t, err, tc.code, tc.contains)
		})
	}
	if n := len(c.operations()); n != 1 {
		t.Fatalf("%d operations after one accepted move --key", n)
	}
}

// A key whose token no partition holds (a ring being replaced) is
// refused as unavailable: retrying later works.
func TestMoveKeyNoPartition(t *testing.T) {
	st := fuzzState(t)
	st.Rings[1] = ring.New(1, []*kvpb.Descriptor{{Id: 10, TableId: 1, Start: math.MinInt64, End: -1}})
	err := checkMoveKey(st, placement.View{}, 1, 5, []uint64{1})
	wantCode(t, err, codes.Unavailable, "no partition holds token 5 yet")
}

// A dry run plans the whole rebalance without submitting anything and
// leaves out partitions that have an operation; a real one submits it.
func TestRebalance(t *testing.T) {
	c := opsCluster(t) // delta holds nothing
	admin := c.serve(Config{}, false)
	resp, err := admin.Rebalance(tctx(t), &adminpb.RebalanceRequest{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetOperation() != nil || len(resp.GetPlan()) == 0 {
		t.Fatalf("dry run: %v", resp)
	}
	planned := map[uint64]bool{}
	for _, m := range resp.GetPlan() {
		if m.GetToNode() != 4 || m.GetToName() != "delta" || m.GetTable() != "ks.users" || m.GetFromName() == "" || m.GetReason() == "" {
			t.Errorf("planned move %v", m)
		}
		planned[m.GetPartition()] = true
	}
	if n := len(c.operations()); n != 0 {
		t.Fatalf("a dry run submitted %d operations", n)
	}
	// With a move of partition 100 pending, only 101 is planned.
	if _, err := admin.Move(tctx(t), &adminpb.MoveRequest{Partition: 100, From: "charlie", To: "delta"}); err != nil {
		t.Fatal(err)
	}
	resp, err = admin.Rebalance(tctx(t), &adminpb.RebalanceRequest{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range resp.GetPlan() {
		if m.GetPartition() == 100 {
			t.Fatalf("planned a move of partition 100, which has an operation: %v", resp.GetPlan())
		}
	}
	if len(resp.GetPlan()) == 0 {
		t.Fatal("nothing planned for partition 101")
	}

	resp, err = admin.Rebalance(tctx(t), &adminpb.RebalanceRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if op := resp.GetOperation(); op.GetKind() != placement.KindRebalance || len(resp.GetPlan()) != 0 || c.stored(op.GetId()).Kind != placement.KindRebalance {
		t.Fatalf("rebalance: %v", resp)
	}
}

// Drain and decommission are submitted only when they can complete: some
// other live node, neither draining nor decommissioned, must be able to
// take each replica.
func TestDrainAndDecommission(t *testing.T) {
	c := opsCluster(t)
	c.member(6, func(m *cluster.Member) { m.Info.Name, m.Decommissioned = "foxtrot", true })
	admin := c.serve(Config{}, false)
	op, err := admin.DrainNode(tctx(t), &adminpb.NodeRequest{Node: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if op.GetKind() != placement.KindDrain || op.GetNode() != 1 || c.stored(op.GetId()).Node != 1 {
		t.Fatalf("drain: %v", op)
	}
	op, err = admin.DecommissionNode(tctx(t), &adminpb.NodeRequest{Node: "2"})
	if err != nil {
		t.Fatal(err)
	}
	if op.GetKind() != placement.KindDecommission || op.GetNode() != 2 || c.stored(op.GetId()).Kind != placement.KindDecommission {
		t.Fatalf("decommission: %v", op)
	}
	_, err = admin.DrainNode(tctx(t), &adminpb.NodeRequest{Node: "zulu"})
	wantCode(t, err, codes.NotFound, `no node named "zulu"`)
	_, err = admin.DecommissionNode(tctx(t), &adminpb.NodeRequest{Node: "foxtrot"})
	wantCode(t, err, codes.FailedPrecondition, "node foxtrot (id 6) is decommissioned")

	// With delta draining, no node can take alpha's replicas.
	c.member(4, func(m *cluster.Member) { m.Draining = true })
	_, err = admin.DrainNode(tctx(t), &adminpb.NodeRequest{Node: "alpha"})
	wantCode(t, err, codes.FailedPrecondition, "drain alpha (id 1): cannot drain node 1: 2 of its partitions (partition 100 among them) keep 3 replicas")
	_, err = admin.DecommissionNode(tctx(t), &adminpb.NodeRequest{Node: "charlie"})
	wantCode(t, err, codes.FailedPrecondition, "add 1 node first")
	if n := len(c.operations()); n != 2 {
		t.Fatalf("%d operations after two accepted", n)
	}
}

// UndrainNode clears a node's draining mark and names the drains and
// decommissions of the node that stop.
func TestUndrainNode(t *testing.T) {
	c := opsCluster(t)
	c.member(7, func(m *cluster.Member) { m.Info.Name, m.Decommissioned, m.Draining = "golf", true, true })
	admin := c.serve(Config{}, false)
	drain, err := admin.DrainNode(tctx(t), &adminpb.NodeRequest{Node: "bravo"})
	if err != nil {
		t.Fatal(err)
	}
	c.member(2, func(m *cluster.Member) { m.Draining = true }) // as the controller marks it
	// Operations that do not stop: a finished drain of bravo, a drain of
	// another node, a move off bravo.
	submit := func(op *placement.Operation) uint64 {
		if err := placement.Submit(tctx(t), c.meta.Operations(), op); err != nil {
			t.Fatal(err)
		}
		return op.ID
	}
	done := submit(&placement.Operation{Kind: placement.KindDrain, Node: 2})
	c.setState(done, placement.StateDone)
	submit(&placement.Operation{Kind: placement.KindDrain, Node: 3})
	submit(&placement.Operation{Kind: placement.KindMove, Partition: 100, From: 2, To: 4})
	decom := submit(&placement.Operation{Kind: placement.KindDecommission, Node: 2})
	c.setState(decom, placement.StateRunning)

	resp, err := admin.UndrainNode(tctx(t), &adminpb.NodeRequest{Node: "bravo"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetNode() != 2 || resp.GetName() != "bravo" || !resp.GetWasDraining() || !slices.Equal(resp.GetStoppedOperations(), []uint64{decom, drain.GetId()}) {
		t.Fatalf("undrain: %v, want operations [%d %d] stopped", resp, decom, drain.GetId())
	}
	c.catchUp()
	if c.meta.State().Members[2].Draining {
		t.Fatal("bravo is still draining")
	}
	// Again: nothing changes.
	resp, err = admin.UndrainNode(tctx(t), &adminpb.NodeRequest{Node: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetWasDraining() {
		t.Fatalf("second undrain: %v", resp)
	}
	// A node known only by its member record.
	c.member(5, func(m *cluster.Member) { m.Draining = true })
	resp, err = admin.UndrainNode(tctx(t), &adminpb.NodeRequest{Node: "echo"})
	if err != nil || resp.GetName() != "echo" || !resp.GetWasDraining() || len(resp.GetStoppedOperations()) != 0 {
		t.Fatalf("undrain echo: %v %v", resp, err)
	}

	_, err = admin.UndrainNode(tctx(t), &adminpb.NodeRequest{Node: "golf"})
	wantCode(t, err, codes.FailedPrecondition, "node golf (id 7) is decommissioned")
	c.catchUp()
	if m := c.meta.State().Members[7]; !m.Decommissioned || !m.Draining {
		t.Fatalf("undrain changed a decommissioned node: %+v", m)
	}
	_, err = admin.UndrainNode(tctx(t), &adminpb.NodeRequest{Node: "zulu"})
	wantCode(t, err, codes.NotFound, `no node named "zulu"`)
}

// setState changes operation id's state in the store, as the controller
// does.
func (c *testCluster) setState(id uint64, state string) {
	c.t.Helper()
	op := c.stored(id)
	op.State = state
	c.putOperation(op)
}
