// Package daemon wires a cosmosd node together: configuration, the
// embedded etcd (when no endpoints are given), storage, the consensus
// engine, the partition store and its reconciliation with the rings, the
// router, the CQL server, the admin and internal gRPC services, the HTTP
// endpoints and the node's registration in etcd. Nothing imports daemon.
//
// Lifecycle. Start brings the layers up bottom to top and registers the
// node last, once it serves; Close takes them down top to bottom: stop
// accepting CQL and drain in-flight requests, deregister, stop the gRPC
// services, stop the replicas and the consensus engine, and close Pebble
// last, so every acknowledged write is on disk before the process exits.
// Close is bounded by shutdown_timeout plus a small margin whatever etcd
// and the peers do: every goroutine the node starts ends when its context
// is canceled, and a step that still does not finish is abandoned and
// reported (shutdown.go).
//
// Identity. The node id is bound to the store (nodeid.go): a node whose
// store was lost comes back under a new id, never as its old raft voters
// with empty state.
//
// Several Nodes can run in one process (demo clusters, tests): a Node has
// no global state.
package daemon
