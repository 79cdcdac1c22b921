package exectest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/router/routertest"
	"github.com/cosmosd/cosmosd/schema"
)

// NodeID is the id of the one node of a Cluster: the replica of every
// partition the Placer places.
const NodeID = 1

// Config configures a Cluster. The zero value is a cluster whose tables
// get the partitions the executor asks for.
type Config struct {
	// Partitions, when positive, is how many partitions the Placer gives
	// every new table, whatever the executor asked for (it asks for one
	// unless the table is provisioned with throughput): tests of routing,
	// scans and paging across partitions need several.
	Partitions int
	// Start is the Clock's initial time. Default 2024-01-02 03:04:05 UTC.
	Start time.Time
}

// Cluster is one node's view of an in-process cluster: the metadata on
// metakv.Mem and the partitions in in-memory Pebble. Its parts are safe for
// concurrent use.
type Cluster struct {
	// Store is the metadata store (etcd's in-memory twin).
	Store *metakv.Mem
	Meta  *cluster.Meta
	// Catalog, Roles and Meta are the executor's Catalog, RoleStore and
	// MetaView.
	Catalog *cluster.Catalog
	Roles   *cluster.Roles
	// KV is the executor's KV port.
	KV *KV
	// Placer is the executor's placer.
	Placer *Placer
	// Clock is a manual clock for the executor's Now.
	Clock *Clock

	closeOnce sync.Once
	closeErr  error
	closers   []func() error
}

// NewMeta returns a Meta over a new metakv.Mem, both closed by tb's
// Cleanup: the metadata half of a Cluster, for tests that need no
// partitions.
func NewMeta(tb testing.TB) (*metakv.Mem, *cluster.Meta) {
	tb.Helper()
	kv := metakv.NewMem()
	meta, err := cluster.OpenMeta(context.Background(), kv, nil)
	if err != nil {
		kv.Close()
		tb.Fatalf("open meta: %v", err)
	}
	tb.Cleanup(func() {
		meta.Close()
		kv.Close()
	})
	return kv, meta
}

// New starts a Cluster; tb's Cleanup closes it.
func New(tb testing.TB, cfg Config) *Cluster {
	tb.Helper()
	c, err := Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("close cluster: %v", err)
		}
	})
	return c
}

// Open starts a Cluster; the caller must Close it (New does so for a
// test).
func Open(cfg Config) (_ *Cluster, err error) {
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	c := &Cluster{Clock: NewClock(cfg.Start)}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	c.Store = metakv.NewMem()
	c.closers = append(c.closers, func() error { c.Store.Close(); return nil })
	if c.Meta, err = cluster.OpenMeta(context.Background(), c.Store, nil); err != nil {
		return nil, fmt.Errorf("open meta: %w", err)
	}
	c.closers = append(c.closers, func() error { c.Meta.Close(); return nil })
	c.Catalog = cluster.NewCatalog(c.Meta)
	c.Roles = cluster.NewRoles(c.Meta)
	c.Placer = &Placer{Catalog: c.Catalog, Partitions: cfg.Partitions}

	node, err := routertest.Open(routertest.Config{NodeID: NodeID})
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, node.Close)
	c.KV = &KV{meta: c.Meta, node: node}
	return c, nil
}

// Close stops the partitions and the metadata, in the reverse order of
// their start, and returns what failed. Safe to call twice (the second
// call returns the first one's error).
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		for i := len(c.closers) - 1; i >= 0; i-- {
			errs = append(errs, c.closers[i]())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// Placer places a new table's partitions evenly over the token ring, every
// one with a single replica on NodeID. Safe for concurrent use.
type Placer struct {
	Catalog *cluster.Catalog
	// Partitions, when positive, overrides the number of partitions the
	// executor asks for.
	Partitions int
}

// PlaceTable implements exec.Placer.
func (p *Placer) PlaceTable(ctx context.Context, t *schema.Table, n int) ([]*kvpb.Descriptor, error) {
	if p.Partitions > 0 {
		n = p.Partitions
	}
	first, err := p.Catalog.AllocateID(ctx, "partition", uint64(n))
	if err != nil {
		return nil, err
	}
	out := make([]*kvpb.Descriptor, n)
	for i, r := range ring.Even(n) {
		out[i] = &kvpb.Descriptor{Id: first + uint64(i), TableId: t.ID, Start: r[0], End: r[1],
			Replicas: []*kvpb.ReplicaDescriptor{{NodeId: NodeID, ReplicaId: 1}}, NextReplicaId: 2}
	}
	return out, nil
}

// Clock is a manual clock. Safe for concurrent use.
type Clock struct {
	mu struct {
		sync.Mutex
		now time.Time
	}
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.mu.now = t
	return c
}

// Now returns the clock's time; it moves only by Set and Advance.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.now
}

// Set sets the clock.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.mu.now = t
	c.mu.Unlock()
}

// Advance moves the clock by d (which may be negative: a clock that jumps
// back).
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.now = c.mu.now.Add(d)
	return c.mu.now
}

// RegisterNode registers another node, as that node would on start, and
// returns once Meta shows it (system.peers lists it). The registration
// lasts until Close. Not to be called concurrently with Close.
func (c *Cluster) RegisterNode(ctx context.Context, info cluster.NodeInfo) error {
	reg, err := cluster.Register(ctx, c.Store, info, 0, nil)
	if err != nil {
		return err
	}
	c.closers = append(c.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return reg.Close(ctx)
	})
	return c.Meta.CatchUp(ctx)
}
