// Package cluster is cosmosd's cluster metadata: node registration and
// member records, the catalog of keyspaces and tables, the routing copy of
// every table's ring of physical partitions, id allocation, the
// controller's operations and election, roles and permissions, and the
// watched in-memory snapshot of all of it (State) that every node serves
// requests from.
//
// The pieces:
//
//	Meta          follows the store and publishes immutable State snapshots;
//	              CatchUp, WaitRevision (read your own writes), UpdateMember,
//	              AllocateID, Operations
//	Catalog       DDL and ring changes, one transaction each
//	Roles         roles and permissions, one transaction per change
//	Operations    the controller's operation records and its election
//	Registration  a node's leased registration, renewed and restored
//
// The store. Everything is kept in a metakv.Store, the seam to etcd
// (metakv.NewEtcd, metakv.DialEtcd) or to its in-memory twin (metakv.NewMem,
// which passes the same conformance suite), so this package runs in unit
// tests without etcd. Every key is built in keys.go, whose comment is the
// layout table; nothing outside this package spells a metadata key or holds
// an etcd client. The embedded etcd server of single-host clusters and
// tests lives in cluster/embedded.
//
// Consistency. Every change is one transaction, so a DDL statement and the
// ring entries it creates appear together (a table too large for one
// transaction is staged under a leased pending record that hides its ring
// until it is published: createtable.go). Meta watches the whole namespace
// and publishes a new immutable State per revision, so a reader sees either
// all or none of a transaction, and in revision order. A node that was down
// loads the current state on start and then follows the watch; a watch that
// fails (history compacted, store lost) makes Meta read everything again.
package cluster
