package cqltype

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/big"
	"math/rand"
	"testing"
)

func lit(t *testing.T, typ Type, kind LitKind, text string) []byte {
	t.Helper()
	v, err := ParseLiteral(typ, kind, text)
	if err != nil {
		t.Fatalf("ParseLiteral(%s, %s, %q): %v", typ, kind, text, err)
	}
	return v
}

func TestCompareTable(t *testing.T) {
	i32 := func(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
	f32 := func(f float32) []byte { return binary.BigEndian.AppendUint32(nil, math.Float32bits(f)) }
	f64 := func(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }
	dec := func(s string) []byte { return lit(t, Scalar(Decimal), LitFloat, s) }
	uuid := func(s string) []byte { return lit(t, Scalar(UUID), LitUUID, s) }
	list := func(elems ...[]byte) []byte { return EncodeCollection(elems) }
	tuple := func(elems ...[]byte) []byte { return EncodeTuple(elems) }
	intT, listT := Scalar(Int), ListOf(Scalar(Int)).Freeze()
	tupT := TupleOf(Scalar(Int), Scalar(Varchar))
	for _, tc := range []struct {
		name string
		typ  Type
		a, b []byte
		want int
	}{
		{"int neg<pos", intT, i32(-5), i32(3), -1},
		{"int min<max", intT, i32(math.MinInt32), i32(math.MaxInt32), -1},
		{"int equal", intT, i32(7), i32(7), 0},
		{"empty<value", intT, []byte{}, i32(math.MinInt32), -1},
		{"null<empty", intT, nil, []byte{}, -1},
		{"null=null", intT, nil, nil, 0},
		{"bigint signed", Scalar(Bigint), lit(t, Scalar(Bigint), LitInteger, "-1"), lit(t, Scalar(Bigint), LitInteger, "1"), -1},
		{"timestamp signed", Scalar(Timestamp), lit(t, Scalar(Timestamp), LitInteger, "-1"), lit(t, Scalar(Timestamp), LitInteger, "0"), -1},
		{"date unsigned", Scalar(Date), lit(t, Scalar(Date), LitString, "1969-12-31"), lit(t, Scalar(Date), LitString, "1970-01-01"), -1},
		{"tinyint signed", Scalar(Tinyint), []byte{0xFF}, []byte{0x01}, -1},
		{"boolean", Scalar(Boolean), []byte{0}, []byte{1}, -1},
		{"boolean nonzero equal", Scalar(Boolean), []byte{1}, []byte{7}, 0},
		{"float -0<+0", Scalar(Float), f32(float32(math.Copysign(0, -1))), f32(0), -1},
		{"float inf<nan", Scalar(Float), f32(float32(math.Inf(1))), f32(float32(math.NaN())), -1},
		{"float -inf<-1", Scalar(Float), f32(float32(math.Inf(-1))), f32(-1), -1},
		{"double nans equal", Scalar(Double), f64(math.NaN()), binary.BigEndian.AppendUint64(nil, 0xFFF8000000000001), 0},
		{"double order", Scalar(Double), f64(-2.5), f64(-2.25), -1},
		{"varint non-minimal", Scalar(Varint), []byte{0, 0, 1}, []byte{1}, 0},
		{"varint neg", Scalar(Varint), []byte{0xFF, 0x7F}, []byte{0x80}, -1},
		{"decimal 1.0=1.00", Scalar(Decimal), dec("1.0"), dec("1.00"), 0},
		{"decimal 1E+2=100", Scalar(Decimal), dec("1E+2"), dec("100"), 0},
		{"decimal 0.5<0.505", Scalar(Decimal), dec("0.5"), dec("0.505"), -1},
		{"decimal neg", Scalar(Decimal), dec("-10"), dec("-9.99"), -1},
		{"decimal zero", Scalar(Decimal), dec("0.000"), dec("-0E+5"), 0},
		{"text bytes", Scalar(Varchar), []byte("a"), []byte("ab"), -1},
		{"text unsigned", Scalar(Varchar), []byte("z"), []byte("é"), -1},
		{"blob", Scalar(Blob), []byte{0x7F}, []byte{0x80}, -1},
		{"inet v4<v6", Scalar(Inet), lit(t, Scalar(Inet), LitString, "1.2.3.4"), lit(t, Scalar(Inet), LitString, "::1"), 1},
		{"uuid version first", Scalar(UUID), uuid("ffffffff-ffff-1fff-bfff-ffffffffffff"), uuid("00000000-0000-4000-8000-000000000000"), -1},
		{"uuid v1 by time", Scalar(UUID), uuid("00000001-0000-1000-8000-000000000000"), uuid("00000000-0001-1000-8000-000000000000"), -1},
		{"uuid lsb unsigned", Scalar(UUID), uuid("00000000-0000-1000-0000-000000000000"), uuid("00000000-0000-1000-8000-000000000000"), -1},
		{"timeuuid lsb signed", Scalar(Timeuuid), uuid("00000000-0000-1000-8000-000000000000"), uuid("00000000-0000-1000-0000-000000000000"), -1},
		{"list prefix", listT, list(i32(1)), list(i32(1), i32(0)), -1},
		{"list element", listT, list(i32(2)), list(i32(1), i32(5)), 1},
		{"list empty value<no elements", listT, []byte{}, list(), -1},
		{"map key then value", MapOf(Scalar(Int), Scalar(Int)).Freeze(), EncodeMap([][]byte{i32(1)}, [][]byte{i32(9)}), EncodeMap([][]byte{i32(1), i32(2)}, [][]byte{i32(8), i32(0)}), 1},
		{"tuple null<empty", tupT, tuple(nil), tuple([]byte{}), -1},
		{"tuple missing=null", tupT, tuple(i32(1)), tuple(i32(1), nil), 0},
		{"tuple missing<empty", tupT, tuple(i32(1)), tuple(i32(1), []byte{}), -1},
		{"malformed falls back", intT, []byte{1, 2}, []byte{1, 2, 3}, -1},
		{"malformed list falls back", listT, []byte{0, 0, 0, 9}, []byte{0, 0, 0, 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compare(tc.typ, tc.a, tc.b); got != tc.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", Format(tc.typ, tc.a), Format(tc.typ, tc.b), got, tc.want)
			}
			if got := Compare(tc.typ, tc.b, tc.a); got != -tc.want {
				t.Errorf("reversed Compare = %d, want %d", got, -tc.want)
			}
		})
	}
}

// Oracles written independently of the implementation, from Cassandra's
// and Java's code.

func javaFloatCompare(a, b float32) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	bitsOf := func(f float32) int32 { // Float.floatToIntBits
		if f != f {
			return 0x7fc00000
		}
		return int32(math.Float32bits(f))
	}
	return cmp.Compare(int(bitsOf(a)), int(bitsOf(b)))
}

func javaReorder(in int64) int64 {
	return in<<48 | (in<<16)&0xFFFF00000000 | int64(uint64(in)>>32)
}

// javaUUIDCompare transcribes UUIDType.compareCustom.
func javaUUIDCompare(a, b []byte) int {
	msb1, msb2 := int64(binary.BigEndian.Uint64(a)), int64(binary.BigEndian.Uint64(b))
	v1, v2 := int((uint64(msb1)>>12)&0xf), int((uint64(msb2)>>12)&0xf)
	if v1 != v2 {
		return sign(v1 - v2)
	}
	if v1 == 1 {
		if c := cmp.Compare(javaReorder(msb1), javaReorder(msb2)); c != 0 {
			return c
		}
	} else if c := cmp.Compare(uint64(msb1), uint64(msb2)); c != 0 {
		return c
	}
	return cmp.Compare(binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:]))
}

// javaTimeUUIDCompare transcribes TimeUUIDType.compareCustom.
func javaTimeUUIDCompare(a, b []byte) int {
	msb1, msb2 := javaReorder(int64(binary.BigEndian.Uint64(a))), javaReorder(int64(binary.BigEndian.Uint64(b)))
	if c := cmp.Compare(msb1, msb2); c != 0 {
		return c
	}
	lsb1 := int64(binary.BigEndian.Uint64(a[8:])) ^ 0x0080808080808080
	lsb2 := int64(binary.BigEndian.Uint64(b[8:])) ^ 0x0080808080808080
	return cmp.Compare(lsb1, lsb2)
}

func decimalRat(v []byte) *big.Rat {
	d := decodeDecimal(v)
	r := new(big.Rat).SetInt(d.Unscaled)
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(int(d.Scale)))), nil))
	if d.Scale >= 0 {
		return r.Quo(r, p)
	}
	return r.Mul(r, p)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func TestCompareOracles(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for range 20000 {
		// Floats.
		fa, fb := randValue(r, Scalar(Float)), randValue(r, Scalar(Float))
		if len(fa) == 4 && len(fb) == 4 {
			want := javaFloatCompare(math.Float32frombits(binary.BigEndian.Uint32(fa)), math.Float32frombits(binary.BigEndian.Uint32(fb)))
			if got := Compare(Scalar(Float), fa, fb); got != want {
				t.Fatalf("float %x vs %x: %d, want %d", fa, fb, got, want)
			}
		}
		// UUIDs.
		ua, ub := randValue(r, Scalar(UUID)), randValue(r, Scalar(UUID))
		if len(ua) == 16 && len(ub) == 16 {
			if got, want := Compare(Scalar(UUID), ua, ub), javaUUIDCompare(ua, ub); got != want {
				t.Fatalf("uuid %x vs %x: %d, want %d", ua, ub, got, want)
			}
		}
		ta, tb := randValue(r, Scalar(Timeuuid)), randValue(r, Scalar(Timeuuid))
		if len(ta) == 16 && len(tb) == 16 {
			if got, want := Compare(Scalar(Timeuuid), ta, tb), javaTimeUUIDCompare(ta, tb); got != want {
				t.Fatalf("timeuuid %x vs %x: %d, want %d", ta, tb, got, want)
			}
		}
		// Varints.
		va, vb := randVarint(r), randVarint(r)
		if got, want := Compare(Scalar(Varint), va, vb), varintToBig(va).Cmp(varintToBig(vb)); got != want {
			t.Fatalf("varint %x vs %x: %d, want %d", va, vb, got, want)
		}
		// Decimals with scales small enough for big.Rat.
		da := encodeDecimal(varintToBig(randVarint(r)), int32(r.Intn(41)-20))
		db := encodeDecimal(varintToBig(randVarint(r)), int32(r.Intn(41)-20))
		if r.Intn(4) == 0 { // same value, different scale
			d := decodeDecimal(da)
			db = encodeDecimal(new(big.Int).Mul(d.Unscaled, big.NewInt(1000)), d.Scale+3)
		}
		if got, want := Compare(Scalar(Decimal), da, db), decimalRat(da).Cmp(decimalRat(db)); got != want {
			t.Fatalf("decimal %s vs %s: %d, want %d", Format(Scalar(Decimal), da), Format(Scalar(Decimal), db), got, want)
		}
	}
}
