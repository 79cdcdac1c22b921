package exec

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/cql/exec/exectest"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/schema"
)

// ddlExecutor returns an executor over a real Meta and Catalog on the
// in-memory metadata store, without a router (DDL and virtual tables
// only), with the keyspace ks.
func ddlExecutor(t *testing.T) (*Executor, *cluster.Meta) {
	t.Helper()
	e, meta, _ := ddlExecutorKV(t)
	return e, meta
}

// ddlExecutorKV is ddlExecutor that also returns the metadata store, for
// tests that write records directly.
func ddlExecutorKV(t *testing.T) (*Executor, *cluster.Meta, metakv.Store) {
	t.Helper()
	kv, meta := exectest.NewMeta(t)
	catalog := cluster.NewCatalog(meta)
	e := New(Config{NodeID: 1, Meta: meta, Catalog: catalog, Placer: &fuzzPlacer{catalog: catalog},
		Local: LocalNode{HostID: "8f3b9e52-7c0e-4a55-9d7a-1f2e3d4c5b6a", Datacenter: "dc1", Rack: "r1"}})
	runSteps(t, e, []step{{q: "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", want: "ok"}})
	return e, meta, kv
}

// What cosmosd cannot store is refused up front with Invalid, and every
// accepted table reads back from the catalog as it was created: a custom
// type used to be accepted, stored, and then make its table unreadable
// and undroppable (issue 15).
func TestDDLRefusesWhatCannotBeReadBack(t *testing.T) {
	e, meta := ddlExecutor(t)
	runSteps(t, e, []step{
		{q: "CREATE TABLE ks.c (k int PRIMARY KEY, v 'org.apache.cassandra.db.marshal.LexicalUUIDType')",
			want: "0x2200 Custom types are not supported by cosmosd (column v has type 'org.apache.cassandra.db.marshal.LexicalUUIDType')"},
		{q: "CREATE TABLE ks.c (k 'org.apache.cassandra.db.marshal.BytesType' PRIMARY KEY)", want: "0x2200 Custom types are not supported"},
		{q: "CREATE TABLE ks.c (k int PRIMARY KEY, v map<int, 'org.apache.cassandra.db.marshal.LexicalUUIDType'>)", want: "0x2200 Custom types are not supported"},
		{q: "CREATE TABLE ks.c (k int PRIMARY KEY, v list<list<int>>)", want: "0x2200 Non-frozen collections are not allowed inside collections"},
		{q: "CREATE TABLE ks.c (k int PRIMARY KEY, v int)", want: "ok"},
		{q: "ALTER TABLE ks.c ADD w 'org.apache.cassandra.db.marshal.LexicalUUIDType'", want: "0x2200 Custom types are not supported"},
		{q: "ALTER TABLE ks.c ADD w set<frozen<list<'org.apache.cassandra.db.marshal.UTF8Type'>>>", want: "0x2200 Custom types are not supported"},
		{q: "CREATE TABLE ks.every (k int, c frozen<tuple<int, text>>, l list<frozen<map<text, set<int>>>>, " +
			"m map<timeuuid, frozen<list<tuple<int, blob>>>>, s set<frozen<tuple<date, time>>>, d duration, PRIMARY KEY (k, c))", want: "ok"},
	})
	// What the catalog holds decodes to what the executor accepted.
	st := meta.State()
	tb := st.Schema.Table("ks", "every")
	if tb == nil || st.Schema.Table("ks", "c") == nil {
		t.Fatal("accepted tables are missing from the schema")
	}
	raw, err := json.Marshal(tb)
	if err != nil {
		t.Fatal(err)
	}
	var back schema.Table
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("stored definition does not decode: %v", err)
	}
	for i, c := range tb.Columns {
		if !back.Columns[i].Type.Equal(c.Type) {
			t.Errorf("column %s: stored %s, read back %s", c.Name, c.Type, back.Columns[i].Type)
		}
	}
	runSteps(t, e, []step{{q: "DROP TABLE ks.c", want: "ok"}, {q: "DROP KEYSPACE ks", want: "ok"}})
}

// Cosmos DB's autoscale and cell-level timestamp table options are
// accepted, stored and shown in system_schema.tables.extensions; the
// autoscale ceiling provisions a table that has no throughput of its own
// (issue 15).
func TestCosmosTableOptions(t *testing.T) {
	e, meta := ddlExecutor(t)
	runSteps(t, e, []step{
		{q: "CREATE TABLE ks.a (k int PRIMARY KEY) WITH cosmosdb_autoscale_max_throughput = 4000 AND cosmosdb_cell_level_timestamp = true", want: "ok"},
		{q: "CREATE TABLE ks.b (k int PRIMARY KEY) WITH cosmosdb_provisioned_throughput = 400 AND cosmosdb_autoscale_max_throughput = 4000", want: "ok"},
		{q: "CREATE TABLE ks.c (k int PRIMARY KEY) WITH cosmosdb_cell_level_timestamp = 'false'", want: "ok"},
		{q: "CREATE TABLE ks.d (k int PRIMARY KEY) WITH cosmosdb_cell_level_timestamp = 3", want: "0x2300 Invalid value for property 'cosmosdb_cell_level_timestamp'"},
		{q: "CREATE TABLE ks.d (k int PRIMARY KEY) WITH cosmosdb_autoscale_max_throughput = 'lots'", want: "0x2300 Invalid value for property 'cosmosdb_autoscale_max_throughput'"},
		{q: "CREATE TABLE ks.d (k int PRIMARY KEY) WITH cosmosdb_autoscale_max_throughput = 2000000", want: "0x2200 cosmosdb_provisioned_throughput = 2000000 exceeds the maximum"},
	})
	type opts struct {
		throughput int64
		autoscale  string
		cell       string
	}
	check := func(table string, want opts) {
		t.Helper()
		tb := meta.State().Schema.Table("ks", table)
		if tb == nil {
			t.Fatalf("table ks.%s missing", table)
		}
		got := opts{tb.Options.Throughput, tb.Options.Other[AutoscaleOption], tb.Options.Other[CellLevelTimestampOption]}
		if got != want {
			t.Fatalf("ks.%s options %+v, want %+v", table, got, want)
		}
	}
	check("a", opts{4000, "4000", "true"})
	check("b", opts{400, "4000", ""})
	check("c", opts{0, "", "false"})

	// Raising the ceiling raises a throughput that came from it, not one
	// given apart from it.
	runSteps(t, e, []step{
		{q: "ALTER TABLE ks.a WITH cosmosdb_autoscale_max_throughput = 6000 AND cosmosdb_cell_level_timestamp = false", want: "ok"},
		{q: "ALTER TABLE ks.b WITH cosmosdb_autoscale_max_throughput = 6000", want: "ok"},
		{q: "ALTER TABLE ks.c WITH cosmosdb_autoscale_max_throughput = 1000", want: "ok"},
	})
	check("a", opts{6000, "6000", "false"})
	check("b", opts{400, "6000", ""})
	check("c", opts{1000, "1000", "false"})

	res, err := e.Query(context.Background(), &Session{}, "SELECT table_name, extensions FROM system_schema.tables WHERE keyspace_name = 'ks'", Request{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, row := range res.Rows.Rows {
		got[string(row[0])] = cqltype.Format(res.Rows.Columns[1].Type, row[1])
	}
	want := map[string]string{
		"a": "{'cosmosdb_autoscale_max_throughput': 0x36303030, 'cosmosdb_cell_level_timestamp': 0x66616c7365, 'cosmosdb_provisioned_throughput': 0x36303030}",
		"b": "{'cosmosdb_autoscale_max_throughput': 0x36303030, 'cosmosdb_provisioned_throughput': 0x343030}",
		"c": "{'cosmosdb_autoscale_max_throughput': 0x31303030, 'cosmosdb_cell_level_timestamp': 0x66616c7365, 'cosmosdb_provisioned_throughput': 0x31303030}",
	}
	for table, w := range want {
		if got[table] != w {
			t.Errorf("extensions of ks.%s = %s, want %s", table, got[table], w)
		}
	}
}

// A table definition stored by an older node that no node can decode any
// more (a custom column type) can still be dropped, alone or with its
// keyspace (issue 15).
func TestDropUndecodableTable(t *testing.T) {
	e, meta, kv := ddlExecutorKV(t)
	runSteps(t, e, []step{
		{q: "CREATE KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", want: "ok"},
		{q: "CREATE TABLE ks.t (k int PRIMARY KEY, v int)", want: "ok"},
		{q: "CREATE TABLE ks2.t (k int PRIMARY KEY, v int)", want: "ok"},
	})
	ctx := context.Background()
	for _, ks := range []string{"ks", "ks2"} {
		key := cluster.StoredTableKey(ks, "t")
		rec, ok, err := kv.Get(ctx, key)
		if err != nil || !ok {
			t.Fatalf("stored table %s.t: %v", ks, err)
		}
		var def map[string]any
		if err := json.Unmarshal(rec.Value, &def); err != nil {
			t.Fatal(err)
		}
		cols := def["columns"].([]any)
		cols[len(cols)-1].(map[string]any)["type"] = "'org.apache.cassandra.db.marshal.LexicalUUIDType'"
		raw, err := json.Marshal(def)
		if err != nil {
			t.Fatal(err)
		}
		rev, err := metakv.Do(ctx, kv, metakv.Put(key, raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := meta.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
	}
	runSteps(t, e, []step{
		{q: "SELECT * FROM ks.t", want: "0x2200 unconfigured table t"},
		{q: "DROP TABLE ks.t", want: "ok"},
		{q: "DROP KEYSPACE ks2", want: "ok"},
		{q: "CREATE TABLE ks.t (k int PRIMARY KEY, v int)", want: "ok"},
		{q: "CREATE KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", want: "ok"},
	})
}
