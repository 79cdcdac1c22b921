package placement

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
)

// The production dependencies satisfy the controller's interfaces.
var (
	_ MetaView      = (*cluster.Meta)(nil)
	_ CatalogWriter = (*cluster.Catalog)(nil)
	_ NodeClient    = (*router.Router)(nil)
)

// One controller leads at a time; when it stops, another takes over.
func TestControllerElection(t *testing.T) {
	tc := newTestCluster(t)
	c1, c2 := tc.controller(1, nil), tc.controller(2, nil)
	stop1 := tc.run(c1)
	tc.eventually("node 1 to lead", c1.Leading)
	tc.run(c2)
	if got, err := tc.meta.Operations().Controller(tc.ctx); err != nil || got != 1 {
		t.Fatalf("ControllerNode = %d, %v; want 1", got, err)
	}
	if c2.Leading() {
		t.Fatal("two controllers lead at once")
	}
	stop1() // resigns
	tc.eventually("node 2 to lead", c2.Leading)
	if c1.Leading() {
		t.Fatal("a stopped controller still says it leads")
	}
	if got, err := tc.meta.Operations().Controller(tc.ctx); err != nil || got != 2 {
		t.Fatalf("ControllerNode = %d, %v; want 2", got, err)
	}
}

// A deposed controller's writes fail with ErrNotController: its fence is
// its election key, gone once its session is.
func TestDeposedControllerIsFenced(t *testing.T) {
	tc := newTestCluster(t)
	c1, c2 := tc.controller(1, nil), tc.controller(2, nil)
	tc.run(c1)
	tc.eventually("node 1 to lead", c1.Leading)
	stale := c1.fence()
	op := &Operation{Kind: KindSplit, State: StatePending, Partition: 7}
	if err := c1.submit(tc.ctx, op); err != nil {
		t.Fatalf("the leader's submit: %v", err)
	}
	tc.run(c2)
	// Node 1's session dies (its lease expires, as when it hangs) once
	// node 2 campaigns: node 2 is next, ahead of node 1's new campaign.
	var kvs []metakv.KeyValue
	tc.eventually("two candidates", func() bool {
		var err error
		kvs, _, err = tc.kv.List(tc.ctx, "controller/")
		return err == nil && len(kvs) == 2
	})
	if kvs[0].CreateRevision > kvs[1].CreateRevision {
		kvs[0], kvs[1] = kvs[1], kvs[0]
	}
	if string(kvs[0].Value) != "1" {
		t.Fatalf("first candidate is %q, want node 1", kvs[0].Value)
	}
	if err := tc.kv.ExpireLease(kvs[0].Lease); err != nil {
		t.Fatal(err)
	}
	tc.eventually("node 2 to lead", c2.Leading)
	op.Progress = 0.5
	if err := c1.store.save(tc.ctx, stale, op); !errors.Is(err, ErrNotController) {
		t.Fatalf("save with the deposed fence: %v, want ErrNotController", err)
	}
	if got, err := GetOperation(tc.ctx, tc.meta.Operations(), op.ID); err != nil || got.Progress != 0 {
		t.Fatalf("stored operation %+v, %v: the deposed write went through", got, err)
	}
	if err := c2.store.save(tc.ctx, c2.fence(), op); err != nil {
		t.Fatalf("the new leader's save: %v", err)
	}
}

// A round marks a member that is gone down; once DeadAfter passes its
// replicas are repaired onto the live node that keeps zones distinct, and
// the repair, persisted, runs to the end through the nodes.
func TestRoundMarksDownAndRepairs(t *testing.T) {
	tc := newTestCluster(t)
	for id, z := range map[uint64]string{1: "a", 2: "b", 3: "c", 4: "d", 5: "d"} {
		tc.addNode(id, z)
	}
	table, parts := tc.createTable("t", 0, 1, []uint64{1, 2, 3, 4}, 100, 10)
	tc.stopNode(4)
	c := tc.controller(1, func(cfg *ControllerConfig) { cfg.DeadAfter = 300 * time.Millisecond })
	tc.run(c)
	tc.waitState("node 4 marked down", func(st *cluster.State) bool {
		return !st.Members[4].DownSince.IsZero()
	})
	var repair *Operation
	tc.eventually("a repair", func() bool {
		for _, op := range tc.ops() {
			if op.Kind == KindRepair {
				repair = op
				return true
			}
		}
		return false
	})
	if repair.Partition != parts[0].GetId() || repair.From != 4 || repair.To != 5 || repair.Table != table {
		t.Fatalf("repair %+v, want partition %d from node 4 to node 5", repair, parts[0].GetId())
	}
	done := tc.waitOp(repair.ID)
	if done.State != StateDone || done.Progress != 1 {
		t.Fatalf("repair ended %s (%s), progress %v", done.State, done.Error, done.Progress)
	}
	d, _ := tc.sim.group(parts[0].GetId())
	if got := nodesOfDesc(d); got != "n1,n2,n3,n5" {
		t.Fatalf("group replicas %s after the repair, want n1,n2,n3,n5", got)
	}
	tc.waitState("routing copy synced", func(st *cluster.State) bool {
		return nodesOfDesc(st.Partition(parts[0].GetId())) == "n1,n2,n3,n5"
	})
	var steps []string
	for _, s := range done.Steps {
		steps = append(steps, s.Name)
	}
	if got := strings.Join(steps, ","); got != "allocate replica,add learner,catch up,swap,done" {
		t.Fatalf("repair steps %s", got)
	}
}

// A replica that failed on a live node is replaced: the nodes report it,
// the round plans a repair, and the repair runs.
func TestFailedReplicaRepaired(t *testing.T) {
	tc := newTestCluster(t)
	for id, z := range map[uint64]string{1: "a", 2: "b", 3: "c", 4: "b"} {
		tc.addNode(id, z)
	}
	_, parts := tc.createTable("t", 0, 1, []uint64{1, 2, 3}, 100, 10)
	p := parts[0].GetId()
	tc.sim.setFailed(p, 2, "disk I/O error")
	tc.run(tc.controller(1, nil))
	tc.eventually("the failed replica replaced", func() bool {
		d, _ := tc.sim.group(p)
		return nodesOfDesc(d) == "n1,n3,n4"
	})
	var repair *Operation
	for _, op := range tc.ops() {
		if op.Kind == KindRepair {
			repair = op
		}
	}
	if repair == nil || repair.From != 2 || repair.To != 4 || !strings.Contains(repair.Reason, "disk I/O error") {
		t.Fatalf("repair %+v, want node 2 -> node 4 for the failed replica", repair)
	}
}

// Rounds even out leaderships across the nodes.
func TestRoundsBalanceLeaders(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(3, "z")
	tc.createTable("t", 0, 3, []uint64{1, 2, 3}, 100, 10)
	if got := tc.sim.leaders(); got[1] != 3 {
		t.Fatalf("leaders %v before the controller runs, want node 1 leading all", got)
	}
	tc.run(tc.controller(1, nil))
	tc.eventually("one leader per node", func() bool {
		return maps.Equal(tc.sim.leaders(), map[uint64]int{1: 1, 2: 1, 3: 1})
	})
}

// A move off the leader's node hands leadership away first, then swaps
// the learner in and the source out in one change.
func TestMoveMovesLeadershipFirst(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(4, "z")
	_, parts := tc.createTable("t", 0, 1, []uint64{1, 2, 3}, 100, 10)
	p := parts[0].GetId()
	tc.lead(1, nil)
	op := &Operation{Kind: KindMove, Table: parts[0].GetTableId(), Partition: p, From: 1, To: 4, Reason: "test"}
	done := tc.runOp(op, StateDone, "")
	d, leader := tc.sim.group(p)
	if nodesOfDesc(d) != "n2,n3,n4" || leader == 1 {
		t.Fatalf("group %s led by %d after moving node 1's replica", nodesOfDesc(d), leader)
	}
	if !done.hasStep("transfer leadership") {
		t.Fatalf("steps %+v: no leadership transfer", done.Steps)
	}
	tc.waitState("routing copy synced", func(st *cluster.State) bool { return nodesOfDesc(st.Partition(p)) == "n2,n3,n4" })
}

// A move whose target dies fails; its learner, left behind, is removed by
// a later round.
func TestFailedMoveLeavesLearnerThatIsRemoved(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(4, "z")
	_, parts := tc.createTable("t", 0, 1, []uint64{1, 2, 3}, 100, 10)
	p := parts[0].GetId()
	// The group already has a learner on node 4 (a move that stopped
	// halfway) and no operation works on it.
	if _, err := tc.sim.ChangeReplicas(tc.ctx, p, []*kvpb.ReplicaChange{{Type: kvpb.ReplicaChange_ADD_LEARNER,
		Replica: &kvpb.ReplicaDescriptor{NodeId: 4, ReplicaId: 4, Learner: true}}}); err != nil {
		t.Fatal(err)
	}
	c := tc.controller(1, nil)
	tc.run(c)
	tc.eventually("the learner to go", func() bool {
		d, _ := tc.sim.group(p)
		return nodesOfDesc(d) == "n1,n2,n3"
	})
	tc.waitState("routing copy synced", func(st *cluster.State) bool { return nodesOfDesc(st.Partition(p)) == "n1,n2,n3" })
}

// A partition over the size limit is split in the middle of its bytes and
// both halves are published in one change of the ring.
func TestSizeSplit(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(3, "z")
	table, parts := tc.createTable("t", 0, 1, []uint64{1, 2, 3}, 2000, 10)
	c := tc.controller(1, func(cfg *ControllerConfig) {
		cfg.PhysicalPartitionMaxBytes = 1500
		cfg.SizeCheckEvery = 1
	})
	tc.run(c)
	tc.eventually("two partitions", func() bool { return len(tc.ringOf(table)) == 2 })
	if err := covers(tc.ringOf(table)); err != nil {
		t.Fatalf("ring after the split: %v", err)
	}
	var split *Operation
	for _, op := range tc.ops() {
		if op.Kind == KindSplit && op.Partition == parts[0].GetId() {
			split = op
		}
	}
	if split == nil {
		t.Fatal("no split operation stored")
	}
	split = tc.waitOp(split.ID)
	if split.State != StateDone || split.SplitToken == nil || *split.SplitToken != 0 || split.RightID == 0 {
		t.Fatalf("split %+v, want done at token 0 (the middle) with a right half", split)
	}
	// Halves of 1000 bytes are under the limit: no more splits.
	if n := len(tc.sim.partitions(table)); n != 2 {
		t.Fatalf("%d groups, want 2", n)
	}
}

// A table provisioned over PhysicalPartitionMaxRU per partition is split
// until it has enough partitions, and no further.
func TestThroughputSplits(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(3, "z")
	table, _ := tc.createTable("hot", 35000, 1, []uint64{1, 2, 3}, 0, 0)
	c := tc.controller(1, nil)
	tc.run(c)
	tc.eventually("four partitions", func() bool {
		return len(tc.ringOf(table)) == 4 && covers(tc.ringOf(table)) == nil
	})
	tc.eventually("the splits to finish", func() bool {
		for _, op := range tc.ops() {
			if op.Active() {
				return false
			}
		}
		return true
	})
	for _, op := range tc.ops() {
		if op.Kind != KindSplit || op.State != StateDone || op.SplitBy != "throughput" {
			t.Fatalf("operation %+v, want only done throughput splits", op)
		}
	}
	if n := len(tc.ops()); n != 3 {
		t.Fatalf("%d splits, want 3 (1 -> 4 partitions)", n)
	}
}

// A drain moves every replica off its node through child moves and a
// decommission then records the node as decommissioned.
func TestDrainAndDecommission(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(4, "z")
	table, _ := tc.createTable("t", 0, 2, []uint64{1, 2, 3}, 100, 10)
	tc.lead(2, nil)
	op := &Operation{Kind: KindDecommission, Node: 1, Reason: "test"}
	done := tc.runOp(op, StateDone, "")
	if len(done.Children) != 2 {
		t.Fatalf("decommission children %v, want 2 moves", done.Children)
	}
	tc.eventually("the routing copies without node 1", func() bool {
		for _, p := range tc.ringOf(table) {
			if replicaOn(p, 1) != nil || len(p.GetReplicas()) != 3 {
				return false
			}
		}
		return true
	})
	// The member record was written before the operation was saved done;
	// the local state follows the store through its watch.
	tc.waitState("member 1 draining and decommissioned", func(st *cluster.State) bool {
		return st.Members[1].Draining && st.Members[1].Decommissioned
	})
}

// A drain that can never complete is refused with the reason; an undrain
// stops a drain in progress.
func TestDrainRefusedAndUndrained(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(3, "z")
	tc.createTable("t", 0, 1, []uint64{1, 2, 3}, 100, 10)
	tc.lead(2, nil)
	op := &Operation{Kind: KindDrain, Node: 1}
	tc.runOp(op, StateFailed, "cannot drain node 1")
	// Undrained by an operator after the mark: the resumed drain stops.
	if err := tc.meta.UpdateMember(tc.ctx, 1, func(m *cluster.Member) bool { m.Draining = false; return true }); err != nil {
		t.Fatal(err)
	}
	resumed := &Operation{Kind: KindDrain, Node: 1, Steps: []Step{{Name: stepMarkDraining, State: StateDone}}}
	tc.runOp(resumed, StateFailed, "undrained")
	// A node that never joined cannot be drained.
	ghost := &Operation{Kind: KindDrain, Node: 9}
	tc.runOp(ghost, StateFailed, "not a member")
}

// An operator's rebalance moves replicas onto a new node until even.
func TestRebalanceOperation(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(4, "z")
	table, _ := tc.createTable("t", 0, 4, []uint64{1, 2, 3}, 100, 10)
	tc.lead(1, nil)
	op := &Operation{Kind: KindRebalance}
	tc.runOp(op, StateDone, "")
	// 12 replicas over 4 nodes: 3 each, in the groups and (once the
	// watch delivers) in the routing copies.
	load := func(parts []*kvpb.Descriptor) map[uint64]int {
		out := map[uint64]int{}
		for _, p := range parts {
			for _, r := range p.GetReplicas() {
				out[r.GetNodeId()]++
			}
		}
		return out
	}
	even := map[uint64]int{1: 3, 2: 3, 3: 3, 4: 3}
	if got := load(tc.sim.partitions(table)); !maps.Equal(got, even) {
		t.Fatalf("loads %v after rebalancing, want %v", got, even)
	}
	tc.eventually("even routing copies", func() bool { return maps.Equal(load(tc.ringOf(table)), even) })
}

// A move-key isolates one token in a partition of its own and moves it
// onto the nodes asked for.
func TestMoveKey(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(5, "z")
	table, _ := tc.createTable("t", 0, 1, []uint64{1, 2, 3}, 100, 10)
	tc.lead(1, nil)
	tok := int64(-12345)
	op := &Operation{Kind: KindMoveKey, Table: table, Token: &tok, ToNodes: []uint64{3, 4, 5}}
	done := tc.runOp(op, StateDone, "")
	tc.eventually("the ring to hold three partitions", func() bool { return len(tc.ringOf(table)) == 3 && covers(tc.ringOf(table)) == nil })
	d := tc.meta.State().Ring(table).Lookup(tok)
	if d.GetStart() != tok || d.GetEnd() != tok || d.GetId() != done.Partition {
		t.Fatalf("token %d in %v, want a partition of its own (%d)", tok, d, done.Partition)
	}
	g, _ := tc.sim.group(d.GetId())
	if got := nodesOfDesc(g); got != "n3,n4,n5" {
		t.Fatalf("isolated partition on %s, want n3,n4,n5", got)
	}
	// A move-key without token fails at once.
	bad := &Operation{Kind: KindMoveKey, Table: table}
	tc.runOp(bad, StateFailed, "")
}

// A split resumed after it applied, whose right half no node reports yet,
// publishes the left half alone; the right half is added by a round once
// it answers. The ring never holds a partition without replicas (it used
// to, for a negative token: a placeholder [token, -1] was published).
func TestResumedSplitWithUnknownRightHalf(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(3, "z")
	table, parts := tc.createTable("t", 0, 1, []uint64{1, 2, 3}, 100, 10)
	p := parts[0].GetId()
	right, err := tc.cat.AllocateID(tc.ctx, "partition", 1)
	if err != nil {
		t.Fatal(err)
	}
	tok := int64(-1000)
	// The split applied on the group, and the controller that ran it died
	// before publishing; the right half has not started anywhere yet.
	if _, _, err := tc.sim.Split(tc.ctx, &kvpb.SplitRequest{PartitionId: p, SplitToken: tok, RightId: right}); err != nil {
		t.Fatal(err)
	}
	tc.sim.setHidden(right, true)
	op := &Operation{Kind: KindSplit, Table: table, Partition: p, SplitToken: &tok, RightID: right, State: StateRunning}
	tc.submit(op)
	c := tc.controller(1, nil)
	tc.run(c)
	done := tc.waitOp(op.ID)
	if done.State != StateDone {
		t.Fatalf("resumed split ended %s: %s", done.State, done.Error)
	}
	tc.waitState("the left half published", func(st *cluster.State) bool { return st.Partition(p).GetEnd() == tok-1 })
	for _, d := range tc.ringOf(table) {
		if len(d.GetReplicas()) == 0 {
			t.Fatalf("ring holds partition %d [%d, %d] without replicas", d.GetId(), d.GetStart(), d.GetEnd())
		}
	}
	tc.sim.setHidden(right, false)
	tc.eventually("the right half in the ring", func() bool { return covers(tc.ringOf(table)) == nil })
	if got := len(tc.ringOf(table)); got != 2 {
		t.Fatalf("%d partitions, want 2", got)
	}
}

// Finished operations beyond the newest 500 are deleted; active ones stay.
func TestCollectGarbage(t *testing.T) {
	tc := newTestCluster(t)
	c := tc.controller(1, nil)
	ops := tc.meta.Operations()
	for i := 0; i < keepFinished+4; i++ {
		op := &Operation{Kind: KindSplit}
		if err := Submit(tc.ctx, ops, op); err != nil {
			t.Fatal(err)
		}
		op.State = StateDone
		if err := c.store.save(tc.ctx, nil, op); err != nil {
			t.Fatal(err)
		}
	}
	// The oldest is still active: never collected.
	all := tc.ops()
	oldest := all[len(all)-1]
	oldest.State = StateRunning
	if err := c.store.save(tc.ctx, nil, oldest); err != nil {
		t.Fatal(err)
	}
	kept := c.collectGarbage(tc.ctx, tc.ops())
	if len(kept) != keepFinished+1 {
		t.Fatalf("kept %d, want %d", len(kept), keepFinished+1)
	}
	stored := tc.ops()
	if len(stored) != keepFinished+1 {
		t.Fatalf("%d stored after collecting, want %d", len(stored), keepFinished+1)
	}
	if stored[len(stored)-1].ID != oldest.ID {
		t.Fatalf("oldest stored is %d, want the active %d", stored[len(stored)-1].ID, oldest.ID)
	}
	for _, id := range []uint64{all[len(all)-2].ID, all[len(all)-3].ID, all[len(all)-4].ID} {
		if _, err := GetOperation(tc.ctx, ops, id); err == nil {
			t.Fatalf("operation %d, among the oldest finished, was kept", id)
		}
	}
}

// The round gives up on a controller that lost its fence: its
// submissions fail and nothing is stored.
func TestRoundWithoutFenceSubmitsNothing(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(3, "z")
	tc.createTable("hot", 50000, 1, []uint64{1, 2, 3}, 0, 0)
	c := tc.controller(1, nil)
	l, err := tc.meta.Operations().Campaign(tc.ctx, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.fence = func() []metakv.Cond { return []metakv.Cond{l.Fence()} }
	if err := l.Resign(tc.ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(tc.ctx)
	defer cancel()
	var wg sync.WaitGroup
	c.round(ctx, &wg)
	wg.Wait()
	if ops := tc.ops(); len(ops) != 0 {
		t.Fatalf("a deposed controller stored %d operations", len(ops))
	}
}

// Operation.String names what the operation does.
func TestOperationString(t *testing.T) {
	for _, tc := range []struct {
		op   Operation
		want string
	}{
		{Operation{ID: 3, Kind: KindRepair, Partition: 7, From: 1, To: 2}, "repair 3: partition 7 node 1 -> node 2"},
		{Operation{ID: 4, Kind: KindSplit, Partition: 7}, "split 4: partition 7"},
		{Operation{ID: 5, Kind: KindDrain, Node: 1}, "drain 5"},
	} {
		if got := tc.op.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	if got := plural(1, "move") + "/" + plural(2, "move"); got != "1 move/2 moves" {
		t.Errorf("plural: %s", got)
	}
}

// laggingMeta is a cluster.Meta whose State lags the store until CatchUp,
// as MetaView allows: the watch that feeds it may be behind a write that
// already completed.
type laggingMeta struct {
	*cluster.Meta
	mu sync.Mutex
	st *cluster.State
}

func (l *laggingMeta) State() *cluster.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

func (l *laggingMeta) CatchUp(ctx context.Context) error {
	err := l.Meta.CatchUp(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st = l.Meta.State()
	return err
}

// A round that sees a split done must see the ring it published: with a
// state from before (the watch behind the store), it planned the split
// again, splitting past what the table needs.
func TestRoundSeesTheRingOfFinishedOperations(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNodes(3, "z")
	table, _ := tc.createTable("hot", 20000, 1, []uint64{1, 2, 3}, 0, 0)
	lag := &laggingMeta{Meta: tc.meta, st: tc.meta.State()}
	c := tc.controller(1, func(cfg *ControllerConfig) { cfg.Meta = lag })
	ctx, cancel := context.WithCancel(tc.ctx)
	defer cancel()
	for i := 0; i < 3; i++ {
		var wg sync.WaitGroup
		c.round(ctx, &wg)
		wg.Wait() // the round's operations ran to their end
	}
	splits := 0
	for _, op := range tc.ops() {
		if op.Kind == KindSplit {
			splits++
		}
	}
	if splits != 1 {
		t.Fatalf("%d splits of a table that needs 2 partitions, want 1", splits)
	}
	tc.eventually("two partitions", func() bool { return len(tc.ringOf(table)) == 2 && covers(tc.ringOf(table)) == nil })
}

// Syncing a routing copy of a table dropped meanwhile fails with
// ErrTableGone instead of retrying forever (SyncPartition refuses to
// resurrect a dropped table's ring, which looks like a lost race).
func TestSyncCopyOfDroppedTable(t *testing.T) {
	tc := newTestCluster(t)
	tc.addNode(1, "z")
	_, parts := tc.createTable("gone", 0, 1, []uint64{1}, 0, 0)
	if _, err := tc.cat.DropTable(tc.ctx, "ks", "gone", false); err != nil {
		t.Fatal(err)
	}
	c := tc.controller(1, nil)
	next := proto.Clone(parts[0]).(*kvpb.Descriptor)
	next.Generation++
	ctx, cancel := context.WithTimeout(tc.ctx, 10*time.Second)
	defer cancel()
	if err := c.syncCopy(ctx, next); !errors.Is(err, ErrTableGone) {
		t.Fatalf("syncCopy of a dropped table's partition: %v, want ErrTableGone", err)
	}
}

// One stored operation that does not decode neither hides the others nor
// stops the controller: it lists the rest, with an error that says which
// record is bad, and keeps running operations.
func TestCorruptOperationRecordIsSkipped(t *testing.T) {
	tc := newTestCluster(t)
	ops := tc.meta.Operations()
	if err := Submit(tc.ctx, ops, &Operation{Kind: KindSplit, Partition: 1}); err != nil {
		t.Fatal(err)
	}
	if ok, err := ops.Put(tc.ctx, 999, []byte("{not json")); !ok || err != nil {
		t.Fatal(ok, err)
	}
	listed, err := ListOperations(tc.ctx, ops)
	if !errors.Is(err, ErrCorruptOperation) || !strings.Contains(err.Error(), "operation 999") {
		t.Fatalf("list with a corrupt record: %v, want ErrCorruptOperation naming 999", err)
	}
	if len(listed) != 1 || listed[0].Kind != KindSplit {
		t.Fatalf("listed %v, want the good operation", listed)
	}
	if _, err := GetOperation(tc.ctx, ops, 999); !errors.Is(err, ErrCorruptOperation) {
		t.Fatalf("get of the corrupt record: %v", err)
	}
	if _, err := GetOperation(tc.ctx, ops, 12345); !errors.Is(err, ErrNoOperation) {
		t.Fatalf("get of a missing record: %v", err)
	}
	// The controller keeps deciding: a node that goes away is marked.
	tc.addNode(1, "a")
	c := tc.controller(1, nil)
	stop := tc.run(c)
	defer stop()
	tc.stopNode(1)
	tc.waitState("node 1 marked down", func(st *cluster.State) bool {
		m := st.Members[1]
		return m != nil && !m.DownSince.IsZero()
	})
}
