// Package partition is the replicated state of physical partitions: the
// state machine every replica of a partition applies, the read path that
// serves rows from a replica's storage, and the node's store of replicas.
//
// Model. A physical partition is a token range [start, end] of one table.
// Its replicas share the node's single Pebble store (storage.Engine); the
// partition's rows are the span storage.RowsSpan(table, start, end) and its
// logical-partition stats the matching storage.StatsSpan. The descriptor
// (range, replicas, generation) is part of the replicated state, persisted
// under storage.ReplicaStateKey in the same batch as the entry that changed
// it, so a replica's descriptor always matches its applied index.
//
// Apply is deterministic. A write command carries everything that must agree
// on every replica: the coordinator's clock (for TTL expiry and gc), the
// timestamps, and the column types that collection merges need. A command
// is rejected deterministically (a *kvpb.Error in the Result) when a key is
// outside the range, when a logical partition would exceed its size limit,
// or when an operation is invalid for the stored value; a rejected command
// leaves no trace. A write is staged in memory and reaches the batch only
// once it is accepted, which is what makes a rejection whole.
//
// Lightweight transactions evaluate their conditions at apply time, so they
// are linearizable without Paxos: the log orders them.
//
// Splits. A split is a command of the parent's log and takes effect in two
// phases, split by durability:
//
//  1. In the apply batch, atomically with the applied index: the parent's
//     descriptor shrinks to the left half, the right half's descriptor goes
//     under its own ReplicaStateKey, and Hooks.InitSplit writes the right
//     half's initial consensus state (consensus.Engine.WriteInitialState).
//     No row moves: the rows are already in the right half's span of the
//     shared store, and its descriptor makes them its own. Besides the
//     parent's descriptor in memory (see below), this phase touches only
//     the batch, because the batch may still be lost by a crash (the local
//     engine then forgets the split; raft applies it again from its log):
//     an effect outside it would outlive the split or happen twice. InitSplit writes nothing when the right half already has a
//     replica here (one that joined from a snapshot before this replica
//     applied the split): that state is newer.
//  2. Once the batch is durable (consensus.PostApplier: the engine calls
//     PostApply after the batch's sync), Hooks.OnSplit starts the right
//     half's replica, in the background since the apply goroutine must not
//     wait on the engine. Started earlier, a right half could take writes
//     and then lose its descriptor and consensus state with the batch,
//     while the parent, back to its whole range, served those keys without
//     them. A crash between the phases needs no repair: Store.Recover finds
//     the right half's descriptor and starts it, which redoes phase 2 from
//     durable state.
//
// CockroachDB splits the same way. The batch that applies its split
// trigger carries both descriptors; splitPreApply adds to it the right-hand
// range's raft state (hard state, replica id) or, when a newer replica of
// the right-hand range is already on the store, leaves that replica's
// state alone and drops what the split would have given it. splitPostApply,
// once the batch is committed, shrinks the left replica's descriptor in
// memory, registers the right-hand replica, initializes it from disk and
// wakes its raft group. One difference: here the parent's descriptor in
// memory shrinks during apply (setDescriptor), before the batch is durable,
// as every command's effects on the state machine do. Nothing stale can be
// served meanwhile: a request for the right half's keys is refused with
// RANGE_MISMATCH and retried, the log has already decided the split (raft
// applies only committed entries), and a local group whose batch fails
// stops and serves nothing.
//
// TestSplitSurvivesCrash crashes a node at each point of the two phases.
//
// Concurrency. The consensus engine calls Apply, SnapshotMeta and Restore
// from the group's apply goroutine. Readers run concurrently on any
// goroutine; they read the descriptor through an atomic pointer and the rows
// through Pebble's own snapshot isolation.
package partition
