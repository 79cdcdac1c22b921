package cluster

import (
	"github.com/cosmosd/cosmosd/cluster/metakv"

	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/schema"
)

// syncBuffer is a log sink shared by the watch goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// poisonTable overwrites a stored table definition with one whose column
// type no node can parse: what older nodes stored for a column typed
// 'org.apache.cassandra.db.marshal.LexicalUUIDType' (issue 15).
func poisonTable(t *testing.T, kv metakv.Store, m *Meta, ks, name string) {
	t.Helper()
	ctx := context.Background()
	rec, ok, err := kv.Get(ctx, m.k.table(ks, name))
	if err != nil || !ok {
		t.Fatalf("get table %s.%s: %v", ks, name, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(rec.Value, &raw); err != nil {
		t.Fatal(err)
	}
	cols := raw["columns"].([]any)
	cols[len(cols)-1].(map[string]any)["type"] = "'org.apache.cassandra.db.marshal.LexicalUUIDType'"
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := metakv.Do(ctx, kv, metakv.Put(m.k.table(ks, name), b))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &schema.Table{}); err == nil {
		t.Fatal("the poisoned definition decodes; the test proves nothing")
	}
}

// An undecodable table definition leaves the rest of the schema usable, is
// logged once (not on every catalog change), and DROP TABLE and DROP
// KEYSPACE still remove it with its ring (issue 15).
func TestCatalogUndecodableTable(t *testing.T) {
	kv, _ := openMeta(t)
	var logs syncBuffer
	ctx := context.Background()
	m, err := OpenMeta(ctx, kv, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	c := NewCatalog(m)

	for _, ks := range []string{"ks", "ks2"} {
		if _, err := c.CreateKeyspace(ctx, &schema.Keyspace{Name: ks}, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, tb := range []*schema.Table{table("ks", "good", 1), table("ks", "bad", 2), table("ks2", "bad", 3)} {
		if _, err := c.CreateTable(ctx, tb, []*kvpb.Descriptor{part(tb.ID, tb.ID*10)}, false); err != nil {
			t.Fatal(err)
		}
	}
	poisonTable(t, kv, m, "ks", "bad")
	poisonTable(t, kv, m, "ks2", "bad")

	st := m.State()
	if st.Schema.Table("ks", "good") == nil || st.Schema.Table("ks", "bad") != nil || st.Schema.Keyspaces["ks"] == nil {
		t.Fatal("want the good table and its keyspace in the schema, without the undecodable table")
	}
	// Every catalog change rebuilds the schema; the bad records are
	// logged once each all the same.
	for i := 0; i < 5; i++ {
		if _, err := c.AlterTable(ctx, "ks", "good", func(tb *schema.Table) error {
			tb.Options.Throughput = int64(100 * (i + 1))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "skip undecodable table"); n != 2 {
		t.Fatalf("logged %d times, want once per undecodable record (2):\n%s", n, logs.String())
	}

	if ok, err := c.DropTable(ctx, "ks", "bad", false); !ok || err != nil {
		t.Fatalf("drop undecodable table: %v %v", ok, err)
	}
	if ok, err := c.DropKeyspace(ctx, "ks2", false); !ok || err != nil {
		t.Fatalf("drop keyspace holding an undecodable table: %v %v", ok, err)
	}
	left, _, err := kv.List(ctx, m.k.tables())
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Key != m.k.table("ks", "good") {
		t.Fatalf("tables left: %v, want only ks.good", left)
	}
	st = m.State()
	if st.Ring(2) != nil || st.Ring(3) != nil || st.Ring(1) == nil {
		t.Fatal("the rings of the dropped tables must go, the good table's must stay")
	}
	// A record that is not even JSON is dropped too (its ring, whose
	// table id cannot be read, stays behind unused).
	if _, err := metakv.Do(ctx, kv, metakv.Put(m.k.table("ks", "garbage"), []byte("{not json"))); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.DropTable(ctx, "ks", "garbage", false); !ok || err != nil {
		t.Fatalf("drop a record that is not JSON: %v %v", ok, err)
	}
}
