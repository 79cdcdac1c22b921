package cqltype

import (
	"bytes"
	"testing"
)

// fuzzTypes are the types the value fuzzers pick from with their selector
// byte.
var fuzzTypes = func() []Type {
	var ts []Type
	for _, k := range keyScalarKinds {
		ts = append(ts, Scalar(k))
	}
	for _, s := range []string{
		"list<int>", "set<text>", "map<text, bigint>", "frozen<list<frozen<set<varint>>>>",
		"tuple<int, text, decimal>", "frozen<map<frozen<tuple<uuid, boolean>>, frozen<list<double>>>>",
		"tuple<tuple<duration, inet>, timeuuid>", "list<frozen<map<date, time>>>",
	} {
		t, err := Parse(s)
		if err != nil {
			panic(err)
		}
		ts = append(ts, t)
	}
	return ts
}()

func FuzzValidate(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1}, byte(7))
	f.Add(EncodeCollection([][]byte{{0, 0, 0, 1}}), byte(20))
	f.Fuzz(func(t *testing.T, data []byte, sel byte) {
		typ := fuzzTypes[int(sel)%len(fuzzTypes)]
		err := Validate(typ, data)
		// None of these may panic, valid or not.
		_ = Format(typ, data)
		_, _ = Unmarshal(typ, data)
		if c := Compare(typ, data, data); c != 0 {
			t.Fatalf("Compare(%s, v, v) = %d", typ, c)
		}
		key, kerr := AppendKey(nil, typ, data, sel&0x80 != 0)
		if err != nil {
			return
		}
		if kerr != nil {
			t.Fatalf("AppendKey(%s, %x) of a valid value: %v", typ, data, kerr)
		}
		got, rest, err := DecodeKey(typ, key, sel&0x80 != 0)
		if err != nil || len(rest) != 0 {
			t.Fatalf("DecodeKey(%s, %x) = %x, %x, %v", typ, key, got, rest, err)
		}
		if Compare(typ, got, data) != 0 {
			t.Fatalf("DecodeKey(%s) = %s, want %s", typ, Format(typ, got), Format(typ, data))
		}
		if err := Validate(typ, got); err != nil {
			t.Fatalf("DecodeKey(%s) = %x: %v", typ, got, err)
		}
		if v, err := Unmarshal(typ, data); err != nil {
			t.Fatalf("Unmarshal(%s, %x) of a valid value: %v", typ, data, err)
		} else if _, err := Marshal(typ, v); err != nil {
			t.Fatalf("Marshal(%s, Unmarshal(%x)): %v", typ, data, err)
		}
	})
}

func FuzzDecodeKey(f *testing.F) {
	f.Add([]byte{0x03, 0x80, 0, 0, 1}, byte(7), false)
	f.Add([]byte{0xFC, 'a' ^ 0xFF, 0xFF, 0xFE}, byte(10), true)
	f.Fuzz(func(t *testing.T, src []byte, sel byte, desc bool) {
		typ := fuzzTypes[int(sel)%len(fuzzTypes)]
		v, rest, err := DecodeKey(typ, src, desc)
		if err != nil {
			return
		}
		if len(rest) > len(src) || !bytes.Equal(rest, src[len(src)-len(rest):]) {
			t.Fatalf("rest %x is not a suffix of %x", rest, src)
		}
		key, err := AppendKey(nil, typ, v, desc)
		if err != nil {
			t.Fatalf("AppendKey(%s, %x) of a decoded value: %v", typ, v, err)
		}
		v2, rest2, err := DecodeKey(typ, key, desc)
		if err != nil || len(rest2) != 0 || Compare(typ, v, v2) != 0 {
			t.Fatalf("DecodeKey(AppendKey(%x)) = %x, %x, %v", v, v2, rest2, err)
		}
		if key2, _ := AppendKey(nil, typ, v2, desc); !bytes.Equal(key, key2) {
			t.Fatalf("key encoding not canonical: %x then %x", key, key2)
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add("frozen<map<text, list<int>>>")
	f.Fuzz(func(t *testing.T, s string) {
		typ, err := Parse(s)
		if err != nil {
			return
		}
		str := typ.String()
		again, err := Parse(str)
		if err != nil {
			t.Fatalf("Parse(%q) ok but Parse(String() = %q): %v", s, str, err)
		}
		if !again.Equal(typ) || again.String() != str {
			t.Fatalf("round trip of %q: %q -> %q", s, str, again.String())
		}
	})
}
