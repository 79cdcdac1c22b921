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

func formatTo(b *strings.Builder, t Type, v []byte) {
	if v == nil {
		b.WriteString("null")
		return
	}
	if len(v) == 0 {
		switch t.Kind {
		case Ascii, Varchar:
			b.WriteString("''")
		case Blob, Custom:
			b.WriteString("0x")
		case List, Set, Map, Tuple, UDT:
			b.WriteString("<empty>")
		default:
			name := t.String()
			b.WriteString("blobAs" + strings.ToUpper(name[:1]) + name[1:] + "(0x)")
		}
		return
	}
	if validate(t, v) != nil {
		writeHex(b, v)
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
		open, close := "[", "]"
		if t.Kind == Set {
			open, close = "{", "}"
		}
		elems, _ := DecodeCollection(v)
		b.WriteString(open)
		for i, e := range elems {
			if i > 0 {
				b.WriteString(", ")
			}
			formatTo(b, elemType(t, 0), e)
		}
		b.WriteString(close)
	case Map:
		keys, vals, _ := DecodeMap(v)
		b.WriteByte('{')
		for i := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			formatTo(b, elemType(t, 0), keys[i])
			b.WriteString(": ")
			formatTo(b, elemType(t, 1), vals[i])
		}
		b.WriteByte('}')
	case Tuple, UDT:
		types := componentTypes(t)
		elems, _ := DecodeTuple(v, len(types))
		if t.Kind == UDT {
			b.WriteByte('{')
		} else {
			b.WriteByte('(')
		}
		for i, e := range elems {
			if i > 0 {
				b.WriteString(", ")
			}
			if t.Kind == UDT {
				b.WriteString(t.Fields[i].Name)
				b.WriteString(": ")
			}
			formatTo(b, types[i], e)
		}
		if t.Kind == UDT {
			b.WriteByte('}')
		} else {
			b.WriteByte(')')
		}
	default:
		writeHex(b, v)
	}
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
