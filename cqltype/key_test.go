package cqltype

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

func mustKey(t *testing.T, typ Type, v []byte, desc bool) []byte {
	t.Helper()
	k, err := AppendKey(nil, typ, v, desc)
	if err != nil {
		t.Fatalf("AppendKey(%s, %s): %v", typ, Format(typ, v), err)
	}
	return k
}

// propertyTypes are checked in TestKeyOrderMatchesCompare besides random
// types.
func propertyTypes() []Type {
	var ts []Type
	for _, k := range keyScalarKinds {
		ts = append(ts, Scalar(k))
	}
	return append(ts,
		ListOf(Scalar(Int)).Freeze(),
		SetOf(Scalar(Varchar)).Freeze(),
		MapOf(Scalar(Varchar), Scalar(Blob)).Freeze(),
		ListOf(ListOf(Scalar(Blob)).Freeze()).Freeze(),
		TupleOf(Scalar(Int), Scalar(Varchar)),
		TupleOf(Scalar(Decimal), TupleOf(Scalar(Boolean), Scalar(Varint)), ListOf(Scalar(Double)).Freeze()),
		MapOf(TupleOf(Scalar(Int), Scalar(Int)), SetOf(Scalar(Timeuuid)).Freeze()).Freeze(),
	)
}

func TestKeyOrderMatchesCompare(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	types := propertyTypes()
	for range 40 {
		types = append(types, randType(r, 3))
	}
	for _, typ := range types {
		t.Run(typ.String(), func(t *testing.T) {
			const n = 150
			vals := make([][]byte, n)
			asc := make([][]byte, n)
			desc := make([][]byte, n)
			for i := range vals {
				vals[i] = randValue(r, typ)
				if err := Validate(typ, vals[i]); err != nil {
					t.Fatalf("generated invalid value %x: %v", vals[i], err)
				}
				asc[i] = mustKey(t, typ, vals[i], false)
				desc[i] = mustKey(t, typ, vals[i], true)
				if len(asc[i]) == 0 || asc[i][0] == 0 || asc[i][0] == 0xFF || desc[i][0] == 0 || desc[i][0] == 0xFF {
					t.Fatalf("bad first key byte for %s: %x / %x", Format(typ, vals[i]), asc[i], desc[i])
				}
				checkRoundTrip(t, typ, vals[i], asc[i], false)
				checkRoundTrip(t, typ, vals[i], desc[i], true)
			}
			for i := range vals {
				for j := range vals {
					c := Compare(typ, vals[i], vals[j])
					if c != -Compare(typ, vals[j], vals[i]) {
						t.Fatalf("Compare not antisymmetric on %s, %s", Format(typ, vals[i]), Format(typ, vals[j]))
					}
					if got := sign(bytes.Compare(asc[i], asc[j])); got != sign(c) {
						t.Fatalf("asc key order %d, Compare %d for %s vs %s\nkeys %x\n     %x",
							got, c, Format(typ, vals[i]), Format(typ, vals[j]), asc[i], asc[j])
					}
					if got := sign(bytes.Compare(desc[i], desc[j])); got != -sign(c) {
						t.Fatalf("desc key order %d, Compare %d for %s vs %s", got, c, Format(typ, vals[i]), Format(typ, vals[j]))
					}
					if c != 0 && (bytes.HasPrefix(asc[i], asc[j]) || bytes.HasPrefix(desc[i], desc[j])) {
						t.Fatalf("key of %s is a prefix of key of %s", Format(typ, vals[j]), Format(typ, vals[i]))
					}
				}
			}
		})
	}
}

// TestKeySortedOrder sorts thousands of random values per type by Compare
// and by key, and checks that both orders agree (and that Compare is
// consistent with the key order, a total order, along the way).
func TestKeySortedOrder(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	types := propertyTypes()
	for range 20 {
		types = append(types, randType(r, 3))
	}
	n := 3000
	if testing.Short() {
		n = 300
	}
	for _, typ := range types {
		t.Run(typ.String(), func(t *testing.T) {
			vals := make([][]byte, n)
			keys := make([][]byte, n)
			for i := range vals {
				vals[i] = randValue(r, typ)
				keys[i] = mustKey(t, typ, vals[i], i%2 == 0)
				checkRoundTrip(t, typ, vals[i], keys[i], i%2 == 0)
				keys[i] = mustKey(t, typ, vals[i], false)
			}
			idx := make([]int, n)
			for i := range idx {
				idx[i] = i
			}
			slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
			for j := 1; j < n; j++ {
				a, b := idx[j-1], idx[j]
				if got, want := sign(Compare(typ, vals[a], vals[b])), sign(bytes.Compare(keys[a], keys[b])); got != want {
					t.Fatalf("key order %d, Compare %d: %s vs %s", want, got, Format(typ, vals[a]), Format(typ, vals[b]))
				}
			}
			slices.SortStableFunc(idx, func(a, b int) int { return Compare(typ, vals[a], vals[b]) })
			for j := 1; j < n; j++ {
				if bytes.Compare(keys[idx[j-1]], keys[idx[j]]) > 0 {
					t.Fatalf("Compare order disagrees with key order at %s, %s", Format(typ, vals[idx[j-1]]), Format(typ, vals[idx[j]]))
				}
			}
		})
	}
}

// checkRoundTrip decodes key (with a trailing byte, which must come back as
// the rest) and checks the value Compares equal, is byte-identical for
// types that are not canonicalised, and re-encodes to the same key.
func checkRoundTrip(t *testing.T, typ Type, v, key []byte, desc bool) {
	t.Helper()
	src := append(append([]byte{}, key...), 0x42)
	got, rest, err := DecodeKey(typ, src, desc)
	if err != nil {
		t.Fatalf("DecodeKey(%s, %x, %v): %v", typ, key, desc, err)
	}
	if !bytes.Equal(rest, []byte{0x42}) {
		t.Fatalf("DecodeKey(%s, %x) rest = %x", typ, key, rest)
	}
	if Compare(typ, got, v) != 0 || (got == nil) != (v == nil) {
		t.Fatalf("DecodeKey(%s) = %s, want %s", typ, Format(typ, got), Format(typ, v))
	}
	if exact(typ) && !bytes.Equal(got, v) {
		t.Fatalf("DecodeKey(%s) = %x, want exactly %x", typ, got, v)
	}
	if err := Validate(typ, got); err != nil {
		t.Fatalf("DecodeKey(%s) = %x, invalid: %v", typ, got, err)
	}
	again := mustKey(t, typ, got, desc)
	if !bytes.Equal(again, key) {
		t.Fatalf("re-encoding %s: %x, want %x", Format(typ, got), again, key)
	}
}

// exact reports whether DecodeKey returns the original bytes for every
// valid value of t (no canonicalisation).
func exact(t Type) bool {
	switch t.Kind {
	case Decimal, Varint, Boolean, Float, Double, Tuple, UDT:
		return false
	case List, Set, Map:
		for _, e := range t.Elems {
			if !exact(e) {
				return false
			}
		}
	}
	return true
}

func TestCompositeKeys(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for round := range 30 {
		n := 1 + r.Intn(3)
		types := make([]Type, n)
		descs := make([]bool, n)
		for i := range types {
			types[i] = randType(r, 2)
			descs[i] = r.Intn(2) == 0
		}
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			const rows = 80
			vals := make([][][]byte, rows)
			keys := make([][]byte, rows)
			for i := range vals {
				vals[i] = make([][]byte, n)
				var key []byte
				for c := range n {
					vals[i][c] = randValue(r, types[c])
					var err error
					if key, err = AppendKey(key, types[c], vals[i][c], descs[c]); err != nil {
						t.Fatal(err)
					}
				}
				keys[i] = key
				// Split the composite key back into its components.
				rest := key
				for c := range n {
					var got []byte
					var err error
					if got, rest, err = DecodeKey(types[c], rest, descs[c]); err != nil {
						t.Fatalf("component %d: %v", c, err)
					}
					if Compare(types[c], got, vals[i][c]) != 0 {
						t.Fatalf("component %d = %s, want %s", c, Format(types[c], got), Format(types[c], vals[i][c]))
					}
				}
				if len(rest) != 0 {
					t.Fatalf("trailing bytes %x", rest)
				}
			}
			for i := range vals {
				for j := range vals {
					want := 0
					for c := range n {
						if want = Compare(types[c], vals[i][c], vals[j][c]); want != 0 {
							if descs[c] {
								want = -want
							}
							break
						}
					}
					if got := bytes.Compare(keys[i], keys[j]); sign(got) != sign(want) {
						t.Fatalf("composite order %d, want %d", got, want)
					}
				}
			}
		})
	}
}

func TestKeyErrors(t *testing.T) {
	for _, tc := range []struct {
		typ Type
		v   []byte
	}{
		{Scalar(Int), []byte{1, 2, 3}},
		{Scalar(Timeuuid), make([]byte, 16)},
		{Scalar(UUID), make([]byte, 15)},
		{Scalar(Decimal), []byte{1}},
		{ListOf(Scalar(Int)).Freeze(), []byte{0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF}},
		{ListOf(Scalar(Int)).Freeze(), []byte{0, 0, 0, 1, 0, 0, 0, 4, 1}},
		{TupleOf(Scalar(Int)), []byte{0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0}},
	} {
		dst := []byte{9}
		out, err := AppendKey(dst, tc.typ, tc.v, false)
		if err == nil {
			t.Errorf("AppendKey(%s, %x) succeeded", tc.typ, tc.v)
		}
		if len(out) != 1 {
			t.Errorf("AppendKey(%s, %x) left %x in dst", tc.typ, tc.v, out)
		}
	}
	for _, src := range [][]byte{nil, {}, {0x03}, {0x03, 0x80}, {0x07}, {0x03, 'a', 0x00}, {0x03, 0x00, 0x05}} {
		if _, _, err := DecodeKey(Scalar(Int), src, false); err == nil && len(src) < 5 {
			t.Errorf("DecodeKey(int, %x) succeeded", src)
		}
		if _, _, err := DecodeKey(Scalar(Varchar), src, false); err == nil {
			t.Errorf("DecodeKey(text, %x) succeeded", src)
		}
	}
}

func TestKeyCanonicalDecimal(t *testing.T) {
	dec := Scalar(Decimal)
	for _, tc := range []struct{ in, want string }{
		{"1.0", "1"},
		{"1.50", "1.5"},
		{"100", "100"},
		{"1E+2", "100"},
		{"-0.00", "0"},
		{"1E+40", "1E+40"},
		{"123.4500", "123.45"},
		{"-7E-10", "-7E-10"},
		{"1E+32", "100000000000000000000000000000000"},
		{"1E+33", "1E+33"},
		{"10E+2147483648", "1.0E+2147483649"}, // scale MinInt32 keeps its zero
		{"1E+2147483648", "1E+2147483648"},
		{"1E-2147483647", "1E-2147483647"},
	} {
		v, err := ParseLiteral(dec, LitFloat, tc.in)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := DecodeKey(dec, mustKey(t, dec, v, false), false)
		if err != nil {
			t.Fatal(err)
		}
		if s := Format(dec, got); s != tc.want {
			t.Errorf("canonical %s = %s, want %s", tc.in, s, tc.want)
		}
	}
}
