package cqltype

import (
	"strings"
)

// maxTypeDepth bounds the nesting of a parsed type. Cassandra has no such
// limit, but nothing real comes close, and every function of this package
// recurses on the type, so a bound keeps hostile schema strings harmless.
const maxTypeDepth = 64

var scalarByName = map[string]Kind{
	"ascii": Ascii, "bigint": Bigint, "blob": Blob, "boolean": Boolean, "counter": Counter,
	"decimal": Decimal, "double": Double, "float": Float, "int": Int, "text": Varchar,
	"varchar": Varchar, "timestamp": Timestamp, "uuid": UUID, "varint": Varint,
	"timeuuid": Timeuuid, "inet": Inet, "date": Date, "time": Time, "smallint": Smallint,
	"tinyint": Tinyint, "duration": Duration,
}

// Parse parses CQL type syntax as written in CREATE TABLE and in
// system_schema.columns.type: scalar names (varchar is text), list<T>,
// set<T>, map<K, V>, tuple<T, ...> and frozen<...>, case-insensitively and
// ignoring whitespace. User-defined types, custom class names and vectors
// are not supported: an unknown name is an error.
//
// The result is normalised as Cassandra prepares a type: everything inside a
// frozen collection or a tuple is frozen, and tuples are frozen. Cassandra's
// rules are enforced with its messages: collections nested in a non-frozen
// collection must be frozen, counters may not appear in collections or
// tuples, durations may not be map keys or set elements, and frozen<> only
// applies to collections and tuples. Errors match ErrInvalidType.
func Parse(s string) (Type, error) {
	p := typeParser{s: s}
	t, err := p.parseType(0)
	if err != nil {
		return Type{}, err
	}
	p.skipSpace()
	if p.pos != len(p.s) {
		return Type{}, typeErrorf("Invalid type %q: unexpected %q after the type", s, p.s[p.pos:])
	}
	t = normalizeFrozen(t)
	if err := checkType(t); err != nil {
		return Type{}, err
	}
	return t, nil
}

type typeParser struct {
	s   string
	pos int
}

func (p *typeParser) skipSpace() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			p.pos++
		default:
			return
		}
	}
}

func isIdentByte(c byte, first bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}

func (p *typeParser) ident() string {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.s) && isIdentByte(p.s[p.pos], p.pos == start) {
		p.pos++
	}
	return p.s[start:p.pos]
}

// accept consumes c (after whitespace) if it is next.
func (p *typeParser) accept(c byte) bool {
	p.skipSpace()
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *typeParser) syntaxError() error {
	if p.pos >= len(p.s) {
		return typeErrorf("Invalid type %q: unexpected end of input", p.s)
	}
	return typeErrorf("Invalid type %q: unexpected %q at position %d", p.s, p.s[p.pos], p.pos)
}

// parseType parses one type. Frozen flags are set as written (tuples are
// always frozen); normalizeFrozen propagates them afterwards.
func (p *typeParser) parseType(depth int) (Type, error) {
	if depth > maxTypeDepth {
		return Type{}, typeErrorf("Invalid type %q: nested more than %d levels", p.s, maxTypeDepth)
	}
	name := p.ident()
	if name == "" {
		return Type{}, p.syntaxError()
	}
	lower := strings.ToLower(name)
	if k, ok := scalarByName[lower]; ok {
		return Scalar(k), nil
	}
	var want int // number of type arguments; -1 = one or more
	switch lower {
	case "frozen", "list", "set":
		want = 1
	case "map":
		want = 2
	case "tuple":
		want = -1
	default:
		if p.accept('.') { // a keyspace-qualified UDT name
			name += "." + p.ident()
		}
		return Type{}, typeErrorf("Unknown type %s", name)
	}
	if !p.accept('<') {
		return Type{}, p.syntaxError()
	}
	var args []Type
	for {
		a, err := p.parseType(depth + 1)
		if err != nil {
			return Type{}, err
		}
		args = append(args, a)
		if p.accept('>') {
			break
		}
		if !p.accept(',') {
			return Type{}, p.syntaxError()
		}
	}
	if want > 0 && len(args) != want {
		return Type{}, typeErrorf("Invalid type %q: %s takes %d type argument(s), got %d", p.s, lower, want, len(args))
	}
	switch lower {
	case "frozen":
		a := args[0]
		if !a.supportsFreezing() {
			return Type{}, typeErrorf("frozen<> is only allowed on collections, tuples, and user-defined types (got %s)", rawString(a))
		}
		a.Frozen = true
		return a, nil
	case "list":
		return ListOf(args[0]), nil
	case "set":
		return SetOf(args[0]), nil
	case "map":
		return MapOf(args[0], args[1]), nil
	default:
		return TupleOf(args...), nil
	}
}

// normalizeFrozen freezes everything below a frozen collection or a tuple,
// as Cassandra's RawCollection.freeze and RawTuple do.
func normalizeFrozen(t Type) Type {
	if t.Frozen || t.Kind == Tuple {
		return t.Freeze()
	}
	for i, e := range t.Elems {
		t.Elems[i] = normalizeFrozen(e)
	}
	return t
}

// checkType applies Cassandra's CQL3Type.Raw prepare rules, outermost first,
// with its messages.
func checkType(t Type) error {
	switch t.Kind {
	case List, Set, Map:
		values := t.Elems[len(t.Elems)-1]
		if !t.Frozen && values.supportsFreezing() && !values.Frozen {
			return nestedNonFrozenError(t, values)
		}
		if values.Kind == Counter {
			return typeErrorf("Counters are not allowed inside collections: %s", rawString(t))
		}
		if values.Kind == Duration && t.Kind == Set {
			return typeErrorf("Durations are not allowed inside sets: %s", rawString(t))
		}
		if t.Kind == Map {
			keys := t.Elems[0]
			if keys.Kind == Counter {
				return typeErrorf("Counters are not allowed inside collections: %s", rawString(t))
			}
			if keys.Kind == Duration {
				return typeErrorf("Durations are not allowed as map keys: %s", rawString(t))
			}
			if !t.Frozen && keys.supportsFreezing() && !keys.Frozen {
				return nestedNonFrozenError(t, keys)
			}
		}
	case Tuple:
		for _, e := range t.Elems {
			if e.Kind == Counter {
				return typeErrorf("Counters are not allowed inside tuples")
			}
		}
	}
	// Cassandra prepares the values before the keys.
	for i := len(t.Elems) - 1; i >= 0; i-- {
		if t.Kind == Map && i == 0 {
			continue
		}
		if err := checkType(t.Elems[i]); err != nil {
			return err
		}
	}
	if t.Kind == Map {
		return checkType(t.Elems[0])
	}
	return nil
}

func nestedNonFrozenError(t, inner Type) error {
	if inner.Kind == UDT {
		return typeErrorf("Non-frozen UDTs are not allowed inside collections: %s", rawString(t))
	}
	return typeErrorf("Non-frozen collections are not allowed inside collections: %s", rawString(t))
}

// rawString spells t as Cassandra's CQL3Type.Raw.toString does in error
// messages: like String, but a tuple is written without frozen<>.
func rawString(t Type) string {
	var b strings.Builder
	writeRaw(&b, t)
	return b.String()
}

func writeRaw(b *strings.Builder, t Type) {
	if t.Kind != Tuple && !t.IsCollection() {
		t.write(b)
		return
	}
	frozen := t.Frozen && t.Kind != Tuple
	if frozen {
		b.WriteString("frozen<")
	}
	switch t.Kind {
	case List:
		b.WriteString("list<")
	case Set:
		b.WriteString("set<")
	case Map:
		b.WriteString("map<")
	default:
		b.WriteString("tuple<")
	}
	for i, e := range t.Elems {
		if i > 0 {
			b.WriteString(", ")
		}
		writeRaw(b, e)
	}
	b.WriteByte('>')
	if frozen {
		b.WriteByte('>')
	}
}
