package frame

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/golang/snappy"
	"github.com/pierrec/lz4/v4"
)

// Compressor compresses frame bodies [V4 §5]. Implementations are safe for
// concurrent use.
type Compressor interface {
	// Name is the value of the STARTUP COMPRESSION option ("lz4", "snappy").
	Name() string
	// Encode appends the compressed form of src to dst. src must not overlap
	// dst[len(dst):cap(dst)].
	Encode(dst, src []byte) ([]byte, error)
	// Decode appends the decompressed form of src to dst. Errors wrap
	// ErrMalformed.
	Decode(dst, src []byte) ([]byte, error)
}

// SupportedCompressions lists the compressions this package implements, for
// the COMPRESSION key of SUPPORTED (advertise only what is implemented: the
// Python driver picks any listed codec it has).
func SupportedCompressions() []string { return []string{"lz4", "snappy"} }

// CompressorFor returns the compressor named by a STARTUP COMPRESSION option
// (case-insensitive), limited to maxBodyBytes of decompressed output (<= 0
// means DefaultMaxBodyBytes).
func CompressorFor(name string, maxBodyBytes int) (Compressor, bool) {
	switch strings.ToLower(name) {
	case "lz4":
		return LZ4{MaxDecodedBytes: maxBodyBytes}, true
	case "snappy":
		return Snappy{MaxDecodedBytes: maxBodyBytes}, true
	}
	return nil, false
}

func decodedLimit(max int) int {
	if max <= 0 {
		return DefaultMaxBodyBytes
	}
	return max
}

// LZ4 is Cassandra's lz4 body format: the uncompressed length as a 4-byte
// big-endian integer, then one lz4 block. gocql (lz4.LZ4Compressor) and the
// Python driver (lz4.block with store_size=False plus struct.pack('>I'))
// write and read exactly this.
type LZ4 struct {
	// MaxDecodedBytes limits the uncompressed length Decode accepts; <= 0
	// means DefaultMaxBodyBytes.
	MaxDecodedBytes int
}

// lz4Pool holds block compressors: each has a 128 KiB hash table that is
// worth reusing across frames.
var lz4Pool = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// lz4MaxRatio bounds how far an lz4 block can expand: every input byte adds at
// most 255 bytes of output (a 0xFF length-extension byte), plus a small
// constant for the final sequence.
const lz4MaxRatio = 255

func (LZ4) Name() string { return "lz4" }

func (c LZ4) Encode(dst, src []byte) ([]byte, error) {
	if len(src) > DefaultMaxBodyBytes {
		return nil, fmt.Errorf("lz4: %d bytes is too large to compress", len(src))
	}
	start := len(dst)
	bound := lz4.CompressBlockBound(len(src))
	dst = slices.Grow(dst, 4+bound)[:start+4+bound]
	binary.BigEndian.PutUint32(dst[start:], uint32(len(src)))
	comp := lz4Pool.Get().(*lz4.Compressor)
	n, err := comp.CompressBlock(src, dst[start+4:])
	lz4Pool.Put(comp)
	if err != nil {
		return nil, fmt.Errorf("lz4: compress: %w", err)
	}
	if n == 0 && len(src) > 0 {
		// Cannot happen with a CompressBlockBound-sized destination.
		return nil, fmt.Errorf("lz4: compress: block did not fit its bound")
	}
	return dst[:start+4+n], nil
}

// DecodedLen returns the uncompressed length src claims.
func (c LZ4) DecodedLen(src []byte) (int, error) {
	if len(src) < 4 {
		return 0, fmt.Errorf("%w: lz4: body of %d bytes is shorter than its 4-byte length prefix", ErrMalformed, len(src))
	}
	return int(binary.BigEndian.Uint32(src)), nil
}

func (c LZ4) Decode(dst, src []byte) ([]byte, error) {
	n, err := c.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	block := src[4:]
	if max := decodedLimit(c.MaxDecodedBytes); n > max {
		return nil, fmt.Errorf("%w: lz4: uncompressed length %d exceeds the limit of %d", ErrMalformed, n, max)
	}
	if int64(n) > int64(len(block))*lz4MaxRatio+64 {
		return nil, fmt.Errorf("%w: lz4: uncompressed length %d is impossible for a %d-byte block", ErrMalformed, n, len(block))
	}
	if n == 0 {
		return dst, nil
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	got, err := lz4.UncompressBlock(block, dst[start:])
	if err != nil {
		return nil, fmt.Errorf("%w: lz4: corrupt block: %v", ErrMalformed, err)
	}
	if got != n {
		return nil, fmt.Errorf("%w: lz4: block decompresses to %d bytes, its prefix says %d", ErrMalformed, got, n)
	}
	return dst, nil
}

// Snappy is a raw snappy block (no framing), as gocql's SnappyCompressor and
// python-snappy's compress/decompress produce.
type Snappy struct {
	// MaxDecodedBytes limits the uncompressed length Decode accepts; <= 0
	// means DefaultMaxBodyBytes.
	MaxDecodedBytes int
}

// snappyMaxRatio bounds snappy's expansion: its densest element is a
// 3-byte copy producing 64 bytes.
const snappyMaxRatio = 22

func (Snappy) Name() string { return "snappy" }

func (c Snappy) Encode(dst, src []byte) ([]byte, error) {
	m := snappy.MaxEncodedLen(len(src))
	if m < 0 || len(src) > DefaultMaxBodyBytes {
		return nil, fmt.Errorf("snappy: %d bytes is too large to compress", len(src))
	}
	start := len(dst)
	dst = slices.Grow(dst, m)[:start+m]
	out := snappy.Encode(dst[start:], src)
	return dst[:start+len(out)], nil
}

// DecodedLen returns the uncompressed length src claims.
func (c Snappy) DecodedLen(src []byte) (int, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return 0, fmt.Errorf("%w: snappy: %v", ErrMalformed, err)
	}
	return n, nil
}

func (c Snappy) Decode(dst, src []byte) ([]byte, error) {
	n, err := c.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if max := decodedLimit(c.MaxDecodedBytes); n > max {
		return nil, fmt.Errorf("%w: snappy: uncompressed length %d exceeds the limit of %d", ErrMalformed, n, max)
	}
	if int64(n) > int64(len(src))*snappyMaxRatio+64 {
		return nil, fmt.Errorf("%w: snappy: uncompressed length %d is impossible for a %d-byte block", ErrMalformed, n, len(src))
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	if _, err := snappy.Decode(dst[start:], src); err != nil {
		return nil, fmt.Errorf("%w: snappy: %v", ErrMalformed, err)
	}
	return dst, nil
}
