package exec

import (
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
)

// A bound set or map is taken in the type's order, without duplicates,
// whatever order the driver sent, at any depth (issue 15); other values
// are taken as sent.
func TestBoundCollectionsAreNormalized(t *testing.T) {
	parse := func(s string) cqltype.Type {
		typ, err := cqltype.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return typ
	}
	i32 := func(xs ...byte) [][]byte {
		out := make([][]byte, len(xs))
		for i, x := range xs {
			out[i] = []byte{0, 0, 0, x}
		}
		return out
	}
	for _, tc := range []struct {
		typ  string
		v    []byte
		want string
	}{
		{"set<int>", cqltype.EncodeCollection(i32(3, 1, 3, 2)), "{1, 2, 3}"},
		{"map<int, text>", cqltype.EncodeMap(i32(9, 1, 9), [][]byte{[]byte("a"), []byte("b"), []byte("c")}), "{1: 'b', 9: 'c'}"},
		{"list<frozen<set<int>>>", cqltype.EncodeCollection([][]byte{cqltype.EncodeCollection(i32(2, 1)), cqltype.EncodeCollection(i32(2, 1))}), "[{1, 2}, {1, 2}]"},
		{"list<int>", cqltype.EncodeCollection(i32(3, 1, 3)), "[3, 1, 3]"},
	} {
		typ := parse(tc.typ)
		b, err := newBinder([]Value{{Bytes: tc.v}}, nil, 1, time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.term(&parser.BindMarker{Index: 0}, ColumnSpec{Keyspace: "ks", Table: "t", Name: "c", Type: typ})
		if err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		if s := cqltype.Format(typ, got.b); s != tc.want {
			t.Errorf("%s: bound %s, want %s", tc.typ, s, tc.want)
		}
	}
}
