package cqltest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

func testFunctions(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "fn")
	exec(t, s, "CREATE TABLE fn.t (k int PRIMARY KEY, tu timeuuid, u uuid, ts timestamp, d date, b blob, i int, tx text)")
	before := time.Now().Add(-time.Second)
	exec(t, s, "INSERT INTO fn.t (k, tu, u, ts, d, b, i, tx) VALUES (1, now(), uuid(), toTimestamp(now()), currentDate(), intAsBlob(42), blobAsInt(0x0000002a), 'x')")
	after := time.Now().Add(time.Second)
	var tu, u gocql.UUID
	var ts, d time.Time
	var b []byte
	var i int
	one(t, s, "SELECT tu, u, ts, d, b, i FROM fn.t WHERE k = 1", nil, &tu, &u, &ts, &d, &b, &i)
	if tu.Version() != 1 || tu.Time().Before(before) || tu.Time().After(after) {
		t.Fatalf("now() = %v (time %v)", tu, tu.Time())
	}
	if u.Version() != 4 {
		t.Fatalf("uuid() = %v, want version 4", u)
	}
	if ts.Before(before) || ts.After(after) {
		t.Fatalf("toTimestamp(now()) = %v", ts)
	}
	if today := time.Now().UTC().Truncate(24 * time.Hour); !d.Equal(today) && !d.Equal(today.Add(-24*time.Hour)) {
		t.Fatalf("currentDate() = %v, want %v", d, today)
	}
	eq(t, "intAsBlob", b, []byte{0, 0, 0, 42})
	eq(t, "blobAsInt", i, 42)
	var tsOf, dOf time.Time
	var unix int64
	var blobOfText []byte
	one(t, s, "SELECT toTimestamp(tu), toDate(tu), toUnixTimestamp(tu), textAsBlob(tx) FROM fn.t WHERE k = 1", nil, &tsOf, &dOf, &unix, &blobOfText)
	if !tsOf.Equal(tu.Time().Truncate(time.Millisecond)) || unix != tu.Time().UnixMilli() {
		t.Fatalf("toTimestamp/toUnixTimestamp = %v/%d, want %v", tsOf, unix, tu.Time())
	}
	eq(t, "textAsBlob", blobOfText, []byte("x"))
	var asText string
	one(t, s, "SELECT CAST(i AS text) FROM fn.t WHERE k = 1", nil, &asText)
	eq(t, "cast", asText, "42")
	// minTimeuuid/maxTimeuuid bracket timeuuids in WHERE.
	exec(t, s, "CREATE TABLE fn.events (k int, at timeuuid, PRIMARY KEY (k, at))")
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for m := 0; m < 5; m++ {
		execArgs(t, s, "INSERT INTO fn.events (k, at) VALUES (1, ?)", gocql.UUIDFromTime(base.Add(time.Duration(m)*time.Minute)))
	}
	eq(t, "timeuuid window", count(t, s, "SELECT count(*) FROM fn.events WHERE k = 1 AND at > maxTimeuuid('2024-05-01 12:00:30+0000') AND at < minTimeuuid('2024-05-01 12:03:00+0000')"), int64(2))
	for _, tc := range []struct{ q, frag string }{
		{"INSERT INTO fn.t (k, i) VALUES (2, now())", "now"},
		{"INSERT INTO fn.t (k, i) VALUES (2, blobAsInt(0x01))", "not a valid binary representation for type int"},
		{"SELECT nosuch(i) FROM fn.t", "nosuch"},
		{"SELECT toTimestamp(i) FROM fn.t", ""},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
}

// Murmur3 tokens of known keys, computed with the Python driver's
// pure-Python murmur3 (cassandra/murmur3.py) and matching the vectors in
// the reference notes.
var knownTokens = []struct {
	table string
	key   string // WHERE clause
	token int64
}{
	{"fn_int", "k = 1", -4069959284402364209},
	{"fn_int", "k = 2", -3248873570005575792},
	{"fn_int", "k = 3", 9010454139840013625},
	{"fn_bigint", "k = 1", 6292367497774912474},
	{"fn_text", "k = 'a'", -8839064797231613815},
	{"fn_text", "k = 'theo'", -1457224325554927207},
	{"fn_comp", "a = 1 AND b = 'a'", 6516349416904725244},
	{"fn_comp2", "a = 'theo' AND b = 'doe'", -8577239209494765838},
}

func testToken(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "tok")
	exec(t, s, "CREATE TABLE tok.fn_int (k int PRIMARY KEY, v int)",
		"CREATE TABLE tok.fn_bigint (k bigint PRIMARY KEY, v int)",
		"CREATE TABLE tok.fn_text (k text PRIMARY KEY, v int)",
		"CREATE TABLE tok.fn_comp (a int, b text, v int, PRIMARY KEY ((a, b)))",
		"CREATE TABLE tok.fn_comp2 (a text, b text, c int, v int, PRIMARY KEY ((a, b), c))",
		"INSERT INTO tok.fn_int (k, v) VALUES (1, 1)", "INSERT INTO tok.fn_int (k, v) VALUES (2, 2)", "INSERT INTO tok.fn_int (k, v) VALUES (3, 3)",
		"INSERT INTO tok.fn_bigint (k, v) VALUES (1, 1)",
		"INSERT INTO tok.fn_text (k, v) VALUES ('a', 1)", "INSERT INTO tok.fn_text (k, v) VALUES ('theo', 1)",
		"INSERT INTO tok.fn_comp (a, b, v) VALUES (1, 'a', 1)",
		"INSERT INTO tok.fn_comp2 (a, b, c, v) VALUES ('theo', 'doe', 1, 1)")
	for _, tc := range knownTokens {
		cols := "k"
		if tc.table == "fn_comp" || tc.table == "fn_comp2" {
			cols = "a, b"
		}
		q := fmt.Sprintf("SELECT token(%s) FROM tok.%s WHERE %s", cols, tc.table, tc.key)
		eq(t, q, ints(t, s, q), []int64{tc.token})
		// The same key found by its token.
		q2 := fmt.Sprintf("SELECT token(%s) FROM tok.%s WHERE token(%s) = ?", cols, tc.table, cols)
		eq(t, q2, ints(t, s, q2, tc.token), []int64{tc.token})
	}
	// Token ranges.
	eq(t, "token(k) > ?", ints(t, s, "SELECT k FROM tok.fn_int WHERE token(k) > ?", int64(-4069959284402364209)), []int64{2, 3})
	eq(t, "token range", ints(t, s, "SELECT k FROM tok.fn_int WHERE token(k) >= ? AND token(k) < ?", int64(-4069959284402364209), int64(9010454139840013625)), []int64{1, 2})
	eq(t, "token <= min", ints(t, s, "SELECT k FROM tok.fn_int WHERE token(k) <= -9223372036854775808"), []int64(nil))
	eq(t, "token > max", ints(t, s, "SELECT k FROM tok.fn_int WHERE token(k) > 9223372036854775807"), []int64(nil))
	eq(t, "token(k) > token(literal)", ints(t, s, "SELECT k FROM tok.fn_int WHERE token(k) > token(1)"), []int64{2, 3})
	eq(t, "token(a, b) <= token(...)", ints(t, s, "SELECT v FROM tok.fn_comp WHERE token(a, b) <= token(1, 'a')"), []int64{1})
	eq(t, "token with filtering", ints(t, s, "SELECT k FROM tok.fn_int WHERE token(k) > ? AND v = 3 ALLOW FILTERING", int64(-4069959284402364209)), []int64{3})
	for _, tc := range []struct{ q, frag string }{
		{"SELECT * FROM tok.fn_comp WHERE token(a) > 0", "The token() function must be applied to all partition key components or none of them"},
		{"SELECT * FROM tok.fn_comp WHERE token(b, a) > 0", "The token function arguments must be in the partition key order: a, b"},
		{"SELECT token(v) FROM tok.fn_int", ""},
		{"SELECT * FROM tok.fn_int WHERE token(k) > 'x'", ""},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
}

// testFullScanPaging reads a table of many partitions with small pages
// and checks that every row comes exactly once, in token order and, within
// a partition, in clustering order.
func testFullScanPaging(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "scan")
	exec(t, s, "CREATE TABLE scan.t (k int, c int, v int, PRIMARY KEY (k, c))")
	const parts, perPart = 150, 3
	b := s.NewBatch(gocql.UnloggedBatch)
	for k := 0; k < parts; k++ {
		for c := 0; c < perPart; c++ {
			b.Query("INSERT INTO scan.t (k, c, v) VALUES (?, ?, ?)", k, c, k*perPart+c)
		}
		if b.Size() >= 60 {
			if err := s.ExecuteBatch(b); err != nil {
				t.Fatal(err)
			}
			b = s.NewBatch(gocql.UnloggedBatch)
		}
	}
	if b.Size() > 0 {
		if err := s.ExecuteBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	for _, ps := range []int{1, 7, 100, 5000} {
		iter := s.Query("SELECT token(k), k, c, v FROM scan.t").PageSize(ps).Iter()
		seen := map[int]bool{}
		var tok, prevTok int64 = 0, -1 << 63
		var k, c, v, prevK, prevC int
		prevK = -1
		for iter.Scan(&tok, &k, &c, &v) {
			if seen[v] {
				t.Fatalf("page size %d: row %d returned twice", ps, v)
			}
			seen[v] = true
			if tok < prevTok {
				t.Fatalf("page size %d: token %d after %d", ps, tok, prevTok)
			}
			if k == prevK && c <= prevC {
				t.Fatalf("page size %d: partition %d clustering %d after %d", ps, k, c, prevC)
			}
			if v != k*perPart+c {
				t.Fatalf("row (%d, %d) has v = %d", k, c, v)
			}
			prevTok, prevK, prevC = tok, k, c
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if len(seen) != parts*perPart {
			t.Fatalf("page size %d: %d rows, want %d", ps, len(seen), parts*perPart)
		}
	}
	// Manual paging: pages are at most the page size and resume exactly.
	pages := pagesOf(t, s, 50, "SELECT k, c FROM scan.t")
	total := 0
	for _, p := range pages {
		total += len(p)
	}
	eq(t, "rows over manual pages", total, parts*perPart)
	// A filtered scan with small pages (many pages hold no match).
	iter := s.Query("SELECT v FROM scan.t WHERE c = 2 ALLOW FILTERING").PageSize(10).Iter()
	n := 0
	var v int
	for iter.Scan(&v) {
		if v%perPart != 2 {
			t.Fatalf("filtered row v = %d", v)
		}
		n++
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	eq(t, "filtered scan rows", n, parts)
	// A token-range scan in slices covers the table once.
	bounds := []int64{-1 << 63, -3e18, 0, 3e18}
	total = 0
	for i, lo := range bounds {
		q := "SELECT k FROM scan.t WHERE token(k) >= ?"
		args := []any{lo}
		if i+1 < len(bounds) {
			q += " AND token(k) < ?"
			args = append(args, bounds[i+1])
		}
		total += len(query(t, s, q, args...))
	}
	eq(t, "token-sliced scan", total, parts*perPart)
}

func testPaging(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "pg")
	exec(t, s, "CREATE TABLE pg.t (k int, c int, st int STATIC, v int, PRIMARY KEY (k, c))",
		"CREATE TABLE pg.d (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
	for c := 0; c < 95; c++ {
		execArgs(t, s, "INSERT INTO pg.t (k, c, v) VALUES (1, ?, ?)", c, c)
		execArgs(t, s, "INSERT INTO pg.d (k, c, v) VALUES (1, ?, ?)", c, c)
	}
	exec(t, s, "UPDATE pg.t SET st = 7 WHERE k = 1", "INSERT INTO pg.t (k, st) VALUES (2, 8)")
	for c := 0; c < 5; c++ {
		execArgs(t, s, "INSERT INTO pg.t (k, c, v) VALUES (3, ?, ?)", c, 100+c)
	}
	collect := func(q string, ps int, args ...any) []int {
		t.Helper()
		iter := s.Query(q, args...).PageSize(ps).Iter()
		var out []int
		var v int
		for iter.Scan(&v) {
			out = append(out, v)
		}
		if err := iter.Close(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return out
	}
	seq := func(from, to, step int) []int {
		var out []int
		for i := from; i != to; i += step {
			out = append(out, i)
		}
		return out
	}
	for _, ps := range []int{1, 10, 94, 95, 96} {
		eq(t, fmt.Sprint("one partition, page ", ps), collect("SELECT v FROM pg.t WHERE k = 1", ps), seq(0, 95, 1))
		eq(t, fmt.Sprint("reversed, page ", ps), collect("SELECT v FROM pg.t WHERE k = 1 ORDER BY c DESC", ps), seq(94, -1, -1))
		eq(t, fmt.Sprint("DESC table, page ", ps), collect("SELECT v FROM pg.d WHERE k = 1", ps), seq(94, -1, -1))
		eq(t, fmt.Sprint("slice, page ", ps), collect("SELECT v FROM pg.t WHERE k = 1 AND c >= 10 AND c < 30", ps), seq(10, 30, 1))
		eq(t, fmt.Sprint("static, page ", ps), collect("SELECT st FROM pg.t WHERE k = 1", ps), repeat(7, 95))
		got := collect("SELECT v FROM pg.t WHERE k IN (1, 3)", ps)
		eq(t, fmt.Sprint("IN, page ", ps), len(got), 100)
		eq(t, fmt.Sprint("clustering IN reversed, page ", ps), collect("SELECT v FROM pg.t WHERE k = 1 AND c IN (3, 50, 7, 94, 0) ORDER BY c DESC", ps), []int{94, 50, 7, 3, 0})
		eq(t, fmt.Sprint("clustering IN on DESC table, page ", ps), collect("SELECT v FROM pg.d WHERE k = 1 AND c IN (3, 50, 7)", ps), []int{50, 7, 3})
		eq(t, fmt.Sprint("PER PARTITION LIMIT reversed, page ", ps), collect("SELECT v FROM pg.t WHERE k IN (1, 3) ORDER BY c DESC PER PARTITION LIMIT 2", 0), []int{94, 93, 104, 103})
		// Static-only partitions appear once in scans.
		n := 0
		iter := s.Query("SELECT k, st FROM pg.t").PageSize(ps).Iter()
		var k int
		var st *int
		saw2 := 0
		for iter.Scan(&k, &st) {
			n++
			if k == 2 {
				saw2++
				if st == nil || *st != 8 {
					t.Fatalf("static-only partition row st = %v", st)
				}
			}
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 101 || saw2 != 1 {
			t.Fatalf("page size %d: scan rows %d (static-only %d), want 101 (1)", ps, n, saw2)
		}
	}
	// Resuming from a saved paging state in a new query.
	iter := s.Query("SELECT v FROM pg.t WHERE k = 1").PageSize(30).Iter()
	first := iter.NumRows()
	state := iter.PageState()
	iter.Close()
	if first != 30 || len(state) == 0 {
		t.Fatalf("first page %d rows, state %x", first, state)
	}
	iter = s.Query("SELECT v FROM pg.t WHERE k = 1").PageSize(30).PageState(state).Iter()
	var v int
	if !iter.Scan(&v) || v != 30 {
		t.Fatalf("resumed page starts at %d, want 30", v)
	}
	iter.Close()
	// Paging over system tables.
	var cols int
	iter = s.Query("SELECT column_name FROM system_schema.columns").PageSize(3).Iter()
	for iter.Scan(new(string)) {
		cols++
	}
	if err := iter.Close(); err != nil || cols < 20 {
		t.Fatalf("paged system_schema.columns: %d rows, %v", cols, err)
	}
	// A paging state that is not one the server issued is refused.
	err := s.Query("SELECT v FROM pg.t WHERE k = 1").PageSize(30).PageState([]byte("garbage")).Exec()
	wantErr(t, "garbage paging state", err, codeInvalid, "")
	err = s.Query("SELECT v FROM pg.t WHERE k = 1").PageSize(30).PageState(bytes.Repeat([]byte{1}, 64)).Exec()
	if err != nil {
		wantErr(t, "bogus paging state", err, codeInvalid, "")
	}
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func testFiltering(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "flt")
	exec(t, s, "CREATE TABLE flt.t (a int, b int, c int, d int, st int STATIC, v int, tags set<text>, PRIMARY KEY ((a, b), c, d))")
	for a := 0; a < 3; a++ {
		for c := 0; c < 3; c++ {
			for d := 0; d < 2; d++ {
				execArgs(t, s, "INSERT INTO flt.t (a, b, c, d, v, tags, st) VALUES (?, 0, ?, ?, ?, ?, ?)", a, c, d, a*100+c*10+d, []string{fmt.Sprint("c", c)}, a)
			}
		}
	}
	needs := []string{
		"SELECT v FROM flt.t WHERE v = 1",
		"SELECT v FROM flt.t WHERE a = 1",
		"SELECT v FROM flt.t WHERE a = 1 AND c = 1",
		"SELECT v FROM flt.t WHERE c = 1",
		"SELECT v FROM flt.t WHERE c > 1",
		"SELECT v FROM flt.t WHERE a = 1 AND b = 0 AND v > 100",
		"SELECT v FROM flt.t WHERE a = 1 AND b = 0 AND st = 1",
		"SELECT v FROM flt.t WHERE tags CONTAINS 'c1'",
		"SELECT v FROM flt.t WHERE token(a, b) > 0 AND v = 1",
		"SELECT v FROM flt.t WHERE (c, d) > (1, 0)",
	}
	for _, q := range needs {
		queryErr(t, s, q, codeInvalid, "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING")
		if err := s.Query(q + " ALLOW FILTERING").Exec(); err != nil {
			t.Fatalf("%s ALLOW FILTERING: %v", q, err)
		}
	}
	// Queries that never need ALLOW FILTERING.
	for _, q := range []string{
		"SELECT v FROM flt.t",
		"SELECT v FROM flt.t WHERE a = 1 AND b = 0",
		"SELECT v FROM flt.t WHERE a = 1 AND b = 0 AND c = 1 AND d > 0",
		"SELECT v FROM flt.t WHERE a = 1 AND b = 0 AND c > 0",
		"SELECT v FROM flt.t WHERE a IN (1, 2) AND b = 0 AND c IN (0, 1)",
		"SELECT v FROM flt.t WHERE token(a, b) > 0",
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Results of filtering.
	for _, tc := range []struct {
		q    string
		want []int64
	}{
		{"SELECT v FROM flt.t WHERE a = 1 AND b = 0 AND v >= 111 ALLOW FILTERING", []int64{111, 120, 121}},
		{"SELECT v FROM flt.t WHERE a = 2 AND d = 1 ALLOW FILTERING", []int64{201, 211, 221}},
		{"SELECT v FROM flt.t WHERE a = 0 AND b = 0 AND d = 1 ALLOW FILTERING", []int64{1, 11, 21}},
		{"SELECT v FROM flt.t WHERE a = 0 AND b = 0 AND tags CONTAINS 'c2' ALLOW FILTERING", []int64{20, 21}},
		{"SELECT v FROM flt.t WHERE a = 1 AND b = 0 AND c > 0 AND v < 120 ALLOW FILTERING", []int64{110, 111}},
		{"SELECT v FROM flt.t WHERE a = 1 AND b = 0 AND st = 1 AND d = 0 ALLOW FILTERING", []int64{100, 110, 120}},
		{"SELECT v FROM flt.t WHERE a = 1 AND b = 0 AND st = 2 ALLOW FILTERING", nil},
		{"SELECT v FROM flt.t WHERE v IN (1, 221, 5) ALLOW FILTERING", []int64{1, 221}},
	} {
		got := ints(t, s, tc.q)
		if len(got) > 0 && tc.q[len(tc.q)-1] != 'X' && !isPartitionOrdered(tc.q) {
			sortInts(got)
		}
		eq(t, tc.q, got, tc.want)
	}
	eq(t, "filtering + LIMIT", len(query(t, s, "SELECT v FROM flt.t WHERE d = 1 LIMIT 4 ALLOW FILTERING")), 4)
	eq(t, "filtering count", count(t, s, "SELECT count(*) FROM flt.t WHERE d = 1 ALLOW FILTERING"), int64(9))
	for _, tc := range []struct{ q, frag string }{
		{"SELECT v FROM flt.t WHERE a IN (1, 2) ALLOW FILTERING", "IN restrictions are not supported when the query involves filtering"},
		{"SELECT v FROM flt.t WHERE v != 1 ALLOW FILTERING", "Unsupported \"!=\" relation"},
		{"SELECT v FROM flt.t WHERE a = 1 AND b = 0 AND d = 1", "PRIMARY KEY column \"d\" cannot be restricted as preceding column \"c\" is not restricted"},
		{"SELECT v FROM flt.t WHERE v IS NOT NULL ALLOW FILTERING", ""},
	} {
		err := s.Query(tc.q).Exec()
		var re gocql.RequestError
		if err == nil || !asRequestError(err, &re) || (re.Code() != codeInvalid && re.Code() != codeSyntax) {
			t.Fatalf("%s: %v, want Invalid", tc.q, err)
		}
		if re.Code() == codeInvalid && tc.frag != "" {
			wantErr(t, tc.q, err, codeInvalid, tc.frag)
		}
	}
}

// isPartitionOrdered reports queries whose rows come from one partition,
// already in clustering order.
func isPartitionOrdered(q string) bool { return bytes.Contains([]byte(q), []byte("a = ")) }

func sortInts(v []int64) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}
