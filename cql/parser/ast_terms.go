package parser

import "github.com/cosmosd/cosmosd/cqltype"

// TableName is a possibly keyspace-qualified name of a table; the parser also
// uses it for other schema objects that live in a keyspace (indexes, types).
// Unquoted names are lower-cased, quoted names keep their case.
type TableName struct {
	// Keyspace is "" when the name is unqualified.
	Keyspace string
	Name     string
}

// String returns "ks.name" or "name". It does not quote.
func (t TableName) String() string {
	if t.Keyspace == "" {
		return t.Name
	}
	return t.Keyspace + "." + t.Name
}

// Term is a value in a statement: a literal, a bind marker, a collection or
// tuple literal, a function call or a type cast. Implementations are the
// pointer types *Literal, *BindMarker, *ListLit, *SetLit, *MapLit, *TupleLit,
// *UDTLit, *FuncCall, *Cast and *InList.
type Term interface{ term() }

// LitKind says which kind of constant a Literal is.
type LitKind uint8

// Kinds of literals.
const (
	LitString   LitKind = iota // 'text' or $$text$$
	LitInteger                 // 42, -7
	LitFloat                   // 1.5, -2e10, NaN, Infinity, -Infinity
	LitBoolean                 // true, false
	LitUUID                    // 8-4-4-4-12 hex digits, unquoted
	LitBlob                    // 0xCAFE
	LitDuration                // 1h30m, -3d, P1DT2H, P0001-02-03T04:05:06
	LitNull                    // null
)

var litKindNames = [...]string{"string", "integer", "float", "boolean", "uuid", "blob", "duration", "null"}

func (k LitKind) String() string { return enumName(litKindNames[:], k, "unknown") }

// enumName returns names[v], or unknown when v is past the end of names.
func enumName[E ~uint8](names []string, v E, unknown string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return unknown
}

// Literal is a constant. Text is the unescaped content of a string; for
// numbers and durations the text as written, with a leading '-' folded in
// for negative values; "NaN", "Infinity" or "-Infinity" for those floats;
// "true"/"false" for booleans (lower-cased); the UUID as written; the blob
// as written including "0x" (its digit count is not checked here); "" for
// null.
type Literal struct {
	Kind LitKind
	Text string
}

// BindMarker is a '?' or ':name' placeholder.
type BindMarker struct {
	// Index is the 0-based position of the marker among all bind markers of
	// the statement in textual order (across the whole text of a BATCH). It
	// is the index of the value in an EXECUTE or QUERY with values.
	Index int
	// Name is the name of a ':name' marker ("" for '?'); lower-cased unless
	// quoted (:"Name").
	Name string
}

// ListLit is a list literal [a, b].
type ListLit struct{ Elems []Term }

// SetLit is a set literal {a, b}. The empty braces {} are ambiguous between
// an empty set and an empty map; the parser always produces a SetLit with
// nil Elems for them and the executor decides by the receiver's type.
type SetLit struct{ Elems []Term }

// MapLit is a map literal {k: v, ...}; Keys and Values have equal length.
type MapLit struct{ Keys, Values []Term }

// TupleLit is a tuple literal (a, b), used where a tuple is expected (tuple
// columns, multi-column relations).
type TupleLit struct{ Elems []Term }

// UDTLit is a user-defined-type literal {field: value, ...}: a brace literal
// whose first key is a bare identifier. Fields and Values have equal length.
type UDTLit struct {
	Fields []string
	Values []Term
}

// FuncCall is a function call in a value position, e.g. now(),
// toTimestamp(now()), minTimeuuid('2013-02-02'), token(1, 2). Name is
// lower-cased unless quoted, and keyspace-qualified as "ks.fn" when written
// so.
type FuncCall struct {
	Name string
	Args []Term
}

// Cast is a type hint "(type) term", e.g. (int)? or (bigint)1.
type Cast struct {
	Term Term
	Type cqltype.Type
}

// InList is the parenthesised value list of an IN relation or condition,
// e.g. IN (1, 2, ?) or, for multi-column relations, IN ((1, 2), (3, 4)).
// "IN ?" is represented by a bare *BindMarker instead.
type InList struct{ Elems []Term }

func (*Literal) term()    {}
func (*BindMarker) term() {}
func (*ListLit) term()    {}
func (*SetLit) term()     {}
func (*MapLit) term()     {}
func (*TupleLit) term()   {}
func (*UDTLit) term()     {}
func (*FuncCall) term()   {}
func (*Cast) term()       {}
func (*InList) term()     {}

// Selector is one item of a SELECT clause.
type Selector struct {
	Expr SelectorExpr
	// Alias is the name given with AS, or "".
	Alias string
}

// SelectorExpr is what a selector computes. Implementations are *ColumnSel,
// *CountStar, *FuncSel, *CastSel, *FieldSel and *TermSel.
type SelectorExpr interface{ selectorExpr() }

// ColumnSel selects a column.
type ColumnSel struct{ Name string }

// CountStar is COUNT(*) or COUNT(1): the number of rows.
type CountStar struct{}

// FuncSel applies a function: token(a, b), writetime(c), ttl(c), count(c),
// min/max/sum/avg(c), blobAsText(c), toTimestamp(c), ... Name is
// lower-cased unless quoted ("ks.fn" when qualified). The parser does not
// check names or arity.
type FuncSel struct {
	Name string
	Args []SelectorExpr
}

// CastSel is CAST(arg AS type).
type CastSel struct {
	Arg  SelectorExpr
	Type cqltype.Type
}

// FieldSel selects a field of a UDT value: col.field.
type FieldSel struct {
	Arg   SelectorExpr
	Field string
}

// TermSel is a constant, bind marker or type-hinted term used as a
// selector, e.g. SELECT 1, (int)? FROM t.
type TermSel struct{ Term Term }

func (*ColumnSel) selectorExpr() {}
func (*CountStar) selectorExpr() {}
func (*FuncSel) selectorExpr()   {}
func (*CastSel) selectorExpr()   {}
func (*FieldSel) selectorExpr()  {}
func (*TermSel) selectorExpr()   {}

// RelKind says what the left-hand side of a Relation is.
type RelKind uint8

// Kinds of relations.
const (
	RelColumn   RelKind = iota // col op term
	RelTuple                   // (c1, c2) op (v1, v2) | ? ; (c1, c2) IN (...) | ?
	RelToken                   // token(c1, c2) op term
	RelMapEntry                // col[key] op term
)

// Operator is a comparison in a relation or condition.
type Operator uint8

// Operators.
const (
	OpEq          Operator = iota // =
	OpNeq                         // !=
	OpLt                          // <
	OpLte                         // <=
	OpGt                          // >
	OpGte                         // >=
	OpIn                          // IN
	OpContains                    // CONTAINS
	OpContainsKey                 // CONTAINS KEY
	OpIsNotNull                   // IS NOT NULL (materialized views)
)

var opNames = [...]string{"=", "!=", "<", "<=", ">", ">=", "IN", "CONTAINS", "CONTAINS KEY", "IS NOT"}

// String returns the operator as written in CQL.
func (o Operator) String() string { return enumName(opNames[:], o, "?op") }

// Relation is one restriction of a WHERE clause.
type Relation struct {
	Kind RelKind
	// Column is the restricted column for RelColumn and RelMapEntry.
	Column string
	// Columns are the columns of a RelTuple, or the arguments of token() for
	// a RelToken.
	Columns []string
	Op      Operator
	// Value is the right-hand side: a Term; for OpIn an *InList or a single
	// *BindMarker (IN ?); for a RelTuple with a comparison a *TupleLit or a
	// *BindMarker; nil for OpIsNotNull.
	Value Term
	// MapKey is the key of a RelMapEntry (m['k'] = v).
	MapKey Term
}

// Ordering is one column of ORDER BY or CLUSTERING ORDER BY.
type Ordering struct {
	Column string
	Desc   bool
}

// Using holds the USING TTL / TIMESTAMP attributes of a modification or
// batch; each is nil when absent, else a *Literal (integer) or *BindMarker.
type Using struct {
	TTL       Term
	Timestamp Term
}

// AssignOp is the kind of an UPDATE assignment.
type AssignOp uint8

// Assignment operations.
const (
	AssignSet     AssignOp = iota // c = v, c[k] = v, c.f = v
	AssignAdd                     // c = c + v, c += v (collections, counters)
	AssignSub                     // c = c - v, c -= v
	AssignPrepend                 // c = v + c (lists)
)

// Assignment is one item of UPDATE ... SET.
type Assignment struct {
	Column string
	// Key is the element key or index of "c[key] = v", else nil.
	Key Term
	// Field is the UDT field of "c.field = v", else "".
	Field string
	Op    AssignOp
	Value Term
}

// Condition is one IF condition of a lightweight transaction.
type Condition struct {
	Column string
	// Key is the element key or index of "c[key] op v", else nil.
	Key Term
	// Field is the UDT field of "c.field op v", else "".
	Field string
	Op    Operator
	// Value is the compared term; for OpIn an *InList or a *BindMarker.
	Value Term
}

// DeleteTarget is one item deleted by DELETE: a whole column, an element
// c[key] or a UDT field c.field.
type DeleteTarget struct {
	Column string
	Key    Term
	Field  string
}

// Options are the "name = value AND ..." properties of DDL statements, in
// the order written. Names are lower-cased unless quoted; a name appears at
// most once.
type Options []Option

// Option is one DDL property.
type Option struct {
	Name  string
	Value OptionValue
}

// OptionKind says what an OptionValue holds.
type OptionKind uint8

// Kinds of option values.
const (
	OptString  OptionKind = iota // 'text'
	OptNumber                    // an integer or float, Text as written
	OptBoolean                   // true / false
	OptIdent                     // a bare identifier, lower-cased
	OptMap                       // {'k': 'v', 'n': 3}
)

// OptionValue is the value of an Option. For OptMap, Map holds the entries
// in the order written (keys unique, values constants, never maps);
// otherwise Text holds the value.
type OptionValue struct {
	Kind OptionKind
	Text string
	Map  []OptionEntry
}

// OptionEntry is one entry of a map-valued option. Key is the text of the
// constant key (string content, or a number as written).
type OptionEntry struct {
	Key   string
	Value OptionValue
}

// Get returns the option called name.
func (o Options) Get(name string) (OptionValue, bool) {
	for _, opt := range o {
		if opt.Name == name {
			return opt.Value, true
		}
	}
	return OptionValue{}, false
}

// Get returns the entry of a map-valued option with the given key.
func (v OptionValue) Get(key string) (OptionValue, bool) {
	for _, e := range v.Map {
		if e.Key == key {
			return e.Value, true
		}
	}
	return OptionValue{}, false
}
