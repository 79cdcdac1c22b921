// Package cqltype is the CQL type system of cosmosd: type syntax, the
// native-protocol value encodings, Cassandra's comparison order, an
// order-preserving key encoding for clustering columns, literal conversion
// and formatting.
//
// # Model
//
// A Type (type.go) describes a CQL type; its Kind values are the native
// protocol option ids. Parse reads the type syntax of CREATE TABLE and
// system_schema.columns.type, and Type.String writes it back exactly as
// Cassandra does, so String(Parse(s)) is canonical and Parse(t.String())
// equals t.
//
// A value is always the native-protocol serialized form of the type, a
// []byte (protocol v3+ collection encoding, with [int] sizes). nil is null;
// an empty non-nil slice is the "empty" value, which Cassandra accepts for
// most types and which is distinct from null. Everything in this package
// works on these bytes:
//
//   - Validate checks that bytes are well-formed for a type, with
//     Cassandra's rules and error messages.
//   - Compare orders values as Cassandra's AbstractType comparators do.
//   - AppendKey/DecodeKey give a byte-comparable, self-delimiting encoding
//     whose byte order is Compare's order (or its reverse, for DESC
//     clustering columns); see key.go for the layout.
//   - ParseLiteral converts CQL constants; Format renders values as CQL
//     literals.
//   - EncodeCollection/DecodeCollection, EncodeMap/DecodeMap,
//     EncodeTuple/DecodeTuple and NormalizeSet/NormalizeMap build and merge
//     collection values; Normalize puts a whole value's sets and maps, at
//     any depth, in that form (for values bound by clients).
//   - Marshal/Unmarshal convert between values and natural Go types, for
//     system tables and tests.
//
// # Invariants
//
//   - For valid a and b: sign(bytes.Compare(key(a), key(b))) ==
//     sign(Compare(a, b)), inverted for desc; every key component is at least
//     one byte and starts with a byte in 0x01..0xFE; no component encoding
//     is a prefix of another.
//   - DecodeKey(AppendKey(v)) Compares equal to v; it is byte-identical
//     except where values that compare equal are canonicalised (decimal
//     scale, varint padding, boolean bytes, NaN payloads, missing trailing
//     tuple elements).
//   - Serialized sets and maps that this package produces (Marshal,
//     NormalizeSet, NormalizeMap, Normalize) are sorted by Compare of the
//     element or key type and free of duplicates; Validate does not require
//     it of input, as Cassandra does not: callers Normalize what they take
//     in.
//   - No function panics on malformed bytes or type strings; decoders return
//     errors matching ErrInvalidValue, Parse errors match ErrInvalidType.
//
// Everything here is a pure function of its arguments (except "now" in
// timestamp literals) and safe for concurrent use.
package cqltype
