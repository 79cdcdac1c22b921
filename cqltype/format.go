package cqltype

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// Format renders a serialized value of type t as a CQL literal, for error
// messages, cqlsh-like output and tests: 'quoted' text (quotes doubled),
// numbers, unquoted UUIDs, 0x blobs, '2011-02-03 04:05:00.000000+0000'
// timestamps (UTC), 'yyyy-mm-dd' dates, 'hh:mm:ss.nnnnnnnnn' times, 'ip'
// inets, durations like 1h30m, [lists], {sets}, {k: v} maps, (tuples),
// {field: v} UDTs and null. The empty value of a type with no empty literal
// is written blobAs<type>(0x) (a valid CQL function call), or <empty> for
// collections and tuples. Malformed values are written as 0x hex; Format
// never panics.
func Format(t Type, v []byte) string {
	var b strings.Builder
	formatTo(&b, t, v)
	return b.String()
}

// notation is what a textual form of values (CQL literals for Format,
// JSON for ToJSON) writes for the values it does not render by kind.
type notation struct {
	emptyText, emptyBlob string              // the empty value of text and blob kinds
	emptyOther           func(t Type) string // the empty value of any other kind
	malformed            func(b *strings.Builder, v []byte)
}

// writeSpecial writes v in notation n if it is null, empty or malformed,
// and reports whether it did. What it leaves is well-formed and not empty,
// for the caller to render by kind.
func (n *notation) writeSpecial(b *strings.Builder, t Type, v []byte) bool {
	switch {
	case v == nil:
		b.WriteString("null")
	case len(v) == 0:
		switch t.Kind {
		case Ascii, Varchar:
			b.WriteString(n.emptyText)
		case Blob, Custom:
			b.WriteString(n.emptyBlob)
		default:
			b.WriteString(n.emptyOther(t))
		}
	case validate(t, v) != nil:
		n.malformed(b, v)
	default:
		return false
	}
	return true
}

var cqlNotation = notation{emptyText: "''", emptyBlob: "0x", emptyOther: emptyCQL, malformed: writeHex}

// emptyCQL is the CQL form of the empty value of a type with no empty
// literal: blobAs<type>(0x) is a valid function call.
func emptyCQL(t Type) string {
	switch t.Kind {
	case List, Set, Map, Tuple, UDT:
		return "<empty>"
	}
	name := t.String()
	return "blobAs" + strings.ToUpper(name[:1]) + name[1:] + "(0x)"
}

func formatTo(b *strings.Builder, t Type, v []byte) {
	if cqlNotation.writeSpecial(b, t, v) {
		return
	}
	switch t.Kind {
	case Ascii, Varchar:
		writeQuoted(b, string(v))
	case Blob, Custom:
		writeHex(b, v)
	case Int, Bigint, Counter, Smallint, Tinyint:
		x, _ := varintInt64(v) // fixed-width two's complement reads as a varint
		b.WriteString(strconv.FormatInt(x, 10))
	case Varint:
		b.WriteString(varintToBig(v).String())
	case Decimal:
		b.WriteString(decodeDecimal(v).String())
	case Float:
		b.WriteString(formatFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(v))), 32))
	case Double:
		b.WriteString(formatFloat(math.Float64frombits(binary.BigEndian.Uint64(v)), 64))
	case Boolean:
		b.WriteString(strconv.FormatBool(v[0] != 0))
	case UUID, Timeuuid:
		b.WriteString(formatUUID(v))
	case Inet:
		a, _ := netip.AddrFromSlice(v)
		writeQuoted(b, a.String())
	case Timestamp:
		writeQuoted(b, formatTimestamp(int64(binary.BigEndian.Uint64(v))))
	case Date:
		writeQuoted(b, formatDate(binary.BigEndian.Uint32(v)))
	case Time:
		writeQuoted(b, formatTime(int64(binary.BigEndian.Uint64(v))))
	case Duration:
		d, _ := decodeDuration(v)
		b.WriteString(d.String())
	case List, Set:
		open, close := byte('['), byte(']')
		if t.Kind == Set {
			open, close = '{', '}'
		}
		elems, _ := DecodeCollection(v)
		writeSeq(b, open, close, len(elems), func(i int) { formatTo(b, elemType(t, 0), elems[i]) })
	case Map:
		keys, vals, _ := DecodeMap(v)
		writeSeq(b, '{', '}', len(keys), func(i int) {
			formatTo(b, elemType(t, 0), keys[i])
			b.WriteString(": ")
			formatTo(b, elemType(t, 1), vals[i])
		})
	case Tuple, UDT:
		types := componentTypes(t)
		elems, _ := DecodeTuple(v, len(types))
		open, close := byte('('), byte(')')
		if t.Kind == UDT {
			open, close = '{', '}'
		}
		writeSeq(b, open, close, len(elems), func(i int) {
			if t.Kind == UDT {
				b.WriteString(t.Fields[i].Name)
				b.WriteString(": ")
			}
			formatTo(b, types[i], elems[i])
		})
	default:
		writeHex(b, v)
	}
}

// writeSeq writes open, then n items separated by ", " (item(i) writes item
// i), then close: the form of collections, tuples and UDTs in both CQL
// literals (Format) and JSON (ToJSON).
func writeSeq(b *strings.Builder, open, close byte, n int, item func(i int)) {
	b.WriteByte(open)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		item(i)
	}
	b.WriteByte(close)
}

func writeHex(b *strings.Builder, v []byte) {
	b.WriteString("0x")
	b.WriteString(hex.EncodeToString(v))
}

func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('\'')
	b.WriteString(strings.ReplaceAll(s, "'", "''"))
	b.WriteByte('\'')
}

// formatFloat writes the shortest decimal that reads back to the same
// value, with CQL's spelling of the special values.
func formatFloat(f float64, bitSize int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, bitSize)
}
