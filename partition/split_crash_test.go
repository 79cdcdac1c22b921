package partition

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// walSyncGate holds back the WAL's syncs once armed, so that a test can
// take a crash clone while a batch is written but not yet durable.
type walSyncGate struct {
	armed       atomic.Bool
	once        sync.Once
	blocked     chan struct{} // closed when the first armed sync waits
	release     chan struct{} // closed by open
	releaseOnce sync.Once
}

// newWALSyncGate returns a gate that t's cleanup opens, so that a failed
// test does not leave the node's syncs (and its Close) waiting.
func newWALSyncGate(t *testing.T) *walSyncGate {
	g := &walSyncGate{blocked: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

// open disarms the gate and lets every held sync through.
func (g *walSyncGate) open() {
	g.armed.Store(false)
	g.releaseOnce.Do(func() { close(g.release) })
}

func (g *walSyncGate) wrap(fs vfs.FS) vfs.FS {
	return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			if g.armed.Load() && strings.HasSuffix(op.Path, ".log") {
				g.once.Do(func() { close(g.blocked) })
				<-g.release
			}
		}
		return nil
	}))
}

// splitCrashPoint is where in a split the node crashes.
type splitCrashPoint int

const (
	// The split's apply batch (left descriptor, right descriptor, right
	// consensus state) is in the WAL but its sync has not returned.
	crashBatchUnsynced splitCrashPoint = iota
	// The batch is durable and OnSplit runs, but the right half's
	// replica has not started.
	crashBeforeRightStarts
	// The right half runs and both halves took writes after the split.
	crashAfterBothServe
)

// TestSplitSurvivesCrash crashes a node at the points of a split's two
// phases (the apply batch that holds InitSplit's writes; OnSplit, which
// starts the right half once that batch is durable) and restarts it from
// what its disk kept. Whatever the point, the restarted node has either
// the parent alone, with its whole range (the split was lost with its
// batch), or both halves, with their descriptors and consensus state:
// never a shrunk left half without its right half, nor a right half
// without its state. Every row is there exactly once, served by the half
// whose range holds it, the halves' stats add up to the parent's, and
// both halves take writes. A raft replica cannot lose the split once it
// is applied (its log entry was durable first, and a restart applies it
// again); the local engine loses it with an unsynced batch.
func TestSplitSurvivesCrash(t *testing.T) {
	for _, engine := range crashEngines {
		for _, tc := range []struct {
			name  string
			point splitCrashPoint
			keep  int // percent of unsynced data the crash keeps
			split bool
		}{
			{"batch-unsynced-lost", crashBatchUnsynced, 0, engine == "raft"},
			{"batch-unsynced-kept", crashBatchUnsynced, 100, true},
			{"durable-right-not-started", crashBeforeRightStarts, 0, true},
			{"both-halves-serving", crashAfterBothServe, 0, true},
		} {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				testSplitCrash(t, engine, tc.point, tc.keep, tc.split)
			})
		}
	}
}

// splitHalves are the halves of crashPart that the tests split it into.
func splitHalves() (left, right *kvpb.Descriptor) {
	return &kvpb.Descriptor{Id: 100, TableId: table, Start: math.MinInt64, End: -1},
		&kvpb.Descriptor{Id: 101, TableId: table, Start: 0, End: math.MaxInt64}
}

func testSplitCrash(t *testing.T, engine string, point splitCrashPoint, keep int, wantSplit bool) {
	n := newCrashNode(t, engine)
	gate := newWALSyncGate(t) // cleanups run last-in first: the gate opens before the node stops
	var disk *vfs.MemFS       // the crash clone
	cloned := make(chan struct{})
	switch point {
	case crashBatchUnsynced:
		n.wrap = gate.wrap
		n.onInitSplit = func(right consensus.GroupID) {
			// Inside the split's apply: the batch commits next, and its
			// sync is the first the gate holds.
			gate.armed.Store(true)
		}
	case crashBeforeRightStarts:
		n.knobs = &StoreKnobs{BeforeSplitStart: func(left, right uint64) {
			disk = n.crashClone(keep, nil)
			close(cloned)
		}}
	}
	n.start()
	parent, err := n.store.Bootstrap(context.Background(), crashPart())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	var below, above int
	for i := range 40 {
		key := fmt.Sprintf("k%02d", i)
		if err := n.write(100, upsert(key, ck(1), 1, set(1, "v"+key))); err != nil {
			t.Fatal(err)
		}
		want[key] = "v" + key
		if _, tok := pk(key); tok < 0 {
			below++
		} else {
			above++
		}
	}
	if below == 0 || above == 0 {
		t.Fatalf("the keys do not fall on both sides of the split (%d below, %d above)", below, above)
	}
	before, err := SumStats(n.eng, parent.Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	gen := parent.Descriptor().GetGeneration()
	left, right := splitHalves()
	splitDone := make(chan error, 1)
	go func() {
		_, err := parent.Propose(context.Background(), &kvpb.Command{Cmd: &kvpb.Command_Split{Split: &kvpb.SplitCommand{Left: left, Right: right}}})
		splitDone <- err
	}()
	switch point {
	case crashBatchUnsynced:
		waitFor(t, gate.blocked, "the split's batch to wait for its sync")
		disk = n.crashClone(keep, nil)
		gate.open()
	case crashBeforeRightStarts:
		waitFor(t, cloned, "the split to reach OnSplit")
	case crashAfterBothServe:
		n.replica(101)
		for _, key := range []string{"after-a", "after-b", "after-c", "after-d", "after-e", "after-f"} {
			id := uint64(100)
			if _, tok := pk(key); tok >= 0 {
				id = 101
			}
			if err := n.write(id, upsert(key, ck(1), 1, set(1, "v"+key))); err != nil {
				t.Fatalf("write %s to partition %d after the split: %v", key, id, err)
			}
			want[key] = "v" + key
		}
		before = Totals{}
		for _, id := range []uint64{100, 101} {
			tot, err := SumStats(n.eng, n.replica(id).Descriptor())
			if err != nil {
				t.Fatal(err)
			}
			before.Bytes, before.Rows, before.LogicalPartitions = before.Bytes+tot.Bytes, before.Rows+tot.Rows, before.LogicalPartitions+tot.LogicalPartitions
		}
		disk = n.crashClone(keep, nil)
	}
	// The old incarnation completes the split on the old disk; its answer
	// does not matter (a crash came first), only that it gives one.
	select {
	case <-splitDone:
	case <-time.After(crashTimeout):
		t.Fatal("the split proposal never returned")
	}
	n.restart(disk)
	checkSplitOutcome(t, n, wantSplit, gen, want, before)
}

// checkSplitOutcome checks a restarted node after a crash during a split
// of crashPart into splitHalves.
func checkSplitOutcome(t *testing.T, n *crashNode, wantSplit bool, gen uint64, want map[string]string, before Totals) {
	t.Helper()
	left, right := splitHalves()
	got := map[string]string{}
	var after Totals
	halves := []*kvpb.Descriptor{crashPart()}
	if wantSplit {
		halves = []*kvpb.Descriptor{left, right}
	} else {
		// The split left no trace: no replica, descriptor or consensus
		// state of the right half (a restart would otherwise find a
		// right half overlapping its parent).
		for _, k := range [][]byte{storage.ReplicaStateKey(101), storage.RaftApplyStateKey(101), storage.RaftHardStateKey(101)} {
			if _, ok, err := n.eng.Get(k); err != nil || ok {
				t.Fatalf("the lost split left key %x (err %v)", k, err)
			}
		}
	}
	for _, h := range halves {
		r := n.settle(h.GetId())
		d := r.Descriptor()
		if d.GetStart() != h.GetStart() || d.GetEnd() != h.GetEnd() || d.GetTableId() != table {
			t.Fatalf("partition %d holds tokens [%d, %d] of table %d after the restart, want [%d, %d] (split expected: %v)",
				h.GetId(), d.GetStart(), d.GetEnd(), d.GetTableId(), h.GetStart(), h.GetEnd(), wantSplit)
		}
		if wantSplit && d.GetGeneration() <= gen {
			t.Fatalf("partition %d has generation %d, not above the parent's %d", h.GetId(), d.GetGeneration(), gen)
		}
		if len(d.GetReplicas()) != 1 || d.GetReplicas()[0].GetNodeId() != 1 {
			t.Fatalf("partition %d has replicas %v", h.GetId(), d.GetReplicas())
		}
		for k, v := range n.rows(h.GetId()) {
			if _, dup := got[k]; dup {
				t.Fatalf("row %s is in both halves", k)
			}
			if _, tok := pk(k); tok < d.GetStart() || tok > d.GetEnd() {
				t.Fatalf("partition %d [%d, %d] returned row %s of token %d", h.GetId(), d.GetStart(), d.GetEnd(), k, tok)
			}
			got[k] = v
		}
		tot, err := SumStats(n.eng, d)
		if err != nil {
			t.Fatal(err)
		}
		after.Bytes, after.Rows, after.LogicalPartitions = after.Bytes+tot.Bytes, after.Rows+tot.Rows, after.LogicalPartitions+tot.LogicalPartitions
	}
	if len(n.store.Replicas()) != len(halves) {
		t.Fatalf("the node runs %d replicas, want %d", len(n.store.Replicas()), len(halves))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("row %s = %q after the restart, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows after the restart, %d written", len(got), len(want))
	}
	if after != before {
		t.Fatalf("stats after the restart %+v, before the crash %+v", after, before)
	}
	// Both halves serve writes, and the left refuses the right's keys.
	for _, key := range []string{"new-a", "new-b", "new-c", "new-d", "new-e", "new-f"} {
		_, tok := pk(key)
		id := uint64(100)
		if wantSplit && tok >= 0 {
			id = 101
		}
		if err := n.write(id, upsert(key, ck(1), 1, set(1, "v"))); err != nil {
			t.Fatalf("write %s (token %d) to partition %d after the restart: %v", key, tok, id, err)
		}
		if wantSplit && tok >= 0 {
			if err := n.write(100, upsert(key, ck(1), 1, set(1, "v"))); ErrorCode(err) != kvpb.Error_RANGE_MISMATCH {
				t.Fatalf("the left half took key %s of the right half: %v", key, err)
			}
		}
	}
	if wantSplit && !proto.Equal(n.replica(100).Descriptor().GetReplicas()[0], n.replica(101).Descriptor().GetReplicas()[0]) {
		t.Fatal("the halves disagree on their replica")
	}
}

// waitFor waits for ch to close.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(crashTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}
