package raft

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
)

// changeReplicas runs ChangeReplicas on the leader, retrying while another
// change or the learner's catch-up is in progress.
func changeReplicas(t *testing.T, c *consensustest.Cluster, id consensus.GroupID, nodes []int, changes ...consensus.ReplicaChange) {
	t.Helper()
	eventually(t, waitTimeout, func() error {
		leader := waitLeader(t, c, id, nodes...)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := c.Group(leader, id).ChangeReplicas(ctx, changes)
		var nl *consensus.NotLeaderError
		if err != nil && !errors.Is(err, ErrMembershipChangeRejected) && !errors.As(err, &nl) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("change replicas %v: %v", changes, err)
		}
		return err
	})
}

// TestMoveUnderLoad moves a replica while clients write: a fifth node
// joins as a learner (and receives a snapshot), then one joint change
// promotes it and removes a follower; leadership moves to the new replica.
// No acknowledged write is lost and the group never stops taking writes.
func TestMoveUnderLoad(t *testing.T) {
	c, _ := newTestCluster(t, 4, nil)
	c.StartGroup(1, c.Members())
	for i := range 30 {
		c.MustPropose(1, consensustest.Put(fmt.Sprintf("pre%d", i), "x"))
	}
	n5 := c.AddNode()

	var acked sync.Map
	var failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("load%d-%d", w, i)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := proposeAmong(ctx, c, 1, []int{1, 2, 3, 4, n5}, consensustest.Put(key, "v"))
				cancel()
				if err != nil {
					failures.Add(1)
					continue
				}
				acked.Store(key, true)
			}
		})
	}

	c.StartGroupOn(n5, 1, nil)
	changeReplicas(t, c, 1, []int{1, 2, 3, 4}, consensus.ReplicaChange{Type: consensus.AddLearner, Replica: consensus.Replica{ReplicaID: 5, NodeID: consensus.NodeID(n5), Learner: true}})
	eventually(t, waitTimeout, func() error {
		if c.KV(n5, 1).Restores() == 0 {
			return errors.New("learner has not received a snapshot")
		}
		return nil
	})
	leader := waitLeader(t, c, 1, 1, 2, 3, 4)
	victim := without([]int{1, 2, 3, 4}, leader)[0]
	changeReplicas(t, c, 1, []int{1, 2, 3, 4},
		consensus.ReplicaChange{Type: consensus.PromoteLearner, Replica: consensus.Replica{ReplicaID: 5}},
		consensus.ReplicaChange{Type: consensus.RemoveReplica, Replica: consensus.Replica{ReplicaID: consensus.ReplicaID(victim)}},
	)
	var want []consensus.Replica
	for _, n := range without([]int{1, 2, 3, 4, n5}, victim) {
		want = append(want, consensus.Replica{ReplicaID: consensus.ReplicaID(n), NodeID: consensus.NodeID(n)})
	}
	remaining := without([]int{1, 2, 3, 4, n5}, victim)
	eventually(t, waitTimeout, func() error {
		for _, n := range remaining {
			if got := c.Group(n, 1).Status().Members; !slices.Equal(got, want) {
				return fmt.Errorf("node %d: members %v, want %v", n, got, want)
			}
		}
		return nil
	})
	c.DestroyGroupOn(victim, 1)

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := c.Group(leader, 1).TransferLeadership(ctx, 5); err != nil {
		t.Fatalf("transfer leadership to r5: %v", err)
	}
	if l := waitLeader(t, c, 1, remaining...); l != n5 {
		t.Fatalf("leader after transfer: node %d, want %d", l, n5)
	}
	mustProposeAmong(t, c, 1, remaining, consensustest.Put("final", "x"))
	close(stop)
	wg.Wait()

	n := 0
	acked.Range(func(k, _ any) bool {
		n++
		for _, node := range remaining {
			if v, ok := readOn(t, c, node, 1, k.(string)); !ok || v != "v" {
				t.Fatalf("node %d: acknowledged write %s missing", node, k)
			}
		}
		return true
	})
	t.Logf("%d writes acknowledged during the move, %d failed or timed out", n, failures.Load())
	if n == 0 {
		t.Fatal("no write acknowledged during the move")
	}
	c.CheckConverged(1)
}

// TestMembershipValidation: invalid or concurrent changes are refused.
func TestMembershipValidation(t *testing.T) {
	c, _ := newTestCluster(t, 4, nil)
	c.StartGroup(1, c.Members())
	leader := c.Leader(1)
	g := c.Group(leader, 1)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for _, tc := range []struct {
		name    string
		changes []consensus.ReplicaChange
	}{
		{"add existing", []consensus.ReplicaChange{{Type: consensus.AddLearner, Replica: consensus.Replica{ReplicaID: 2, NodeID: 2}}}},
		{"promote non-learner", []consensus.ReplicaChange{{Type: consensus.PromoteLearner, Replica: consensus.Replica{ReplicaID: 3}}}},
		{"remove unknown", []consensus.ReplicaChange{{Type: consensus.RemoveReplica, Replica: consensus.Replica{ReplicaID: 9}}}},
		{"learner without node", []consensus.ReplicaChange{{Type: consensus.AddLearner, Replica: consensus.Replica{ReplicaID: 9}}}},
		{"repeated replica", []consensus.ReplicaChange{
			{Type: consensus.AddLearner, Replica: consensus.Replica{ReplicaID: 9, NodeID: 9}},
			{Type: consensus.RemoveReplica, Replica: consensus.Replica{ReplicaID: 9}},
		}},
		{"promote lagging learner", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes := tc.changes
			if changes == nil {
				// r9 on a node that does not exist never catches up.
				if err := g.ChangeReplicas(ctx, []consensus.ReplicaChange{{Type: consensus.AddLearner, Replica: consensus.Replica{ReplicaID: 9, NodeID: 9, Learner: true}}}); err != nil {
					t.Fatal(err)
				}
				changes = []consensus.ReplicaChange{{Type: consensus.PromoteLearner, Replica: consensus.Replica{ReplicaID: 9}}}
			}
			if err := g.ChangeReplicas(ctx, changes); !errors.Is(err, ErrMembershipChangeRejected) {
				t.Fatalf("%v: %v, want ErrMembershipChangeRejected", changes, err)
			}
		})
	}
	follower := c.Group(without([]int{1, 2, 3, 4}, leader)[0], 1)
	var nl *consensus.NotLeaderError
	if err := follower.ChangeReplicas(ctx, []consensus.ReplicaChange{{Type: consensus.RemoveReplica, Replica: consensus.Replica{ReplicaID: 9}}}); !errors.As(err, &nl) {
		t.Fatalf("change on a follower: %v, want NotLeaderError", err)
	}
}

// TestSnapshotInstallCrash: a snapshot installation interrupted after its
// first span (as by a crash) is finished when the node restarts, and the
// replica then agrees with the others.
func TestSnapshotInstallCrash(t *testing.T) {
	var crash atomic.Bool
	crash.Store(true)
	c, _ := newTestCluster(t, 4, func(cfg *Config) {
		cfg.LogTruncateEntries, cfg.LogRetainEntries = 20, 5
		cfg.TestingKnobs.AfterSnapshotSpan = func(_ consensus.GroupID, span int) error {
			if span == 0 && crash.Load() {
				return errors.New("injected crash")
			}
			return nil
		}
	})
	c.StartGroup(1, c.Members())
	leader := c.Leader(1)
	follower := without([]int{1, 2, 3, 4}, leader)[0]
	c.StopNode(follower)
	for i := range 60 {
		mustProposeAmong(t, c, 1, without([]int{1, 2, 3, 4}, follower), consensustest.Put(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}
	// Once the leader no longer counts the stopped follower as active, it
	// truncates past it.
	filler := 0
	eventually(t, waitTimeout, func() error {
		if first := firstLogIndex(t, c.Store(leader), 1); first < 10 {
			filler++
			mustProposeAmong(t, c, 1, without([]int{1, 2, 3, 4}, follower), consensustest.Put("filler", fmt.Sprint(filler)))
			return fmt.Errorf("leader log still starts at %d", first)
		}
		return nil
	})
	c.StartNode(follower, 1)
	// The installation fails after the first span and stops the replica.
	eventually(t, waitTimeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := c.Group(follower, 1).Propose(ctx, consensustest.Get("k")); !errors.Is(err, consensus.ErrStopped) {
			return fmt.Errorf("replica still running: %v", err)
		}
		return nil
	})
	if m, err := rawEngine(c, follower).loadInstall(1); err != nil || m == nil {
		t.Fatalf("install record after the interrupted install: %v %v", m, err)
	}
	crash.Store(false)
	c.StopNode(follower)
	c.StartNode(follower, 1)
	if m, err := rawEngine(c, follower).loadInstall(1); err != nil || m != nil {
		t.Fatalf("install record after restart: %v %v", m, err)
	}
	c.CheckConverged(1)
	for i := range 60 {
		if v, ok := readOn(t, c, follower, 1, fmt.Sprintf("k%d", i)); !ok || v != fmt.Sprint(i) {
			t.Fatalf("k%d = %q %v", i, v, ok)
		}
	}
	if err := c.KV(follower, 1).Err(); err != nil {
		t.Fatal(err)
	}
}
