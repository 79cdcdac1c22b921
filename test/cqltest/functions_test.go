package cqltest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/test/testcluster"
)

// TestFunctionsAndJSON drives, with gocql, the native scalar functions in
// SELECT, INSERT, UPDATE and WHERE, and JSON in and out (issue 15, items 3
// and 4), on a node of its own.
func TestFunctionsAndJSON(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	e := &env{c: c, s: c.Session(t, 0)}
	e.host, e.port = c.CQLHostPort(0)
	keyspace(t, e.s, "fj")
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"SelectFunctions", testSelectFunctions},
		{"ValueFunctions", testValueFunctions},
		{"SelectJSON", testSelectJSON},
		{"InsertJSON", testInsertJSON},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, e) })
	}
}

// columnNames returns the result column names of q as the driver sees
// them.
func columnNames(t *testing.T, s *gocql.Session, q string) []string {
	t.Helper()
	iter := s.Query(q).Iter()
	var names []string
	for _, c := range iter.Columns() {
		names = append(names, c.Name)
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return names
}

func testSelectFunctions(t *testing.T, e *env) {
	s := e.s
	exec(t, s, "CREATE TABLE fj.f (k int PRIMARY KEY, v int, f double, ts timestamp, tu timeuuid)")
	exec(t, s, "INSERT INTO fj.f (k, v, f, ts, tu) VALUES (1, 42, 2.75, '2011-02-03 04:05:06.789+0000', 50554d6e-29bb-11e5-b345-feff819cdc9f) USING TIMESTAMP 1234 AND TTL 600")
	eq(t, "names", columnNames(t, s, "SELECT now(), currentTimestamp(), writetime(v), ttl(v), token(k), cast(v as text), toJson(v), system.tojson(f) FROM fj.f WHERE k = 1"),
		[]string{"system.now()", "system.currenttimestamp()", "writetime(v)", "ttl(v)", "system.token(k)", "cast(v as text)", "system.tojson(v)", "system.tojson(f)"})

	before := time.Now().Add(-time.Second)
	var now gocql.UUID
	var cts, cdate time.Time
	var uid gocql.UUID
	var wt int64
	var ttl int
	var asText, vJSON, tsJSON string
	var asInt int
	var asDouble float64
	one(t, s, "SELECT now(), currentTimestamp(), currentDate(), uuid(), writetime(v), ttl(v), cast(v as text), cast(f as int), cast(v as double), toJson(v), toJson(ts) FROM fj.f WHERE k = 1",
		nil, &now, &cts, &cdate, &uid, &wt, &ttl, &asText, &asInt, &asDouble, &vJSON, &tsJSON)
	after := time.Now().Add(time.Second)
	if now.Version() != 1 || now.Time().Before(before) || now.Time().After(after) {
		t.Fatalf("now() = %v (time %v)", now, now.Time())
	}
	if cts.Before(before) || cts.After(after) {
		t.Fatalf("currentTimestamp() = %v", cts)
	}
	if today := time.Now().UTC().Truncate(24 * time.Hour); !cdate.Equal(today) && !cdate.Equal(today.Add(-24*time.Hour)) {
		t.Fatalf("currentDate() = %v, want %v", cdate, today)
	}
	if uid.Version() != 4 {
		t.Fatalf("uuid() = %v, want version 4", uid)
	}
	eq(t, "writetime", wt, int64(1234))
	if ttl <= 0 || ttl > 600 {
		t.Fatalf("ttl(v) = %d, want within (0, 600]", ttl)
	}
	eq(t, "cast as text", asText, "42")
	eq(t, "cast double as int", asInt, 2)
	eq(t, "cast int as double", asDouble, 42.0)
	eq(t, "toJson(v)", vJSON, "42")
	eq(t, "toJson(ts)", tsJSON, `"2011-02-03 04:05:06.789Z"`)

	var minU, maxU gocql.UUID
	var tsOfTu time.Time
	one(t, s, "SELECT minTimeuuid(ts), maxTimeuuid(ts), toTimestamp(tu) FROM fj.f WHERE k = 1", nil, &minU, &maxU, &tsOfTu)
	want := time.Date(2011, 2, 3, 4, 5, 6, 789e6, time.UTC)
	if !minU.Time().Equal(want) || !maxU.Time().Equal(want) || minU == maxU {
		t.Fatalf("minTimeuuid/maxTimeuuid(ts) = %v (%v), %v (%v), want time %v", minU, minU.Time(), maxU, maxU.Time(), want)
	}
	eq(t, "toTimestamp(tu)", tsOfTu.UTC(), time.Date(2015, 7, 14, 0, 0, 18, 805e6, time.UTC))

	for _, tc := range []struct{ q, frag string }{
		{"SELECT nosuch(v) FROM fj.f", "Unknown function 'nosuch'"},
		{"SELECT now(v) FROM fj.f", "0 required but 1 provided"},
		{"SELECT toDate(v) FROM fj.f", "Type error: v cannot be passed as argument 0 of function system.todate"},
		{"SELECT intAsBlob(f) FROM fj.f", "Type error: f cannot be passed as argument 0 of function system.intasblob"},
		{"SELECT cast(ts as int) FROM fj.f", "ts cannot be cast to int"},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
}

func testValueFunctions(t *testing.T, e *env) {
	s := e.s
	exec(t, s, "CREATE TABLE fj.v (k int, at timeuuid, ts timestamp, d date, tm time, b blob, PRIMARY KEY (k, at))")
	before := time.Now().Add(-time.Second)
	exec(t, s, "INSERT INTO fj.v (k, at, ts, d, tm, b) VALUES (1, currentTimeUUID(), currentTimestamp(), toDate(now()), currentTime(), bigintAsBlob(7))")
	exec(t, s, "UPDATE fj.v SET ts = toTimestamp(now()), b = textAsBlob('x') WHERE k = 2 AND at = now()")
	after := time.Now().Add(time.Second)
	iter := s.Query("SELECT k, at, ts, b FROM fj.v WHERE k IN (1, 2)").Iter()
	var k int
	var at gocql.UUID
	var ts time.Time
	var b []byte
	rows := 0
	for iter.Scan(&k, &at, &ts, &b) {
		rows++
		if at.Version() != 1 || at.Time().Before(before) || at.Time().After(after) || ts.Before(before) || ts.After(after) {
			t.Fatalf("row %d: at = %v (%v), ts = %v", k, at, at.Time(), ts)
		}
		want := map[int][]byte{1: {0, 0, 0, 0, 0, 0, 0, 7}, 2: []byte("x")}[k]
		eq(t, "b", b, want)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	eq(t, "rows", rows, 2)
	// Functions in WHERE terms: rows since a minute ago.
	eq(t, "window", count(t, s, "SELECT count(*) FROM fj.v WHERE k = 1 AND at > minTimeuuid(?)", before.Add(-time.Minute)), int64(1))
	eq(t, "window (dateOf)", count(t, s, "SELECT count(*) FROM fj.v WHERE k = 1 AND at < maxTimeuuid(toTimestamp(now()))"), int64(1))
	// fromJson() as a value.
	exec(t, s, "CREATE TABLE fj.fj (k int PRIMARY KEY, l list<int>, m map<text, int>)")
	exec(t, s, `INSERT INTO fj.fj (k, l, m) VALUES (1, fromJson('[3, 1]'), fromJson('{"a": 1}'))`)
	exec(t, s, `UPDATE fj.fj SET l = fromJson('[5]') WHERE k = 2`)
	var l []int
	var m map[string]int
	one(t, s, "SELECT l, m FROM fj.fj WHERE k = 1", nil, &l, &m)
	eq(t, "fromJson list", l, []int{3, 1})
	eq(t, "fromJson map", m, map[string]int{"a": 1})
	for _, tc := range []struct{ q, frag string }{
		{"INSERT INTO fj.fj (k, l) VALUES (3, nosuch(1))", "Unknown function nosuch called"},
		{"INSERT INTO fj.fj (k, l) VALUES (3, fromJson('[\"x\"]'))", "Error decoding JSON value for l"},
		{"INSERT INTO fj.fj (k, l) VALUES (3, fromJson('[1'))", "Error decoding JSON value for l"},
		{"INSERT INTO fj.v (k, at) VALUES (3, currentTimestamp())", "cannot be assigned to at"},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
}

func testSelectJSON(t *testing.T, e *env) {
	s := e.s
	exec(t, s, `CREATE TABLE fj.j (k int, c text, "Cap" int, big bigint, dec decimal, ts timestamp, u uuid, b blob, ok boolean,
		l list<text>, st set<int>, m map<int, text>, PRIMARY KEY (k, c))`)
	exec(t, s, `INSERT INTO fj.j (k, c, "Cap", big, dec, ts, u, b, ok, l, st, m) VALUES (1, 'a"b', 3, 9000000000, 1.50,
		'2011-02-03 04:05:06.789+0000', 6ab09bec-e68e-48d9-a5f8-97e6fb4c9b47, 0xcafe, true, ['x', 'y'], {2, 1}, {2: 'two', 1: 'one'})`)
	exec(t, s, `INSERT INTO fj.j (k, c) VALUES (1, 'z')`)
	eq(t, "names", columnNames(t, s, "SELECT JSON * FROM fj.j"), []string{"[json]"})
	docs := strs(t, s, "SELECT JSON * FROM fj.j WHERE k = 1")
	eq(t, "rows", len(docs), 2)
	eq(t, "row 1", docs[0], `{"k": 1, "c": "a\"b", "\"Cap\"": 3, "b": "0xcafe", "big": 9000000000, "dec": 1.50, "l": ["x", "y"], `+
		`"m": {"1": "one", "2": "two"}, "ok": true, "st": [1, 2], "ts": "2011-02-03 04:05:06.789Z", "u": "6ab09bec-e68e-48d9-a5f8-97e6fb4c9b47"}`)
	eq(t, "row 2", docs[1], `{"k": 1, "c": "z", "\"Cap\"": null, "b": null, "big": null, "dec": null, "l": null, "m": null, "ok": null, "st": null, "ts": null, "u": null}`)
	for _, d := range docs {
		var v map[string]any
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			t.Fatalf("SELECT JSON row is not JSON: %s: %v", d, err)
		}
	}
	eq(t, "selected", strs(t, s, "SELECT JSON c, big AS b2, toJson(st) FROM fj.j WHERE k = 1 AND c = 'a\"b'"),
		[]string{`{"c": "a\"b", "b2": 9000000000, "system.tojson(st)": "[1, 2]"}`})
	eq(t, "aggregate", strs(t, s, "SELECT JSON count(*), max(big) FROM fj.j WHERE k = 1"),
		[]string{`{"count": 2, "system.max(big)": 9000000000}`})
}

func testInsertJSON(t *testing.T, e *env) {
	s := e.s
	exec(t, s, `CREATE TABLE fj.i (k int, c int, v text, n int, ts timestamp, m map<int, text>, PRIMARY KEY (k, c))`)
	exec(t, s, `INSERT INTO fj.i JSON '{"k": 1, "c": 1, "v": "a", "n": 5, "ts": "2011-02-03 04:05:06.789Z", "m": {"1": "x"}}'`)
	eq(t, "inserted", strs(t, s, "SELECT JSON * FROM fj.i WHERE k = 1 AND c = 1"),
		[]string{`{"k": 1, "c": 1, "m": {"1": "x"}, "n": 5, "ts": "2011-02-03 04:05:06.789Z", "v": "a"}`})
	// DEFAULT UNSET leaves the other columns as they are.
	exec(t, s, `INSERT INTO fj.i JSON '{"k": 1, "c": 1, "v": "b"}' DEFAULT UNSET`)
	eq(t, "unset", strs(t, s, "SELECT JSON v, n FROM fj.i WHERE k = 1 AND c = 1"), []string{`{"v": "b", "n": 5}`})
	// DEFAULT NULL, the default, nulls them.
	exec(t, s, `INSERT INTO fj.i JSON '{"k": 1, "c": 1, "v": "c"}'`)
	eq(t, "null", strs(t, s, "SELECT JSON v, n, m FROM fj.i WHERE k = 1 AND c = 1"), []string{`{"v": "c", "n": null, "m": null}`})
	// A bound document, prepared.
	execArgs(t, s, "INSERT INTO fj.i JSON ?", `{"k": 2, "c": 1, "n": "7"}`)
	eq(t, "bound", ints(t, s, "SELECT n FROM fj.i WHERE k = 2 AND c = 1"), []int64{7})
	for _, tc := range []struct{ q, frag string }{
		{`INSERT INTO fj.i JSON '{"k": 1, "c": 1, "nope": 1}'`, "JSON values map contains unrecognized column: nope"},
		{`INSERT INTO fj.i JSON '{"k": 1, "c": 1, "n": "x"}'`, "Error decoding JSON value for n"},
		{`INSERT INTO fj.i JSON '{"k": 1'`, "Could not decode JSON string as a map"},
		{`INSERT INTO fj.i JSON '{"c": 1}'`, "Some partition key parts are missing: k"},
		{`INSERT INTO fj.i JSON '{"k": 1, "c": 1, "ts": true}'`, "Error decoding JSON value for ts"},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
}
