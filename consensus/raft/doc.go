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
//     committing all their writes without waiting for the disk
//     (scheduler.go);
//   - one syncer goroutine that waits for the WAL syncs the cycles asked
//     for and then releases what depended on them (syncer.go);
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
// Invariants: truncated <= applied <= commit <= last index, in memory and
// on disk after any crash. The apply state is written in the same batch as
// the state machine's writes of the entries it covers, so after a crash a
// group resumes exactly after the last applied entry that reached disk.
//
// # Ready handling
//
// RawNodes run with raft's AsyncStorageWrites: a Ready is never
// acknowledged with Advance; it carries a MsgStorageAppend (entries, hard
// state, snapshot) and a MsgStorageApply (committed entries) whose
// Responses go back into raft once the write is done. A cycle, for every
// group with work: step the inbox (messages from peers, and responses of
// local writes the syncer released), take a Ready, build the raft batch of
// its MsgStorageAppend and the apply batch of its MsgStorageApply (raft
// hands out only entries that are already durable in the local log), and
// send its network messages at once (raft keeps back the ones that attest
// durable state: a follower's append acknowledgement, votes, the leader's
// own acknowledgement; they are the MsgStorageAppend's Responses). Then, on
// the scheduler goroutine: commit every raft batch, then every apply batch,
// as one Pebble batch, requesting a WAL sync without waiting for it
// (storage.Batch.CommitNoSyncWait) when anything waits for durability;
// answer the proposals whose entries were applied; step the apply
// responses; hand the held-back responses to the syncer. The next cycle starts at once: a group appends, replicates and
// applies while its earlier appends are being synced, and one fsync
// serves every group and cycle that asked since the previous one.
//
// # Durability
//
// Why answering before the apply batch is synced loses nothing:
//
//  1. Pebble's WAL is one ordered log: after a crash, a prefix of the
//     committed batches survives. Every batch is committed on the
//     scheduler goroutine in cycle order, raft batches before apply
//     batches.
//  2. A message that attests durable state (MsgAppResp, MsgVoteResp,
//     MsgPreVoteResp, MsgStorageAppendResp) is released only after a
//     sync that was requested after the write it attests was committed
//     (syncer.go). So an entry counts toward a quorum only where it is on
//     disk, and raft applies only entries durable in the local log.
//  3. A proposal is answered once its entry is committed (durable in a
//     quorum of logs, by 2) and applied here. If this node then crashes
//     and loses the apply (it waits for the next sync), the entry is still
//     in its log or in a quorum of others, and is applied again: the
//     applied index is in the same batch as the state machine's writes,
//     so each entry is applied exactly once in the state that survives.
//  4. By 1 and 2, an apply batch on disk implies its entries and the hard
//     state holding its commit index are on disk (they are earlier in the
//     WAL): applied <= commit <= last after any crash.
//  5. Work that must not run before an apply is durable (starting a
//     split's right half, consensus.PostApplier) waits for a sync, as in 2.
//
// TestCrashBetweenLogSyncAndApplySync crashes leaders (and whole
// clusters) right after acknowledgements on a disk that keeps only synced
// writes, checks that acknowledged applies were lost by the crash, and
// that recovery restores each exactly once; TestCrashRecovery does so at
// random points under load.
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
// (ReadOnlySafe); the replica then waits until it has applied the returned
// index. A leader hands raft no read index request, its own or forwarded,
// before it has committed an entry of its term: raft waits for that itself
// except in a group of one voter, whose commit index after a crash can lag
// writes it acknowledged (etcd-io/raft#105; readHold in requests.go).
// With Config.LeaseReads a leader that holds a lease answers from its
// commit index without the round: the lease rests on CheckQuorum followers
// refusing votes for an election timeout after they step the leader's
// message, echoed stamps of the leader's monotonic clock, and bounded
// clock rates; it is void during a leadership transfer and until the
// leader commits in its term (lease.go has the argument). Concurrent
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
// the ticker, the scheduler and then the syncer (after the syncs it waits
// for); it is safe to call twice and does not close the storage engine.
package raft
