package cqltype

import (
	"errors"
	"testing"
)

func TestParseString(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"int", "int"},
		{"  INT ", "int"},
		{"varchar", "text"},
		{"Text", "text"},
		{"ascii", "ascii"},
		{"bigint", "bigint"},
		{"blob", "blob"},
		{"boolean", "boolean"},
		{"counter", "counter"},
		{"decimal", "decimal"},
		{"double", "double"},
		{"float", "float"},
		{"timestamp", "timestamp"},
		{"uuid", "uuid"},
		{"varint", "varint"},
		{"timeuuid", "timeuuid"},
		{"inet", "inet"},
		{"date", "date"},
		{"time", "time"},
		{"smallint", "smallint"},
		{"tinyint", "tinyint"},
		{"duration", "duration"},
		{"list<int>", "list<int>"},
		{"set<text>", "set<text>"},
		{"map<text,int>", "map<text, int>"},
		{"MAP < VARCHAR , INT >", "map<text, int>"},
		{"frozen<list<int>>", "frozen<list<int>>"},
		{"frozen <list<int> >", "frozen<list<int>>"},
		{"list<frozen<list<int>>>", "list<frozen<list<int>>>"},
		{"frozen<list<list<int>>>", "frozen<list<frozen<list<int>>>>"},
		{"frozen<map<text, list<int>>>", "frozen<map<text, frozen<list<int>>>>"},
		{"map<frozen<set<int>>, frozen<map<int, text>>>", "map<frozen<set<int>>, frozen<map<int, text>>>"},
		{"tuple<int, text>", "frozen<tuple<int, text>>"},
		{"frozen<tuple<int,text>>", "frozen<tuple<int, text>>"},
		{"tuple<list<int>, tuple<int>>", "frozen<tuple<frozen<list<int>>, frozen<tuple<int>>>>"},
		{"list<tuple<int, text>>", "list<frozen<tuple<int, text>>>"},
		{"frozen<frozen<set<int>>>", "frozen<set<int>>"},
		{"tuple<duration>", "frozen<tuple<duration>>"},
		{"list<duration>", "list<duration>"},
		{"map<int, duration>", "map<int, duration>"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			typ, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got := typ.String(); got != tc.want {
				t.Fatalf("Parse(%q).String() = %q, want %q", tc.in, got, tc.want)
			}
			again, err := Parse(typ.String())
			if err != nil || !again.Equal(typ) {
				t.Fatalf("Parse(String()) = %v, %v; want %v", again, err, typ)
			}
		})
	}
}

func TestParseStructure(t *testing.T) {
	typ, err := Parse("frozen<map<text, list<int>>>")
	if err != nil {
		t.Fatal(err)
	}
	want := MapOf(Scalar(Varchar), ListOf(Scalar(Int))).Freeze()
	if !typ.Equal(want) || !typ.Elems[1].Frozen || typ.IsMultiCell() {
		t.Fatalf("got %+v, want %+v", typ, want)
	}
	typ, _ = Parse("map<text, frozen<list<int>>>")
	if !typ.IsMultiCell() || typ.Elems[1].IsMultiCell() {
		t.Fatalf("multi-cell flags wrong: %+v", typ)
	}
	if !TupleOf(Scalar(Int)).Equal(mustParse(t, "tuple<int>")) {
		t.Fatal("TupleOf != Parse(tuple<int>)")
	}
}

func mustParse(t *testing.T, s string) Type {
	t.Helper()
	typ, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return typ
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"list<list<int>>", "Non-frozen collections are not allowed inside collections: list<list<int>>"},
		{"map<set<int>, int>", "Non-frozen collections are not allowed inside collections: map<set<int>, int>"},
		{"list<counter>", "Counters are not allowed inside collections: list<counter>"},
		{"map<counter, int>", "Counters are not allowed inside collections: map<counter, int>"},
		{"frozen<set<counter>>", "Counters are not allowed inside collections: frozen<set<counter>>"},
		{"set<duration>", "Durations are not allowed inside sets: set<duration>"},
		{"map<duration, int>", "Durations are not allowed as map keys: map<duration, int>"},
		{"frozen<list<set<duration>>>", "Durations are not allowed inside sets: frozen<set<duration>>"},
		{"tuple<int, counter>", "Counters are not allowed inside tuples"},
		{"frozen<int>", "frozen<> is only allowed on collections, tuples, and user-defined types (got int)"},
		{"address", "Unknown type address"},
		{"list<address>", "Unknown type address"},
		{"ks.address", "Unknown type ks.address"},
		{"", `Invalid type "": unexpected end of input`},
		{"list<int", `Invalid type "list<int": unexpected end of input`},
		{"list<int>>", `Invalid type "list<int>>": unexpected ">" after the type`},
		{"list<int, int>", `Invalid type "list<int, int>": list takes 1 type argument(s), got 2`},
		{"map<int>", `Invalid type "map<int>": map takes 2 type argument(s), got 1`},
		{"tuple<>", `Invalid type "tuple<>": unexpected '>' at position 6`},
		{"int<int>", `Invalid type "int<int>": unexpected "<int>" after the type`},
		{"'org.apache.cassandra.db.marshal.Int32Type'", `Invalid type "'org.apache.cassandra.db.marshal.Int32Type'": unexpected '\'' at position 0`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded", tc.in)
			}
			if !errors.Is(err, ErrInvalidType) {
				t.Errorf("error %v does not match ErrInvalidType", err)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse(%q) error = %q, want %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestParseDepthLimit(t *testing.T) {
	s := ""
	for range maxTypeDepth + 2 {
		s += "frozen<list<"
	}
	s += "int"
	for range maxTypeDepth + 2 {
		s += ">>"
	}
	if _, err := Parse(s); err == nil {
		t.Fatal("deeply nested type accepted")
	}
}
