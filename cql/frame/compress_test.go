package frame

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/gocql/gocql"
	"github.com/golang/snappy"
	"github.com/pierrec/lz4/v4"
)

// The gocql LZ4 compressor lives in the separate module
// github.com/gocql/gocql/lz4, which is not in our module graph. These two
// functions reproduce its wire logic (lz4.LZ4Compressor
// AppendCompressedWithLength / AppendDecompressedWithLength, identical in
// format to the older Encode/Decode): a 4-byte big-endian uncompressed length,
// then a block from pierrec/lz4/v4's Compressor.
func gocqlLZ4Encode(src []byte) []byte {
	var c lz4.Compressor
	return lengthPrefixedLZ4(src, c.CompressBlock)
}

// lengthPrefixedLZ4 is the framing both drivers use: a 4-byte big-endian
// uncompressed length, then the block compress writes.
func lengthPrefixedLZ4(src []byte, compress func(src, dst []byte) (int, error)) []byte {
	buf := make([]byte, 4+lz4.CompressBlockBound(len(src)))
	n, err := compress(src, buf[4:])
	if err != nil {
		panic(err)
	}
	binary.BigEndian.PutUint32(buf, uint32(len(src)))
	return buf[:4+n]
}

func gocqlLZ4Decode(src []byte) ([]byte, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("cassandra lz4 block size should be >4, got=%d", len(src))
	}
	n := binary.BigEndian.Uint32(src)
	if n == 0 {
		return nil, nil
	}
	buf := make([]byte, n)
	got, err := lz4.UncompressBlock(src[4:], buf)
	return buf[:got], err
}

// pythonLZ4Encode reproduces the Python driver's lz4_compress:
// struct.pack('>I', len(data)) + lz4.block.compress(data, store_size=False).
// python-lz4 wraps the reference C library's LZ4_compress_default, whose
// output pierrec's CompressorCCompat reproduces exactly.
func pythonLZ4Encode(src []byte) []byte {
	var c lz4.CompressorCCompat
	return lengthPrefixedLZ4(src, c.CompressBlock)
}

// pythonLZ4Decode reproduces lz4_decompress: it flips the prefix to
// little-endian, the layout lz4.block.decompress expects with store_size.
func pythonLZ4Decode(src []byte) ([]byte, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("short")
	}
	le := append([]byte{src[3], src[2], src[1], src[0]}, src[4:]...)
	buf := make([]byte, binary.LittleEndian.Uint32(le))
	n, err := lz4.UncompressBlock(le[4:], buf)
	if err != nil || n != len(buf) {
		return nil, fmt.Errorf("decompress: %d of %d bytes: %v", n, len(buf), err)
	}
	return buf, nil
}

func payloads() map[string][]byte {
	text := bytes.Repeat([]byte("SELECT * FROM system.local WHERE key='local'; "), 3000)
	return map[string][]byte{
		"empty":      {},
		"one":        {42},
		"63":         text[:63],
		"64":         text[:64],
		"text-1k":    text[:1000],
		"text-100k":  text[:100000],
		"random-70k": pseudoRandom(70000),
		"zeros-1m":   make([]byte, 1<<20),
	}
}

func TestCompressionInterop(t *testing.T) {
	type codec struct {
		name   string
		ours   Compressor
		encode func([]byte) []byte
		decode func([]byte) ([]byte, error)
	}
	codecs := []codec{
		{"gocql-lz4", LZ4{}, gocqlLZ4Encode, gocqlLZ4Decode},
		{"python-lz4", LZ4{}, pythonLZ4Encode, pythonLZ4Decode},
		{"gocql-snappy", Snappy{},
			func(b []byte) []byte { out, _ := gocql.SnappyCompressor{}.Encode(b); return out },
			gocql.SnappyCompressor{}.Decode},
		{"snappy-lib", Snappy{},
			func(b []byte) []byte { return snappy.Encode(nil, b) },
			func(b []byte) ([]byte, error) { return snappy.Decode(nil, b) }},
	}
	for _, c := range codecs {
		for name, p := range payloads() {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				// Theirs → ours.
				got, err := c.ours.Decode([]byte("prefix"), c.encode(p))
				if err != nil {
					t.Fatalf("decode theirs: %v", err)
				}
				if !bytes.Equal(got[:6], []byte("prefix")) || !bytes.Equal(got[6:], p) {
					t.Fatalf("decode theirs: wrong output (%d bytes)", len(got))
				}
				// Ours → theirs.
				enc, err := c.ours.Encode([]byte("prefix"), p)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				if !bytes.Equal(enc[:6], []byte("prefix")) {
					t.Fatal("encode clobbered dst")
				}
				back, err := c.decode(enc[6:])
				if err != nil {
					t.Fatalf("decode ours: %v", err)
				}
				if !bytes.Equal(back, p) {
					t.Fatalf("decode ours: wrong output (%d bytes)", len(back))
				}
			})
		}
	}
}

// TestFrameCompressionInterop sends a compressed response frame and decodes
// its body with the drivers' codecs, as a client would.
func TestFrameCompressionInterop(t *testing.T) {
	resp := &RowsResult{Metadata: RowsMetadata{GlobalTableSpec: true, Keyspace: "ks", Table: "t",
		Columns: []ColumnSpec{{Name: "v", Type: textT}}}}
	for i := range 50 {
		resp.Rows = append(resp.Rows, [][]byte{[]byte(fmt.Sprintf("row number %d of a compressible result", i))})
	}
	plain := resp.AppendMessage(nil)
	for _, tc := range []struct {
		c      Compressor
		decode func([]byte) ([]byte, error)
	}{
		{LZ4{}, gocqlLZ4Decode},
		{LZ4{}, pythonLZ4Decode},
		{Snappy{}, gocql.SnappyCompressor{}.Decode},
	} {
		buf, err := AppendResponse(nil, Header{Stream: 1}, nil, tc.c, resp)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := ParseHeader(buf)
		if !h.Compressed() || int(h.Length) != len(buf)-HeaderSize {
			t.Fatalf("%s: header %v", tc.c.Name(), h)
		}
		body, err := tc.decode(buf[HeaderSize:])
		if err != nil || !bytes.Equal(body, plain) {
			t.Fatalf("%s: driver-side decode: %v", tc.c.Name(), err)
		}
	}
}

func TestCompressorFor(t *testing.T) {
	for _, name := range SupportedCompressions() {
		c, ok := CompressorFor(name, 0)
		if !ok || c.Name() != name {
			t.Fatalf("CompressorFor(%q) = %v, %v", name, c, ok)
		}
	}
	if c, ok := CompressorFor("LZ4", 10); !ok || c.(LZ4).MaxDecodedBytes != 10 {
		t.Fatalf("CompressorFor is not case-insensitive or drops the limit: %v", c)
	}
	if _, ok := CompressorFor("zstd", 0); ok {
		t.Fatal("zstd is not implemented")
	}
}
