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
// Several Nodes can run in one process (demo clusters, tests): a Node has
// no global state.
package daemon
