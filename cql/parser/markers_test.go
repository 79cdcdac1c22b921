package parser

import (
	"reflect"
	"testing"
)

func TestBindMarkers(t *testing.T) {
	for _, tc := range []struct {
		q     string
		names []string // one entry per marker, in Index order
	}{
		{"SELECT * FROM t", nil},
		{"CREATE TABLE t (a int PRIMARY KEY)", nil},
		{"SELECT (int)?, a FROM t WHERE a = :a AND b IN ? AND (c, d) > (?, :d) AND token(a) > ? AND m[?] = ? PER PARTITION LIMIT ? LIMIT :lim",
			[]string{"", "a", "", "", "d", "", "", "", "", "lim"}},
		{"INSERT INTO t (a, b, c) VALUES (?, [?, :x], {?: ?}) IF NOT EXISTS USING TTL ? AND TIMESTAMP :ts",
			[]string{"", "", "x", "", "", "", "ts"}},
		{"INSERT INTO t JSON ? USING TTL ?", []string{"", ""}},
		{"UPDATE t USING TTL ? SET a = ?, m[?] = ?, l = ? + l, c = c + ? WHERE k = ? IF a IN (?, ?) AND m[?] = ?",
			[]string{"", "", "", "", "", "", "", "", "", "", ""}},
		{"DELETE m[?] FROM t USING TIMESTAMP ? WHERE k IN ? IF EXISTS", []string{"", "", ""}},
		{`BEGIN BATCH USING TIMESTAMP ?
			INSERT INTO t (a, b) VALUES (?, :"B");
			UPDATE t SET b = ? WHERE a = ?;
			DELETE FROM t WHERE a = ?;
		APPLY BATCH`, []string{"", "", "B", "", "", ""}},
		{"SELECT * FROM t WHERE a = f(?, g((text)?)) AND b = {k: ?, j: (1, ?)}", []string{"", "", "", ""}},
	} {
		st, err := Parse(tc.q)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.q, err)
			continue
		}
		ms := BindMarkers(st)
		var names []string
		for i, m := range ms {
			if m.Index != i {
				t.Errorf("%q: marker %d has Index %d", tc.q, i, m.Index)
			}
			names = append(names, m.Name)
		}
		if !reflect.DeepEqual(names, tc.names) {
			t.Errorf("%q: marker names %q, want %q", tc.q, names, tc.names)
		}
	}
}

// TestBindMarkerOrderInBatch checks that markers are numbered across the
// whole batch text.
func TestBindMarkerOrderInBatch(t *testing.T) {
	st, err := Parse("BEGIN BATCH INSERT INTO t (a) VALUES (?); INSERT INTO t (a) VALUES (?) APPLY BATCH")
	if err != nil {
		t.Fatal(err)
	}
	b := st.(*BatchStmt)
	if got := b.Statements[1].(*InsertStmt).Values[0].(*BindMarker).Index; got != 1 {
		t.Fatalf("second statement's marker has Index %d, want 1", got)
	}
}
