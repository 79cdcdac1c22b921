package raft

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	"github.com/cosmosd/cosmosd/storage"
)

// TestPersistedGroups: the engine lists every group with raft state on the
// node (bootstrapped or joining), not destroyed ones, with its replica id,
// so the daemon can restart them; a restarted group may omit its replica
// id but not contradict it.
func TestPersistedGroups(t *testing.T) {
	dir := t.TempDir()
	st, err := storage.Open(storage.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	net := NewMemNetwork(1)
	defer net.Close()
	e, err := New(testConfig(1, st, net))
	if err != nil {
		t.Fatal(err)
	}
	start := func(e *Engine, id consensus.GroupID, replica consensus.ReplicaID, members []consensus.Replica) error {
		kv, err := consensustest.NewKV(st, id)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.StartGroup(context.Background(), consensus.GroupConfig{ID: id, ReplicaID: replica, Members: members, StateMachine: kv})
		return err
	}
	self := []consensus.Replica{{ReplicaID: 1, NodeID: 1}}
	for _, id := range []consensus.GroupID{1, 2, 1 << 40} {
		if err := start(e, id, 1, self); err != nil {
			t.Fatal(err)
		}
	}
	if err := start(e, 7, 4, nil); err != nil { // joining, waits for a snapshot
		t.Fatal(err)
	}
	if err := e.DestroyGroup(2); err != nil {
		t.Fatal(err)
	}
	// The engine's keys are gone, the state machine's replica state stays
	// (the caller clears it, or keeps it for a replica that comes back).
	for _, k := range [][]byte{storage.RaftLogKey(2, 1), storage.RaftHardStateKey(2), storage.RaftApplyStateKey(2)} {
		if _, ok, err := st.Get(k); err != nil || ok {
			t.Fatalf("key %x of a destroyed group: found=%v err=%v", k, ok, err)
		}
	}
	if _, ok, err := st.Get(storage.ReplicaStateKey(2)); err != nil || !ok {
		t.Fatalf("replica state of a destroyed group: found=%v err=%v, want it kept", ok, err)
	}
	if _, ok, err := st.Get(storage.RaftApplyStateKey(1)); err != nil || !ok {
		t.Fatalf("apply state of group 1 after destroying group 2: found=%v err=%v", ok, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	e, err = New(testConfig(1, st, net))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, err := e.PersistedGroups()
	if err != nil {
		t.Fatal(err)
	}
	want := []PersistedGroup{{1, 1}, {7, 4}, {1 << 40, 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("PersistedGroups() = %v, want %v", got, want)
	}
	if err := start(e, 7, 5, nil); err == nil {
		t.Fatal("restarting a group under another replica id succeeded")
	}
	if err := start(e, 7, 0, nil); err != nil {
		t.Fatalf("restart without replica id: %v", err)
	}
	if err := start(e, 1, 0, nil); err != nil {
		t.Fatal(err)
	}
	g, _ := e.Group(1)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := g.Propose(ctx, consensustest.Put("k", "v")); err != nil {
		t.Fatal(err)
	}
	if err := start(e, 9, 0, nil); err == nil {
		t.Fatal("starting a new group without replica id succeeded")
	}
	if _, err := e.StartGroup(context.Background(), consensus.GroupConfig{ID: 10, ReplicaID: 1}); err == nil {
		t.Fatal("StartGroup without a state machine succeeded")
	}
	if err := start(e, 11, 1, []consensus.Replica{{ReplicaID: 2, NodeID: 2}}); err == nil {
		t.Fatal("bootstrap without the local replica succeeded")
	}
}

// TestPersistedGroupsCorruptKey: a key in the group-local range too short
// to be a group's key (prefix and group id, no kind) is reported as
// corruption, not skipped or misread.
func TestPersistedGroupsCorruptKey(t *testing.T) {
	st, err := storage.Open(storage.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	b := st.NewWriteBatch()
	short := storage.GroupLocalSpan(1).Start
	if err := b.Set(short, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	net := NewMemNetwork(1)
	defer net.Close()
	e, err := New(testConfig(1, st, net))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, err := e.PersistedGroups(); !errors.Is(err, ErrCorrupt) || !errors.Is(err, storage.ErrBadKey) {
		t.Fatalf("PersistedGroups() = %v, %v; want ErrCorrupt wrapping storage.ErrBadKey", got, err)
	}
}

// TestUnknownGroupDropped: messages for a group the node does not run are
// dropped, and a joining replica started with empty members catches up
// once it is added.
func TestUnknownGroupDropped(t *testing.T) {
	c, _ := newTestCluster(t, 4, nil)
	members := c.Members()[:3]
	for n := 1; n <= 3; n++ {
		c.StartGroupOn(n, 1, members)
	}
	c.MustPropose(1, consensustest.Put("k", "v"))
	// Node 4 runs no replica of group 1: adding it as a learner makes the
	// leader send it messages, which it drops, so it stays empty.
	changeReplicas(t, c, 1, []int{1, 2, 3}, consensus.ReplicaChange{Type: consensus.AddLearner, Replica: consensus.Replica{ReplicaID: 4, NodeID: 4, Learner: true}})
	if g := c.Group(4, 1); g != nil {
		t.Fatal("node 4 runs group 1")
	}
	c.StartGroupOn(4, 1, nil)
	eventually(t, waitTimeout, func() error {
		if v, ok, _ := c.KV(4, 1).Read("k"); !ok || v != "v" {
			return errors.New("learner has not caught up")
		}
		if st := c.Group(4, 1).Status(); len(st.Members) != 4 || !st.Members[3].Learner {
			return fmt.Errorf("learner sees members %v", st.Members)
		}
		return nil
	})
}

// TestStartGroupStaleReplica: starting a group under another replica id
// than the one this node persisted fails with a *consensus.StaleReplicaError
// naming both, which lets the caller destroy the earlier incarnation; after
// DestroyGroup the new replica starts.
func TestStartGroupStaleReplica(t *testing.T) {
	c, _ := newTestCluster(t, 1, nil)
	c.StartGroupOn(1, 7, []consensus.Replica{{ReplicaID: 1, NodeID: 1}})
	e := c.Engine(1)
	if err := e.StopGroup(7); err != nil {
		t.Fatal(err)
	}
	kv, err := consensustest.NewKV(c.Store(1), 7)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err = e.StartGroup(ctx, consensus.GroupConfig{ID: 7, ReplicaID: 2, StateMachine: kv})
	var stale *consensus.StaleReplicaError
	if !errors.As(err, &stale) || stale.Group != 7 || stale.Persisted != 1 || stale.Asked != 2 {
		t.Fatalf("start r2 over a persisted r1: %v, want a StaleReplicaError", err)
	}
	if err := e.DestroyGroup(7); err != nil {
		t.Fatal(err)
	}
	g, err := e.StartGroup(ctx, consensus.GroupConfig{ID: 7, ReplicaID: 2, StateMachine: kv})
	if err != nil {
		t.Fatalf("start r2 after destroying r1: %v", err)
	}
	if id := g.Status().ReplicaID; id != 2 {
		t.Fatalf("started replica r%d, want r2", id)
	}
	if err := e.StopGroup(7); err != nil {
		t.Fatal(err)
	}
}
