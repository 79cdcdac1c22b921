package exec

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/storage"
)

// qrow is one result row before projection: key values and cells.
type qrow struct {
	token  int64
	pk     [][]byte
	ck     [][]byte // nil for a partition with only static data
	row    *storage.Row
	static *storage.Row
	// virtual rows carry values by column name.
	virtual map[string][]byte
	now     int64 // seconds, for ttl()
	// at is the executor's clock when the row was read, for now() and
	// the other time functions of SELECT (zero: the wall clock).
	at time.Time
	// size is the stored size of the row (key and value), what holding
	// it in memory costs; 0 for virtual rows.
	size int
}

// cell returns the cell of column c, or nil.
func (r *qrow) cell(c *schema.Column) *storage.Cell {
	switch c.Kind {
	case schema.Static:
		if r.static != nil {
			return r.static.Cell(c.ID)
		}
	case schema.Regular:
		if r.row != nil {
			return r.row.Cell(c.ID)
		}
	}
	return nil
}

// value returns the value of column c (nil = null).
func (r *qrow) value(c *schema.Column) []byte {
	if r.virtual != nil {
		return r.virtual[c.Name]
	}
	switch c.Kind {
	case schema.PartitionKey:
		if c.Position < len(r.pk) {
			return r.pk[c.Position]
		}
		return nil
	case schema.Clustering:
		if c.Position < len(r.ck) {
			return r.ck[c.Position]
		}
		return nil
	}
	if cell := r.cell(c); cell != nil {
		return cell.Value
	}
	return nil
}

// selector computes one output column from rows.
type selector interface {
	spec() ColumnSpec
	// add feeds a row; aggregates accumulate, others remember the first.
	add(r *qrow) error
	// result returns the value for the rows fed since the last reset.
	result() []byte
	reset()
	aggregate() bool
}

// selection is the projection of a SELECT.
type selection struct {
	sels      []selector
	aggregate bool
	// columns read by the selectors, to know whether statics are needed.
	usesStatic bool
	// json is set for SELECT JSON: sels is then one *jsonRowSel.
	json bool
}

func (s *selection) specs() []ColumnSpec {
	out := make([]ColumnSpec, len(s.sels))
	for i, sel := range s.sels {
		out[i] = sel.spec()
	}
	return out
}

// project computes one output row from one input row (non-aggregates).
func (s *selection) project(r *qrow) ([][]byte, error) {
	out := make([][]byte, len(s.sels))
	for i, sel := range s.sels {
		sel.reset()
		if err := sel.add(r); err != nil {
			return nil, err
		}
		out[i] = sel.result()
	}
	return out, nil
}

// buildSelection resolves the selectors of a SELECT.
func buildSelection(t *schema.Table, s *parser.SelectStmt, distinct bool) (*selection, error) {
	sel, err := buildSelectors(t, s, distinct)
	if err != nil || !s.Json {
		return sel, err
	}
	// SELECT JSON: one "[json]" text column holding an object of what
	// the selectors compute, aggregates included.
	row := newJSONRowSel(t, sel.sels)
	sel.sels = []selector{row}
	sel.json = true
	return sel, nil
}

func buildSelectors(t *schema.Table, s *parser.SelectStmt, distinct bool) (*selection, error) {
	sel := &selection{}
	if s.Star {
		for _, c := range selectOrder(t) {
			if distinct && c.Kind != schema.PartitionKey && c.Kind != schema.Static {
				continue
			}
			sel.sels = append(sel.sels, &columnSel{t: t, c: c, name: c.Name})
			sel.usesStatic = sel.usesStatic || c.Kind == schema.Static
		}
		return sel, nil
	}
	for _, item := range s.Selectors {
		x, err := buildSelector(t, item.Expr, &sel.usesStatic)
		if err != nil {
			return nil, err
		}
		if item.Alias != "" {
			x = &aliasSel{selector: x, alias: item.Alias}
		}
		if distinct {
			if cs, ok := unalias(x).(*columnSel); !ok || (cs.c.Kind != schema.PartitionKey && cs.c.Kind != schema.Static) {
				return nil, Invalid("SELECT DISTINCT queries must only request partition key columns and/or static columns (not %s)", x.spec().Name)
			}
		}
		sel.aggregate = sel.aggregate || x.aggregate()
		sel.sels = append(sel.sels, x)
	}
	return sel, nil
}

// missingPartitionKey returns the first partition-key column the
// selection does not name, or "".
func (s *selection) missingPartitionKey(t *schema.Table) string {
	sels := s.sels
	if s.json {
		sels = s.sels[0].(*jsonRowSel).sels
	}
	for _, c := range t.PartitionKey() {
		found := false
		for _, x := range sels {
			if cs, ok := unalias(x).(*columnSel); ok && cs.c.Name == c.Name {
				found = true
			}
		}
		if !found {
			return c.Name
		}
	}
	return ""
}

// selectOrder is the column order of SELECT * (and of the row a failed
// IF NOT EXISTS returns), as in Cassandra: partition key, clustering
// columns, then static columns and then regular columns, each by name.
func selectOrder(t *schema.Table) []*schema.Column {
	out := make([]*schema.Column, 0, len(t.Columns))
	for _, pass := range []func(*schema.Column) bool{
		func(c *schema.Column) bool { return c.IsPrimaryKey() },
		func(c *schema.Column) bool { return c.Kind == schema.Static },
		func(c *schema.Column) bool { return !c.IsPrimaryKey() && c.Kind != schema.Static },
	} {
		for i := range t.Columns {
			if pass(&t.Columns[i]) {
				out = append(out, &t.Columns[i])
			}
		}
	}
	return out
}

func unalias(s selector) selector {
	if a, ok := s.(*aliasSel); ok {
		return a.selector
	}
	return s
}

func buildSelector(t *schema.Table, e parser.SelectorExpr, usesStatic *bool) (selector, error) {
	spec := func(name string, typ cqltype.Type) ColumnSpec {
		return ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: name, Type: typ}
	}
	switch e := e.(type) {
	case *parser.ColumnSel:
		c := t.Column(e.Name)
		if c == nil {
			return nil, Invalid("Undefined column name %s", e.Name)
		}
		*usesStatic = *usesStatic || c.Kind == schema.Static
		return &columnSel{t: t, c: c, name: c.Name}, nil
	case *parser.CountStar:
		return &countSel{sp: spec("count", cqltype.Scalar(cqltype.Bigint))}, nil
	case *parser.CastSel:
		arg, err := buildSelector(t, e.Arg, usesStatic)
		if err != nil {
			return nil, err
		}
		return newCast(arg, e.Type, spec(fmt.Sprintf("cast(%s as %s)", arg.spec().Name, castTypeName(e.Type)), e.Type))
	case *parser.FieldSel:
		return nil, Invalid("Invalid field selection: user-defined types are not supported")
	case *parser.TermSel:
		return nil, Invalid("Literal values are not supported as selectors")
	case *parser.FuncSel:
		name := strings.ToLower(e.Name)
		name = strings.TrimPrefix(name, "system.")
		args := make([]selector, len(e.Args))
		for i, a := range e.Args {
			var err error
			if args[i], err = buildSelector(t, a, usesStatic); err != nil {
				return nil, err
			}
		}
		argNames := make([]string, len(args))
		for i, a := range args {
			argNames[i] = a.spec().Name
		}
		// Result column names follow Cassandra 3.x: native functions are
		// shown qualified by their keyspace (system.max(v)); writetime
		// and ttl are not functions there and stay unqualified.
		display := "system." + name + "(" + strings.Join(argNames, ", ") + ")"
		one := func() (selector, error) {
			if len(args) != 1 {
				return nil, Invalid("Invalid number of arguments in call to function system.%s: 1 required but %d provided", name, len(args))
			}
			return args[0], nil
		}
		if k, ok := nowFunctions[name]; ok {
			if len(args) != 0 {
				return nil, Invalid("Invalid number of arguments in call to function system.%s: 0 required but %d provided", name, len(args))
			}
			return &nowSel{fn: name, sp: spec(display, cqltype.Scalar(k))}, nil
		}
		switch name {
		case "mintimeuuid", "maxtimeuuid":
			a, err := one()
			if err != nil {
				return nil, err
			}
			if a.spec().Type.Kind != cqltype.Timestamp {
				return nil, Invalid("Type error: %s cannot be passed as argument 0 of function system.%s of type timestamp", argNames[0], name)
			}
			return &boundUUIDSel{arg: a, maxUUID: name == "maxtimeuuid", sp: spec(display, cqltype.Scalar(cqltype.Timeuuid))}, nil
		case "tojson":
			a, err := one()
			if err != nil {
				return nil, err
			}
			return &toJSONSel{arg: a, sp: spec(display, cqltype.Scalar(cqltype.Varchar))}, nil
		case "fromjson":
			return nil, Invalid("fromJson() cannot be used in the selection clause of a SELECT statement")
		case "token":
			pk := t.PartitionKey()
			if len(args) != len(pk) {
				return nil, Invalid("Invalid number of arguments in call to function system.token: %d required but %d provided", len(pk), len(args))
			}
			for i, a := range args {
				cs, ok := a.(*columnSel)
				if !ok || cs.c.Name != pk[i].Name {
					return nil, Invalid("Type error: %s cannot be passed as argument %d of function system.token of type %s", argNames[i], i, pk[i].Type)
				}
			}
			return &tokenSel{sp: spec("system.token("+strings.Join(argNames, ", ")+")", cqltype.Scalar(cqltype.Bigint))}, nil
		case "writetime", "ttl":
			a, err := one()
			if err != nil {
				return nil, err
			}
			cs, ok := a.(*columnSel)
			if !ok {
				return nil, Invalid("Invalid argument to %s: a column name is required", name)
			}
			if cs.c.IsPrimaryKey() {
				return nil, Invalid("Cannot use selection function %s on PRIMARY KEY part %s", name, cs.c.Name)
			}
			if cs.c.Type.IsMultiCell() {
				return nil, Invalid("Cannot use selection function %s on non-frozen collection %s", name, cs.c.Name)
			}
			typ := cqltype.Scalar(cqltype.Bigint)
			if name == "ttl" {
				typ = cqltype.Scalar(cqltype.Int)
			}
			return &metaSel{c: cs.c, ttl: name == "ttl", sp: spec(strings.TrimPrefix(display, "system."), typ)}, nil
		case "count":
			a, err := one()
			if err != nil {
				return nil, err
			}
			return &countSel{arg: a, sp: spec(display, cqltype.Scalar(cqltype.Bigint))}, nil
		case "min", "max", "sum", "avg":
			a, err := one()
			if err != nil {
				return nil, err
			}
			typ := a.spec().Type
			if (name == "sum" || name == "avg") && !isNumeric(typ) {
				return nil, Invalid("Invalid call to function %s, none of its type signatures match (argument of type %s)", name, typ)
			}
			return &aggSel{fn: name, arg: a, typ: typ, sp: spec(display, typ)}, nil
		case "totimestamp", "dateof", "todate", "tounixtimestamp", "unixtimestampof":
			a, err := one()
			if err != nil {
				return nil, err
			}
			out := map[string]cqltype.Kind{"totimestamp": cqltype.Timestamp, "dateof": cqltype.Timestamp, "todate": cqltype.Date,
				"tounixtimestamp": cqltype.Bigint, "unixtimestampof": cqltype.Bigint}[name]
			if !timeFnAccepts(name, a.spec().Type.Kind) {
				return nil, Invalid("Type error: %s cannot be passed as argument 0 of function system.%s of type %s", argNames[0], name, timeFnArgType(name))
			}
			return &timeFnSel{arg: a, out: out, sp: spec(display, cqltype.Scalar(out))}, nil
		}
		if strings.HasSuffix(name, "asblob") || strings.HasPrefix(name, "blobas") {
			a, err := one()
			if err != nil {
				return nil, err
			}
			var out cqltype.Type
			if strings.HasSuffix(name, "asblob") {
				out = cqltype.Scalar(cqltype.Blob)
				in, err := cqltype.Parse(strings.TrimSuffix(name, "asblob"))
				if err != nil || in.IsCollection() || in.Kind == cqltype.Tuple || in.Kind == cqltype.Custom {
					return nil, Invalid("Unknown function '%s'", e.Name)
				}
				if at := a.spec().Type; !at.Equal(in) && !(isTextual(at) && isTextual(in)) {
					return nil, Invalid("Type error: %s cannot be passed as argument 0 of function system.%s of type %s", argNames[0], name, in)
				}
			} else {
				if out, err = cqltype.Parse(strings.TrimPrefix(name, "blobas")); err != nil || out.IsCollection() || out.Kind == cqltype.Tuple || out.Kind == cqltype.Custom {
					return nil, Invalid("Unknown function '%s'", e.Name)
				}
				if a.spec().Type.Kind != cqltype.Blob {
					return nil, Invalid("Type error: %s cannot be passed as argument 0 of function system.%s of type blob", argNames[0], name)
				}
			}
			return &castSel{arg: a, to: out, sp: spec(display, out), raw: true}, nil
		}
		return nil, Invalid("Unknown function '%s'", e.Name)
	}
	return nil, Invalid("unsupported selector %T", e)
}

func isNumeric(t cqltype.Type) bool {
	switch t.Kind {
	case cqltype.Int, cqltype.Bigint, cqltype.Smallint, cqltype.Tinyint, cqltype.Varint, cqltype.Decimal,
		cqltype.Float, cqltype.Double, cqltype.Counter:
		return true
	}
	return false
}

type columnSel struct {
	t    *schema.Table
	c    *schema.Column
	name string
	v    []byte
	// set: v holds the first row's value, null included; in an
	// aggregate or a group a column is the first row's, as Cassandra's
	// SimpleSelector, not the first non-null one.
	set bool
}

func (s *columnSel) spec() ColumnSpec {
	return ColumnSpec{Keyspace: s.t.Keyspace, Table: s.t.Name, Name: s.name, Type: s.c.Type}
}
func (s *columnSel) add(r *qrow) error {
	if !s.set {
		s.v, s.set = r.value(s.c), true
	}
	return nil
}
func (s *columnSel) result() []byte  { return s.v }
func (s *columnSel) reset()          { s.v, s.set = nil, false }
func (s *columnSel) aggregate() bool { return false }

type aliasSel struct {
	selector
	alias string
}

func (s *aliasSel) spec() ColumnSpec {
	sp := s.selector.spec()
	sp.Name = s.alias
	return sp
}

type tokenSel struct {
	sp ColumnSpec
	v  []byte
}

func (s *tokenSel) spec() ColumnSpec { return s.sp }
func (s *tokenSel) add(r *qrow) error {
	if s.v == nil {
		s.v = binary.BigEndian.AppendUint64(nil, uint64(r.token))
	}
	return nil
}
func (s *tokenSel) result() []byte  { return s.v }
func (s *tokenSel) reset()          { s.v = nil }
func (s *tokenSel) aggregate() bool { return false }

type metaSel struct {
	c   *schema.Column
	ttl bool
	sp  ColumnSpec
	v   []byte
	set bool
}

func (s *metaSel) spec() ColumnSpec { return s.sp }
func (s *metaSel) add(r *qrow) error {
	if s.set {
		return nil
	}
	s.set = true
	cell := r.cell(s.c)
	if cell == nil {
		return nil
	}
	if s.ttl {
		if cell.Expiry == 0 {
			return nil
		}
		s.v = binary.BigEndian.AppendUint32(nil, uint32(max(0, cell.Expiry-r.now)))
		return nil
	}
	s.v = binary.BigEndian.AppendUint64(nil, uint64(cell.Timestamp))
	return nil
}
func (s *metaSel) result() []byte  { return s.v }
func (s *metaSel) reset()          { s.v, s.set = nil, false }
func (s *metaSel) aggregate() bool { return false }

// timeFnSel converts a timeuuid, timestamp or date column.
type timeFnSel struct {
	arg selector
	out cqltype.Kind
	sp  ColumnSpec
	v   []byte
}

func (s *timeFnSel) spec() ColumnSpec { return s.sp }
func (s *timeFnSel) aggregate() bool  { return false }
func (s *timeFnSel) reset()           { s.v = nil; s.arg.reset() }
func (s *timeFnSel) result() []byte   { return s.v }
func (s *timeFnSel) add(r *qrow) error {
	if err := s.arg.add(r); err != nil {
		return err
	}
	v := s.arg.result()
	if len(v) == 0 {
		return nil // null, or an empty value: no time
	}
	var ms int64
	switch s.arg.spec().Type.Kind {
	case cqltype.Timeuuid:
		ts, err := TimeUUIDTime(v)
		if err != nil {
			return Invalid("%v", err)
		}
		ms = (ts - uuidEpochOffset) / 10_000
	case cqltype.Timestamp:
		ms = int64(binary.BigEndian.Uint64(v))
	case cqltype.Date:
		ms = (int64(binary.BigEndian.Uint32(v)) - (1 << 31)) * 86_400_000
	default:
		return Invalid("Type error: %s cannot be converted by %s", s.arg.spec().Name, s.sp.Name)
	}
	switch s.out {
	case cqltype.Date:
		s.v = dateOfMillis(ms)
	default:
		s.v = binary.BigEndian.AppendUint64(nil, uint64(ms))
	}
	return nil
}

// castSel converts between types (CAST, typeAsBlob, blobAsType).
type castSel struct {
	arg selector
	to  cqltype.Type
	sp  ColumnSpec
	raw bool // blob conversions keep the bytes
	v   []byte
}

func newCast(arg selector, to cqltype.Type, sp ColumnSpec) (selector, error) {
	from := arg.spec().Type
	if !castable(from, to) {
		return nil, Invalid("%s cannot be cast to %s", arg.spec().Name, to)
	}
	return &castSel{arg: arg, to: to, sp: sp}, nil
}

func (s *castSel) spec() ColumnSpec { return s.sp }
func (s *castSel) aggregate() bool  { return false }
func (s *castSel) reset()           { s.v = nil; s.arg.reset() }
func (s *castSel) result() []byte   { return s.v }
func (s *castSel) add(r *qrow) error {
	if err := s.arg.add(r); err != nil {
		return err
	}
	v := s.arg.result()
	if v == nil {
		return nil
	}
	if s.raw {
		if err := cqltype.Validate(s.to, v); err != nil {
			return Invalid("In call to function %s, value 0x%x is not a valid binary representation for type %s", s.sp.Name, v, s.to)
		}
		s.v = v
		return nil
	}
	from := s.arg.spec().Type
	switch {
	case from.Equal(s.to):
		s.v = v
	case s.to.Kind == cqltype.Varchar || s.to.Kind == cqltype.Ascii:
		s.v = castText(from, v)
	case len(v) == 0:
		// An empty value has no number or time to convert.
		s.v = nil
	case s.to.Kind == cqltype.Date || s.to.Kind == cqltype.Timestamp:
		ms, err := timeMillis(from.Kind, v)
		if err != nil {
			return err
		}
		if s.to.Kind == cqltype.Date {
			s.v = dateOfMillis(ms)
		} else {
			s.v = binary.BigEndian.AppendUint64(nil, uint64(ms))
		}
	default:
		b, err := castNumber(from, s.to, v)
		if err != nil {
			return Invalid("Cannot cast %s value %s to %s: %v", from, cqltype.Format(from, v), s.to, err)
		}
		s.v = b
	}
	return nil
}

// castTypeName is how a CAST's type appears in its result column name:
// Cassandra 3.11 writes the CQL type in lower case, text as "text".
func castTypeName(t cqltype.Type) string { return strings.ToLower(t.String()) }

// timeFnAccepts reports whether the time conversion fn takes an argument
// of kind k (Cassandra 3.11 TimeFcts overloads).
func timeFnAccepts(fn string, k cqltype.Kind) bool {
	switch fn {
	case "dateof", "unixtimestampof":
		return k == cqltype.Timeuuid
	case "totimestamp":
		return k == cqltype.Timeuuid || k == cqltype.Date
	case "todate":
		return k == cqltype.Timeuuid || k == cqltype.Timestamp
	}
	return k == cqltype.Timeuuid || k == cqltype.Timestamp || k == cqltype.Date
}

func timeFnArgType(fn string) string {
	switch fn {
	case "totimestamp":
		return "date"
	case "todate":
		return "timestamp"
	}
	return "timeuuid"
}

// timeMillis reads a timeuuid, timestamp or date as milliseconds since
// the epoch.
func timeMillis(k cqltype.Kind, v []byte) (int64, error) {
	switch k {
	case cqltype.Timeuuid:
		ts, err := TimeUUIDTime(v)
		if err != nil {
			return 0, Invalid("%v", err)
		}
		return (ts - uuidEpochOffset) / 10_000, nil
	case cqltype.Timestamp:
		if len(v) == 8 {
			return int64(binary.BigEndian.Uint64(v)), nil
		}
	case cqltype.Date:
		if len(v) == 4 {
			return (int64(binary.BigEndian.Uint32(v)) - (1 << 31)) * 86_400_000, nil
		}
	}
	return 0, Invalid("Invalid %s value 0x%x", cqltype.Scalar(k), v)
}
