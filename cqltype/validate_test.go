package cqltype

import (
	"errors"
	"testing"
)

func TestValidate(t *testing.T) {
	b := func(xs ...byte) []byte { return append([]byte{}, xs...) }
	n := func(k int) []byte { return make([]byte, k) }
	v1 := b(0, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0, 0, 0, 0, 0)
	v4 := b(0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0)
	intList := ListOf(Scalar(Int)).Freeze()
	for _, tc := range []struct {
		name string
		typ  Type
		v    []byte
		want string // "" = valid
	}{
		{"null", Scalar(Int), nil, ""},
		{"int", Scalar(Int), n(4), ""},
		{"int empty", Scalar(Int), b(), ""},
		{"int short", Scalar(Int), n(3), "Expected 4 or 0 byte int (3)"},
		{"bigint", Scalar(Bigint), n(7), "Expected 8 or 0 byte long (7)"},
		{"counter", Scalar(Counter), n(8), ""},
		{"timestamp", Scalar(Timestamp), n(4), "Expected 8 or 0 byte long for date (4)"},
		{"smallint", Scalar(Smallint), n(2), ""},
		{"smallint empty", Scalar(Smallint), b(), "Expected 2 bytes for a smallint (0)"},
		{"tinyint", Scalar(Tinyint), n(2), "Expected 1 byte for a tinyint (2)"},
		{"boolean", Scalar(Boolean), n(2), "Expected 1 or 0 byte value (2)"},
		{"float", Scalar(Float), n(8), "Expected 4 or 0 byte value for a float (8)"},
		{"double", Scalar(Double), n(4), "Expected 8 or 0 byte value for a double (4)"},
		{"uuid", Scalar(UUID), v4, ""},
		{"uuid short", Scalar(UUID), n(15), "UUID should be 16 or 0 bytes (15)"},
		{"timeuuid", Scalar(Timeuuid), v1, ""},
		{"timeuuid v4", Scalar(Timeuuid), v4, "Invalid version for TimeUUID type."},
		{"inet4", Scalar(Inet), n(4), ""},
		{"inet16", Scalar(Inet), n(16), ""},
		{"inet5", Scalar(Inet), b(1, 2, 3, 4, 5), "Expected 4 or 16 byte inetaddress; got 0102030405"},
		{"date", Scalar(Date), n(4), ""},
		{"date empty", Scalar(Date), b(), "Expected 4 byte long for date (0)"},
		{"time", Scalar(Time), b(0, 0, 0x4E, 0x94, 0x91, 0x4E, 0xFF, 0xFF), ""},
		{"time too big", Scalar(Time), b(0, 0, 0x4E, 0x94, 0x91, 0x4F, 0, 0), "Invalid time value 86400000000000: must be between 0 and 86399999999999 nanoseconds"},
		{"time negative", Scalar(Time), b(0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF), "Invalid time value -1: must be between 0 and 86399999999999 nanoseconds"},
		{"time short", Scalar(Time), n(4), "Expected 8 byte long for time (4)"},
		{"decimal", Scalar(Decimal), n(5), ""},
		{"decimal scale only", Scalar(Decimal), n(4), ""},
		{"decimal short", Scalar(Decimal), n(3), "Expected 0 or at least 4 bytes (3)"},
		{"varint", Scalar(Varint), b(0, 0, 0x80), ""},
		{"ascii", Scalar(Ascii), []byte("abc"), ""},
		{"ascii high", Scalar(Ascii), b('a', 0xC3), "Invalid byte for ascii: -61"},
		{"text", Scalar(Varchar), []byte("héllo"), ""},
		{"text invalid", Scalar(Varchar), b(0xC3, 0x28), "String didn't validate."},
		{"blob", Scalar(Blob), b(0xFF), ""},
		{"duration", Scalar(Duration), b(2, 4, 6), ""},
		{"duration mixed signs", Scalar(Duration), b(2, 3, 6), "The duration months, days and nanoseconds must be all of the same sign (1, -2, 3)"},
		{"duration short", Scalar(Duration), b(2, 4), "Expected at least 3 bytes for a duration (2)"},
		{"duration truncated vint", Scalar(Duration), b(2, 4, 0xC0), "Not enough bytes to read a duration"},
		{"duration trailing", Scalar(Duration), b(2, 4, 6, 0), "Unexpected extraneous bytes after duration value"},
		{"duration months overflow", Scalar(Duration), append(appendVint(b(), 1<<31), 0, 0), "The duration months must be a 32 bits integer but was: 2147483648"},
		{"duration days overflow", Scalar(Duration), append(appendVint(b(0), -1<<31-1), 0), "The duration days must be a 32 bits integer but was: -2147483649"},
		{"list", intList, EncodeCollection([][]byte{n(4), n(4)}), ""},
		{"list empty value", intList, b(), ""},
		{"list bad element", intList, EncodeCollection([][]byte{n(4), n(3)}), "Expected 4 or 0 byte int (3)"},
		{"list null element", intList, EncodeCollection([][]byte{nil}), "Null value read when not allowed in a list"},
		{"list truncated", intList, b(0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 0), "Not enough bytes to read a list"},
		{"list trailing", intList, append(EncodeCollection(nil), 0), "Unexpected extraneous bytes after list value"},
		{"list short size", intList, b(0, 0), "Not enough bytes to read a list"},
		{"list negative size", intList, b(0xFF, 0xFF, 0xFF, 0xFF), "Invalid negative size -1 for a list"},
		{"set", SetOf(Scalar(Varchar)), EncodeCollection([][]byte{b(0xFF)}), "String didn't validate."},
		{"map", MapOf(Scalar(Varchar), Scalar(Int)), EncodeMap([][]byte{[]byte("a")}, [][]byte{n(4)}), ""},
		{"map bad value", MapOf(Scalar(Varchar), Scalar(Int)), EncodeMap([][]byte{[]byte("a")}, [][]byte{n(2)}), "Expected 4 or 0 byte int (2)"},
		{"map odd", MapOf(Scalar(Varchar), Scalar(Int)), b(0, 0, 0, 1, 0, 0, 0, 0), "Not enough bytes to read a map"},
		{"tuple", TupleOf(Scalar(Int), Scalar(Varchar)), EncodeTuple([][]byte{n(4), nil}), ""},
		{"tuple short", TupleOf(Scalar(Int), Scalar(Varchar)), EncodeTuple([][]byte{n(4)}), ""},
		{"tuple empty", TupleOf(Scalar(Int)), b(), ""},
		{"tuple extra", TupleOf(Scalar(Int)), EncodeTuple([][]byte{n(4), n(4)}), "Invalid remaining data after end of tuple value"},
		{"tuple bad element", TupleOf(Scalar(Int), Scalar(Int)), EncodeTuple([][]byte{n(4), n(1)}), "Expected 4 or 0 byte int (1)"},
		{"tuple truncated size", TupleOf(Scalar(Int), Scalar(Int)), b(0, 0, 0, 0, 0, 0), "Not enough bytes to read size of 1th component"},
		{"tuple truncated value", TupleOf(Scalar(Int)), b(0, 0, 0, 4, 0), "Not enough bytes to read 0th component"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.typ, tc.v)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("Validate accepted %x, want %q", tc.v, tc.want)
			case tc.want != "":
				if err.Error() != tc.want {
					t.Errorf("error %q, want %q", err, tc.want)
				}
				if !errors.Is(err, ErrInvalidValue) {
					t.Errorf("error does not match ErrInvalidValue")
				}
			}
		})
	}
}

func TestCollectionHelpers(t *testing.T) {
	a, bb, c := []byte("a"), []byte("b"), []byte("c")
	elems, err := DecodeCollection(EncodeCollection([][]byte{a, {}, c}))
	if err != nil || len(elems) != 3 || string(elems[0]) != "a" || elems[1] == nil || len(elems[1]) != 0 {
		t.Fatalf("DecodeCollection = %q, %v", elems, err)
	}
	if e, err := DecodeCollection(nil); err != nil || len(e) != 0 {
		t.Fatalf("DecodeCollection(empty) = %q, %v", e, err)
	}
	keys, vals, err := DecodeMap(EncodeMap([][]byte{a, bb}, [][]byte{c, a}))
	if err != nil || len(keys) != 2 || string(keys[1]) != "b" || string(vals[1]) != "a" {
		t.Fatalf("DecodeMap = %q %q, %v", keys, vals, err)
	}
	tup, err := DecodeTuple(EncodeTuple([][]byte{a, nil}), 3)
	if err != nil || len(tup) != 3 || string(tup[0]) != "a" || tup[1] != nil || tup[2] != nil {
		t.Fatalf("DecodeTuple = %q, %v", tup, err)
	}
	if _, err := DecodeTuple(EncodeTuple([][]byte{a, a}), 1); err == nil {
		t.Fatal("DecodeTuple accepted too many elements")
	}

	text := SetOf(Scalar(Varchar))
	in := [][]byte{c, a, bb, a}
	got := NormalizeSet(text, in)
	if len(got) != 3 || string(got[0]) != "a" || string(got[1]) != "b" || string(got[2]) != "c" {
		t.Fatalf("NormalizeSet = %q", got)
	}
	if string(in[0]) != "c" {
		t.Fatal("NormalizeSet modified its input")
	}
	// Equal decimals: the last one wins.
	dec := SetOf(Scalar(Decimal))
	d1, d2 := lit(t, Scalar(Decimal), LitFloat, "1.0"), lit(t, Scalar(Decimal), LitFloat, "1.00")
	if got := NormalizeSet(dec, [][]byte{d1, d2}); len(got) != 1 || Format(Scalar(Decimal), got[0]) != "1.00" {
		t.Fatalf("NormalizeSet(decimals) = %x", got)
	}
	m := MapOf(Scalar(Varchar), Scalar(Varchar))
	k, v := NormalizeMap(m, [][]byte{bb, a, bb}, [][]byte{[]byte("1"), []byte("2"), []byte("3")})
	if len(k) != 2 || string(k[0]) != "a" || string(v[0]) != "2" || string(k[1]) != "b" || string(v[1]) != "3" {
		t.Fatalf("NormalizeMap = %q %q", k, v)
	}
}
