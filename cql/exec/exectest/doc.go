// Package exectest runs the executor's ports in process, for tests that
// want real behaviour in milliseconds: a real cluster.Meta, Catalog and
// Roles over metakv.NewMem (no etcd), and a KV port that serves every
// request from real partition replicas (a routertest.Node: partition.Store
// on the single-replica consensus engine, Pebble on an in-memory
// filesystem).
// Nothing is mocked: the rows a test reads were written by the state
// machine, expired by its TTL rules and filtered by its read path.
//
// Model. A Cluster is one node (id 1) that holds a replica of every
// partition. The KV port does what the router does for a request to a
// partition on this node: it finds the partition in the Meta's routing
// copy (by token, or by id), fills in the request's partition id,
// generation and table id, and calls the replica. Before a request it
// brings the replicas in line with the rings (routertest.Node.Reconcile,
// as the daemon's reconcile loop does), so the replicas of a table exist
// as soon as CREATE TABLE returns. The port records every request and its
// outcome, for tests that check what the executor sent (Format prints one
// in a stable, readable form), and can be told to fail requests with a
// partition error code, as a node would.
//
// The Placer places tables evenly on node 1, and the Clock is a manual
// clock for the executor's Now hook (TTL, default timestamps).
//
// Lifecycle. New registers Close with the test's Cleanup; every goroutine
// (Meta's watch, Mem's, the consensus engine's) ends there.
//
// This package does not import package exec, so exec's own tests can use
// it too.
package exectest
