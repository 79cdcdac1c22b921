package exectest

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/storage"
)

// Format renders a request in a stable, readable form, for golden files:
// the first line names the kind, the table and the partition (its position
// in the table's ring, from 0, and the ring's size, never its id, which
// depends on the order tables were made), then what the request asks
// (keys and slices, mutations, conditions) with values decoded by the
// table's schema and written as CQL literals, and last, after "→", the
// outcome. The clock (now_micros) is left out, as are the timestamps the
// coordinator chose (those equal to now); token bounds of scans are shown,
// as tokens are a stable function of the keys.
func Format(r Request) string {
	f := formatter{b: &strings.Builder{}}
	if r.State != nil {
		f.t = r.State.Schema.ByID[r.tableID()]
	}
	switch {
	case r.Write != nil:
		f.write(r)
	default:
		f.read(r)
	}
	return strings.TrimRight(f.b.String(), "\n")
}

func (r Request) tableID() uint64 {
	if r.Desc != nil {
		return r.Desc.GetTableId()
	}
	return r.Target.Table
}

type formatter struct {
	b *strings.Builder
	t *schema.Table // nil when the table is unknown: values print as hex
}

func (f formatter) printf(format string, args ...any) { fmt.Fprintf(f.b, format, args...) }

// header writes the verb, the table and the partition.
func (f formatter) header(verb string, r Request) {
	name := fmt.Sprintf("table#%d", r.tableID())
	if f.t != nil {
		name = f.t.QualifiedName()
	}
	f.printf("%s %s %s", verb, name, partName(r))
}

// partName names the partition that served r by its place in its ring.
func partName(r Request) string {
	if r.Desc == nil {
		return "(no partition)"
	}
	var parts []*kvpb.Descriptor
	if r.State != nil {
		if rg := r.State.Ring(r.Desc.GetTableId()); rg != nil {
			parts = rg.Partitions()
		}
	}
	for i, d := range parts {
		if d.GetId() == r.Desc.GetId() {
			return fmt.Sprintf("p%d/%d", i, len(parts))
		}
	}
	return fmt.Sprintf("p?/%d", len(parts))
}

func (f formatter) read(r Request) {
	q := r.Read
	if q.GetScan() {
		f.header("scan", r)
		f.printf(" tokens=[%d, %d]", q.GetScanStart(), q.GetScanEnd())
	} else {
		f.header("read", r)
		keys := make([]string, len(q.GetKeys()))
		for i, k := range q.GetKeys() {
			keys[i] = f.pk(k.GetPk())
		}
		f.printf(" keys=%s", strings.Join(keys, ","))
	}
	if len(q.GetSlices()) > 0 {
		sl := make([]string, len(q.GetSlices()))
		for i, s := range q.GetSlices() {
			sl[i] = f.slice(s.GetStart(), s.GetEnd())
		}
		f.printf(" slices=%s", strings.Join(sl, ","))
	}
	if q.GetLimit() > 0 {
		f.printf(" limit=%d", q.GetLimit())
	}
	if q.GetPerPartitionLimit() > 0 {
		f.printf(" per-partition-limit=%d", q.GetPerPartitionLimit())
	}
	for _, flag := range []struct {
		on   bool
		name string
	}{{q.GetReverse(), "reverse"}, {q.GetLinearizable(), "linearizable"}, {q.GetStatsOnly(), "stats-only"}} {
		if flag.on {
			f.printf(" %s", flag.name)
		}
	}
	if len(q.GetResumeAfter()) > 0 {
		f.printf(" resume-after=%s", f.rowKey(q.GetResumeAfter()))
		if n := q.GetResumePartitionRows(); n > 0 {
			f.printf(" resume-partition-rows=%d", n)
		}
	}
	f.printf("\n")
	switch {
	case r.Err != nil:
		f.printf("  → %s\n", errText(r))
	case r.ReadResp != nil:
		if n := len(r.ReadResp.GetRows()); n == 1 {
			f.printf("  → 1 row")
		} else {
			f.printf("  → %d rows", n)
		}
		if r.ReadResp.GetMore() {
			f.printf(", more")
		}
		f.printf("\n")
	}
}

func (f formatter) write(r Request) {
	w := r.Write
	if w.GetTruncate() {
		f.header("truncate", r)
		f.printf("\n")
	} else {
		f.header("write", r)
		f.printf("\n")
	}
	for _, c := range w.GetConditions() {
		f.printf("  if %s", f.key(c.GetPk(), c.GetCk(), true))
		switch c.GetKind() {
		case kvpb.Condition_NOT_EXISTS:
			f.printf(" not exists")
		case kvpb.Condition_EXISTS:
			f.printf(" exists")
		}
		var conds []string
		for _, cc := range c.GetColumns() {
			conds = append(conds, f.colCond(cc))
		}
		for _, cc := range c.GetStaticColumns() {
			conds = append(conds, f.colCond(cc))
		}
		if len(conds) > 0 {
			f.printf(" %s", strings.Join(conds, " and "))
		}
		f.printf("\n")
	}
	for _, m := range w.GetMutations() {
		f.mutation(m, w.GetNowMicros())
	}
	switch {
	case r.Err != nil:
		f.printf("  → %s\n", errText(r))
	case r.WriteResp != nil && len(w.GetConditions()) > 0:
		f.printf("  → applied=%t", r.WriteResp.GetApplied())
		if n := len(r.WriteResp.GetCurrent()); n > 0 && !r.WriteResp.GetApplied() {
			f.printf(" current=%d", n)
		}
		f.printf("\n")
	}
}

func errText(r Request) string {
	if r.Injected {
		return fmt.Sprintf("%s (injected)", partition.ErrorCode(r.Err))
	}
	return r.Err.Error()
}

func (f formatter) mutation(m *kvpb.Mutation, now int64) {
	kind := map[kvpb.Mutation_Kind]string{kvpb.Mutation_UPSERT: "upsert", kvpb.Mutation_DELETE_ROW: "delete row",
		kvpb.Mutation_DELETE_PARTITION: "delete partition", kvpb.Mutation_DELETE_RANGE: "delete range"}[m.GetKind()]
	f.printf("  %s %s", kind, f.key(m.GetPk(), m.GetCk(), m.GetKind() != kvpb.Mutation_DELETE_PARTITION && m.GetKind() != kvpb.Mutation_DELETE_RANGE))
	if m.GetKind() == kvpb.Mutation_DELETE_RANGE {
		f.printf(" %s", f.slice(m.GetRangeStart(), m.GetRangeEnd()))
	}
	if m.GetMarker() {
		f.printf(" marker")
	}
	if m.GetTtl() > 0 {
		f.printf(" ttl=%d", m.GetTtl())
	}
	switch src := m.GetTimestampSource(); {
	case src != kvpb.Mutation_COORDINATOR:
		f.printf(" ts=%s:%d", strings.ToLower(src.String()), m.GetTimestamp())
	case m.GetTimestamp() != now:
		f.printf(" ts=%d", m.GetTimestamp())
	}
	ops := make([]string, len(m.GetOps()))
	for i, op := range m.GetOps() {
		ops[i] = f.op(op)
	}
	if len(ops) > 0 {
		f.printf(": %s", strings.Join(ops, ", "))
	}
	f.printf("\n")
}

// column returns the column with id, or nil.
func (f formatter) column(id uint32) *schema.Column {
	if f.t == nil {
		return nil
	}
	for i := range f.t.Columns {
		if f.t.Columns[i].ID == id {
			return &f.t.Columns[i]
		}
	}
	return nil
}

func (f formatter) op(op *kvpb.ColumnOp) string {
	c := f.column(op.GetColumn())
	name, typ := fmt.Sprintf("column#%d", op.GetColumn()), cqltype.Scalar(cqltype.Blob)
	if c != nil {
		name, typ = c.Name, c.Type
	}
	elem := func(i int) cqltype.Type {
		if i < len(typ.Elems) {
			return typ.Elems[i]
		}
		return cqltype.Scalar(cqltype.Blob)
	}
	v := op.GetValue()
	switch op.GetKind() {
	case kvpb.ColumnOp_SET:
		return name + " = " + cqltype.Format(typ, v)
	case kvpb.ColumnOp_DELETE:
		return "delete " + name
	case kvpb.ColumnOp_COUNTER_ADD:
		if len(v) == 8 {
			return fmt.Sprintf("%s += %d", name, int64(binary.BigEndian.Uint64(v)))
		}
		return fmt.Sprintf("%s += %x", name, v)
	case kvpb.ColumnOp_LIST_APPEND, kvpb.ColumnOp_SET_ADD, kvpb.ColumnOp_MAP_PUT:
		return name + " += " + cqltype.Format(typ, v)
	case kvpb.ColumnOp_LIST_PREPEND:
		return name + " = " + cqltype.Format(typ, v) + " + " + name
	case kvpb.ColumnOp_LIST_SET_INDEX:
		return fmt.Sprintf("%s[%d] = %s", name, op.GetIndex(), cqltype.Format(elem(0), v))
	case kvpb.ColumnOp_LIST_DELETE_INDEX:
		return fmt.Sprintf("delete %s[%d]", name, op.GetIndex())
	case kvpb.ColumnOp_LIST_REMOVE, kvpb.ColumnOp_SET_REMOVE:
		return name + " -= " + cqltype.Format(typ, v)
	case kvpb.ColumnOp_MAP_REMOVE:
		return name + " -= " + cqltype.Format(cqltype.SetOf(elem(0)), v)
	}
	return fmt.Sprintf("%s %s %x", name, op.GetKind(), v)
}

func (f formatter) colCond(cc *kvpb.ColumnCondition) string {
	c := f.column(cc.GetColumn())
	name := fmt.Sprintf("column#%d", cc.GetColumn())
	if c != nil {
		name = c.Name
	}
	typ := parseType(cc.GetType())
	if cc.GetHasElement() {
		var key string
		if typ.Kind == cqltype.List {
			key = cqltype.Format(cqltype.Scalar(cqltype.Int), cc.GetElement())
		} else if len(typ.Elems) > 0 {
			key = cqltype.Format(typ.Elems[0], cc.GetElement())
		}
		name += "[" + key + "]"
		typ = parseType(cc.GetElementType())
	}
	vals := make([]string, len(cc.GetValues()))
	for i, v := range cc.GetValues() {
		if i < len(cc.GetNullValues()) && cc.GetNullValues()[i] {
			v = nil
		} else if v == nil {
			v = []byte{}
		}
		vals[i] = cqltype.Format(typ, v)
	}
	op := map[kvpb.ColumnCondition_Op]string{kvpb.ColumnCondition_EQ: "=", kvpb.ColumnCondition_NE: "!=",
		kvpb.ColumnCondition_LT: "<", kvpb.ColumnCondition_LE: "<=", kvpb.ColumnCondition_GT: ">",
		kvpb.ColumnCondition_GE: ">="}[cc.GetOp()]
	if cc.GetOp() == kvpb.ColumnCondition_IN {
		return name + " in (" + strings.Join(vals, ", ") + ")"
	}
	return name + " " + op + " " + strings.Join(vals, ", ")
}

// parseType parses a type name sent in a request; an unknown one formats
// values as blobs.
func parseType(s string) cqltype.Type {
	t, err := cqltype.Parse(s)
	if err != nil {
		return cqltype.Scalar(cqltype.Blob)
	}
	return t
}

// pk renders a serialized partition key as (name=value, ...).
func (f formatter) pk(key []byte) string {
	if f.t == nil {
		return fmt.Sprintf("(0x%x)", key)
	}
	cols := f.t.PartitionKey()
	vals, err := ring.SplitRoutingKey(key, len(cols))
	if err != nil {
		return fmt.Sprintf("(0x%x)", key)
	}
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + "=" + cqltype.Format(c.Type, vals[i])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// ck renders an encoded clustering key or prefix as (name=value, ...);
// an empty one of a table with clustering columns is the static row.
func (f formatter) ck(key []byte) string {
	if f.t == nil {
		return fmt.Sprintf("(0x%x)", key)
	}
	var parts []string
	rest := key
	for _, c := range f.t.ClusteringColumns() {
		if len(rest) == 0 {
			break
		}
		var v []byte
		var err error
		if v, rest, err = cqltype.DecodeKey(c.Type, rest, c.Desc); err != nil {
			return fmt.Sprintf("(0x%x)", key)
		}
		parts = append(parts, c.Name+"="+cqltype.Format(c.Type, v))
	}
	if len(rest) > 0 {
		return fmt.Sprintf("(0x%x)", key)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// key renders a row's key: the partition key, then the clustering key when
// the table has clustering columns (row), "static" for its static row.
func (f formatter) key(pk, ck []byte, row bool) string {
	s := f.pk(pk)
	if !row || f.t == nil || len(f.t.ClusteringColumns()) == 0 {
		if len(ck) > 0 {
			s += " " + f.ck(ck)
		}
		return s
	}
	if len(ck) == 0 {
		return s + " static"
	}
	return s + " " + f.ck(ck)
}

// rowKey renders a storage row key.
func (f formatter) rowKey(key []byte) string {
	k, err := storage.DecodeRowKey(key)
	if err != nil {
		return fmt.Sprintf("0x%x", key)
	}
	return f.key(k.PK, k.CK, true)
}

// slice renders a clustering range: [ or ( for an inclusive or exclusive
// bound, * for an unbounded end.
func (f formatter) slice(start, end *kvpb.Bound) string {
	lo, hi := "(*", "*)"
	if start != nil {
		lo = "(" + f.ck(start.GetKey())
		if start.GetInclusive() {
			lo = "[" + f.ck(start.GetKey())
		}
	}
	if end != nil {
		hi = f.ck(end.GetKey()) + ")"
		if end.GetInclusive() {
			hi = f.ck(end.GetKey()) + "]"
		}
	}
	return lo + ".." + hi
}
