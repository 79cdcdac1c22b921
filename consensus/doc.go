// Package consensus defines what cosmosd needs from a replication engine and
// nothing about how one works.
//
// Model. A physical partition is replicated by a Group: an ordered log of
// commands that every replica applies to its StateMachine in the same order.
// An Engine hosts all the groups of one node and owns their transport and
// their durable consensus state. Two engines implement these interfaces:
// consensus/raft (multi-raft on go.etcd.io/raft/v3, the default) and
// consensus/local (one replica, no network, for development and unit tests).
//
// Contract with the state machine. The engine calls StateMachine.Apply from
// one goroutine per group, in log order, never concurrently for one group.
// Apply writes its effects into the storage batch it is given; the engine
// commits that batch atomically with its own bookkeeping (applied index), so
// after a crash a group resumes exactly after the last applied entry that
// reached disk. Apply must be deterministic: every replica computes the same
// writes and results from the same entries. A command may be *rejected*
// deterministically (Result.Err); an error returned by Apply itself means the
// replica cannot continue, and the engine stops the group loudly rather than
// let replicas diverge.
//
// Identity. GroupID is the physical partition id. Replicas of a group are
// numbered by ReplicaID, unique within the group for its whole life, so that a
// replica removed and later re-added on the same node is a new member and a
// stale copy can never vote as the old one. NodeID names the host.
package consensus
