// Package router sends key-value requests to the replica that can serve
// them, wherever it runs.
//
// Request path: the CQL layer computes a partition key's token; the router
// finds the physical partition holding it in the table's ring (the watched
// routing copy in cluster.Meta), picks the replica to ask (the leader for
// writes and linearizable reads, the local replica when there is one for
// reads at ONE), and calls it in process or over the internal gRPC service.
//
// Pieces, one file each:
//
//   - client.go: Router, the client side. Read, Write, ReplicaStatus and
//     the administrative calls (ChangeReplicas, TransferLeader, Split,
//     PartitionDetail) resolve their Target to a partition descriptor and
//     hand one attempt per node to the retry loop.
//   - retry.go: the retry loop (do): the order in which replicas are tried
//     (candidates: the cached leader hint, then this node, then the rest
//     shuffled, suspects last), what each answer means (classify), and the
//     error a request ends with.
//   - node.go: one call path. Every attempt picks a node, gets its
//     nodeClient (Router.client) and calls it: localNode runs the request
//     on this node's partition store in process, remoteNode sends it over
//     the pooled connection. Both report a partition's refusal as a
//     *partition.Error and whether the request may have run (sent), so
//     the retry loop never asks which kind it talked to.
//   - pool.go: the connections to other nodes, one per node, reused by
//     every request until the node registers another address or the
//     router closes; the keepalive and reconnect parameters.
//   - forward.go: the Forward stream. Reads and writes for another node
//     travel on one long-lived stream per node, batched; the other
//     internal calls (admin, membership, splits) are unary.
//   - liveness.go: which nodes are suspect (tried last): the prober's pings
//     on the pooled connections and Config.Liveness (raft leader traffic).
//   - server.go: Server, the internal gRPC service that serves the
//     requests other routers send here, through the same localNode.
//
// Retries. A request is retried transparently when the answer proves it was
// not applied: NOT_LEADER (try the named leader), RANGE_MISMATCH (the ring
// changed under a split or move: wait for the newer routing copy), NOT_FOUND
// (the replica moved away), or a node that cannot be reached before the
// request was sent: it is not registered and no connection is open to it,
// its connection refuses, or is not ready within ConnectWait (a vanished
// host, whose address swallows SYNs, would otherwise hold the request until
// its deadline), or a write still queued on its Forward stream when the
// stream broke. Once a write has been handed to the stream, any failure of
// the call is ambiguous, even gRPC's Unavailable (a connection that breaks
// mid-call reports it too). A write whose outcome is unknown (the leader
// died after receiving it) is never retried here: the client gets a
// timeout, as Cassandra gives it, because some writes (counters, list
// appends) are not idempotent. Reads are idempotent and go to another
// replica after any failure. When every replica that answered says its
// group lacks a quorum (UNAVAILABLE) the request fails at once instead of
// waiting out its time.
//
// Invariants.
//   - A request is sent to one node at a time. A write that may have run
//     is never sent again: it goes elsewhere only when it was not sent
//     (sent=false promises it did not run) or when the answer proves it
//     was not applied (NOT_LEADER, RANGE_MISMATCH, NOT_FOUND, UNAVAILABLE).
//   - The leader hint of a partition names the node that last served it as
//     leader, or the leader a replica named; a hint naming a node that did
//     not answer is dropped, so the next request asks another replica.
//   - This node is never suspect and never waits on itself: localNode has
//     no connection, no readiness wait and no silence watch.
//   - Server returns a partition's refusal inside the response, never as a
//     gRPC status: a status means the transport failed.
//
// Lifecycle. New starts the prober (unless disabled); Close stops it, ends
// the Forward streams and closes the connections. Requests still running
// fail; later ones to other nodes are not sent (the pool refuses new
// connections), while this node's store still serves in process.
package router
