package exec

import (
	"context"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cluster"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/schema"
)

// The executor's ports: what it needs of the cluster, declared here where
// it is used, so that it runs over any implementation. In production they
// are *cluster.Meta, *cluster.Catalog, *cluster.Roles and *router.Router;
// tests run a real Meta and Catalog over metakv.NewMem and a KV port over
// in-process partition storage (package exectest). All of them must be
// safe for concurrent use: requests of one connection, and of many, run
// concurrently.

// MetaView is the cluster metadata as this node sees it.
type MetaView interface {
	// State returns the latest published snapshot (never nil once the
	// view is open; do not modify it). Successive calls may return newer
	// snapshots, never older ones.
	State() *cluster.State
	// CatchUp returns once State shows every change the metadata store
	// completed before the call (a table another node just created). An
	// error leaves State as it was; the executor then answers from it.
	CatchUp(ctx context.Context) error
}

// Catalog changes the schema and the rings. Every method is one atomic
// change and returns once MetaView.State shows it (read your own writes).
// Errors: cluster.ErrKeyspaceExists, ErrKeyspaceNotFound, ErrTableExists
// and ErrTableNotFound (matched with errors.Is) for what the statement
// names; anything else is a failure of the metadata store, after which the
// change may or may not have happened.
type Catalog interface {
	// CreateKeyspace creates ks; with ifNotExists an existing keyspace
	// gives (false, nil).
	CreateKeyspace(ctx context.Context, ks *schema.Keyspace, ifNotExists bool) (bool, error)
	// AlterKeyspace applies mutate to a copy of the keyspace and stores
	// it; an error from mutate aborts the change and is returned as is.
	AlterKeyspace(ctx context.Context, name string, mutate func(*schema.Keyspace) error) error
	// DropKeyspace drops a keyspace with its tables; with ifExists a
	// missing keyspace gives (false, nil).
	DropKeyspace(ctx context.Context, name string, ifExists bool) (bool, error)
	// CreateTable creates t with the physical partitions parts (their ring
	// appears with the table); with ifNotExists an existing table gives
	// (false, nil).
	CreateTable(ctx context.Context, t *schema.Table, parts []*kvpb.Descriptor, ifNotExists bool) (bool, error)
	// AlterTable applies mutate to a copy of the table and stores it,
	// returning the stored table; an error from mutate is returned as is.
	AlterTable(ctx context.Context, keyspace, name string, mutate func(*schema.Table) error) (*schema.Table, error)
	// DropTable drops a table and its ring; with ifExists a missing table
	// gives (false, nil).
	DropTable(ctx context.Context, keyspace, name string, ifExists bool) (bool, error)
	// AllocateID returns the first of n new ids of kind ("table",
	// "partition"); ids are never handed out twice.
	AllocateID(ctx context.Context, kind string, n uint64) (uint64, error)
}

// KV sends key-value requests to the physical partition a target names.
// The port fills in the request's partition id, generation and table id
// from the partition it chose (requests are not reused across calls). A
// partition's refusal comes back as a *partition.Error (its code decides
// the CQL error, see kvError); router.ErrNoPartition when no partition
// holds the target; a deadline as context.DeadlineExceeded. After an
// error a write may or may not have been applied.
type KV interface {
	Read(ctx context.Context, t router.Target, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error)
	Write(ctx context.Context, t router.Target, req *kvpb.WriteRequest) (*kvpb.WriteResponse, error)
}

// RoleStore changes the roles and permissions.
type RoleStore interface {
	// Update runs change on a copy of the roles as of one revision and
	// commits what it changed if nothing changed meanwhile, else runs it
	// again (change must be a function of its argument). An error from
	// change aborts the update and is returned as is. It returns once
	// MetaView.State().Auth shows the result.
	Update(ctx context.Context, change func(m *auth.Mutable) error) error
}

// The production implementations.
var (
	_ MetaView  = (*cluster.Meta)(nil)
	_ Catalog   = (*cluster.Catalog)(nil)
	_ RoleStore = (*cluster.Roles)(nil)
	_ KV        = (*router.Router)(nil)
)
