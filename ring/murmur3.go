package ring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// MaxKeyLength is the longest serialized partition key Cassandra accepts, in
// bytes. Cassandra's QueryProcessor.validateKey rejects longer keys because
// they could not be written with writeShortByteArray (2-byte length).
const MaxKeyLength = math.MaxUint16

var (
	// ErrKeyTooLong reports a serialized partition key longer than
	// MaxKeyLength.
	ErrKeyTooLong = errors.New("ring: partition key too long")
	// ErrMalformedKey reports a composite routing key whose bytes do not split
	// into the requested number of components.
	ErrMalformedKey = errors.New("ring: malformed composite partition key")
)

// MurmurHash3_x64_128 constants, as in Cassandra's utils/MurmurHash.java.
const (
	murmurC1 = 0x87c37b91114253d5
	murmurC2 = 0x4cf5ad432745937f
	fmixC1   = 0xff51afd7ed558ccd
	fmixC2   = 0xc4ceb9fe1a85ec53
)

// Murmur3H1 returns h1 of MurmurHash3_x64_128 with seed 0, with Cassandra's
// sign-extension quirk on tail bytes (gocql internal/murmur semantics). Raw,
// not normalized.
//
// Cassandra's MurmurHash.hash3_x64_128 reads the tail with ByteBuffer.get,
// which returns a signed Java byte; a tail byte >= 0x80 is therefore
// sign-extended to 64 bits before it is shifted and XORed into k1/k2. The
// reference MurmurHash3 zero-extends, so this function deliberately differs
// from it: tokens must equal the ones Cassandra and the drivers compute.
// Body blocks are read as whole little-endian longs and are not affected.
//
// The arithmetic is done on uint64: two's-complement wrap-around makes it
// bit-identical to Java's long arithmetic, and unsigned shifts are Java's >>>.
func Murmur3H1(data []byte) int64 {
	var h1, h2 uint64

	p := data
	for len(p) >= 16 {
		k1 := binary.LittleEndian.Uint64(p[0:8])
		k2 := binary.LittleEndian.Uint64(p[8:16])
		p = p[16:]

		k1 *= murmurC1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= murmurC2
		h1 ^= k1

		h1 = bits.RotateLeft64(h1, 27)
		h1 += h2
		h1 = h1*5 + 0x52dce729

		k2 *= murmurC2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= murmurC1
		h2 ^= k2

		h2 = bits.RotateLeft64(h2, 31)
		h2 += h1
		h2 = h2*5 + 0x38495ab5
	}

	// Tail: p has 0..15 bytes left. sx is the signed-byte read of Java.
	var k1, k2 uint64
	switch len(p) {
	case 15:
		k2 ^= sx(p[14]) << 48
		fallthrough
	case 14:
		k2 ^= sx(p[13]) << 40
		fallthrough
	case 13:
		k2 ^= sx(p[12]) << 32
		fallthrough
	case 12:
		k2 ^= sx(p[11]) << 24
		fallthrough
	case 11:
		k2 ^= sx(p[10]) << 16
		fallthrough
	case 10:
		k2 ^= sx(p[9]) << 8
		fallthrough
	case 9:
		k2 ^= sx(p[8])
		k2 *= murmurC2
		k2 = bits.RotateLeft64(k2, 33)
		k2 *= murmurC1
		h2 ^= k2
		fallthrough
	case 8:
		k1 ^= sx(p[7]) << 56
		fallthrough
	case 7:
		k1 ^= sx(p[6]) << 48
		fallthrough
	case 6:
		k1 ^= sx(p[5]) << 40
		fallthrough
	case 5:
		k1 ^= sx(p[4]) << 32
		fallthrough
	case 4:
		k1 ^= sx(p[3]) << 24
		fallthrough
	case 3:
		k1 ^= sx(p[2]) << 16
		fallthrough
	case 2:
		k1 ^= sx(p[1]) << 8
		fallthrough
	case 1:
		k1 ^= sx(p[0])
		k1 *= murmurC1
		k1 = bits.RotateLeft64(k1, 31)
		k1 *= murmurC2
		h1 ^= k1
	}

	n := uint64(len(data))
	h1 ^= n
	h2 ^= n

	h1 += h2
	h2 += h1

	h1 = fmix64(h1)
	h2 = fmix64(h2)

	h1 += h2
	// Cassandra also computes h2 += h1 here; only h1 is the token.
	return int64(h1)
}

// sx sign-extends a byte the way Java's (long) cast of a byte does.
func sx(b byte) uint64 { return uint64(int64(int8(b))) }

func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= fmixC1
	k ^= k >> 33
	k *= fmixC2
	k ^= k >> 33
	return k
}

// Token returns Cassandra's Murmur3Partitioner token of a serialized
// partition key: empty key -> math.MinInt64; otherwise h1 with MinInt64
// normalized to MaxInt64.
//
// MinInt64 is Murmur3Partitioner.MINIMUM: it sorts before every other token
// and is reserved for the empty key, so Cassandra's normalize() moves a
// non-empty key whose h1 is MinInt64 to MaxInt64. The DataStax drivers do not
// special-case the empty key (they hash it to 0); Cassandra rejects empty keys
// on writes anyway ("Key may not be empty"), so callers decide what an empty
// key means for them.
func Token(routingKey []byte) int64 {
	if len(routingKey) == 0 {
		return math.MinInt64
	}
	h := Murmur3H1(routingKey)
	if h == math.MinInt64 {
		return math.MaxInt64
	}
	return h
}

// RoutingKey serializes partition key components (each already
// CQL-serialized) as Cassandra does: a single component is its raw bytes;
// several components are, each, 2-byte big-endian length + bytes + 0x00.
// Returns an error if a component exceeds 65535 bytes (Cassandra's limit:
// "Key length of %d is longer than maximum of 65535").
//
// The limit is applied, as Cassandra's validateKey does, to the whole
// serialized key, which implies it for every component. With one component
// the result aliases components[0] and does not allocate. A nil component is
// treated as empty; rejecting null key parts is the caller's job. Zero
// components is an error.
func RoutingKey(components [][]byte) ([]byte, error) {
	switch len(components) {
	case 0:
		return nil, fmt.Errorf("%w: no partition key components", ErrMalformedKey)
	case 1:
		if n := len(components[0]); n > MaxKeyLength {
			return nil, keyTooLong(n)
		}
		return components[0], nil
	}
	size := 0
	for _, c := range components {
		size += 2 + len(c) + 1
	}
	if size > MaxKeyLength {
		return nil, keyTooLong(size)
	}
	key := make([]byte, 0, size)
	for _, c := range components {
		key = binary.BigEndian.AppendUint16(key, uint16(len(c)))
		key = append(key, c...)
		key = append(key, 0x00) // end-of-component byte of CompositeType
	}
	return key, nil
}

func keyTooLong(n int) error {
	return fmt.Errorf("%w: Key length of %d is longer than maximum of %d", ErrKeyTooLong, n, MaxKeyLength)
}

// SplitRoutingKey is the inverse for n components (n==1 returns the key
// itself). Errors on malformed input (this decodes stored/outside bytes: must
// never panic).
//
// It accepts exactly the keys RoutingKey produces: a key longer than
// MaxKeyLength, an end-of-component byte other than 0x00, a truncated
// component or trailing bytes are errors, so RoutingKey(SplitRoutingKey(k, n))
// reproduces k byte for byte. The returned components alias key; their
// capacity is clipped so appending to one cannot overwrite the next.
func SplitRoutingKey(key []byte, n int) ([][]byte, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d components requested", ErrMalformedKey, n)
	}
	if len(key) > MaxKeyLength {
		return nil, keyTooLong(len(key))
	}
	if n == 1 {
		return [][]byte{key}, nil
	}
	// Each component takes at least 3 bytes; checking first bounds the
	// allocation below by the input size whatever n the caller passes.
	if n > len(key)/3 {
		return nil, fmt.Errorf("%w: %d bytes cannot hold %d components", ErrMalformedKey, len(key), n)
	}
	parts := make([][]byte, n)
	p := key
	for i := range parts {
		if len(p) < 2 {
			return nil, fmt.Errorf("%w: component %d: truncated length", ErrMalformedKey, i)
		}
		l := int(binary.BigEndian.Uint16(p))
		p = p[2:]
		if len(p) < l+1 {
			return nil, fmt.Errorf("%w: component %d: length %d exceeds the %d bytes left", ErrMalformedKey, i, l, len(p))
		}
		if eoc := p[l]; eoc != 0x00 {
			return nil, fmt.Errorf("%w: component %d: end-of-component byte 0x%02x, want 0x00", ErrMalformedKey, i, eoc)
		}
		parts[i] = p[:l:l]
		p = p[l+1:]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after %d components", ErrMalformedKey, len(p), n)
	}
	return parts, nil
}
