package admin

import (
	"context"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/schema"
)

// The service's dependencies are the small interfaces below, declared here
// where they are used. Production passes *cluster.Meta, *cluster.Catalog and
// *router.Router; the tests pass the same types on metakv.Mem and nodes on
// loopback, so every RPC runs in process without etcd.

// MetaView is the service's view of the cluster metadata (*cluster.Meta).
// Safe for concurrent use.
type MetaView interface {
	// State returns the latest published snapshot. It follows the store
	// through a watch, so it may lag a write that just completed: a
	// request reads it once and answers from that one snapshot.
	State() *cluster.State
	// UpdateMember changes a member record under compare-and-swap,
	// creating it when absent; mutate may run several times and
	// returning false leaves the record as it is. An error means the
	// store could not be read or written; the record may or may not have
	// changed.
	UpdateMember(ctx context.Context, id uint64, mutate func(m *cluster.Member) bool) error
	// Operations returns the store of the controller's operations, where
	// the service submits the ones operators request.
	Operations() *cluster.Operations
}

// CatalogWriter changes table and keyspace options (*cluster.Catalog). Each
// call is a compare-and-swap retried on conflicts; an error wrapping
// cluster.ErrKeyspaceNotFound or cluster.ErrTableNotFound means the
// object does not exist, any other that the store failed (the change may
// or may not have been made). Safe for concurrent use.
type CatalogWriter interface {
	AlterKeyspace(ctx context.Context, name string, mutate func(*schema.Keyspace) error) error
	AlterTable(ctx context.Context, keyspace, name string, mutate func(*schema.Table) error) (*schema.Table, error)
}

// NodeClient asks the nodes about their replicas (*router.Router). Both
// calls only read; an error means the node or partition did not answer
// before ctx ended. Safe for concurrent use.
type NodeClient interface {
	// ReplicaStatus asks one node about its replicas (with their sizes
	// when req.Stats).
	ReplicaStatus(ctx context.Context, node consensus.NodeID, req *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error)
	// PartitionDetail inspects a partition on one of its replicas (the
	// leader when it answers) and lists its top logical partitions.
	PartitionDetail(ctx context.Context, partition uint64, top int) (*kvpb.PartitionDetailResponse, error)
}
