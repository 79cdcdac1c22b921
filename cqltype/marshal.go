package cqltype

import (
	"encoding/binary"
	"math"
	"math/big"
	"net"
	"net/netip"
	"reflect"
	"time"
)

// Empty is the Go form of the empty value (zero bytes, not null) of a type
// that has no natural empty Go value: Marshal(t, Empty{}) returns []byte{},
// and Unmarshal returns Empty{} for an empty non-text, non-blob value.
type Empty struct{}

// MapEntry is one entry of a map value as Unmarshal returns it (in
// serialized order, which Marshal makes key order). Marshal accepts
// []MapEntry as well as Go maps.
type MapEntry struct {
	Key   any
	Value any
}

// Marshal serializes a Go value as type t. nil (or a nil pointer) is null;
// pointers are followed. Accepted values, by type:
//
//	ascii, text         string, []byte
//	blob, custom        []byte, string
//	int kinds, counter  any Go integer or *big.Int, range-checked
//	varint              any Go integer, *big.Int
//	float, double       float32, float64, any Go integer
//	decimal             DecimalValue, *big.Int, any Go integer, float32/64 (the
//	                    shortest decimal that reads back to the float)
//	boolean             bool
//	timestamp           time.Time, or an integer of milliseconds
//	date                time.Time (its UTC date)
//	time                time.Duration since midnight, or integer ns
//	uuid, timeuuid      [16]byte, or []byte of 16 bytes
//	inet                net.IP, netip.Addr
//	duration            DurationValue, time.Duration (nanoseconds only)
//	list, set           any slice or array (sets are sorted and deduplicated)
//	map                 any Go map, or []MapEntry (sorted by key)
//	tuple               []any (or any slice) of at most as many elements
//
// For the other scalar types a string is also accepted and read as the CQL
// literal of that type (ParseLiteral with the natural literal kind), so
// Marshal(uuidType, "550e8400-e29b-41d4-a716-446655440000") and
// Marshal(timestampType, "2020-01-02 03:04:05Z") work. Empty{} gives the
// empty value. Errors match ErrInvalidValue.
func Marshal(t Type, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if _, ok := v.(Empty); ok {
		return []byte{}, nil
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && rv.Type() != reflect.TypeFor[*big.Int]() {
		if rv.IsNil() {
			return nil, nil
		}
		rv = rv.Elem()
		v = rv.Interface()
	}
	if b, ok, err := marshalScalar(t, v); ok || err != nil {
		return b, err
	}
	switch t.Kind {
	case List, Set:
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			break
		}
		elems := make([][]byte, rv.Len())
		for i := range elems {
			e, err := Marshal(elemType(t, 0), rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			if e == nil {
				return nil, valueErrorf("null is not allowed in a %s", t)
			}
			elems[i] = e
		}
		if t.Kind == Set {
			elems = NormalizeSet(t, elems)
		}
		return EncodeCollection(elems), nil
	case Map:
		var keys, vals [][]byte
		add := func(k, val any) error {
			kb, err := Marshal(elemType(t, 0), k)
			if err != nil {
				return err
			}
			vb, err := Marshal(elemType(t, 1), val)
			if err != nil {
				return err
			}
			if kb == nil || vb == nil {
				return valueErrorf("null is not allowed in a %s", t)
			}
			keys, vals = append(keys, kb), append(vals, vb)
			return nil
		}
		switch {
		case rv.Kind() == reflect.Map:
			it := rv.MapRange()
			for it.Next() {
				if err := add(it.Key().Interface(), it.Value().Interface()); err != nil {
					return nil, err
				}
			}
		case rv.Type() == reflect.TypeFor[[]MapEntry]():
			for _, e := range v.([]MapEntry) {
				if err := add(e.Key, e.Value); err != nil {
					return nil, err
				}
			}
		default:
			return nil, marshalError(t, v)
		}
		keys, vals = NormalizeMap(t, keys, vals)
		return EncodeMap(keys, vals), nil
	case Tuple:
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array || rv.Len() > len(t.Elems) {
			break
		}
		elems := make([][]byte, rv.Len())
		for i := range elems {
			e, err := Marshal(t.Elems[i], rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			elems[i] = e
		}
		return EncodeTuple(elems), nil
	}
	return nil, marshalError(t, v)
}

func marshalError(t Type, v any) error {
	return valueErrorf("cannot marshal %T into %s", v, t)
}

// naturalLit is the literal kind whose text Marshal accepts for a string
// given for scalar kind k.
func naturalLit(k Kind) LitKind {
	switch k {
	case Int, Bigint, Counter, Smallint, Tinyint, Varint:
		return LitInteger
	case Float, Double, Decimal:
		return LitFloat
	case Boolean:
		return LitBoolean
	case UUID, Timeuuid:
		return LitUUID
	case Blob, Custom:
		return LitBlob
	case Duration:
		return LitDuration
	}
	return LitString
}

// marshalScalar handles scalar types; ok is false when t is not scalar or
// v has no scalar meaning for it.
func marshalScalar(t Type, v any) (b []byte, ok bool, err error) {
	if t.IsCollection() || t.Kind == Tuple || t.Kind == UDT {
		return nil, false, nil
	}
	done := func(b []byte) ([]byte, bool, error) {
		if err := validate(t, b); err != nil {
			return nil, true, err
		}
		return b, true, nil
	}
	if s, isStr := v.(string); isStr {
		switch t.Kind {
		case Ascii, Varchar, Blob, Custom:
			return done([]byte(s))
		}
		b, err := ParseLiteral(t, naturalLit(t.Kind), s)
		return b, true, err
	}
	if x, isDur := v.(time.Duration); isDur {
		// Before the integers: time.Duration is an int64.
		switch t.Kind {
		case Time:
			return done(binary.BigEndian.AppendUint64(nil, uint64(x)))
		case Duration:
			return DurationValue{Nanos: int64(x)}.encode(), true, nil
		}
		return nil, false, nil
	}
	if x, isInt := toBigInt(v); isInt {
		switch t.Kind {
		case Int, Bigint, Counter, Smallint, Tinyint:
			bits := map[Kind]int{Int: 32, Smallint: 16, Tinyint: 8}[t.Kind]
			if bits == 0 {
				bits = 64
			}
			if !x.IsInt64() || x.Int64() < -1<<(bits-1) || x.Int64() > 1<<(bits-1)-1 {
				return nil, true, valueErrorf("value %s out of range for %s", x, t)
			}
			return appendFixedInt(nil, t.Kind, x.Int64()), true, nil
		case Varint:
			return bigToVarint(x), true, nil
		case Decimal:
			return encodeDecimal(x, 0), true, nil
		case Float:
			f, _ := new(big.Float).SetInt(x).Float32()
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(f)), true, nil
		case Double:
			f, _ := new(big.Float).SetInt(x).Float64()
			return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), true, nil
		case Timestamp, Time:
			if !x.IsInt64() {
				return nil, true, valueErrorf("value %s out of range for %s", x, t)
			}
			return done(binary.BigEndian.AppendUint64(nil, uint64(x.Int64())))
		}
		return nil, false, nil
	}
	switch x := v.(type) {
	case []byte:
		switch t.Kind {
		case Blob, Custom, Ascii, Varchar:
			return done(append([]byte{}, x...))
		case UUID, Timeuuid:
			return done(append([]byte{}, x...))
		case Inet:
			return done(append([]byte{}, x...))
		}
	case bool:
		if t.Kind == Boolean {
			if x {
				return []byte{1}, true, nil
			}
			return []byte{0}, true, nil
		}
	case float32, float64:
		f := reflect.ValueOf(x).Float()
		bitSize := 64
		if _, is32 := x.(float32); is32 {
			bitSize = 32
		}
		switch t.Kind {
		case Float:
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f))), true, nil
		case Double:
			return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), true, nil
		case Decimal:
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, true, valueErrorf("cannot marshal %v into decimal", f)
			}
			b, err := ParseLiteral(t, LitFloat, formatFloat(f, bitSize))
			return b, true, err
		}
	case DecimalValue:
		if t.Kind == Decimal {
			u := x.Unscaled
			if u == nil {
				u = new(big.Int)
			}
			return encodeDecimal(u, x.Scale), true, nil
		}
	case time.Time:
		switch t.Kind {
		case Timestamp:
			return binary.BigEndian.AppendUint64(nil, uint64(x.UnixMilli())), true, nil
		case Date:
			y, m, d := x.UTC().Date()
			days := daysFromCivil(int64(y), int(m), d)
			if days < math.MinInt32 || days > math.MaxInt32 {
				return nil, true, valueErrorf("date %s out of range", x)
			}
			return binary.BigEndian.AppendUint32(nil, uint32(days+dateEpoch)), true, nil
		}
	case DurationValue:
		if t.Kind == Duration {
			return done(x.encode())
		}
	case [16]byte:
		if t.Kind == UUID || t.Kind == Timeuuid {
			return done(x[:])
		}
	case net.IP:
		if t.Kind == Inet {
			if v4 := x.To4(); v4 != nil {
				return []byte(v4), true, nil
			}
			return done(append([]byte{}, x...))
		}
	case netip.Addr:
		if t.Kind == Inet && x.IsValid() {
			return x.Unmap().AsSlice(), true, nil
		}
	}
	return nil, false, nil
}

// toBigInt converts any Go integer (or *big.Int) to a *big.Int.
func toBigInt(v any) (*big.Int, bool) {
	if x, ok := v.(*big.Int); ok {
		return new(big.Int).Set(x), true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return big.NewInt(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return new(big.Int).SetUint64(rv.Uint()), true
	}
	return nil, false
}

// Unmarshal decodes a serialized value of type t (validating it first) into
// a Go value: null → nil; ascii, text → string; blob, custom → []byte;
// bigint, counter → int64; int → int32; smallint → int16; tinyint → int8;
// varint → *big.Int; decimal → DecimalValue; float → float32; double → float64;
// boolean → bool; timestamp → time.Time (UTC); date → time.Time (UTC
// midnight); time → time.Duration; uuid, timeuuid → [16]byte; inet →
// net.IP (4 or 16 bytes); duration → DurationValue; list, set → []any; map →
// []MapEntry in serialized order; tuple → []any of len(t.Elems) with nil for
// null elements; UDT → []any of the fields. The empty value is "" for
// ascii/text, []byte{} for blob, and Empty{} otherwise.
func Unmarshal(t Type, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	if err := validate(t, b); err != nil {
		return nil, err
	}
	return unmarshal(t, b), nil
}

// unmarshal decodes a validated value.
func unmarshal(t Type, b []byte) any {
	if b == nil {
		return nil
	}
	if len(b) == 0 {
		switch t.Kind {
		case Ascii, Varchar:
			return ""
		case Blob, Custom:
			return []byte{}
		}
		return Empty{}
	}
	switch t.Kind {
	case Ascii, Varchar:
		return string(b)
	case Bigint, Counter:
		return int64(binary.BigEndian.Uint64(b))
	case Int:
		return int32(binary.BigEndian.Uint32(b))
	case Smallint:
		return int16(binary.BigEndian.Uint16(b))
	case Tinyint:
		return int8(b[0])
	case Varint:
		return varintToBig(b)
	case Decimal:
		return decodeDecimal(b)
	case Float:
		return math.Float32frombits(binary.BigEndian.Uint32(b))
	case Double:
		return math.Float64frombits(binary.BigEndian.Uint64(b))
	case Boolean:
		return b[0] != 0
	case Timestamp:
		return time.UnixMilli(int64(binary.BigEndian.Uint64(b))).UTC()
	case Date:
		days := int64(binary.BigEndian.Uint32(b)) - dateEpoch
		return time.Unix(days*86400, 0).UTC()
	case Time:
		return time.Duration(binary.BigEndian.Uint64(b))
	case UUID, Timeuuid:
		var u [16]byte
		copy(u[:], b)
		return u
	case Inet:
		return net.IP(append([]byte{}, b...))
	case Duration:
		d, _ := decodeDuration(b)
		return d
	case List, Set:
		elems, _ := DecodeCollection(b)
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = unmarshal(elemType(t, 0), e)
		}
		return out
	case Map:
		keys, vals, _ := DecodeMap(b)
		out := make([]MapEntry, len(keys))
		for i := range keys {
			out[i] = MapEntry{Key: unmarshal(elemType(t, 0), keys[i]), Value: unmarshal(elemType(t, 1), vals[i])}
		}
		return out
	case Tuple, UDT:
		types := componentTypes(t)
		elems, _ := DecodeTuple(b, len(types))
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = unmarshal(types[i], e)
		}
		return out
	}
	return append([]byte{}, b...)
}
