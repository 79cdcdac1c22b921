package cqltype

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// DecimalValue is a CQL decimal: Unscaled × 10^-Scale, as Java's BigDecimal.
// Serialized as [int] scale followed by the unscaled value as a varint.
// Unscaled nil means zero.
type DecimalValue struct {
	Unscaled *big.Int
	Scale    int32
}

// String formats d as Java's BigDecimal.toString does: plain notation when
// the scale is non-negative and the adjusted exponent is at least -6,
// scientific ("1.5E+3", "1E-7") otherwise. It is a valid CQL literal.
func (d DecimalValue) String() string {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	return formatDecimal(u.Sign() < 0, new(big.Int).Abs(u).String(), int64(d.Scale))
}

func formatDecimal(neg bool, coeff string, scale int64) string {
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	adjusted := -scale + int64(len(coeff)-1)
	switch {
	case scale >= 0 && adjusted >= -6:
		switch {
		case scale == 0:
			b.WriteString(coeff)
		case int64(len(coeff)) > scale:
			b.WriteString(coeff[:int64(len(coeff))-scale])
			b.WriteByte('.')
			b.WriteString(coeff[int64(len(coeff))-scale:])
		default:
			b.WriteString("0.")
			b.WriteString(strings.Repeat("0", int(scale-int64(len(coeff)))))
			b.WriteString(coeff)
		}
	default:
		b.WriteString(coeff[:1])
		if len(coeff) > 1 {
			b.WriteByte('.')
			b.WriteString(coeff[1:])
		}
		b.WriteByte('E')
		if adjusted > 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.FormatInt(adjusted, 10))
	}
	return b.String()
}

func encodeDecimal(unscaled *big.Int, scale int32) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 12), uint32(scale))
	return append(out, bigToVarint(unscaled)...)
}

// decodeDecimal splits a serialized decimal of at least 4 bytes. An empty
// unscaled part reads as zero (Java would throw on it).
func decodeDecimal(v []byte) DecimalValue {
	return DecimalValue{Unscaled: varintToBig(v[4:]), Scale: int32(binary.BigEndian.Uint32(v))}
}

// varintToBig decodes a two's complement big-endian varint (empty is 0).
func varintToBig(b []byte) *big.Int {
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return x
}

// bigToVarint encodes x as the minimal two's complement big-endian varint
// (Java's BigInteger.toByteArray). Zero is a single 0x00 byte.
func bigToVarint(x *big.Int) []byte {
	if x == nil || x.Sign() == 0 {
		return []byte{0}
	}
	if x.IsInt64() {
		return int64ToVarint(x.Int64())
	}
	if x.Sign() > 0 {
		b := x.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -x-1 >= 0; its bitwise complement is x.
	m := new(big.Int).Neg(x)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xFF}, b...)
	}
	return b
}

// int64ToVarint encodes v minimally.
func int64ToVarint(v int64) []byte {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(v))
	i := 0
	// Drop a leading byte while the next byte's top bit still carries the
	// sign.
	for i < 7 && ((buf[i] == 0 && buf[i+1]&0x80 == 0) || (buf[i] == 0xFF && buf[i+1]&0x80 != 0)) {
		i++
	}
	return append([]byte(nil), buf[i:]...)
}

// varintInt64 returns the value of a varint of at most 8 bytes.
func varintInt64(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 8 {
		return 0, len(b) == 0
	}
	var v int64
	if b[0]&0x80 != 0 {
		v = -1
	}
	for _, c := range b {
		v = v<<8 | int64(c)
	}
	return v, true
}

// compareVarint compares two varints numerically; non-minimal encodings
// compare equal to their minimal form.
func compareVarint(a, b []byte) int {
	if x, ok := varintInt64(a); ok {
		if y, ok := varintInt64(b); ok {
			return cmp.Compare(x, y)
		}
	}
	return varintToBig(a).Cmp(varintToBig(b))
}

// decParts returns the canonical form of a serialized decimal (len >= 4):
// value = sign × 0.digits × 10^exp, digits without leading or trailing
// zeros. sign is 0 for zero (digits empty, exp 0). Equal values, such as
// 1.0 and 1.00, have equal parts.
func decParts(v []byte) (sign int, exp int64, digits string) {
	d := decodeDecimal(v)
	sign = d.Unscaled.Sign()
	if sign == 0 {
		return 0, 0, ""
	}
	s := d.Unscaled.Abs(d.Unscaled).String()
	exp = int64(len(s)) - int64(d.Scale)
	return sign, exp, strings.TrimRight(s, "0")
}

func compareDecimal(a, b []byte) int {
	if len(a) >= 4 && len(b) >= 4 && len(a) <= 12 && len(b) <= 12 &&
		binary.BigEndian.Uint32(a) == binary.BigEndian.Uint32(b) {
		// Same scale and small unscaled values: compare the integers.
		if x, ok := varintInt64(a[4:]); ok {
			if y, ok := varintInt64(b[4:]); ok {
				return cmp.Compare(x, y)
			}
		}
	}
	sa, ea, da := decParts(a)
	sb, eb, db := decParts(b)
	if sa != sb {
		return cmp.Compare(sa, sb)
	}
	c := cmp.Compare(ea, eb)
	if c == 0 {
		c = strings.Compare(da, db)
	}
	return c * sa
}

// maxDecimalPad bounds the zeros canonicalDecimal may append to the
// significand (only needed for scales near MinInt32), so a hostile key
// cannot make it allocate without limit.
const maxDecimalPad = 1 << 16

// canonicalDecimal builds the one serialized form this package uses for a
// decimal value given by decParts: trailing zeros are dropped from the
// unscaled value while the scale stays >= 0; a value that would need a
// negative scale is written with scale 0 when that takes at most 32 extra
// digits (so 100 stays 100 rather than 1E+2), else with the negative scale.
func canonicalDecimal(sign int, exp int64, digits string) ([]byte, error) {
	if sign == 0 {
		return []byte{0, 0, 0, 0, 0}, nil
	}
	scale := int64(len(digits)) - exp
	switch {
	case scale > math.MaxInt32:
		return nil, valueErrorf("decimal scale %d out of range", scale)
	case scale >= 0:
	case scale >= -32:
		digits += strings.Repeat("0", int(-scale))
		scale = 0
	case scale >= math.MinInt32:
	default:
		pad := math.MinInt32 - scale
		if pad > maxDecimalPad {
			return nil, valueErrorf("decimal scale %d out of range", scale)
		}
		digits += strings.Repeat("0", int(pad))
		scale = math.MinInt32
	}
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, valueErrorf("invalid decimal digits")
	}
	if sign < 0 {
		u.Neg(u)
	}
	return encodeDecimal(u, int32(scale)), nil
}

// parseDecimalText parses a decimal literal as Java's new BigDecimal(String):
// [+-]digits[.digits][(e|E)[+-]digits], or [+-].digits[...].
func parseDecimalText(s string) (*big.Int, int32, bool) {
	body := s
	neg := false
	if body != "" && (body[0] == '+' || body[0] == '-') {
		neg = body[0] == '-'
		body = body[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ReplaceAll(body, "E", "e"), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return nil, 0, false
	}
	var exp int64
	if hasExp {
		e, err := strconv.ParseInt(expText, 10, 64)
		if err != nil {
			return nil, 0, false
		}
		exp = e
	}
	scale := int64(len(frac)) - exp
	if scale > math.MaxInt32 || scale < math.MinInt32 {
		return nil, 0, false
	}
	u, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return nil, 0, false
	}
	if neg {
		u.Neg(u)
	}
	return u, int32(scale), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
