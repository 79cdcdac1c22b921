package raft

import (
	"math"
	"slices"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	transportpb "github.com/cosmosd/cosmosd/proto/transport"
)

// Leader leases (Config.LeaseReads).
//
// A linearizable read must see every write acknowledged before it began.
// ReadIndex guarantees it with a heartbeat round per batch of reads: the
// leader confirms that no other leader exists. A lease lets the leader skip
// that round while it can prove no other leader can exist yet. Raft's own
// ReadOnlyLeaseBased is not used: it trusts the leader's CheckQuorum, which
// runs once per election timeout, so a deposed leader may serve for up to
// two timeouts while a new one can be elected after one, and it ignores
// leadership transfers, whose forced elections bypass every lease.
//
// The argument. With CheckQuorum, a follower that stepped an append or
// heartbeat from its leader refuses to vote (or pre-vote) for anyone else
// until ElectionTicks of its ticks have passed (raft's inLease), unless the
// vote is a forced leadership transfer. A leader stamps its appends and
// heartbeats with its monotonic clock when they leave (lease_stamp);
// followers echo the highest stamp they have stepped from their current
// leader in the current term on their answers (lease_echo). If a quorum of
// voters (the leader counting as now; both halves of a joint
// configuration) has echoed a stamp of at least s, every election quorum
// contains a follower that will refuse votes until at least
// s + (ElectionTicks-1) ticks of its own clock (a tick may come just after
// the step), so no other leader can exist before then. The leader serves
// reads from its state machine until s + (ElectionTicks-2) ticks of its
// clock: one tick of margin allows the clocks' rates to differ by 10% with
// the default ElectionTicks. Paused leaders are safe (the monotonic clock
// runs on); paused or slow followers only refuse votes for longer. The
// refusal is counted in ticks that fired after the message arrived: a
// cycle steps its queued ticks and messages in the order of the ticks'
// firing times and the messages' arrival (prepare), so ticks that fired
// before a heartbeat arrived do not count against it, however late a busy
// machine delivered them to the group (the ticker goroutine preempted, the
// cycle delayed). The ticker fires at most once per TickInterval, so the
// ElectionTicks-th tick after an arrival fires at least
// (ElectionTicks-1) ticks of time later.
//
// Exceptions, where the lease is void and reads use ReadIndex:
//   - the leader has sent a MsgTimeoutNow in its term (a transfer forces an
//     election that ignores leases): void for the rest of the term;
//   - the leader has not yet committed an entry of its term (its commit
//     index may be behind its predecessor's);
//   - the configuration is joint (in transition).
//
// A follower that restarted has lost its refusal (it forgets its leader),
// so a replica that starts from existing state refuses every vote that is
// not a forced transfer for ElectionTicks ticks after it starts (see
// admitVote), which delays elections after a restart by no more than the
// election timeout raft waits anyway.
//
// The read index of a lease read is the leader's commit index: it covers
// every write this leader acknowledged (it answers only what it applied)
// and, once the leader committed an entry of its term, every write of
// earlier terms.
//
// The fast path. A read on the leader would otherwise wait for a
// scheduling cycle to check the lease (two goroutine hand-offs per read,
// a large share of a read's cost). Each cycle instead publishes the lease
// as a view, {commit, until}: the leader's commit index and the monotonic
// time at which the quorum's echoes stop proving the lease, computed from
// the same acks as the in-cycle check (leaseView); and, after the cycle's
// batch is committed to storage, the applied index. ReadIndex returns at
// once when now < until and applied >= commit. That read is linearizable
// for the same reasons as the in-cycle one: until is when the in-cycle
// check would start failing; commit covers every write acknowledged before
// the read began (this leader publishes a cycle's commit index before it
// answers the writes that cycle applied; writes of earlier terms are at or
// below the index of the leader's first entry in its term, which is
// committed before any view is published); and applied >= commit means
// every such write is visible to the read. The view is withdrawn before a
// MsgTimeoutNow is handed to the transport (stampOutbound), when the group
// stops, and by the next cycle when any exception above begins; a view
// that outlives a step-down for another reason is still bounded by until,
// the same bound the in-cycle check relies on.

// leaseView is a published lease (see "The fast path").
type leaseView struct {
	commit uint64
	until  int64 // the engine's monotonic clock (monoNow)
}

// leaseState is a group's lease bookkeeping (scheduler-owned).
type leaseState struct {
	// Leader side, for term: the highest stamp sent, and the highest
	// echo per voter.
	term      uint64
	lastStamp int64
	acks      map[uint64]int64
	// transferTerm is a term in which this replica sent MsgTimeoutNow.
	transferTerm uint64
	// committedTerm is a term in which the leader's commit index is known
	// to hold an entry of the term (committedInTerm; read index requests
	// wait for it too, see readHold).
	committedTerm uint64
	// Follower side: the highest stamp stepped from lead in echoTerm.
	echo     int64
	echoLead uint64
	echoTerm uint64
}

// noteLease records the lease fields of an inbound message after it was
// stepped.
func (g *group) noteLease(im inMsg) {
	if im.stamp <= 0 && im.echo <= 0 {
		return
	}
	bs := g.rn.BasicStatus()
	term := bs.GetTerm()
	m := im.m
	if m.GetTerm() != term {
		return
	}
	ls := &g.lease
	switch {
	case bs.RaftState == etcdraft.StateLeader && im.echo > 0:
		if ls.term != term || im.echo > ls.lastStamp {
			return // not an echo of a stamp this leader sent in its term
		}
		if im.echo > ls.acks[m.GetFrom()] {
			ls.acks[m.GetFrom()] = im.echo
		}
	case bs.RaftState == etcdraft.StateFollower && im.stamp > 0 && m.GetFrom() == bs.Lead &&
		(m.GetType() == pb.MsgApp || m.GetType() == pb.MsgHeartbeat):
		if ls.echoTerm != term || ls.echoLead != bs.Lead {
			ls.echo, ls.echoTerm, ls.echoLead = 0, term, bs.Lead
		}
		ls.echo = max(ls.echo, im.stamp)
	}
}

// stampOutbound sets the lease fields of an outbound message.
func (g *group) stampOutbound(m *pb.Message, rm *transportpb.RaftMessage) {
	ls := &g.lease
	switch m.GetType() {
	case pb.MsgApp, pb.MsgHeartbeat:
		if g.raftState != etcdraft.StateLeader || !g.e.cfg.LeaseReads {
			return
		}
		if ls.term != m.GetTerm() {
			ls.term, ls.lastStamp = m.GetTerm(), 0
			clear(ls.acks)
		}
		s := g.e.monoNow()
		ls.lastStamp = max(ls.lastStamp, s)
		rm.LeaseStamp = s
	case pb.MsgAppResp, pb.MsgHeartbeatResp:
		if ls.echo > 0 && ls.echoTerm == m.GetTerm() && ls.echoLead == m.GetTo() {
			rm.LeaseEcho = ls.echo
		}
	case pb.MsgTimeoutNow:
		// The transfer's election ignores leases: withdraw the fast
		// path's view before the message can leave.
		ls.transferTerm = m.GetTerm()
		g.fastLease.Store(nil)
	}
}

// leaseReadIndex returns the index a linearizable read may be served at
// without a ReadIndex round, or false when the lease is void.
func (g *group) leaseReadIndex() (uint64, bool) {
	v, ok := g.leaseView()
	if !ok || g.e.monoNow() >= v.until {
		return 0, false
	}
	return v.commit, true
}

// leaseView returns the lease as of now: the read index and the time until
// which the quorum's echoes prove it, or false when it is void.
func (g *group) leaseView() (leaseView, bool) {
	if !g.e.cfg.LeaseReads || g.raftState != etcdraft.StateLeader {
		return leaseView{}, false
	}
	ls := &g.lease
	if ls.term != g.term || ls.transferTerm == g.term {
		return leaseView{}, false
	}
	cs := g.store.state.confState
	if isJoint(cs) {
		return leaseView{}, false
	}
	if !g.committedInTerm(g.term, g.commit) {
		return leaseView{}, false
	}
	// A voter's echo proves the lease until echo + valid; the leader
	// counts as forever. The lease lasts as long as a quorum's proofs.
	valid := int64(g.e.cfg.ElectionTicks-2) * int64(g.e.cfg.TickInterval)
	voters := cs.GetVoters()
	need := len(voters)/2 + 1
	// Every cycle of a leader computes this: no allocation for the usual
	// handful of voters.
	var buf [8]int64
	ends := buf[:0]
	for _, v := range voters {
		if v == uint64(g.replicaID) {
			need--
			continue
		}
		if a := ls.acks[v]; a > 0 {
			ends = append(ends, a+valid)
		}
	}
	if need <= 0 {
		return leaseView{commit: g.commit, until: math.MaxInt64}, true
	}
	if len(ends) < need {
		return leaseView{}, false
	}
	slices.Sort(ends)
	until := ends[len(ends)-need] // the need-th latest
	if until <= g.e.monoNow() {
		return leaseView{}, false
	}
	return leaseView{commit: g.commit, until: until}, true
}

// publishLease publishes the lease for ReadIndex's fast path; run by the
// cycle, after the cycle's batch is committed when it applied entries.
func (g *group) publishLease() {
	g.appliedPub.Store(g.store.state.appliedIndex)
	if v, ok := g.leaseView(); ok {
		if cur := g.fastLease.Load(); cur == nil || *cur != v {
			g.fastLease.Store(&v)
		}
	} else if g.fastLease.Load() != nil {
		g.fastLease.Store(nil)
	}
}

// leaseRead is ReadIndex's fast path: true when a read may be served now,
// without the scheduler.
func (g *group) leaseRead() bool {
	v := g.fastLease.Load()
	return v != nil && g.e.monoNow() < v.until && g.appliedPub.Load() >= v.commit
}

// admitVote reports whether a vote request may be stepped: a replica that
// started from existing state, or whose RawNode was rebuilt, abstains (but
// for forced transfers) until tick abstainUntil, an election timeout, since
// it may have promised a leader its refusal before (see "Leader leases").
func (g *group) admitVote(m *pb.Message) bool {
	t := m.GetType()
	if t != pb.MsgVote && t != pb.MsgPreVote {
		return true
	}
	if g.ticks >= g.abstainUntil {
		return true
	}
	return string(m.GetContext()) == campaignTransfer
}

// campaignTransfer is the context raft puts on the votes of a forced
// election (etcdraft's campaignTransfer, which it does not export).
const campaignTransfer = "CampaignTransfer"
