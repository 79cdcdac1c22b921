package exec

import (
	"context"
	"errors"

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
			// A conditional write is stamped at apply time order, not by
			// the client, so later plain writes with the coordinator's
			// clock still win over it.
			w.Mutations = append(w.Mutations, m)
		}
	}
	resp, err := e.cfg.Router.Write(ctx, router.Target{Table: t.ID, Token: token}, w)
	if err != nil {
		ce := e.writeError(err, t, w, req.SerialConsistency, batch)
		if x, ok := ce.(*Error); ok && x.Code == CodeWriteTimeout {
			x.WriteType = "CAS"
		}
		return nil, ce
	}
	return e.casResult(t, condPlan, conds[0], resp)
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
		return &Result{Kind: ResultRows, Rows: rows}, nil
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
		return &Result{Kind: ResultRows, Rows: rows}, nil
	}
	cols := p.condCols
	if p.ifNotExists {
		cols = nil
		for i := range t.Columns {
			cols = append(cols, &t.Columns[i])
		}
	}
	pkVals, _ := decodePartitionKey(t, cond.GetPk())
	var ckVals [][]byte
	if len(cond.GetCk()) > 0 {
		ckVals, _ = decodeClustering(t, cond.GetCk())
	}
	out := [][]byte{boolVal(false)}
	for _, c := range cols {
		rows.Columns = append(rows.Columns, spec(t, c))
		var v []byte
		switch c.Kind {
		case schema.PartitionKey:
			if c.Position < len(pkVals) {
				v = pkVals[c.Position]
			}
		case schema.Clustering:
			if c.Position < len(ckVals) {
				v = ckVals[c.Position]
			}
		case schema.Static:
			if cell := static.Cell(c.ID); cell != nil {
				v = cell.Value
			}
		default:
			if cell := row.Cell(c.ID); cell != nil {
				v = cell.Value
			}
		}
		out = append(out, v)
	}
	rows.Rows = [][][]byte{out}
	return &Result{Kind: ResultRows, Rows: rows}, nil
}
