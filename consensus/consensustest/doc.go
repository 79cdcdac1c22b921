// Package consensustest holds what every consensus engine is tested with: a
// small deterministic key-value state machine (KV) and a conformance suite
// (RunEngineConformance) that consensus/local and consensus/raft both pass.
//
// KV keeps its data in the shared storage engine under the row span of
// "table" = group id (storage.RowsSpan) and its applied index under the
// group's storage.ReplicaStateKey, written in the batch the engine commits
// with its own apply state. It checks the engine's contract as it goes:
// entries must arrive in log order without gaps or repeats across restarts
// and snapshots; a violation makes Apply fail, which stops the group.
//
// Conformance. RunEngineConformance takes a Harness that starts one node's
// engine on its store and runs every test on a fresh Cluster of
// Harness.Replicas nodes, one replica per node (replica id = node id). The
// Cluster type is exported for engine-specific tests that need more:
// crashing and restarting nodes, adding a node, proposing through the
// leader.
package consensustest
