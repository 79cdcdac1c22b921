// Package router sends key-value requests to the replica that can serve
// them, wherever it runs.
//
// Request path: the CQL layer computes a partition key's token; the router
// finds the physical partition holding it in the table's ring (the watched
// routing copy in cluster.Meta), picks the replica to ask (the leader for
// writes and linearizable reads, the local replica when there is one for
// reads at ONE), and calls it in process or over the internal gRPC service.
// Reads and writes for another node travel on one long-lived Forward
// stream per node, batched (forward.go); the other internal calls (admin,
// membership, splits) are unary.
//
// Retries. A request is retried transparently when the answer proves it was
// not applied: NOT_LEADER (try the named leader), RANGE_MISMATCH (the ring
// changed under a split or move: wait for the newer routing copy), NOT_FOUND
// (the replica moved away), or a node that cannot be reached before the
// request was sent: its connection refuses, or is not ready within
// ConnectWait (a vanished host, whose address swallows SYNs, would
// otherwise hold the request until its deadline), or a write still queued
// on its Forward stream when the stream broke. Once a write has been handed
// to the stream, any failure of the call is ambiguous, even gRPC's
// Unavailable (a connection that breaks mid-call reports it too). A write whose outcome is unknown (the leader died after
// receiving it) is never retried here: the client gets a timeout, as
// Cassandra gives it, because some writes (counters, list appends) are not
// idempotent.
package router
