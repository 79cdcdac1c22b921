package cqltest

import (
	"fmt"
	"testing"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"
)

func testSelectKeys(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "sk")
	exec(t, s, "CREATE TABLE sk.t (k int, c int, v text, PRIMARY KEY (k, c))",
		"CREATE TABLE sk.comp (a int, b text, c int, v int, PRIMARY KEY ((a, b), c))")
	for k := 1; k <= 4; k++ {
		for c := 1; c <= 3; c++ {
			execArgs(t, s, "INSERT INTO sk.t (k, c, v) VALUES (?, ?, ?)", k, c, fmt.Sprintf("%d.%d", k, c))
			for _, b := range []string{"x", "y"} {
				execArgs(t, s, "INSERT INTO sk.comp (a, b, c, v) VALUES (?, ?, ?, ?)", k, b, c, k*100+c)
			}
		}
	}
	eq(t, "EQ", strs(t, s, "SELECT v FROM sk.t WHERE k = 2"), []string{"2.1", "2.2", "2.3"})
	eq(t, "missing key", len(query(t, s, "SELECT v FROM sk.t WHERE k = 99")), 0)
	eq(t, "IN", sorted(strs(t, s, "SELECT v FROM sk.t WHERE k IN (3, 1, 3, 99) AND c = 2")), []string{"1.2", "3.2"})
	// Rows of one partition stay together and in clustering order.
	got := strs(t, s, "SELECT v FROM sk.t WHERE k IN (1, 2)")
	if !(fmt.Sprint(got) == "[1.1 1.2 1.3 2.1 2.2 2.3]" || fmt.Sprint(got) == "[2.1 2.2 2.3 1.1 1.2 1.3]") {
		t.Fatalf("IN rows = %v, want each partition in clustering order", got)
	}
	eq(t, "composite EQ", ints(t, s, "SELECT v FROM sk.comp WHERE a = 1 AND b = 'y'"), []int64{101, 102, 103})
	eq(t, "composite IN on last", len(query(t, s, "SELECT v FROM sk.comp WHERE a = 1 AND b IN ('x', 'y')")), 6)
	eq(t, "composite IN cartesian", len(query(t, s, "SELECT v FROM sk.comp WHERE a IN (1, 2) AND b IN ('x', 'y') AND c = 3")), 4)
	for _, tc := range []struct{ q, frag string }{
		{"SELECT * FROM sk.t WHERE k = 1 AND k = 2", "k cannot be restricted by more than one relation if it includes an Equal"},
		{"SELECT * FROM sk.t WHERE k = 1 AND token(k) > 0", "cannot be restricted by both a normal relation and a token relation"},
		{"SELECT * FROM sk.t WHERE k = 'a'", ""},
		{"SELECT * FROM sk.t WHERE nosuch = 1", "Undefined column name nosuch"},
		{"SELECT nosuch FROM sk.t", "Undefined column name nosuch"},
		{"SELECT * FROM sk.t WHERE k = null", "Invalid null value"},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
}

func testSelectClustering(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "scl")
	exec(t, s, "CREATE TABLE scl.t (k int, c1 int, c2 int, c3 int, v int, PRIMARY KEY (k, c1, c2, c3))",
		"CREATE TABLE scl.d (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)")
	for c1 := 0; c1 < 3; c1++ {
		for c2 := 0; c2 < 3; c2++ {
			for c3 := 0; c3 < 2; c3++ {
				execArgs(t, s, "INSERT INTO scl.t (k, c1, c2, c3, v) VALUES (1, ?, ?, ?, ?)", c1, c2, c3, c1*100+c2*10+c3)
			}
			execArgs(t, s, "INSERT INTO scl.d (k, c1, c2, v) VALUES (1, ?, ?, ?)", c1, c2, c1*10+c2)
		}
	}
	for _, tc := range []struct {
		where string
		want  []int64
	}{
		{"c1 = 1", []int64{100, 101, 110, 111, 120, 121}},
		{"c1 > 1", []int64{200, 201, 210, 211, 220, 221}},
		{"c1 >= 1 AND c1 < 2", []int64{100, 101, 110, 111, 120, 121}},
		{"c1 <= 0", []int64{0, 1, 10, 11, 20, 21}},
		{"c1 = 1 AND c2 > 0", []int64{110, 111, 120, 121}},
		{"c1 = 1 AND c2 >= 1 AND c2 <= 1", []int64{110, 111}},
		{"c1 = 2 AND c2 = 1 AND c3 = 1", []int64{211}},
		{"c1 = 2 AND c2 = 1 AND c3 > 0", []int64{211}},
		{"c1 IN (2, 0) AND c2 = 2", []int64{20, 21, 220, 221}},
		{"c1 IN (0, 2) AND c2 IN (1, 2) AND c3 = 0", []int64{10, 20, 210, 220}},
		{"c1 IN (0, 1) AND c2 < 1", []int64{0, 1, 100, 101}},
		{"c1 = 1 AND c2 IN (2, 0) AND c3 < 1", []int64{100, 120}},
		// Multi-column relations.
		{"(c1, c2) = (1, 2)", []int64{120, 121}},
		{"(c1, c2, c3) IN ((2, 2, 1), (0, 0, 0))", []int64{0, 221}},
		{"(c1, c2) > (1, 1)", []int64{120, 121, 200, 201, 210, 211, 220, 221}},
		{"(c1, c2) >= (1, 1) AND (c1, c2) < (2, 1)", []int64{110, 111, 120, 121, 200, 201}},
		{"(c1, c2, c3) > (2, 1, 0)", []int64{211, 220, 221}},
		{"(c1, c2, c3) <= (0, 1, 0)", []int64{0, 1, 10}},
		{"c1 = 1 AND (c2, c3) > (1, 0)", []int64{111, 120, 121}},
	} {
		q := "SELECT v FROM scl.t WHERE k = 1 AND " + tc.where
		eq(t, q, ints(t, s, q), tc.want)
	}
	// Mixed clustering order (c2 DESC): multi-column slices compare values,
	// not storage order.
	for _, tc := range []struct {
		where string
		want  []int64
	}{
		{"c1 = 1", []int64{12, 11, 10}},
		{"c1 = 1 AND c2 > 0", []int64{12, 11}},
		{"c1 = 1 AND c2 <= 1", []int64{11, 10}},
		{"c1 >= 1 AND c1 < 2", []int64{12, 11, 10}},
		{"(c1, c2) = (2, 0)", []int64{20}},
		{"(c1, c2) > (1, 1)", []int64{12, 22, 21, 20}},
		{"(c1, c2) < (1, 1)", []int64{2, 1, 0, 10}},
		{"(c1, c2) >= (0, 2) AND (c1, c2) <= (1, 0)", []int64{2, 10}},
	} {
		q := "SELECT v FROM scl.d WHERE k = 1 AND " + tc.where
		eq(t, q, ints(t, s, q), tc.want)
		// The same through a prepared statement with the order reversed.
		eq(t, q+" ORDER BY DESC", ints(t, s, q+" ORDER BY c1 DESC, c2 ASC"), reverseInts(tc.want))
	}
	for _, tc := range []struct{ q, frag string }{
		{"SELECT v FROM scl.t WHERE k = 1 AND c2 = 1", "PRIMARY KEY column \"c2\" cannot be restricted as preceding column \"c1\" is not restricted"},
		{"SELECT v FROM scl.t WHERE k = 1 AND c1 > 1 AND c2 = 1", "Clustering column \"c2\" cannot be restricted (preceding column \"c1\" is restricted by a non-EQ relation)"},
		{"SELECT v FROM scl.t WHERE k = 1 AND c1 = 1 AND c3 = 1", "PRIMARY KEY column \"c3\" cannot be restricted as preceding column \"c2\" is not restricted"},
		{"SELECT v FROM scl.t WHERE k = 1 AND c1 > 1 AND c1 > 2", "More than one restriction was found for the start bound on c1"},
		{"SELECT v FROM scl.t WHERE k = 1 AND c1 < 1 AND c1 <= 2", "More than one restriction was found for the end bound on c1"},
		{"SELECT v FROM scl.t WHERE k = 1 AND (c2, c3) > (1, 1)", ""},
		{"SELECT v FROM scl.t WHERE k = 1 AND (c1, v) > (1, 1)", "Multi-column relations can only be applied to clustering columns but was applied to: v"},
		{"SELECT v FROM scl.t WHERE k = 1 AND (c2, c1) > (1, 1)", "Clustering columns must appear in the PRIMARY KEY order in multi-column relations"},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
	// With ALLOW FILTERING the skipped and non-EQ-preceded columns filter.
	eq(t, "skipped column filtered", ints(t, s, "SELECT v FROM scl.t WHERE k = 1 AND c2 = 1 AND c3 = 1 ALLOW FILTERING"), []int64{11, 111, 211})
	eq(t, "after slice filtered", ints(t, s, "SELECT v FROM scl.t WHERE k = 1 AND c1 > 0 AND c2 = 2 AND c3 = 0 ALLOW FILTERING"), []int64{120, 220})
}

func reverseInts(in []int64) []int64 {
	out := make([]int64, len(in))
	for i, v := range in {
		out[len(in)-1-i] = v
	}
	return out
}

func testOrderBy(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "ob")
	exec(t, s, "CREATE TABLE ob.t (k int, c1 int, c2 text, v int, PRIMARY KEY (k, c1, c2))")
	for k := 1; k <= 3; k++ {
		for c1 := 1; c1 <= 3; c1++ {
			for _, c2 := range []string{"a", "b"} {
				execArgs(t, s, "INSERT INTO ob.t (k, c1, c2, v) VALUES (?, ?, ?, ?)", k, c1, c2, k*100+c1*10+int(c2[0]-'a'))
			}
		}
	}
	eq(t, "natural", ints(t, s, "SELECT v FROM ob.t WHERE k = 1"), []int64{110, 111, 120, 121, 130, 131})
	eq(t, "ASC", ints(t, s, "SELECT v FROM ob.t WHERE k = 1 ORDER BY c1 ASC"), []int64{110, 111, 120, 121, 130, 131})
	eq(t, "DESC", ints(t, s, "SELECT v FROM ob.t WHERE k = 1 ORDER BY c1 DESC"), []int64{131, 130, 121, 120, 111, 110})
	eq(t, "DESC both", ints(t, s, "SELECT v FROM ob.t WHERE k = 1 ORDER BY c1 DESC, c2 DESC"), []int64{131, 130, 121, 120, 111, 110})
	eq(t, "DESC slice", ints(t, s, "SELECT v FROM ob.t WHERE k = 1 AND c1 >= 2 ORDER BY c1 DESC LIMIT 3"), []int64{131, 130, 121})
	eq(t, "DESC with IN on clustering", ints(t, s, "SELECT v FROM ob.t WHERE k = 1 AND c1 IN (1, 3) ORDER BY c1 DESC"), []int64{131, 130, 111, 110})
	// IN on the partition key with ORDER BY merges partitions by
	// clustering order (unpaged, or small enough for one page).
	q := "SELECT v FROM ob.t WHERE k IN (1, 2) AND c1 = 2 ORDER BY c1 DESC, c2 DESC"
	if err := s.Query(q).PageSize(0).Exec(); err != nil {
		t.Fatal(err)
	}
	vals := ints(t, s, "SELECT v FROM ob.t WHERE k IN (3, 1) AND c1 >= 2 ORDER BY c1 ASC")
	eq(t, "IN + ORDER BY merges", vals, []int64{120, 121, 320, 321, 130, 131, 330, 331})
	iter := s.Query("SELECT v FROM ob.t WHERE k IN (3, 1) ORDER BY c1 DESC").PageSize(0).Iter()
	var got []int64
	var v int64
	for iter.Scan(&v) {
		got = append(got, v)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	// Rows compare on the ORDER BY columns only; ties keep their
	// partition's order (k=1 has the smaller token).
	eq(t, "IN + ORDER BY DESC unpaged", got, []int64{131, 130, 331, 330, 121, 120, 321, 320, 111, 110, 311, 310})
	eq(t, "IN + ORDER BY + LIMIT", ints(t, s, "SELECT v FROM ob.t WHERE k IN (3, 1) ORDER BY c1 DESC LIMIT 3"), []int64{131, 130, 331})
	eq(t, "IN + ORDER BY two columns", ints(t, s, "SELECT v FROM ob.t WHERE k IN (3, 1) AND c1 = 1 ORDER BY c1 DESC, c2 DESC"), []int64{111, 311, 110, 310})
	// A LIMIT within the page size is one page, so it may be sorted.
	it := s.Query("SELECT v FROM ob.t WHERE k IN (3, 1) ORDER BY c1 DESC LIMIT 2").PageSize(2).Iter()
	if it.NumRows() != 2 {
		t.Fatalf("IN + ORDER BY with LIMIT <= page size: %d rows, %v", it.NumRows(), it.Close())
	}
	it.Close()
	err := s.Query("SELECT v FROM ob.t WHERE k IN (3, 1) ORDER BY c1 DESC").PageSize(2).Exec()
	wantErr(t, "IN + ORDER BY paged", err, codeInvalid, "Cannot page queries with both ORDER BY and a IN restriction on the partition key")
	for _, tc := range []struct{ q, frag string }{
		{"SELECT v FROM ob.t WHERE k = 1 ORDER BY c1 ASC, c2 DESC", "Unsupported order by relation"},
		{"SELECT v FROM ob.t WHERE k = 1 ORDER BY c2 DESC", "Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY"},
		{"SELECT v FROM ob.t WHERE k = 1 ORDER BY v DESC", "Order by is currently only supported on the clustered columns of the PRIMARY KEY, got v"},
		{"SELECT v FROM ob.t ORDER BY c1 DESC", "ORDER BY is only supported when the partition key is restricted by an EQ or an IN."},
		{"SELECT v FROM ob.t WHERE k = 1 ORDER BY nosuch DESC", "Undefined column name nosuch"},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
}

func testSelectLimits(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "lim")
	exec(t, s, "CREATE TABLE lim.t (k int, c int, v int, PRIMARY KEY (k, c))")
	for k := 0; k < 10; k++ {
		for c := 0; c < 5; c++ {
			execArgs(t, s, "INSERT INTO lim.t (k, c, v) VALUES (?, ?, ?)", k, c, k*10+c)
		}
	}
	eq(t, "LIMIT key query", ints(t, s, "SELECT c FROM lim.t WHERE k = 1 LIMIT 2"), []int64{0, 1})
	eq(t, "LIMIT scan", len(query(t, s, "SELECT c FROM lim.t LIMIT 7")), 7)
	eq(t, "LIMIT larger than result", len(query(t, s, "SELECT c FROM lim.t WHERE k = 1 LIMIT 100")), 5)
	eq(t, "PER PARTITION LIMIT", len(query(t, s, "SELECT c FROM lim.t PER PARTITION LIMIT 2")), 20)
	eq(t, "PER PARTITION LIMIT + LIMIT", len(query(t, s, "SELECT c FROM lim.t PER PARTITION LIMIT 2 LIMIT 5")), 5)
	eq(t, "PER PARTITION LIMIT + IN", ints(t, s, "SELECT c FROM lim.t WHERE k IN (1, 2) AND c > 1 PER PARTITION LIMIT 1"), []int64{2, 2})
	for _, ps := range []int{1, 3, 4} {
		iter := s.Query("SELECT k, c FROM lim.t PER PARTITION LIMIT 3 LIMIT 17").PageSize(ps).Iter()
		perPart := map[int]int{}
		var k, c, n int
		for iter.Scan(&k, &c) {
			if c != perPart[k] {
				t.Fatalf("page size %d: partition %d row c=%d, want %d", ps, k, c, perPart[k])
			}
			perPart[k]++
			n++
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if n != 17 {
			t.Fatalf("page size %d: %d rows, want 17", ps, n)
		}
		for k, m := range perPart {
			if m > 3 {
				t.Fatalf("page size %d: partition %d has %d rows", ps, k, m)
			}
		}
	}
	// LIMIT across pages of one partition.
	iter := s.Query("SELECT c FROM lim.t WHERE k = 3 LIMIT 4").PageSize(3).Iter()
	var cs []int
	var c int
	for iter.Scan(&c) {
		cs = append(cs, c)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	eq(t, "LIMIT across pages", cs, []int{0, 1, 2, 3})
	queryErr(t, s, "SELECT c FROM lim.t LIMIT 0", codeInvalid, "LIMIT must be strictly positive")
	queryErr(t, s, "SELECT c FROM lim.t PER PARTITION LIMIT 0", codeInvalid, "PER PARTITION LIMIT must be strictly positive")
	queryErr(t, s, "SELECT c FROM lim.t LIMIT -1", codeInvalid, "LIMIT must be strictly positive")
}

func testAggregates(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "agg")
	exec(t, s, "CREATE TABLE agg.t (k int, c int, i int, d double, de decimal, vi varint, tx text, ts timestamp, PRIMARY KEY (k, c))")
	for c := 1; c <= 4; c++ {
		execArgs(t, s, "INSERT INTO agg.t (k, c, i, d, de, vi, tx) VALUES (1, ?, ?, ?, ?, ?, ?)", c, c, float64(c)/2, dec(fmt.Sprintf("%d.25", c)), bigInt(fmt.Sprint(c*1000)), string(rune('a'+c)))
	}
	exec(t, s, "INSERT INTO agg.t (k, c) VALUES (1, 5)", "INSERT INTO agg.t (k, c, i) VALUES (2, 1, 100)")
	var n, cnt int64
	var sum, avg, mn, mx int
	one(t, s, "SELECT count(*), count(i), sum(i), avg(i), min(i), max(i) FROM agg.t WHERE k = 1", nil, &n, &cnt, &sum, &avg, &mn, &mx)
	eq(t, "int aggregates", []any{n, cnt, sum, avg, mn, mx}, []any{int64(5), int64(4), 10, 2, 1, 4})
	var dsum, davg float64
	one(t, s, "SELECT sum(d), avg(d) FROM agg.t WHERE k = 1", nil, &dsum, &davg)
	eq(t, "double aggregates", []float64{dsum, davg}, []float64{5, 1.25})
	rows := query(t, s, "SELECT sum(de), avg(de), sum(vi), min(tx), max(tx) FROM agg.t WHERE k = 1")
	r := rows[0]
	for col, want := range map[string]any{"system.sum(de)": dec("11.00"), "system.avg(de)": dec("2.75"),
		"system.sum(vi)": bigInt("10000"), "system.min(tx)": "b", "system.max(tx)": "e"} {
		if !same(r[col], want) {
			t.Errorf("%s = %v, want %v", col, r[col], want)
		}
	}
	// Decimal sums are exact and averages keep decimal digits, as with
	// Java's BigDecimal.
	exec(t, s, "INSERT INTO agg.t (k, c, de) VALUES (3, 1, 0.1)", "INSERT INTO agg.t (k, c, de) VALUES (3, 2, 0.2)")
	var dsumS, davgS *inf.Dec
	one(t, s, "SELECT sum(de), avg(de) FROM agg.t WHERE k = 3", nil, &dsumS, &davgS)
	eq(t, "decimal sum and avg", []string{dsumS.String(), davgS.String()}, []string{"0.3", "0.15"})
	exec(t, s, "INSERT INTO agg.t (k, c, de) VALUES (3, 3, 0.7)")
	one(t, s, "SELECT avg(de) FROM agg.t WHERE k = 3", nil, &davgS)
	eq(t, "non-terminating decimal avg", davgS.String(), "0.3333333333333333333333333333333333")
	exec(t, s, "DELETE FROM agg.t WHERE k = 3")
	eq(t, "count(1)", count(t, s, "SELECT count(1) FROM agg.t"), int64(6))
	eq(t, "COUNT(*) scan", count(t, s, "SELECT COUNT(*) FROM agg.t"), int64(6))
	eq(t, "count with slice", count(t, s, "SELECT count(*) FROM agg.t WHERE k = 1 AND c > 2"), int64(3))
	eq(t, "count of nothing", count(t, s, "SELECT count(*) FROM agg.t WHERE k = 42"), int64(0))
	var emptySum int
	var emptyMin *int
	one(t, s, "SELECT sum(i), min(i) FROM agg.t WHERE k = 42", nil, &emptySum, &emptyMin)
	if emptySum != 0 || emptyMin != nil {
		t.Fatalf("aggregates of no rows: sum %d min %v, want 0 and null", emptySum, emptyMin)
	}
	// Aggregates ignore the page size: one row with the total.
	iter := s.Query("SELECT count(*) FROM agg.t").PageSize(2).Iter()
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	var paged int64
	if err := s.Query("SELECT count(*) FROM agg.t").PageSize(2).Scan(&paged); err != nil {
		t.Fatal(err)
	}
	eq(t, "count with small pages", paged, int64(6))
	// Column names as drivers see them, and aliases.
	iter = s.Query("SELECT count(*), count(*) AS total, max(i) FROM agg.t WHERE k = 1").Iter()
	var names []string
	for _, c := range iter.Columns() {
		names = append(names, c.Name)
	}
	iter.Close()
	eq(t, "aggregate column names", names, []string{"count", "total", "system.max(i)"})
	for _, tc := range []struct{ q, frag string }{
		{"SELECT sum(tx) FROM agg.t", "sum"},
		{"SELECT avg(ts) FROM agg.t", "avg"},
		{"SELECT nosuchfn(i) FROM agg.t", "nosuchfn"},
		{"SELECT max(i, d) FROM agg.t", ""},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
}

func testDistinct(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "dis")
	exec(t, s, "CREATE TABLE dis.t (a int, b int, c int, st text STATIC, v int, PRIMARY KEY ((a, b), c))")
	for a := 0; a < 5; a++ {
		for c := 0; c < 3; c++ {
			execArgs(t, s, "INSERT INTO dis.t (a, b, c, st, v) VALUES (?, 1, ?, ?, 1)", a, c, fmt.Sprint("s", a))
		}
	}
	rows := query(t, s, "SELECT DISTINCT a, b, st FROM dis.t")
	eq(t, "distinct partitions", len(rows), 5)
	for _, ps := range []int{1, 2} {
		iter := s.Query("SELECT DISTINCT a, b FROM dis.t").PageSize(ps).Iter()
		seen := map[int]bool{}
		var a, b int
		for iter.Scan(&a, &b) {
			if seen[a] {
				t.Fatalf("page size %d: partition %d twice", ps, a)
			}
			seen[a] = true
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		eq(t, "distinct paged", len(seen), 5)
	}
	eq(t, "distinct with key", strs(t, s, "SELECT DISTINCT st FROM dis.t WHERE a = 3 AND b = 1"), []string{"s3"})
	queryErr(t, s, "SELECT DISTINCT v FROM dis.t", codeInvalid, "SELECT DISTINCT queries must only request partition key columns and/or static columns (not v)")
	queryErr(t, s, "SELECT DISTINCT a FROM dis.t", codeInvalid, "SELECT DISTINCT queries must request all the partition key columns (missing b)")
}

// pagesOf runs q with page size ps following paging states by hand and
// returns the rows of every page.
func pagesOf(t *testing.T, s *gocql.Session, ps int, q string, args ...any) [][]map[string]any {
	t.Helper()
	var pages [][]map[string]any
	var state []byte
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatalf("%s: too many pages", q)
		}
		iter := s.Query(q, args...).PageSize(ps).PageState(state).Iter()
		var page []map[string]any
		for {
			row := map[string]any{}
			if !iter.MapScan(row) {
				break
			}
			page = append(page, row)
		}
		if len(page) > ps {
			t.Fatalf("%s: page of %d rows, page size %d", q, len(page), ps)
		}
		state = iter.PageState()
		if err := iter.Close(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		pages = append(pages, page)
		if len(state) == 0 {
			return pages
		}
	}
}
