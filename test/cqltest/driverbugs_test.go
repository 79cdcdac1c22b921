package cqltest

import (
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// TestDriverBugs drives, with gocql, the bugs that real drivers found
// (issue 15), each on the node of its own test.
func TestDriverBugs(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	e := &env{c: c, s: c.Session(t, 0)}
	e.host, e.port = c.CQLHostPort(0)
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"CustomTypeRefused", testCustomTypeRefused},
		{"GlobalTableSpec", testGlobalTableSpec},
		{"ProtocolDiscovery", testProtocolDiscovery},
		{"CosmosTableOptions", testCosmosTableOptions},
		{"SetAndMapOrder", testSetAndMapOrder},
		{"FailedConditionalBatch", testFailedConditionalBatch},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, e) })
	}
}

// A custom type used to be accepted, then make its table "unconfigured"
// and its keyspace impossible to drop. It is refused up front, and the
// keyspace stays usable and droppable.
func testCustomTypeRefused(t *testing.T, e *env) {
	keyspace(t, e.s, "custom")
	for _, q := range []string{
		"CREATE TABLE custom.t (k int PRIMARY KEY, v 'org.apache.cassandra.db.marshal.LexicalUUIDType')",
		"CREATE TABLE custom.t (k 'org.apache.cassandra.db.marshal.LexicalUUIDType' PRIMARY KEY, v int)",
		"CREATE TABLE custom.t (k int PRIMARY KEY, v list<'org.apache.cassandra.db.marshal.LexicalUUIDType'>)",
	} {
		queryErr(t, e.s, q, codeInvalid, "Custom types are not supported")
	}
	exec(t, e.s, "CREATE TABLE custom.t (k int PRIMARY KEY, v int)")
	queryErr(t, e.s, "ALTER TABLE custom.t ADD w 'org.apache.cassandra.db.marshal.LexicalUUIDType'", codeInvalid, "Custom types are not supported")
	exec(t, e.s, "INSERT INTO custom.t (k, v) VALUES (1, 2)")
	eq(t, "v", ints(t, e.s, "SELECT v FROM custom.t WHERE k = 1"), []int64{2})
	exec(t, e.s, "DROP TABLE custom.t", "DROP KEYSPACE custom")
}

// Prepared metadata carries the global table spec, so gocql learns a
// statement's keyspace and table (Query.Keyspace, Query.Table) and routes
// by token without reading schema metadata.
func testGlobalTableSpec(t *testing.T, e *env) {
	keyspace(t, e.s, "gts")
	exec(t, e.s, "CREATE TABLE gts.t (k int, c int, v text, PRIMARY KEY (k, c))")
	// A session without a keyspace: what Keyspace() returns can only come
	// from the prepared metadata.
	for _, tc := range []struct {
		q    string
		args []any
	}{
		{"INSERT INTO gts.t (k, c, v) VALUES (?, ?, ?)", []any{1, 2, "x"}},
		{"SELECT v FROM gts.t WHERE k = ? AND c = ?", []any{1, 2}},
		{"UPDATE gts.t SET v = ? WHERE k = ? AND c = ?", []any{"y", 1, 2}},
		{"DELETE FROM gts.t WHERE k = ? AND c = ?", []any{1, 3}},
	} {
		q := e.s.Query(tc.q, tc.args...)
		if err := q.Exec(); err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		if q.Keyspace() != "gts" || q.Table() != "t" {
			t.Fatalf("%s: Keyspace() = %q, Table() = %q; want gts, t", tc.q, q.Keyspace(), q.Table())
		}
		key, err := e.s.Query(tc.q, tc.args...).GetRoutingKey()
		if err != nil || len(key) != 4 {
			t.Fatalf("%s: routing key %x, %v; want the 4-byte k", tc.q, key, err)
		}
	}
	// The result metadata of a SELECT carries it too.
	iter := e.s.Query("SELECT k, c, v FROM gts.t WHERE k = ?", 1).Iter()
	for _, col := range iter.Columns() {
		if col.Keyspace != "gts" || col.Table != "t" {
			t.Fatalf("column %s: %s.%s, want gts.t", col.Name, col.Keyspace, col.Table)
		}
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
}

// gocql negotiates the protocol version by itself (ProtoVersion unset),
// and a driver that asks for v5 gets a Protocol error that it takes as a
// version mismatch (an error on stream 0) rather than a broken response.
func testProtocolDiscovery(t *testing.T, e *env) {
	s := e.session(t, func(cc *gocql.ClusterConfig) { cc.ProtoVersion = 0 })
	eq(t, "release", strs(t, s, "SELECT release_version FROM system.local"), []string{"3.11.17"})

	cc := e.c.NewClusterConfig(0)
	cc.ProtoVersion = 5
	cc.DisableInitialHostLookup = true
	s5, err := cc.CreateSession()
	if err == nil {
		s5.Close()
		t.Fatal("a v5 session opened; cosmosd speaks v4 only")
	}
	if !strings.Contains(err.Error(), "unsupported protocol version") || strings.Contains(err.Error(), "unexpected protocol version") {
		t.Fatalf("v5 session: %v; want the server's Protocol error naming the unsupported version", err)
	}
}

// Cosmos DB's autoscale and cell-level timestamp options are accepted and
// shown in system_schema.tables.extensions with the provisioned
// throughput, which the autoscale ceiling sets when it is not given.
func testCosmosTableOptions(t *testing.T, e *env) {
	keyspace(t, e.s, "cosmosopts")
	exec(t, e.s,
		"CREATE TABLE cosmosopts.t (k int PRIMARY KEY, v int) WITH cosmosdb_autoscale_max_throughput = 4000 AND cosmosdb_cell_level_timestamp = true",
		"CREATE TABLE cosmosopts.u (k int PRIMARY KEY, v int) WITH cosmosdb_provisioned_throughput = 400",
		"ALTER TABLE cosmosopts.u WITH cosmosdb_autoscale_max_throughput = 5000 AND cosmosdb_cell_level_timestamp = false",
		"INSERT INTO cosmosopts.t (k, v) VALUES (1, 1)")
	want := map[string]map[string]string{
		"t": {"cosmosdb_autoscale_max_throughput": "4000", "cosmosdb_cell_level_timestamp": "true", "cosmosdb_provisioned_throughput": "4000"},
		"u": {"cosmosdb_autoscale_max_throughput": "5000", "cosmosdb_cell_level_timestamp": "false", "cosmosdb_provisioned_throughput": "400"},
	}
	iter := e.s.Query("SELECT table_name, extensions FROM system_schema.tables WHERE keyspace_name = 'cosmosopts'").Iter()
	var name string
	var ext map[string][]byte
	n := 0
	for iter.Scan(&name, &ext) {
		got := map[string]string{}
		for k, v := range ext {
			got[k] = string(v)
		}
		eq(t, "extensions of "+name, got, want[name])
		n++
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	eq(t, "tables", n, 2)
	queryErr(t, e.s, "ALTER TABLE cosmosopts.t WITH cosmosdb_cell_level_timestamp = 'maybe'", codeConfig, "cosmosdb_cell_level_timestamp")
}

// Sets and maps come back deduplicated and in the element (key) type's
// order, whatever order and duplicates the client sent: literals, bound
// values and additions (issue 15).
func testSetAndMapOrder(t *testing.T, e *env) {
	keyspace(t, e.s, "setorder")
	exec(t, e.s, "CREATE TABLE setorder.t (k int PRIMARY KEY, s set<int>, txt set<text>, u set<timeuuid>, m map<int, text>, ls list<frozen<set<int>>>)",
		"CREATE TABLE setorder.keyed (k int, fs frozen<set<int>>, v int, PRIMARY KEY (k, fs))")
	exec(t, e.s, "INSERT INTO setorder.t (k, s, txt, m, ls) VALUES (1, {3, -1, 3, 200, 2}, {'b', 'a', 'ab', 'b', 'Z'}, {2: 'x', -7: 'y', 10: 'w'}, [{3, 1}, {2, 2}])")
	times := []time.Time{time.Unix(3000, 0), time.Unix(1000, 0), time.Unix(2000, 0)}
	var uuids []gocql.UUID
	for _, tm := range times {
		uuids = append(uuids, gocql.UUIDFromTime(tm))
	}
	execArgs(t, e.s, "INSERT INTO setorder.t (k, s, txt, u, m, ls) VALUES (2, ?, ?, ?, ?, ?)",
		[]int{3, -1, 3, 200, 2}, []string{"b", "a", "ab", "b", "Z"}, append(uuids, uuids[0]),
		map[int]string{2: "x", -7: "y", 10: "w"}, [][]int{{3, 1}, {2, 2}})

	for _, k := range []int{1, 2} {
		var s []int
		var txt []string
		var ls [][]int
		var m map[int]string
		one(t, e.s, "SELECT s, txt, m, ls FROM setorder.t WHERE k = ?", []any{k}, &s, &txt, &m, &ls)
		eq(t, "s", s, []int{-1, 2, 3, 200})
		eq(t, "txt", txt, []string{"Z", "a", "ab", "b"})
		eq(t, "ls", ls, [][]int{{1, 3}, {2}})
		eq(t, "m", m, map[int]string{-7: "y", 2: "x", 10: "w"})
		// A Go map loses the order: read the keys as sent on the wire.
		eq(t, "map keys in order", mapKeys(t, e, k), []int{-7, 2, 10})
	}
	var u []gocql.UUID
	one(t, e.s, "SELECT u FROM setorder.t WHERE k = 2", nil, &u)
	eq(t, "timeuuids by time", u, []gocql.UUID{uuids[1], uuids[2], uuids[0]})

	exec(t, e.s, "UPDATE setorder.t SET s = s + {0, -5, 3}, m = m + {-100: 'a', 5: 'b'} WHERE k = 1")
	execArgs(t, e.s, "UPDATE setorder.t SET s = s + ?, txt = txt + ? WHERE k = 1", []int{1000, -1000, 1000}, []string{"aa", "A"})
	var s []int
	var txt []string
	one(t, e.s, "SELECT s, txt FROM setorder.t WHERE k = 1", nil, &s, &txt)
	eq(t, "s after additions", s, []int{-1000, -5, -1, 0, 2, 3, 200, 1000})
	eq(t, "txt after additions", txt, []string{"A", "Z", "a", "aa", "ab", "b"})
	eq(t, "map keys after addition", mapKeys(t, e, 1), []int{-100, -7, 2, 5, 10})

	// A frozen set in the primary key is one key whatever order it was
	// sent in.
	execArgs(t, e.s, "INSERT INTO setorder.keyed (k, fs, v) VALUES (1, ?, 1)", []int{2, 1, 2})
	execArgs(t, e.s, "INSERT INTO setorder.keyed (k, fs, v) VALUES (1, ?, 2)", []int{1, 2})
	exec(t, e.s, "INSERT INTO setorder.keyed (k, fs, v) VALUES (1, {2, 1}, 3)")
	eq(t, "rows", count(t, e.s, "SELECT COUNT(*) FROM setorder.keyed WHERE k = 1"), int64(1))
	eq(t, "v", ints(t, e.s, "SELECT v FROM setorder.keyed WHERE k = 1 AND fs = ?", []int{2, 1}), []int64{3})
}

// rawValue keeps a cell's bytes as the server sent them.
type rawValue []byte

func (r *rawValue) UnmarshalCQL(_ gocql.TypeInfo, data []byte) error {
	*r = append((*r)[:0], data...)
	return nil
}

// mapKeys returns the keys of setorder.t's map m in the order the server
// sent them (a Go map loses it).
func mapKeys(t *testing.T, e *env, k int) []int {
	t.Helper()
	var raw rawValue
	one(t, e.s, "SELECT m FROM setorder.t WHERE k = ?", []any{k}, &raw)
	keys, _, err := cqltype.DecodeMap(raw)
	if err != nil {
		t.Fatalf("map of row %d: %v", k, err)
	}
	out := make([]int, len(keys))
	for i, key := range keys {
		v, err := cqltype.Unmarshal(cqltype.Scalar(cqltype.Int), key)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = int(v.(int32))
	}
	return out
}

// A conditional batch that did not apply answers one row per row its
// conditions addressed, in clustering order, with [applied] = false, the
// primary key and the conditioned columns' current values, as Cassandra
// 3.11 does; gocql reads them with ExecuteBatchCAS and the iterator.
func testFailedConditionalBatch(t *testing.T, e *env) {
	keyspace(t, e.s, "casbatch")
	exec(t, e.s, "CREATE TABLE casbatch.t (k int, c int, v int, w text, PRIMARY KEY (k, c))",
		"INSERT INTO casbatch.t (k, c, v, w) VALUES (1, 1, 10, 'a')",
		"INSERT INTO casbatch.t (k, c, v, w) VALUES (1, 2, 20, 'b')")

	b := e.s.NewBatch(gocql.UnloggedBatch)
	b.Query("UPDATE casbatch.t SET w = 'x' WHERE k = 1 AND c = 2 IF v = ?", 21)
	b.Query("UPDATE casbatch.t SET v = 11 WHERE k = 1 AND c = 1 IF w = 'a'")
	b.Query("UPDATE casbatch.t SET w = 'z' WHERE k = 1 AND c = 3 IF v = 30")
	b.Query("INSERT INTO casbatch.t (k, c, v) VALUES (1, 4, 40)")
	var k, c, v int
	var w string
	applied, iter, err := e.s.ExecuteBatchCAS(b, &k, &c, &v, &w)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range iter.Columns() {
		names = append(names, col.Name)
	}
	eq(t, "columns", names, []string{"[applied]", "k", "c", "v", "w"})
	type row struct {
		applied bool
		k, c, v int
		w       string
	}
	got := []row{{applied, k, c, v, w}}
	for iter.Scan(&applied, &k, &c, &v, &w) {
		got = append(got, row{applied, k, c, v, w})
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	eq(t, "rows", got, []row{{false, 1, 1, 10, "a"}, {false, 1, 2, 20, "b"}})
	eq(t, "nothing written", count(t, e.s, "SELECT COUNT(*) FROM casbatch.t WHERE k = 1"), int64(2))

	// Applied: one row, [applied] = true.
	b = e.s.NewBatch(gocql.UnloggedBatch)
	b.Query("UPDATE casbatch.t SET w = 'x' WHERE k = 1 AND c = 2 IF v = 20")
	b.Query("UPDATE casbatch.t SET v = 11 WHERE k = 1 AND c = 1 IF w = 'a'")
	m := map[string]any{}
	applied, iter, err = e.s.MapExecuteBatchCAS(b, m)
	if err != nil || !applied {
		t.Fatalf("applied %v, %v", applied, err)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	eq(t, "w", strs(t, e.s, "SELECT w FROM casbatch.t WHERE k = 1 AND c = 2"), []string{"x"})
}
