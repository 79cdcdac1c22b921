package raft

import (
	"encoding/binary"
	"fmt"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
)

// Requests of the Group methods, as the scheduler feeds them to raft and
// matches raft's answers back to them.

// handleRequests feeds new requests (and, after a leadership change or on
// a tick, those waiting for a leader) to raft.
func (g *group) handleRequests(reqs []*request, ticked bool) {
	g.proposedThisPass = false
	if len(g.waiting) > 0 && (g.pendingRetry || ticked) {
		reqs = append(g.waiting, reqs...)
		g.waiting = nil
	}
	if len(g.heldReads) > 0 {
		// Asked again every pass: issueReads holds them for as long as
		// it must (readHold).
		reqs = append(g.heldReads, reqs...)
		g.heldReads = nil
	}
	g.releaseReadMsgs()
	if g.pendingRetry {
		g.pendingRetry = false
		g.reissueReads(false)
	}
	var props, reads []*request
	lost, checked := false, false
	for _, r := range reqs {
		if r.ctx.Err() != nil {
			continue // the caller has given up
		}
		if r.kind != reqTransfer {
			if !checked {
				lost, checked = g.quorumLost(), true
			}
			if lost {
				// Fail at once rather than at the caller's deadline: the
				// request never reached raft, so the caller may report
				// Unavailable (nothing was attempted) or retry elsewhere.
				r.finish(nil, fmt.Errorf("raft: group %d: fewer than a quorum of replicas answered within an election timeout: %w", g.id, consensus.ErrNoQuorum))
				continue
			}
		}
		switch r.kind {
		case reqPropose:
			props = append(props, r)
		case reqRead:
			reads = append(reads, r)
		case reqChange:
			g.proposeChange(r)
		case reqTransfer:
			if g.lead != 0 {
				g.rn.TransferLeader(uint64(r.target))
			}
		}
	}
	if len(props) > 0 {
		ents := make([]*pb.Entry, len(props))
		for i, r := range props {
			ents[i] = &pb.Entry{Data: r.data}
		}
		// One MsgProp for the batch: raft appends all entries and
		// broadcasts one append per follower.
		err := g.rn.Step(&pb.Message{Type: pb.MsgProp.Enum(), From: proto.Uint64(uint64(g.replicaID)), Entries: ents})
		if err == nil {
			now := g.e.monoNow()
			for _, r := range props {
				r.stepped.Store(true)
				r.steppedAt = now
				g.proposals[r.id] = r
			}
			g.proposedThisPass = true
		} else {
			g.rejectOrWait(props, ErrProposalDropped)
		}
	}
	if len(reads) > 0 {
		if idx, ok := g.leaseReadIndex(); ok {
			applied := g.store.state.appliedIndex
			for _, r := range reads {
				r.readIndex = idx
				if idx <= applied {
					r.finish(nil, nil)
				} else {
					g.readWaiters = append(g.readWaiters, r)
				}
			}
		} else {
			g.issueReads(reads)
		}
	}
}

// rejectOrWait handles requests raft would not take: they wait when no
// leader is known, and fail with the leader's identity otherwise.
func (g *group) rejectOrWait(reqs []*request, dropped error) {
	st := g.rn.BasicStatus()
	var err error
	switch {
	case st.Lead == etcdraft.None || g.leaderSilent(st.Lead):
		// No leader, or one that has gone quiet (paused, cut off): hold
		// the requests until the group knows its leader again rather than
		// send the caller to a node that may never answer.
		g.waiting = append(g.waiting, reqs...)
		return
	case st.Lead != uint64(g.replicaID):
		err = g.notLeader(st.Lead)
	case st.LeadTransferee != etcdraft.None:
		err = g.notLeader(st.LeadTransferee)
	default:
		err = fmt.Errorf("raft: group %d: %w", g.id, dropped)
	}
	for _, r := range reqs {
		r.finish(nil, err)
	}
}

// proposeChange validates a membership change against the applied
// configuration and proposes it as one ConfChangeV2.
func (g *group) proposeChange(r *request) {
	if g.rn.BasicStatus().RaftState != etcdraft.StateLeader {
		g.rejectOrWait([]*request{r}, ErrMembershipChangeRejected)
		return
	}
	reject := func(format string, args ...any) {
		r.finish(nil, fmt.Errorf("raft: group %d: %w: %s", g.id, ErrMembershipChangeRejected, fmt.Sprintf(format, args...)))
	}
	if isJoint(g.store.state.confState) {
		reject("the group is in a joint configuration")
		return
	}
	for _, p := range g.proposals {
		if p.kind == reqChange {
			reject("another membership change is in progress")
			return
		}
	}
	cur := map[consensus.ReplicaID]consensus.Replica{}
	for _, m := range g.members {
		cur[m.ReplicaID] = m
	}
	var progress map[uint64]tracker.Progress
	cc := &pb.ConfChangeV2{}
	cctx := &transportpb.ConfChangeContext{ProposalId: r.id}
	seen := map[consensus.ReplicaID]bool{}
	for _, ch := range r.changes {
		id := ch.Replica.ReplicaID
		if id == 0 || etcdraft.IsLocalMsgTarget(uint64(id)) || seen[id] {
			reject("invalid or repeated replica %d", id)
			return
		}
		seen[id] = true
		m, exists := cur[id]
		node := ch.Replica.NodeID
		if node == 0 {
			node = m.NodeID
		}
		var typ pb.ConfChangeType
		switch ch.Type {
		case consensus.AddLearner:
			if exists {
				reject("%v is already a member", m)
				return
			}
			typ = pb.ConfChangeAddLearnerNode
		case consensus.PromoteLearner:
			if !exists || !m.Learner {
				reject("r%d is not a learner", id)
				return
			}
			if progress == nil {
				progress = map[uint64]tracker.Progress{}
				g.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) { progress[id] = pr })
			}
			if pr := progress[uint64(id)]; pr.State != tracker.StateReplicate || pr.Match == 0 {
				reject("learner r%d has not caught up (state %v, match %d)", id, pr.State, pr.Match)
				return
			}
			typ = pb.ConfChangeAddNode
		case consensus.AddVoter:
			if exists && !m.Learner {
				reject("r%d is already a voter", id)
				return
			}
			typ = pb.ConfChangeAddNode
		case consensus.RemoveReplica:
			if !exists {
				reject("r%d is not a member", id)
				return
			}
			typ = pb.ConfChangeRemoveNode
		default:
			reject("unknown change %v", ch.Type)
			return
		}
		if typ != pb.ConfChangeRemoveNode {
			if node == 0 {
				reject("no node given for r%d", id)
				return
			}
			cctx.Members = append(cctx.Members, &transportpb.Member{ReplicaId: uint64(id), NodeId: uint64(node), Learner: typ == pb.ConfChangeAddLearnerNode})
		}
		cc.Changes = append(cc.Changes, &pb.ConfChangeSingle{Type: typ.Enum(), NodeId: proto.Uint64(uint64(id))})
	}
	b, err := proto.Marshal(cctx)
	if err != nil {
		r.finish(nil, err)
		return
	}
	cc.Context = b
	if err := g.rn.ProposeConfChange(cc); err != nil {
		g.rejectOrWait([]*request{r}, ErrMembershipChangeRejected)
		return
	}
	r.stepped.Store(true)
	g.proposals[r.id] = r
	g.proposedThisPass = true
}

// failForQuorum answers every request waiting on this replica once it
// knows its group cannot reach a quorum, instead of holding them until
// their deadlines: proposals raft took may still commit later (the nodes
// may return), so they fail with ErrAmbiguous; reads and requests waiting
// for a leader were not attempted and fail with ErrNoQuorum.
func (g *group) failForQuorum() {
	for id, r := range g.proposals {
		if r.leaveJoint {
			continue // committed; only leaving the joint state is pending
		}
		delete(g.proposals, id)
		r.finish(nil, fmt.Errorf("raft: group %d: fewer than a quorum of replicas answered within an election timeout, so the command may or may not commit: %w", g.id, consensus.ErrAmbiguous))
	}
	noQuorum := fmt.Errorf("raft: group %d: fewer than a quorum of replicas answered within an election timeout: %w", g.id, consensus.ErrNoQuorum)
	for id, b := range g.readBatches {
		delete(g.readBatches, id)
		for _, r := range b.reqs {
			r.finish(nil, noQuorum)
		}
	}
	for _, r := range g.readWaiters {
		r.finish(nil, noQuorum)
	}
	clear(g.readWaiters)
	g.readWaiters = g.readWaiters[:0]
	for _, r := range g.heldReads {
		r.finish(nil, noQuorum)
	}
	g.heldReads = nil
	g.heldReadMsgs = nil // their senders ask again
	for _, r := range g.waiting {
		r.finish(nil, noQuorum)
	}
	clear(g.waiting)
	g.waiting = g.waiting[:0]
}

// leaderSilent reports whether lead, another replica, has sent this one
// nothing for half an election timeout: a leader heartbeats every tick, so
// it is paused, cut off or deposed, and an election will follow if it
// stays quiet.
func (g *group) leaderSilent(lead uint64) bool {
	if lead == uint64(g.replicaID) {
		return false
	}
	t, ok := g.lastHeard[lead]
	return ok && g.ticks-t > uint64(g.e.cfg.ElectionTicks)/2
}

// quorumLost reports whether this replica has evidence that its group
// cannot commit anything now: as leader, it has not heard from a quorum of
// voters within an election timeout (raft's CheckQuorum will depose it);
// otherwise, it has heard from no leader for two election timeouts and
// from fewer than a quorum of voters (itself included) within the last
// two. By then every live voter has timed out and sent it a pre-vote, and
// a voter still campaigning sends one again within its randomized
// election timeout, which raft draws from [1, 2) election timeouts (a
// window of one timeout failed requests with Unavailable during an
// election that took longer than two timeouts, with three of four voters
// alive). So during an ordinary election after one failure a quorum is
// heard from and requests wait for the new leader, while with two of four
// replicas gone they fail fast.
func (g *group) quorumLost() bool { return g.quorumLostFor(uint64(g.e.cfg.ElectionTicks)) }

// quorumLostFor is quorumLost with window ticks in place of an election
// timeout.
func (g *group) quorumLostFor(window uint64) bool {
	et := uint64(g.e.cfg.ElectionTicks)
	switch {
	case g.raftState == etcdraft.StateLeader:
		return !g.quorumHeardWithin(window)
	case g.ticks < 2*et:
		// Just started: peers may still be reconnecting to this node.
		return false
	case g.ticks-g.ledUntil <= et:
		// It led until recently: its followers answered every heartbeat,
		// so who it heard from is exactly who is alive (raft's
		// CheckQuorum deposed it for hearing from too few).
		return !g.quorumHeardWithin(window)
	case g.ticks-g.leaderContact < 2*et:
		// A leader was heard within two election timeouts: an election
		// may be under way, and followers still within their leader's
		// lease ignore pre-votes without answering, so silence proves
		// nothing yet. Two timeouts after the last contact every live
		// voter has timed out and sent this replica its pre-vote.
		return false
	}
	// A campaigning voter is heard once per randomized election timeout,
	// up to two timeouts apart.
	return !g.quorumHeardWithin(max(window, 2*et))
}

// indexProposals records where this pass's proposals landed in the log.
// Every proposal stepped in this pass is among ents unless raft rejected
// it (raft turns an invalid conf change into an empty entry).
func (g *group) indexProposals(ents []*pb.Entry) {
	for _, e := range ents {
		var id uint64
		switch e.GetType() {
		case pb.EntryNormal:
			if len(e.GetData()) == 0 {
				continue
			}
			var err error
			if id, _, err = decodeEntryData(e.GetData()); err != nil {
				continue
			}
		default:
			cc, err := decodeConfChange(e)
			if err != nil {
				continue
			}
			c, _, err := decodeConfChangeContext(cc.AsV2().GetContext())
			if err != nil {
				continue
			}
			id = c.GetProposalId()
		}
		if r := g.proposals[id]; r != nil && r.index == 0 {
			r.index, r.term = e.GetIndex(), e.GetTerm()
		}
	}
	for id, r := range g.proposals {
		if r.index != 0 {
			continue
		}
		delete(g.proposals, id)
		if r.kind == reqChange {
			r.finish(nil, fmt.Errorf("raft: group %d: %w: raft refused the change (another change pending or invalid for the configuration)", g.id, ErrMembershipChangeRejected))
		} else {
			g.log.Error("proposal missing from the log after raft accepted it", "proposal", id)
			r.finish(nil, fmt.Errorf("raft: group %d: %w", g.id, consensus.ErrAmbiguous))
		}
	}
}

// issueReads asks raft for one read index for all of reqs, or holds them
// while this replica leads without a commit in its term (readHold).
func (g *group) issueReads(reqs []*request) {
	if _, hold := g.readHold(); hold {
		g.heldReads = append(g.heldReads, reqs...)
		return
	}
	if g.lead == etcdraft.None {
		// Raft would drop the request; wait for a leader.
		g.waiting = append(g.waiting, reqs...)
		return
	}
	id := g.e.nextID()
	var rctx [8]byte
	binary.BigEndian.PutUint64(rctx[:], id)
	g.rn.ReadIndex(rctx[:])
	g.readBatches[id] = &readBatch{reqs: reqs, issued: g.ticks}
}

// Read index requests wait for a commit in the leader's term.
//
// A read index is the leader's commit index, and it covers every
// acknowledged write only once the leader has committed an entry of its
// own term (raft thesis, section 6.4): before that, its commit index may
// be behind. etcd raft holds read index requests until then, except in a
// group of one voter, whose leader answers at once (etcd-io/raft#105).
// That is wrong after a restart: a write is acknowledged once its entry is
// durable and applied, but the hard state recording its commit index is
// written without a sync (nothing waits for it), so a crash can leave the
// entry in the log and the hard state with an older commit index. The
// restarted voter leads at once and would answer a read with that older
// index, which its applied index reaches at once: the read would miss
// acknowledged writes, which count as committed again only once the new
// term's first entry commits after them (one sync later).
//
// So a leader keeps every read index request from raft until it has
// committed an entry of its term: its own reads (issueReads) and those its
// followers and learners forward (holdRemoteRead), asked again each pass
// (handleRequests). For groups of several voters this only moves raft's own
// hold here: the requests are released in the pass that commits the entry,
// as raft would release them, and a leader that committed in its term (the
// normal path) answers as before, after one cached comparison. Lease reads
// check the same condition (leaseView).

// maxHeldReadMsgs bounds the read index requests of peers a leader holds:
// a follower sends one per pass with reads and asks again after an
// election timeout, so beyond this the senders are misbehaving; the excess
// is dropped (a dropped request is asked again, reads being idempotent).
const maxHeldReadMsgs = 256

// readHold reports whether raft, as of now (possibly ahead of the last
// Ready), leads, and whether read index requests must still be kept from
// it because it has not committed an entry of its term.
func (g *group) readHold() (leading, hold bool) {
	st := g.rn.BasicStatus()
	if st.RaftState != etcdraft.StateLeader {
		return false, false
	}
	return true, !g.committedInTerm(st.GetTerm(), st.GetCommit())
}

// committedInTerm reports whether commit, a leader's commit index in term,
// holds an entry of term. Once it does, every later commit index of the
// term does too, so the answer is looked up once per term.
func (g *group) committedInTerm(term, commit uint64) bool {
	if term == 0 {
		return false
	}
	if g.lease.committedTerm == term {
		return true
	}
	if t, err := g.store.Term(commit); err != nil || t != term {
		return false
	}
	g.lease.committedTerm = term
	return true
}

// holdRemoteRead keeps a peer's read index request from raft while
// readHold says so; it reports whether it took im.
func (g *group) holdRemoteRead(im inMsg) bool {
	if im.m.GetType() != pb.MsgReadIndex {
		return false
	}
	if _, hold := g.readHold(); !hold {
		return false
	}
	if len(g.heldReadMsgs) < maxHeldReadMsgs {
		g.heldReadMsgs = append(g.heldReadMsgs, im)
	}
	return true
}

// releaseReadMsgs steps the peers' held read index requests once the hold
// is over; a replica that no longer leads drops them (their senders ask
// the new leader: reissueReads).
func (g *group) releaseReadMsgs() {
	if len(g.heldReadMsgs) == 0 {
		return
	}
	leading, hold := g.readHold()
	if hold {
		return
	}
	msgs := g.heldReadMsgs
	g.heldReadMsgs = nil
	if !leading {
		return
	}
	for _, im := range msgs {
		g.stepRemote(im)
	}
}

// reissueReads asks again for the read batches raft may have lost: all of
// them after a leadership change, or (onlyStale) those unanswered for an
// election timeout. Reads are idempotent, so asking twice is harmless.
func (g *group) reissueReads(onlyStale bool) {
	var reqs []*request
	for id, b := range g.readBatches {
		if onlyStale && g.ticks-b.issued < uint64(g.e.cfg.ElectionTicks) {
			continue
		}
		delete(g.readBatches, id)
		for _, r := range b.reqs {
			if r.ctx.Err() == nil {
				reqs = append(reqs, r)
			}
		}
	}
	if len(reqs) > 0 {
		g.issueReads(reqs)
	}
}

func (g *group) onReadState(rs etcdraft.ReadState) {
	if len(rs.RequestCtx) != 8 {
		return
	}
	id := binary.BigEndian.Uint64(rs.RequestCtx)
	b := g.readBatches[id]
	if b == nil {
		return
	}
	delete(g.readBatches, id)
	for _, r := range b.reqs {
		r.readIndex = rs.Index
		g.readWaiters = append(g.readWaiters, r)
	}
}

// resolveReads answers the reads whose index has been applied.
func (g *group) resolveReads() {
	applied := g.store.state.appliedIndex
	keep := g.readWaiters[:0]
	for _, r := range g.readWaiters {
		if r.readIndex <= applied {
			r.finish(nil, nil)
		} else if r.ctx.Err() == nil {
			keep = append(keep, r)
		}
	}
	clear(g.readWaiters[len(keep):])
	g.readWaiters = keep
}
