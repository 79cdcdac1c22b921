// Package routertest runs one node's data path in process, for the tests
// of the packages above the partition store (router, admin, the CQL
// executor's exectest): real Pebble on an in-memory filesystem, the
// single-replica consensus engine (consensus/local), a partition.Store on
// them, and, when a test asks, the node's internal gRPC service on a
// loopback port. Nothing is mocked: a row a test reads back was written by
// the partition state machine into Pebble.
//
// Model. A Node is what daemon/node.go starts for one node, minus etcd,
// raft and the CQL and admin listeners. The local engine runs one replica
// per group, so a partition has one replica, on the node that Bootstraps
// it, whatever replicas its routing copy lists: Bootstrap starts that
// replica (the first one listed or not) and waits until it leads.
// Reconcile does what the daemon's reconcile loop does for a metadata
// state: it starts the replicas the rings list on the node and removes
// those of dropped tables, once per metadata revision.
//
// Serving. Node.Serve serves the internal service (router.NewServer of
// the node's store) on 127.0.0.1:0; ServeInternal and ServeGRPC serve any
// other implementation (a scripted peer, the admin service) the same way,
// and RefusedAddr is an address nothing listens on. Ports are never fixed.
//
// Lifecycle. Start registers Node.Close with the test's Cleanup, and the
// Serve functions register the server's Stop: cleanups run last-in
// first-out, so a server stops before the store it serves, and a router a
// test builds after the node closes before both. Open and Close are for a
// caller that manages its own lifetime (exectest's Cluster). Every
// goroutine the package starts ends by then.
//
// Imports. The package does not import package router, so that router's
// own (internal) tests can use it; callers pass router.NewServer's result
// to Serve.
package routertest
