package cqltype

import (
	"encoding/binary"
	"slices"
)

// Collections, tuples and UDT values are serialized as in native protocol
// v3+: a list or set is [int] n followed by n [bytes]; a map is [int] n
// followed by n (key [bytes], value [bytes]); a tuple or UDT is one [bytes]
// per element, where a negative length is null and trailing elements may be
// missing (they read as null).

// EncodeCollection serializes a list or set from its serialized elements.
// Elements must not be nil (null): a nil element is written with length
// -1, which Validate rejects.
func EncodeCollection(elems [][]byte) []byte {
	n := 4
	for _, e := range elems {
		n += 4 + len(e)
	}
	out := make([]byte, 0, n)
	out = binary.BigEndian.AppendUint32(out, uint32(len(elems)))
	for _, e := range elems {
		out = appendBytes(out, e)
	}
	return out
}

// EncodeMap serializes a map from parallel slices of serialized keys and
// values, in the given order (see NormalizeMap). len(keys) must equal
// len(vals); extra entries of the longer slice are ignored.
func EncodeMap(keys, vals [][]byte) []byte {
	m := min(len(keys), len(vals))
	n := 4
	for i := range m {
		n += 8 + len(keys[i]) + len(vals[i])
	}
	out := make([]byte, 0, n)
	out = binary.BigEndian.AppendUint32(out, uint32(m))
	for i := range m {
		out = appendBytes(out, keys[i])
		out = appendBytes(out, vals[i])
	}
	return out
}

// EncodeTuple serializes a tuple (or UDT) value; a nil element is null.
func EncodeTuple(elems [][]byte) []byte {
	n := 0
	for _, e := range elems {
		n += 4 + len(e)
	}
	out := make([]byte, 0, n)
	for _, e := range elems {
		out = appendBytes(out, e)
	}
	return out
}

// appendBytes appends a protocol [bytes]: int32 length (-1 for nil) and the
// bytes.
func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.BigEndian.AppendUint32(dst, 0xFFFFFFFF)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// DecodeCollection splits a serialized list or set into its elements. The
// empty value (len(v) == 0) has no elements. The returned elements are
// sub-slices of v (not copies) and are never nil: a null element is an
// error, as are truncated input and trailing bytes. Element contents are not
// validated; use Validate for that.
func DecodeCollection(v []byte) ([][]byte, error) {
	it, err := newCollIter(v, false, "list")
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, min(it.n, len(v)/4))
	for it.more() {
		e, err := it.next()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, it.finish()
}

// DecodeMap splits a serialized map into parallel key and value slices,
// with the same rules and aliasing as DecodeCollection.
func DecodeMap(v []byte) (keys, vals [][]byte, err error) {
	it, err := newCollIter(v, true, "map")
	if err != nil {
		return nil, nil, err
	}
	c := min(it.n, len(v)/8)
	keys, vals = make([][]byte, 0, c), make([][]byte, 0, c)
	for it.more() {
		k, err := it.next()
		if err != nil {
			return nil, nil, err
		}
		val, err := it.next()
		if err != nil {
			return nil, nil, err
		}
		keys, vals = append(keys, k), append(vals, val)
	}
	if err := it.finish(); err != nil {
		return nil, nil, err
	}
	return keys, vals, nil
}

// DecodeTuple splits a serialized tuple of n elements. The result always
// has n entries; null and missing trailing elements are nil. Non-null
// elements are sub-slices of v. More than n elements, or truncated input,
// is an error.
func DecodeTuple(v []byte, n int) ([][]byte, error) {
	out := make([][]byte, max(n, 0))
	pos := 0
	for i := 0; pos < len(v); i++ {
		if i >= n {
			return nil, valueErrorf("Invalid remaining data after end of tuple value")
		}
		e, next, err := readElem(v, pos, i, "component")
		if err != nil {
			return nil, err
		}
		out[i], pos = e, next
	}
	return out, nil
}

// readElem reads the [bytes] at v[pos:] of tuple element i; nil for null.
func readElem(v []byte, pos, i int, what string) (elem []byte, next int, err error) {
	if len(v)-pos < 4 {
		return nil, 0, valueErrorf("Not enough bytes to read size of %dth %s", i, what)
	}
	size := int32(binary.BigEndian.Uint32(v[pos:]))
	pos += 4
	if size < 0 {
		return nil, pos, nil
	}
	if len(v)-pos < int(size) {
		return nil, 0, valueErrorf("Not enough bytes to read %dth %s", i, what)
	}
	return v[pos : pos+int(size) : pos+int(size)], pos + int(size), nil
}

// collIter walks the [bytes] items of a serialized list, set or map without
// allocating. For a map, each entry is two items.
type collIter struct {
	v     []byte
	pos   int
	n     int // entries announced
	items int // items per entry: 1, or 2 for maps
	read  int // items read
	what  string
}

func newCollIter(v []byte, isMap bool, what string) (collIter, error) {
	it := collIter{v: v, items: 1, what: what}
	if isMap {
		it.items = 2
	}
	if len(v) == 0 {
		return it, nil
	}
	if len(v) < 4 {
		return it, valueErrorf("Not enough bytes to read a %s", what)
	}
	n := int32(binary.BigEndian.Uint32(v))
	if n < 0 {
		return it, valueErrorf("Invalid negative size %d for a %s", n, what)
	}
	it.n, it.pos = int(n), 4
	return it, nil
}

// more reports whether items remain according to the announced size.
func (it *collIter) more() bool { return it.read < it.n*it.items }

func (it *collIter) next() ([]byte, error) {
	if len(it.v)-it.pos < 4 {
		return nil, valueErrorf("Not enough bytes to read a %s", it.what)
	}
	size := int32(binary.BigEndian.Uint32(it.v[it.pos:]))
	it.pos += 4
	if size < 0 {
		return nil, valueErrorf("Null value read when not allowed in a %s", it.what)
	}
	if len(it.v)-it.pos < int(size) {
		return nil, valueErrorf("Not enough bytes to read a %s", it.what)
	}
	e := it.v[it.pos : it.pos+int(size) : it.pos+int(size)]
	it.pos += int(size)
	it.read++
	return e, nil
}

func (it *collIter) finish() error {
	if it.pos != len(it.v) {
		return valueErrorf("Unexpected extraneous bytes after %s value", it.what)
	}
	return nil
}

// NormalizeSet returns the elements of a set of type t (a Set, or a List
// treated the same way) sorted by Compare of the element type, without
// duplicates; of elements that compare equal the last one is kept. The input
// slice is not modified.
func NormalizeSet(t Type, elems [][]byte) [][]byte {
	out := make([][]byte, 0, len(elems))
	for _, i := range sortedLastOfEqual(elemType(t, 0), elems) {
		out = append(out, elems[i])
	}
	return out
}

// NormalizeMap returns the entries of a map of type t sorted by Compare of
// the key type; when keys compare equal, the entry that came last wins. The
// input slices are not modified. Entries beyond the shorter slice are
// dropped.
func NormalizeMap(t Type, keys, vals [][]byte) (k, v [][]byte) {
	n := min(len(keys), len(vals))
	k, v = make([][]byte, 0, n), make([][]byte, 0, n)
	for _, i := range sortedLastOfEqual(elemType(t, 0), keys[:n]) {
		k, v = append(k, keys[i]), append(v, vals[i])
	}
	return k, v
}

// sortedLastOfEqual returns the indexes of keys in the order Compare of t
// sorts them, with only the last given of keys that compare equal.
func sortedLastOfEqual(t Type, keys [][]byte) []int {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	// Stable, so that among equal keys the later one sorts later.
	slices.SortStableFunc(idx, func(a, b int) int { return Compare(t, keys[a], keys[b]) })
	// Filtered in place: the write position never passes the read one.
	out := idx[:0]
	for j, i := range idx {
		if j+1 < len(idx) && Compare(t, keys[i], keys[idx[j+1]]) == 0 {
			continue
		}
		out = append(out, i)
	}
	return out
}

// itemType returns the type of item i of a serialized collection of type
// t: the element type of a list or set; for a map, whose items are its keys
// and values in turn, the key type for even i and the value type for odd.
func itemType(t Type, i int) Type {
	if t.Kind == Map {
		return elemType(t, i%2)
	}
	return elemType(t, 0)
}

// elemType returns t.Elems[i], or blob when t is malformed, so that callers
// never index out of range on a hand-built Type.
func elemType(t Type, i int) Type {
	if i < len(t.Elems) {
		return t.Elems[i]
	}
	return Scalar(Blob)
}

// componentTypes returns the element types of a tuple or the field types of
// a UDT.
func componentTypes(t Type) []Type {
	if t.Kind == UDT {
		ts := make([]Type, len(t.Fields))
		for i, f := range t.Fields {
			ts[i] = f.Type
		}
		return ts
	}
	return t.Elems
}
