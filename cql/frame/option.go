package frame

import (
	"github.com/cosmosd/cosmosd/cqltype"
)

// DurationClass is the Custom class name under which protocol v4 carries the
// duration type (its option id 0x0015 arrived with v5).
const DurationClass = "org.apache.cassandra.db.marshal.DurationType"

// optionLegacyText is the pre-v3 id of text, still understood on input.
const optionLegacyText = 0x000A

// AppendOption appends the [option] describing t [V4 §4.2.5.2]: the kind's id,
// then the element types of collections and tuples, the keyspace, name and
// fields of a UDT, or the class name of a Custom type. Frozen-ness is not on
// the wire.
func AppendOption(dst []byte, t cqltype.Type) []byte {
	switch t.Kind {
	case cqltype.Custom:
		dst = appendShort(dst, uint16(cqltype.Custom))
		return appendString(dst, t.Custom)
	case cqltype.Duration:
		dst = appendShort(dst, uint16(cqltype.Custom))
		return appendString(dst, DurationClass)
	case cqltype.List, cqltype.Set:
		dst = appendShort(dst, uint16(t.Kind))
		return AppendOption(dst, elem(t, 0))
	case cqltype.Map:
		dst = appendShort(dst, uint16(t.Kind))
		dst = AppendOption(dst, elem(t, 0))
		return AppendOption(dst, elem(t, 1))
	case cqltype.Tuple:
		dst = appendShort(dst, uint16(t.Kind))
		n := min(len(t.Elems), 0xFFFF)
		dst = appendShort(dst, uint16(n))
		for _, e := range t.Elems[:n] {
			dst = AppendOption(dst, e)
		}
		return dst
	case cqltype.UDT:
		dst = appendShort(dst, uint16(t.Kind))
		dst = appendString(dst, t.Keyspace)
		dst = appendString(dst, t.Name)
		n := min(len(t.Fields), 0xFFFF)
		dst = appendShort(dst, uint16(n))
		for _, f := range t.Fields[:n] {
			dst = appendString(dst, f.Name)
			dst = AppendOption(dst, f.Type)
		}
		return dst
	}
	return appendShort(dst, uint16(t.Kind))
}

// elem returns element i of t, or blob for a malformed Type that lacks it,
// so that a programming error yields a well-formed frame rather than a panic.
func elem(t cqltype.Type, i int) cqltype.Type {
	if i < len(t.Elems) {
		return t.Elems[i]
	}
	return cqltype.Scalar(cqltype.Blob)
}

// readOption reads an [option]. Tuples come back frozen (they always are in
// CQL); collections and UDTs come back unfrozen, since the wire does not say.
// The legacy text id 0x000A reads as varchar, and the duration Custom class
// as duration.
func (r *reader) readOption(depth int) cqltype.Type {
	if depth > maxOptionDepth {
		r.failf("read [option]: types nested deeper than %d", maxOptionDepth)
		return cqltype.Type{}
	}
	id := r.readShort("[option] id")
	if r.err != nil {
		return cqltype.Type{}
	}
	k := cqltype.Kind(id)
	switch k {
	case cqltype.Custom:
		class := r.readString()
		if class == DurationClass {
			return cqltype.Scalar(cqltype.Duration)
		}
		return cqltype.Type{Kind: cqltype.Custom, Custom: class}
	case optionLegacyText:
		return cqltype.Scalar(cqltype.Varchar)
	case cqltype.Ascii, cqltype.Bigint, cqltype.Blob, cqltype.Boolean, cqltype.Counter,
		cqltype.Decimal, cqltype.Double, cqltype.Float, cqltype.Int, cqltype.Timestamp,
		cqltype.UUID, cqltype.Varchar, cqltype.Varint, cqltype.Timeuuid, cqltype.Inet,
		cqltype.Date, cqltype.Time, cqltype.Smallint, cqltype.Tinyint, cqltype.Duration:
		return cqltype.Scalar(k)
	case cqltype.List, cqltype.Set:
		e := r.readOption(depth + 1)
		return cqltype.Type{Kind: k, Elems: []cqltype.Type{e}}
	case cqltype.Map:
		key := r.readOption(depth + 1)
		val := r.readOption(depth + 1)
		return cqltype.Type{Kind: k, Elems: []cqltype.Type{key, val}}
	case cqltype.Tuple:
		n := int(r.readShort("tuple size"))
		elems := make([]cqltype.Type, 0, r.capFor(n, 2))
		for i := 0; i < n && r.err == nil; i++ {
			elems = append(elems, r.readOption(depth+1))
		}
		return cqltype.Type{Kind: k, Elems: elems, Frozen: true}
	case cqltype.UDT:
		t := cqltype.Type{Kind: k}
		t.Keyspace = r.readString()
		t.Name = r.readString()
		n := int(r.readShort("UDT field count"))
		t.Fields = make([]cqltype.Field, 0, r.capFor(n, 4))
		for i := 0; i < n && r.err == nil; i++ {
			name := r.readString()
			t.Fields = append(t.Fields, cqltype.Field{Name: name, Type: r.readOption(depth + 1)})
		}
		return t
	}
	r.failf("read [option]: unknown type id 0x%04x", id)
	return cqltype.Type{}
}
