package exec

import (
	"math"
	"sort"
	"strings"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/schema"
)

// colRestriction is one relation on one column, with its values bound.
type colRestriction struct {
	col    *schema.Column
	op     parser.Operator
	values [][]byte // EQ, slices, CONTAINS: one; IN: any number
	null   bool     // compared with null (never true)
	// mapKey restricts col[mapKey] (a map entry) instead of col.
	mapKey []byte
}

// tupleRestriction is a multi-column relation (c1, c2) op (v1, v2).
type tupleRestriction struct {
	cols   []*schema.Column
	op     parser.Operator
	tuples [][][]byte // EQ and slices: one tuple; IN: many
}

// tokenRestriction bounds token(pk...) to [lo, hi].
type restrictions struct {
	t      *schema.Table
	byCol  map[string][]*colRestriction
	order  []*colRestriction
	tuples []*tupleRestriction
	// prepare: values are not bound (PREPARE), so nothing is encoded.
	prepare bool
	// token restrictions, folded into an inclusive range.
	hasToken bool
	tokLo    int64
	tokHi    int64
	// limits bound the key combinations the IN restrictions may expand to.
	limits restrictionLimits
}

// restrictionLimits bound the cartesian products of IN restrictions: the
// partition keys a statement addresses (the product of the IN list sizes
// over the partition-key columns) and the clustering prefixes it reads or
// writes in each of them (the product over the clustering columns). Both
// are checked from the list sizes before any key is built: three IN lists
// of 120 values would otherwise build 1.7 million keys for one statement.
// Zero or negative means unlimited. ScyllaDB has the same two limits
// (max_partition_key_restrictions_per_query and
// max_clustering_key_restrictions_per_query, both 100 by default).
type restrictionLimits struct {
	partitionKeys int
	clustering    int
}

// Defaults of the restriction limits.
const (
	DefaultMaxPartitionKeyRestrictions  = 100
	DefaultMaxClusteringKeyRestrictions = 100
)

// product multiplies list sizes, saturating at math.MaxInt64 instead of
// overflowing.
func product(sizes ...int) int64 {
	p := int64(1)
	for _, n := range sizes {
		switch {
		case n == 0:
			return 0
		case p > math.MaxInt64/int64(n):
			p = math.MaxInt64
		default:
			p *= int64(n)
		}
	}
	return p
}

// checkProduct refuses a cartesian product of IN restrictions over limit.
func checkProduct(what string, p int64, limit int, key string) error {
	if limit <= 0 || p <= int64(limit) {
		return nil
	}
	size := itoa(p)
	if p == math.MaxInt64 {
		size = "more than " + size
	}
	return Invalid("%s cartesian product size %s is greater than the maximum of %d (%s): use fewer values in the IN restrictions, or run several queries", what, size, limit, key)
}

// analyzeWhere binds the relations of a WHERE clause.
func analyzeWhere(t *schema.Table, where []parser.Relation, b *binder) (*restrictions, error) {
	r := &restrictions{t: t, byCol: map[string][]*colRestriction{}, tokLo: minToken, tokHi: maxToken, prepare: b.prepare, limits: b.limits}
	spec := func(c *schema.Column, name string, typ cqltype.Type) ColumnSpec {
		if name == "" {
			name = c.Name
		}
		return ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: name, Type: typ}
	}
	for i := range where {
		rel := &where[i]
		switch rel.Kind {
		case parser.RelToken:
			if err := r.addToken(rel, b); err != nil {
				return nil, err
			}
		case parser.RelTuple:
			tr := &tupleRestriction{op: rel.Op}
			var types []cqltype.Type
			for _, name := range rel.Columns {
				c := t.Column(name)
				if c == nil {
					return nil, Invalid("Undefined column name %s", name)
				}
				if c.Kind != schema.Clustering {
					return nil, Invalid("Multi-column relations can only be applied to clustering columns but was applied to: %s", name)
				}
				tr.cols = append(tr.cols, c)
				types = append(types, c.Type)
			}
			for i, c := range tr.cols {
				if c.Position != tr.cols[0].Position+i {
					return nil, Invalid("Clustering columns must appear in the PRIMARY KEY order in multi-column relations: %s", tupleText(rel.Columns))
				}
			}
			tt := cqltype.TupleOf(types...)
			name := tupleText(rel.Columns)
			switch rel.Op {
			case parser.OpIn:
				var terms []parser.Term
				switch v := rel.Value.(type) {
				case *parser.InList:
					terms = v.Elems
				case *parser.BindMarker:
					bv, err := b.marker(v, spec(tr.cols[0], "in("+name+")", cqltype.ListOf(frozen(tt))))
					if err != nil {
						return nil, err
					}
					if !bv.null && !bv.unset {
						elems, err := cqltype.DecodeCollection(bv.b)
						if err != nil {
							return nil, Invalid("Invalid IN value for %s: %v", name, err)
						}
						for _, el := range elems {
							parts, err := cqltype.DecodeTuple(el, len(types))
							if err != nil {
								return nil, Invalid("Invalid tuple for %s: %v", name, err)
							}
							tr.tuples = append(tr.tuples, parts)
						}
					}
				default:
					return nil, Invalid("Invalid IN relation on %s", name)
				}
				for _, term := range terms {
					bv, err := b.term(term, spec(tr.cols[0], name, tt))
					if err != nil {
						return nil, err
					}
					if bv.null || bv.unset {
						continue
					}
					parts, err := cqltype.DecodeTuple(bv.b, len(types))
					if err != nil {
						return nil, Invalid("Invalid tuple for %s: %v", name, err)
					}
					tr.tuples = append(tr.tuples, parts)
				}
			case parser.OpEq, parser.OpLt, parser.OpLte, parser.OpGt, parser.OpGte:
				bv, err := b.term(rel.Value, spec(tr.cols[0], name, tt))
				if err != nil {
					return nil, err
				}
				if !b.prepare {
					if bv.null || bv.unset {
						return nil, Invalid("Invalid null value in condition for columns: %s", name)
					}
					parts, err := cqltype.DecodeTuple(bv.b, len(types))
					if err != nil {
						return nil, Invalid("Invalid tuple for %s: %v", name, err)
					}
					for i, p := range parts {
						if p == nil {
							return nil, Invalid("Invalid null value in condition for column %s", rel.Columns[i])
						}
					}
					tr.tuples = append(tr.tuples, parts)
				}
			default:
				return nil, Invalid("Unsupported operator %s on %s", rel.Op, name)
			}
			r.tuples = append(r.tuples, tr)
		case parser.RelColumn, parser.RelMapEntry:
			c := t.Column(rel.Column)
			if c == nil {
				return nil, Invalid("Undefined column name %s", rel.Column)
			}
			cr := &colRestriction{col: c, op: rel.Op}
			recv := c.Type
			switch rel.Op {
			case parser.OpContains:
				if !c.Type.IsCollection() {
					return nil, Invalid("Cannot use CONTAINS on non-collection column %s", c.Name)
				}
				recv = c.Type.Elems[len(c.Type.Elems)-1]
			case parser.OpContainsKey:
				if c.Type.Kind != cqltype.Map {
					return nil, Invalid("Cannot use CONTAINS KEY on non-map column %s", c.Name)
				}
				recv = c.Type.Elems[0]
			case parser.OpIsNotNull:
				return nil, Invalid("Unsupported restriction: %s IS NOT NULL", c.Name)
			}
			if rel.Kind == parser.RelMapEntry {
				if c.Type.Kind != cqltype.Map {
					return nil, Invalid("Column %s cannot be used as a map", c.Name)
				}
				kv, err := b.term(rel.MapKey, spec(c, "key("+c.Name+")", c.Type.Elems[0]))
				if err != nil {
					return nil, err
				}
				if !b.prepare && (kv.null || kv.unset) {
					return nil, Invalid("Invalid null map key for column %s", c.Name)
				}
				cr.mapKey = kv.b
				recv = c.Type.Elems[1]
			}
			if rel.Op == parser.OpIn {
				switch v := rel.Value.(type) {
				case *parser.InList:
					for _, term := range v.Elems {
						bv, err := b.term(term, spec(c, "", recv))
						if err != nil {
							return nil, err
						}
						if bv.unset {
							return nil, Invalid("Invalid unset value for column %s", c.Name)
						}
						if !bv.null {
							cr.values = append(cr.values, bv.b)
						}
					}
				case *parser.BindMarker:
					bv, err := b.marker(v, spec(c, "in("+c.Name+")", cqltype.ListOf(recv)))
					if err != nil {
						return nil, err
					}
					if !bv.null && !bv.unset {
						elems, err := cqltype.DecodeCollection(bv.b)
						if err != nil {
							return nil, Invalid("Invalid IN value for %s: %v", c.Name, err)
						}
						cr.values = elems
					} else if !b.prepare {
						return nil, Invalid("Invalid null value for IN restriction on %s", c.Name)
					}
				default:
					return nil, Invalid("Invalid IN relation on %s", c.Name)
				}
				cr.values = dedupeSorted(recv, cr.values)
			} else {
				bv, err := b.term(rel.Value, spec(c, "", recv))
				if err != nil {
					return nil, err
				}
				if bv.unset {
					return nil, Invalid("Invalid unset value for column %s", c.Name)
				}
				if bv.null && !b.prepare {
					return nil, Invalid("Invalid null value in condition for column %s", c.Name)
				}
				cr.values = [][]byte{bv.b}
				cr.null = bv.null
			}
			r.byCol[c.Name] = append(r.byCol[c.Name], cr)
			r.order = append(r.order, cr)
		default:
			return nil, Invalid("unsupported relation")
		}
	}
	for name, rs := range r.byCol {
		eq := 0
		for _, cr := range rs {
			if (cr.op == parser.OpEq || cr.op == parser.OpIn) && cr.mapKey == nil {
				eq++
			}
		}
		if eq > 0 && len(rs) > 1 {
			return nil, Invalid("%s cannot be restricted by more than one relation if it includes an Equal", name)
		}
		lower, upper := 0, 0
		for _, cr := range rs {
			switch {
			case cr.mapKey != nil || !isSlice(cr.op):
			case isLower(cr.op):
				lower++
			default:
				upper++
			}
		}
		if lower > 1 {
			return nil, Invalid("More than one restriction was found for the start bound on %s", name)
		}
		if upper > 1 {
			return nil, Invalid("More than one restriction was found for the end bound on %s", name)
		}
	}
	return r, nil
}

func frozen(t cqltype.Type) cqltype.Type { t.Frozen = true; return t }

func tupleText(cols []string) string { return "(" + strings.Join(cols, ", ") + ")" }

// dedupeSorted sorts values by the type's order and removes duplicates.
func dedupeSorted(t cqltype.Type, vals [][]byte) [][]byte {
	sort.SliceStable(vals, func(i, j int) bool { return cqltype.Compare(t, vals[i], vals[j]) < 0 })
	out := vals[:0]
	for i, v := range vals {
		if i == 0 || cqltype.Compare(t, v, out[len(out)-1]) != 0 {
			out = append(out, v)
		}
	}
	return out
}

const (
	minToken = -1 << 63
	maxToken = 1<<63 - 1
)

func (r *restrictions) addToken(rel *parser.Relation, b *binder) error {
	pk := r.t.PartitionKey()
	if len(rel.Columns) != len(pk) {
		return Invalid("The token() function must be applied to all partition key components or none of them")
	}
	for i, c := range pk {
		if rel.Columns[i] != c.Name {
			return Invalid("The token function arguments must be in the partition key order: %s", partitionKeyNames(r.t))
		}
	}
	var v int64
	if f, ok := rel.Value.(*parser.FuncCall); ok && strings.EqualFold(f.Name, "token") {
		// token(k) > token(value, ...): the token of a key given by value.
		if len(f.Args) != len(pk) {
			return Invalid("Invalid number of arguments in call to function system.token: %d required but %d provided", len(pk), len(f.Args))
		}
		vals := make([][]byte, len(pk))
		for i, c := range pk {
			bv, err := b.term(f.Args[i], ColumnSpec{Keyspace: r.t.Keyspace, Table: r.t.Name, Name: c.Name, Type: c.Type})
			if err != nil {
				return err
			}
			if !b.prepare && (bv.null || bv.unset) {
				return Invalid("Invalid null value for partition key part %s", c.Name)
			}
			vals[i] = bv.b
		}
		r.hasToken = true
		if b.prepare {
			return nil
		}
		k, err := makePartitionKey(r.t, vals)
		if err != nil {
			return err
		}
		v = k.token
	} else {
		bv, err := b.term(rel.Value, ColumnSpec{Keyspace: r.t.Keyspace, Table: r.t.Name, Name: "partition key token", Type: cqltype.Scalar(cqltype.Bigint)})
		if err != nil {
			return err
		}
		r.hasToken = true
		if b.prepare {
			return nil
		}
		if bv.null || bv.unset || len(bv.b) != 8 {
			return Invalid("Invalid null value for token restriction")
		}
		v = int64(int64Of(bv.b))
	}
	switch rel.Op {
	case parser.OpEq:
		r.tokLo, r.tokHi = max(r.tokLo, v), min(r.tokHi, v)
	case parser.OpGt:
		if v == maxToken {
			r.tokLo, r.tokHi = 1, 0 // empty
		} else {
			r.tokLo = max(r.tokLo, v+1)
		}
	case parser.OpGte:
		r.tokLo = max(r.tokLo, v)
	case parser.OpLt:
		if v == minToken {
			r.tokLo, r.tokHi = 1, 0
		} else {
			r.tokHi = min(r.tokHi, v-1)
		}
	case parser.OpLte:
		r.tokHi = min(r.tokHi, v)
	default:
		return Invalid("Unsupported operator %s on token", rel.Op)
	}
	return nil
}

func int64Of(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

func partitionKeyNames(t *schema.Table) string {
	var names []string
	for _, c := range t.PartitionKey() {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// partitionKeys returns the partition keys fully restricted by EQ/IN, or
// ok=false when the partition key is not fully restricted that way.
func (r *restrictions) partitionKeys() ([]partitionKey, bool, error) {
	pk := r.t.PartitionKey()
	lists := make([][][]byte, len(pk))
	for i, c := range pk {
		rs := r.byCol[c.Name]
		if len(rs) != 1 || (rs[0].op != parser.OpEq && rs[0].op != parser.OpIn) {
			return nil, false, nil
		}
		lists[i] = rs[0].values
	}
	sizes := make([]int, len(lists))
	for i, l := range lists {
		sizes[i] = len(l)
	}
	if err := checkProduct("Partition key", product(sizes...), r.limits.partitionKeys, "max_partition_key_restrictions_per_query"); err != nil {
		return nil, true, err
	}
	var keys []partitionKey
	seen := map[string]bool{}
	var err error
	cartesian(lists, func(vals [][]byte) bool {
		var k partitionKey
		if k, err = makePartitionKey(r.t, append([][]byte(nil), vals...)); err != nil {
			return false
		}
		if !seen[string(k.key)] {
			seen[string(k.key)] = true
			keys = append(keys, k)
		}
		return true
	})
	if err != nil {
		return nil, true, err
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].token != keys[j].token {
			return keys[i].token < keys[j].token
		}
		return string(keys[i].key) < string(keys[j].key)
	})
	return keys, true, nil
}

// cartesian calls fn with every combination of one value per list.
func cartesian(lists [][][]byte, fn func([][]byte) bool) {
	cur := make([][]byte, len(lists))
	var rec func(i int) bool
	rec = func(i int) bool {
		if i == len(lists) {
			return fn(cur)
		}
		for _, v := range lists[i] {
			cur[i] = v
			if !rec(i + 1) {
				return false
			}
		}
		return true
	}
	rec(0)
}

// restricts reports whether a column has a restriction of its own or is
// part of a multi-column one.
func (r *restrictions) restricts(name string) bool {
	if len(r.byCol[name]) > 0 {
		return true
	}
	for _, tr := range r.tuples {
		for _, c := range tr.cols {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// restrictsPartitionKey reports whether any partition-key column is
// restricted directly.
func (r *restrictions) restrictsPartitionKey() bool {
	for _, c := range r.t.PartitionKey() {
		if len(r.byCol[c.Name]) > 0 {
			return true
		}
	}
	return false
}

// nonKeyColumns returns restricted columns that are not primary-key
// columns.
func (r *restrictions) nonKeyColumns() []string {
	var out []string
	for _, cr := range r.order {
		if !cr.col.IsPrimaryKey() {
			out = append(out, cr.col.Name)
		}
	}
	return out
}
