package daemon

import (
	"time"

	"github.com/cosmosd/cosmosd/cql/parser"
)

// classifyStatement returns the kind label of stmt and the table it
// addresses as "keyspace.table" (keyspace is the session's, for
// unqualified names). known bounds the table label to tables in the
// schema: a client naming tables that do not exist must not create
// series without bound, so those, statements on several tables and
// statements on none get "".
func classifyStatement(stmt parser.Statement, keyspace string, known func(keyspace, table string) bool) (kind, table string) {
	name := func(t parser.TableName) string {
		ks := t.Keyspace
		if ks == "" {
			ks = keyspace
		}
		if ks == "" || !known(ks, t.Name) {
			return ""
		}
		return ks + "." + t.Name
	}
	switch s := stmt.(type) {
	case *parser.SelectStmt:
		return kindRead, name(s.Table)
	case *parser.InsertStmt:
		if s.IfNotExists {
			return kindLWT, name(s.Table)
		}
		return kindWrite, name(s.Table)
	case *parser.UpdateStmt:
		if s.IfExists || len(s.Conditions) > 0 {
			return kindLWT, name(s.Table)
		}
		return kindWrite, name(s.Table)
	case *parser.DeleteStmt:
		if s.IfExists || len(s.Conditions) > 0 {
			return kindLWT, name(s.Table)
		}
		return kindWrite, name(s.Table)
	case *parser.BatchStmt:
		kind = kindBatch
		for i, inner := range s.Statements {
			k, t := classifyStatement(inner, keyspace, known)
			if k == kindLWT {
				// A conditional batch runs as one LWT.
				kind = kindLWT
			}
			if i == 0 {
				table = t
			} else if t != table {
				table = ""
			}
		}
		return kind, table
	case *parser.CreateKeyspaceStmt, *parser.AlterKeyspaceStmt, *parser.DropKeyspaceStmt,
		*parser.CreateTableStmt, *parser.AlterTableStmt, *parser.DropTableStmt, *parser.TruncateStmt,
		*parser.CreateIndexStmt, *parser.DropIndexStmt, *parser.CreateTypeStmt, *parser.DropTypeStmt:
		// The table is left out: DDL is rare and its latency is the
		// schema change's, not a table's.
		return kindDDL, ""
	default:
		return kindOther, ""
	}
}

// observeStatement records the duration of one statement executed in a
// session whose keyspace is keyspace; the executor calls it through
// exec.Config.ObserveStatement. known is the schema lookup of
// classifyStatement.
func (m *requestMetrics) observeStatement(stmt parser.Statement, keyspace string, d time.Duration, known func(keyspace, table string) bool) {
	kind, table := classifyStatement(stmt, keyspace, known)
	m.observeDuration(kind, table, d)
}
