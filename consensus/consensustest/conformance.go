package consensustest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/storage"
)

// Harness adapts an engine implementation to RunEngineConformance.
type Harness struct {
	// Replicas is the number of replicas of every test group, one per node,
	// on nodes 1..Replicas (1 for consensus/local).
	Replicas int
	// NewCluster is called once per test cluster and returns the function
	// that starts the engine of one node on its store; it is called again
	// for a node after the suite restarted it. Per-cluster shared state (an
	// in-memory network) lives in the closure.
	NewCluster func(t *testing.T) func(node consensus.NodeID, store *storage.Engine) (consensus.Engine, error)
	// Timeout bounds every wait of the suite. Default 20s.
	Timeout time.Duration
	// Crashable gives every node's store a crashable in-memory filesystem
	// (Pebble's vfs.NewCrashableMem) instead of a directory, so that
	// Cluster.Crash can drop what the node had not synced.
	Crashable bool
	// Silence cuts node off from the cluster's network (silent) or
	// reconnects it. Crash calls it first: nothing may leave a node after
	// the instant it crashes, or a peer could count an acknowledgement of
	// state the crash then loses. Required with Crashable and more than
	// one replica; a single node has no one to silence.
	Silence func(t *testing.T, node consensus.NodeID, silent bool)
	// WrapFS, with Crashable, wraps node's filesystem each time the node
	// starts, for instance with Pebble's errorfs to inject I/O errors.
	WrapFS func(node consensus.NodeID, fs vfs.FS) vfs.FS
	// Seed drives the random choices of crashes (which unsynced writes
	// survive). Zero means a seed from the clock; the suite logs it.
	Seed int64
}

// RunEngineConformance tests the consensus.Engine and consensus.Group
// contracts: bootstrap, apply order and results, deterministic rejection,
// concurrency, ReadIndex, Status, restart recovery, stop/start/destroy and
// context handling. With a crashable harness, restarts are crashes of
// every node at once that keep only what was synced (and some of what was
// not).
func RunEngineConformance(t *testing.T, h Harness) {
	if h.Timeout == 0 {
		h.Timeout = 20 * time.Second
	}
	tests := []struct {
		name string
		run  func(t *testing.T, c *Cluster)
	}{
		{"Bootstrap", testBootstrap},
		{"ProposeApplyOrder", testApplyOrder},
		{"DeterministicRejection", testRejection},
		{"ConcurrentProposals", testConcurrent},
		{"ReadIndex", testReadIndex},
		{"Status", testStatus},
		{"RestartRecovery", testRestart},
		{"ReadIndexAfterRestart", testReadIndexAfterRestart},
		{"StopStartGroup", testStopStart},
		{"DestroyGroup", testDestroy},
		{"ContextCanceled", testContext},
		{"MultipleGroups", testMultipleGroups},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCluster(t, h)
			defer c.Close()
			tc.run(t, c)
		})
	}
}

func testBootstrap(t *testing.T, c *Cluster) {
	c.StartGroup(7, c.Members())
	leader := c.Leader(7)
	for i := 1; i <= c.h.Replicas; i++ {
		st := c.Group(i, 7).Status()
		if st.ID != 7 || st.ReplicaID != consensus.ReplicaID(i) {
			t.Errorf("node %d: status id %d replica %d", i, st.ID, st.ReplicaID)
		}
		if !slices.Equal(st.Members, c.Members()) {
			t.Errorf("node %d: members %v, want %v", i, st.Members, c.Members())
		}
		if st.Leader != consensus.ReplicaID(leader) || st.LeaderNode != consensus.NodeID(leader) {
			t.Errorf("node %d: leader r%d@n%d, want r%d@n%d", i, st.Leader, st.LeaderNode, leader, leader)
		}
		h := c.KV(i, 7).History()
		if len(h) == 0 || h[0].Index != 1 || h[0].Type != consensus.EntryMembership || !slices.Equal(h[0].Members, c.Members()) {
			t.Errorf("node %d: first applied entry %+v, want the membership at index 1", i, h)
		}
	}
}

func testApplyOrder(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	var last uint64
	for i := range 30 {
		v := c.MustPropose(1, Put("k", fmt.Sprint(i)))
		idx, ok := v.(uint64)
		if !ok || idx <= last {
			t.Fatalf("put %d: result %v after index %d", i, v, last)
		}
		last = idx
		got := c.MustPropose(1, Get("k"))
		if got != (GetResult{Value: fmt.Sprint(i), Found: true}) {
			t.Fatalf("get after put %d: %+v", i, got)
		}
	}
	if got := c.MustPropose(1, Get("absent")); got != (GetResult{}) {
		t.Fatalf("get absent: %+v", got)
	}
	c.CheckConverged(1)
	for i := 1; i <= c.h.Replicas; i++ {
		var puts []string
		var prev uint64
		for _, a := range c.KV(i, 1).History() {
			if a.Index <= prev {
				t.Fatalf("node %d: index %d applied after %d", i, a.Index, prev)
			}
			prev = a.Index
			if a.Type == consensus.EntryCommand && a.Command[0] == opPut {
				puts = append(puts, a.Command)
			}
		}
		if len(puts) > 30 {
			t.Fatalf("node %d: %d puts applied, want at most 30", i, len(puts))
		}
		for j, p := range puts {
			if p != string(Put("k", fmt.Sprint(j))) {
				t.Fatalf("node %d: put %d is %q", i, j, p)
			}
		}
	}
}

func testRejection(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	c.MustPropose(1, Put("k", "a"))
	if _, err := c.Propose(1, CAS("k", "b", true, "c")); !errors.Is(err, ErrCASMismatch) {
		t.Fatalf("cas with wrong old value: %v, want ErrCASMismatch", err)
	}
	if _, err := c.Propose(1, CAS("k", "", false, "c")); !errors.Is(err, ErrCASMismatch) {
		t.Fatalf("cas expecting absence: %v, want ErrCASMismatch", err)
	}
	if _, err := c.Propose(1, []byte("xyz")); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("malformed command: %v, want ErrBadCommand", err)
	}
	if got := c.MustPropose(1, Get("k")); got != (GetResult{Value: "a", Found: true}) {
		t.Fatalf("after rejected cas: %+v", got)
	}
	c.MustPropose(1, CAS("k", "a", true, "c"))
	if got := c.MustPropose(1, Get("k")); got != (GetResult{Value: "c", Found: true}) {
		t.Fatalf("after cas: %+v", got)
	}
}

func testConcurrent(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if _, err := c.Propose(1, Put(fmt.Sprintf("w%d-%d", w, i), "v")); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent propose: %v", err)
	}
	c.CheckConverged(1)
	for n := 1; n <= c.h.Replicas; n++ {
		for w := range workers {
			for i := range each {
				if _, ok, err := c.KV(n, 1).Read(fmt.Sprintf("w%d-%d", w, i)); err != nil || !ok {
					t.Fatalf("node %d: key w%d-%d missing (%v)", n, w, i, err)
				}
			}
		}
	}
}

func testReadIndex(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	ctx, cancel := c.ctx()
	defer cancel()
	for i := range 10 {
		c.MustPropose(1, Put("k", fmt.Sprint(i)))
		for n := 1; n <= c.h.Replicas; n++ {
			if err := ReadIndex(ctx, c.Group(n, 1)); err != nil {
				t.Fatalf("node %d: read index: %v", n, err)
			}
			if v, ok, err := c.KV(n, 1).Read("k"); err != nil || !ok || v != fmt.Sprint(i) {
				t.Fatalf("node %d: read after read index: %q %v %v, want %d", n, v, ok, err, i)
			}
		}
	}
}

func testStatus(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	idx := c.MustPropose(1, Put("k", "v")).(uint64)
	leader := c.Leader(1)
	st := c.Group(leader, 1).Status()
	if !st.IsLeader() || st.Term == 0 {
		t.Fatalf("leader status %+v", st)
	}
	if st.Applied < idx || st.Commit < st.Applied {
		t.Fatalf("leader applied %d commit %d, write at %d", st.Applied, st.Commit, idx)
	}
	ok := c.poll(func() bool {
		st := c.Group(leader, 1).Status()
		if len(st.Progress) != c.h.Replicas {
			return false
		}
		for _, m := range c.Members() {
			if st.Progress[m.ReplicaID] < idx {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("leader progress %v, want every member at %d or later", c.Group(leader, 1).Status().Progress, idx)
	}
	for n := 1; n <= c.h.Replicas; n++ {
		if n == leader {
			continue
		}
		st := c.Group(n, 1).Status()
		if st.IsLeader() || st.Leader != consensus.ReplicaID(leader) || st.Term == 0 {
			t.Errorf("follower %d status %+v", n, st)
		}
	}
}

func testRestart(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	for i := range 20 {
		c.MustPropose(1, Put(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}
	c.CheckConverged(1)
	old := make([]*KV, c.h.Replicas)
	for n := 1; n <= c.h.Replicas; n++ {
		old[n-1] = c.KV(n, 1)
	}
	c.Restart()
	for n := 1; n <= c.h.Replicas; n++ {
		// The old incarnation is stopped: its applied index is final. A
		// crash may lose applied entries that were not synced yet (they
		// are applied again from the log), never invent any.
		got, want := c.KV(n, 1).ResumedAt(), old[n-1].AppliedIndex()
		if got > want || (got != want && !c.h.Crashable) {
			t.Fatalf("node %d: state machine resumed at %d, had applied %d", n, got, want)
		}
	}
	c.MustPropose(1, Put("after", "restart"))
	c.CheckConverged(1)
	ctx, cancel := c.ctx()
	defer cancel()
	for n := 1; n <= c.h.Replicas; n++ {
		if err := c.Group(n, 1).ReadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if v, ok, _ := c.KV(n, 1).Read(fmt.Sprintf("k%d", i)); !ok || v != fmt.Sprint(i) {
				t.Fatalf("node %d: k%d = %q %v after restart", n, i, v, ok)
			}
		}
		if err := c.KV(n, 1).Err(); err != nil {
			t.Fatalf("node %d: %v", n, err)
		}
		if st := c.Group(n, 1).Status(); !slices.Equal(st.Members, c.Members()) {
			t.Fatalf("node %d: members after restart %v", n, st.Members)
		}
	}
}

// testReadIndexAfterRestart: a linearizable read right after a restart (with a
// crashable harness, a crash of every node that keeps only what was
// synced, and perhaps a little more) sees every write acknowledged before
// it, on every replica, with no write in between. RestartRecovery writes
// first, which commits an entry of the new term and so hides a read index
// taken from a commit index the crash set back (see the raft engine's
// readHold).
func testReadIndexAfterRestart(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	for round := range 3 {
		want := map[string]string{}
		for i := range 5 {
			k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("%d-%d", round, i)
			c.MustPropose(1, Put(k, v))
			want[k] = v
		}
		c.Restart()
		ctx, cancel := c.ctx()
		for n := 1; n <= c.h.Replicas; n++ {
			if err := ReadIndex(ctx, c.Group(n, 1)); err != nil {
				cancel()
				t.Fatalf("round %d: node %d: read index after restart: %v", round, n, err)
			}
			for k, v := range want {
				if got, ok, err := c.KV(n, 1).Read(k); err != nil || !ok || got != v {
					cancel()
					t.Fatalf("round %d: node %d: %s = %q (found %v, err %v) after restart, want the acknowledged %q", round, n, k, got, ok, err, v)
				}
			}
		}
		cancel()
	}
}

func testStopStart(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	c.MustPropose(1, Put("k", "v"))
	kv, err := NewKV(c.Store(1), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Engine(1).StartGroup(context.Background(), consensus.GroupConfig{ID: 1, ReplicaID: 1, StateMachine: kv}); !errors.Is(err, consensus.ErrGroupExists) {
		t.Fatalf("second StartGroup: %v, want ErrGroupExists", err)
	}
	if err := c.Engine(1).StopGroup(99); !errors.Is(err, consensus.ErrGroupNotFound) {
		t.Fatalf("StopGroup of an unknown group: %v, want ErrGroupNotFound", err)
	}
	for n := 1; n <= c.h.Replicas; n++ {
		old := c.Group(n, 1)
		if err := c.Engine(n).StopGroup(1); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Engine(n).Group(1); ok {
			t.Fatalf("node %d: stopped group still listed", n)
		}
		ctx, cancel := c.ctx()
		_, err := old.Propose(ctx, Put("x", "y"))
		cancel()
		if !errors.Is(err, consensus.ErrStopped) {
			t.Fatalf("node %d: propose on a stopped group: %v, want ErrStopped", n, err)
		}
	}
	for n := 1; n <= c.h.Replicas; n++ {
		c.startGroupOn(n-1, 1, nil)
	}
	if got := c.MustPropose(1, Get("k")); got != (GetResult{Value: "v", Found: true}) {
		t.Fatalf("after stop and start: %+v", got)
	}
}

func testDestroy(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	c.MustPropose(1, Put("k", "v"))
	for n := 1; n <= c.h.Replicas; n++ {
		if err := c.Engine(n).DestroyGroup(1); err != nil {
			t.Fatal(err)
		}
		if err := Clear(c.Store(n), 1); err != nil {
			t.Fatal(err)
		}
	}
	c.StartGroup(1, c.Members())
	if got := c.MustPropose(1, Get("k")); got != (GetResult{}) {
		t.Fatalf("after destroy: %+v", got)
	}
	for n := 1; n <= c.h.Replicas; n++ {
		if h := c.KV(n, 1).History(); len(h) == 0 || h[0].Index != 1 || h[0].Type != consensus.EntryMembership {
			t.Fatalf("node %d: a destroyed group must bootstrap afresh, applied %+v", n, h)
		}
	}
}

func testContext(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	leader := c.Leader(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Group(leader, 1).Propose(ctx, Put("k", "v")); !errors.Is(err, context.Canceled) {
		t.Fatalf("propose with a canceled context: %v", err)
	}
	if err := c.Group(leader, 1).ReadIndex(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("read index with a canceled context: %v", err)
	}
}

func testMultipleGroups(t *testing.T, c *Cluster) {
	for id := consensus.GroupID(1); id <= 3; id++ {
		c.StartGroup(id, c.Members())
	}
	for id := consensus.GroupID(1); id <= 3; id++ {
		c.MustPropose(id, Put("k", fmt.Sprint(id)))
	}
	for id := consensus.GroupID(1); id <= 3; id++ {
		if got := c.MustPropose(id, Get("k")); got != (GetResult{Value: fmt.Sprint(id), Found: true}) {
			t.Fatalf("group %d: %+v", id, got)
		}
		c.CheckConverged(id)
	}
}
