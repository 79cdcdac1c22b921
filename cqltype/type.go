package cqltype

import (
	"strings"
)

// Kind identifies a CQL data type. The values are the [option] ids of the
// native protocol v4 (§4.2.5.2), so a Kind goes on the wire unchanged.
type Kind uint16

// Kinds of CQL types, numbered as on the wire.
const (
	Custom    Kind = 0x0000
	Ascii     Kind = 0x0001
	Bigint    Kind = 0x0002
	Blob      Kind = 0x0003
	Boolean   Kind = 0x0004
	Counter   Kind = 0x0005
	Decimal   Kind = 0x0006
	Double    Kind = 0x0007
	Float     Kind = 0x0008
	Int       Kind = 0x0009
	Timestamp Kind = 0x000B
	UUID      Kind = 0x000C
	Varchar   Kind = 0x000D // "text" and "varchar" are the same type
	Varint    Kind = 0x000E
	Timeuuid  Kind = 0x000F
	Inet      Kind = 0x0010
	Date      Kind = 0x0011
	Time      Kind = 0x0012
	Smallint  Kind = 0x0013
	Tinyint   Kind = 0x0014
	Duration  Kind = 0x0015
	List      Kind = 0x0020
	Map       Kind = 0x0021
	Set       Kind = 0x0022
	UDT       Kind = 0x0030
	Tuple     Kind = 0x0031
)

// Type is a CQL data type. It is a value type: copy it freely, never mutate
// a Type that another goroutine may read.
//
// Invariants: List and Set have exactly one element type in Elems, Map has
// two (key, value), Tuple has one or more; scalar kinds have none. Frozen is
// meaningful only for collections, tuples and UDTs. Tuples are always frozen
// in CQL, so a Tuple has Frozen set (TupleOf and Parse do it). Types built by
// Parse are normalised as Cassandra does: everything nested in a frozen
// collection or in a tuple is frozen too, so Equal compares what Cassandra
// compares and String matches system_schema.
type Type struct {
	Kind   Kind
	Elems  []Type
	Frozen bool
	// Custom is the Java class name of a Custom type.
	Custom string
	// Keyspace, Name and Fields describe a UDT.
	Keyspace string
	Name     string
	Fields   []Field
}

// Field is one field of a user-defined type.
type Field struct {
	Name string
	Type Type
}

// Scalar returns the type of kind k, which must not be a collection, tuple
// or UDT.
func Scalar(k Kind) Type { return Type{Kind: k} }

// ListOf, SetOf and MapOf build (non-frozen) collection types.
func ListOf(e Type) Type     { return Type{Kind: List, Elems: []Type{e}} }
func SetOf(e Type) Type      { return Type{Kind: Set, Elems: []Type{e}} }
func MapOf(k, v Type) Type   { return Type{Kind: Map, Elems: []Type{k, v}} }
func TupleOf(e ...Type) Type { return Type{Kind: Tuple, Elems: e, Frozen: true} }

// IsCollection reports whether t is a list, set or map.
func (t Type) IsCollection() bool { return t.Kind == List || t.Kind == Set || t.Kind == Map }

// IsMultiCell reports whether values of t are updated element by element
// (non-frozen collections), as opposed to replaced whole.
func (t Type) IsMultiCell() bool { return t.IsCollection() && !t.Frozen }

// Equal reports whether t and u are the same type. Frozen-ness of nested
// types counts, as it does in Cassandra.
func (t Type) Equal(u Type) bool {
	if t.Kind != u.Kind || t.Frozen != u.Frozen || len(t.Elems) != len(u.Elems) ||
		t.Custom != u.Custom || t.Keyspace != u.Keyspace || t.Name != u.Name || len(t.Fields) != len(u.Fields) {
		return false
	}
	for i := range t.Elems {
		if !t.Elems[i].Equal(u.Elems[i]) {
			return false
		}
	}
	for i := range t.Fields {
		if t.Fields[i].Name != u.Fields[i].Name || !t.Fields[i].Type.Equal(u.Fields[i].Type) {
			return false
		}
	}
	return true
}

var scalarNames = map[Kind]string{
	Ascii: "ascii", Bigint: "bigint", Blob: "blob", Boolean: "boolean", Counter: "counter",
	Decimal: "decimal", Double: "double", Float: "float", Int: "int", Timestamp: "timestamp",
	UUID: "uuid", Varchar: "text", Varint: "varint", Timeuuid: "timeuuid", Inet: "inet",
	Date: "date", Time: "time", Smallint: "smallint", Tinyint: "tinyint", Duration: "duration",
}

var compositeNames = map[Kind]string{List: "list", Set: "set", Map: "map", Tuple: "tuple"}

// Freeze returns t with Frozen set on t (when it is a collection, tuple or
// UDT) and on every collection, tuple and UDT nested in it, as Cassandra's
// frozen<> does. Scalars are returned unchanged. t is not modified.
func (t Type) Freeze() Type {
	if !t.supportsFreezing() {
		return t
	}
	t.Frozen = true
	if len(t.Elems) > 0 {
		elems := make([]Type, len(t.Elems))
		for i, e := range t.Elems {
			elems[i] = e.Freeze()
		}
		t.Elems = elems
	}
	if len(t.Fields) > 0 {
		fields := make([]Field, len(t.Fields))
		for i, f := range t.Fields {
			fields[i] = Field{Name: f.Name, Type: f.Type.Freeze()}
		}
		t.Fields = fields
	}
	return t
}

func (t Type) supportsFreezing() bool {
	return t.IsCollection() || t.Kind == Tuple || t.Kind == UDT
}

// String returns the CQL spelling of t as Cassandra writes it in
// system_schema.columns.type, e.g. "frozen<map<text, list<int>>>". Tuples
// are always written "frozen<tuple<...>>", as Cassandra's CQL3Type.Tuple
// does; Parse accepts both spellings.
func (t Type) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t Type) write(b *strings.Builder) {
	if name, ok := scalarNames[t.Kind]; ok {
		b.WriteString(name)
		return
	}
	// Cassandra writes a tuple as frozen<tuple<...>> whether or not the
	// user wrote frozen<> (CQL3Type.Tuple.toString).
	frozen := t.Frozen && t.supportsFreezing() || t.Kind == Tuple
	if frozen {
		b.WriteString("frozen<")
	}
	switch t.Kind {
	case List, Set, Map, Tuple:
		b.WriteString(compositeNames[t.Kind])
		b.WriteByte('<')
		for i, e := range t.Elems {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b)
		}
		b.WriteByte('>')
	case UDT:
		b.WriteString(t.Name)
	case Custom:
		b.WriteByte('\'')
		b.WriteString(t.Custom)
		b.WriteByte('\'')
	default:
		b.WriteString("unknown")
	}
	if frozen {
		b.WriteByte('>')
	}
}
