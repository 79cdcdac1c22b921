package raft

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
)

// Inbound raft messages are untrusted: they come from whatever process
// reached the peer port. Decoding (codec.go) rejects what no peer ever
// sends; admit then checks each message against the group's state, and
// stepRemote keeps one message from ever stopping the group.
//
// What admission can and cannot do: without authenticated transport (mutual
// TLS binds a connection to a node) a process that knows a member's replica
// and node ids can still impersonate it, and raft has no defence against a
// member that lies about its log. Admission removes the cheap attacks and
// every crash: messages from replicas outside the configuration, from the
// wrong node, or with indexes the sender cannot have; and it turns the
// panics etcd raft keeps for "impossible" input (a heartbeat committing
// past the log, an append conflicting with committed entries) into a
// restart of the replica from its durable state.

// admit reports whether the scheduler should step im into raft. It may
// clamp fields that raft would otherwise trust (a heartbeat's commit).
func (g *group) admit(im inMsg) bool {
	if k := g.e.cfg.TestingKnobs; k != nil && k.DisableAdmission {
		return true
	}
	m := im.m
	from := consensus.ReplicaID(m.GetFrom())
	drop := func(why string) bool {
		g.log.Debug("dropped raft message", "type", m.GetType().String(), "from", uint64(from), "node", uint64(im.from), "reason", why)
		return false
	}
	cs := g.store.state.confState
	if configured(cs) {
		if !inConfig(cs, uint64(from)) {
			// Not a member (removed, never added, or forged). A replica
			// being added is in the configuration before it is sent
			// anything, so members never need to hear from strangers.
			return drop("sender is not a member")
		}
		if node, ok := g.nodes[from]; ok && node != im.from {
			return drop(fmt.Sprintf("member r%d lives on node %d", from, node))
		}
	} else if _, ok := g.nodes[from]; !ok {
		// A replica that joins and has not received its snapshot knows no
		// configuration: it answers the leader by the node that sent.
		g.nodes[from] = im.from
	} else if g.nodes[from] != im.from {
		return drop(fmt.Sprintf("r%d was heard from node %d", from, g.nodes[from]))
	}
	switch m.GetType() {
	case pb.MsgHeartbeat:
		// A leader never sends a commit index past what the follower
		// acknowledged (raft sends min(match, committed)), and raft panics
		// on one beyond its log. Clamping is safe: the commit index only
		// has to stay at or below the leader's.
		if m.GetCommit() > g.store.lastIndex {
			g.log.Debug("clamped heartbeat commit", "from", uint64(from), "commit", m.GetCommit(), "last_index", g.store.lastIndex)
			c := g.store.lastIndex
			m.Commit = &c
		}
	case pb.MsgAppResp:
		// A follower acknowledges at most what the leader sent it. Early
		// in a pass a leader's log is exactly its durable log: entries it
		// appends this pass are stepped after the messages.
		if g.raftState == etcdraft.StateLeader && !m.GetReject() && m.GetIndex() > g.store.lastIndex {
			return drop(fmt.Sprintf("acknowledges index %d beyond the last index %d", m.GetIndex(), g.store.lastIndex))
		}
	case pb.MsgTimeoutNow, pb.MsgReadIndexResp:
		// Only the leader a replica follows tells it to campaign at once
		// (leadership transfer) or answers its read index; raft does not
		// check the sender of either.
		if g.lead == etcdraft.None || uint64(from) != g.lead || m.GetTerm() != g.term {
			return drop("not from the current leader")
		}
	}
	return true
}

// stepRemote steps one admitted message. A panic inside raft on a message
// means input raft considers impossible reached it; the RawNode may be half
// updated, so it is rebuilt from the durable state, as after a restart of
// the replica (raft tolerates that by design). Only the effects of the
// messages stepped in this pass are lost, and raft retransmits.
func (g *group) stepRemote(im inMsg) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		g.log.Error("raft rejected a message by panicking; restarting the replica from its durable state",
			"type", im.m.GetType().String(), "from", im.m.GetFrom(), "node", uint64(im.from), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		if err := g.resetRaft(); err != nil {
			panic(fmt.Sprintf("restart raft after a panic on a message (%v): %v", p, err))
		}
	}()
	if err := g.rn.Step(im.m); err != nil {
		g.log.Debug("step failed", "type", im.m.GetType().String(), "from", im.m.GetFrom(), "err", err)
	}
}

// resetRaft replaces the RawNode with one recovered from the log store,
// which always mirrors the durable state between passes. Requests keep
// their places: proposals already in the log resolve when their index is
// applied, reads are asked again.
func (g *group) resetRaft() error {
	rn, err := etcdraft.NewRawNode(g.raftConfig(g.store.state.appliedIndex))
	if err != nil {
		return err
	}
	g.rn = rn
	// The new RawNode forgot the leader it promised not to vote against.
	g.abstainUntil = g.ticks + uint64(g.e.cfg.ElectionTicks)
	bs := rn.BasicStatus()
	g.term, g.commit, g.lead, g.raftState = bs.GetTerm(), bs.GetCommit(), bs.Lead, bs.RaftState
	g.pendingRetry = true
	g.resets++
	g.mu.Lock()
	g.mu.resets = g.resets
	g.mu.Unlock()
	return nil
}

// configured reports whether cs names any replica.
func configured(cs *pb.ConfState) bool {
	return len(cs.GetVoters())+len(cs.GetLearners())+len(cs.GetVotersOutgoing())+len(cs.GetLearnersNext()) > 0
}

func inConfig(cs *pb.ConfState, id uint64) bool {
	for _, set := range [][]uint64{cs.GetVoters(), cs.GetLearners(), cs.GetVotersOutgoing(), cs.GetLearnersNext()} {
		for _, v := range set {
			if v == id {
				return true
			}
		}
	}
	return false
}

// HandleMessages implements Handler.
func (e *Engine) HandleMessages(from consensus.NodeID, msgs []*transportpb.RaftMessage) {
	var g *group
	for _, rm := range msgs {
		if g == nil || g.id != consensus.GroupID(rm.GetGroup()) {
			if g = e.lookup(consensus.GroupID(rm.GetGroup())); g == nil {
				continue
			}
		}
		if uint64(g.replicaID) != rm.GetToReplica() {
			continue // a message for a replica this node no longer hosts
		}
		m, err := decodeMessage(rm)
		if err != nil || m.GetType() == pb.MsgSnap {
			e.cfg.Logger.Debug("dropped malformed message", "node", uint64(from), "group", rm.GetGroup(), "err", err)
			continue
		}
		if t := m.GetType(); t == pb.MsgHeartbeat || t == pb.MsgApp {
			e.noteLeaderBeat(from)
		}
		g.deliver(inMsg{m: m, from: from, size: len(rm.GetMessage()), stamp: rm.GetLeaseStamp(), echo: rm.GetLeaseEcho()})
	}
}

func (g *group) deliver(m inMsg) {
	g.mu.Lock()
	if g.mu.stopped || len(g.mu.inbox.msgs) >= g.e.cfg.MaxInboxMessages ||
		(len(g.mu.inbox.msgs) > 0 && g.mu.inbox.bytes+m.size > g.e.cfg.MaxInboxBytes) {
		// Dropped: raft retransmits what matters. One message is always
		// taken, however large, so an append bigger than the bound still
		// gets through.
		g.mu.Unlock()
		return
	}
	g.mu.inbox.bytes += m.size
	m.at = g.e.monoNow()
	g.mu.inbox.msgs = append(g.mu.inbox.msgs, m)
	wake := !g.mu.queued
	g.mu.queued = true
	g.mu.Unlock()
	if wake {
		g.e.sched.enqueue(g)
	}
}

// follow moves one local replica's leader from node from to node to (0:
// none).
func (e *Engine) follow(from, to consensus.NodeID) {
	e.followedMu.Lock()
	defer e.followedMu.Unlock()
	if e.followed == nil {
		e.followed = map[consensus.NodeID]int{}
	}
	if from != 0 {
		if e.followed[from]--; e.followed[from] <= 0 {
			delete(e.followed, from)
		}
	}
	if to != 0 {
		if e.followed[to] == 0 {
			// Start the silence clock now: a node that just became a
			// leader here has not sent anything yet.
			e.noteLeaderBeat(to)
		}
		e.followed[to]++
	}
}

func (e *Engine) noteLeaderBeat(node consensus.NodeID) {
	now := time.Now().UnixNano()
	if v, ok := e.leaderBeat.Load(node); ok {
		v.(*atomic.Int64).Store(now)
		return
	}
	v := &atomic.Int64{}
	v.Store(now)
	e.leaderBeat.Store(node, v)
}

// LeaderSilence reports for how long node, which leads groups this node
// follows, has sent no leader traffic. A leader sends heartbeats every
// tick, so silence of a few ticks means the node is paused, cut off or
// wedged, long before an election timeout deposes it. ok is false when no
// local replica follows a leader on node: it owes this node nothing, so
// its silence says nothing.
func (e *Engine) LeaderSilence(node consensus.NodeID) (silence time.Duration, ok bool) {
	e.followedMu.Lock()
	following := e.followed[node] > 0
	e.followedMu.Unlock()
	v, found := e.leaderBeat.Load(node)
	if !following || !found {
		return 0, false
	}
	return time.Since(time.Unix(0, v.(*atomic.Int64).Load())), true
}

// ReportUnreachable implements Handler.
func (e *Engine) ReportUnreachable(to consensus.NodeID, msgs []*transportpb.RaftMessage) {
	seen := map[[2]uint64]bool{}
	for _, rm := range msgs {
		k := [2]uint64{rm.GetGroup(), rm.GetToReplica()}
		if seen[k] {
			continue
		}
		seen[k] = true
		g := e.lookup(consensus.GroupID(rm.GetGroup()))
		if g == nil || uint64(g.replicaID) != rm.GetFromReplica() {
			continue
		}
		g.mu.Lock()
		if !g.mu.stopped {
			g.mu.inbox.unreachable = append(g.mu.inbox.unreachable, rm.GetToReplica())
			wake := !g.mu.queued
			g.mu.queued = true
			g.mu.Unlock()
			if wake {
				e.sched.enqueue(g)
			}
			continue
		}
		g.mu.Unlock()
	}
}
