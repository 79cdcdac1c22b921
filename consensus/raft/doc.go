// Package raft is cosmosd's multi-raft consensus engine: every physical
// partition is a raft group (normally 4 replicas on 4 nodes, quorum 3) run
// by go.etcd.io/raft/v3 RawNodes, many groups per node. It implements the
// interfaces of package consensus.
//
// # Model
//
// An Engine hosts the local replicas of many groups. It owns:
//   - one scheduler goroutine that runs cycles over the groups that have
//     work, preparing them in parallel on Config.Workers goroutines and
//     committing all their writes with one fsync (scheduler.go);
//   - one ticker for all groups;
//   - one transport: a gRPC stream per peer node carrying batched messages
//     of all groups, and one stream per snapshot (grpc.go); tests replace it
//     through TestingKnobs.Transport.
//
// No goroutine exists per group. A group is a RawNode plus a logStore (the
// raft.Storage over Pebble, with an entry cache) and the state machine;
// only the goroutine processing it in the current cycle touches them.
//
// # Durable state
//
// All in the node's single Pebble store, under the group-local keys of
// storage/keys.go:
//   - RaftLogKey(g, i): raft entries (raftpb.Entry);
//   - RaftHardStateKey(g): term, vote, commit;
//   - RaftApplyStateKey(g): applied index and term, truncated index and
//     term, the configuration (raftpb.ConfState) as of the applied index and
//     the node of every member, and this replica's id (transportpb.ApplyState);
//   - RaftEngineKey(g, 0x04): an in-progress snapshot installation.
//
// Invariants: truncated <= applied <= commit <= last index. The apply
// state is written in the same batch as the state machine's writes of the
// entries it covers, so after a crash a group resumes exactly after the
// last applied entry that reached disk. In a cycle the raft batches (log,
// hard state) are committed before the apply batches, so the applied index
// on disk never passes the persisted commit index.
//
// # Ready handling
//
// Per cycle and group, in etcd raft's order: persist hard state and
// entries; send messages; apply committed entries; Advance. Messages that
// acknowledge local state (append and vote responses) leave only after the
// cycle's fsync; the others, notably a leader's appends, leave while the
// leader writes its own copy (raft thesis §10.2.1, as etcd raft's
// asynchronous-storage mode does): the leader counts itself toward a quorum
// only at Advance, after its fsync. Committed entries are applied into the
// same cycle's apply batch (before the fsync), and proposals are answered
// after the fsync, so a result is never returned for a command that is not
// durable.
//
// # Proposals and failures
//
// Only the leader proposes (raft's proposal forwarding is off): a follower
// answers *consensus.NotLeaderError naming the leader, and a replica that
// knows no leader holds the request until one is elected or the context
// ends. Each proposal carries an id in its entry (stripped before the state
// machine sees it); the leader learns the proposal's index and term from
// the Ready that appends it. When an entry is applied at that index it is
// either the proposal (success, with the state machine's Result) or another
// entry (the proposal was overwritten by a new leader: NotLeaderError). A
// proposal whose index a snapshot covers fails with consensus.ErrAmbiguous.
// With CheckQuorum a leader that cannot reach a quorum steps down within an
// election timeout. A replica that knows its group lacks a quorum (see
// quorumLost in requests.go) refuses new requests at once with
// consensus.ErrNoQuorum, and fails the commands it has in flight with
// consensus.ErrAmbiguous after twice that window (they may still commit if
// the replicas return); a group that stops fails them with ErrAmbiguous
// too, and only what never reached raft with ErrStopped. Requests that
// cannot complete otherwise fail when their context ends; the error names
// the group. Nothing ever reports success for an uncommitted command, and
// nothing that may commit is reported as not attempted.
//
// # Untrusted input
//
// Inbound messages are decoded and checked field by field (codec.go), then
// admitted against the group's state (inbound.go): the sender must be a
// member of the configuration and live on the node the batch claims; a
// heartbeat's commit is clamped to the local log; an acknowledgement of
// entries the leader does not have, and a leadership-transfer or
// read-index answer from anyone but the current leader, are dropped. If
// raft still panics on a message, the replica rebuilds its RawNode from its
// durable state (a restart of that replica, which raft tolerates) instead
// of stopping. What remains possible without authenticated transport is
// impersonating a member, which mutual TLS between nodes removes.
//
// # Reads
//
// ReadIndex is served by any replica: raft forwards a follower's request to
// the leader, which confirms its leadership with a heartbeat round
// (ReadOnlySafe) or, with Config.LeaseReads, relies on its lease
// (ReadOnlyLeaseBased, safe given CheckQuorum and bounded clock drift); the
// replica then waits until it has applied the returned index. Concurrent
// reads of a group share one raft read request per cycle. Reads that see
// no answer within an election timeout, or when the leader changes, are
// asked again (reads are idempotent). ONE/LOCAL_ONE reads need no call at
// all: they read the local state machine.
//
// # Membership
//
// Replica ids are raft ids; the node of each replica travels in the
// ConfChangeV2 context and is persisted with the apply state and sent with
// snapshots. A move is: StartGroup on the target node with empty Members
// (no lazy creation: messages for groups not started locally are dropped),
// ChangeReplicas(AddLearner) on the leader, the leader streams a snapshot,
// then ChangeReplicas(PromoteLearner + RemoveReplica), one joint change that
// raft leaves automatically; ChangeReplicas returns once the final
// configuration is applied. Promoting a learner that is not yet replicating
// from the log is refused. Leadership moves with TransferLeadership.
//
// # Snapshots and truncation
//
// See snapshot.go for the streaming and crash-safe installation of
// snapshots. After applying, a replica truncates its log when it holds more
// than LogTruncateEntries applied entries or about LogTruncateBytes, keeping
// LogRetainEntries (and, on a leader, what recently active followers still
// need, unless the log grew past 4*LogTruncateBytes, and always what a
// snapshot in flight needs). Followers further behind receive a snapshot.
//
// # Lifecycle
//
// New starts the engine; RegisterService registers its transport on the
// daemon's gRPC server; the daemon restarts the groups PersistedGroups lists
// (StartGroup with empty Members) and starts new ones. Close stops every
// group (pending requests fail with consensus.ErrStopped), the transport,
// the ticker and the scheduler; it is safe to call twice and does not
// close the storage engine.
package raft
