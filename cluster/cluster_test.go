package cluster

import (
	"github.com/cosmosd/cosmosd/cluster/embedded"
	"github.com/cosmosd/cosmosd/cluster/metakv"

	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/schema"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openMeta returns an in-memory metadata store (metakv.Mem, which passes
// the same conformance suite as etcd) and an open Meta on it.
func openMeta(t *testing.T, opts ...metakv.MemOption) (*metakv.Mem, *Meta) {
	t.Helper()
	kv := metakv.NewMem(opts...)
	t.Cleanup(kv.Close)
	m, err := OpenMeta(context.Background(), kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return kv, m
}

// etcdClient starts a real embedded etcd and returns a client, the metadata
// store on it and an open Meta, for the tests of what only etcd does (its
// limits). It skips under -short, which runs without etcd.
func etcdClient(t *testing.T) (*clientv3.Client, metakv.Store, *Meta) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs etcd; -short runs without it")
	}
	cli := embedded.StartForTest(t)
	kv := metakv.NewEtcd(cli, DefaultPrefix)
	m, err := OpenMeta(context.Background(), kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return cli, kv, m
}

func table(ks, name string, id uint64) *schema.Table {
	t := &schema.Table{ID: id, Keyspace: ks, Name: name, UUID: NewUUID(), NextColumnID: 2, Columns: []schema.Column{
		{ID: 0, Name: "k", Type: cqltype.Scalar(cqltype.Varchar), Kind: schema.PartitionKey, Position: 0},
		{ID: 1, Name: "v", Type: cqltype.Scalar(cqltype.Int), Kind: schema.Regular, Position: -1},
	}}
	t.Canonicalize()
	return t
}

func part(table, id uint64) *kvpb.Descriptor {
	return &kvpb.Descriptor{Id: id, TableId: table, Start: math.MinInt64, End: math.MaxInt64,
		Replicas: []*kvpb.ReplicaDescriptor{{NodeId: 1, ReplicaId: 1}}}
}

func TestCatalogDDLIsAtomicAndVisible(t *testing.T) {
	_, m := openMeta(t)
	c := NewCatalog(m)
	ctx := context.Background()
	if err := c.EnsureSchemaVersion(ctx); err != nil {
		t.Fatal(err)
	}
	v0 := m.State().Schema.Version
	if v0 == "" {
		t.Fatal("no schema version after EnsureSchemaVersion")
	}
	ks := &schema.Keyspace{Name: "ks", Replication: map[string]string{"class": "SimpleStrategy"}}
	if ok, err := c.CreateKeyspace(ctx, ks, false); !ok || err != nil {
		t.Fatalf("create keyspace: %v %v", ok, err)
	}
	if _, err := c.CreateKeyspace(ctx, ks, false); !errors.Is(err, ErrKeyspaceExists) {
		t.Fatalf("second create: %v, want ErrKeyspaceExists", err)
	}
	if ok, err := c.CreateKeyspace(ctx, ks, true); ok || err != nil {
		t.Fatalf("IF NOT EXISTS: %v %v", ok, err)
	}
	// A table and its ring appear in the same published state.
	if ok, err := c.CreateTable(ctx, table("ks", "t", 7), []*kvpb.Descriptor{part(7, 70)}, false); !ok || err != nil {
		t.Fatalf("create table: %v %v", ok, err)
	}
	st := m.State()
	if st.Schema.Table("ks", "t") == nil || st.Ring(7).Lookup(0).GetId() != 70 {
		t.Fatal("table or ring missing after CreateTable returned")
	}
	if st.Schema.Version == v0 {
		t.Fatal("schema version did not change with DDL")
	}
	if _, err := c.CreateTable(ctx, table("nope", "t", 8), nil, false); !errors.Is(err, ErrKeyspaceNotFound) {
		t.Fatalf("table in a missing keyspace: %v", err)
	}
	// ALTER applies under compare-and-swap.
	altered, err := c.AlterTable(ctx, "ks", "t", func(tb *schema.Table) error {
		tb.Options.Throughput = 400
		return nil
	})
	if err != nil || altered.Options.Throughput != 400 || m.State().Schema.Table("ks", "t").Options.Throughput != 400 {
		t.Fatalf("alter: %v %v", altered, err)
	}
	// Routing copies change only by compare-and-swap.
	old := m.State().Ring(7).Partitions()[0]
	next := part(7, 70)
	next.Generation = 5
	if err := c.SyncPartition(ctx, 7, old, next); err != nil {
		t.Fatal(err)
	}
	if err := c.SyncPartition(ctx, 7, old, next); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale sync: %v, want ErrConflict", err)
	}
	// DROP KEYSPACE takes its tables and rings with it.
	if ok, err := c.DropKeyspace(ctx, "ks", false); !ok || err != nil {
		t.Fatalf("drop keyspace: %v %v", ok, err)
	}
	st = m.State()
	if st.Schema.Keyspaces["ks"] != nil || st.Schema.Table("ks", "t") != nil || st.Ring(7) != nil {
		t.Fatal("keyspace, table or ring survived DROP KEYSPACE")
	}
	// A late sync cannot resurrect the ring of a dropped table.
	if err := c.SyncPartition(ctx, 7, nil, part(7, 71)); !errors.Is(err, ErrConflict) {
		t.Fatalf("sync into a dropped table: %v", err)
	}
}

func TestAllocateIDIsUniqueUnderContention(t *testing.T) {
	cli, _ := openMeta(t)
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				id, err := AllocateID(context.Background(), cli, "partition", 3)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for j := id; j < id+3; j++ {
					if seen[j] {
						t.Errorf("id %d allocated twice", j)
					}
					seen[j] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 8*10*3 {
		t.Fatalf("%d ids allocated, want 240", len(seen))
	}
}

func TestRegistrationLeaseAndMembers(t *testing.T) {
	cli, m := openMeta(t)
	ctx := context.Background()
	info := NodeInfo{ID: 3, Name: "n3", CQLAddr: "127.0.0.1:9042", Labels: map[string]string{"zone": "z1"}}
	reg, err := Register(ctx, cli, info, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WaitRevision(ctx, 0); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, cond func(*State) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond(m.State()) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait("registration", func(s *State) bool { return s.Nodes[3] != nil && s.Members[3] != nil })
	if got := m.State().MemberState(3, time.Now(), time.Minute); got != "up" {
		t.Fatalf("state %q, want up", got)
	}
	// A crashed node (renewals stop, lease not revoked) disappears after
	// its TTL but stays a member.
	reg.Abandon()
	wait("lease expiry", func(s *State) bool { return s.Nodes[3] == nil })
	if m.State().Members[3] == nil {
		t.Fatal("member record lost with the lease")
	}
	if got := m.State().MemberState(3, time.Now(), time.Minute); got != "suspect" {
		t.Fatalf("state %q, want suspect", got)
	}
	if err := m.UpdateMember(ctx, 3, func(mem *Member) bool {
		mem.DownSince = time.Now().Add(-2 * time.Minute)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	wait("down since", func(s *State) bool { return !s.Members[3].DownSince.IsZero() })
	if got := m.State().MemberState(3, time.Now(), time.Minute); got != "dead" {
		t.Fatalf("state %q, want dead", got)
	}
	// Registering again brings it back up and clears DownSince.
	reg2, err := Register(ctx, cli, info, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	wait("re-registration", func(s *State) bool { return s.Nodes[3] != nil && s.Members[3].DownSince.IsZero() })
	if err := reg2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wait("deregistration", func(s *State) bool { return s.Nodes[3] == nil })
}
