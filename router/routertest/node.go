package routertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/local"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// Config configures a Node.
type Config struct {
	// NodeID is the node's id. Required (not 0).
	NodeID consensus.NodeID
	// Throughput is the store's provisioned throughput per table (see
	// partition.StoreConfig). Default nil: unlimited.
	Throughput partition.ThroughputFunc
}

// Node is one node's partition store on real parts. Its fields are set by
// Open (Addr by Serve) and not changed after; the Store is safe for
// concurrent use.
type Node struct {
	ID    consensus.NodeID
	Store *partition.Store
	// Addr is the address of the internal service Serve started; "" until
	// then.
	Addr string

	// closers stop what Open started, run in reverse order by Close.
	closers   []func() error
	closeOnce sync.Once
	closeErr  error

	// reconcileMu serializes Reconcile and guards reconciled.
	reconcileMu sync.Mutex
	reconciled  int64 // the newest metadata revision reconciled; 0 before any
}

// Open starts a node: a Pebble engine on a fresh in-memory filesystem, the
// local consensus engine on it, and an empty partition store. The caller
// must Close it (Start does so for a test).
func Open(cfg Config) (_ *Node, err error) {
	if cfg.NodeID == 0 {
		return nil, errors.New("routertest: a node id is required")
	}
	n := &Node{ID: cfg.NodeID}
	defer func() {
		if err != nil {
			_ = n.Close()
		}
	}()
	// Small caches: a test writes kilobytes, and a test may start several
	// nodes.
	eng, err := storage.Open(storage.Config{FS: vfs.NewMem(), CacheBytes: 8 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		return nil, fmt.Errorf("routertest: node %d: %w", cfg.NodeID, err)
	}
	n.closers = append(n.closers, eng.Close)
	cons, err := local.New(local.Config{NodeID: cfg.NodeID, Storage: eng})
	if err != nil {
		return nil, fmt.Errorf("routertest: node %d: %w", cfg.NodeID, err)
	}
	n.closers = append(n.closers, cons.Close)
	n.Store = partition.NewStore(partition.StoreConfig{NodeID: cfg.NodeID, Storage: eng, Consensus: cons, Throughput: cfg.Throughput})
	n.closers = append(n.closers, func() error { n.Store.Close(); return nil })
	return n, nil
}

// Start opens a node whose Close tb's Cleanup runs; it fails tb if the
// node does not start.
func Start(tb testing.TB, cfg Config) *Node {
	tb.Helper()
	n, err := Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := n.Close(); err != nil {
			tb.Errorf("close node %d: %v", n.ID, err)
		}
	})
	return n
}

// Close stops the replicas, the consensus engine and the engine, in that
// order, and returns what failed. Safe to call twice (the second call
// returns the first one's error). A server Serve started must be stopped
// first (Start's and Serve's cleanups run in that order).
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		for i := len(n.closers) - 1; i >= 0; i-- {
			errs = append(errs, n.closers[i]())
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// Serve serves impl, the node's internal service (router.NewServer of
// n.Store), on a loopback port until tb ends, and sets and returns n.Addr,
// the address to register the node at. Call it once, before the node is
// shared with other goroutines.
func (n *Node) Serve(tb testing.TB, impl kvpb.InternalServer) string {
	tb.Helper()
	n.Addr, _ = ServeInternal(tb, impl)
	return n.Addr
}

// Bootstrap starts the replica of partition d on this node alone (the
// local engine runs one replica per group) and returns once it leads, so
// that a request sent next is served. d's id, table, range and generation
// are kept; its replicas are not (the routing copy may list other nodes).
func (n *Node) Bootstrap(tb testing.TB, d *kvpb.Descriptor) *partition.Replica {
	tb.Helper()
	own := &kvpb.Descriptor{Id: d.GetId(), TableId: d.GetTableId(), Start: d.GetStart(), End: d.GetEnd(), Generation: d.GetGeneration(),
		Replicas: []*kvpb.ReplicaDescriptor{{NodeId: uint64(n.ID), ReplicaId: 1}}, NextReplicaId: 2}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	rep, err := n.Store.Bootstrap(ctx, own)
	if err != nil {
		tb.Fatalf("node %d: bootstrap partition %d: %v", n.ID, d.GetId(), err)
	}
	WaitUntil(tb, fmt.Sprintf("partition %d to lead on node %d", d.GetId(), n.ID), func() bool {
		st, err := rep.Status(false)
		return err == nil && st.GetLeader()
	})
	return rep
}

// Reconcile brings the node's replicas in line with the rings of st, as
// the daemon's reconcile loop does (partition.Store.Reconcile): it starts
// the replicas the rings list on this node and removes those of tables st
// no longer has. A state no newer than one already reconciled is skipped,
// so a caller may reconcile before every request. Safe for concurrent use.
func (n *Node) Reconcile(ctx context.Context, st *cluster.State) error {
	n.reconcileMu.Lock()
	defer n.reconcileMu.Unlock()
	if st.Revision <= n.reconciled {
		return nil
	}
	parts, live := st.AllPartitions()
	if err := n.Store.Reconcile(ctx, parts, live); err != nil {
		return fmt.Errorf("routertest: node %d: start the replicas of revision %d: %w", n.ID, st.Revision, err)
	}
	n.reconciled = st.Revision
	return nil
}

// waitFor bounds every wait of the package: long enough for a loaded CI
// machine, short enough that a hung test says what it waited for.
const waitFor = 10 * time.Second

// WaitUntil polls cond until it holds, failing tb (naming what it waited
// for) after ten seconds.
func WaitUntil(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Desc returns a descriptor of partition id of table over [start, end]
// whose voters are nodes, in order (replica ids 1, 2, ...).
func Desc(table, id uint64, start, end int64, nodes ...uint64) *kvpb.Descriptor {
	d := &kvpb.Descriptor{Id: id, TableId: table, Start: start, End: end}
	for i, n := range nodes {
		d.Replicas = append(d.Replicas, &kvpb.ReplicaDescriptor{NodeId: uint64(n), ReplicaId: uint64(i + 1)})
	}
	d.NextReplicaId = uint64(len(nodes) + 1)
	return d
}

// Whole returns a descriptor of partition id of table covering every
// token, with voters on nodes.
func Whole(table, id uint64, nodes ...uint64) *kvpb.Descriptor {
	return Desc(table, id, math.MinInt64, math.MaxInt64, nodes...)
}
