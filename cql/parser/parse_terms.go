package parser

import (
	"github.com/cosmosd/cosmosd/cqltype"
)

// newMarker creates the next bind marker. Markers are created in textual
// order, so Index is the marker's position in the statement.
func (p *parser) newMarker(name string) *BindMarker {
	m := &BindMarker{Index: p.markers, Name: name}
	p.markers++
	return m
}

// marker parses '?' or ':name'.
func (p *parser) marker() (*BindMarker, bool, error) {
	if p.peek().kind == tQMark {
		p.pos++
		return p.newMarker(""), true, nil
	}
	if p.isPunct(":") {
		p.pos++
		name, err := p.ident("")
		if err != nil {
			return nil, true, err
		}
		return p.newMarker(name), true, nil
	}
	return nil, false, nil
}

// intValue parses the INTEGER-or-marker argument of LIMIT, TTL, TIMESTAMP.
func (p *parser) intValue() (Term, error) {
	if m, ok, err := p.marker(); ok {
		return m, err
	}
	t := p.peek()
	if t.kind == tInteger {
		p.pos++
		return &Literal{Kind: LitInteger, Text: t.text}, nil
	}
	if isPunctTok(t, "-") {
		if n := p.peekN(1); n.kind == tInteger && n.pos == t.end {
			p.pos += 2
			return &Literal{Kind: LitInteger, Text: "-" + n.text}, nil
		}
	}
	return nil, p.mismatch("INTEGER")
}

var literalKinds = map[tokKind]LitKind{
	tString: LitString, tInteger: LitInteger, tFloat: LitFloat, tBoolean: LitBoolean,
	tUUID: LitUUID, tHex: LitBlob, tDuration: LitDuration,
}

// constant parses a constant literal (not null), folding a '-' written
// directly before a number or duration.
func (p *parser) constant() (*Literal, bool) {
	t := p.peek()
	if k, ok := literalKinds[t.kind]; ok {
		p.pos++
		return &Literal{Kind: k, Text: t.text}, true
	}
	if t.kind == tIdent {
		switch t.text {
		case "nan":
			p.pos++
			return &Literal{Kind: LitFloat, Text: "NaN"}, true
		case "infinity":
			p.pos++
			return &Literal{Kind: LitFloat, Text: "Infinity"}, true
		}
		return nil, false
	}
	if !isPunctTok(t, "-") {
		return nil, false
	}
	n := p.peekN(1)
	if n.pos != t.end { // "- 1" is not a negative literal in CQL
		return nil, false
	}
	switch {
	case n.kind == tInteger || n.kind == tFloat || n.kind == tDuration:
		p.pos += 2
		return &Literal{Kind: literalKinds[n.kind], Text: "-" + n.text}, true
	case isKwTok(n, "nan"):
		p.pos += 2
		return &Literal{Kind: LitFloat, Text: "NaN"}, true
	case isKwTok(n, "infinity"):
		p.pos += 2
		return &Literal{Kind: LitFloat, Text: "-Infinity"}, true
	}
	return nil, false
}

// isFuncNameTok reports whether t can name a function: an identifier or
// the reserved TOKEN.
func isFuncNameTok(t token) bool { return isIdentTok(t) || isKwTok(t, "token") }

// isFuncStart reports whether a function call "[ks.]name(" starts here.
func (p *parser) isFuncStart() bool {
	if !isFuncNameTok(p.peek()) {
		return false
	}
	if isPunctTok(p.peekN(1), "(") {
		return true
	}
	return isPunctTok(p.peekN(1), ".") && isFuncNameTok(p.peekN(2)) && isPunctTok(p.peekN(3), "(")
}

// funcName parses "[ks.]name" of a function, as "ks.name" when qualified.
func (p *parser) funcName() string {
	name := p.advance().text
	if p.acceptPunct(".") {
		name += "." + p.advance().text
	}
	return name
}

// startsTerm reports whether the token n positions ahead can begin a term;
// it decides between a type hint "(type) term" and a parenthesised tuple.
func (p *parser) startsTerm(n int) bool {
	t := p.peekN(n)
	switch t.kind {
	case tString, tInteger, tFloat, tBoolean, tUUID, tHex, tDuration, tQMark:
		return true
	case tIdent, tQuoted:
		// null, NaN, Infinity, or a function call; a bare name is never a term.
		if isKwTok(t, "null") || isKwTok(t, "nan") || isKwTok(t, "infinity") {
			return true
		}
		next := p.peekN(n + 1)
		return isPunctTok(next, "(") || isPunctTok(next, ".")
	case tPunct:
		switch t.text {
		case "-", ":", "[", "{", "(":
			return true
		}
	}
	return false
}

// term parses a value: constant, null, bind marker, collection, tuple or UDT
// literal, function call or type hint.
func (p *parser) term() (Term, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if lit, ok := p.constant(); ok {
		return lit, nil
	}
	if m, ok, err := p.marker(); ok {
		return m, err
	}
	t := p.peek()
	switch {
	case isKwTok(t, "null"):
		p.pos++
		return &Literal{Kind: LitNull}, nil
	case p.isFuncStart():
		name := p.funcName()
		args, err := p.termList("(", ")", true)
		if err != nil {
			return nil, err
		}
		return &FuncCall{Name: name, Args: args}, nil
	case isPunctTok(t, "["):
		elems, err := p.termList("[", "]", true)
		if err != nil {
			return nil, err
		}
		return &ListLit{Elems: elems}, nil
	case isPunctTok(t, "{"):
		return p.braceLiteral()
	case isPunctTok(t, "("):
		if c, ok := p.typeHint(); ok {
			inner, err := p.term()
			if err != nil {
				return nil, err
			}
			return &Cast{Term: inner, Type: c}, nil
		}
		elems, err := p.termList("(", ")", false)
		if err != nil {
			return nil, err
		}
		return &TupleLit{Elems: elems}, nil
	}
	return nil, p.noViable()
}

// typeHint speculatively parses "( type )" followed by the start of a term.
// On success it consumes the parenthesised type; otherwise it consumes
// nothing.
func (p *parser) typeHint() (cqltype.Type, bool) {
	save := p.pos
	p.pos++ // (
	if t := p.peek(); t.kind == tIdent || t.kind == tQuoted || t.kind == tString {
		typ, err := p.cqlType()
		if err == nil && p.isPunct(")") && p.startsTerm(1) {
			p.pos++
			return typ, true
		}
	}
	p.pos = save
	return cqltype.Type{}, false
}

// termList parses "open [term (, term)*] close"; empty lists are allowed
// only when allowEmpty.
func (p *parser) termList(open, close string, allowEmpty bool) ([]Term, error) {
	if err := p.expectPunct(open); err != nil {
		return nil, err
	}
	if allowEmpty && p.acceptPunct(close) {
		return nil, nil
	}
	out, err := sepList(p.term, p.comma)
	if err != nil {
		return nil, err
	}
	return out, p.expectPunct(close)
}

// braceLiteral parses {} (empty set-or-map), {a, b}, {k: v} or {field: v}.
func (p *parser) braceLiteral() (Term, error) {
	p.pos++ // {
	if p.acceptPunct("}") {
		return &SetLit{}, nil
	}
	if p.isIdent() && isPunctTok(p.peekN(1), ":") {
		u := &UDTLit{}
		var err error
		if u.Fields, u.Values, err = braceEntries(p, p.plainIdent); err != nil {
			return nil, err
		}
		return u, nil
	}
	first, err := p.term()
	if err != nil {
		return nil, err
	}
	if !p.isPunct(":") {
		s := &SetLit{Elems: []Term{first}}
		for p.acceptPunct(",") {
			e, err := p.term()
			if err != nil {
				return nil, err
			}
			s.Elems = append(s.Elems, e)
		}
		return s, p.expectPunct("}")
	}
	// A map: its first key is parsed already, to tell it from a set.
	m := &MapLit{}
	parsedFirst := false
	if m.Keys, m.Values, err = braceEntries(p, func() (Term, error) {
		if !parsedFirst {
			parsedFirst = true
			return first, nil
		}
		return p.term()
	}); err != nil {
		return nil, err
	}
	return m, nil
}

// braceEntries parses "key: term (, key: term)* }", the rest of a map or
// UDT literal after its "{".
func braceEntries[K any](p *parser, key func() (K, error)) ([]K, []Term, error) {
	var keys []K
	var values []Term
	for {
		k, err := key()
		if err != nil {
			return nil, nil, err
		}
		if err := p.expectPunct(":"); err != nil {
			return nil, nil, err
		}
		v, err := p.term()
		if err != nil {
			return nil, nil, err
		}
		keys, values = append(keys, k), append(values, v)
		if !p.acceptPunct(",") {
			return keys, values, p.expectPunct("}")
		}
	}
}

// scalarTypes maps native type names to kinds.
var scalarTypes = map[string]cqltype.Kind{
	"ascii": cqltype.Ascii, "bigint": cqltype.Bigint, "blob": cqltype.Blob,
	"boolean": cqltype.Boolean, "counter": cqltype.Counter, "decimal": cqltype.Decimal,
	"double": cqltype.Double, "duration": cqltype.Duration, "float": cqltype.Float,
	"inet": cqltype.Inet, "int": cqltype.Int, "smallint": cqltype.Smallint,
	"text": cqltype.Varchar, "varchar": cqltype.Varchar, "timestamp": cqltype.Timestamp,
	"tinyint": cqltype.Tinyint, "uuid": cqltype.UUID, "varint": cqltype.Varint,
	"timeuuid": cqltype.Timeuuid, "date": cqltype.Date, "time": cqltype.Time,
}

// reservedTypeNames cannot name user types (Cassandra's
// Parser.reservedTypeNames; "date" is a native type anyway).
var reservedTypeNames = map[string]bool{
	"byte": true, "complex": true, "enum": true, "date": true, "interval": true,
	"macaddr": true, "bitstring": true,
}

// cqlType parses a CQL type: a native type, list/set/map/tuple<...>,
// frozen<...>, a 'custom.Class' string, or a [ks.]user_type name (a
// cqltype.UDT with only Keyspace and Name set). Like Cassandra, frozen<>
// freezes everything nested in it, tuple elements are frozen, and frozen<>
// of a scalar is a syntax error. Non-frozen collections nested in
// collections are accepted here; the executor rejects them.
func (p *parser) cqlType() (cqltype.Type, error) {
	if err := p.enter(); err != nil {
		return cqltype.Type{}, err
	}
	defer p.leave()
	t := p.peek()
	switch {
	case t.kind == tString:
		p.pos++
		return cqltype.Type{Kind: cqltype.Custom, Custom: t.text}, nil
	case t.kind == tIdent:
		if k, ok := scalarTypes[t.text]; ok {
			p.pos++
			return cqltype.Scalar(k), nil
		}
		// Like Cassandra, list/map/tuple/frozen not followed by '<' name a
		// user type ("set" is reserved, so it is always the collection).
		switch name := t.text; {
		case name == "set" || (name == "list" || name == "frozen") && isPunctTok(p.peekN(1), "<"):
			p.pos++
			elems, err := p.typeArgs(1, 1)
			if err != nil {
				return cqltype.Type{}, err
			}
			switch t.text {
			case "list":
				return cqltype.ListOf(elems[0]), nil
			case "set":
				return cqltype.SetOf(elems[0]), nil
			}
			if !canFreeze(elems[0]) {
				return cqltype.Type{}, p.errAt(t, "frozen<> is only allowed on collections, tuples, and user-defined types")
			}
			return freeze(elems[0]), nil
		case name == "map" && isPunctTok(p.peekN(1), "<"):
			p.pos++
			elems, err := p.typeArgs(2, 2)
			if err != nil {
				return cqltype.Type{}, err
			}
			return cqltype.MapOf(elems[0], elems[1]), nil
		case name == "tuple" && isPunctTok(p.peekN(1), "<"):
			p.pos++
			elems, err := p.typeArgs(1, -1)
			if err != nil {
				return cqltype.Type{}, err
			}
			for i := range elems {
				elems[i] = freeze(elems[i])
			}
			return cqltype.TupleOf(elems...), nil
		}
	}
	if !p.isIdent() {
		return cqltype.Type{}, p.noViable()
	}
	name, err := p.userTypeName()
	if err != nil {
		return cqltype.Type{}, err
	}
	return cqltype.Type{Kind: cqltype.UDT, Keyspace: name.Keyspace, Name: name.Name}, nil
}

// userTypeName parses the [ks.]name of CREATE/DROP TYPE. Unquoted native
// type names and Cassandra's reserved type names cannot name a user type.
func (p *parser) userTypeName() (TableName, error) {
	name, err := p.qualifiedName("type")
	if err != nil {
		return name, err
	}
	if last := p.toks[p.pos-1]; last.kind == tIdent {
		if _, native := scalarTypes[name.Name]; native || reservedTypeNames[name.Name] {
			return name, p.errAt(last, "Invalid (reserved) user type name %s", name.Name)
		}
	}
	return name, nil
}

// typeArgs parses "<t, ...>" with between min and max (-1: any) types.
func (p *parser) typeArgs(min, max int) ([]cqltype.Type, error) {
	if err := p.expectPunct("<"); err != nil {
		return nil, err
	}
	var out []cqltype.Type
	for {
		t, err := p.cqlType()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		if max >= 0 && len(out) == max {
			break
		}
		if len(out) >= min && !p.isPunct(",") {
			break
		}
		if err := p.expectPunct(","); err != nil {
			return nil, err
		}
	}
	return out, p.expectPunct(">")
}

func canFreeze(t cqltype.Type) bool {
	switch t.Kind {
	case cqltype.List, cqltype.Set, cqltype.Map, cqltype.Tuple, cqltype.UDT:
		return true
	}
	return false
}

// freeze marks t and every collection, tuple and UDT nested in it frozen,
// as Cassandra's frozen<> does (and as it does for the elements of a
// tuple). Scalars are returned unchanged.
func freeze(t cqltype.Type) cqltype.Type {
	if !canFreeze(t) {
		return t
	}
	t.Frozen = true
	for i := range t.Elems {
		t.Elems[i] = freeze(t.Elems[i])
	}
	return t
}
