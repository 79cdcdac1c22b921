package consensus

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosmosd/cosmosd/storage"
)

// GroupID identifies a consensus group; it is the physical partition id.
type GroupID uint64

// ReplicaID identifies one member of a group, unique within the group.
type ReplicaID uint64

// NodeID identifies a cosmosd node (host).
type NodeID uint64

// Replica is one member of a group.
type Replica struct {
	ReplicaID ReplicaID
	NodeID    NodeID
	// Learner replicas receive the log but do not vote and do not count
	// toward quorum.
	Learner bool
}

func (r Replica) String() string {
	s := fmt.Sprintf("r%d@n%d", r.ReplicaID, r.NodeID)
	if r.Learner {
		s += "(learner)"
	}
	return s
}

// ChangeType is the kind of one membership change.
type ChangeType int

// Membership changes. A ChangeReplicas call with several changes is applied
// atomically (joint consensus), so a move (add + remove) never passes through
// a configuration with fewer voters than either end.
const (
	AddLearner ChangeType = iota + 1
	PromoteLearner
	AddVoter
	RemoveReplica
)

func (c ChangeType) String() string {
	switch c {
	case AddLearner:
		return "add-learner"
	case PromoteLearner:
		return "promote-learner"
	case AddVoter:
		return "add-voter"
	case RemoveReplica:
		return "remove"
	}
	return fmt.Sprintf("change(%d)", int(c))
}

// ReplicaChange is one membership change of a group.
type ReplicaChange struct {
	Type    ChangeType
	Replica Replica
}

// EntryType distinguishes the entries passed to StateMachine.Apply.
type EntryType int

const (
	// EntryCommand carries a command proposed with Group.Propose.
	EntryCommand EntryType = iota
	// EntryMembership reports a membership change that just took effect;
	// Members holds the configuration after it. Data is empty.
	EntryMembership
	// EntryEmpty is a no-op (for example the entry a new leader appends);
	// the state machine only records that it was applied.
	EntryEmpty
)

// Entry is one committed log entry handed to the state machine.
type Entry struct {
	Index uint64
	Term  uint64
	Type  EntryType
	// Data is the command as given to Propose (EntryCommand only).
	Data []byte
	// Members is the configuration after a membership change
	// (EntryMembership only).
	Members []Replica
}

// Result is the outcome of applying one command. Value is returned to the
// proposer when the proposer is on this replica; Err is a deterministic
// rejection (every replica rejects the same command) and is returned from
// Propose as is.
type Result struct {
	Value any
	Err   error
}

// StateMachine is the replicated state of one group on one replica. The
// engine calls every method from the group's apply goroutine, so an
// implementation needs no locking against itself; it must synchronise with
// its own readers.
type StateMachine interface {
	// Apply applies committed entries in log order, writing into b, and
	// returns one Result per entry. The engine commits b together with the
	// applied index. An error stops the group: the replica cannot continue
	// without diverging.
	Apply(b *storage.Batch, entries []Entry) ([]Result, error)

	// SnapshotMeta describes the state as of the last applied entry: opaque
	// metadata that Restore understands, and the key spans of the shared
	// storage engine that hold the state. The engine reads the spans from a
	// storage snapshot taken in the same apply step, so data and metadata
	// agree.
	SnapshotMeta() (meta []byte, spans []storage.Span, err error)

	// SnapshotSpans returns the spans a snapshot with the given metadata
	// covers on this node. The engine clears them and ingests the snapshot's
	// data in their place before it calls Restore.
	SnapshotSpans(meta []byte) ([]storage.Span, error)

	// Restore completes the installation of a snapshot with metadata meta
	// whose last entry is index: the engine has ingested the snapshot's
	// spans and calls Restore with the batch that records the installation
	// as done (raft state, applied index). The state machine writes into b
	// whatever durable state of its own the snapshot implies beyond its
	// spans (a descriptor) and reloads its in-memory state. The engine
	// commits b, so that state and the raft state become durable in one
	// write: a crash leaves either the whole installation to finish again,
	// or none of it to do. If the commit fails the group stops.
	Restore(b *storage.Batch, meta []byte, index uint64) error
}

// PostApplier is implemented by state machines with work to do once the
// batch of an Apply is durable, such as starting the right half of a split
// (the pre-apply half of a split is in the batch; the post-apply half must
// not run before it is on disk, or a crash could leave a started group
// without its state). An engine may commit apply batches without waiting
// for the disk: after an Apply it asks PostApplyPending, and if there is
// work it calls PostApply on the group's apply goroutine once that batch
// and every earlier one are durable, possibly after further Applies (the
// state machine keeps what each of them left to do). Neither may block on
// the engine.
type PostApplier interface {
	PostApplyPending() bool
	PostApply()
}

// Status is a point-in-time view of a group on one replica.
type Status struct {
	ID        GroupID
	ReplicaID ReplicaID
	// Leader is the replica this replica believes leads, 0 if unknown.
	Leader     ReplicaID
	LeaderNode NodeID
	Term       uint64
	Commit     uint64
	Applied    uint64
	// LastIndex is the index of the last entry in this replica's log
	// (durable or being written); 0 when the engine has no log.
	LastIndex uint64
	Members   []Replica
	// Progress is the leader's view of each member's replication progress
	// (match index), empty on followers.
	Progress map[ReplicaID]uint64
	// Err is set once the replica stopped on a failure it cannot continue
	// past (an I/O error, a committed entry it cannot apply): it serves
	// nothing more, and its state may be behind or unusable, until it is
	// restarted or replaced.
	Err error
}

// IsLeader reports whether the replica reporting s leads its group.
func (s Status) IsLeader() bool { return s.Leader != 0 && s.Leader == s.ReplicaID }

// Group is one replica's handle on a consensus group. All methods are safe
// for concurrent use.
type Group interface {
	ID() GroupID

	// Propose replicates cmd and returns the Result of applying it on this
	// replica, once the entry is committed (durable in a quorum of logs)
	// and applied here. The batch that applied it need not be durable yet:
	// after a crash the replica applies the entry again from its log (the
	// applied index is written with the state machine's writes, so nothing
	// is applied twice). It fails with ErrNotLeader (wrapped in a
	// *NotLeaderError) when this replica cannot propose or the command
	// provably did not commit, with ErrAmbiguous when the replica lost track
	// of the command, and with the context's error when ctx ends first (also
	// wrapping ErrNoQuorum when the replica knows too few replicas are
	// reachable); in the last two cases the command may still commit later.
	// Callers that must not apply a command twice make it idempotent or
	// conditional.
	Propose(ctx context.Context, cmd []byte) (any, error)

	// ReadIndex returns once this replica has applied every entry committed
	// before the call began, so a read of local state after it is
	// linearizable. It fails like Propose.
	ReadIndex(ctx context.Context) error

	// ChangeReplicas applies changes atomically and returns once the new
	// configuration is committed and applied here.
	ChangeReplicas(ctx context.Context, changes []ReplicaChange) error

	// TransferLeadership asks the group to move leadership to target and
	// returns once target leads or ctx ends.
	TransferLeadership(ctx context.Context, target ReplicaID) error

	Status() Status
}

// GroupConfig starts one replica of a group.
type GroupConfig struct {
	ID        GroupID
	ReplicaID ReplicaID
	// Members is the initial configuration used when the group has no
	// persisted state on this node and bootstraps it (a new partition, or
	// the right half of a split). Leave it empty for a replica that joins an
	// existing group: it waits for the leader to send it the log or a
	// snapshot.
	Members      []Replica
	StateMachine StateMachine
	// Campaign makes this replica stand for election as soon as it starts,
	// instead of waiting an election timeout. Set it on one replica of a
	// new group (the preferred leader of a new partition, or the replica
	// that led the parent of a split) so the group serves at once.
	Campaign bool
}

// Engine hosts the groups of one node. Methods are safe for concurrent use.
type Engine interface {
	// StartGroup starts the local replica described by cfg, recovering its
	// persisted state. Starting a group that runs fails with
	// ErrGroupExists. An engine that keeps replica identities fails with
	// a *StaleReplicaError when it holds durable state of another replica
	// of the group on this node (the raft engine does; the single-replica
	// engine has one replica per group and no moves).
	StartGroup(ctx context.Context, cfg GroupConfig) (Group, error)
	// Group returns a running group.
	Group(id GroupID) (Group, bool)
	// StopGroup stops a running replica and keeps its persisted state.
	StopGroup(id GroupID) error
	// DestroyGroup stops the replica (if running) and deletes the engine's
	// persisted state of the group; the caller deletes the state machine's.
	DestroyGroup(id GroupID) error
	// WriteInitialState writes into b the engine's state of a new local
	// replica self of group id with the given initial members, as
	// StartGroup's bootstrap would, but without calling a state machine:
	// the caller writes the state machine's initial state into the same
	// batch (a split writes the right half's descriptor and raft state in
	// the split's own apply batch, so a crash can never leave one without
	// the other). b must be an indexed batch. If the group already has
	// state on this node it writes nothing and returns false. After b
	// commits, StartGroup (with empty Members) resumes the group.
	WriteInitialState(b *storage.Batch, id GroupID, self ReplicaID, members []Replica) (bool, error)
	// Close stops every group and the transport. Safe to call twice.
	Close() error
}

// Sentinel errors. Match them with errors.Is.
var (
	ErrNotLeader     = errors.New("consensus: not leader")
	ErrStopped       = errors.New("consensus: group stopped")
	ErrGroupExists   = errors.New("consensus: group already running")
	ErrGroupNotFound = errors.New("consensus: group not found")
	// ErrNoQuorum reports that a request could not complete because too few
	// replicas of the group are reachable.
	ErrNoQuorum = errors.New("consensus: no quorum")
	// ErrAmbiguous reports a proposal whose outcome the replica could not
	// learn: the command may or may not have been applied (for example, the
	// proposing replica lost leadership and then caught up from a snapshot
	// that covers the command's log position). Treat it like a timeout: a
	// retry must be safe to apply twice.
	ErrAmbiguous = errors.New("consensus: outcome unknown")
)

// StaleReplicaError is returned by StartGroup when this node holds
// durable state of replica Persisted of the group and was asked to start
// replica Asked. A Persisted below Asked is an earlier incarnation: it was
// removed from the group (or never finished joining) while this node was
// away, and the node has since been added back under a new id; its state
// can be destroyed (Engine.DestroyGroup) before the new replica starts.
type StaleReplicaError struct {
	Group            GroupID
	Persisted, Asked ReplicaID
}

func (e *StaleReplicaError) Error() string {
	return fmt.Sprintf("group %d: persisted replica r%d, asked to start r%d", e.Group, e.Persisted, e.Asked)
}

// NotLeaderError is returned by a replica that is not the leader; Leader is
// its best guess of who is (zero when unknown).
type NotLeaderError struct {
	Group      GroupID
	Leader     ReplicaID
	LeaderNode NodeID
}

func (e *NotLeaderError) Error() string {
	if e.LeaderNode == 0 {
		return fmt.Sprintf("group %d: not leader, leader unknown", e.Group)
	}
	return fmt.Sprintf("group %d: not leader, leader is r%d on node %d", e.Group, e.Leader, e.LeaderNode)
}

// Unwrap lets errors.Is(err, ErrNotLeader) match.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }
