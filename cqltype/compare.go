package cqltype

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
)

// Compare orders two serialized values of type t as Cassandra's comparator
// for the type (AbstractType.compare) does, returning -1, 0 or +1:
//
//   - null (nil) sorts before the empty value, which sorts before any
//     non-empty value. (Cassandra has no top-level nulls to compare; inside
//     tuples this is its order.)
//   - int, bigint, counter, smallint, tinyint, timestamp, time: signed.
//   - varint and decimal: numerically, so 1.0 == 1.00 and non-minimal
//     varints equal their minimal form.
//   - float, double: Java's Float/Double.compare: -0 < +0, NaN above +Inf,
//     all NaNs equal.
//   - date: as an unsigned 32-bit number (epoch at 2^31).
//   - boolean: false < true; any non-zero byte is true.
//   - ascii, text, blob, inet, duration: unsigned bytes, shorter first.
//   - uuid (UUIDType): by version nibble; then version-1 UUIDs by their
//     60-bit timestamp, other versions by the most significant 64 bits
//     unsigned; then the least significant 64 bits unsigned.
//   - timeuuid (TimeUUIDType): by timestamp, then the least significant 8
//     bytes as *signed* bytes (CASSANDRA-8730 keeps the two types apart).
//   - list and set element by element, map by key then value of each entry
//     in turn, a prefix before the longer collection.
//   - tuple element by element with null < empty < value; missing trailing
//     elements equal null.
//
// Compare never panics: malformed input falls back to comparing the raw
// bytes.
func Compare(t Type, a, b []byte) int {
	if a == nil || b == nil {
		return cmpBool(a != nil, b != nil)
	}
	if len(a) == 0 || len(b) == 0 {
		return cmpBool(len(a) != 0, len(b) != 0)
	}
	switch t.Kind {
	case Int, Bigint, Counter, Timestamp, Time, Smallint, Tinyint:
		if len(a) == len(b) {
			if c := cmp.Compare(int(int8(a[0])), int(int8(b[0]))); c != 0 {
				return c
			}
			return bytes.Compare(a[1:], b[1:])
		}
	case Boolean:
		if len(a) == 1 && len(b) == 1 {
			return cmpBool(a[0] != 0, b[0] != 0)
		}
	case Float:
		if len(a) == 4 && len(b) == 4 {
			return cmp.Compare(floatKey(binary.BigEndian.Uint32(a)), floatKey(binary.BigEndian.Uint32(b)))
		}
	case Double:
		if len(a) == 8 && len(b) == 8 {
			return cmp.Compare(doubleKey(binary.BigEndian.Uint64(a)), doubleKey(binary.BigEndian.Uint64(b)))
		}
	case Varint:
		return compareVarint(a, b)
	case Decimal:
		if len(a) >= 4 && len(b) >= 4 {
			return compareDecimal(a, b)
		}
	case UUID:
		if len(a) == 16 && len(b) == 16 {
			ha, hb := uuidKeyHigh(binary.BigEndian.Uint64(a)), uuidKeyHigh(binary.BigEndian.Uint64(b))
			if c := cmp.Compare(ha, hb); c != 0 {
				return c
			}
			return bytes.Compare(a[8:], b[8:])
		}
	case Timeuuid:
		if len(a) == 16 && len(b) == 16 {
			ha, hb := int64(reorderTimestamp(binary.BigEndian.Uint64(a))), int64(reorderTimestamp(binary.BigEndian.Uint64(b)))
			if c := cmp.Compare(ha, hb); c != 0 {
				return c
			}
			const signs = 0x8080808080808080
			return cmp.Compare(binary.BigEndian.Uint64(a[8:])^signs, binary.BigEndian.Uint64(b[8:])^signs)
		}
	case List, Set, Map:
		if c, ok := compareCollections(t, a, b); ok {
			return c
		}
	case Tuple, UDT:
		if c, ok := compareComponents(t, a, b); ok {
			return c
		}
	}
	return bytes.Compare(a, b)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// floatKey maps float bits to an unsigned key in Java Float.compare order
// (see orderKey); doubleKey likewise for Double.compare.
func floatKey(bits uint32) uint32 {
	return orderKey(bits, math.IsNaN(float64(math.Float32frombits(bits))), 0x7FC00000)
}

func doubleKey(bits uint64) uint64 {
	return orderKey(bits, math.IsNaN(math.Float64frombits(bits)), 0x7FF8000000000000)
}

// orderKey maps the bits of an IEEE 754 number to an unsigned key that
// orders as Java's compare does: NaNs are made canonical, negatives have
// all bits flipped, non-negatives the sign bit.
func orderKey[U uint32 | uint64](bits U, isNaN bool, canonicalNaN U) U {
	if isNaN {
		bits = canonicalNaN
	}
	sign := ^(^U(0) >> 1)
	if bits&sign != 0 {
		return ^bits
	}
	return bits | sign
}

// fromOrderKey inverts orderKey (a NaN comes back canonical).
func fromOrderKey[U uint32 | uint64](k U) U {
	sign := ^(^U(0) >> 1)
	if k&sign != 0 {
		return k &^ sign
	}
	return ^k
}

// reorderTimestamp is Cassandra's TimeUUIDType.reorderTimestampBytes: it
// moves time_hi_and_version to the top and time_low to the bottom, so a
// version-1 UUID's most significant long orders by timestamp.
func reorderTimestamp(msb uint64) uint64 {
	return msb<<48 | (msb<<16)&0xFFFF00000000 | msb>>32
}

// reorderTimestampBack inverts reorderTimestamp.
func reorderTimestampBack(r uint64) uint64 {
	return r<<32 | (r>>16)&0xFFFF0000 | r>>48
}

// uuidKeyHigh is the most significant long of UUIDType's byte-comparable
// form (UUIDType.asComparableBytes): the version nibble on top, then the
// timestamp for version 1, or the remaining bits in order otherwise.
func uuidKeyHigh(msb uint64) uint64 {
	version := (msb >> 12) & 0xF
	if version == 1 {
		return reorderTimestamp(msb)
	}
	return version<<60 | (msb>>4)&0x0FFFFFFFFFFFF000 | msb&0xFFF
}

func uuidFromKeyHigh(k uint64) uint64 {
	version := k >> 60
	if version == 1 {
		return reorderTimestampBack(k)
	}
	return (k<<4)&0xFFFFFFFFFFFF0000 | version<<12 | k&0xFFF
}

func compareCollections(t Type, a, b []byte) (int, bool) {
	isMap := t.Kind == Map
	ia, err := newCollIter(a, isMap, "")
	if err != nil {
		return 0, false
	}
	ib, err := newCollIter(b, isMap, "")
	if err != nil {
		return 0, false
	}
	for i := 0; ia.more() && ib.more(); i++ {
		ea, err := ia.next()
		if err != nil {
			return 0, false
		}
		eb, err := ib.next()
		if err != nil {
			return 0, false
		}
		if c := Compare(itemType(t, i), ea, eb); c != 0 {
			return c, true
		}
	}
	return cmp.Compare(ia.n, ib.n), true
}

// compareComponents follows Cassandra's TupleType.compareCustom.
func compareComponents(t Type, a, b []byte) (int, bool) {
	types := componentTypes(t)
	pa, pb := 0, 0
	for i := 0; pa < len(a) || pb < len(b); i++ {
		if i >= len(types) {
			return 0, false
		}
		var ea, eb []byte // nil: null or missing
		var err error
		if pa < len(a) {
			if ea, pa, err = readElem(a, pa, i, ""); err != nil {
				return 0, false
			}
		}
		if pb < len(b) {
			if eb, pb, err = readElem(b, pb, i, ""); err != nil {
				return 0, false
			}
		}
		if c := Compare(types[i], ea, eb); c != 0 {
			return c, true
		}
	}
	return 0, true
}
