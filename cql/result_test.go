package cql

import (
	"bytes"
	"testing"

	"github.com/cosmosd/cosmosd/cql/exec"
	"github.com/cosmosd/cosmosd/cql/frame"
	"github.com/cosmosd/cosmosd/cqltype"
)

// roundTrip encodes a result as the server sends it and decodes it as a
// driver would.
func roundTrip(t *testing.T, r *exec.Result, skipMetadata bool) frame.Response {
	t.Helper()
	b, err := frame.AppendResponse(nil, frame.Header{Stream: 1}, nil, nil, toFrameResult(r, skipMetadata))
	if err != nil {
		t.Fatal(err)
	}
	f, err := frame.NewResponseReader(bytes.NewReader(b), 0).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	resp, _, err := frame.DecodeResponse(f)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// Metadata whose columns all come from one table carries the
// Global_tables_spec flag with that table, in Rows results and in both
// metadata of Prepared results; gocql learns a prepared statement's
// keyspace and table only from it (issue 15).
func TestResultMetadataGlobalTableSpec(t *testing.T) {
	col := func(ks, table, name string) exec.ColumnSpec {
		return exec.ColumnSpec{Keyspace: ks, Table: table, Name: name, Type: cqltype.Scalar(cqltype.Int)}
	}
	oneTable := []exec.ColumnSpec{col("ks", "t", "k"), col("ks", "t", "v"), col("ks", "t", "[limit]")}
	mixed := []exec.ColumnSpec{col("ks", "t", "k"), col("ks", "u", "v")}

	type spec struct {
		global    bool
		ks, table string
	}
	for _, tc := range []struct {
		name string
		cols []exec.ColumnSpec
		want spec
	}{
		{"one table", oneTable, spec{true, "ks", "t"}},
		{"two tables", mixed, spec{false, "", ""}},
		{"no columns", nil, spec{false, "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := roundTrip(t, &exec.Result{Kind: exec.ResultRows, Rows: &exec.Rows{Columns: tc.cols}}, false).(*frame.RowsResult)
			if got := (spec{rows.Metadata.GlobalTableSpec, rows.Metadata.Keyspace, rows.Metadata.Table}); got != tc.want {
				t.Errorf("rows metadata: %+v, want %+v", got, tc.want)
			}
			for i, c := range rows.Metadata.Columns {
				if c.Keyspace != tc.cols[i].Keyspace || c.Table != tc.cols[i].Table || c.Name != tc.cols[i].Name {
					t.Errorf("rows column %d: %+v, want %+v", i, c, tc.cols[i])
				}
			}
			p := &exec.Prepared{ID: []byte{1, 2}, Variables: tc.cols, ResultColumns: tc.cols}
			if tc.cols == nil {
				p.ResultColumns = []exec.ColumnSpec{}
			}
			prep := roundTrip(t, &exec.Result{Kind: exec.ResultPrepared, Prepared: p}, false).(*frame.PreparedResult)
			if got := (spec{prep.Metadata.GlobalTableSpec, prep.Metadata.Keyspace, prep.Metadata.Table}); got != tc.want {
				t.Errorf("prepared metadata: %+v, want %+v", got, tc.want)
			}
			rm := prep.ResultMetadata
			if got := (spec{rm.GlobalTableSpec, rm.Keyspace, rm.Table}); got != tc.want {
				t.Errorf("prepared result metadata: %+v, want %+v", got, tc.want)
			}
		})
	}
	// Skip_metadata still sends no table spec at all.
	rows := roundTrip(t, &exec.Result{Kind: exec.ResultRows, Rows: &exec.Rows{Columns: oneTable}}, true).(*frame.RowsResult)
	if rows.Metadata.GlobalTableSpec || !rows.Metadata.NoMetadata || rows.Metadata.ColumnCount != len(oneTable) {
		t.Errorf("skip metadata: %+v", rows.Metadata)
	}
}
