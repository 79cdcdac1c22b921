package cqltype

import (
	"encoding/binary"
	"math/big"
)

// Key encoding: an order-preserving, self-delimiting byte form of a value,
// for clustering columns. For values a and b of type t,
//
//	bytes.Compare(AppendKey(nil, t, a, false), AppendKey(nil, t, b, false))
//
// has the sign of Compare(t, a, b); with desc every byte of the component is
// inverted, which reverses the order. No component's encoding is a prefix of
// another's, so components concatenate into a composite key that orders
// component by component, and DecodeKey can split them again.
//
// Layout of one component (ascending; desc inverts all of it):
//
//	0x01                     null (only meaningful inside tuples)
//	0x02                     the empty value
//	0x03 ...                 a value (varint/decimal: 0x03 negative,
//	                         0x04 zero, 0x05 positive)
//
// so the first byte of every component is in 0x01..0xFE in both directions,
// and a storage layer may bound "all keys starting with this prefix" by
// appending 0x00 or 0xFF to the prefix. Bodies:
//
//   - int, bigint, counter, smallint, tinyint, timestamp, time: big-endian
//     with the sign bit flipped. date: big-endian. boolean: 0 or 1.
//   - float, double: IEEE bits, all flipped if negative else the sign bit
//     flipped; NaN is made canonical (all NaNs compare equal).
//   - uuid: UUIDType's byte-comparable form (version nibble first, then the
//     timestamp of a version-1 UUID); timeuuid: the reordered timestamp
//     long with the sign bit flipped, then the low 8 bytes each XOR 0x80.
//   - ascii, text, blob, inet, duration: the bytes with 0x00 escaped as
//     0x00 0xFF, terminated by 0x00 0x01.
//   - varint: length of the magnitude (orderedUvarint) and the magnitude,
//     inverted for negatives.
//   - decimal: exponent (orderedInt) and base-100 digit pairs, each pair p
//     as 2p+1 except the last as 2p (cockroachdb's scheme), inverted for
//     negatives.
//   - list, set: each element's ascending encoding, then 0x00. Map: key and
//     value encodings of each entry, then 0x00. Tuple: exactly one encoding
//     per declared element (missing trailing elements as null).
//
// Canonicalisation: values that Compare equal have equal keys, so DecodeKey
// returns a value that Compares equal to the original but may differ in
// bytes: decimals lose trailing zeros (1.50 → 1.5; see canonicalDecimal),
// varints become minimal, booleans 0x00/0x01, NaNs canonical, and tuples
// gain explicit nulls for missing trailing elements. Cassandra treats such
// values as the same clustering key, i.e. the same row.

const (
	keyNull  = 0x01
	keyEmpty = 0x02
	keyValue = 0x03

	keyNeg  = 0x03
	keyZero = 0x04
	keyPos  = 0x05

	keyEnd = 0x00 // ends a list, set or map
)

// AppendKey appends the key encoding of the serialized value v of type t to
// dst and returns the extended slice. On error (v malformed for t) dst is
// returned unchanged in length. Every encoding is at least one byte; nil
// (null) encodes as 0x01 (0xFE descending). The contents of text, ascii,
// inet and duration values are not validated, only their structure.
func AppendKey(dst []byte, t Type, v []byte, desc bool) ([]byte, error) {
	start := len(dst)
	out, err := appendKeyAsc(dst, t, v)
	if err != nil {
		return dst[:start], err
	}
	if desc {
		for i := start; i < len(out); i++ {
			out[i] = ^out[i]
		}
	}
	return out, nil
}

func appendKeyAsc(dst []byte, t Type, v []byte) ([]byte, error) {
	if v == nil {
		return append(dst, keyNull), nil
	}
	if len(v) == 0 {
		return append(dst, keyEmpty), nil
	}
	switch t.Kind {
	case Int, Bigint, Counter, Timestamp, Time, Smallint, Tinyint, Date:
		if len(v) != fixedSize(t.Kind) {
			return dst, validateOrSize(t, v)
		}
		dst = append(dst, keyValue)
		dst = append(dst, v...)
		if t.Kind != Date {
			dst[len(dst)-len(v)] ^= 0x80
		}
		return dst, nil
	case Boolean:
		if len(v) != 1 {
			return dst, validateOrSize(t, v)
		}
		b := byte(0)
		if v[0] != 0 {
			b = 1
		}
		return append(dst, keyValue, b), nil
	case Float:
		if len(v) != 4 {
			return dst, validateOrSize(t, v)
		}
		return binary.BigEndian.AppendUint32(append(dst, keyValue), floatKey(binary.BigEndian.Uint32(v))), nil
	case Double:
		if len(v) != 8 {
			return dst, validateOrSize(t, v)
		}
		return binary.BigEndian.AppendUint64(append(dst, keyValue), doubleKey(binary.BigEndian.Uint64(v))), nil
	case UUID:
		if len(v) != 16 {
			return dst, validateOrSize(t, v)
		}
		dst = binary.BigEndian.AppendUint64(append(dst, keyValue), uuidKeyHigh(binary.BigEndian.Uint64(v)))
		return append(dst, v[8:]...), nil
	case Timeuuid:
		if err := validate(t, v); err != nil {
			return dst, err
		}
		dst = binary.BigEndian.AppendUint64(append(dst, keyValue), reorderTimestamp(binary.BigEndian.Uint64(v))^1<<63)
		return binary.BigEndian.AppendUint64(dst, binary.BigEndian.Uint64(v[8:])^0x8080808080808080), nil
	case Varint:
		return appendVarintKey(dst, v), nil
	case Decimal:
		if len(v) < 4 {
			return dst, validateOrSize(t, v)
		}
		return appendDecimalKey(dst, v), nil
	case List, Set, Map:
		it, err := newCollIter(v, t.Kind == Map, "collection")
		if err != nil {
			return dst, err
		}
		dst = append(dst, keyValue)
		for i := 0; it.more(); i++ {
			e, err := it.next()
			if err != nil {
				return dst, err
			}
			if dst, err = appendKeyAsc(dst, itemType(t, i), e); err != nil {
				return dst, err
			}
		}
		if err := it.finish(); err != nil {
			return dst, err
		}
		return append(dst, keyEnd), nil
	case Tuple, UDT:
		types := componentTypes(t)
		elems, err := DecodeTuple(v, len(types))
		if err != nil {
			return dst, err
		}
		dst = append(dst, keyValue)
		for i, e := range elems {
			if dst, err = appendKeyAsc(dst, types[i], e); err != nil {
				return dst, err
			}
		}
		return dst, nil
	default: // ascii, text, blob, inet, duration, custom
		return appendEscaped(append(dst, keyValue), v), nil
	}
}

func fixedSize(k Kind) int {
	switch k {
	case Int, Date, Float:
		return 4
	case Bigint, Counter, Timestamp, Time, Double:
		return 8
	case Smallint:
		return 2
	case Tinyint, Boolean:
		return 1
	case UUID, Timeuuid:
		return 16
	}
	return 0
}

// validateOrSize returns Validate's error for v, or a generic one when
// Validate accepts it (it cannot for the sizes AppendKey rejects).
func validateOrSize(t Type, v []byte) error {
	if err := validate(t, v); err != nil {
		return err
	}
	return valueErrorf("Invalid %d-byte value for %s", len(v), t)
}

func appendEscaped(dst, v []byte) []byte {
	for _, c := range v {
		if c == 0 {
			dst = append(dst, 0x00, 0xFF)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0x00, 0x01)
}

// appendOrderedUvarint appends u so that byte order is numeric order and
// no encoding is a prefix of another: u < 0xF0 is one byte; otherwise
// 0xF0+(n-1) followed by the n big-endian bytes of u.
func appendOrderedUvarint(dst []byte, u uint64) []byte {
	if u < 0xF0 {
		return append(dst, byte(u))
	}
	n := 1
	for u>>(8*n) != 0 && n < 8 {
		n++
	}
	dst = append(dst, byte(0xF0+n-1))
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(u>>(8*i)))
	}
	return dst
}

// appendOrderedInt appends a signed int in order: 0x00 then the inverted
// orderedUvarint of ^v for negatives, 0x01 then orderedUvarint(v) otherwise.
func appendOrderedInt(dst []byte, v int64) []byte {
	if v >= 0 {
		return appendOrderedUvarint(append(dst, 0x01), uint64(v))
	}
	start := len(dst) + 1
	dst = appendOrderedUvarint(append(dst, 0x00), uint64(^v))
	invert(dst[start:])
	return dst
}

func invert(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

func appendVarintKey(dst, v []byte) []byte {
	var mag []byte
	neg := v[0]&0x80 != 0
	if x, ok := varintInt64(v); ok {
		if x == 0 {
			return append(dst, keyZero)
		}
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], absU64(x))
		i := 0
		for buf[i] == 0 {
			i++
		}
		mag = buf[i:]
	} else {
		x := varintToBig(v)
		if x.Sign() == 0 {
			return append(dst, keyZero)
		}
		mag = x.Abs(x).Bytes()
	}
	if !neg {
		dst = appendOrderedUvarint(append(dst, keyPos), uint64(len(mag)))
		return append(dst, mag...)
	}
	start := len(dst) + 1
	dst = appendOrderedUvarint(append(dst, keyNeg), uint64(len(mag)))
	dst = append(dst, mag...)
	invert(dst[start:])
	return dst
}

func appendDecimalKey(dst, v []byte) []byte {
	sign, exp, digits := decParts(v)
	switch sign {
	case 0:
		return append(dst, keyZero)
	case 1:
		dst = append(dst, keyPos)
	default:
		dst = append(dst, keyNeg)
	}
	start := len(dst)
	dst = appendOrderedInt(dst, exp)
	for i := 0; i < len(digits); i += 2 {
		p := int(digits[i]-'0') * 10
		if i+1 < len(digits) {
			p += int(digits[i+1] - '0')
		}
		if i+2 < len(digits) {
			dst = append(dst, byte(2*p+1))
		} else {
			dst = append(dst, byte(2*p))
		}
	}
	if sign < 0 {
		invert(dst[start:])
	}
	return dst
}

// keyReader reads a key component, undoing the desc inversion byte by byte.
type keyReader struct {
	src  []byte
	pos  int
	mask byte
	err  error
}

var errBadKey = valueErrorf("Malformed key encoding")

func (r *keyReader) byte() byte {
	if r.pos >= len(r.src) {
		r.err = errBadKey
		return 0
	}
	c := r.src[r.pos] ^ r.mask
	r.pos++
	return c
}

func (r *keyReader) peek() (byte, bool) {
	if r.pos >= len(r.src) {
		return 0, false
	}
	return r.src[r.pos] ^ r.mask, true
}

// appendN appends the next n bytes, unmasked, to dst.
func (r *keyReader) appendN(dst []byte, n int) []byte {
	if n < 0 || len(r.src)-r.pos < n {
		r.err = errBadKey
		return dst
	}
	start := len(dst)
	dst = append(dst, r.src[r.pos:r.pos+n]...)
	r.pos += n
	if r.mask != 0 {
		invert(dst[start:])
	}
	return dst
}

// orderedUvarint reads appendOrderedUvarint's encoding; inv undoes an extra
// inversion (negative varints and exponents).
func (r *keyReader) orderedUvarint(inv byte) uint64 {
	c := r.byte() ^ inv
	if c < 0xF0 {
		return uint64(c)
	}
	n := int(c-0xF0) + 1
	if n > 8 {
		r.err = errBadKey
		return 0
	}
	var u uint64
	for range n {
		u = u<<8 | uint64(r.byte()^inv)
	}
	return u
}

func (r *keyReader) orderedInt() int64 {
	switch r.byte() {
	case 0x01:
		u := r.orderedUvarint(0)
		if u > 1<<63-1 {
			r.err = errBadKey
		}
		return int64(u)
	case 0x00:
		u := r.orderedUvarint(0xFF)
		if u > 1<<63-1 {
			r.err = errBadKey
		}
		return ^int64(u)
	}
	r.err = errBadKey
	return 0
}

// DecodeKey decodes the first component of src, an AppendKey encoding of
// type t in direction desc, and returns the serialized value (freshly
// allocated; nil for null, empty non-nil for the empty value) and the bytes
// after the component. The value Compares equal to the one encoded and is
// byte-identical except where AppendKey canonicalises. Malformed src
// returns an error matching ErrInvalidValue; it never panics.
func DecodeKey(t Type, src []byte, desc bool) (v []byte, rest []byte, err error) {
	r := keyReader{src: src}
	if desc {
		r.mask = 0xFF
	}
	v = r.decode(t)
	if r.err != nil {
		return nil, src, r.err
	}
	return v, src[r.pos:], nil
}

func (r *keyReader) decode(t Type) []byte {
	tag := r.byte()
	if r.err != nil {
		return nil
	}
	switch tag {
	case keyNull:
		return nil
	case keyEmpty:
		return []byte{}
	}
	switch t.Kind {
	case Varint:
		return r.decodeVarint(tag)
	case Decimal:
		return r.decodeDecimal(tag)
	}
	if tag != keyValue {
		r.err = errBadKey
		return nil
	}
	switch t.Kind {
	case Int, Bigint, Counter, Timestamp, Time, Smallint, Tinyint, Date:
		v := r.appendN(make([]byte, 0, 8), fixedSize(t.Kind))
		if r.err == nil && t.Kind != Date {
			v[0] ^= 0x80
		}
		return v
	case Boolean:
		b := r.byte()
		if b > 1 {
			r.err = errBadKey
		}
		return []byte{b}
	case Float:
		k := r.appendN(make([]byte, 0, 4), 4)
		if r.err != nil {
			return nil
		}
		return binary.BigEndian.AppendUint32(nil, fromOrderKey(binary.BigEndian.Uint32(k)))
	case Double:
		k := r.appendN(make([]byte, 0, 8), 8)
		if r.err != nil {
			return nil
		}
		return binary.BigEndian.AppendUint64(nil, fromOrderKey(binary.BigEndian.Uint64(k)))
	case UUID:
		v := r.appendN(make([]byte, 0, 16), 16)
		if r.err != nil {
			return nil
		}
		binary.BigEndian.PutUint64(v, uuidFromKeyHigh(binary.BigEndian.Uint64(v)))
		return v
	case Timeuuid:
		v := r.appendN(make([]byte, 0, 16), 16)
		if r.err != nil {
			return nil
		}
		binary.BigEndian.PutUint64(v, reorderTimestampBack(binary.BigEndian.Uint64(v)^1<<63))
		binary.BigEndian.PutUint64(v[8:], binary.BigEndian.Uint64(v[8:])^0x8080808080808080)
		if v[6]&0xF0 != 0x10 {
			r.err = errBadKey // AppendKey only encodes version-1 UUIDs
			return nil
		}
		return v
	case List, Set, Map:
		var elems [][]byte
		for i := 0; r.err == nil; i++ {
			if c, ok := r.peek(); ok && c == keyEnd {
				r.pos++
				break
			}
			e := r.decode(itemType(t, i))
			if e == nil && r.err == nil {
				r.err = errBadKey // null element
			}
			elems = append(elems, e)
		}
		if r.err != nil {
			return nil
		}
		if t.Kind == Map {
			if len(elems)%2 != 0 {
				r.err = errBadKey
				return nil
			}
			out := make([]byte, 4, 4+8*len(elems))
			binary.BigEndian.PutUint32(out, uint32(len(elems)/2))
			for _, e := range elems {
				out = appendBytes(out, e)
			}
			return out
		}
		return EncodeCollection(elems)
	case Tuple, UDT:
		types := componentTypes(t)
		elems := make([][]byte, len(types))
		for i, et := range types {
			elems[i] = r.decode(et)
			if r.err != nil {
				return nil
			}
		}
		return EncodeTuple(elems)
	default:
		return r.unescape()
	}
}

func (r *keyReader) unescape() []byte {
	out := []byte{}
	for r.err == nil {
		c := r.byte()
		if c != 0 {
			out = append(out, c)
			continue
		}
		switch r.byte() {
		case 0xFF:
			out = append(out, 0)
		case 0x01:
			return out
		default:
			r.err = errBadKey
		}
	}
	return nil
}

func (r *keyReader) decodeVarint(tag byte) []byte {
	var inv byte
	switch tag {
	case keyZero:
		return []byte{0}
	case keyPos:
	case keyNeg:
		inv = 0xFF
	default:
		r.err = errBadKey
		return nil
	}
	n := r.orderedUvarint(inv)
	if r.err != nil || n == 0 || n > uint64(len(r.src)-r.pos) {
		r.err = errBadKey
		return nil
	}
	mag := r.appendN(make([]byte, 0, n), int(n))
	if r.err != nil {
		return nil
	}
	if inv != 0 {
		invert(mag)
	}
	x := new(big.Int).SetBytes(mag)
	if tag == keyNeg {
		x.Neg(x)
	}
	return bigToVarint(x)
}

func (r *keyReader) decodeDecimal(tag byte) []byte {
	var sign int
	var inv byte
	switch tag {
	case keyZero:
		v, _ := canonicalDecimal(0, 0, "")
		return v
	case keyPos:
		sign = 1
	case keyNeg:
		sign, inv = -1, 0xFF
	default:
		r.err = errBadKey
		return nil
	}
	sub := keyReader{src: r.src, pos: r.pos, mask: r.mask ^ inv}
	exp := sub.orderedInt()
	var digits []byte
	for sub.err == nil {
		b := sub.byte()
		p := int(b / 2)
		if sub.err != nil || p > 99 {
			sub.err = errBadKey
			break
		}
		digits = append(digits, byte('0'+p/10), byte('0'+p%10))
		if b%2 == 0 { // last pair
			if p == 0 {
				sub.err = errBadKey
			}
			break
		}
	}
	r.pos = sub.pos
	if sub.err != nil {
		r.err = sub.err
		return nil
	}
	if digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if digits[0] == '0' {
		r.err = errBadKey // a significand never starts with zero
		return nil
	}
	v, err := canonicalDecimal(sign, exp, string(digits))
	if err != nil {
		r.err = err
		return nil
	}
	return v
}
