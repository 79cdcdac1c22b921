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
// Concurrency. The consensus engine calls Apply, SnapshotMeta and Restore
// from the group's apply goroutine. Readers run concurrently on any
// goroutine; they read the descriptor through an atomic pointer and the rows
// through Pebble's own snapshot isolation.
package partition
