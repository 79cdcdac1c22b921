package raft

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
)

// spyTransport records the types of the raft messages a node sends.
type spyTransport struct {
	Transport
	mu   sync.Mutex
	sent map[pb.MessageType]int
}

func (s *spyTransport) Send(to consensus.NodeID, msgs []*transportpb.RaftMessage) {
	s.mu.Lock()
	for _, rm := range msgs {
		if m, err := decodeMessage(rm); err == nil {
			s.sent[m.GetType()]++
		}
	}
	s.mu.Unlock()
	s.Transport.Send(to, msgs)
}

func (s *spyTransport) count(t pb.MessageType) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent[t]
}

// settle waits until the engine of node has stepped everything queued for
// group 1 before the call: the group is no longer queued (its inbox was
// taken) and no scheduling cycle is in progress.
func settle(t *testing.T, c *consensustest.Cluster, node int) {
	t.Helper()
	e := rawEngine(c, node)
	g := c.Group(node, 1).(*group)
	eventually(t, waitTimeout, func() error {
		g.mu.Lock()
		queued := g.mu.queued
		g.mu.Unlock()
		if queued || e.sched.cycleStart.Load() != 0 {
			return errors.New("cycle pending")
		}
		return nil
	})
}

// TestVoteRefusalCountsTicksInFiringOrder: a follower refuses votes for an
// election timeout after its leader's last heartbeat, counted in ticks, and
// leader leases rely on that time. Ticks that queued up while the
// follower's scheduler was busy, before the heartbeat arrived, must not
// count against it: here a follower stuck in an apply collects
// ElectionTicks-1 ticks and then a heartbeat; after ElectionTicks-1 more
// ticks it must still follow (an election timeout has not passed since the
// heartbeat), and only after more ticks does it campaign. Stepping the
// queued ticks after the heartbeat made it campaign early, which under load
// let a second leader be elected while the first still served lease reads.
func TestVoteRefusalCountsTicksInFiringOrder(t *testing.T) {
	// Queued: the ticks reach the follower's inbox before the heartbeat
	// (its cycle is late). Late: they fired before the heartbeat arrived
	// but reach the inbox after it (the ticker goroutine was late).
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "queued", true: "late"}[late], func(t *testing.T) { testVoteRefusal(t, late) })
	}
}

func testVoteRefusal(t *testing.T, late bool) {
	const electionTicks = 10
	var (
		blockNode atomic.Int64
		blocked   = make(chan struct{}, 1)
		release   = make(chan struct{})
		spies     sync.Map // node -> *spyTransport
	)
	c, _ := newTestCluster(t, 4, func(cfg *Config) {
		node := cfg.NodeID
		cfg.ElectionTicks = electionTicks
		cfg.LeaseReads = true
		cfg.TestingKnobs.ManualTicks = true
		inner := cfg.TestingKnobs.Transport
		cfg.TestingKnobs.Transport = func(h Handler) Transport {
			s := &spyTransport{Transport: inner(h), sent: map[pb.MessageType]int{}}
			spies.Store(int(node), s)
			return s
		}
		cfg.TestingKnobs.ApplyFilter = func(consensus.GroupID, uint64) error {
			if blockNode.CompareAndSwap(int64(node), 0) {
				blocked <- struct{}{}
				<-release
			}
			return nil
		}
	})
	c.StartGroup(1, c.Members())
	leader := tickUntilLeader(t, c)
	f := leader%4 + 1
	spyAny, _ := spies.Load(f)
	spy := spyAny.(*spyTransport)

	// Stop f in the apply of a write.
	blockNode.Store(int64(f))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := c.Group(leader, 1).Propose(ctx, consensustest.Put("k", "v")); err != nil {
		t.Fatalf("propose: %v", err)
	}
	select {
	case <-blocked:
	case <-time.After(waitTimeout):
		t.Fatal("the follower never applied the write")
	}
	// ElectionTicks-1 ticks queue up on f, then the leader's heartbeat.
	fg := c.Group(f, 1).(*group)
	fired := rawEngine(c, f).monoNow()
	if !late {
		for range electionTicks - 1 {
			rawEngine(c, f).Tick()
		}
	}
	rawEngine(c, leader).Tick()
	eventually(t, waitTimeout, func() error {
		fg.mu.Lock()
		defer fg.mu.Unlock()
		for _, im := range fg.mu.inbox.msgs {
			if im.m.GetType() == pb.MsgHeartbeat && im.m.GetFrom() == uint64(leader) {
				return nil
			}
		}
		return errors.New("the heartbeat has not arrived")
	})
	if late {
		for range electionTicks - 1 {
			rawEngine(c, f).tick(fired)
		}
	}
	close(release)
	settle(t, c, f)

	preVotes := spy.count(pb.MsgPreVote)
	for range electionTicks - 1 {
		rawEngine(c, f).Tick()
		settle(t, c, f)
	}
	if n := spy.count(pb.MsgPreVote) - preVotes; n != 0 {
		t.Fatalf("the follower campaigned (%d pre-votes) %d ticks after its leader's heartbeat, within an election timeout", n, electionTicks-1)
	}
	// The control: with no heartbeat for longer than any randomized
	// election timeout (< 2*ElectionTicks), it does campaign.
	for range electionTicks {
		rawEngine(c, f).Tick()
		settle(t, c, f)
	}
	if spy.count(pb.MsgPreVote) == preVotes {
		t.Fatalf("the follower did not campaign %d ticks after its leader's heartbeat", 2*electionTicks-1)
	}
}
