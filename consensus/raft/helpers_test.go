package raft

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
)

const waitTimeout = 20 * time.Second

// newTestCluster starts a cluster of n nodes on an in-memory network.
func newTestCluster(t *testing.T, n int, tweak func(*Config)) (*consensustest.Cluster, *MemNetwork) {
	t.Helper()
	h, netOf := memHarness(n, tweak)
	h.Timeout = waitTimeout
	c := consensustest.NewCluster(t, h)
	t.Cleanup(c.Close)
	return c, netOf(t)
}

// eventually polls f until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("condition not met within %v: %v", timeout, err)
}

// waitLeader waits until one of nodes leads group id and all of nodes
// agree, and returns it.
func waitLeader(t *testing.T, c *consensustest.Cluster, id consensus.GroupID, nodes ...int) int {
	t.Helper()
	var leader int
	eventually(t, waitTimeout, func() error {
		leader = 0
		var lead consensus.ReplicaID
		for _, n := range nodes {
			g := c.Group(n, id)
			if g == nil {
				return fmt.Errorf("node %d has no group %d", n, id)
			}
			st := g.Status()
			if st.Leader == 0 || (lead != 0 && st.Leader != lead) {
				return fmt.Errorf("node %d sees leader %d, others %d", n, st.Leader, lead)
			}
			lead = st.Leader
			if st.IsLeader() {
				leader = n
			}
		}
		if leader == 0 {
			return fmt.Errorf("leader r%d is not among nodes %v", lead, nodes)
		}
		return nil
	})
	return leader
}

// proposeAmong proposes cmd through whichever of nodes leads, retrying on
// NotLeaderError until ctx ends.
func proposeAmong(ctx context.Context, c *consensustest.Cluster, id consensus.GroupID, nodes []int, cmd []byte) (any, error) {
	for {
		var g consensus.Group
		for _, n := range nodes {
			if gg := c.Group(n, id); gg != nil && gg.Status().IsLeader() {
				g = gg
				break
			}
		}
		if g == nil {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(5 * time.Millisecond):
				continue
			}
		}
		v, err := g.Propose(ctx, cmd)
		var nl *consensus.NotLeaderError
		if errors.As(err, &nl) && ctx.Err() == nil {
			continue
		}
		if errors.Is(err, consensus.ErrNoQuorum) && ctx.Err() == nil {
			// Not attempted: a replica that lost touch with a quorum for
			// a moment (peers reconnecting). Ask again.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		return v, err
	}
}

func mustProposeAmong(t *testing.T, c *consensustest.Cluster, id consensus.GroupID, nodes []int, cmd []byte) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	v, err := proposeAmong(ctx, c, id, nodes, cmd)
	if err != nil {
		t.Fatalf("propose %q among %v: %v", cmd, nodes, err)
	}
	return v
}

// readOn reads key on node after a ReadIndex there.
func readOn(t *testing.T, c *consensustest.Cluster, node int, id consensus.GroupID, key string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := consensustest.ReadIndex(ctx, c.Group(node, id)); err != nil {
		t.Fatalf("node %d: read index: %v", node, err)
	}
	v, ok, err := c.KV(node, id).Read(key)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

func without(nodes []int, drop ...int) []int {
	return slices.DeleteFunc(slices.Clone(nodes), func(n int) bool { return slices.Contains(drop, n) })
}

func ids(nodes ...int) []consensus.NodeID {
	out := make([]consensus.NodeID, len(nodes))
	for i, n := range nodes {
		out[i] = consensus.NodeID(n)
	}
	return out
}

// rawEngine returns node's engine as *Engine.
func rawEngine(c *consensustest.Cluster, node int) *Engine { return c.Engine(node).(*Engine) }

// tickUntilLeader ticks every node of a cluster with manual ticks until
// group 1 has a leader, and returns the leader's node.
func tickUntilLeader(t *testing.T, c *consensustest.Cluster) int {
	t.Helper()
	leader := 0
	eventually(t, waitTimeout, func() error {
		for n := 1; n <= c.Nodes(); n++ {
			rawEngine(c, n).Tick()
		}
		for n := 1; n <= c.Nodes(); n++ {
			if c.Group(n, 1).Status().IsLeader() {
				leader = n
				return nil
			}
		}
		return errors.New("no leader yet")
	})
	return leader
}
