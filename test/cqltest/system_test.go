package cqltest

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/cql/frame"
)

func testSystemTables(t *testing.T, e *env) {
	s := e.s
	t.Run("Local", func(t *testing.T) {
		iter := s.Query("SELECT * FROM system.local WHERE key = 'local'").Iter()
		types := map[string]string{}
		for _, c := range iter.Columns() {
			types[c.Name] = c.TypeInfo.Type().String()
			if c.Keyspace != "system" || c.Table != "local" {
				t.Fatalf("column %s spec %s.%s", c.Name, c.Keyspace, c.Table)
			}
		}
		row := map[string]any{}
		if !iter.MapScan(row) {
			t.Fatalf("system.local has no row: %v", iter.Close())
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		// The types gocql asserts in hostInfoFromMap and the Python driver
		// reads (reference §2.1, §2.3).
		for col, typ := range map[string]string{
			"key": "varchar", "cluster_name": "varchar", "data_center": "varchar", "rack": "varchar", "release_version": "varchar",
			"partitioner": "varchar", "host_id": "uuid", "schema_version": "uuid", "rpc_address": "inet", "broadcast_address": "inet",
			"listen_address": "inet", "tokens": "set", "cql_version": "varchar", "native_protocol_version": "varchar", "bootstrapped": "varchar",
		} {
			if types[col] != typ {
				t.Errorf("system.local.%s type %q, want %q", col, types[col], typ)
			}
		}
		eq(t, "key", row["key"], "local")
		eq(t, "partitioner", row["partitioner"], "org.apache.cassandra.dht.Murmur3Partitioner")
		eq(t, "data_center", row["data_center"], "datacenter1")
		eq(t, "rack", row["rack"], "rack1")
		eq(t, "native_protocol_version", row["native_protocol_version"], "4")
		if rv, _ := row["release_version"].(string); !strings.HasPrefix(rv, "3.11") {
			t.Errorf("release_version %q, want 3.11.x (so drivers use system.peers and system_schema)", rv)
		}
		if rpc, _ := row["rpc_address"].(string); rpc != e.host {
			t.Errorf("rpc_address %q, want the node's address %q", rpc, e.host)
		}
		if cn, _ := row["cluster_name"].(string); cn == "" {
			t.Error("empty cluster_name")
		}
		tokens, _ := row["tokens"].([]string)
		if len(tokens) == 0 {
			t.Fatal("no tokens")
		}
		for _, tok := range tokens {
			if _, err := strconv.ParseInt(tok, 10, 64); err != nil {
				t.Errorf("token %q is not a decimal int64", tok)
			}
		}
		if hid, ok := row["host_id"].(gocql.UUID); !ok || hid == (gocql.UUID{}) {
			t.Errorf("host_id %v", row["host_id"])
		}
		// Both peers tables exist and are empty on one node.
		eq(t, "peers", len(query(t, s, "SELECT * FROM system.peers")), 0)
		eq(t, "peers_v2", len(query(t, s, "SELECT * FROM system.peers_v2")), 0)
		// The host gocql discovered from system.local is the node.
		it := s.Query("SELECT key FROM system.local").Iter()
		h := it.Host()
		it.Close()
		if h == nil || !h.ConnectAddress().Equal(net.ParseIP(e.host)) || h.Port() != e.port || h.DataCenter() != "datacenter1" ||
			h.Partitioner() != "org.apache.cassandra.dht.Murmur3Partitioner" || len(h.Tokens()) == 0 {
			t.Fatalf("gocql host = %v", h)
		}
		// schema_version changes with every DDL.
		var v1, v2 gocql.UUID
		one(t, s, "SELECT schema_version FROM system.local WHERE key = 'local'", nil, &v1)
		exec(t, s, "CREATE KEYSPACE IF NOT EXISTS sysver WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
		one(t, s, "SELECT schema_version FROM system.local WHERE key = 'local'", nil, &v2)
		if v1 == v2 {
			t.Fatalf("schema_version %v did not change after CREATE KEYSPACE", v1)
		}
		exec(t, s, "DROP KEYSPACE sysver")
	})
	t.Run("Schema", func(t *testing.T) {
		keyspace(t, s, "sysks")
		exec(t, s, `CREATE TABLE sysks.t (a int, b text, c1 int, c2 timestamp, st text STATIC, l list<int>, m map<text, frozen<set<int>>>,
			tp tuple<int, text>, v text, PRIMARY KEY ((a, b), c1, c2)) WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC) AND comment = 'c'`)
		var durable bool
		var repl map[string]string
		one(t, s, "SELECT durable_writes, replication FROM system_schema.keyspaces WHERE keyspace_name = 'sysks'", nil, &durable, &repl)
		if !durable || repl["class"] != "org.apache.cassandra.locator.SimpleStrategy" || repl["replication_factor"] != "1" {
			t.Fatalf("keyspace row %v %v", durable, repl)
		}
		var flags []string
		var id gocql.UUID
		var comment string
		one(t, s, "SELECT flags, id, comment FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?", []any{"sysks", "t"}, &flags, &id, &comment)
		eq(t, "flags", flags, []string{"compound"})
		eq(t, "comment", comment, "c")
		type col struct {
			kind, order, typ string
			pos              int
		}
		want := map[string]col{
			"a": {"partition_key", "none", "int", 0}, "b": {"partition_key", "none", "text", 1},
			"c1": {"clustering", "asc", "int", 0}, "c2": {"clustering", "desc", "timestamp", 1},
			"st": {"static", "none", "text", -1}, "l": {"regular", "none", "list<int>", -1},
			"m": {"regular", "none", "map<text, frozen<set<int>>>", -1}, "tp": {"regular", "none", "frozen<tuple<int, text>>", -1},
			"v": {"regular", "none", "text", -1},
		}
		iter := s.Query("SELECT column_name, kind, clustering_order, type, position FROM system_schema.columns WHERE keyspace_name = 'sysks' AND table_name = 't'").Iter()
		var name string
		var c col
		got := map[string]col{}
		for iter.Scan(&name, &c.kind, &c.order, &c.typ, &c.pos) {
			got[name] = c
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		eq(t, "system_schema.columns", got, want)
		// The other schema tables answer, empty, with the columns drivers read.
		for _, q := range []string{
			"SELECT * FROM system_schema.views WHERE keyspace_name = 'sysks'",
			"SELECT * FROM system_schema.types",
			"SELECT * FROM system_schema.functions",
			"SELECT * FROM system_schema.aggregates",
			"SELECT * FROM system_schema.triggers",
			"SELECT * FROM system_schema.indexes",
			"SELECT type_name, field_names, field_types FROM system_schema.types WHERE keyspace_name = 'sysks'",
		} {
			eq(t, q, len(query(t, s, q)), 0)
		}
		// Keyspace list includes system keyspaces drivers describe.
		names := strs(t, s, "SELECT keyspace_name FROM system_schema.keyspaces")
		for _, want := range []string{"sysks", "system", "system_schema"} {
			found := false
			for _, n := range names {
				found = found || n == want
			}
			if !found {
				t.Fatalf("keyspaces %v lack %s", names, want)
			}
		}
		queryErr(t, s, "SELECT * FROM system.nosuch", codeInvalid, "unconfigured table nosuch")
		queryErr(t, s, "SELECT * FROM system_schema.nosuch", codeInvalid, "unconfigured table nosuch")
		queryErr(t, s, "UPDATE system_schema.keyspaces SET durable_writes = false WHERE keyspace_name = 'sysks'", codeUnauthorized, "")
		queryErr(t, s, "TRUNCATE system.local", codeUnauthorized, "")
	})
}

func testMetadata(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "meta")
	exec(t, s, `CREATE TABLE meta.t (a int, b text, c1 int, c2 timestamp, st text STATIC, l list<int>, m map<text, frozen<set<int>>>,
			tp tuple<int, text>, v text, PRIMARY KEY ((a, b), c1, c2)) WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)`)
	km, err := s.KeyspaceMetadata("meta")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(km.StrategyClass, "SimpleStrategy") || km.StrategyOptions["replication_factor"] != "1" {
		t.Fatalf("keyspace strategy %s %v", km.StrategyClass, km.StrategyOptions)
	}
	tm := km.Tables["t"]
	if tm == nil {
		t.Fatalf("tables %v", km.Tables)
	}
	names := func(cols []*gocql.ColumnMetadata) []string {
		var out []string
		for _, c := range cols {
			out = append(out, c.Name)
		}
		return out
	}
	eq(t, "partition key", names(tm.PartitionKey), []string{"a", "b"})
	eq(t, "clustering columns", names(tm.ClusteringColumns), []string{"c1", "c2"})
	eq(t, "clustering orders", []gocql.ColumnOrder{tm.ClusteringColumns[0].Order, tm.ClusteringColumns[1].Order}, []gocql.ColumnOrder{gocql.ASC, gocql.DESC})
	types := map[string]string{}
	kinds := map[string]gocql.ColumnKind{}
	for name, c := range tm.Columns {
		types[name] = fmt.Sprint(c.Type)
		kinds[name] = c.Kind
	}
	eq(t, "column kinds", kinds, map[string]gocql.ColumnKind{"a": gocql.ColumnPartitionKey, "b": gocql.ColumnPartitionKey,
		"c1": gocql.ColumnClusteringKey, "c2": gocql.ColumnClusteringKey, "st": gocql.ColumnStatic, "l": gocql.ColumnRegular,
		"m": gocql.ColumnRegular, "tp": gocql.ColumnRegular, "v": gocql.ColumnRegular})
	eq(t, "column types", types, map[string]string{"a": "int", "b": "text", "c1": "int", "c2": "timestamp", "st": "text",
		"l": "list(int)", "m": "map(text, set(int))", "tp": "tuple(int, text)", "v": "text"})
	// A keyspace that does not exist.
	if _, err := s.KeyspaceMetadata("nosuchks"); err == nil {
		t.Fatal("metadata of a missing keyspace")
	}
}

// testTokenAware checks that prepared statements carry partition-key
// indexes, so gocql routes by token without reading metadata, and that a
// token-aware session works end to end.
func testTokenAware(t *testing.T, e *env) {
	keyspace(t, e.s, "ta")
	exec(t, e.s, "CREATE TABLE ta.t (a int, b text, c int, v int, PRIMARY KEY ((a, b), c))")
	s := e.session(t, func(cc *gocql.ClusterConfig) {
		cc.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	})
	execArgs(t, s, "INSERT INTO ta.t (a, b, c, v) VALUES (?, ?, ?, ?)", 1, "a", 1, 10)
	eq(t, "token-aware read", ints(t, s, "SELECT v FROM ta.t WHERE a = ? AND b = ? AND c = ?", 1, "a", 1), []int64{10})
	// The routing key gocql builds from the PREPARE pk indexes, in
	// partition-key order even when the markers are in another order.
	for _, tc := range []struct {
		q    string
		args []any
	}{
		{"INSERT INTO ta.t (a, b, c, v) VALUES (?, ?, ?, ?)", []any{1, "a", 2, 3}},
		{"SELECT v FROM ta.t WHERE b = ? AND a = ?", []any{"a", 1}},
		{"UPDATE ta.t SET v = ? WHERE c = ? AND b = ? AND a = ?", []any{5, 1, "a", 1}},
		{"DELETE FROM ta.t WHERE a = ? AND b = ? AND c = ?", []any{1, "a", 9}},
	} {
		rk, err := s.Query(tc.q, tc.args...).GetRoutingKey()
		if err != nil {
			t.Fatal(err)
		}
		// Composite key (int 1, text 'a'): [len][value][0] per component.
		want := []byte{0, 4, 0, 0, 0, 1, 0, 0, 1, 'a', 0}
		if !bytes.Equal(rk, want) {
			t.Fatalf("%s: routing key %x, want %x", tc.q, rk, want)
		}
	}
	// The raw PREPARE result carries the indexes.
	c := dialRaw(t, e.addr())
	c.startup("")
	for _, tc := range []struct {
		q    string
		want []uint16
	}{
		{"SELECT v FROM ta.t WHERE b = ? AND a = ?", []uint16{1, 0}},
		{"SELECT v FROM ta.t WHERE a = ? AND b = ? AND c > ?", []uint16{0, 1}},
		{"INSERT INTO ta.t (c, v, b, a) VALUES (?, ?, ?, ?)", []uint16{3, 2}},
		{"UPDATE ta.t USING TTL ? SET v = ? WHERE a = ? AND b = ? AND c = ?", []uint16{2, 3}},
		{"SELECT v FROM ta.t WHERE a = 1 AND b = ?", nil},
		{"SELECT v FROM ta.t WHERE token(a, b) > ?", nil},
	} {
		r, ok := c.roundTrip(&frame.Prepare{Query: tc.q}).(*frame.PreparedResult)
		if !ok {
			t.Fatalf("PREPARE %s failed", tc.q)
		}
		if len(r.Metadata.PKIndices) != len(tc.want) || (len(tc.want) > 0 && !equalU16(r.Metadata.PKIndices, tc.want)) {
			t.Fatalf("%s: pk indexes %v, want %v", tc.q, r.Metadata.PKIndices, tc.want)
		}
	}
}

func equalU16(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
