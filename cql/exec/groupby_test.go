package exec

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/storage"
)

// groupExecutor is ddlExecutor with the table ks.g, whose partition key is
// (a, b) and clustering columns c, d, shown by the executor's schema.
func groupExecutor(t *testing.T) *Executor {
	t.Helper()
	e, _ := ddlExecutor(t)
	runSteps(t, e, []step{
		{q: "CREATE TABLE ks.g (a int, b int, c int, d int, v int, s int static, PRIMARY KEY ((a, b), c, d))", want: "ok"},
		{q: "CREATE TABLE ks.g2 (a int, c int, d int, v int, PRIMARY KEY (a, c, d))", want: "ok"},
	})
	// The catalog returns once Meta shows its change.
	if e.lookupTable("ks", "g") == nil || e.lookupTable("ks", "g2") == nil {
		t.Fatal("tables ks.g and ks.g2 are not in the schema")
	}
	return e
}

// GROUP BY is checked as Cassandra 3.11 checks it: primary-key columns
// only, in their declared order from the whole partition key, a column
// restricted by = may be skipped. Valid statements are prepared (analysis
// without reads); invalid ones fail with Cassandra's messages.
func TestGroupByAnalysis(t *testing.T) {
	e := groupExecutor(t)
	for _, tc := range []struct{ q, want string }{
		{"SELECT a, b, count(*) FROM ks.g GROUP BY a, b", "ok"},
		{"SELECT a, b, c, max(v) FROM ks.g GROUP BY a, b, c", "ok"},
		{"SELECT * FROM ks.g GROUP BY a, b, c, d", "ok"},
		{"SELECT a, sum(v) FROM ks.g WHERE a = ? AND b = ? AND c = ? GROUP BY a, b, d", "ok"},
		{"SELECT a, sum(v) FROM ks.g WHERE a = ? AND b = ? AND (c) = (?) GROUP BY a, b, d", "ok"},
		{"SELECT a, count(*) FROM ks.g WHERE a = ? AND b = ? GROUP BY c", "ok"},
		{"SELECT a, b, max(d) FROM ks.g WHERE a = ? AND b = ? GROUP BY b", "ok"},
		{"SELECT a, b, max(d) FROM ks.g WHERE a = ? GROUP BY b ALLOW FILTERING", "ok"},
		{"SELECT a, b, max(d) FROM ks.g WHERE a IN (?, ?) AND b = ? GROUP BY b", "0x2200 Group by currently only support groups of columns following their declared order in the PRIMARY KEY"},
		{"SELECT DISTINCT a, b FROM ks.g GROUP BY a, b", "ok"},
		{"SELECT a, count(*) FROM ks.g GROUP BY a, b PER PARTITION LIMIT 1 LIMIT 2", "ok"},
		{"SELECT a, count(*) FROM ks.g2 WHERE a IN (?, ?) GROUP BY a, c ORDER BY c DESC", "ok"},
		{"SELECT keyspace_name, count(*) FROM system_schema.columns GROUP BY keyspace_name, table_name", "ok"},
		{"SELECT a, count(*) FROM ks.g GROUP BY v", "0x2200 Group by is currently only supported on the columns of the PRIMARY KEY, got v"},
		{"SELECT a, count(*) FROM ks.g GROUP BY s", "0x2200 Group by is currently only supported on the columns of the PRIMARY KEY, got s"},
		{"SELECT a, count(*) FROM ks.g GROUP BY nosuch", "0x2200 Undefined column name nosuch"},
		{"SELECT a, count(*) FROM ks.g GROUP BY a", "0x2200 Group by is not supported on only a part of the partition key"},
		{"SELECT a, count(*) FROM ks.g GROUP BY b, a", "0x2200 Group by currently only support groups of columns following their declared order in the PRIMARY KEY"},
		{"SELECT a, count(*) FROM ks.g GROUP BY a, b, d", "0x2200 Group by currently only support groups of columns following their declared order in the PRIMARY KEY"},
		{"SELECT a, count(*) FROM ks.g WHERE a = ? AND b = ? AND c > ? GROUP BY a, b, d", "0x2200 Group by currently only support groups of columns following their declared order in the PRIMARY KEY"},
		{"SELECT a, count(*) FROM ks.g GROUP BY a, b, c, d, c", "0x2200 Group by currently only support groups of columns following their declared order in the PRIMARY KEY"},
		{"SELECT a, count(*) FROM ks.g GROUP BY a, b, c, c", "0x2200 Group by currently only support groups of columns following their declared order in the PRIMARY KEY"},
		{"SELECT DISTINCT a, b FROM ks.g GROUP BY a, b, c", "0x2200 Grouping on clustering columns is not allowed for SELECT DISTINCT queries"},
	} {
		got := "ok"
		if _, err := e.Prepare(context.Background(), &Session{}, tc.q); err != nil {
			got = errText(err)
		}
		if got != tc.want {
			t.Errorf("%s\n got: %s\nwant: %s", tc.q, got, tc.want)
		}
	}
}

// GROUP BY runs end to end on a virtual table (no cluster needed): each
// page holds at most page-size groups, a group is never split or repeated
// across pages, LIMIT counts groups, and the pages together give what the
// unpaged query gives.
func TestGroupByPagesVirtualTable(t *testing.T) {
	e := groupExecutor(t)
	const q = "SELECT keyspace_name, table_name, count(*), min(column_name), max(column_name), column_name FROM system_schema.columns WHERE keyspace_name = 'ks' GROUP BY keyspace_name, table_name"
	whole, err := e.Query(context.Background(), &Session{}, q, Request{})
	if err != nil {
		t.Fatal(err)
	}
	want := "keyspace_name table_name count system.min(column_name) system.max(column_name) column_name\n" +
		"ks | g | 0000000000000006 | a | v | a\n" +
		"ks | g2 | 0000000000000004 | a | v | a"
	if got := render(whole); got != want {
		t.Fatalf("unpaged:\n got: %s\nwant: %s", got, want)
	}
	if whole.Rows.PagingState != nil {
		t.Fatalf("unpaged result has a paging state")
	}
	for _, size := range []int32{1, 2, 5} {
		var rows [][][]byte
		var state []byte
		for page := 0; ; page++ {
			if page > 10 {
				t.Fatalf("page size %d: more than 10 pages", size)
			}
			res, err := e.Query(context.Background(), &Session{}, q, Request{PageSize: size, PagingState: state})
			if err != nil {
				t.Fatalf("page size %d, page %d: %v", size, page, err)
			}
			if len(res.Rows.Rows) > int(size) {
				t.Fatalf("page size %d: page %d has %d groups", size, page, len(res.Rows.Rows))
			}
			rows = append(rows, res.Rows.Rows...)
			if state = res.Rows.PagingState; state == nil {
				break
			}
		}
		got := render(&Result{Kind: ResultRows, Rows: &Rows{Columns: whole.Rows.Columns, Rows: rows}})
		if got != want {
			t.Fatalf("page size %d:\n got: %s\nwant: %s", size, got, want)
		}
	}
	res, err := e.Query(context.Background(), &Session{}, q+" LIMIT 1", Request{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := render(res); got != strings.Join(strings.Split(want, "\n")[:2], "\n") || res.Rows.PagingState != nil {
		t.Fatalf("LIMIT 1 counts groups:\n got: %s (paging state %x)", got, res.Rows.PagingState)
	}
	// No rows: no groups, unlike an aggregate without GROUP BY, which
	// gives one row.
	res, err = e.Query(context.Background(), &Session{}, "SELECT count(*) FROM system_schema.columns WHERE keyspace_name = 'none' GROUP BY keyspace_name", Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows.Rows) != 0 {
		t.Fatalf("GROUP BY over no rows gave %d rows", len(res.Rows.Rows))
	}
	res, err = e.Query(context.Background(), &Session{}, "SELECT count(*) FROM system_schema.columns WHERE keyspace_name = 'none' ALLOW FILTERING", Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got := render(res); got != "count\n0000000000000000" {
		t.Fatalf("count(*) over no rows: %s", got)
	}
}

// aggTable is a table of numeric columns; aggRows builds its rows from
// CQL literals ("" for null), one map per row.
func aggTable(t *testing.T) *schema.Table {
	t.Helper()
	tb := &schema.Table{Keyspace: "ks", Name: "agg", Columns: []schema.Column{
		{ID: 0, Name: "k", Type: cqltype.Scalar(cqltype.Int), Kind: schema.PartitionKey, Position: 0},
	}}
	for i, c := range []struct{ name, typ string }{
		{"i", "int"}, {"big", "bigint"}, {"si", "smallint"}, {"ti", "tinyint"}, {"vi", "varint"},
		{"dec", "decimal"}, {"dbl", "double"}, {"txt", "text"},
	} {
		typ, err := cqltype.Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		tb.Columns = append(tb.Columns, schema.Column{ID: uint32(i + 1), Name: c.name, Type: typ, Kind: schema.Regular, Position: -1})
	}
	tb.Canonicalize()
	return tb
}

func aggRows(t *testing.T, tb *schema.Table, rows []map[string]string) []*qrow {
	t.Helper()
	var out []*qrow
	for n, vals := range rows {
		row := storage.NewRow()
		for _, c := range tb.Columns {
			text, ok := vals[c.Name]
			if !ok || c.Kind != schema.Regular {
				continue
			}
			v, err := parseTerm(t, text, c.Type)
			if err != nil {
				t.Fatalf("%s = %s: %v", c.Name, text, err)
			}
			row.Cells = append(row.Cells, storage.Cell{Column: c.ID, Timestamp: 1, Value: v})
		}
		// Row.Cell looks cells up by column id.
		sort.Slice(row.Cells, func(i, j int) bool { return row.Cells[i].Column < row.Cells[j].Column })
		k, _ := cqltype.Marshal(cqltype.Scalar(cqltype.Int), int32(n))
		out = append(out, &qrow{pk: [][]byte{k}, row: &row})
	}
	return out
}

// Aggregates keep Cassandra 3.11's types and Java arithmetic: sum of an
// integer type is that type and wraps on overflow, avg of one divides with
// truncation; count(col) skips nulls; a plain column is the first row's,
// even when null.
func TestAggregateSemantics(t *testing.T) {
	tb := aggTable(t)
	rows := aggRows(t, tb, []map[string]string{
		{"txt": "'m'"},
		{"i": "2147483647", "big": "9223372036854775807", "si": "32767", "ti": "127", "vi": "9223372036854775807", "dec": "1.5", "dbl": "1.5", "txt": "'b'"},
		{"i": "2", "big": "2", "si": "2", "ti": "2", "vi": "2", "dec": "0.25", "dbl": "2", "txt": "'z'"},
		{"i": "1", "big": "1", "si": "1", "ti": "1", "vi": "1", "dec": "-1", "dbl": "-0.5"},
	})
	for _, tc := range []struct{ q, want string }{
		{"SELECT sum(i), sum(big), sum(si), sum(ti), sum(vi) FROM ks.agg",
			"system.sum(i)=-2147483646 system.sum(big)=-9223372036854775806 system.sum(si)=-32766 system.sum(ti)=-126 system.sum(vi)=9223372036854775810"},
		{"SELECT avg(i), avg(big), avg(vi), avg(dec), avg(dbl) FROM ks.agg",
			"system.avg(i)=715827883 system.avg(big)=3074457345618258603 system.avg(vi)=3074457345618258603 system.avg(dec)=0.25 system.avg(dbl)=1"},
		{"SELECT count(*), count(i), count(txt), count(1) FROM ks.agg", "count=4 system.count(i)=3 system.count(txt)=3 count=4"},
		{"SELECT min(i), max(i), min(txt), max(txt), min(dec), max(dbl) FROM ks.agg",
			"system.min(i)=1 system.max(i)=2147483647 system.min(txt)=b system.max(txt)=z system.min(dec)=-1 system.max(dbl)=2"},
		{"SELECT i, txt, count(*) FROM ks.agg", "i=null txt=m count=4"},
		{"SELECT sum(txt) FROM ks.agg", "0x2200 Invalid call to function sum, none of its type signatures match (argument of type text)"},
	} {
		got, err := aggregateRows(t, tb, rows, tc.q)
		if err != nil {
			got = errText(err)
		}
		if got != tc.want {
			t.Errorf("%s\n got: %s\nwant: %s", tc.q, got, tc.want)
		}
	}
	// Empty input: count 0, sum and avg 0, min and max null.
	got, err := aggregateRows(t, tb, nil, "SELECT count(*), sum(i), avg(big), min(i), max(txt) FROM ks.agg")
	if err != nil {
		t.Fatal(err)
	}
	if want := "count=0 system.sum(i)=0 system.avg(big)=0 system.min(i)=null system.max(txt)=null"; got != want {
		t.Errorf("empty input\n got: %s\nwant: %s", got, want)
	}
}

// aggregateRows feeds rows to the selectors of q as executeSelect does
// for an aggregate and renders the one output row as "name=value".
func aggregateRows(t *testing.T, tb *schema.Table, rows []*qrow, q string) (string, error) {
	t.Helper()
	st, err := parser.Parse(q)
	if err != nil {
		t.Fatalf("parse %s: %v", q, err)
	}
	sel, err := buildSelection(tb, st.(*parser.SelectStmt), false)
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		for _, x := range sel.sels {
			if err := x.add(r); err != nil {
				return "", err
			}
		}
	}
	var out []string
	for i, sp := range sel.specs() {
		v := sel.sels[i].result()
		s := cqltype.Format(sp.Type, v)
		switch {
		case v == nil:
			s = "null"
		case sp.Type.Kind == cqltype.Varchar:
			s = string(v)
		}
		out = append(out, fmt.Sprintf("%s=%s", sp.Name, s))
	}
	return strings.Join(out, " "), nil
}
