package cluster

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster/metakv"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/schema"
)

// Operations keeps opaque records by id, fenced writes fail once the fence
// no longer holds, and the controller election names one node at a time.
func TestOperationsRecordsAndElection(t *testing.T) {
	kv, m := openMeta(t)
	ops := m.Operations()
	ctx := context.Background()

	if id, err := ops.Controller(ctx); err != nil || id != 0 {
		t.Fatalf("controller before any campaign: %d %v", id, err)
	}
	lead, err := ops.Campaign(ctx, 7, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := ops.Controller(ctx); err != nil || id != 7 {
		t.Fatalf("controller = %d %v, want 7", id, err)
	}

	first, err := ops.NewID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second, err := ops.NewID(ctx)
	if err != nil || second != first+1 {
		t.Fatalf("ids %d then %d (%v), want consecutive", first, second, err)
	}
	if ok, err := ops.Put(ctx, first, []byte(`{"a":1}`), lead.Fence()); !ok || err != nil {
		t.Fatalf("fenced put while leading: %v %v", ok, err)
	}
	if ok, err := ops.Put(ctx, second, []byte(`{"b":2}`)); !ok || err != nil {
		t.Fatalf("unfenced put: %v %v", ok, err)
	}
	if raw, ok, err := ops.Get(ctx, first); !ok || err != nil || string(raw) != `{"a":1}` {
		t.Fatalf("get = %q %v %v", raw, ok, err)
	}
	if _, ok, err := ops.Get(ctx, 999); ok || err != nil {
		t.Fatalf("get of a missing operation: %v %v", ok, err)
	}
	all, err := ops.List(ctx)
	if err != nil || len(all) != 2 || string(all[second]) != `{"b":2}` {
		t.Fatalf("list = %v %v", all, err)
	}

	// Deposed: the fence fails, writes and deletes under it do nothing.
	fence := lead.Fence()
	if err := lead.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := ops.Put(ctx, first, []byte(`{"a":2}`), fence); ok || err != nil {
		t.Fatalf("fenced put after resigning: %v %v, want refused", ok, err)
	}
	if err := ops.Delete(ctx, first, fence); err != nil {
		t.Fatal(err)
	}
	if raw, ok, _ := ops.Get(ctx, first); !ok || string(raw) != `{"a":1}` {
		t.Fatalf("after a deposed write and delete: %q %v, want the record unchanged", raw, ok)
	}
	if err := ops.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := ops.Get(ctx, first); ok {
		t.Fatal("unfenced delete left the record")
	}
	if id, err := ops.Controller(ctx); err != nil || id != 0 {
		t.Fatalf("controller after resigning: %d %v", id, err)
	}

	// Garbage under ops/ is reported, not skipped.
	if _, err := metakv.Do(ctx, kv, metakv.Put(keys{}.ops()+"junk", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.List(ctx); err == nil {
		t.Fatal("a key under ops/ that names no operation was listed silently")
	}
	// The same for an election value that names no node.
	if _, err := metakv.Do(ctx, kv, metakv.Put(keys{}.controllerElection()+"/1", []byte("not-a-node"))); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Controller(ctx); err == nil {
		t.Fatal("a controller value that names no node was accepted")
	}
}

func TestAlterKeyspaceAndUpdatePartitions(t *testing.T) {
	_, m := openMeta(t)
	c := NewCatalog(m)
	ctx := context.Background()
	if c.Meta() != m {
		t.Fatal("Catalog.Meta is not the Meta it was made from")
	}
	if err := c.AlterKeyspace(ctx, "nosuch", func(*schema.Keyspace) error { return nil }); !errors.Is(err, ErrKeyspaceNotFound) {
		t.Fatalf("alter a missing keyspace: %v", err)
	}
	if _, err := c.CreateKeyspace(ctx, keyspace("ks"), false); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := c.AlterKeyspace(ctx, "ks", func(*schema.Keyspace) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("a refused alter: %v", err)
	}
	if err := c.AlterKeyspace(ctx, "ks", func(ks *schema.Keyspace) error {
		ks.Replication = map[string]string{"class": "NetworkTopologyStrategy", "dc1": "3"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := m.State().Schema.Keyspaces["ks"].Replication["dc1"]; got != "3" {
		t.Fatalf("replication after alter: %q", got)
	}

	// UpdatePartitions replaces descriptors only while the old ones are
	// stored exactly as given.
	tb := table("ks", "t", 1)
	whole := part(1, 10)
	if _, err := c.CreateTable(ctx, tb, []*kvpb.Descriptor{whole}, false); err != nil {
		t.Fatal(err)
	}
	left := &kvpb.Descriptor{Id: 10, TableId: 1, Start: math.MinInt64, End: 0, Generation: 1, Replicas: whole.Replicas}
	right := &kvpb.Descriptor{Id: 11, TableId: 1, Start: 0, End: math.MaxInt64, Generation: 1, Replicas: whole.Replicas}
	if err := c.UpdatePartitions(ctx, 1, []*kvpb.Descriptor{whole}, []*kvpb.Descriptor{left, right}); err != nil {
		t.Fatal(err)
	}
	st := m.State()
	if got := st.TablePartition(1, 11); got == nil || got.GetStart() != 0 {
		t.Fatalf("right half after the update: %v", got)
	}
	if got := st.Partition(10); got == nil || got.GetEnd() != 0 {
		t.Fatalf("left half after the update: %v", got)
	}
	if st.TablePartition(1, 99) != nil || st.Partition(99) != nil {
		t.Fatal("a partition no ring holds was found")
	}
	// The stale view (whole) no longer matches: conflict, nothing written.
	if err := c.UpdatePartitions(ctx, 1, []*kvpb.Descriptor{whole}, []*kvpb.Descriptor{whole}); !errors.Is(err, ErrConflict) {
		t.Fatalf("update from a stale descriptor: %v, want ErrConflict", err)
	}
	if got := m.State().Partition(10); got.GetEnd() != 0 {
		t.Fatal("a conflicting update changed the ring")
	}
}

func TestStateNodeHelpers(t *testing.T) {
	kv, m := openMeta(t)
	ctx := context.Background()
	var regs []*Registration
	for _, id := range []uint64{5, 2, 9} {
		info := NodeInfo{ID: id, Labels: map[string]string{"zone": "z1", "rack": ""}}
		reg, err := Register(ctx, kv, info, 2*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}
	defer func() {
		for _, r := range regs {
			_ = r.Close(ctx)
		}
	}()
	if err := m.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := m.State().NodeIDs(); !slices.Equal(got, []uint64{2, 5, 9}) {
		t.Fatalf("NodeIDs = %v, want sorted", got)
	}
	n := m.State().Nodes[5]
	if n.Label("zone", "none") != "z1" || n.Label("rack", "r0") != "r0" || n.Label("dc", "dc1") != "dc1" {
		t.Fatal("Label: an empty or missing label must give the default")
	}
	// Update replaces the registered info under the same lease.
	if err := regs[1].Update(ctx, NodeInfo{ID: 2, Name: "renamed"}); err != nil {
		t.Fatal(err)
	}
	if err := m.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if got := m.State().Nodes[2].Name; got != "renamed" {
		t.Fatalf("name after Update: %q", got)
	}
	// Meta.AllocateID shares the counters.
	a, err := m.AllocateID(ctx, "widget", 2)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := AllocateID(ctx, kv, "widget", 1); err != nil || b != a+2 {
		t.Fatalf("next id %d (%v), want %d", b, err, a+2)
	}
	if _, err := m.AllocateID(ctx, "widget", 0); err == nil {
		t.Fatal("allocating zero ids succeeded")
	}
}

// A registration whose lease is lost (etcd unreachable past the TTL)
// registers again by itself.
func TestRegistrationComesBackAfterLeaseLoss(t *testing.T) {
	kv, m := openMeta(t)
	ctx := context.Background()
	reg, err := Register(ctx, kv, NodeInfo{ID: 4}, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	reg.mu.Lock()
	lease := reg.mu.lease
	reg.mu.Unlock()
	if err := kv.ExpireLease(lease); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		reg.mu.Lock()
		now := reg.mu.lease
		reg.mu.Unlock()
		if now != lease && m.State().Nodes[4] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the node did not register again after its lease was lost")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A watch that fails (history compacted away) makes Meta read everything
// again: no change is missed.
func TestMetaReloadsAfterCompaction(t *testing.T) {
	kv, m := openMeta(t, metakv.WithHistoryLimit(4))
	c := NewCatalog(m)
	ctx := context.Background()
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if _, err := c.CreateKeyspace(ctx, keyspace(name), false); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := kv.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Compact(rev); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateKeyspace(ctx, keyspace("after"), false); err != nil {
		t.Fatal(err)
	}
	if err := m.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if len(m.State().Schema.Keyspaces) != 9 {
		t.Fatalf("%d keyspaces, want 9", len(m.State().Schema.Keyspaces))
	}
}
