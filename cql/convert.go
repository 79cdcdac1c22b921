package cql

// Conversions between the protocol's frames and the executor's types:
// request parameters and values in, results, metadata and errors out.

import (
	"github.com/cosmosd/cosmosd/cql/exec"
	"github.com/cosmosd/cosmosd/cql/frame"
)

func request(p frame.QueryParams) exec.Request {
	r := exec.Request{
		Consistency: uint16(p.Consistency), Values: values(p.Values), Names: p.Names, PageSize: p.PageSize,
		PagingState: p.PagingState, Timestamp: p.Timestamp, HasTimestamp: p.HasTimestamp,
	}
	if p.HasSerialConsistency {
		r.SerialConsistency = uint16(p.SerialConsistency)
	} else {
		r.SerialConsistency = exec.Serial
	}
	return r
}

func values(vs []frame.Value) []exec.Value {
	out := make([]exec.Value, len(vs))
	for i, v := range vs {
		switch {
		case v.IsUnset():
			out[i] = exec.Value{Unset: true}
		case v.IsNull():
			out[i] = exec.Value{}
		default:
			b := v.Bytes
			if b == nil {
				b = []byte{}
			}
			out[i] = exec.Value{Bytes: b}
		}
	}
	return out
}

func specs(cs []exec.ColumnSpec) []frame.ColumnSpec {
	out := make([]frame.ColumnSpec, len(cs))
	for i, c := range cs {
		out[i] = frame.ColumnSpec{Keyspace: c.Keyspace, Table: c.Table, Name: c.Name, Type: c.Type}
	}
	return out
}

// tableSpec reports whether every column of cs comes from one table, and
// which. Such metadata is sent with the Global_tables_spec flag (protocol
// v4 §4.2.5.2, §4.2.5.4), as Cassandra does whenever the columns are all of
// one table (ResultSet.ResultMetadata, PreparedMetadata): gocql learns a
// prepared statement's keyspace and table only from that flag (issue 15),
// and uses them for Query.Keyspace(), Query.Table() and token-aware
// routing. No columns, no flag, as in Cassandra.
func tableSpec(cs []exec.ColumnSpec) (global bool, keyspace, table string) {
	if len(cs) == 0 {
		return false, "", ""
	}
	keyspace, table = cs[0].Keyspace, cs[0].Table
	for _, c := range cs[1:] {
		if c.Keyspace != keyspace || c.Table != table {
			return false, "", ""
		}
	}
	return true, keyspace, table
}

// rowsMetadata is the metadata of rows with columns cs.
func rowsMetadata(cs []exec.ColumnSpec, pagingState []byte) frame.RowsMetadata {
	md := frame.RowsMetadata{Columns: specs(cs), PagingState: pagingState}
	md.GlobalTableSpec, md.Keyspace, md.Table = tableSpec(cs)
	return md
}

func toFrameResult(r *exec.Result, skipMetadata bool) frame.Response {
	switch r.Kind {
	case exec.ResultRows:
		md := rowsMetadata(r.Rows.Columns, r.Rows.PagingState)
		if skipMetadata {
			md = frame.RowsMetadata{NoMetadata: true, ColumnCount: len(r.Rows.Columns), PagingState: r.Rows.PagingState}
		}
		return &frame.RowsResult{Metadata: md, Rows: r.Rows.Rows}
	case exec.ResultSetKeyspace:
		return &frame.SetKeyspaceResult{Keyspace: r.Keyspace}
	case exec.ResultSchemaChange:
		return &frame.SchemaChangeResult{SchemaChange: frame.SchemaChange{Change: r.Change.Change, Target: r.Change.Target, Keyspace: r.Change.Keyspace, Name: r.Change.Name}}
	case exec.ResultPrepared:
		p := r.Prepared
		res := &frame.PreparedResult{ID: p.ID, Metadata: frame.PreparedMetadata{Columns: specs(p.Variables), PKIndices: p.PKIndices}}
		md := &res.Metadata
		md.GlobalTableSpec, md.Keyspace, md.Table = tableSpec(p.Variables)
		if p.ResultColumns != nil {
			res.ResultMetadata = rowsMetadata(p.ResultColumns, nil)
		} else {
			res.ResultMetadata = frame.RowsMetadata{NoMetadata: true}
		}
		return res
	}
	return &frame.VoidResult{}
}

func toFrameError(err error) *frame.Error {
	e := exec.AsError(err)
	return &frame.Error{
		Code: frame.ErrorCode(e.Code), Message: e.Message, Consistency: frame.Consistency(e.Consistency),
		Required: e.Required, Alive: e.Alive, Received: e.Alive, BlockFor: e.Required, DataPresent: e.DataPresent,
		WriteType: e.WriteType, Keyspace: e.Keyspace, Table: e.Table, UnpreparedID: e.PreparedID,
	}
}
