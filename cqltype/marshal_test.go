package cqltype

import (
	"errors"
	"math"
	"math/big"
	"math/rand"
	"net"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

func TestMarshalRoundTrip(t *testing.T) {
	ts := time.Date(2011, 2, 3, 4, 5, 6, 789e6, time.UTC)
	u := [16]byte{0xd2, 0x17, 0x7d, 0xd0, 0xea, 0xa2, 0x11, 0xde, 0xa5, 0x72, 0, 0x1b, 0x77, 0x9c, 0x76, 0xe3}
	for _, tc := range []struct {
		typ    string
		in     any
		want   any // Unmarshal result; nil means same as in
		format string
	}{
		{"text", "héllo", nil, "'héllo'"},
		{"ascii", "abc", nil, "'abc'"},
		{"blob", []byte{1, 2}, nil, "0x0102"},
		{"bigint", int64(-5), nil, "-5"},
		{"counter", int64(7), nil, "7"},
		{"int", int32(math.MinInt32), nil, "-2147483648"},
		{"int", 42, int32(42), "42"},
		{"smallint", int16(-3), nil, "-3"},
		{"tinyint", int8(-128), nil, "-128"},
		{"varint", big.NewInt(-129), nil, "-129"},
		{"varint", uint64(math.MaxUint64), new(big.Int).SetUint64(math.MaxUint64), "18446744073709551615"},
		{"decimal", DecimalValue{big.NewInt(150), 2}, nil, "1.50"},
		{"decimal", 0.1, DecimalValue{big.NewInt(1), 1}, "0.1"},
		{"decimal", "1E+3", DecimalValue{big.NewInt(1), -3}, "1E+3"},
		{"float", float32(1.5), nil, "1.5"},
		{"double", math.Inf(-1), nil, "-Infinity"},
		{"boolean", true, nil, "true"},
		{"timestamp", ts, nil, "'2011-02-03 04:05:06.789000+0000'"},
		{"timestamp", "2011-02-03 04:05:06.789Z", ts, "'2011-02-03 04:05:06.789000+0000'"},
		{"date", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), nil, "'1969-12-31'"},
		{"time", 8*time.Hour + 1, nil, "'08:00:00.000000001'"},
		{"uuid", u, nil, "d2177dd0-eaa2-11de-a572-001b779c76e3"},
		{"timeuuid", "d2177dd0-eaa2-11de-a572-001b779c76e3", u, "d2177dd0-eaa2-11de-a572-001b779c76e3"},
		{"inet", net.ParseIP("10.0.0.1"), net.IP{10, 0, 0, 1}, "'10.0.0.1'"},
		{"inet", netip.MustParseAddr("::1"), net.ParseIP("::1"), "'::1'"},
		{"duration", DurationValue{1, 2, 3}, nil, "1mo2d3ns"},
		{"duration", 90 * time.Minute, DurationValue{Nanos: int64(90 * time.Minute)}, "1h30m"},
		{"list<int>", []int32{3, 1, 3}, []any{int32(3), int32(1), int32(3)}, "[3, 1, 3]"},
		{"set<text>", []string{"b", "a", "b"}, []any{"a", "b"}, "{'a', 'b'}"},
		{"map<text, int>", map[string]int{"b": 2, "a": 1}, []MapEntry{{"a", int32(1)}, {"b", int32(2)}}, "{'a': 1, 'b': 2}"},
		{"map<int, boolean>", []MapEntry{{2, true}, {1, false}}, []MapEntry{{int32(1), false}, {int32(2), true}}, "{1: false, 2: true}"},
		{"frozen<list<frozen<set<int>>>>", [][]int{{2, 1}, {}}, []any{[]any{int32(1), int32(2)}, []any{}}, "[{1, 2}, {}]"},
		{"tuple<int, text, boolean>", []any{1, nil, true}, []any{int32(1), nil, true}, "(1, null, true)"},
		{"tuple<int, text>", []any{1}, []any{int32(1), nil}, "(1, null)"},
		{"text", nil, nil, "null"},
		{"int", Empty{}, nil, "blobAsInt(0x)"},
		{"text", (*string)(nil), nil, "null"},
	} {
		t.Run(tc.typ+"/"+tc.format, func(t *testing.T) {
			typ := mustParse(t, tc.typ)
			b, err := Marshal(typ, tc.in)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if err := Validate(typ, b); err != nil {
				t.Fatalf("Marshal produced invalid bytes %x: %v", b, err)
			}
			if got := Format(typ, b); got != tc.format {
				t.Errorf("Format = %s, want %s", got, tc.format)
			}
			got, err := Unmarshal(typ, b)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			want := tc.want
			if want == nil {
				want = tc.in
				if p := reflect.ValueOf(want); p.Kind() == reflect.Pointer && p.IsNil() {
					want = nil
				}
			}
			if !equalValues(got, want) {
				t.Errorf("Unmarshal = %#v, want %#v", got, want)
			}
			if again, err := Marshal(typ, got); err != nil || Compare(typ, again, b) != 0 {
				t.Errorf("Marshal(Unmarshal) = %x, %v; want %x", again, err, b)
			}
		})
	}
}

// equalValues compares Unmarshal results, treating big numbers by value.
func equalValues(a, b any) bool {
	switch x := a.(type) {
	case *big.Int:
		y, ok := b.(*big.Int)
		return ok && x.Cmp(y) == 0
	case DecimalValue:
		y, ok := b.(DecimalValue)
		return ok && x.Scale == y.Scale && x.Unscaled.Cmp(y.Unscaled) == 0
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case net.IP:
		y, ok := b.(net.IP)
		return ok && x.Equal(y)
	}
	return reflect.DeepEqual(a, b)
}

func TestMarshalErrors(t *testing.T) {
	for _, tc := range []struct {
		typ string
		in  any
	}{
		{"int", int64(math.MaxInt32) + 1},
		{"tinyint", 200},
		{"int", "abc"},
		{"int", true},
		{"text", 5},
		{"ascii", "é"},
		{"text", string([]byte{0xff})},
		{"list<int>", []any{1, nil}},
		{"list<int>", 5},
		{"map<int, int>", []int{1}},
		{"tuple<int>", []any{1, 2}},
		{"timeuuid", [16]byte{}},
		{"decimal", math.NaN()},
		{"time", -time.Second},
		{"uuid", []byte{1, 2}},
	} {
		if b, err := Marshal(mustParse(t, tc.typ), tc.in); err == nil {
			t.Errorf("Marshal(%s, %#v) = %x, want error", tc.typ, tc.in, b)
		} else if !errors.Is(err, ErrInvalidValue) && !errors.Is(err, ErrInvalidConstant) {
			t.Errorf("Marshal(%s, %#v) error %v matches no sentinel", tc.typ, tc.in, err)
		}
	}
	if _, err := Unmarshal(Scalar(Int), []byte{1}); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("Unmarshal of bad bytes: %v", err)
	}
}

// TestUnmarshalRandom checks that Unmarshal accepts every generated value
// and that Marshal of the result Compares equal to it.
func TestUnmarshalRandom(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for range 300 {
		typ := randType(r, 3)
		for range 20 {
			v := randValue(r, typ)
			got, err := Unmarshal(typ, v)
			if err != nil {
				t.Fatalf("Unmarshal(%s, %x): %v", typ, v, err)
			}
			back, err := Marshal(typ, got)
			if err != nil {
				t.Fatalf("Marshal(%s, %#v): %v", typ, got, err)
			}
			if Compare(typ, back, v) != 0 {
				t.Fatalf("%s: Marshal(Unmarshal(%s)) = %s", typ, Format(typ, v), Format(typ, back))
			}
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		typ  Type
		v    []byte
		want string
	}{
		{Scalar(Int), []byte{1, 2, 3}, "0x010203"},
		{Scalar(Varchar), []byte{}, "''"},
		{Scalar(Blob), []byte{}, "0x"},
		{ListOf(Scalar(Int)), []byte{}, "<empty>"},
		{Scalar(Timestamp), []byte{}, "blobAsTimestamp(0x)"},
		{Scalar(Decimal), encodeDecimal(big.NewInt(-5), 9), "-5E-9"},
		{Scalar(Decimal), encodeDecimal(big.NewInt(0), 2), "0.00"},
		{Scalar(Decimal), encodeDecimal(big.NewInt(12345), math.MinInt32), "1.2345E+2147483652"},
		{Scalar(Double), mustMarshal(t, Scalar(Double), 1e21), "1e+21"},
		{Scalar(Duration), DurationValue{-14, -1, -1}.encode(), "-1y2mo1d1ns"},
		{MapOf(Scalar(Varchar), ListOf(Scalar(Int)).Freeze()), EncodeMap([][]byte{[]byte("k")}, [][]byte{EncodeCollection(nil)}), "{'k': []}"},
	} {
		if got := Format(tc.typ, tc.v); got != tc.want {
			t.Errorf("Format(%s, %x) = %s, want %s", tc.typ, tc.v, got, tc.want)
		}
	}
}

func mustMarshal(t *testing.T, typ Type, v any) []byte {
	t.Helper()
	b, err := Marshal(typ, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
