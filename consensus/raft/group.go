package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cosmosd/cosmosd/consensus"
)

// Errors of this engine beyond the consensus sentinels.
var (
	// ErrProposalDropped reports a proposal the leader refused because too
	// many bytes of entries are uncommitted (MaxUncommittedEntriesSize); it
	// did not enter the log. Retry after a while.
	ErrProposalDropped = errors.New("raft: proposal dropped: too many uncommitted entries")
	// ErrMembershipChangeRejected reports a membership change that did not
	// enter the log because it is invalid for the current configuration or
	// another change is still in progress. Retry after the other change.
	ErrMembershipChangeRejected = errors.New("raft: membership change rejected")
)

type requestKind int

const (
	reqPropose requestKind = iota
	reqRead
	reqChange
	reqTransfer
)

// request is one call of a Group method waiting for the scheduler.
type request struct {
	kind requestKind
	ctx  context.Context
	// id is the proposal id (propose, change) embedded in the entry.
	id uint64
	// data is the entry envelope (propose).
	data    []byte
	changes []consensus.ReplicaChange
	target  consensus.ReplicaID
	done    chan result
	// stepped is set once raft has taken the command (propose, change):
	// from then on it may commit even if this replica fails or the caller
	// gives up, so its failure is never "not attempted".
	stepped atomic.Bool

	// Scheduler-owned from here on.
	// index and term locate the proposed entry once it is in the leader's
	// log; 0 before.
	index, term uint64
	// readIndex is the index a read must wait for (reqRead, set once
	// known).
	readIndex uint64
	// leaveJoint marks a membership change whose entry entered a joint
	// configuration; it completes when the configuration is left.
	leaveJoint bool
	// steppedAt and appliedAt are when raft took the proposal and when it was
	// applied here (monoNow; 0 if not), for Stats' proposal stages.
	steppedAt, appliedAt int64
}

// proposalStages sums the stages of proposals applied on their leader
// (Stats.ProposalsApplied and the times that follow it).
type proposalStages struct {
	n, queue, commit, answer atomic.Int64
}

// record adds a proposal submitted at start (monoNow) that returned now.
func (s *proposalStages) record(r *request, start, now int64) {
	if r.steppedAt == 0 || r.appliedAt == 0 {
		return
	}
	s.n.Add(1)
	s.queue.Add(r.steppedAt - start)
	s.commit.Add(r.appliedAt - r.steppedAt)
	s.answer.Add(now - r.appliedAt)
}

type result struct {
	value any
	err   error
}

func (r *request) finish(v any, err error) {
	select {
	case r.done <- result{v, err}:
	default: // already finished
	}
}

// inMsg is an inbound raft message and the node that sent it.
type inMsg struct {
	m    *pb.Message
	from consensus.NodeID
	size int // encoded bytes
	// stamp and echo are the message's lease fields (lease.go).
	stamp, echo int64
	// at is when the message arrived (monoNow): the cycle steps the
	// ticks that fired before it first and the later ones after it (see
	// prepare).
	at int64
}

type snapStatus struct {
	replica uint64
	ok      bool
}

// localMsg is a response of a local storage write (see syncer.go) and the
// generation of the RawNode that asked for the write.
type localMsg struct {
	m   *pb.Message
	gen int
}

// inbox is what other goroutines hand to a group between two cycles.
type inbox struct {
	// local are responses of durable local writes, stepped before msgs.
	local []localMsg
	// postApply asks for the state machine's post-apply work: the Apply
	// of this applySeq (and every earlier one) is durable; 0 for none.
	postApply uint64
	msgs      []inMsg
	bytes     int // encoded bytes of msgs
	ticks     int
	// tickAt are the times (monoNow) the last ticks fired, oldest first,
	// at most maxTickTimes of them.
	tickAt      []int64
	requests    []*request
	snapStatus  []snapStatus
	unreachable []uint64
	snaps       []*incomingSnapshot
	stop        bool
}

// group is one local replica of a raft group.
//
// Ownership: the fields in the first block after mu are owned by the
// scheduler: only the goroutine processing the group in the current cycle
// reads or writes them (the scheduler never processes one group on two
// goroutines at once, and hands it between phases with happens-before).
// Everything other goroutines need goes through mu.
type group struct {
	id        consensus.GroupID
	replicaID consensus.ReplicaID
	e         *Engine
	sm        consensus.StateMachine
	log       *slog.Logger
	stopped   chan struct{} // closed once the scheduler processed the stop

	mu struct {
		sync.Mutex
		inbox   inbox
		queued  bool // in the scheduler's queue
		stopped bool // no more work accepted
		err     error
		status  consensus.Status
		// quorumOK is false while this replica leads but has not heard from
		// a quorum of voters within an election timeout.
		quorumOK bool
		// changed is closed and replaced when leader, term or membership
		// change.
		changed chan struct{}
		// resets mirrors group.resets for observers.
		resets int
	}

	// Scheduler-owned.
	rn    *etcdraft.RawNode
	store *logStore
	// nodes maps every replica this replica knows of (members, and senders
	// of inbound messages) to its node.
	nodes     map[consensus.ReplicaID]consensus.NodeID
	members   []consensus.Replica
	lead      uint64
	raftState etcdraft.StateType
	term      uint64
	commit    uint64
	ticks     uint64
	lastHeard map[uint64]uint64 // replica -> tick of its last message
	// leaderContact is the tick this replica last heard from its leader
	// (or led).
	leaderContact uint64
	// ledUntil is the tick this replica last led at (0 if never).
	ledUntil uint64
	// proposals are proposed (and, after the Ready that appended them,
	// indexed) commands and membership changes, by proposal id.
	proposals map[uint64]*request
	// waiting holds requests that arrived while no leader was known.
	waiting []*request
	// readBatches are ReadIndex requests issued to raft, by request
	// context; readWaiters know their index and wait for it to be applied.
	readBatches map[uint64]*readBatch
	readWaiters []*request
	// heldReads and heldReadMsgs are this replica's reads and its peers'
	// read index requests that it keeps from raft while it leads without
	// having committed an entry of its term (see readHold).
	heldReads    []*request
	heldReadMsgs []inMsg
	// snapSending maps replicas to the index of the snapshot being sent to
	// them; log truncation does not pass it.
	snapSending map[uint64]uint64
	inSnap      *incomingSnapshot
	failed      error
	// resets counts the RawNode rebuilds after raft panicked on a message
	// (see stepRemote).
	resets int
	// proposedThisPass is set when the current pass stepped proposals that
	// the pass's Ready must contain.
	proposedThisPass bool
	// applySeq counts the cycles that applied entries (see postApply).
	applySeq uint64
	// lease is the read lease bookkeeping (lease.go); abstainUntil is the
	// tick before which this replica refuses unforced votes (admitVote).
	lease        leaseState
	abstainUntil uint64
	// fastLease and appliedPub are what ReadIndex's fast path reads
	// without the scheduler (lease.go, "The fast path"): the lease as of
	// the last cycle (nil while void) and the applied index whose writes
	// are visible in storage.
	fastLease  atomic.Pointer[leaseView]
	appliedPub atomic.Uint64
	// logBytesPub is store.logBytes as of the last publishStatus, for
	// Engine.Stats.
	logBytesPub atomic.Uint64
	// pendingRetry asks the next pass to retry waiting requests and
	// reissue reads (set when the leader changed).
	pendingRetry bool
	// pub is what publishStatus last published.
	pub struct {
		leader  consensus.ReplicaID
		term    uint64
		members []consensus.Replica
		leading bool
		// followed is the node of the leader this replica follows (0 when
		// it leads or knows no leader), as counted in Engine.followed.
		followed consensus.NodeID
	}
	stopOnce sync.Once
}

type readBatch struct {
	reqs   []*request
	issued uint64 // tick
}

var _ consensus.Group = (*group)(nil)

// ID implements consensus.Group.
func (g *group) ID() consensus.GroupID { return g.id }

// submit hands r to the scheduler.
func (g *group) submit(r *request) error {
	g.mu.Lock()
	if g.mu.stopped {
		err := g.stoppedErrLocked()
		g.mu.Unlock()
		return err
	}
	g.mu.inbox.requests = append(g.mu.inbox.requests, r)
	wake := !g.mu.queued
	g.mu.queued = true
	g.mu.Unlock()
	if wake {
		g.e.sched.enqueue(g)
	}
	return nil
}

func (g *group) stoppedErrLocked() error {
	if g.mu.err != nil {
		return fmt.Errorf("raft: group %d: %w: %v", g.id, consensus.ErrStopped, g.mu.err)
	}
	return fmt.Errorf("raft: group %d: %w", g.id, consensus.ErrStopped)
}

func (g *group) stoppedErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stoppedErrLocked()
}

// wait waits for r to finish or ctx to end.
func (g *group) wait(ctx context.Context, r *request, op string) (any, error) {
	select {
	case res := <-r.done:
		return res.value, res.err
	case <-ctx.Done():
		// A result may have raced with the deadline; prefer it.
		select {
		case res := <-r.done:
			return res.value, res.err
		default:
		}
		if r.stepped.Load() {
			// Raft took the command: it may still commit, so the caller
			// must not take this for "not attempted" (ErrNoQuorum).
			return nil, fmt.Errorf("raft: group %d: %s: outcome unknown: %w", g.id, op, ctx.Err())
		}
		return nil, g.ctxErr(ctx, op)
	}
}

// ctxErr explains why a request did not finish before its context ended. It
// always wraps ctx.Err(), and also consensus.ErrNoQuorum when this replica
// knows no leader or leads without hearing from a quorum, so that callers
// can tell an unavailable partition from a slow one.
func (g *group) ctxErr(ctx context.Context, op string) error {
	g.mu.Lock()
	st, quorumOK := g.mu.status, g.mu.quorumOK
	g.mu.Unlock()
	switch {
	case st.Leader == 0:
		return fmt.Errorf("raft: group %d: %s: no leader, fewer than a quorum of replicas reachable: %w: %w", g.id, op, consensus.ErrNoQuorum, ctx.Err())
	case st.Leader == g.replicaID && !quorumOK:
		return fmt.Errorf("raft: group %d: %s: leader cannot reach a quorum of replicas: %w: %w", g.id, op, consensus.ErrNoQuorum, ctx.Err())
	}
	return fmt.Errorf("raft: group %d: %s (leader r%d on node %d, outcome unknown): %w", g.id, op, st.Leader, st.LeaderNode, ctx.Err())
}

// Propose implements consensus.Group. Only the leader proposes; a follower
// that knows the leader fails at once with a *consensus.NotLeaderError so
// that the caller forwards the request, and a replica that knows no leader
// waits for one until ctx ends. A proposal that provably did not commit
// (another entry was applied at its index) fails with NotLeaderError; one
// whose fate this replica cannot learn fails with consensus.ErrAmbiguous.
func (g *group) Propose(ctx context.Context, cmd []byte) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id := g.e.nextID()
	r := &request{kind: reqPropose, ctx: ctx, id: id, data: encodeEntryData(id, cmd), done: make(chan result, 1)}
	if err := g.submit(r); err != nil {
		return nil, err
	}
	start := g.e.monoNow()
	v, err := g.wait(ctx, r, "propose")
	now := g.e.monoNow()
	g.e.proposals.Add(1)
	g.e.proposeNanos.Add(now - start)
	if err == nil {
		g.e.stages.record(r, start, now)
	}
	return v, err
}

// ReadIndex implements consensus.Group. Any replica serves it: a follower
// asks the leader for its commit index through raft (the leader confirms
// its leadership with a heartbeat round, or its lease with LeaseReads) and
// then waits until it has applied that index locally.
func (g *group) ReadIndex(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if g.leaseRead() {
		return nil
	}
	r := &request{kind: reqRead, ctx: ctx, done: make(chan result, 1)}
	if err := g.submit(r); err != nil {
		return err
	}
	_, err := g.wait(ctx, r, "read index")
	return err
}

// ChangeReplicas implements consensus.Group. It must be called on the
// leader. One change uses raft's simple protocol; several use joint
// consensus (ConfChangeV2 with automatic leave), and the call returns once
// the final configuration is applied here. Promoting a learner that has not
// caught up with the leader's commit index is refused.
func (g *group) ChangeReplicas(ctx context.Context, changes []consensus.ReplicaChange) error {
	if len(changes) == 0 {
		return fmt.Errorf("raft: group %d: no membership change given", g.id)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{kind: reqChange, ctx: ctx, id: g.e.nextID(), changes: slices.Clone(changes), done: make(chan result, 1)}
	if err := g.submit(r); err != nil {
		return err
	}
	_, err := g.wait(ctx, r, "change replicas")
	return err
}

// TransferLeadership implements consensus.Group. It may be called on any
// replica (raft forwards the request to the leader); it repeats the request
// every election timeout until target leads or ctx ends.
func (g *group) TransferLeadership(ctx context.Context, target consensus.ReplicaID) error {
	for {
		g.mu.Lock()
		st, changed, stopped := g.mu.status, g.mu.changed, g.mu.stopped
		g.mu.Unlock()
		if st.Leader == target {
			return nil
		}
		if stopped {
			return g.stoppedErr()
		}
		if !slices.ContainsFunc(st.Members, func(m consensus.Replica) bool { return m.ReplicaID == target && !m.Learner }) {
			return fmt.Errorf("raft: group %d: transfer leadership: r%d is not a voter", g.id, target)
		}
		r := &request{kind: reqTransfer, ctx: ctx, target: target, done: make(chan result, 1)}
		if err := g.submit(r); err != nil {
			return err
		}
		if done, err := g.awaitLeader(ctx, target, changed); done || err != nil {
			return err
		}
	}
}

// awaitLeader waits for target to lead, for ctx to end or for an election
// timeout to pass (done=false: the caller asks again).
func (g *group) awaitLeader(ctx context.Context, target consensus.ReplicaID, changed chan struct{}) (done bool, err error) {
	retry := time.NewTimer(time.Duration(2*g.e.cfg.ElectionTicks) * g.e.cfg.TickInterval)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, g.ctxErr(ctx, "transfer leadership")
		case <-retry.C:
			return false, nil
		case <-changed:
			g.mu.Lock()
			leader, stopped := g.mu.status.Leader, g.mu.stopped
			changed = g.mu.changed
			g.mu.Unlock()
			if leader == target {
				return true, nil
			}
			if stopped {
				return true, g.stoppedErr()
			}
		}
	}
}

// Status implements consensus.Group.
func (g *group) Status() consensus.Status {
	g.mu.Lock()
	st := g.mu.status
	g.mu.Unlock()
	st.Members = slices.Clone(st.Members)
	st.Progress = maps.Clone(st.Progress)
	return st
}

// notLeader builds the error for a request on a replica that does not lead.
func (g *group) notLeader(lead uint64) error {
	return &consensus.NotLeaderError{Group: g.id, Leader: consensus.ReplicaID(lead), LeaderNode: g.nodes[consensus.ReplicaID(lead)]}
}
