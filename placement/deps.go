package placement

import (
	"context"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// The controller's dependencies are the small interfaces below, declared
// here where they are used. Production passes *cluster.Meta,
// *cluster.Catalog and *router.Router; tests pass a cluster.Meta and
// Catalog on metakv.Mem and simulated nodes, so that a round, an election
// or a whole move runs in process in milliseconds.

// MetaView is the controller's view of the cluster metadata
// (*cluster.Meta). Safe for concurrent use.
type MetaView interface {
	// State returns the latest published snapshot. It follows the store
	// through a watch, so it may lag a write that just completed by a
	// round trip; the controller re-reads it instead of assuming its own
	// writes are visible.
	State() *cluster.State
	// CatchUp waits until State shows every write that completed before
	// the call.
	CatchUp(ctx context.Context) error
	// UpdateMember changes a member record under compare-and-swap
	// (creating it when absent); mutate returning false leaves it.
	UpdateMember(ctx context.Context, id uint64, mutate func(m *cluster.Member) bool) error
	// Operations returns the store of operations and the controller's
	// election.
	Operations() *cluster.Operations
}

// CatalogWriter writes the routing copies of the rings and allocates ids
// (*cluster.Catalog). Every write is a compare-and-swap that fails with
// cluster.ErrConflict when the copy changed meanwhile. Safe for concurrent
// use.
type CatalogWriter interface {
	// SyncPartition replaces the routing copy old by d (old nil: d must
	// not exist yet).
	SyncPartition(ctx context.Context, table uint64, old, d *kvpb.Descriptor) error
	// UpdatePartitions replaces olds by news in one transaction (a split's
	// two halves).
	UpdatePartitions(ctx context.Context, table uint64, olds, news []*kvpb.Descriptor) error
	// CollectOrphanRings deletes the rings of tables whose creation was
	// abandoned and returns how many it deleted.
	CollectOrphanRings(ctx context.Context) (int, error)
	// AllocateID allocates n ids of a kind ("op", "partition") and
	// returns the first.
	AllocateID(ctx context.Context, kind string, n uint64) (uint64, error)
}

// NodeClient is what the controller asks of the nodes (*router.Router).
// Calls on a partition go to its leader; ReplicaStatus goes to one node.
// An error means the call may or may not have happened: the controller
// observes the groups again before its next step. Safe for concurrent use.
type NodeClient interface {
	// ReplicaStatus asks node about its replicas (req.PartitionIds, all
	// when empty; with stats when req.Stats).
	ReplicaStatus(ctx context.Context, node consensus.NodeID, req *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error)
	// ChangeReplicas changes a partition's membership and returns the
	// descriptor it committed.
	ChangeReplicas(ctx context.Context, partition uint64, changes []*kvpb.ReplicaChange) (*kvpb.Descriptor, error)
	// TransferLeader hands a partition's leadership to target.
	TransferLeader(ctx context.Context, partition uint64, target consensus.NodeID) error
	// Split splits a partition through its log and returns both halves.
	Split(ctx context.Context, req *kvpb.SplitRequest) (left, right *kvpb.Descriptor, err error)
	// PartitionDetail inspects a partition: its status and split points.
	PartitionDetail(ctx context.Context, partition uint64, top int) (*kvpb.PartitionDetailResponse, error)
}
