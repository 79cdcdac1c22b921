package cqltype

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand"
)

// Random generators of types and valid values for property tests. Values
// are drawn from small domains and edge cases on purpose, so that equal
// values, common prefixes and escapes are frequent.

var keyScalarKinds = []Kind{
	Ascii, Bigint, Blob, Boolean, Decimal, Double, Float, Int, Timestamp, UUID, Varchar,
	Varint, Timeuuid, Inet, Date, Time, Smallint, Tinyint, Duration, Counter,
}

// randType returns a random type, with collections frozen so that they can
// be compared and nested.
func randType(r *rand.Rand, depth int) Type {
	if depth <= 0 || r.Intn(3) > 0 {
		return Scalar(keyScalarKinds[r.Intn(len(keyScalarKinds))])
	}
	elem := func() Type { return randType(r, depth-1).Freeze() }
	switch r.Intn(4) {
	case 0:
		return ListOf(elem()).Freeze()
	case 1:
		return SetOf(elem()).Freeze()
	case 2:
		return MapOf(elem(), elem()).Freeze()
	default:
		n := 1 + r.Intn(3)
		ts := make([]Type, n)
		for i := range ts {
			ts[i] = elem()
		}
		return TupleOf(ts...).Freeze()
	}
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.Intn(len(xs))] }

func randBytes(r *rand.Rand, alphabet []byte, maxLen int) []byte {
	b := make([]byte, r.Intn(maxLen+1))
	for i := range b {
		b[i] = alphabet[r.Intn(len(alphabet))]
	}
	return b
}

// randValue returns a valid non-null value of t, now and then the empty
// value where Validate accepts it.
func randValue(r *rand.Rand, t Type) []byte {
	switch t.Kind {
	case Smallint, Tinyint, Date, Time, Duration: // Validate rejects empty
	default:
		if r.Intn(25) == 0 {
			return []byte{}
		}
	}
	switch t.Kind {
	case Int:
		v := pick(r, int64(0), 1, -1, math.MinInt32, math.MaxInt32, int64(r.Int31()), -int64(r.Int31()), int64(r.Intn(5)))
		return binary.BigEndian.AppendUint32(nil, uint32(v))
	case Bigint, Counter, Timestamp:
		v := pick(r, int64(0), 1, -1, math.MinInt64, math.MaxInt64, r.Int63(), -r.Int63(), int64(r.Intn(5)-2))
		return binary.BigEndian.AppendUint64(nil, uint64(v))
	case Smallint:
		return binary.BigEndian.AppendUint16(nil, uint16(pick(r, 0, 1, -1, math.MinInt16, math.MaxInt16, r.Intn(1<<16))))
	case Tinyint:
		return []byte{byte(pick(r, 0, 1, 0x7F, 0x80, 0xFF, r.Intn(256)))}
	case Date:
		return binary.BigEndian.AppendUint32(nil, pick(r, 0, dateEpoch, dateEpoch-1, math.MaxUint32, r.Uint32(), uint32(dateEpoch+r.Intn(5))))
	case Time:
		return binary.BigEndian.AppendUint64(nil, uint64(pick(r, 0, maxTime, r.Int63n(maxTime+1), int64(r.Intn(3)))))
	case Boolean:
		return []byte{pick(r, byte(0), 1, byte(r.Intn(256)))}
	case Float:
		bits := pick(r, 0, 0x80000000, math.Float32bits(float32(math.Inf(1))), math.Float32bits(float32(math.Inf(-1))),
			0x7FC00000, 0xFFC00001, 0x7F800001, 1, 0x80000001, r.Uint32(), math.Float32bits(float32(r.Intn(5)-2)))
		return binary.BigEndian.AppendUint32(nil, bits)
	case Double:
		bits := pick(r, 0, 1<<63, math.Float64bits(math.Inf(1)), math.Float64bits(math.Inf(-1)),
			0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000001, 1, r.Uint64(), math.Float64bits(float64(r.Intn(5)-2)))
		return binary.BigEndian.AppendUint64(nil, bits)
	case Varint:
		return randVarint(r)
	case Decimal:
		scale := pick(r, int32(0), 1, 2, -1, -3, 40, -40, math.MinInt32, math.MaxInt32, int32(r.Intn(7)-3))
		u := varintToBig(randVarint(r))
		if r.Intn(3) == 0 {
			u.Mul(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(r.Intn(40))), nil))
		}
		out := binary.BigEndian.AppendUint32(nil, uint32(scale))
		v := bigToVarint(u)
		if r.Intn(8) == 0 { // non-minimal padding
			v = append([]byte{pad(v)}, v...)
		}
		return append(out, v...)
	case UUID, Timeuuid:
		u := make([]byte, 16)
		for i := range u {
			u[i] = pick(r, byte(0), 0x7F, 0x80, 0xFF, byte(r.Intn(256)))
		}
		version := pick(r, byte(1), 4, 0, 15, byte(r.Intn(16)))
		if t.Kind == Timeuuid {
			version = 1
		}
		u[6] = u[6]&0x0F | version<<4
		return u
	case Inet:
		b := make([]byte, pick(r, 4, 16))
		for i := range b {
			b[i] = pick(r, byte(0), 1, 0x7F, 0x80, 0xFF)
		}
		return b
	case Ascii:
		return randBytes(r, []byte{0, 1, 'a', 'b', 0x7F}, 5)
	case Varchar:
		s := ""
		for range r.Intn(5) {
			s += pick(r, "\x00", "a", "b", "é", "\u00ff", "\U0001F600", "\x7f")
		}
		return []byte(s)
	case Blob, Custom:
		return randBytes(r, []byte{0, 1, 0x7F, 0x80, 0xFE, 0xFF}, 6)
	case Duration:
		sign := int64(pick(r, 1, -1))
		d := DurationValue{
			Months: int32(sign * int64(pick(r, 0, 1, math.MaxInt32, r.Intn(100)))),
			Days:   int32(sign * int64(pick(r, 0, 1, math.MaxInt32, r.Intn(100)))),
			Nanos:  sign * pick(r, int64(0), 1, math.MaxInt64, r.Int63()),
		}
		return d.encode()
	case List, Set:
		elems := make([][]byte, r.Intn(4))
		for i := range elems {
			elems[i] = randValue(r, t.Elems[0])
		}
		if t.Kind == Set {
			elems = NormalizeSet(t, elems)
		}
		return EncodeCollection(elems)
	case Map:
		n := r.Intn(4)
		keys, vals := make([][]byte, n), make([][]byte, n)
		for i := range keys {
			keys[i], vals[i] = randValue(r, t.Elems[0]), randValue(r, t.Elems[1])
		}
		keys, vals = NormalizeMap(t, keys, vals)
		return EncodeMap(keys, vals)
	case Tuple:
		n := len(t.Elems)
		if r.Intn(5) == 0 {
			n = r.Intn(n + 1) // missing trailing elements
		}
		elems := make([][]byte, n)
		for i := range elems {
			if r.Intn(5) > 0 {
				elems[i] = randValue(r, t.Elems[i])
			}
		}
		return EncodeTuple(elems)
	}
	panic("randValue: unsupported type " + t.String())
}

// pad returns the byte that extends v's sign.
func pad(v []byte) byte {
	if len(v) > 0 && v[0]&0x80 != 0 {
		return 0xFF
	}
	return 0
}

func randVarint(r *rand.Rand) []byte {
	switch r.Intn(6) {
	case 0:
		return bigToVarint(big.NewInt(int64(r.Intn(7) - 3)))
	case 1:
		return bigToVarint(big.NewInt(pick(r, int64(127), 128, -128, -129, 255, 256, math.MaxInt64, math.MinInt64)))
	case 2: // non-minimal
		v := bigToVarint(big.NewInt(int64(r.Intn(1000) - 500)))
		return append([]byte{pad(v), pad(v)}, v...)
	default:
		b := randBytes(r, []byte{0, 1, 0x7F, 0x80, 0xFF, byte(r.Intn(256))}, 12)
		if len(b) == 0 {
			b = []byte{0}
		}
		return b
	}
}
