package cqltest

import (
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/gocql/gocql"
)

// testLarge reads a partition bigger than one internal read chunk (5000
// rows), with and without filtering, aggregates and paging, and checks key
// size limits.
func testLarge(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "big")
	exec(t, s, "CREATE TABLE big.t (k int, c int, st int STATIC, v int, PRIMARY KEY (k, c))",
		"UPDATE big.t SET st = 42 WHERE k = 1")
	const n = 12000
	b := s.NewBatch(gocql.UnloggedBatch)
	for c := 0; c < n; c++ {
		b.Query("INSERT INTO big.t (k, c, v) VALUES (1, ?, ?)", c, c%100)
		if b.Size() == 200 {
			if err := s.ExecuteBatch(b); err != nil {
				t.Fatal(err)
			}
			b = s.NewBatch(gocql.UnloggedBatch)
		}
	}
	eq(t, "count(*)", count(t, s, "SELECT count(*) FROM big.t WHERE k = 1"), int64(n))
	eq(t, "count(*) scan", count(t, s, "SELECT count(*) FROM big.t"), int64(n))
	eq(t, "filtered count", count(t, s, "SELECT count(*) FROM big.t WHERE k = 1 AND v = 99 ALLOW FILTERING"), int64(n/100))
	// Unpaged and paged reads return every row once, in order, with the
	// static value on each.
	for _, ps := range []int{0, 5000, 4999, 7001} {
		iter := s.Query("SELECT c, st FROM big.t WHERE k = 1").PageSize(ps).Iter()
		next := 0
		var c, st int
		for iter.Scan(&c, &st) {
			if c != next || st != 42 {
				t.Fatalf("page size %d: row c=%d st=%d, want c=%d st=42", ps, c, st, next)
			}
			next++
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		eq(t, "rows", next, n)
	}
	// Filtering across chunks, with a page size that does not divide them.
	iter := s.Query("SELECT c FROM big.t WHERE k = 1 AND v >= 98 ALLOW FILTERING").PageSize(33).Iter()
	var got []int
	var c int
	for iter.Scan(&c) {
		got = append(got, c)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*n/100 || got[0] != 98 || got[len(got)-1] != n-1 {
		t.Fatalf("filtered rows: %d, first %v", len(got), got[:min(4, len(got))])
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("filtered rows out of order at %d: %d after %d", i, got[i], got[i-1])
		}
	}
	eq(t, "LIMIT past a chunk", len(query(t, s, "SELECT c FROM big.t WHERE k = 1 AND v = 5 LIMIT 70 ALLOW FILTERING")), 70)
	eq(t, "reverse LIMIT", ints(t, s, "SELECT c FROM big.t WHERE k = 1 ORDER BY c DESC LIMIT 2"), []int64{n - 1, n - 2})
	// Aggregates honour PER PARTITION LIMIT.
	exec(t, s, "INSERT INTO big.t (k, c, v) VALUES (2, 1, 1)", "INSERT INTO big.t (k, c, v) VALUES (2, 2, 1)")
	eq(t, "count with PER PARTITION LIMIT", count(t, s, "SELECT count(*) FROM big.t PER PARTITION LIMIT 3"), int64(5))
	eq(t, "filtered count with PER PARTITION LIMIT", count(t, s, "SELECT count(*) FROM big.t WHERE v = 1 PER PARTITION LIMIT 3 ALLOW FILTERING"), int64(5))

	// Key size limits.
	exec(t, s, "CREATE TABLE big.keys (k text, c text, v int, PRIMARY KEY (k, c))")
	execArgs(t, s, "INSERT INTO big.keys (k, c, v) VALUES (?, ?, 1)", strings.Repeat("k", 65535), "c")
	queryErrArgs(t, s, "INSERT INTO big.keys (k, c, v) VALUES (?, ?, 1)", []any{strings.Repeat("k", 65536), "c"}, codeInvalid, "Key length of 65536 is longer than maximum of 65535")
	queryErrArgs(t, s, "INSERT INTO big.keys (k, c, v) VALUES (?, ?, 1)", []any{"k", strings.Repeat("c", 70000)}, codeInvalid, "is longer than maximum of 65535")
	eq(t, "long key read", count(t, s, "SELECT count(*) FROM big.keys WHERE k = ?", strings.Repeat("k", 65535)), int64(1))

	// Forged paging states never break the node: each query either
	// answers or fails with Invalid.
	rng := rand.New(rand.NewSource(1))
	huge := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01} // uvarint 2^63
	forged := [][]byte{
		append(append([]byte{1}, huge...), 0, 0, 0, 0, 0),                                    // key index that is negative as an int
		append([]byte{1, 0, 0, 0, 0, 0}, huge...),                                            // offset likewise
		append(append([]byte{1, 0, 0, 0}, huge...), 0, 0),                                    // rows in the resumed partition
		{1, 0, 0, 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0}, // a resume key of garbage
	}
	for i := 0; i < 200+len(forged); i++ {
		var state []byte
		if i < len(forged) {
			state = forged[i]
		} else {
			state = make([]byte, 1+rng.Intn(40))
			rng.Read(state)
			if i%2 == 0 {
				state[0] = 1 // the current format's version byte
			}
		}
		for _, q := range []string{"SELECT c FROM big.t WHERE k = 1", "SELECT c FROM big.t", "SELECT c FROM big.t WHERE k IN (1, 2)",
			"SELECT keyspace_name FROM system_schema.tables"} {
			err := s.Query(q).PageSize(10).PageState(state).Exec()
			var re gocql.RequestError
			if err != nil && (!errors.As(err, &re) || re.Code() != codeInvalid) {
				t.Fatalf("%s with paging state %x: %v", q, state, err)
			}
		}
	}
}
