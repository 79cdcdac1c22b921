package cluster

import (
	"github.com/cosmosd/cosmosd/cluster/metakv"

	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
)

// evenRing allocates n partition ids and returns an even ring of them, as
// the placer makes for a new table.
func evenRing(t *testing.T, c *Catalog, table uint64, n int) []*kvpb.Descriptor {
	t.Helper()
	first, err := c.AllocateID(context.Background(), "partition", uint64(n))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*kvpb.Descriptor, n)
	for i, r := range ring.Even(n) {
		out[i] = &kvpb.Descriptor{Id: first + uint64(i), TableId: table, Start: r[0], End: r[1], NextReplicaId: 5}
		for j := uint64(1); j <= 4; j++ {
			out[i].Replicas = append(out[i].Replicas, &kvpb.ReplicaDescriptor{NodeId: j, ReplicaId: j})
		}
	}
	return out
}

func counter(t *testing.T, kv metakv.Store, kind string) string {
	t.Helper()
	rec, _, err := kv.Get(context.Background(), keys{}.counter(kind))
	if err != nil {
		t.Fatal(err)
	}
	return string(rec.Value)
}

// count returns how many keys are stored under prefix.
func count(t *testing.T, kv metakv.Store, prefix string) int {
	t.Helper()
	recs, _, err := kv.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// A table of 1,000 partitions (10,000,000 RU/s) is created against a real
// etcd with its default limit of 128 operations per transaction, and no
// revision ever shows the table without its whole ring or a ring without
// its table (issue 17: 200 partitions failed with "too many operations in
// txn request").
func TestCreateTableOfThousandPartitions(t *testing.T) {
	cli, kv, m := etcdClient(t)
	c := NewCatalog(m)
	ctx := context.Background()
	// The embedded etcd has etcd's default limit: a transaction of 200
	// operations fails as CREATE TABLE did.
	var big []clientv3.Op
	for i := 0; i < 200; i++ {
		big = append(big, clientv3.OpPut(fmt.Sprintf("/scratch/%d", i), "x"))
	}
	if _, err := cli.Txn(ctx).Then(big...).Commit(); err == nil || !strings.Contains(err.Error(), "too many operations in txn request") {
		t.Fatalf("a 200-op transaction: %v, want etcd's too-many-operations error", err)
	}
	if _, err := c.CreateKeyspace(ctx, keyspace("ks"), false); err != nil {
		t.Fatal(err)
	}
	start, err := kv.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.AllocateID(ctx, "table", 1)
	if err != nil {
		t.Fatal(err)
	}
	parts := evenRing(t, c, id, 1000)
	if ok, err := c.CreateTable(ctx, table("ks", "big", id), parts, false); !ok || err != nil {
		t.Fatalf("create table of 1000 partitions: %v %v", ok, err)
	}
	st := m.State()
	if st.Schema.Table("ks", "big") == nil || len(st.Ring(id).Partitions()) != 1000 {
		t.Fatalf("after CreateTable: table %v, %d partitions", st.Schema.Table("ks", "big") != nil, len(st.Ring(id).Partitions()))
	}
	// Every token has its partition.
	for _, tok := range []int64{math.MinInt64, -1, 0, 1, math.MaxInt64} {
		if st.Ring(id).Lookup(tok) == nil {
			t.Fatalf("token %d has no partition", tok)
		}
	}
	if n := count(t, kv, keys{}.pendingTables()); n != 0 {
		t.Fatalf("%d pending records left", n)
	}
	// Replay every revision since the start the way Meta folds them: a
	// ring is visible when no pending record hides it.
	checkRevisions(t, kv, start, id, 1000)

	// DROP TABLE removes the whole ring in one transaction.
	if ok, err := c.DropTable(ctx, "ks", "big", false); !ok || err != nil {
		t.Fatalf("drop: %v %v", ok, err)
	}
	if n := count(t, kv, keys{}.ringOf(id)); n != 0 {
		t.Fatalf("%d partitions of the ring left after DROP TABLE", n)
	}
}

// checkRevisions replays the metadata events after rev and checks at the
// end of each revision that the table (id) is either absent with no
// visible ring, or present with all want partitions.
func checkRevisions(t *testing.T, kv metakv.Store, rev int64, id uint64, want int) {
	t.Helper()
	k := keys{}
	now, err := kv.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wch := kv.Watch(ctx, "", rev)
	tableKeys, ringKeys, pending := map[string]bool{}, map[string]bool{}, false
	seenTable := false
	for resp := range wch {
		if resp.Err != nil {
			t.Fatal(resp.Err)
		}
		for i, ev := range resp.Events {
			key, put := ev.Kv.Key, !ev.Delete
			switch {
			case key == k.pendingTable(id):
				pending = put
			case strings.HasPrefix(key, k.ringOf(id)):
				if put {
					ringKeys[key] = true
				} else {
					delete(ringKeys, key)
				}
			case strings.HasPrefix(key, k.tables()):
				if tid, ok := storedTableID(ev.Kv.Value); put && ok && tid == id {
					tableKeys[key] = true
					seenTable = true
				} else if !put {
					delete(tableKeys, key)
				}
			}
			if i+1 < len(resp.Events) && resp.Events[i+1].Kv.ModRevision == ev.Kv.ModRevision {
				continue // the revision goes on
			}
			visible := 0
			if !pending {
				visible = len(ringKeys)
			}
			if (len(tableKeys) > 0) != (visible > 0) || (visible != 0 && visible != want) {
				t.Fatalf("revision %d: table %v with %d visible partitions (pending %v, %d written)", ev.Kv.ModRevision, len(tableKeys) > 0, visible, pending, len(ringKeys))
			}
		}
		if resp.Revision >= now {
			break
		}
	}
	if !seenTable {
		t.Fatal("the table never appeared in the replay")
	}
}

func keyspace(name string) *schema.Keyspace {
	return &schema.Keyspace{Name: name, Replication: map[string]string{"class": "SimpleStrategy"}}
}

// A CREATE TABLE that fails before writing anything (the table exists,
// the keyspace does not) gives its ids back, large or small, so drivers
// retrying it on every host burn none.
func TestCreateTableFailureGivesIDsBack(t *testing.T) {
	kv, m := openMeta(t)
	c := NewCatalog(m)
	ctx := context.Background()
	if _, err := c.CreateKeyspace(ctx, keyspace("ks"), false); err != nil {
		t.Fatal(err)
	}
	id, _ := c.AllocateID(ctx, "table", 1)
	if ok, err := c.CreateTable(ctx, table("ks", "t", id), evenRing(t, c, id, 200), false); !ok || err != nil {
		t.Fatalf("create: %v %v", ok, err)
	}
	tables, partitions := counter(t, kv, "table"), counter(t, kv, "partition")
	for _, tc := range []struct {
		name     string
		ks       string
		n        int
		ifNot    bool
		want     error
		wantBool bool
	}{
		{"exists, large", "ks", 200, false, ErrTableExists, false},
		{"exists, small", "ks", 3, false, ErrTableExists, false},
		{"exists, if not exists, large", "ks", 1000, true, nil, false},
		{"exists, if not exists, small", "ks", 1, true, nil, false},
		{"no keyspace, large", "nope", 200, false, ErrKeyspaceNotFound, false},
		{"no keyspace, small", "nope", 2, true, ErrKeyspaceNotFound, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for retry := 0; retry < 3; retry++ {
				id, err := c.AllocateID(ctx, "table", 1)
				if err != nil {
					t.Fatal(err)
				}
				ok, err := c.CreateTable(ctx, table(tc.ks, "t", id), evenRing(t, c, id, tc.n), tc.ifNot)
				if ok != tc.wantBool || !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
					t.Fatalf("CreateTable: %v %v, want %v %v", ok, err, tc.wantBool, tc.want)
				}
			}
			if got := counter(t, kv, "table"); got != tables {
				t.Errorf("table counter %s, want %s: ids burned", got, tables)
			}
			if got := counter(t, kv, "partition"); got != partitions {
				t.Errorf("partition counter %s, want %s: ids burned", got, partitions)
			}
		})
	}
	// An allocation that came after is not undone.
	id2, _ := c.AllocateID(ctx, "table", 1)
	parts := evenRing(t, c, id2, 150)
	if _, err := c.AllocateID(ctx, "partition", 1); err != nil {
		t.Fatal(err)
	}
	want, _ := strconv.ParseUint(counter(t, kv, "partition"), 10, 64)
	if _, err := c.CreateTable(ctx, table("ks", "t", id2), parts, false); !errors.Is(err, ErrTableExists) {
		t.Fatal(err)
	}
	if got := counter(t, kv, "partition"); got != strconv.FormatUint(want, 10) {
		t.Fatalf("partition counter %s, want %d: a later allocation was undone", got, want)
	}
}

// A creator that dies between its batches leaves a partial ring that no
// node sees (the pending record hides it) and that CollectOrphanRings
// deletes once the record's lease is gone; live tables keep theirs.
func TestPartialRingIsHiddenThenCollected(t *testing.T) {
	kv, m := openMeta(t)
	c := NewCatalog(m)
	ctx := context.Background()
	if _, err := c.CreateKeyspace(ctx, keyspace("ks"), false); err != nil {
		t.Fatal(err)
	}
	live, _ := c.AllocateID(ctx, "table", 1)
	if ok, err := c.CreateTable(ctx, table("ks", "live", live), evenRing(t, c, live, 120), false); !ok || err != nil {
		t.Fatalf("create: %v %v", ok, err)
	}
	small, _ := c.AllocateID(ctx, "table", 1)
	if ok, err := c.CreateTable(ctx, table("ks", "small", small), evenRing(t, c, small, 2), false); !ok || err != nil {
		t.Fatalf("create: %v %v", ok, err)
	}
	dead, _ := c.AllocateID(ctx, "table", 1)
	parts := evenRing(t, c, dead, 250)
	descs := make([]string, len(parts))
	for i, p := range parts {
		raw, err := MarshalDescriptor(p)
		if err != nil {
			t.Fatal(err)
		}
		descs[i] = string(raw)
	}
	// The creator writes its batches, then dies before publishing.
	lease, err := c.stageRing(ctx, dead, parts, descs)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if r := m.State().Ring(dead); r != nil {
		t.Fatalf("a pending ring is visible with %d partitions", len(r.Partitions()))
	}
	if n, err := c.CollectOrphanRings(ctx); n != 0 || err != nil {
		t.Fatalf("collected %d rings while the creation is pending (%v)", n, err)
	}
	// The lease runs out (revoked here instead of waited for).
	if err := kv.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if n, err := c.CollectOrphanRings(ctx); n != 1 || err != nil {
		t.Fatalf("collected %d rings, want the dead creation's (%v)", n, err)
	}
	for id, want := range map[uint64]int{dead: 0, live: 120, small: 2} {
		if n := count(t, kv, keys{}.ringOf(id)); n != want {
			t.Errorf("table %d: %d partitions stored, want %d", id, n, want)
		}
	}
}
