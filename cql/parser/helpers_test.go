package parser

import (
	"reflect"
	"testing"

	"github.com/cosmosd/cosmosd/cqltype"
)

// Constructors that keep the expected ASTs in the tables short.

func str(s string) *Literal     { return &Literal{Kind: LitString, Text: s} }
func num(s string) *Literal     { return &Literal{Kind: LitInteger, Text: s} }
func flt(s string) *Literal     { return &Literal{Kind: LitFloat, Text: s} }
func boolean(s string) *Literal { return &Literal{Kind: LitBoolean, Text: s} }
func null() *Literal            { return &Literal{Kind: LitNull} }
func qm(i int) *BindMarker      { return &BindMarker{Index: i} }
func named(i int, n string) *BindMarker {
	return &BindMarker{Index: i, Name: n}
}
func tbl(ks, name string) TableName { return TableName{Keyspace: ks, Name: name} }
func colSel(names ...string) []Selector {
	var out []Selector
	for _, n := range names {
		out = append(out, Selector{Expr: &ColumnSel{Name: n}})
	}
	return out
}
func rel(col string, op Operator, v Term) Relation {
	return Relation{Kind: RelColumn, Column: col, Op: op, Value: v}
}
func eq(col string, v Term) Relation { return rel(col, OpEq, v) }
func in(elems ...Term) *InList       { return &InList{Elems: elems} }
func list(elems ...Term) *ListLit    { return &ListLit{Elems: elems} }
func tuple(elems ...Term) *TupleLit  { return &TupleLit{Elems: elems} }

var (
	tText      = cqltype.Scalar(cqltype.Varchar)
	tInt       = cqltype.Scalar(cqltype.Int)
	tBigint    = cqltype.Scalar(cqltype.Bigint)
	typBoolean = cqltype.Scalar(cqltype.Boolean)
	typUUID    = cqltype.Scalar(cqltype.UUID)
)

type parseCase struct {
	name string
	q    string
	want Statement
}

func runParseCases(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.q)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.q, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse(%q)\n got: %s\nwant: %s", tc.q, dump(got), dump(tc.want))
			}
		})
	}
}
