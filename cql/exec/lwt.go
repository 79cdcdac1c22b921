package exec

import (
	"bytes"
	"context"
	"errors"
	"slices"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/storage"
)

func partitionErrorCode(err error) kvpb.Error_Code { return partition.ErrorCode(err) }

// describeKey renders the logical partition a write addressed, for errors.
func (e *Executor) describeKey(t *schema.Table, err error, req *kvpb.WriteRequest) string {
	var pe *partition.Error
	var token int64
	if errors.As(err, &pe) && pe.PB.GetCurrent() != nil {
		token = pe.PB.GetCurrent().GetStart()
	}
	for _, m := range req.GetMutations() {
		if m.GetToken() != token {
			continue
		}
		vals, derr := decodePartitionKey(t, m.GetPk())
		if derr != nil {
			break
		}
		return formatKey(t, vals)
	}
	return "(token " + itoa(token) + ")"
}

func formatKey(t *schema.Table, vals [][]byte) string {
	out := "("
	for i, c := range t.PartitionKey() {
		if i > 0 {
			out += ", "
		}
		out += c.Name + "=" + cqltype.Format(c.Type, vals[i])
	}
	return out + ")"
}

func itoa(v int64) string {
	b, _ := cqltype.Marshal(cqltype.Scalar(cqltype.Bigint), v)
	return cqltype.Format(cqltype.Scalar(cqltype.Bigint), b)
}

// applyConditional runs a lightweight transaction: every condition and
// mutation in one write to one partition, evaluated at apply time.
func (e *Executor) applyConditional(ctx context.Context, plans []*modPlan, conds []*kvpb.Condition, condPlan *modPlan, req Request, batch bool) (*Result, error) {
	t := condPlan.table
	token := conds[0].GetToken()
	for _, c := range conds {
		if c.GetToken() != token || string(c.GetPk()) != string(conds[0].GetPk()) {
			return nil, Invalid("Batch with conditions cannot span multiple partitions")
		}
	}
	w := &kvpb.WriteRequest{
		NowMicros: e.cfg.Now().UnixMicro(), GcGraceSeconds: int64(t.Options.GCGraceSeconds),
		MaxLogicalPartitionBytes: e.cfg.LogicalPartitionMaxBytes, Conditions: conds,
	}
	for _, p := range plans {
		if p.table.ID != t.ID {
			return nil, Invalid("Batch with conditions cannot span multiple tables")
		}
		for _, m := range p.mutations {
			if m.GetToken() != token || string(m.GetPk()) != string(conds[0].GetPk()) {
				return nil, Invalid("Batch with conditions cannot span multiple partitions")
			}
			// The state machine stamps a conditional write at apply time,
			// max(now, above everything in the partition), ignoring the
			// client's timestamp as Cassandra's Paxos does (partition/
			// write.go, "Write timestamps"). Sending now as the timestamp
			// too makes a replica that predates that rule write the same
			// timestamp whenever the clocks are sane.
			m.Timestamp, m.TimestampSource = w.NowMicros, kvpb.Mutation_COORDINATOR
			w.Mutations = append(w.Mutations, m)
		}
	}
	if err := e.checkMutationSize(w); err != nil {
		return nil, err
	}
	resp, err := e.cfg.Router.Write(ctx, router.Target{Table: t.ID, Token: token}, w)
	if err != nil {
		ce := e.writeError(err, t, w, req.SerialConsistency, batch)
		if x, ok := ce.(*Error); ok && x.Code == CodeWriteTimeout {
			x.WriteType = "CAS"
		}
		return nil, ce
	}
	var res *Result
	if batch {
		res, err = batchCASResult(t, plans, conds, resp)
	} else {
		res, err = e.casResult(t, condPlan, conds[0], resp)
	}
	if res != nil {
		res.Charge = resp.GetRequestUnits()
	}
	return res, err
}

// casResult builds the [applied] row drivers look for.
func (e *Executor) casResult(t *schema.Table, p *modPlan, cond *kvpb.Condition, resp *kvpb.WriteResponse) (*Result, error) {
	applied := ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "[applied]", Type: cqltype.Scalar(cqltype.Boolean)}
	boolVal := func(v bool) []byte {
		if v {
			return []byte{1}
		}
		return []byte{0}
	}
	rows := &Rows{Columns: []ColumnSpec{applied}}
	if resp.GetApplied() {
		rows.Rows = [][][]byte{{boolVal(true)}}
		return &Result{Kind: ResultRows, Rows: rows, FullMetadata: true}, nil
	}
	var cur *kvpb.CurrentRow
	if len(resp.GetCurrent()) > 0 {
		cur = resp.GetCurrent()[0]
	}
	row := storage.NewRow()
	static := storage.NewRow()
	if cur != nil && cur.GetExists() {
		r, err := storage.DecodeRow(cur.GetRow())
		if err != nil {
			return nil, ServerError("decode current row: %v", err)
		}
		row = r
	}
	if cur != nil && len(cur.GetStaticRow()) > 0 {
		r, err := storage.DecodeRow(cur.GetStaticRow())
		if err != nil {
			return nil, ServerError("decode current static row: %v", err)
		}
		static = r
	}
	exists := cur != nil && (cur.GetExists() || len(cur.GetStaticRow()) > 0)
	if !exists || cond.GetKind() == kvpb.Condition_EXISTS {
		rows.Rows = [][][]byte{{boolVal(false)}}
		return &Result{Kind: ResultRows, Rows: rows, FullMetadata: true}, nil
	}
	cols := p.condCols
	if p.ifNotExists {
		cols = selectOrder(t)
	}
	pkVals, _ := decodePartitionKey(t, cond.GetPk())
	var ckVals [][]byte
	if len(cond.GetCk()) > 0 {
		ckVals, _ = decodeClustering(t, cond.GetCk())
	}
	out := [][]byte{boolVal(false)}
	for _, c := range cols {
		rows.Columns = append(rows.Columns, spec(t, c))
		out = append(out, casColumn(c, pkVals, ckVals, &static, &row))
	}
	rows.Rows = [][][]byte{out}
	return &Result{Kind: ResultRows, Rows: rows, FullMetadata: true}, nil
}

// batchCASResult builds the result of a conditional batch as Cassandra
// 3.11 does (ModificationStatement.buildCasResultSet with isBatch): when it
// applied, one row [applied] = true; when it did not, one row per existing
// row that a condition addressed, in clustering order, each with
// [applied] = false, the primary key, and the current values of the
// columns in conditions (in the order of the IFs, each once), or of every
// column (as SELECT *) when a statement has IF [NOT] EXISTS. When no
// addressed row exists, the one row [applied] = false, alone, unless the
// partition's static row has data and static columns are reported: then
// one row with the partition key, null clustering columns and the static
// values. conds are the conditions of the conditional plans among plans,
// in order, and resp.Current holds the state each condition saw.
func batchCASResult(t *schema.Table, plans []*modPlan, conds []*kvpb.Condition, resp *kvpb.WriteResponse) (*Result, error) {
	applied := ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "[applied]", Type: cqltype.Scalar(cqltype.Boolean)}
	if resp.GetApplied() {
		return &Result{Kind: ResultRows, Rows: &Rows{Columns: []ColumnSpec{applied}, Rows: [][][]byte{{{1}}}}, FullMetadata: true}, nil
	}
	wildcard := false
	for _, c := range conds {
		if c.GetKind() != kvpb.Condition_COLUMNS {
			wildcard = true
		}
	}
	var cols []*schema.Column
	if wildcard {
		cols = selectOrder(t)
	} else {
		cols = append(t.PartitionKey(), t.ClusteringColumns()...)
		for _, p := range plans {
			for _, c := range p.condCols {
				if !containsCol(cols, c) {
					cols = append(cols, c)
				}
			}
		}
	}

	// The rows the conditions addressed, each once, in clustering order
	// (clustering keys are byte-comparable), and the static row.
	type current struct {
		ck  []byte
		row storage.Row
	}
	var rows []current
	seen := map[string]bool{}
	static := storage.NewRow()
	for i, c := range conds {
		if i >= len(resp.GetCurrent()) {
			break
		}
		cur := resp.GetCurrent()[i]
		if len(cur.GetStaticRow()) > 0 {
			r, err := storage.DecodeRow(cur.GetStaticRow())
			if err != nil {
				return nil, ServerError("decode current static row: %v", err)
			}
			static = r
		}
		// A condition on static columns alone addresses no row.
		if !cur.GetExists() || seen[string(c.GetCk())] || len(c.GetCk()) == 0 && len(t.ClusteringColumns()) > 0 {
			continue
		}
		seen[string(c.GetCk())] = true
		r, err := storage.DecodeRow(cur.GetRow())
		if err != nil {
			return nil, ServerError("decode current row: %v", err)
		}
		rows = append(rows, current{ck: c.GetCk(), row: r})
	}
	slices.SortFunc(rows, func(a, b current) int { return bytes.Compare(a.ck, b.ck) })
	if len(rows) == 0 {
		hasStatic := false
		for _, c := range cols {
			hasStatic = hasStatic || c.Kind == schema.Static && static.Cell(c.ID) != nil
		}
		if !hasStatic {
			return &Result{Kind: ResultRows, Rows: &Rows{Columns: []ColumnSpec{applied}, Rows: [][][]byte{{{0}}}}, FullMetadata: true}, nil
		}
		// The static row alone, as Cassandra's SELECT shows a partition
		// that has static data and no rows.
		rows = append(rows, current{row: storage.NewRow()})
	}

	pkVals, err := decodePartitionKey(t, conds[0].GetPk())
	if err != nil {
		return nil, ServerError("decode partition key: %v", err)
	}
	out := &Rows{Columns: []ColumnSpec{applied}}
	for _, c := range cols {
		out.Columns = append(out.Columns, spec(t, c))
	}
	for _, r := range rows {
		var ckVals [][]byte
		if len(r.ck) > 0 {
			if ckVals, err = decodeClustering(t, r.ck); err != nil {
				return nil, ServerError("decode clustering key: %v", err)
			}
		}
		vals := [][]byte{{0}}
		for _, c := range cols {
			vals = append(vals, casColumn(c, pkVals, ckVals, &static, &r.row))
		}
		out.Rows = append(out.Rows, vals)
	}
	return &Result{Kind: ResultRows, Rows: out, FullMetadata: true}, nil
}

// conditions analyses IF EXISTS / IF conditions of UPDATE and DELETE.
func (e *Executor) conditions(p *modPlan, t *schema.Table, ifExists bool, conds []parser.Condition, b *binder, keys []partitionKey, cp *clusteringPlan, hasTS bool) error {
	if !ifExists && len(conds) == 0 {
		return nil
	}
	if hasTS {
		return Invalid("Cannot provide custom timestamp for conditional updates")
	}
	if p.counter {
		return Invalid("Conditional updates are not supported on counter tables")
	}
	if !b.prepare && len(keys) != 1 {
		return Invalid("IN on the partition key is not supported with conditional updates")
	}
	if len(cp.prefixes) > 1 {
		return Invalid("IN on the clustering key columns is not supported with conditional updates")
	}
	cond := &kvpb.Condition{Kind: kvpb.Condition_COLUMNS}
	if ifExists {
		cond.Kind = kvpb.Condition_EXISTS
	}
	for i := range conds {
		c := &conds[i]
		col := t.Column(c.Column)
		if col == nil {
			return Invalid("Undefined column name %s", c.Column)
		}
		if col.IsPrimaryKey() {
			return Invalid("PRIMARY KEY column '%s' cannot have IF conditions", c.Column)
		}
		cc := &kvpb.ColumnCondition{Column: col.ID, Type: col.Type.String()}
		recv := spec(t, col)
		if c.Key != nil {
			if !col.Type.IsCollection() || col.Type.Kind == cqltype.Set {
				return Invalid("Invalid element access: %s is not a list or map", col.Name)
			}
			kt := cqltype.Scalar(cqltype.Int)
			vt := col.Type.Elems[0]
			if col.Type.Kind == cqltype.Map {
				kt, vt = col.Type.Elems[0], col.Type.Elems[1]
			}
			k, err := b.term(c.Key, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "key(" + col.Name + ")", Type: kt})
			if err != nil {
				return err
			}
			if !b.prepare && (k.null || k.unset) {
				return Invalid("Invalid null value for %s element access", col.Name)
			}
			cc.Element, cc.HasElement, cc.ElementType = k.b, true, vt.String()
			recv = ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "value(" + col.Name + ")", Type: vt}
		}
		ops := map[parser.Operator]kvpb.ColumnCondition_Op{parser.OpEq: kvpb.ColumnCondition_EQ, parser.OpNeq: kvpb.ColumnCondition_NE,
			parser.OpLt: kvpb.ColumnCondition_LT, parser.OpLte: kvpb.ColumnCondition_LE, parser.OpGt: kvpb.ColumnCondition_GT,
			parser.OpGte: kvpb.ColumnCondition_GE, parser.OpIn: kvpb.ColumnCondition_IN}
		op, ok := ops[c.Op]
		if !ok {
			return Invalid("Unsupported operator %s in condition on %s", c.Op, col.Name)
		}
		cc.Op = op
		var terms []parser.Term
		if c.Op == parser.OpIn {
			switch v := c.Value.(type) {
			case *parser.InList:
				terms = v.Elems
			case *parser.BindMarker:
				bv, err := b.marker(v, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "in(" + col.Name + ")", Type: cqltype.ListOf(recv.Type)})
				if err != nil {
					return err
				}
				if !b.prepare && !bv.null && !bv.unset {
					elems, err := cqltype.DecodeCollection(bv.b)
					if err != nil {
						return Invalid("Invalid IN value for %s: %v", col.Name, err)
					}
					for _, el := range elems {
						cc.Values, cc.NullValues = append(cc.Values, el), append(cc.NullValues, false)
					}
				}
			}
		} else {
			terms = []parser.Term{c.Value}
		}
		for _, term := range terms {
			v, err := b.term(term, recv)
			if err != nil {
				return err
			}
			if v.unset {
				return Invalid("Invalid unset value for condition on %s", col.Name)
			}
			if v.null && c.Op != parser.OpEq && c.Op != parser.OpNeq && c.Op != parser.OpIn && !b.prepare {
				return Invalid("Invalid comparison with null for operator \"%s\"", c.Op)
			}
			cc.Values, cc.NullValues = append(cc.Values, v.b), append(cc.NullValues, v.null)
		}
		if col.Kind == schema.Static {
			cond.StaticColumns = append(cond.StaticColumns, cc)
		} else {
			cond.Columns = append(cond.Columns, cc)
		}
		if !containsCol(p.condCols, col) {
			p.condCols = append(p.condCols, col)
		}
	}
	if b.prepare {
		p.cond = cond
		return nil
	}
	cond.Token, cond.Pk = keys[0].token, keys[0].key
	if len(cp.prefixes) == 1 {
		cond.Ck = cp.prefixes[0]
	}
	p.cond = cond
	return nil
}

func containsCol(cols []*schema.Column, c *schema.Column) bool {
	for _, x := range cols {
		if x.ID == c.ID {
			return true
		}
	}
	return false
}

// casColumn is column c's value in a conditional statement's result row:
// from the decoded partition or clustering key, the static row, or the row.
func casColumn(c *schema.Column, pkVals, ckVals [][]byte, static, row *storage.Row) []byte {
	switch c.Kind {
	case schema.PartitionKey:
		if c.Position < len(pkVals) {
			return pkVals[c.Position]
		}
	case schema.Clustering:
		if c.Position < len(ckVals) {
			return ckVals[c.Position]
		}
	case schema.Static:
		if cell := static.Cell(c.ID); cell != nil {
			return cell.Value
		}
	default:
		if cell := row.Cell(c.ID); cell != nil {
			return cell.Value
		}
	}
	return nil
}
