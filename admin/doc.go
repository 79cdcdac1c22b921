// Package admin implements the admin gRPC API (proto/admin) that cosmosctl
// talks to. Every node serves it and answers for the whole cluster: it reads
// the metadata from its watched copy of etcd and asks each node for the
// state of its replicas (leadership, applied index, size) over the internal
// service, tolerating nodes that do not answer.
//
// Dependencies (deps.go): MetaView (*cluster.Meta), CatalogWriter
// (*cluster.Catalog) and NodeClient (*router.Router). The service keeps no
// state of its own: each request reads one metadata snapshot, and the
// changes it makes go to the store (member records, catalog options) or
// are submitted there as placement operations for the controller to run.
//
// Errors are gRPC statuses cosmosctl shows as they are: InvalidArgument for
// input that can never work, NotFound for an unknown node, table,
// partition or operation, FailedPrecondition for a request the cluster's
// present state refuses (a drain that could not finish, a move --key that
// would move nothing, a table at max_partitions_per_table), Unavailable
// when the metadata store or the nodes do not answer (retrying may work).
package admin
