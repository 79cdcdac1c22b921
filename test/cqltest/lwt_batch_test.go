package cqltest

import (
	"testing"

	"github.com/gocql/gocql"
)

// cas runs a conditional statement and returns [applied] and the other
// returned columns.
func cas(t *testing.T, s *gocql.Session, q string, args ...any) (bool, map[string]any) {
	t.Helper()
	got := map[string]any{}
	applied, err := s.Query(q, args...).MapScanCAS(got)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return applied, got
}

func wantCAS(t *testing.T, q string, applied bool, got map[string]any, wantApplied bool, want map[string]any) {
	t.Helper()
	if applied != wantApplied {
		t.Fatalf("%s: [applied] = %v, want %v (row %v)", q, applied, wantApplied, got)
	}
	if want == nil {
		want = map[string]any{}
	}
	eq(t, q+" returned columns", got, want)
}

func testLWT(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "lwt")
	exec(t, s, "CREATE TABLE lwt.t (k int, c int, v text, w int, m map<text, int>, s text STATIC, PRIMARY KEY (k, c))")
	for _, tc := range []struct {
		q           string
		args        []any
		applied     bool
		want        map[string]any
		description string
	}{
		{q: "INSERT INTO lwt.t (k, c, v, w) VALUES (1, 1, 'a', 1) IF NOT EXISTS", applied: true},
		// A failed IF NOT EXISTS returns the whole existing row.
		{q: "INSERT INTO lwt.t (k, c, v) VALUES (1, 1, 'b') IF NOT EXISTS", applied: false,
			want: map[string]any{"k": 1, "c": 1, "v": "a", "w": 1, "m": map[string]int(nil), "s": ""}},
		{q: "INSERT INTO lwt.t (k, c, v) VALUES (?, ?, ?) IF NOT EXISTS", args: []any{1, 2, "p"}, applied: true},
		// IF EXISTS on a missing row returns only [applied].
		{q: "UPDATE lwt.t SET v = 'x' WHERE k = 1 AND c = 9 IF EXISTS", applied: false},
		{q: "UPDATE lwt.t SET v = 'x' WHERE k = 1 AND c = 1 IF EXISTS", applied: true},
		// A failed column condition returns the condition's columns.
		{q: "UPDATE lwt.t SET v = 'y' WHERE k = 1 AND c = 1 IF v = 'nope'", applied: false, want: map[string]any{"v": "x"}},
		{q: "UPDATE lwt.t SET v = 'y' WHERE k = 1 AND c = 1 IF v = 'x' AND w = 1", applied: true},
		{q: "UPDATE lwt.t SET w = 2 WHERE k = 1 AND c = 1 IF v IN ('a', 'b')", applied: false, want: map[string]any{"v": "y"}},
		{q: "UPDATE lwt.t SET w = 2 WHERE k = 1 AND c = 1 IF v IN ('a', 'y')", applied: true},
		{q: "UPDATE lwt.t SET w = 3 WHERE k = 1 AND c = 1 IF w > ?", args: []any{5}, applied: false, want: map[string]any{"w": 2}},
		{q: "UPDATE lwt.t SET w = 3 WHERE k = 1 AND c = 1 IF w < 5 AND v != 'z'", applied: true},
		// Null comparisons: a missing cell equals null.
		{q: "UPDATE lwt.t SET m = {'a': 1} WHERE k = 1 AND c = 1 IF m = null", applied: true},
		// Map element conditions.
		{q: "UPDATE lwt.t SET w = 4 WHERE k = 1 AND c = 1 IF m['a'] = 2", applied: false, want: map[string]any{"m": map[string]int{"a": 1}}},
		{q: "UPDATE lwt.t SET w = 4 WHERE k = 1 AND c = 1 IF m['a'] = 1", applied: true},
		{q: "UPDATE lwt.t SET w = 5 WHERE k = 1 AND c = 1 IF m['zz'] = null", applied: true},
		// Static column conditions, with only the partition key.
		{q: "UPDATE lwt.t SET s = 'st' WHERE k = 1 IF s = null", applied: true},
		{q: "UPDATE lwt.t SET s = 'st2' WHERE k = 1 IF s = 'other'", applied: false, want: map[string]any{"s": "st"}},
		// DELETE IF EXISTS / IF condition.
		{q: "DELETE FROM lwt.t WHERE k = 1 AND c = 2 IF v = 'q'", applied: false, want: map[string]any{"v": "p"}},
		{q: "DELETE FROM lwt.t WHERE k = 1 AND c = 2 IF v = 'p'", applied: true},
		{q: "DELETE FROM lwt.t WHERE k = 1 AND c = 2 IF EXISTS", applied: false},
		{q: "DELETE v FROM lwt.t WHERE k = 1 AND c = 1 IF EXISTS", applied: true},
	} {
		applied, got := cas(t, s, tc.q, tc.args...)
		wantCAS(t, tc.q, applied, got, tc.applied, tc.want)
	}
	var v *string
	var w int
	var m map[string]int
	one(t, s, "SELECT v, w, m FROM lwt.t WHERE k = 1 AND c = 1", nil, &v, &w, &m)
	if v != nil || w != 5 || len(m) != 1 || m["a"] != 1 {
		t.Fatalf("final row = %v %d %v", v, w, m)
	}
	// ScanCAS with positional destinations.
	var k, c int
	var vv string
	var ww int
	var mm map[string]int
	var ss string
	// Columns come in SELECT * order: keys, statics, then regulars.
	applied, err := s.Query("INSERT INTO lwt.t (k, c, v) VALUES (1, 1, 'z') IF NOT EXISTS").ScanCAS(&k, &c, &ss, &mm, &vv, &ww)
	if err != nil {
		t.Fatal(err)
	}
	if applied || k != 1 || c != 1 || ww != 5 || ss != "st" {
		t.Fatalf("ScanCAS = %v k=%d c=%d s=%q w=%d", applied, k, c, ss, ww)
	}
	// A plain SELECT at SERIAL sees the conditional writes.
	var sv string
	if err := s.Query("SELECT s FROM lwt.t WHERE k = 1").Consistency(gocql.Consistency(gocql.Serial)).Scan(&sv); err != nil {
		t.Fatal(err)
	}
	eq(t, "serial read", sv, "st")
	for _, tc := range []struct {
		q    string
		frag string
	}{
		{"INSERT INTO lwt.t (k, c) VALUES (1, 1) IF NOT EXISTS USING TIMESTAMP 5", "Cannot provide custom timestamp for conditional updates"},
		{"UPDATE lwt.t USING TIMESTAMP 5 SET v = 'a' WHERE k = 1 AND c = 1 IF EXISTS", "Cannot provide custom timestamp for conditional updates"},
		{"UPDATE lwt.t SET v = 'a' WHERE k IN (1, 2) AND c = 1 IF EXISTS", "IN on the partition key is not supported with conditional updates"},
		{"UPDATE lwt.t SET v = 'a' WHERE k = 1 AND c IN (1, 2) IF EXISTS", "IN on the clustering key columns is not supported with conditional updates"},
		{"UPDATE lwt.t SET v = 'a' WHERE k = 1 AND c = 1 IF c = 1", "PRIMARY KEY column 'c' cannot have IF conditions"},
		{"UPDATE lwt.t SET v = 'a' WHERE k = 1 AND c = 1 IF nosuch = 1", "Undefined column name nosuch"},
		{"DELETE FROM lwt.t WHERE k = 1 IF EXISTS", "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF conditions"},
		{"UPDATE lwt.t SET v = 'a' WHERE k = 1 AND c = 1 IF w > null", "Invalid comparison with null for operator \">\""},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
}

func testBatch(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "bat")
	exec(t, s, "CREATE TABLE bat.t (k int, c int, v text, PRIMARY KEY (k, c))",
		"CREATE TABLE bat.u (k int PRIMARY KEY, v text)",
		"CREATE TABLE bat.cnt (k int PRIMARY KEY, n counter)")
	t.Run("Protocol", func(t *testing.T) {
		for _, typ := range []gocql.BatchType{gocql.LoggedBatch, gocql.UnloggedBatch} {
			b := s.NewBatch(typ)
			k := int(typ) + 10
			b.Query("INSERT INTO bat.t (k, c, v) VALUES (?, ?, ?)", k, 1, "a")
			b.Query("INSERT INTO bat.t (k, c, v) VALUES (?, 2, 'b')", k)
			// A statement without values goes as query text.
			b.Query("INSERT INTO bat.u (k, v) VALUES (100, 'other table')")
			b.Query("UPDATE bat.t SET v = ? WHERE k = ? AND c = ?", "A", k, 1)
			b.Query("DELETE FROM bat.t WHERE k = ? AND c = ?", k, 3)
			if err := s.ExecuteBatch(b); err != nil {
				t.Fatalf("batch type %d: %v", typ, err)
			}
			// All statements of a batch share one timestamp, so the
			// INSERT of 'a' and the UPDATE to 'A' tie and, as in
			// Cassandra, the greater value wins.
			eq(t, "batch rows", strs(t, s, "SELECT v FROM bat.t WHERE k = ?", k), []string{"a", "b"})
		}
		eq(t, "other table", strs(t, s, "SELECT v FROM bat.u WHERE k = 100"), []string{"other table"})
		cb := s.NewBatch(gocql.CounterBatch)
		cb.Query("UPDATE bat.cnt SET n = n + ? WHERE k = ?", int64(2), 1)
		cb.Query("UPDATE bat.cnt SET n = n + 3 WHERE k = 1")
		if err := s.ExecuteBatch(cb); err != nil {
			t.Fatal(err)
		}
		eq(t, "counter batch", ints(t, s, "SELECT n FROM bat.cnt WHERE k = 1"), []int64{5})
		// Batch-level default timestamp.
		tb := s.NewBatch(gocql.UnloggedBatch).WithTimestamp(777)
		tb.Query("INSERT INTO bat.u (k, v) VALUES (?, ?)", 5, "ts")
		if err := s.ExecuteBatch(tb); err != nil {
			t.Fatal(err)
		}
		eq(t, "batch timestamp", ints(t, s, "SELECT writetime(v) FROM bat.u WHERE k = 5"), []int64{777})
		// Counter updates do not belong in a logged batch.
		lb := s.NewBatch(gocql.LoggedBatch)
		lb.Query("UPDATE bat.cnt SET n = n + 1 WHERE k = 1")
		wantErr(t, "counter in logged batch", s.ExecuteBatch(lb), codeInvalid, "Cannot include a counter statement in a logged batch")
		mb := s.NewBatch(gocql.CounterBatch)
		mb.Query("INSERT INTO bat.u (k, v) VALUES (1, 'x')")
		wantErr(t, "non-counter in counter batch", s.ExecuteBatch(mb), codeInvalid, "Cannot include non-counter statement in a counter batch")
		ub := s.NewBatch(gocql.UnloggedBatch)
		ub.Query("UPDATE bat.cnt SET n = n + 1 WHERE k = 1")
		ub.Query("INSERT INTO bat.u (k, v) VALUES (1, 'x')")
		wantErr(t, "mixed batch", s.ExecuteBatch(ub), codeInvalid, "Counter and non-counter mutations cannot exist in the same batch")
		// An error in any statement fails the whole batch, and nothing
		// is written.
		fb := s.NewBatch(gocql.LoggedBatch)
		fb.Query("INSERT INTO bat.u (k, v) VALUES (?, ?)", 200, "never")
		fb.Query("INSERT INTO bat.nosuch (k) VALUES (1)")
		wantErr(t, "batch with bad statement", s.ExecuteBatch(fb), codeInvalid, "nosuch")
		eq(t, "nothing written", count(t, s, "SELECT count(*) FROM bat.u WHERE k = 200"), int64(0))
	})
	t.Run("Text", func(t *testing.T) {
		exec(t, s, `BEGIN BATCH
			INSERT INTO bat.t (k, c, v) VALUES (20, 1, 'x');
			INSERT INTO bat.t (k, c, v) VALUES (21, 1, 'y');
			UPDATE bat.u SET v = 'text batch' WHERE k = 20;
			DELETE FROM bat.t WHERE k = 20 AND c = 9
		APPLY BATCH`,
			"BEGIN UNLOGGED BATCH USING TIMESTAMP 1234 INSERT INTO bat.t (k, c, v) VALUES (22, 1, 'z'); INSERT INTO bat.t (k, c, v) VALUES (22, 2, 'z') APPLY BATCH",
			"BEGIN COUNTER BATCH UPDATE bat.cnt SET n = n + 1 WHERE k = 2; UPDATE bat.cnt SET n = n + 1 WHERE k = 2; APPLY BATCH",
			// Per-statement timestamps without a batch timestamp.
			"BEGIN BATCH INSERT INTO bat.u (k, v) VALUES (30, 'a') USING TIMESTAMP 10; INSERT INTO bat.u (k, v) VALUES (31, 'b') USING TIMESTAMP 20 APPLY BATCH")
		eq(t, "text batch", sorted(strs(t, s, "SELECT v FROM bat.t WHERE k IN (20, 21, 22)")), []string{"x", "y", "z", "z"})
		eq(t, "batch USING TIMESTAMP", ints(t, s, "SELECT writetime(v) FROM bat.t WHERE k = 22"), []int64{1234, 1234})
		eq(t, "text counter batch", ints(t, s, "SELECT n FROM bat.cnt WHERE k = 2"), []int64{2})
		eq(t, "statement timestamps", ints(t, s, "SELECT writetime(v) FROM bat.u WHERE k IN (30, 31)"), []int64{10, 20})
		// Bound values in a text batch.
		execArgs(t, s, "BEGIN BATCH INSERT INTO bat.u (k, v) VALUES (?, ?); INSERT INTO bat.u (k, v) VALUES (?, ?) APPLY BATCH", 40, "p", 41, "q")
		eq(t, "bound text batch", strs(t, s, "SELECT v FROM bat.u WHERE k IN (40, 41)"), []string{"p", "q"})
		queryErr(t, s, "BEGIN BATCH USING TIMESTAMP 5 INSERT INTO bat.u (k, v) VALUES (1, 'a') USING TIMESTAMP 6 APPLY BATCH", codeInvalid, "Timestamp must be set either on BATCH or individual statements")
		queryErr(t, s, "BEGIN BATCH USING TTL 5 INSERT INTO bat.u (k, v) VALUES (1, 'a') APPLY BATCH", codeInvalid, "")
		queryErr(t, s, "BEGIN BATCH SELECT * FROM bat.u APPLY BATCH", codeSyntax, "")
		queryErr(t, s, "BEGIN COUNTER BATCH INSERT INTO bat.u (k, v) VALUES (1, 'a') APPLY BATCH", codeInvalid, "Cannot include non-counter statement in a counter batch")
	})
	t.Run("Conditional", func(t *testing.T) {
		q := `BEGIN BATCH
			INSERT INTO bat.t (k, c, v) VALUES (50, 1, 'first') IF NOT EXISTS;
			INSERT INTO bat.t (k, c, v) VALUES (50, 2, 'second')
		APPLY BATCH`
		applied, got := cas(t, s, q)
		wantCAS(t, "conditional batch", applied, got, true, nil)
		applied, got = cas(t, s, q)
		if applied || got["v"] != "first" {
			t.Fatalf("repeated conditional batch: applied=%v row=%v", applied, got)
		}
		b := s.NewBatch(gocql.LoggedBatch)
		b.Query("UPDATE bat.t SET v = ? WHERE k = ? AND c = ? IF v = ?", "changed", 50, 1, "first")
		b.Query("INSERT INTO bat.t (k, c, v) VALUES (?, ?, ?)", 50, 3, "third")
		row := map[string]any{}
		applied, iter, err := s.MapExecuteBatchCAS(b, row)
		if err != nil {
			t.Fatal(err)
		}
		iter.Close()
		if !applied {
			t.Fatalf("batch CAS not applied: %v", row)
		}
		eq(t, "after batch CAS", strs(t, s, "SELECT v FROM bat.t WHERE k = 50"), []string{"changed", "second", "third"})
		applied, iter, err = s.MapExecuteBatchCAS(b, row)
		if err != nil {
			t.Fatal(err)
		}
		iter.Close()
		if applied || row["v"] != "changed" {
			t.Fatalf("second batch CAS: applied=%v row=%v", applied, row)
		}
		queryErr(t, s, "BEGIN BATCH INSERT INTO bat.t (k, c) VALUES (60, 1) IF NOT EXISTS; INSERT INTO bat.t (k, c) VALUES (61, 1) APPLY BATCH",
			codeInvalid, "Batch with conditions cannot span multiple partitions")
		queryErr(t, s, "BEGIN BATCH INSERT INTO bat.t (k, c) VALUES (60, 1) IF NOT EXISTS; INSERT INTO bat.u (k) VALUES (60) APPLY BATCH",
			codeInvalid, "Batch with conditions cannot span multiple tables")
		queryErr(t, s, "BEGIN BATCH USING TIMESTAMP 5 INSERT INTO bat.t (k, c) VALUES (60, 1) IF NOT EXISTS APPLY BATCH",
			codeInvalid, "Cannot provide custom timestamp for conditional BATCH")
	})
}

func testBindMarkers(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "bind")
	exec(t, s, "CREATE TABLE bind.t (k int, c int, v text, PRIMARY KEY (k, c))")
	// Named markers bound by name (gocql sends the names flag; it
	// marshals values by marker position, so they stay in order here and
	// raw frames bind them out of order).
	execArgs(t, s, "INSERT INTO bind.t (k, c, v) VALUES (:k, :c, :v)", gocql.NamedValue("k", 1), gocql.NamedValue("c", 1), gocql.NamedValue("v", "named"))
	eq(t, "named insert", strs(t, s, "SELECT v FROM bind.t WHERE k = 1 AND c = 1"), []string{"named"})
	// Named markers bound by position.
	execArgs(t, s, "INSERT INTO bind.t (k, c, v) VALUES (:k, :c, :v)", 1, 2, "positional")
	eq(t, "named by position", strs(t, s, "SELECT v FROM bind.t WHERE k = :key AND c = :c", 1, 2), []string{"positional"})
	for c := 3; c <= 10; c++ {
		execArgs(t, s, "INSERT INTO bind.t (k, c, v) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?", 1, c, "x", 1000, int64(c))
	}
	// Markers in slices, IN, LIMIT, PER PARTITION LIMIT and token().
	eq(t, "slice", ints(t, s, "SELECT c FROM bind.t WHERE k = ? AND c > ? AND c <= ?", 1, 3, 5), []int64{4, 5})
	eq(t, "IN ?", ints(t, s, "SELECT c FROM bind.t WHERE k = ? AND c IN ?", 1, []int{9, 3, 3}), []int64{3, 9})
	eq(t, "IN (?, ?)", ints(t, s, "SELECT c FROM bind.t WHERE k IN (?, ?) AND c IN (?, ?)", 1, 2, 4, 6), []int64{4, 6})
	eq(t, "LIMIT ?", ints(t, s, "SELECT c FROM bind.t WHERE k = ? LIMIT ?", 1, 3), []int64{1, 2, 3})
	eq(t, "PER PARTITION LIMIT ?", ints(t, s, "SELECT c FROM bind.t PER PARTITION LIMIT ?", 2), []int64{1, 2})
	eq(t, "token(k) >= ?", ints(t, s, "SELECT c FROM bind.t WHERE token(k) >= ? LIMIT 1", int64(-4069959284402364209)), []int64{1})
	eq(t, "writetime from bound timestamp", ints(t, s, "SELECT writetime(v) FROM bind.t WHERE k = 1 AND c = 7"), []int64{7})
	eq(t, "named in condition", ints(t, s, "SELECT c FROM bind.t WHERE k = :k AND c >= :lo AND c < :hi",
		gocql.NamedValue("k", 1), gocql.NamedValue("lo", 4), gocql.NamedValue("hi", 5)), []int64{4})
	// Unknown names, and wrong value counts.
	wantErr(t, "unknown name", s.Query("SELECT c FROM bind.t WHERE k = :k", gocql.NamedValue("nope", 1)).Exec(), codeInvalid, "")
}
