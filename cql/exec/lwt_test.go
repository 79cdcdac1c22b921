package exec

import (
	"testing"

	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/storage"
)

// A conditional batch that did not apply answers as Cassandra 3.11 does:
// one row per existing row a condition addressed, in clustering order,
// with [applied] = false, the primary key and the conditioned columns in
// the order of the IFs; IF [NOT] EXISTS reports every column (issue 15).
func TestBatchCASResult(t *testing.T) {
	tb := &schema.Table{Keyspace: "ks", Name: "t", Columns: []schema.Column{
		{ID: 0, Name: "k", Type: cqltype.Scalar(cqltype.Int), Kind: schema.PartitionKey, Position: 0},
		{ID: 1, Name: "c", Type: cqltype.Scalar(cqltype.Int), Kind: schema.Clustering, Position: 0, Desc: true},
		{ID: 2, Name: "s", Type: cqltype.Scalar(cqltype.Int), Kind: schema.Static, Position: -1},
		{ID: 3, Name: "v", Type: cqltype.Scalar(cqltype.Int), Kind: schema.Regular, Position: -1},
		{ID: 4, Name: "w", Type: cqltype.Scalar(cqltype.Varchar), Kind: schema.Regular, Position: -1},
	}}
	tb.Canonicalize()
	i32 := func(v int32) []byte {
		b, _ := cqltype.Marshal(cqltype.Scalar(cqltype.Int), v)
		return b
	}
	pk, err := makePartitionKey(tb, [][]byte{i32(7)})
	if err != nil {
		t.Fatal(err)
	}
	ck := func(c int32) []byte {
		b, err := encodeClustering(tb, [][]byte{i32(c)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	row := func(cells ...storage.Cell) []byte {
		r := storage.NewRow()
		r.Cells = cells
		return storage.AppendRow(nil, &r)
	}
	cell := func(col uint32, v []byte) storage.Cell { return storage.Cell{Column: col, Timestamp: 1, Value: v} }
	cond := func(kind kvpb.Condition_Kind, c []byte) *kvpb.Condition {
		return &kvpb.Condition{Kind: kind, Token: pk.token, Pk: pk.key, Ck: c}
	}
	v, w, s := tb.Column("v"), tb.Column("w"), tb.Column("s")
	render := func(res *Result) string {
		out := ""
		for i, c := range res.Rows.Columns {
			if i > 0 {
				out += " "
			}
			out += c.Name
		}
		for _, r := range res.Rows.Rows {
			out += "\n"
			for i, cell := range r {
				if i > 0 {
					out += " | "
				}
				out += cqltype.Format(res.Rows.Columns[i].Type, cell)
			}
		}
		return out
	}

	for _, tc := range []struct {
		name    string
		plans   []*modPlan
		conds   []*kvpb.Condition
		applied bool
		current []*kvpb.CurrentRow
		want    string
	}{
		{name: "applied", plans: []*modPlan{{condCols: []*schema.Column{v}}},
			conds: []*kvpb.Condition{cond(kvpb.Condition_COLUMNS, ck(1))}, applied: true,
			current: []*kvpb.CurrentRow{{Exists: true, Row: row(cell(3, i32(1)))}},
			want:    "[applied]\ntrue"},
		{name: "one row per addressed row, in clustering order (c DESC)",
			plans: []*modPlan{{condCols: []*schema.Column{v}}, {condCols: []*schema.Column{w, v}}, {condCols: []*schema.Column{v}}, {}},
			conds: []*kvpb.Condition{cond(kvpb.Condition_COLUMNS, ck(1)), cond(kvpb.Condition_COLUMNS, ck(3)),
				cond(kvpb.Condition_COLUMNS, ck(1)), cond(kvpb.Condition_COLUMNS, ck(2))},
			current: []*kvpb.CurrentRow{
				{Exists: true, Row: row(cell(3, i32(10)), cell(4, []byte("one")))},
				{Exists: true, Row: row(cell(3, i32(30)))},
				{Exists: true, Row: row(cell(3, i32(10)), cell(4, []byte("one")))},
				{Exists: false},
			},
			want: "[applied] k c v w\nfalse | 7 | 3 | 30 | null\nfalse | 7 | 1 | 10 | 'one'"},
		{name: "no addressed row exists", plans: []*modPlan{{condCols: []*schema.Column{v}}},
			conds:   []*kvpb.Condition{cond(kvpb.Condition_COLUMNS, ck(1))},
			current: []*kvpb.CurrentRow{{Exists: false}},
			want:    "[applied]\nfalse"},
		{name: "IF NOT EXISTS reports every column", plans: []*modPlan{{ifNotExists: true}, {condCols: []*schema.Column{v}}},
			conds: []*kvpb.Condition{cond(kvpb.Condition_NOT_EXISTS, ck(2)), cond(kvpb.Condition_COLUMNS, ck(5))},
			current: []*kvpb.CurrentRow{
				{Exists: true, Row: row(cell(3, i32(20)), cell(4, []byte("two"))), StaticRow: row(cell(2, i32(99)))},
				{Exists: false},
			},
			want: "[applied] k c s v w\nfalse | 7 | 2 | 99 | 20 | 'two'"},
		{name: "static data without rows", plans: []*modPlan{{condCols: []*schema.Column{s}}, {condCols: []*schema.Column{v}}},
			conds: []*kvpb.Condition{cond(kvpb.Condition_COLUMNS, nil), cond(kvpb.Condition_COLUMNS, ck(4))},
			current: []*kvpb.CurrentRow{
				{Exists: true, Row: row(cell(2, i32(5))), StaticRow: row(cell(2, i32(5)))},
				{Exists: false},
			},
			want: "[applied] k c s v\nfalse | 7 | null | 5 | null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := batchCASResult(tb, tc.plans, tc.conds, &kvpb.WriteResponse{Applied: tc.applied, Current: tc.current})
			if err != nil {
				t.Fatal(err)
			}
			if got := render(res); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
			if !res.FullMetadata {
				t.Fatal("the rows' columns are not PREPARE's: FullMetadata must be set")
			}
		})
	}
}
