package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sort"
)

// ErrMalformed is wrapped by every error about bytes that do not follow the
// protocol. The frame they came in was consumed completely, so the connection
// is still in sync: answer ERROR 0x000A (Protocol error) and carry on.
var ErrMalformed = errors.New("frame: malformed")

// ErrTooLong is wrapped by client-side encoding errors: a string, byte string
// or list does not fit its length prefix.
var ErrTooLong = errors.New("frame: value too long for its length prefix")

// maxOptionDepth bounds the nesting of [option] types while decoding, so that
// a hostile body cannot recurse deep enough to exhaust the stack. Real CQL
// types nest a handful of levels.
const maxOptionDepth = 64

// reader is a bounds-checked reader over a body with a sticky error: after the
// first failure every read returns a zero value, and err says what failed.
// Byte slices it returns alias b, capped so that appending to them cannot
// overwrite the rest of the body.
type reader struct {
	b   []byte
	err error
}

func (r *reader) short(what string, need int) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: read %s: need %d bytes, have %d", ErrMalformed, what, need, len(r.b))
	}
}

func (r *reader) failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

// wrap prefixes a pending error with context (a message or field name).
func (r *reader) wrap(context string) {
	if r.err != nil {
		r.err = fmt.Errorf("%s: %w", context, r.err)
	}
}

func (r *reader) take(what string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.short(what, n)
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) readByte(what string) byte {
	v := r.take(what, 1)
	if v == nil {
		return 0
	}
	return v[0]
}

func (r *reader) readShort(what string) uint16 {
	v := r.take(what, 2)
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint16(v)
}

func (r *reader) readInt(what string) int32 {
	v := r.take(what, 4)
	if v == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(v))
}

func (r *reader) readLong(what string) int64 {
	v := r.take(what, 8)
	if v == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// count reads an [int] element count that must be non-negative.
func (r *reader) count(what string) int {
	n := r.readInt(what)
	if n < 0 {
		r.failf("%s: negative count %d", what, n)
		return 0
	}
	return int(n)
}

func (r *reader) readString() string {
	n := r.readShort("[string] length")
	return string(r.take("[string]", int(n)))
}

func (r *reader) readLongString() string {
	n := r.readInt("[long string] length")
	if n < 0 {
		r.failf("read [long string]: negative length %d", n)
		return ""
	}
	return string(r.take("[long string]", int(n)))
}

// readBytes reads [bytes]; a negative length is null (nil).
func (r *reader) readBytes(what string) []byte {
	n := r.readInt(what + " length")
	if n < 0 {
		return nil
	}
	v := r.take(what, int(n))
	if v == nil && r.err == nil {
		return []byte{}
	}
	return v
}

// readShortBytes reads [short bytes]; never nil unless the read failed.
func (r *reader) readShortBytes(what string) []byte {
	n := r.readShort(what + " length")
	v := r.take(what, int(n))
	if v == nil && r.err == nil {
		return []byte{}
	}
	return v
}

func (r *reader) readValue() Value {
	n := r.readInt("[value] length")
	switch {
	case r.err != nil:
		return Value{}
	case n == -1:
		return NullValue
	case n == -2:
		return UnsetValue
	case n < 0:
		r.failf("read [value]: invalid length %d", n)
		return Value{}
	}
	v := r.take("[value]", int(n))
	if v == nil {
		v = []byte{}
	}
	return Value{Bytes: v}
}

func (r *reader) readConsistency(what string) Consistency {
	c := Consistency(r.readShort(what))
	if r.err == nil && !c.Valid() {
		r.failf("%s: unknown consistency level 0x%04x", what, uint16(c))
	}
	return c
}

// capFor returns how many elements to preallocate for a count read from the
// wire: at most what the remaining bytes could hold, so a lying count cannot
// force a huge allocation.
func (r *reader) capFor(n, minElemSize int) int {
	if most := len(r.b) / minElemSize; n > most {
		return most
	}
	return n
}

func (r *reader) readStringList() []string {
	n := int(r.readShort("[string list] length"))
	l := make([]string, 0, r.capFor(n, 2))
	for i := 0; i < n && r.err == nil; i++ {
		l = append(l, r.readString())
	}
	return l
}

func (r *reader) readStringMap() map[string]string {
	return readMap(r, "[string map] length", 4, r.readString)
}

func (r *reader) readStringMultimap() map[string][]string {
	return readMap(r, "[string multimap] length", 4, r.readStringList)
}

func (r *reader) readBytesMap() map[string][]byte {
	return readMap(r, "[bytes map] length", 6, func() []byte { return r.readBytes("[bytes map] value") })
}

// readMap reads the maps of the protocol: a [short] count, then that many
// [string] keys each followed by a value that readValue reads. An entry
// takes at least minEntryBytes on the wire.
func readMap[V any](r *reader, what string, minEntryBytes int, readValue func() V) map[string]V {
	n := int(r.readShort(what))
	m := make(map[string]V, r.capFor(n, minEntryBytes))
	for i := 0; i < n && r.err == nil; i++ {
		k := r.readString()
		m[k] = readValue()
	}
	return m
}

func (r *reader) readInet() netip.AddrPort {
	size := r.readByte("[inet] size")
	if r.err != nil {
		return netip.AddrPort{}
	}
	if size != 4 && size != 16 {
		r.failf("read [inet]: address size %d, want 4 or 16", size)
		return netip.AddrPort{}
	}
	a, _ := netip.AddrFromSlice(r.take("[inet] address", int(size)))
	port := r.readInt("[inet] port")
	if r.err == nil && (port < 0 || port > math.MaxUint16) {
		r.failf("read [inet]: port %d out of range", port)
	}
	return netip.AddrPortFrom(a, uint16(port))
}

// ---- appenders ----
//
// Server-side appenders clamp lengths that overflow their prefix, so that a
// frame is always well formed; see the package doc.

func appendShort(dst []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(dst, v) }

func appendInt(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }

func appendLong(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

func clampShort(s string) string {
	if len(s) > math.MaxUint16 {
		return s[:math.MaxUint16]
	}
	return s
}

func appendString(dst []byte, s string) []byte {
	s = clampShort(s)
	dst = appendShort(dst, uint16(len(s)))
	return append(dst, s...)
}

func appendLongString(dst []byte, s string) []byte {
	dst = appendInt(dst, int32(len(s)))
	return append(dst, s...)
}

// appendBytes appends [bytes]; nil is null.
func appendBytes(dst []byte, b []byte) []byte {
	if b == nil {
		return appendInt(dst, -1)
	}
	dst = appendInt(dst, int32(len(b)))
	return append(dst, b...)
}

func appendShortBytes(dst []byte, b []byte) []byte {
	if len(b) > math.MaxUint16 {
		b = b[:math.MaxUint16]
	}
	dst = appendShort(dst, uint16(len(b)))
	return append(dst, b...)
}

func appendValue(dst []byte, v Value) []byte {
	switch v.Kind {
	case ValueNull:
		return appendInt(dst, -1)
	case ValueUnset:
		return appendInt(dst, -2)
	}
	dst = appendInt(dst, int32(len(v.Bytes)))
	return append(dst, v.Bytes...)
}

func appendStringList(dst []byte, l []string) []byte {
	if len(l) > math.MaxUint16 {
		l = l[:math.MaxUint16]
	}
	dst = appendShort(dst, uint16(len(l)))
	for _, s := range l {
		dst = appendString(dst, s)
	}
	return dst
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func appendStringMap(dst []byte, m map[string]string) []byte {
	return appendMap(dst, m, appendString)
}

func appendStringMultimap(dst []byte, m map[string][]string) []byte {
	return appendMap(dst, m, appendStringList)
}

func appendBytesMap(dst []byte, m map[string][]byte) []byte {
	return appendMap(dst, m, appendBytes)
}

// appendMap appends the maps of the protocol: a [short] count, then each
// [string] key followed by its value as appendValue writes it. Maps are
// written in key order so that encodings are deterministic, and clamped
// to the entries a [short] can count.
func appendMap[V any](dst []byte, m map[string]V, appendValue func([]byte, V) []byte) []byte {
	dst = appendShort(dst, uint16(min(len(m), math.MaxUint16)))
	for i, k := range sortedKeys(m) {
		if i == math.MaxUint16 {
			break
		}
		dst = appendString(dst, k)
		dst = appendValue(dst, m[k])
	}
	return dst
}

// appendInet appends [inet]. IPv4 (and IPv4-mapped IPv6) addresses take the
// 4-byte form; an invalid address is sent as 0.0.0.0.
func appendInet(dst []byte, ap netip.AddrPort) []byte {
	a := ap.Addr().Unmap()
	switch {
	case a.Is4():
		b := a.As4()
		dst = append(dst, 4)
		dst = append(dst, b[:]...)
	case a.Is6():
		b := a.As16()
		dst = append(dst, 16)
		dst = append(dst, b[:]...)
	default:
		dst = append(dst, 4, 0, 0, 0, 0)
	}
	return appendInt(dst, int32(ap.Port()))
}

// checker validates lengths for client-side encoders, which must fail rather
// than truncate. It records the first problem.
type checker struct{ err error }

func (c *checker) str(what, s string) {
	if c.err == nil && len(s) > math.MaxUint16 {
		c.err = fmt.Errorf("%w: %s is %d bytes, a [string] holds at most %d", ErrTooLong, what, len(s), math.MaxUint16)
	}
}

func (c *checker) shortBytes(what string, n int) {
	if c.err == nil && n > math.MaxUint16 {
		c.err = fmt.Errorf("%w: %s is %d bytes, a [short bytes] holds at most %d", ErrTooLong, what, n, math.MaxUint16)
	}
}

func (c *checker) shortCount(what string, n int) {
	if c.err == nil && n > math.MaxUint16 {
		c.err = fmt.Errorf("%w: %d %s, at most %d fit a [short] count", ErrTooLong, n, what, math.MaxUint16)
	}
}

func (c *checker) long(what string, n int) {
	if c.err == nil && n > math.MaxInt32 {
		c.err = fmt.Errorf("%w: %s is %d bytes, more than an [int] length holds", ErrTooLong, what, n)
	}
}

func (c *checker) strings(what string, l []string) {
	c.shortCount(what, len(l))
	for _, s := range l {
		c.str(what, s)
	}
}
