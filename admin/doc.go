// Package admin implements the admin gRPC API (proto/admin) that cosmosctl
// talks to. Every node serves it and answers for the whole cluster: it reads
// the metadata from its watched copy of etcd and asks each node for the
// state of its replicas (leadership, applied index, size) over the internal
// service, tolerating nodes that do not answer.
package admin
