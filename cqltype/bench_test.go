package cqltype

import (
	"encoding/binary"
	"testing"
)

func benchAppendKey(b *testing.B, typ Type, v []byte) {
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		var err error
		if buf, err = AppendKey(buf[:0], typ, v, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendKeyInt(b *testing.B) {
	benchAppendKey(b, Scalar(Int), binary.BigEndian.AppendUint32(nil, 123456))
}

func BenchmarkAppendKeyText(b *testing.B) {
	benchAppendKey(b, Scalar(Varchar), []byte("user-0000012345/session/2024-06-01"))
}

func BenchmarkAppendKeyUUID(b *testing.B) {
	u, _ := parseUUID("d2177dd0-eaa2-11de-a572-001b779c76e3")
	benchAppendKey(b, Scalar(Timeuuid), u[:])
}

// BenchmarkAppendKeyComposite encodes a (text, timestamp DESC, uuid) key.
func BenchmarkAppendKeyComposite(b *testing.B) {
	types := []Type{Scalar(Varchar), Scalar(Timestamp), Scalar(UUID)}
	desc := []bool{false, true, false}
	u, _ := parseUUID("550e8400-e29b-41d4-a716-446655440000")
	vals := [][]byte{[]byte("sensor-42"), binary.BigEndian.AppendUint64(nil, 1717200000000), u[:]}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for i, t := range types {
			var err error
			if buf, err = AppendKey(buf, t, vals[i], desc[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkDecodeKeyComposite(b *testing.B) {
	types := []Type{Scalar(Varchar), Scalar(Timestamp), Scalar(UUID)}
	desc := []bool{false, true, false}
	u, _ := parseUUID("550e8400-e29b-41d4-a716-446655440000")
	vals := [][]byte{[]byte("sensor-42"), binary.BigEndian.AppendUint64(nil, 1717200000000), u[:]}
	var key []byte
	for i, t := range types {
		key, _ = AppendKey(key, t, vals[i], desc[i])
	}
	b.ReportAllocs()
	for b.Loop() {
		rest := key
		for i, t := range types {
			var err error
			if _, rest, err = DecodeKey(t, rest, desc[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkCompareDecimal(b *testing.B) {
	x, _ := ParseLiteral(Scalar(Decimal), LitFloat, "12345.678")
	y, _ := ParseLiteral(Scalar(Decimal), LitFloat, "12345.6781")
	b.ReportAllocs()
	for b.Loop() {
		Compare(Scalar(Decimal), x, y)
	}
}
