package frame

import (
	"bytes"
	"testing"

	"github.com/cosmosd/cosmosd/cqltype"
)

// BenchmarkDecodeQuery decodes a QUERY with 5 bound values, as the server's
// read loop does: read the frame, then decode the request.
func BenchmarkDecodeQuery(b *testing.B) {
	q := &Query{Query: "INSERT INTO ks.t (a, b, c, d, e) VALUES (?, ?, ?, ?, ?)", Params: QueryParams{
		Consistency: LocalQuorum,
		Values: []Value{BytesValue(int32Bytes(1)), BytesValue([]byte("some text value")), NullValue,
			BytesValue(make([]byte, 16)), BytesValue(make([]byte, 8))},
		PageSize: 5000, HasTimestamp: true, Timestamp: 1700000000000000,
	}}
	in, err := AppendRequest(nil, Header{Stream: 1}, nil, q)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("body", func(b *testing.B) {
		body := in[HeaderSize:]
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := DecodeQuery(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("frame", func(b *testing.B) {
		src := bytes.NewReader(in)
		rd := NewReader(src, 0)
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			src.Reset(in)
			f, err := rd.ReadFrame()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := DecodeRequest(f); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncodeRows encodes a Rows result of 100 rows × 5 columns into a
// reused buffer, as a whole frame, plain and compressed.
func BenchmarkEncodeRows(b *testing.B) {
	meta := RowsMetadata{GlobalTableSpec: true, Keyspace: "ks", Table: "t", Columns: []ColumnSpec{
		{Name: "k", Type: intT}, {Name: "name", Type: textT}, {Name: "id", Type: cqltype.Scalar(cqltype.UUID)},
		{Name: "ts", Type: cqltype.Scalar(cqltype.Timestamp)}, {Name: "tags", Type: cqltype.SetOf(textT)}}}
	rows := make([][][]byte, 100)
	for i := range rows {
		rows[i] = [][]byte{int32Bytes(int32(i)), []byte("a name of some length"), make([]byte, 16), make([]byte, 8), nil}
	}
	rs := &RowsResult{Metadata: meta, Rows: rows}
	for _, c := range compressors() {
		b.Run(compName(c), func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				buf, err = AppendResponse(buf[:0], Header{Stream: 1}, nil, c, rs)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}
