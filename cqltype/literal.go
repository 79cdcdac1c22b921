package cqltype

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/big"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// LitKind is the lexical kind of a CQL constant.
type LitKind int

// Literal kinds, as Cassandra's Constants.Type.
const (
	// LitString is a quoted string; the text is its unescaped content.
	LitString LitKind = iota
	// LitInteger is an integer such as 42 or -7.
	LitInteger
	// LitFloat is a floating-point constant (1.5, 2e10, NaN, Infinity,
	// -Infinity).
	LitFloat
	// LitBoolean is true or false (any case).
	LitBoolean
	// LitUUID is an unquoted UUID.
	LitUUID
	// LitBlob is a hex constant; the text may keep its 0x prefix.
	LitBlob
	// LitDuration is a duration constant such as 1h30m, P1DT2H or -3d.
	LitDuration
)

// String returns Cassandra's name of the kind, as used in "Invalid STRING
// constant" messages (a blob constant is HEX).
func (k LitKind) String() string {
	switch k {
	case LitString:
		return "STRING"
	case LitInteger:
		return "INTEGER"
	case LitFloat:
		return "FLOAT"
	case LitBoolean:
		return "BOOLEAN"
	case LitUUID:
		return "UUID"
	case LitBlob:
		return "HEX"
	case LitDuration:
		return "DURATION"
	}
	return "LitKind(" + strconv.Itoa(int(k)) + ")"
}

// assignable reports whether a constant of kind lit may be assigned to a
// native type of kind k, per Cassandra's Constants.Literal.testAssignment.
func assignable(lit LitKind, k Kind) bool {
	switch lit {
	case LitString:
		switch k {
		case Ascii, Varchar, Inet, Date, Time, Timestamp:
			return true
		}
	case LitInteger:
		switch k {
		case Bigint, Counter, Date, Decimal, Double, Duration, Float, Int, Smallint, Time, Timestamp, Tinyint, Varint:
			return true
		}
	case LitUUID:
		return k == UUID || k == Timeuuid
	case LitFloat:
		return k == Decimal || k == Double || k == Float
	case LitBoolean:
		return k == Boolean
	case LitBlob:
		// Tinyint is HEX's "preferred type" in Cassandra, so 0x05 is an
		// exact match for it.
		return k == Blob || k == Custom || k == Tinyint
	case LitDuration:
		return k == Duration
	}
	return false
}

// maxNumberDigits bounds the text of a varint or decimal literal: parsing
// decimal digits into a big integer takes time quadratic in their number
// (1,000,000 digits take about two seconds of CPU, a 16 MiB statement
// minutes), so one statement could occupy a core. 100,000 digits parse in
// about 20 ms and are far beyond any real number.
const maxNumberDigits = 100_000

// ParseLiteral converts the text of a constant of kind lit into the
// serialized value of type t, as Cassandra's Constants.Literal does
// (testAssignment, then the type's fromString):
//
//   - a kind that can never be assigned to t (e.g. a string for an int, a
//     constant for a collection) returns a *ConstantError; the caller
//     adds the column name (ConstantError.Message).
//   - a kind that may be assigned but whose text does not convert returns
//     an error matching ErrInvalidValue with Cassandra's message, e.g.
//     "Unable to make int from '3000000000'".
//
// Strings convert to ascii/text, inet ('127.0.0.1', '::1'), date, time and
// timestamp (” is the empty value for the last four). Integers convert to
// every numeric type with range checks, to timestamp (ms), date (raw
// unsigned days, epoch at 2^31) and time (ns). Floats convert to float,
// double and decimal. UUID constants to uuid and timeuuid (version 1 only),
// hex to blob (and a single byte to tinyint), durations to duration.
// Quoted UUIDs are rejected, as in Cassandra.
func ParseLiteral(t Type, lit LitKind, text string) ([]byte, error) {
	if !assignable(lit, t.Kind) {
		return nil, &ConstantError{Lit: lit, Text: text, Type: t}
	}
	if lit == LitBlob {
		b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(text, "0x"), "0X"))
		if err != nil {
			return nil, valueErrorf("cannot parse '%s' as hex bytes", text)
		}
		if t.Kind == Tinyint {
			return b, validate(t, b)
		}
		return b, nil
	}
	switch t.Kind {
	case Ascii:
		for i := 0; i < len(text); i++ {
			if text[i] > 127 {
				return nil, valueErrorf("Invalid ASCII character in string literal: '%s'", text)
			}
		}
		return []byte(text), nil
	case Varchar:
		if !utf8.ValidString(text) {
			return nil, valueErrorf("String didn't validate.")
		}
		return []byte(text), nil
	case Inet:
		return parseNonEmpty(text, parseInet, func(a []byte) []byte { return a })
	case Date:
		return parseNonEmpty(text, parseDateText, func(d uint32) []byte { return binary.BigEndian.AppendUint32(nil, d) })
	case Time:
		return parseNonEmpty(text, parseTimeText, int64Bytes)
	case Timestamp:
		return parseNonEmpty(text, parseTimestampText, int64Bytes)
	case Int, Bigint, Counter, Smallint, Tinyint:
		return parseFixedInt(t.Kind, text)
	case Varint:
		if len(text) > maxNumberDigits {
			return nil, valueErrorf("Unable to make integer from a literal of %d characters (at most %d)", len(text), maxNumberDigits)
		}
		x, ok := new(big.Int).SetString(text, 10)
		if !ok {
			return nil, valueErrorf("Unable to make integer from '%s'", text)
		}
		return bigToVarint(x), nil
	case Decimal:
		if len(text) > maxNumberDigits {
			return nil, valueErrorf("Unable to make BigDecimal from a literal of %d characters (at most %d)", len(text), maxNumberDigits)
		}
		u, scale, ok := parseDecimalText(text)
		if !ok {
			return nil, valueErrorf("Unable to make BigDecimal from '%s'", text)
		}
		return encodeDecimal(u, scale), nil
	case Float:
		f, err := strconv.ParseFloat(text, 32)
		if err != nil && !isRangeError(err) {
			return nil, valueErrorf("Unable to make float from '%s'", text)
		}
		// Java's Float.parseFloat turns overflow into Infinity.
		return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f))), nil
	case Double:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !isRangeError(err) {
			return nil, valueErrorf("Unable to make double from '%s'", text)
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), nil
	case Boolean:
		switch strings.ToLower(text) {
		case "true":
			return []byte{1}, nil
		case "false":
			return []byte{0}, nil
		}
		return nil, valueErrorf("Unable to make boolean from '%s'", text)
	case UUID, Timeuuid:
		u, ok := parseUUID(text)
		if !ok {
			if t.Kind == Timeuuid {
				return nil, valueErrorf("Unknown timeuuid representation: %s", text)
			}
			return nil, valueErrorf("Unable to make UUID from '%s'", text)
		}
		if t.Kind == Timeuuid && u[6]&0xF0 != 0x10 {
			return nil, valueErrorf("TimeUUID supports only version 1 UUIDs")
		}
		return u[:], nil
	case Duration:
		d, err := parseDuration(text)
		if err != nil {
			return nil, err
		}
		return d.encode(), nil
	}
	return nil, &ConstantError{Lit: lit, Text: text, Type: t}
}

func isRangeError(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func parseFixedInt(k Kind, text string) ([]byte, error) {
	bits, name := 64, "long"
	switch k {
	case Int:
		bits, name = 32, "int"
	case Smallint:
		bits, name = 16, "short"
	case Tinyint:
		bits, name = 8, "byte"
	}
	v, err := strconv.ParseInt(text, 10, bits)
	if err != nil {
		return nil, valueErrorf("Unable to make %s from '%s'", name, text)
	}
	return appendFixedInt(nil, k, v), nil
}

// appendFixedInt appends v big-endian in the width of k (v must fit).
func appendFixedInt(dst []byte, k Kind, v int64) []byte {
	switch k {
	case Int:
		return binary.BigEndian.AppendUint32(dst, uint32(v))
	case Smallint:
		return binary.BigEndian.AppendUint16(dst, uint16(v))
	case Tinyint:
		return append(dst, byte(v))
	}
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// parseNonEmpty serializes the string literal text of an inet, date, time
// or timestamp: parse reads it and encode serializes the result. The empty
// text is the empty value of these types, as in Cassandra.
func parseNonEmpty[T any](text string, parse func(string) (T, error), encode func(T) []byte) ([]byte, error) {
	if text == "" {
		return []byte{}, nil
	}
	x, err := parse(text)
	if err != nil {
		return nil, err
	}
	return encode(x), nil
}

// int64Bytes serializes a time (ns) or timestamp (ms) as 8 big-endian bytes.
func int64Bytes(x int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(x)) }

// parseInet accepts an IPv4 or IPv6 address literal (no host names, no
// zones). An IPv4-mapped IPv6 address becomes 4 bytes, as Java's
// InetAddress does.
func parseInet(text string) ([]byte, error) {
	a, err := netip.ParseAddr(text)
	if err != nil || a.Zone() != "" {
		return nil, valueErrorf("Unable to make inet address from '%s'", text)
	}
	a = a.Unmap()
	return a.AsSlice(), nil
}

// parseUUID parses the 8-4-4-4-12 hex form (any case).
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, false
	}
	return u, true
}

// formatUUID writes the 8-4-4-4-12 lower-case form.
func formatUUID(u []byte) string {
	h := hex.EncodeToString(u)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
