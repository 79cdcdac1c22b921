package raft

import (
	"fmt"
	"runtime/debug"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
	"github.com/cosmosd/cosmosd/storage"
)

// groupWork is what preparing one group in a cycle produced for the
// commit and finish phases (see scheduler.go).
type groupWork struct {
	g  *group
	rd etcdraft.Ready
	// raftBatch persists hard state and entries; applyBatch holds the state
	// machine's writes of the committed entries with the apply state (and a
	// log truncation). The scheduler commits every raft batch of a cycle
	// before any apply batch, so on disk the applied index never passes the
	// persisted log and commit index.
	raftBatch  *storage.Batch
	applyBatch *storage.Batch
	// needSync is set when responses wait for the cycle's writes to be
	// durable: syncLocal (for this replica's raft) and syncRemote (for
	// peers) are released by the syncer after the cycle's sync.
	needSync   bool
	syncLocal  []*pb.Message
	syncRemote []outMsg
	// applyResps go back to raft once the apply batch is committed.
	applyResps []*pb.Message
	// early are the messages that leave at once (see scheduler.cycle).
	early []outMsg
	// gen is the RawNode generation (group.resets) that produced this.
	gen int
	// postApply, when not 0, is the group's applySeq of this cycle's
	// Apply, whose post-apply work waits for the sync.
	postApply uint64
	snaps     []*snapCapture
	applied   []appliedReq
	newState  *applyState
	leftJoint bool
	ticked    bool
}

type outMsg struct {
	node consensus.NodeID
	m    *transportpb.RaftMessage
}

// appliedReq is a local request whose entry this cycle applies.
type appliedReq struct {
	r   *request
	res consensus.Result
}

func (w *groupWork) close() {
	if w.raftBatch != nil {
		_ = w.raftBatch.Close()
		w.raftBatch = nil
	}
	if w.applyBatch != nil {
		_ = w.applyBatch.Close()
		w.applyBatch = nil
	}
	for _, s := range w.snaps {
		s.close()
	}
	w.snaps = nil
}

// prepare runs phase 1 of a cycle for g: it feeds raft everything that
// arrived since the last cycle, takes a Ready, installs an incoming
// snapshot, builds the batches that persist raft state and apply committed
// entries, and encodes outbound messages. It returns nil when g has nothing
// to persist or send.
func (g *group) prepare() (w *groupWork) {
	g.mu.Lock()
	in := g.mu.inbox
	g.mu.inbox = inbox{}
	g.mu.queued = false
	g.mu.Unlock()

	if g.failed != nil || in.stop {
		g.finishStop(in)
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			if w != nil {
				w.close()
			}
			w = nil
			g.fail(fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
		}
	}()

	for _, lm := range in.local {
		if lm.gen != g.resets {
			continue // for a RawNode since rebuilt (see deliverLocal)
		}
		if err := g.rn.Step(lm.m); err != nil {
			g.log.Debug("step local response failed", "type", lm.m.GetType().String(), "err", err)
		}
	}
	if in.postApply != 0 && in.postApply >= g.applySeq {
		// Every Apply so far is durable (the sync that released this
		// covers the last one): its post-apply work may run. An earlier
		// release while a later Apply still waits for its sync is
		// ignored; that Apply's own release follows.
		if pa, ok := g.sm.(consensus.PostApplier); ok {
			pa.PostApply()
		}
	}
	// Ticks and messages are stepped in the order of the times the ticks
	// fired and the messages arrived. A tick that fired before a message
	// but is stepped after it would shorten the time the message holds
	// this replica's vote (raft's inLease counts ticks after the leader's
	// last append or heartbeat), and leader leases rely on that time
	// lasting ElectionTicks-1 ticks of real time (see "Leader leases"): a
	// cycle, or the ticker goroutine, delayed by load would otherwise end
	// a refusal early and let a second leader be elected while the first
	// still serves lease reads. Ticks without a recorded time (beyond
	// maxTickTimes) are the oldest and go first.
	ticked := 0
	untimed := in.ticks - len(in.tickAt)
	tick := func(upto int) {
		for ; ticked < upto; ticked++ {
			g.rn.Tick()
			g.ticks++
		}
	}
	tick(untimed)
	for _, im := range in.msgs {
		for ticked < in.ticks && in.tickAt[ticked-untimed] <= im.at {
			tick(ticked + 1)
		}
		if !g.admit(im) || !g.admitVote(im.m) {
			continue
		}
		g.lastHeard[im.m.GetFrom()] = g.ticks
		if g.holdRemoteRead(im) {
			continue
		}
		g.stepRemote(im)
		g.noteLease(im)
		if im.m.GetFrom() == g.lead || im.m.GetFrom() == g.rn.BasicStatus().Lead {
			g.leaderContact = g.ticks
		}
	}
	tick(in.ticks)
	if g.raftState == etcdraft.StateLeader {
		g.leaderContact, g.ledUntil = g.ticks, g.ticks
	}
	for _, s := range in.snapStatus {
		delete(g.snapSending, s.replica)
		st := etcdraft.SnapshotFinish
		if !s.ok {
			st = etcdraft.SnapshotFailure
		}
		g.rn.ReportSnapshot(s.replica, st)
	}
	for _, r := range in.unreachable {
		g.rn.ReportUnreachable(r)
	}
	for _, s := range in.snaps {
		if g.inSnap != nil {
			s.finish(false, fmt.Errorf("raft: group %d: another snapshot is being installed", g.id))
			continue
		}
		if err := g.rn.Step(s.msg); err != nil {
			s.finish(false, fmt.Errorf("raft: group %d: step snapshot: %w", g.id, err))
			continue
		}
		g.inSnap = s
	}
	g.handleRequests(in.requests, in.ticks > 0)
	if in.ticks > 0 {
		g.onTick()
	}
	if !g.rn.HasReady() {
		g.dropIgnoredSnapshot()
		g.publishStatus(in.ticks > 0)
		return nil
	}

	rd := g.rn.Ready()
	w = &groupWork{g: g, rd: rd, ticked: in.ticks > 0, gen: g.resets}
	if rd.SoftState != nil {
		g.onSoftState(rd.SoftState)
	}
	if !etcdraft.IsEmptyHardState(rd.HardState) {
		g.term, g.commit = rd.GetTerm(), rd.GetCommit()
	}
	if g.proposedThisPass {
		g.indexProposals(rd.Entries)
	}
	if etcdraft.IsEmptySnap(rd.Snapshot) {
		g.dropIgnoredSnapshot()
	}

	// With AsyncStorageWrites, rd.Messages holds the network messages,
	// which may all leave now, and two local ones, in this order: a
	// MsgStorageAppend (rd's entries, hard state and snapshot; its
	// Responses may be released only once that write is durable) and a
	// MsgStorageApply (rd's committed entries, all stable in the local
	// log; its Responses go back to raft once they are applied).
	for _, m := range rd.Messages {
		var err error
		switch m.GetTo() {
		case etcdraft.LocalAppendThread:
			err = g.storageAppend(w, rd, m)
		case etcdraft.LocalApplyThread:
			if err = g.applyEntries(w, m.GetEntries()); err == nil {
				w.applyResps = append(w.applyResps, m.GetResponses()...)
				g.applySeq++
				if g.postApplyPending() {
					// The state machine's post-apply work (starting a
					// split's right half) runs once this apply is
					// durable: the syncer releases it after the cycle's
					// sync (see the in.postApply step above).
					w.postApply, w.needSync = g.applySeq, true
				}
			}
		default:
			err = g.outbound(w, m, &w.early)
		}
		if err != nil {
			w.close()
			g.fail(err)
			return nil
		}
	}
	for _, rs := range rd.ReadStates {
		g.onReadState(rs)
	}
	return w
}

// storageAppend builds the raft batch of a MsgStorageAppend (installing
// its snapshot first) and sorts its responses into those for this replica
// and those for peers; all of them wait for the cycle's sync.
func (g *group) storageAppend(w *groupWork, rd etcdraft.Ready, m *pb.Message) error {
	if !etcdraft.IsEmptySnap(rd.Snapshot) {
		if err := g.installSnapshot(rd); err != nil {
			return err
		}
	}
	if len(rd.Entries) > 0 || !etcdraft.IsEmptyHardState(rd.HardState) {
		w.raftBatch = g.e.cfg.Storage.NewWriteBatch()
		if err := g.writeRaftState(w.raftBatch, rd); err != nil {
			return err
		}
	}
	for _, r := range m.GetResponses() {
		w.needSync = true
		if r.GetTo() == uint64(g.replicaID) {
			w.syncLocal = append(w.syncLocal, r)
			continue
		}
		if err := g.outbound(w, r, &w.syncRemote); err != nil {
			return err
		}
	}
	return nil
}

// outbound encodes m for its replica's node into *dst (a MsgSnap is
// captured to stream instead).
func (g *group) outbound(w *groupWork, m *pb.Message, dst *[]outMsg) error {
	if m.GetType() == pb.MsgSnap {
		g.captureSnapshot(w, m)
		return nil
	}
	node := g.nodes[consensus.ReplicaID(m.GetTo())]
	if node == 0 {
		g.log.Debug("no node known for replica", "replica", m.GetTo())
		return nil
	}
	rm, err := encodeMessage(g.id, m)
	if err != nil {
		return err
	}
	g.stampOutbound(m, rm)
	*dst = append(*dst, outMsg{node: node, m: rm})
	return nil
}

func (g *group) writeRaftState(b *storage.Batch, rd etcdraft.Ready) error {
	if !etcdraft.IsEmptyHardState(rd.HardState) {
		v, err := proto.Marshal(rd.HardState)
		if err != nil {
			return err
		}
		if err := b.Set(storage.RaftHardStateKey(uint64(g.id)), v); err != nil {
			return err
		}
	}
	return g.store.writeEntries(b, rd.Entries)
}

// finish runs phase 3 for g after the cycle's batches were committed with
// result err: it updates the in-memory log view, advances raft, answers
// the requests this cycle completed and starts snapshot sends. Outbound
// messages are sent by the scheduler.
func (g *group) finish(w *groupWork, err error) {
	defer func() {
		if p := recover(); p != nil {
			w.close()
			g.fail(fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
		}
	}()
	if err != nil {
		w.close()
		g.fail(fmt.Errorf("commit raft state: %w", err))
		return
	}
	rd := w.rd
	if !etcdraft.IsEmptyHardState(rd.HardState) {
		g.store.setHardState(rd.HardState)
	}
	g.store.appended(rd.Entries)
	if w.newState != nil {
		old := g.store.state.truncatedIndex
		g.store.state = w.newState
		if w.newState.truncatedIndex != old {
			g.store.truncated(old)
		}
	}
	for _, m := range w.applyResps {
		if err := g.rn.Step(m); err != nil {
			g.log.Debug("step apply response failed", "err", err)
		}
	}
	w.applyResps = nil
	// Publish before answering, so a caller sees its write in Status.
	g.publishStatus(w.ticked)

	for _, a := range w.applied {
		r := a.r
		switch r.kind {
		case reqPropose:
			delete(g.proposals, r.id)
			r.finish(a.res.Value, a.res.Err)
		case reqChange:
			if isJoint(g.store.state.confState) {
				r.leaveJoint = true
				continue
			}
			delete(g.proposals, r.id)
			r.finish(nil, nil)
		}
	}
	applied := g.store.state.appliedIndex
	for id, r := range g.proposals {
		switch {
		case r.leaveJoint:
			if w.leftJoint {
				delete(g.proposals, id)
				r.finish(nil, nil)
			}
		case r.index != 0 && r.index <= applied:
			// Another entry was applied at the proposal's index: the
			// proposal was overwritten by a new leader and never commits.
			delete(g.proposals, id)
			r.finish(nil, g.notLeader(g.lead))
		}
	}
	g.resolveReads()
	for _, s := range w.snaps {
		g.e.startSnapshotSend(s)
	}
	w.snaps = nil
	if g.rn.HasReady() || g.pendingRetry {
		g.requeue()
	}
}

// postApplyPending reports whether the state machine has post-apply work
// waiting for the applies so far to be durable.
func (g *group) postApplyPending() bool {
	pa, ok := g.sm.(consensus.PostApplier)
	return ok && pa.PostApplyPending()
}

// requeue schedules g for the next cycle.
func (g *group) requeue() {
	g.mu.Lock()
	wake := !g.mu.queued && !g.mu.stopped
	g.mu.queued = g.mu.queued || wake
	g.mu.Unlock()
	if wake {
		g.e.sched.enqueue(g)
	}
}

// applyEntries hands committed entries to the state machine, writing into
// a new apply batch together with the resulting apply state.
func (g *group) applyEntries(w *groupWork, ents []*pb.Entry) error {
	st := *g.store.state
	entries := make([]consensus.Entry, len(ents))
	ids := make([]uint64, len(ents))
	wasJoint := isJoint(st.confState)
	for i, e := range ents {
		ce := consensus.Entry{Index: e.GetIndex(), Term: e.GetTerm()}
		switch e.GetType() {
		case pb.EntryNormal:
			if len(e.GetData()) == 0 {
				ce.Type = consensus.EntryEmpty
				break
			}
			id, cmd, err := decodeEntryData(e.GetData())
			if err != nil {
				return fmt.Errorf("apply entry %d: %w", e.GetIndex(), err)
			}
			ce.Type, ce.Data, ids[i] = consensus.EntryCommand, cmd, id
		case pb.EntryConfChange, pb.EntryConfChangeV2:
			cc, err := decodeConfChange(e)
			if err != nil {
				return err
			}
			cctx, ms, err := decodeConfChangeContext(cc.AsV2().GetContext())
			if err != nil {
				return fmt.Errorf("apply entry %d: %w", e.GetIndex(), err)
			}
			for _, m := range ms {
				g.nodes[m.ReplicaID] = m.NodeID
			}
			cs := g.rn.ApplyConfChange(cc)
			st.confState = cs
			g.members = membersFromConfState(cs, g.nodes)
			st.members = g.members
			ce.Type, ce.Members, ids[i] = consensus.EntryMembership, append([]consensus.Replica(nil), g.members...), cctx.GetProposalId()
			g.log.Info("membership changed", "index", e.GetIndex(), "members", fmt.Sprint(g.members))
		default:
			return fmt.Errorf("apply entry %d: %w: entry type %v", e.GetIndex(), ErrCorrupt, e.GetType())
		}
		entries[i] = ce
	}
	if wasJoint && !isJoint(st.confState) {
		w.leftJoint = true
	}
	if k := g.e.cfg.TestingKnobs; k != nil && k.ApplyFilter != nil {
		if err := k.ApplyFilter(g.id, ents[len(ents)-1].GetIndex()); err != nil {
			return fmt.Errorf("apply entries %d..%d: %w", ents[0].GetIndex(), ents[len(ents)-1].GetIndex(), err)
		}
	}
	b := g.e.cfg.Storage.NewBatch()
	w.applyBatch = b
	results, err := g.sm.Apply(b, entries)
	if err != nil {
		return fmt.Errorf("apply entries %d..%d: %w", ents[0].GetIndex(), ents[len(ents)-1].GetIndex(), err)
	}
	if len(results) != len(entries) {
		return fmt.Errorf("apply entries %d..%d: state machine returned %d results", ents[0].GetIndex(), ents[len(ents)-1].GetIndex(), len(results))
	}
	now := g.e.monoNow()
	for i, id := range ids {
		if id == 0 {
			continue
		}
		if r := g.proposals[id]; r != nil && r.index == ents[i].GetIndex() && r.term == ents[i].GetTerm() {
			r.appliedAt = now
			w.applied = append(w.applied, appliedReq{r: r, res: results[i]})
		}
	}
	last := ents[len(ents)-1]
	st.appliedIndex, st.appliedTerm = last.GetIndex(), last.GetTerm()
	if err := g.maybeTruncate(b, &st); err != nil {
		return err
	}
	v, err := encodeApplyState(&st)
	if err != nil {
		return err
	}
	if err := b.Set(storage.RaftApplyStateKey(uint64(g.id)), v); err != nil {
		return err
	}
	w.newState = &st
	return nil
}

// maybeTruncate adds a log truncation to b and st when the policy of
// Config.LogTruncate* asks for one.
func (g *group) maybeTruncate(b *storage.Batch, st *applyState) error {
	cfg := &g.e.cfg
	if cfg.TestingKnobs != nil && cfg.TestingKnobs.DisableTruncation {
		return nil
	}
	n := st.appliedIndex - st.truncatedIndex
	if n <= cfg.LogRetainEntries || (n < cfg.LogTruncateEntries && g.store.logBytes < cfg.LogTruncateBytes) {
		return nil
	}
	target := st.appliedIndex - cfg.LogRetainEntries
	if g.raftState == etcdraft.StateLeader && g.store.logBytes < 4*cfg.LogTruncateBytes {
		// Keep what recently active followers still need so they catch up
		// from the log instead of a snapshot.
		g.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) {
			if id != uint64(g.replicaID) && pr.RecentActive && pr.State != tracker.StateSnapshot && pr.Match < target {
				target = pr.Match
			}
		})
	}
	for _, idx := range g.snapSending {
		// A follower installing a snapshot at idx continues from idx+1.
		target = min(target, idx)
	}
	if target <= st.truncatedIndex || target > g.store.lastIndex {
		return nil
	}
	term, err := g.store.Term(target)
	if err != nil {
		return nil
	}
	if err := b.DeleteSpan(storage.RaftLogSpan(uint64(g.id), st.truncatedIndex+1, target+1)); err != nil {
		return err
	}
	st.truncatedIndex, st.truncatedTerm = target, term
	return nil
}

func isJoint(cs *pb.ConfState) bool { return len(cs.GetVotersOutgoing()) > 0 }

func (g *group) onSoftState(ss *etcdraft.SoftState) {
	if ss.Lead != g.lead {
		g.log.Debug("leader changed", "leader", ss.Lead, "term", g.rn.BasicStatus().GetTerm(), "state", ss.RaftState.String())
		g.e.leaderChanges.Add(1)
		g.pendingRetry = true
	}
	g.lead, g.raftState = ss.Lead, ss.RaftState
}

// onTick runs the periodic work of a pass that ticked.
func (g *group) onTick() {
	if g.quorumLostFor(2 * uint64(g.e.cfg.ElectionTicks)) {
		// Twice the window that refuses new requests: an answer for a
		// command in flight is worth waiting a little longer for, and a
		// pause of one election timeout (a loaded host) must not turn
		// writes that will commit into timeouts.
		g.failForQuorum()
	}
	g.reissueReads(true)
	for id, r := range g.proposals {
		// A request whose caller has gone and that was never indexed holds
		// nothing; indexed ones are resolved by application.
		if r.index == 0 && r.ctx.Err() != nil {
			delete(g.proposals, id)
		}
	}
}

// quorumActive reports whether a leader heard from a quorum of voters (in
// both halves of a joint configuration) within an election timeout.
func (g *group) quorumActive() bool { return g.quorumHeardWithin(uint64(g.e.cfg.ElectionTicks)) }

// quorumHeardWithin reports whether a quorum of voters (in both halves of
// a joint configuration), this replica included, sent it something within
// the last window ticks.
func (g *group) quorumHeardWithin(window uint64) bool {
	cs := g.store.state.confState
	heard := func(ids []uint64) bool {
		if len(ids) == 0 {
			return true
		}
		n := 0
		for _, id := range ids {
			t, ok := g.lastHeard[id]
			if id == uint64(g.replicaID) || (ok && g.ticks-t <= window) {
				n++
			}
		}
		return n > len(ids)/2
	}
	return heard(cs.GetVoters()) && heard(cs.GetVotersOutgoing())
}

// publishStatus updates what Status returns. Progress (and whether a
// leader hears from a quorum) is recomputed on ticks and when leadership or
// membership changes, which keeps the per-cycle cost to one lock.
func (g *group) publishStatus(ticked bool) {
	g.publishLease()
	leader := consensus.ReplicaID(g.lead)
	changed := g.pub.leader != leader || g.pub.term != g.term || !sameMembers(g.pub.members, g.members)
	isLeader := g.raftState == etcdraft.StateLeader
	var progress map[consensus.ReplicaID]uint64
	quorum := true
	updateProgress := ticked || changed || g.pub.leading != isLeader
	if isLeader && updateProgress {
		progress = map[consensus.ReplicaID]uint64{}
		g.rn.WithProgress(func(id uint64, _ etcdraft.ProgressType, pr tracker.Progress) {
			progress[consensus.ReplicaID(id)] = pr.Match
		})
		quorum = g.quorumActive()
	}
	g.pub.leader, g.pub.term, g.pub.members, g.pub.leading = leader, g.term, g.members, isLeader
	var followed consensus.NodeID
	if leader != 0 && leader != g.replicaID {
		followed = g.nodes[leader]
	}
	if followed != g.pub.followed {
		g.e.follow(g.pub.followed, followed)
		g.pub.followed = followed
	}

	g.mu.Lock()
	st := &g.mu.status
	if updateProgress {
		st.Progress = progress
		g.mu.quorumOK = quorum
	}
	st.Leader = leader
	if leader != 0 && g.leaderSilent(uint64(leader)) {
		// Known but quiet for half an election timeout: do not send
		// callers to it (see leaderSilent).
		st.Leader = 0
	}
	st.LeaderNode = 0
	if st.Leader != 0 {
		st.LeaderNode = g.nodes[st.Leader]
	}
	st.Term = g.term
	st.Commit = g.commit
	st.Applied = g.store.state.appliedIndex
	st.LastIndex = g.store.lastIndex
	g.logBytesPub.Store(g.store.logBytes)
	st.Members = g.members
	if changed {
		close(g.mu.changed)
		g.mu.changed = make(chan struct{})
	}
	g.mu.Unlock()
}

func sameMembers(a, b []consensus.Replica) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fail stops the group after an error it cannot continue past: the
// replica's state may not diverge from its peers', so it stops instead.
func (g *group) fail(err error) {
	if g.failed != nil {
		return
	}
	g.failed = err
	g.log.Error("group stopped: cannot continue", "err", err)
	g.finishStop(inbox{})
}

// finishStop fails everything pending and marks the group stopped.
func (g *group) finishStop(in inbox) {
	g.fastLease.Store(nil)
	g.mu.Lock()
	already := g.mu.stopped
	g.mu.stopped = true
	if g.failed != nil && g.mu.err == nil {
		g.mu.err = g.failed
		g.mu.status.Err = g.failed
	}
	rest := g.mu.inbox
	g.mu.inbox = inbox{}
	err := g.stoppedErrLocked()
	if !already {
		close(g.mu.changed)
		g.mu.changed = make(chan struct{})
	}
	g.mu.Unlock()
	var reqs []*request
	reqs = append(reqs, in.requests...)
	reqs = append(reqs, rest.requests...)
	reqs = append(reqs, g.waiting...)
	g.waiting = nil
	reqs = append(reqs, g.heldReads...)
	g.heldReads = nil
	g.heldReadMsgs = nil
	// The requests above never reached raft: they provably did not commit,
	// and ErrStopped lets the caller retry them on another replica. A
	// proposal raft took may already be in a follower's log (the leader
	// sends its appends before its own write is durable) and commit under
	// the next leader: its outcome is unknown, and a retry elsewhere could
	// apply a counter or a list append twice.
	ambiguous := fmt.Errorf("raft: group %d stopped with the command in flight: %w", g.id, consensus.ErrAmbiguous)
	if g.failed != nil {
		ambiguous = fmt.Errorf("raft: group %d stopped (%v) with the command in flight: %w", g.id, g.failed, consensus.ErrAmbiguous)
	}
	for _, r := range g.proposals {
		r.finish(nil, ambiguous)
	}
	clear(g.proposals)
	for _, b := range g.readBatches {
		reqs = append(reqs, b.reqs...)
	}
	clear(g.readBatches)
	reqs = append(reqs, g.readWaiters...)
	g.readWaiters = nil
	for _, r := range reqs {
		r.finish(nil, err)
	}
	for _, s := range append(in.snaps, rest.snaps...) {
		s.finish(false, err)
	}
	if g.inSnap != nil {
		g.inSnap.finish(false, err)
		g.inSnap = nil
	}
	if g.pub.followed != 0 {
		g.e.follow(g.pub.followed, 0)
		g.pub.followed = 0
	}
	g.stopOnce.Do(func() { close(g.stopped) })
}
