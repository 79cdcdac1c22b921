package cqltype

import (
	"errors"
	"strings"
	"testing"
)

// TestNormalize: sets and maps come back deduplicated and in the element
// (key) type's order at any depth, whatever order the client sent
// (issue 15); other values are left alone.
func TestNormalize(t *testing.T) {
	m := func(typ Type, v any) []byte {
		b, err := Marshal(typ, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	i32 := func(xs ...int32) [][]byte {
		out := make([][]byte, len(xs))
		for i, x := range xs {
			out[i] = m(Scalar(Int), x)
		}
		return out
	}
	txt := func(xs ...string) [][]byte {
		out := make([][]byte, len(xs))
		for i, x := range xs {
			out[i] = []byte(x)
		}
		return out
	}
	// Version-1 UUIDs whose byte order is the reverse of their time order
	// (time_low comes first in the bytes, time_hi last), and a version-4
	// UUID, which Cassandra's uuid order puts after every version 1.
	early := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0x10, 0, 0x80, 0, 0, 0, 0, 0, 0, 1}
	late := []byte{0, 0, 0, 0, 0, 1, 0x10, 0, 0x80, 0, 0, 0, 0, 0, 0, 1}
	v4 := []byte{0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0}

	intSet := SetOf(Scalar(Int))
	frozenIntSet := intSet.Freeze()
	for _, tc := range []struct {
		name string
		typ  Type
		v    []byte
		want string
	}{
		{"set<int> numeric order", intSet, EncodeCollection(i32(3, -1, 3, 200, 2, -1)), "{-1, 2, 3, 200}"},
		{"set<text> bytewise", SetOf(Scalar(Varchar)), EncodeCollection(txt("b", "é", "ab", "a", "b", "Z")), "{'Z', 'a', 'ab', 'b', 'é'}"},
		{"set<bigint> negatives", SetOf(Scalar(Bigint)), EncodeCollection([][]byte{m(Scalar(Bigint), 5), m(Scalar(Bigint), -5), m(Scalar(Bigint), 0)}), "{-5, 0, 5}"},
		{"set<timeuuid> by time", SetOf(Scalar(Timeuuid)), EncodeCollection([][]byte{late, early, late}),
			"{ffffffff-0000-1000-8000-000000000001, 00000000-0001-1000-8000-000000000001}"},
		{"set<uuid> version first", SetOf(Scalar(UUID)), EncodeCollection([][]byte{v4, late, early}),
			"{ffffffff-0000-1000-8000-000000000001, 00000000-0001-1000-8000-000000000001, 00000000-0000-4000-8000-000000000000}"},
		{"map<int, text> last wins", MapOf(Scalar(Int), Scalar(Varchar)),
			EncodeMap(i32(2, -7, 2, 10), txt("x", "y", "z", "w")), "{-7: 'y', 2: 'z', 10: 'w'}"},
		{"list keeps order, nested sets sorted", ListOf(frozenIntSet),
			EncodeCollection([][]byte{EncodeCollection(i32(3, 1)), EncodeCollection(i32(2, 2)), EncodeCollection(i32(3, 1))}), "[{1, 3}, {2}, {1, 3}]"},
		{"set of sets dedups equal sets", SetOf(frozenIntSet),
			EncodeCollection([][]byte{EncodeCollection(i32(2, 1)), EncodeCollection(i32(1, 2, 1)), EncodeCollection(i32(0))}), "{{0}, {1, 2}}"},
		{"map with set keys and map values", MapOf(frozenIntSet, MapOf(Scalar(Varchar), Scalar(Int)).Freeze()),
			EncodeMap([][]byte{EncodeCollection(i32(9, 8)), EncodeCollection(i32(1))},
				[][]byte{EncodeMap(txt("b", "a"), i32(1, 2)), EncodeMap(txt("c"), i32(3))}), "{{1}: {'c': 3}, {8, 9}: {'a': 2, 'b': 1}}"},
		{"tuple with a set, trailing element missing", TupleOf(Scalar(Int), frozenIntSet, Scalar(Varchar)),
			EncodeTuple([][]byte{nil, EncodeCollection(i32(5, 4))}), "(null, {4, 5}, null)"},
		{"empty set value", intSet, []byte{}, "<empty>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Validate(tc.typ, tc.v); err != nil {
				t.Fatalf("test value does not validate: %v", err)
			}
			in := append([]byte(nil), tc.v...)
			got, err := Normalize(tc.typ, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(tc.v) != string(in) {
				t.Fatal("Normalize modified its input")
			}
			if s := Format(tc.typ, got); s != tc.want {
				t.Fatalf("got %s, want %s", s, tc.want)
			}
			if err := Validate(tc.typ, got); err != nil {
				t.Fatalf("result does not validate: %v", err)
			}
			again, err := Normalize(tc.typ, got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent: %x then %x (%v)", got, again, err)
			}
		})
	}

	// Values without sets or maps are returned as they are.
	l := EncodeCollection(i32(3, 1, 3))
	if got, err := Normalize(ListOf(Scalar(Int)), l); err != nil || &got[0] != &l[0] {
		t.Fatalf("a list of ints was rewritten: %v", err)
	}
	if got, err := Normalize(intSet, nil); err != nil || got != nil {
		t.Fatalf("null: %x %v", got, err)
	}
	// Malformed input is an error, never a panic.
	for _, bad := range [][]byte{{0, 0, 0, 2, 0, 0, 0, 4, 1, 2, 3, 4}, {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe}, {1}} {
		if _, err := Normalize(SetOf(frozenIntSet), bad); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("Normalize(%x) = %v, want ErrInvalidValue", bad, err)
		}
	}
}

// A tuple's missing trailing elements stay missing (not written as nulls).
func TestNormalizeKeepsTupleLength(t *testing.T) {
	typ := TupleOf(Scalar(Int), SetOf(Scalar(Int)).Freeze(), Scalar(Varchar))
	set := func(xs ...byte) []byte {
		elems := make([][]byte, len(xs))
		for i, x := range xs {
			elems[i] = []byte{0, 0, 0, x}
		}
		return EncodeCollection(elems)
	}
	got, err := Normalize(typ, EncodeTuple([][]byte{nil, set(5, 4)}))
	if err != nil {
		t.Fatal(err)
	}
	if want := EncodeTuple([][]byte{nil, set(4, 5)}); string(got) != string(want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

// A varint or decimal literal of more digits than maxNumberDigits is
// refused instead of parsed in quadratic time.
func TestHugeNumberLiteralRefused(t *testing.T) {
	huge := strings.Repeat("7", maxNumberDigits+1)
	for _, typ := range []Type{{Kind: Varint}, {Kind: Decimal}} {
		if _, err := ParseLiteral(typ, LitInteger, huge); err == nil || !strings.Contains(err.Error(), "at most 100000") {
			t.Errorf("%s literal of %d digits: %v, want a refusal", typ, len(huge), err)
		}
		if _, err := ParseLiteral(typ, LitInteger, huge[:maxNumberDigits]); err != nil {
			t.Errorf("%s literal of %d digits: %v", typ, maxNumberDigits, err)
		}
	}
}
