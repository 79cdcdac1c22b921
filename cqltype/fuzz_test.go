package cqltype

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

// valueErr fails t unless err is nil or matches ErrInvalidValue: every
// error of the package matches exactly one sentinel, and the executor maps
// each to its CQL error code.
func valueErr(t *testing.T, what string, err error) bool {
	t.Helper()
	if err != nil && !errors.Is(err, ErrInvalidValue) {
		t.Fatalf("%s: error %T %v does not match ErrInvalidValue", what, err, err)
	}
	return err == nil
}

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
		var err error
		// A value bound by a client is validated before anything else
		// looks at it: validation allocates next to nothing, whatever
		// element counts the bytes claim.
		fuzzcheck.Allocs(t, fuzzcheck.Bound(len(data), 8), "Validate", func() { err = Validate(typ, data) })
		valueErr(t, "Validate", err)
		// None of these may panic, valid or not.
		_ = Format(typ, data)
		_, uerr := Unmarshal(typ, data)
		valueErr(t, "Unmarshal", uerr)
		if c := Compare(typ, data, data); c != 0 {
			t.Fatalf("Compare(%s, v, v) = %d", typ, c)
		}
		key, kerr := AppendKey(nil, typ, data, sel&0x80 != 0)
		if err != nil {
			return
		}
		// A valid value normalizes (sets and maps sorted, deduplicated)
		// to a valid value that normalizes to itself.
		norm, nerr := Normalize(typ, data)
		if nerr != nil {
			t.Fatalf("Normalize(%s, %x) of a valid value: %v", typ, data, nerr)
		}
		if err := Validate(typ, norm); err != nil {
			t.Fatalf("Normalize(%s, %x) = %x: %v", typ, data, norm, err)
		}
		if again, err := Normalize(typ, norm); err != nil || !bytes.Equal(again, norm) {
			t.Fatalf("Normalize(%s) is not idempotent: %x then %x (%v)", typ, norm, again, err)
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
		} else if back, err := Marshal(typ, v); err != nil {
			t.Fatalf("Marshal(%s, Unmarshal(%x)): %v", typ, data, err)
		} else {
			// Marshal writes the canonical form (sets and maps sorted,
			// which Validate does not require of a client's bytes): a
			// valid value that decodes and encodes to itself again.
			if err := Validate(typ, back); err != nil {
				t.Fatalf("Marshal(Unmarshal(%x)) as %s = %x, invalid: %v", data, typ, back, err)
			}
			v2, err := Unmarshal(typ, back)
			if err != nil {
				t.Fatalf("Unmarshal(%s, %x) of Marshal's output: %v", typ, back, err)
			}
			if again, err := Marshal(typ, v2); err != nil || !bytes.Equal(again, back) {
				t.Fatalf("canonical form of %x as %s not stable: %x then %x (%v)", data, typ, back, again, err)
			}
		}
	})
}

func FuzzDecodeKey(f *testing.F) {
	f.Add([]byte{0x03, 0x80, 0, 0, 1}, byte(7), false)
	f.Add([]byte{0xFC, 'a' ^ 0xFF, 0xFF, 0xFE}, byte(10), true)
	f.Fuzz(func(t *testing.T, src []byte, sel byte, desc bool) {
		typ := fuzzTypes[int(sel)%len(fuzzTypes)]
		var v, rest []byte
		var err error
		// Stored keys decode to values at most a few times their size.
		fuzzcheck.Allocs(t, fuzzcheck.Bound(len(src), 16), "DecodeKey", func() { v, rest, err = DecodeKey(typ, src, desc) })
		if !valueErr(t, "DecodeKey", err) {
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
			if !errors.Is(err, ErrInvalidType) {
				t.Fatalf("Parse(%q): error %v does not match ErrInvalidType", s, err)
			}
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

// FuzzParseLiteral feeds constants of a CQL statement (and of cosmosctl's
// key arguments, which the admin API parses as literals) to ParseLiteral
// for every type: it must not panic, must answer a kind that can never be
// assigned with a *ConstantError and bad text with ErrInvalidValue, and
// what it accepts must be a valid value of the type.
func FuzzParseLiteral(f *testing.F) {
	f.Fuzz(func(t *testing.T, text string, sel, lit byte) {
		typ := fuzzTypes[int(sel)%len(fuzzTypes)]
		kind := LitKind(int(lit) % (int(LitDuration) + 1))
		var v []byte
		var err error
		fuzzcheck.Allocs(t, fuzzcheck.Bound(len(text), 16), "ParseLiteral", func() { v, err = ParseLiteral(typ, kind, text) })
		if err != nil {
			var ce *ConstantError
			if errors.As(err, &ce) != errors.Is(err, ErrInvalidConstant) || (!errors.Is(err, ErrInvalidConstant) && !errors.Is(err, ErrInvalidValue)) {
				t.Fatalf("ParseLiteral(%s, %s, %q): error %T %v matches no sentinel", typ, kind, text, err, err)
			}
			return
		}
		// '' is the empty value of inet, date, time and timestamp, as
		// in Cassandra, although a client could not bind those bytes for
		// date and time (their serializers reject them).
		if text == "" && len(v) == 0 {
			return
		}
		if err := Validate(typ, v); err != nil {
			t.Fatalf("ParseLiteral(%s, %s, %q) = %x, an invalid value: %v", typ, kind, text, v, err)
		}
		_ = Format(typ, v)
	})
}

// literalSeeds are constants as CQL statements spell them, each with the
// type index (into fuzzTypes) and kind it is parsed for.
func literalSeeds() map[string]struct {
	text string
	kind LitKind
	typ  string
} {
	return map[string]struct {
		text string
		kind LitKind
		typ  string
	}{
		"int":          {"42", LitInteger, "int"},
		"int-range":    {"3000000000", LitInteger, "int"},
		"bigint":       {"-9223372036854775808", LitInteger, "bigint"},
		"varint":       {"123456789012345678901234567890", LitInteger, "varint"},
		"decimal":      {"-1.50e-3", LitFloat, "decimal"},
		"double-nan":   {"NaN", LitFloat, "double"},
		"float-inf":    {"-Infinity", LitFloat, "float"},
		"boolean":      {"TRUE", LitBoolean, "boolean"},
		"text":         {"h\u00e9llo 'quoted'", LitString, "text"},
		"ascii":        {"plain", LitString, "ascii"},
		"blob":         {"0xCAFEbabe", LitBlob, "blob"},
		"tinyint-hex":  {"0x05", LitBlob, "tinyint"},
		"uuid":         {"123e4567-e89b-12d3-a456-426614174000", LitUUID, "uuid"},
		"timeuuid":     {"d2177dd0-eaa2-11de-a572-001b779c76e3", LitUUID, "timeuuid"},
		"inet4":        {"127.0.0.1", LitString, "inet"},
		"inet6":        {"::ffff:10.0.0.1", LitString, "inet"},
		"date":         {"2024-02-29", LitString, "date"},
		"date-days":    {"2147483648", LitInteger, "date"},
		"time":         {"13:30:54.234567891", LitString, "time"},
		"timestamp":    {"2011-02-03T04:05:00.000+0000", LitString, "timestamp"},
		"timestamp-ms": {"1299038700000", LitInteger, "timestamp"},
		"duration":     {"1y2mo3w4d5h6m7s8ms9us10ns", LitDuration, "duration"},
		"duration-iso": {"P1DT2H", LitDuration, "duration"},
		"duration-neg": {"-3d", LitDuration, "duration"},
		"smallint":     {"-32768", LitInteger, "smallint"},
		"counter":      {"7", LitInteger, "counter"},
		"string-int":   {"3", LitString, "int"},
		"list":         {"[1, 2]", LitString, "list<int>"},
	}
}

// TestWriteFuzzSeeds writes the seed corpus of FuzzParseLiteral (the
// others' corpora predate it and are kept as they are).
func TestWriteFuzzSeeds(t *testing.T) {
	c := fuzzcheck.NewCorpus(t, "testdata/fuzz")
	for name, s := range literalSeeds() {
		sel := -1
		for i, ft := range fuzzTypes {
			if ft.String() == s.typ || strings.TrimPrefix(ft.String(), "frozen<") == s.typ {
				sel = i
				break
			}
		}
		if sel < 0 {
			t.Fatalf("seed %s: no fuzz type %s", name, s.typ)
		}
		c.Add("FuzzParseLiteral", name, s.text, byte(sel), byte(s.kind))
	}
}
