package cqltype

import (
	"encoding/binary"
	"encoding/hex"
	"unicode/utf8"
)

// maxTime is the largest valid time value: 23:59:59.999999999 in ns.
const maxTime = 86399999999999

// Validate reports whether v is well-formed serialized data of type t, with
// Cassandra's rules and messages (its TypeSerializer.validate). nil (null)
// is always well-formed. The empty value (len 0) is accepted for every type
// except smallint, tinyint, date, time and duration, whose serializers
// reject it in Cassandra too; an empty collection has no elements.
//
// Beyond Cassandra: time must be within 0..86399999999999, text must be
// strict UTF-8 (Go's definition; Cassandra also admits the modified-UTF-8
// C0 80 and surrogates), and a duration may not have trailing bytes.
// Collections may not contain null elements; their order is not checked
// (see NormalizeSet). Errors match ErrInvalidValue.
func Validate(t Type, v []byte) error {
	if v == nil {
		return nil
	}
	return validate(t, v)
}

func validate(t Type, v []byte) error {
	n := len(v)
	switch t.Kind {
	case Ascii:
		for _, c := range v {
			if c > 127 {
				return valueErrorf("Invalid byte for ascii: %d", int8(c))
			}
		}
	case Varchar:
		if !utf8.Valid(v) {
			return valueErrorf("String didn't validate.")
		}
	case Blob, Custom, Varint:
		// Any bytes; a varint may be non-minimal.
	case Bigint, Counter:
		if n != 8 && n != 0 {
			return valueErrorf("Expected 8 or 0 byte long (%d)", n)
		}
	case Timestamp:
		if n != 8 && n != 0 {
			return valueErrorf("Expected 8 or 0 byte long for date (%d)", n)
		}
	case Int:
		if n != 4 && n != 0 {
			return valueErrorf("Expected 4 or 0 byte int (%d)", n)
		}
	case Smallint:
		if n != 2 {
			return valueErrorf("Expected 2 bytes for a smallint (%d)", n)
		}
	case Tinyint:
		if n != 1 {
			return valueErrorf("Expected 1 byte for a tinyint (%d)", n)
		}
	case Boolean:
		if n != 1 && n != 0 {
			return valueErrorf("Expected 1 or 0 byte value (%d)", n)
		}
	case Float:
		if n != 4 && n != 0 {
			return valueErrorf("Expected 4 or 0 byte value for a float (%d)", n)
		}
	case Double:
		if n != 8 && n != 0 {
			return valueErrorf("Expected 8 or 0 byte value for a double (%d)", n)
		}
	case UUID, Timeuuid:
		if n != 16 && n != 0 {
			return valueErrorf("UUID should be 16 or 0 bytes (%d)", n)
		}
		if t.Kind == Timeuuid && n == 16 && v[6]&0xF0 != 0x10 {
			return valueErrorf("Invalid version for TimeUUID type.")
		}
	case Inet:
		if n != 0 && n != 4 && n != 16 {
			return valueErrorf("Expected 4 or 16 byte inetaddress; got %s", hex.EncodeToString(v))
		}
	case Date:
		if n != 4 {
			return valueErrorf("Expected 4 byte long for date (%d)", n)
		}
	case Time:
		if n != 8 {
			return valueErrorf("Expected 8 byte long for time (%d)", n)
		}
		if ns := int64(binary.BigEndian.Uint64(v)); ns < 0 || ns > maxTime {
			return valueErrorf("Invalid time value %d: must be between 0 and %d nanoseconds", ns, int64(maxTime))
		}
	case Decimal:
		if n != 0 && n < 4 {
			return valueErrorf("Expected 0 or at least 4 bytes (%d)", n)
		}
	case Duration:
		_, err := decodeDuration(v)
		return err
	case List, Set, Map:
		return validateCollection(t, v)
	case Tuple, UDT:
		return validateComponents(t, v)
	default:
		return valueErrorf("Unsupported type %s", t)
	}
	return nil
}

// validateCollection validates a list, set or map: its items (for a map,
// keys and values in turn) and that nothing follows them.
func validateCollection(t Type, v []byte) error {
	what := "list"
	switch t.Kind {
	case Set:
		what = "set"
	case Map:
		what = "map"
	}
	it, err := newCollIter(v, t.Kind == Map, what)
	if err != nil {
		return err
	}
	for i := 0; it.more(); i++ {
		e, err := it.next()
		if err != nil {
			return err
		}
		if err := validate(itemType(t, i), e); err != nil {
			return err
		}
	}
	return it.finish()
}

// validateComponents follows Cassandra's TupleSerializer.validate: fewer
// elements than declared are fine (they read as null), more are not.
func validateComponents(t Type, v []byte) error {
	types := componentTypes(t)
	what := "component"
	if t.Kind == UDT {
		what = "field"
	}
	pos := 0
	for i := 0; pos < len(v); i++ {
		if i >= len(types) {
			if t.Kind == UDT {
				return valueErrorf("Invalid remaining data after end of UDT value")
			}
			return valueErrorf("Invalid remaining data after end of tuple value")
		}
		e, next, err := readElem(v, pos, i, what)
		if err != nil {
			return err
		}
		pos = next
		if e == nil {
			continue
		}
		if err := validate(types[i], e); err != nil {
			return err
		}
	}
	return nil
}
