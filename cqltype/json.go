package cqltype

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ToJSON renders a serialized value of type t as Cassandra's JSON encoding
// (what toJson() and SELECT JSON return, AbstractType.toJSONString in
// Cassandra 3.11): text, uuids, inets, dates, times, durations and
// timestamps ("yyyy-mm-dd hh:mm:ss.SSSZ", UTC) as strings; blobs as
// "0x..." strings; integers, varints, decimals and finite floats as
// numbers; booleans as true/false; lists, sets and tuples as arrays; maps
// and UDTs as objects whose keys are strings (a non-text map key is its
// own JSON quoted as a string); null as null. NaN and the infinities have
// no JSON number and are written as the strings "NaN", "Infinity",
// "-Infinity". Malformed values are written as a "0x..." string; ToJSON
// never panics.
func ToJSON(t Type, v []byte) string {
	var b strings.Builder
	jsonTo(&b, t, v)
	return b.String()
}

var jsonNotation = notation{emptyText: `""`, emptyBlob: `"0x"`, emptyOther: emptyJSON, malformed: writeJSONHex}

// emptyJSON: an empty value of a type with content has no JSON form;
// Cassandra writes it as null too.
func emptyJSON(Type) string { return "null" }

// writeJSONHex writes v as a "0x..." JSON string.
func writeJSONHex(b *strings.Builder, v []byte) { writeJSONString(b, fmt.Sprintf("0x%x", v)) }

func jsonTo(b *strings.Builder, t Type, v []byte) {
	if jsonNotation.writeSpecial(b, t, v) {
		return
	}
	switch t.Kind {
	case Ascii, Varchar:
		writeJSONString(b, string(v))
	case Blob, Custom:
		writeJSONHex(b, v)
	case Int, Bigint, Counter, Smallint, Tinyint, Varint, Decimal, Boolean:
		b.WriteString(Format(t, v))
	case Float, Double:
		var f float64
		if t.Kind == Float {
			f = float64(math.Float32frombits(binary.BigEndian.Uint32(v)))
		} else {
			f = math.Float64frombits(binary.BigEndian.Uint64(v))
		}
		s := Format(t, v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			writeJSONString(b, s)
		} else {
			b.WriteString(s)
		}
	case Timestamp:
		writeJSONString(b, FormatTimestampJSON(int64(binary.BigEndian.Uint64(v))))
	case UUID, Timeuuid, Duration:
		writeJSONString(b, Format(t, v))
	case Inet, Date, Time:
		// Format quotes these as CQL strings; JSON wants the bare text.
		s := Format(t, v)
		writeJSONString(b, strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(s, "'"), "'"), "''", "'"))
	case List, Set, Tuple:
		var elems [][]byte
		var types []Type
		if t.Kind == Tuple {
			types = componentTypes(t)
			elems, _ = DecodeTuple(v, len(types))
		} else {
			elems, _ = DecodeCollection(v)
		}
		writeSeq(b, '[', ']', len(elems), func(i int) {
			et := elemType(t, 0)
			if t.Kind == Tuple {
				et = types[i]
			}
			jsonTo(b, et, elems[i])
		})
	case Map:
		keys, vals, _ := DecodeMap(v)
		writeSeq(b, '{', '}', len(keys), func(i int) {
			k := ToJSON(elemType(t, 0), keys[i])
			if !strings.HasPrefix(k, `"`) {
				k = jsonQuote(k)
			}
			b.WriteString(k)
			b.WriteString(": ")
			jsonTo(b, elemType(t, 1), vals[i])
		})
	case UDT:
		types := componentTypes(t)
		elems, _ := DecodeTuple(v, len(types))
		writeSeq(b, '{', '}', len(elems), func(i int) {
			writeJSONString(b, t.Fields[i].Name)
			b.WriteString(": ")
			jsonTo(b, types[i], elems[i])
		})
	default:
		writeJSONHex(b, v)
	}
}

// FormatTimestampJSON writes milliseconds since the epoch as Cassandra's
// JSON and text form of a timestamp: "2011-02-03 04:05:00.000Z" (UTC).
func FormatTimestampJSON(ms int64) string {
	s := formatTimestamp(ms) // yyyy-mm-dd hh:mm:ss.SSS000+0000
	return strings.TrimSuffix(s, "000+0000") + "Z"
}

func jsonQuote(s string) string {
	var b strings.Builder
	writeJSONString(&b, s)
	return b.String()
}

// writeJSONString writes s as a JSON string; it escapes only what JSON
// requires (quotes, backslashes, control characters), as Jackson does, so
// non-ASCII text stays readable.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// JSONError is a JSON document or value that cannot become a value of a
// type; its message is Cassandra's wording after "Error decoding JSON
// value for <column>: ".
type JSONError struct{ msg string }

func (e *JSONError) Error() string { return e.msg }

func jsonErrorf(format string, args ...any) error {
	return &JSONError{msg: fmt.Sprintf(format, args...)}
}

// FromJSON parses one JSON value (the text of a fromJson() argument or of
// one entry of an INSERT JSON document) into a serialized value of type t,
// accepting what Cassandra's AbstractType.fromJSONObject accepts: the
// encodings ToJSON writes, numbers also as strings, timestamps also as
// integers (ms). JSON null gives a nil value. Errors are *JSONError.
func FromJSON(t Type, text []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, jsonErrorf("Could not decode JSON string '%s': %v", text, err)
	}
	if dec.More() {
		return nil, jsonErrorf("Could not decode JSON string '%s': trailing data", text)
	}
	return FromJSONValue(t, x)
}

// FromJSONValue converts a value decoded by encoding/json (with
// UseNumber) into a serialized value of type t; see FromJSON.
func FromJSONValue(t Type, x any) ([]byte, error) {
	if x == nil {
		return nil, nil
	}
	typeName := func() string {
		switch x.(type) {
		case string:
			return "String"
		case json.Number:
			return "Number"
		case bool:
			return "Boolean"
		case []any:
			return "Array"
		case map[string]any:
			return "Object"
		}
		return fmt.Sprintf("%T", x)
	}
	wrong := func(want string) error {
		return jsonErrorf("Expected %s, but got a %s: %s", want, typeName(), compactJSON(x))
	}
	parse := func(lit LitKind, s string) ([]byte, error) {
		b, err := ParseLiteral(t, lit, s)
		if err != nil {
			return nil, jsonErrorf("Unable to make %s from '%s'", t, s)
		}
		return b, nil
	}
	switch t.Kind {
	case Ascii, Varchar:
		s, ok := x.(string)
		if !ok {
			return nil, wrong("a " + t.String() + " string")
		}
		return parse(LitString, s)
	case Int, Bigint, Counter, Smallint, Tinyint, Varint:
		s, ok := numberText(x)
		if !ok {
			return nil, wrong("an " + t.String() + " value")
		}
		return parse(LitInteger, s)
	case Float, Double, Decimal:
		s, ok := numberText(x)
		if !ok {
			return nil, wrong("a " + t.String() + " value")
		}
		// NaN and the infinities parse as floats and doubles only; a
		// decimal refuses them in ParseLiteral.
		return parse(LitFloat, s)
	case Boolean:
		switch v := x.(type) {
		case bool:
			if v {
				return []byte{1}, nil
			}
			return []byte{0}, nil
		case string:
			return parse(LitBoolean, v)
		}
		return nil, wrong("a boolean value")
	case Timestamp:
		switch v := x.(type) {
		case json.Number:
			return parse(LitInteger, v.String())
		case string:
			return parse(LitString, v)
		}
		return nil, wrong("a long or a datestring representation of a timestamp value")
	case Date, Time, Inet:
		s, ok := x.(string)
		if !ok {
			if n, isNum := x.(json.Number); isNum && t.Kind != Inet {
				return parse(LitInteger, n.String())
			}
			return nil, wrong("a string representation of a " + t.String() + " value")
		}
		return parse(LitString, s)
	case UUID, Timeuuid:
		s, ok := x.(string)
		if !ok {
			return nil, wrong("a string representation of a " + t.String())
		}
		return parse(LitUUID, s)
	case Duration:
		s, ok := x.(string)
		if !ok {
			return nil, wrong("a string representation of a duration")
		}
		return parse(LitDuration, s)
	case Blob:
		s, ok := x.(string)
		if !ok {
			return nil, wrong("a hex string representation of bytes")
		}
		if !strings.HasPrefix(s, "0x") {
			return nil, jsonErrorf("String representation of blob is missing 0x prefix: %s", s)
		}
		return parse(LitBlob, s)
	case List, Set:
		arr, ok := x.([]any)
		if !ok {
			return nil, wrong("a list (representing a " + strings.ToLower(kindNames(t.Kind)) + ")")
		}
		elems := make([][]byte, 0, len(arr))
		for _, e := range arr {
			if e == nil {
				return nil, jsonErrorf("Invalid null element in %s", strings.ToLower(kindNames(t.Kind)))
			}
			b, err := FromJSONValue(elemType(t, 0), e)
			if err != nil {
				return nil, err
			}
			elems = append(elems, b)
		}
		if t.Kind == Set {
			elems = NormalizeSet(t, elems)
		}
		return EncodeCollection(elems), nil
	case Map:
		obj, ok := x.(map[string]any)
		if !ok {
			return nil, wrong("a map")
		}
		keys := make([][]byte, 0, len(obj))
		vals := make([][]byte, 0, len(obj))
		kt := elemType(t, 0)
		for k, v := range obj {
			// Keys are JSON object keys, so always strings: a text key
			// is the string itself, any other key its JSON text.
			var kx any = k
			if kt.Kind != Ascii && kt.Kind != Varchar {
				dec := json.NewDecoder(strings.NewReader(k))
				dec.UseNumber()
				var parsed any
				if err := dec.Decode(&parsed); err == nil && !dec.More() {
					kx = parsed
				}
			}
			kb, err := FromJSONValue(kt, kx)
			if err != nil {
				return nil, err
			}
			if v == nil {
				return nil, jsonErrorf("Invalid null value in map")
			}
			vb, err := FromJSONValue(elemType(t, 1), v)
			if err != nil {
				return nil, err
			}
			keys, vals = append(keys, kb), append(vals, vb)
		}
		keys, vals = NormalizeMap(t, keys, vals)
		return EncodeMap(keys, vals), nil
	case Tuple:
		arr, ok := x.([]any)
		if !ok {
			return nil, wrong("a list representation of a tuple")
		}
		types := componentTypes(t)
		if len(arr) > len(types) {
			return nil, jsonErrorf("Tuple contains extra items (expected %d): %s", len(types), compactJSON(x))
		}
		elems := make([][]byte, len(types))
		for i, e := range arr {
			b, err := FromJSONValue(types[i], e)
			if err != nil {
				return nil, err
			}
			elems[i] = b
		}
		return EncodeTuple(elems), nil
	}
	return nil, jsonErrorf("JSON is not supported for values of type %s", t)
}

// numberText returns the text of a JSON number, or of a string holding
// one (Cassandra accepts "42" for an int).
func numberText(x any) (string, bool) {
	switch v := x.(type) {
	case json.Number:
		return v.String(), true
	case string:
		s := strings.TrimSpace(v)
		if s == "NaN" || s == "Infinity" || s == "-Infinity" {
			return s, true
		}
		if _, err := strconv.ParseFloat(s, 64); err == nil || isRangeError(err) {
			return s, true
		}
		return "", false
	}
	return "", false
}

func compactJSON(x any) string {
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return string(b)
}

func kindNames(k Kind) string {
	switch k {
	case List:
		return "List"
	case Set:
		return "Set"
	}
	return "collection"
}
