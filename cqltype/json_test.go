package cqltype

import (
	"errors"
	"strings"
	"testing"
)

// ToJSON writes Cassandra's JSON encoding of each type, and FromJSON
// reads it back to the same value.
func TestJSONRoundTrip(t *testing.T) {
	for _, tc := range []struct{ typ, lit, want string }{
		{"text", `'a "q" \ é'`, `"a \"q\" \\ é"`},
		{"ascii", "'x'", `"x"`},
		{"int", "-7", "-7"},
		{"bigint", "9000000000", "9000000000"},
		{"varint", "123456789012345678901234567890", "123456789012345678901234567890"},
		{"decimal", "1.50", "1.50"},
		{"double", "2.5", "2.5"},
		{"float", "-0.25", "-0.25"},
		{"boolean", "true", "true"},
		{"timestamp", "'2011-02-03 04:05:06.789+0000'", `"2011-02-03 04:05:06.789Z"`},
		{"date", "'2011-02-03'", `"2011-02-03"`},
		{"time", "'13:30:00.000000001'", `"13:30:00.000000001"`},
		{"uuid", "6ab09bec-e68e-48d9-a5f8-97e6fb4c9b47", `"6ab09bec-e68e-48d9-a5f8-97e6fb4c9b47"`},
		{"timeuuid", "50554d6e-29bb-11e5-b345-feff819cdc9f", `"50554d6e-29bb-11e5-b345-feff819cdc9f"`},
		{"inet", "'::1'", `"::1"`},
		{"blob", "0xcafe", `"0xcafe"`},
		{"duration", "1h30m", `"1h30m"`},
		{"list<int>", "[3, 1, 3]", "[3, 1, 3]"},
		{"set<text>", "{'b', 'a'}", `["a", "b"]`},
		{"map<int, text>", "{2: 'b', 1: 'a'}", `{"1": "a", "2": "b"}`},
		{"map<text, frozen<list<int>>>", "{'k': [1]}", `{"k": [1]}`},
		{"map<uuid, int>", "{6ab09bec-e68e-48d9-a5f8-97e6fb4c9b47: 1}", `{"6ab09bec-e68e-48d9-a5f8-97e6fb4c9b47": 1}`},
		{"tuple<int, text>", "(1, 'a')", `[1, "a"]`},
	} {
		typ, err := Parse(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		v := literalValue(t, typ, tc.lit)
		got := ToJSON(typ, v)
		if got != tc.want {
			t.Errorf("ToJSON(%s %s) = %s, want %s", tc.typ, tc.lit, got, tc.want)
			continue
		}
		back, err := FromJSON(typ, []byte(got))
		if err != nil {
			t.Errorf("FromJSON(%s, %s): %v", tc.typ, got, err)
			continue
		}
		if Format(typ, back) != Format(typ, v) {
			t.Errorf("FromJSON(%s, %s) = %s, want %s", tc.typ, got, Format(typ, back), Format(typ, v))
		}
	}
	if got := ToJSON(Scalar(Int), nil); got != "null" {
		t.Errorf("ToJSON(null) = %s", got)
	}
	if v, err := FromJSON(Scalar(Int), []byte("null")); err != nil || v != nil {
		t.Errorf("FromJSON(null) = %x, %v", v, err)
	}
}

// literalValue builds a value from a CQL literal through the same
// functions the executor uses for constants and collections.
func literalValue(t *testing.T, typ Type, lit string) []byte {
	t.Helper()
	// Collections and tuples are built from their JSON-free parts.
	switch typ.Kind {
	case List, Set, Map, Tuple:
		v, err := FromJSON(typ, []byte(cqlToJSON(lit)))
		if err != nil {
			t.Fatalf("%s %s: %v", typ, lit, err)
		}
		return v
	}
	kind := LitString
	switch {
	case strings.HasPrefix(lit, "'"):
		lit = strings.ReplaceAll(strings.Trim(lit, "'"), "''", "'")
	case strings.HasPrefix(lit, "0x"):
		kind = LitBlob
	case lit == "true" || lit == "false":
		kind = LitBoolean
	case typ.Kind == UUID || typ.Kind == Timeuuid:
		kind = LitUUID
	case typ.Kind == Duration:
		kind = LitDuration
	case strings.Contains(lit, "."):
		kind = LitFloat
	default:
		kind = LitInteger
	}
	v, err := ParseLiteral(typ, kind, lit)
	if err != nil {
		t.Fatalf("%s %s: %v", typ, lit, err)
	}
	return v
}

// cqlToJSON turns the simple collection literals of the test table into
// JSON: quotes become double quotes, braces of sets and tuples become
// brackets, and map keys are quoted.
func cqlToJSON(lit string) string {
	r := strings.NewReplacer("'", `"`, "(", "[", ")", "]")
	s := r.Replace(lit)
	if strings.HasPrefix(s, "{") && !strings.Contains(s, ":") {
		s = "[" + s[1:len(s)-1] + "]"
	}
	if strings.HasPrefix(s, "{") {
		var parts []string
		for _, kv := range strings.Split(s[1:len(s)-1], ", ") {
			k, v, _ := strings.Cut(kv, ": ")
			if !strings.HasPrefix(k, `"`) {
				k = `"` + k + `"`
			}
			parts = append(parts, k+": "+v)
		}
		s = "{" + strings.Join(parts, ", ") + "}"
	}
	return s
}

// FromJSON refuses what does not fit the type with a *JSONError, never a
// panic, and accepts Cassandra's alternative spellings.
func TestFromJSON(t *testing.T) {
	for _, tc := range []struct{ typ, json, want string }{
		{"int", `"42"`, "42"},
		{"bigint", `1e3`, "error Unable to make bigint from '1e3'"},
		{"timestamp", `1296705906789`, "'2011-02-03 04:05:06.789000+0000'"},
		{"boolean", `"false"`, "false"},
		{"double", `"NaN"`, "NaN"},
		{"set<int>", `[2, 1, 2]`, "{1, 2}"},
		{"int", `"x"`, `error Expected an int value, but got a String: "x"`},
		{"int", `2147483648`, "error Unable to make int from '2147483648'"},
		{"text", `1`, "error Expected a text string, but got a Number: 1"},
		{"blob", `"cafe"`, "error String representation of blob is missing 0x prefix: cafe"},
		{"list<int>", `{"a": 1}`, `error Expected a list (representing a list), but got a Object: {"a":1}`},
		{"list<int>", `[1, null]`, "error Invalid null element in list"},
		{"map<int, int>", `{"x": 1}`, `error Expected an int value, but got a String: "x"`},
		{"tuple<int>", `[1, 2]`, "error Tuple contains extra items (expected 1): [1,2]"},
		{"uuid", `"nope"`, "error Unable to make uuid from 'nope'"},
		{"int", `1 2`, "error Could not decode JSON string '1 2': trailing data"},
		{"int", `{`, "error Could not decode JSON string '{'"},
	} {
		typ, err := Parse(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		v, err := FromJSON(typ, []byte(tc.json))
		got := Format(typ, v)
		if err != nil {
			var je *JSONError
			if !errors.As(err, &je) {
				t.Errorf("FromJSON(%s, %s): error %T, want *JSONError", tc.typ, tc.json, err)
			}
			got = "error " + err.Error()
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("FromJSON(%s, %s) = %s, want %s", tc.typ, tc.json, got, tc.want)
		}
	}
}

// FuzzFromJSON feeds arbitrary documents to the decoder: it never panics,
// and what it accepts is a valid value whose JSON decodes to the same.
func FuzzFromJSON(f *testing.F) {
	for _, s := range []string{`1`, `"a"`, `[1, 2]`, `{"1": "x"}`, `null`, `[[1]]`, `"0xcafe"`} {
		f.Add("map<int, text>", s)
		f.Add("list<frozen<set<int>>>", s)
		f.Add("blob", s)
	}
	f.Fuzz(func(t *testing.T, typName, doc string) {
		typ, err := Parse(typName)
		if err != nil || typ.Kind == Custom || typ.Kind == UDT {
			return
		}
		v, err := FromJSON(typ, []byte(doc))
		if err != nil || v == nil {
			return
		}
		if err := Validate(typ, v); err != nil {
			t.Fatalf("FromJSON(%s, %q) = %x: invalid: %v", typ, doc, v, err)
		}
		again, err := FromJSON(typ, []byte(ToJSON(typ, v)))
		if err != nil {
			t.Fatalf("FromJSON(ToJSON(%x)) = %s: %v", v, ToJSON(typ, v), err)
		}
		if Compare(typ, again, v) != 0 && Format(typ, again) != Format(typ, v) {
			t.Fatalf("round trip of %s: %s, want %s", typ, Format(typ, again), Format(typ, v))
		}
	})
}
