// Package cluster is cosmosd's cluster metadata in etcd: node registration,
// the catalog of keyspaces and tables, the routing copy of every table's
// ring of physical partitions, id allocation, and the watched in-memory
// snapshot of all of it that every node serves requests from.
//
// Layout under the prefix (default "/cosmosd/"):
//
//	nodes/<id>                     NodeInfo (JSON), under the node's lease
//	catalog/keyspaces/<ks>         schema.Keyspace (JSON)
//	catalog/tables/<ks>/<table>    schema.Table (JSON)
//	catalog/version                schema version (UUID), changed by every DDL
//	ring/<table id>/<partition id> kvpb.Descriptor (protobuf), ids zero-padded
//	ids/<kind>                     id counters
//
// Consistency. Every change is one etcd transaction, so a DDL statement and
// the ring entries it creates appear together. Meta watches the whole prefix
// and publishes a new immutable State per etcd revision, so a reader sees
// either all or none of a transaction, and in revision order. A node that
// was down loads the current state on start and then follows the watch.
package cluster
