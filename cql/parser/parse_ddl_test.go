package parser

import (
	"testing"

	"github.com/cosmosd/cosmosd/cqltype"
)

func strOpt(s string) OptionValue { return OptionValue{Kind: OptString, Text: s} }
func numOpt(s string) OptionValue { return OptionValue{Kind: OptNumber, Text: s} }
func mapOpt(kv ...any) OptionValue {
	v := OptionValue{Kind: OptMap, Map: []OptionEntry{}}
	for i := 0; i < len(kv); i += 2 {
		v.Map = append(v.Map, OptionEntry{Key: kv[i].(string), Value: kv[i+1].(OptionValue)})
	}
	return v
}

func TestParseKeyspaceDDL(t *testing.T) {
	runParseCases(t, []parseCase{
		{"seed", "CREATE KEYSPACE uprofile WITH REPLICATION = {'class' : 'SimpleStrategy', 'replication_factor' : 1}",
			&CreateKeyspaceStmt{Name: "uprofile", Options: Options{
				{Name: "replication", Value: mapOpt("class", strOpt("SimpleStrategy"), "replication_factor", numOpt("1"))}}}},
		{"cosmos throughput", "CREATE KEYSPACE sampleks WITH REPLICATION = { 'class' : 'SimpleStrategy'} AND cosmosdb_provisioned_throughput=2000;",
			&CreateKeyspaceStmt{Name: "sampleks", Options: Options{
				{Name: "replication", Value: mapOpt("class", strOpt("SimpleStrategy"))},
				{Name: "cosmosdb_provisioned_throughput", Value: numOpt("2000")}}}},
		{"if not exists no replication", "CREATE KEYSPACE IF NOT EXISTS myKeySpace WITH cosmosdb_provisioned_throughput=400",
			&CreateKeyspaceStmt{Name: "mykeyspace", IfNotExists: true, Options: Options{
				{Name: "cosmosdb_provisioned_throughput", Value: numOpt("400")}}}},
		{"nts durable", `CREATE SCHEMA "Ks" WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': '3', 'dc2': 2} AND durable_writes = false`,
			&CreateKeyspaceStmt{Name: "Ks", Options: Options{
				{Name: "replication", Value: mapOpt("class", strOpt("NetworkTopologyStrategy"), "dc1", strOpt("3"), "dc2", numOpt("2"))},
				{Name: "durable_writes", Value: OptionValue{Kind: OptBoolean, Text: "false"}}}}},
		{"alter", "ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
			&AlterKeyspaceStmt{Name: "ks", Options: Options{
				{Name: "replication", Value: mapOpt("class", strOpt("SimpleStrategy"), "replication_factor", numOpt("3"))}}}},
		{"alter if exists", "ALTER KEYSPACE IF EXISTS ks WITH durable_writes = true",
			&AlterKeyspaceStmt{Name: "ks", IfExists: true, Options: Options{{Name: "durable_writes", Value: OptionValue{Kind: OptBoolean, Text: "true"}}}}},
		{"drop", "DROP KEYSPACE ks", &DropKeyspaceStmt{Name: "ks"}},
		{"drop if exists", "DROP KEYSPACE IF EXISTS ks", &DropKeyspaceStmt{Name: "ks", IfExists: true}},
	})
}

func TestParseTableDDL(t *testing.T) {
	frozenMapListInt := cqltype.Type{Kind: cqltype.Map, Frozen: true, Elems: []cqltype.Type{
		tText, {Kind: cqltype.List, Frozen: true, Elems: []cqltype.Type{tInt}}}}
	runParseCases(t, []parseCase{
		{"seed inline pk", "CREATE TABLE uprofile.user (id int PRIMARY KEY, user text, message text)",
			&CreateTableStmt{Table: tbl("uprofile", "user"),
				Columns:      []ColumnDef{{Name: "id", Type: tInt}, {Name: "user", Type: tText}, {Name: "message", Type: tText}},
				PartitionKey: []string{"id"}}},
		{"seed clustering", "CREATE TABLE uprofile.user (user text, id int, message text, PRIMARY KEY (user, id))",
			&CreateTableStmt{Table: tbl("uprofile", "user"),
				Columns:      []ColumnDef{{Name: "user", Type: tText}, {Name: "id", Type: tInt}, {Name: "message", Type: tText}},
				PartitionKey: []string{"user"}, Clustering: []string{"id"}}},
		{"seed composite", "CREATE TABLE uprofile.user (firstname text, lastname text, id int, message text, PRIMARY KEY ((firstname, lastname), id))",
			&CreateTableStmt{Table: tbl("uprofile", "user"),
				Columns: []ColumnDef{{Name: "firstname", Type: tText}, {Name: "lastname", Type: tText},
					{Name: "id", Type: tInt}, {Name: "message", Type: tText}},
				PartitionKey: []string{"firstname", "lastname"}, Clustering: []string{"id"}}},
		{"single pk paren", "CREATE TABLE t (a int, PRIMARY KEY (a))",
			&CreateTableStmt{Table: tbl("", "t"), Columns: []ColumnDef{{Name: "a", Type: tInt}}, PartitionKey: []string{"a"}}},
		{"composite only", "CREATE TABLE t (a int, b int, PRIMARY KEY ((a, b)),)",
			&CreateTableStmt{Table: tbl("", "t"), Columns: []ColumnDef{{Name: "a", Type: tInt}, {Name: "b", Type: tInt}},
				PartitionKey: []string{"a", "b"}}},
		{"cosmos throughput", "CREATE TABLE sampleks.t1(user_id int PRIMARY KEY, lastname text) WITH cosmosdb_provisioned_throughput=2000;",
			&CreateTableStmt{Table: tbl("sampleks", "t1"),
				Columns:      []ColumnDef{{Name: "user_id", Type: tInt}, {Name: "lastname", Type: tText}},
				PartitionKey: []string{"user_id"}, Options: Options{{Name: "cosmosdb_provisioned_throughput", Value: numOpt("2000")}}}},
		{"all types and options", `CREATE TABLE IF NOT EXISTS ks."T" (
				k text, c1 timeuuid, c2 varchar, s int STATIC,
				a ascii, b bigint, bl blob, bo boolean, ct counter, de decimal, do double, du duration, f float,
				i inet, si smallint, ts timestamp, ti tinyint, u uuid, vi varint, d date, tm time,
				l list<int>, st set<text>, m map<text, int>, tu tuple<int, list<text>>,
				fm frozen<map<text, list<int>>>, addr address, fa frozen<ks2.address>, cu 'org.example.MyType',
				"Key" int, type text, value blob,
				PRIMARY KEY (k, c1, c2))
			WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC) AND gc_grace_seconds = 0 AND default_time_to_live = 10
				AND comment = 'x' AND compaction = {'class': 'SizeTieredCompactionStrategy', 'min_threshold': 4}
				AND speculative_retry = NONE AND bloom_filter_fp_chance = 0.01 AND COMPACT STORAGE`,
			&CreateTableStmt{Table: tbl("ks", "T"), IfNotExists: true,
				Columns: []ColumnDef{
					{Name: "k", Type: tText}, {Name: "c1", Type: cqltype.Scalar(cqltype.Timeuuid)}, {Name: "c2", Type: tText},
					{Name: "s", Type: tInt, Static: true},
					{Name: "a", Type: cqltype.Scalar(cqltype.Ascii)}, {Name: "b", Type: tBigint},
					{Name: "bl", Type: cqltype.Scalar(cqltype.Blob)}, {Name: "bo", Type: typBoolean},
					{Name: "ct", Type: cqltype.Scalar(cqltype.Counter)}, {Name: "de", Type: cqltype.Scalar(cqltype.Decimal)},
					{Name: "do", Type: cqltype.Scalar(cqltype.Double)}, {Name: "du", Type: cqltype.Scalar(cqltype.Duration)},
					{Name: "f", Type: cqltype.Scalar(cqltype.Float)}, {Name: "i", Type: cqltype.Scalar(cqltype.Inet)},
					{Name: "si", Type: cqltype.Scalar(cqltype.Smallint)}, {Name: "ts", Type: cqltype.Scalar(cqltype.Timestamp)},
					{Name: "ti", Type: cqltype.Scalar(cqltype.Tinyint)}, {Name: "u", Type: typUUID},
					{Name: "vi", Type: cqltype.Scalar(cqltype.Varint)}, {Name: "d", Type: cqltype.Scalar(cqltype.Date)},
					{Name: "tm", Type: cqltype.Scalar(cqltype.Time)},
					{Name: "l", Type: cqltype.ListOf(tInt)}, {Name: "st", Type: cqltype.SetOf(tText)},
					{Name: "m", Type: cqltype.MapOf(tText, tInt)},
					{Name: "tu", Type: cqltype.TupleOf(tInt, cqltype.Type{Kind: cqltype.List, Frozen: true, Elems: []cqltype.Type{tText}})},
					{Name: "fm", Type: frozenMapListInt},
					{Name: "addr", Type: cqltype.Type{Kind: cqltype.UDT, Name: "address"}},
					{Name: "fa", Type: cqltype.Type{Kind: cqltype.UDT, Keyspace: "ks2", Name: "address", Frozen: true}},
					{Name: "cu", Type: cqltype.Type{Kind: cqltype.Custom, Custom: "org.example.MyType"}},
					{Name: "Key", Type: tInt}, {Name: "type", Type: tText}, {Name: "value", Type: cqltype.Scalar(cqltype.Blob)},
				},
				PartitionKey:    []string{"k"},
				Clustering:      []string{"c1", "c2"},
				ClusteringOrder: []Ordering{{Column: "c1", Desc: true}, {Column: "c2"}},
				CompactStorage:  true,
				Options: Options{
					{Name: "gc_grace_seconds", Value: numOpt("0")},
					{Name: "default_time_to_live", Value: numOpt("10")},
					{Name: "comment", Value: strOpt("x")},
					{Name: "compaction", Value: mapOpt("class", strOpt("SizeTieredCompactionStrategy"), "min_threshold", numOpt("4"))},
					{Name: "speculative_retry", Value: OptionValue{Kind: OptIdent, Text: "none"}},
					{Name: "bloom_filter_fp_chance", Value: numOpt("0.01")},
				}}},
		{"columnfamily", "CREATE COLUMNFAMILY t (a int PRIMARY KEY)",
			&CreateTableStmt{Table: tbl("", "t"), Columns: []ColumnDef{{Name: "a", Type: tInt}}, PartitionKey: []string{"a"}}},
		{"no pk", "CREATE TABLE t (a int)",
			&CreateTableStmt{Table: tbl("", "t"), Columns: []ColumnDef{{Name: "a", Type: tInt}}}},
		{"drop", "DROP TABLE ks.t", &DropTableStmt{Table: tbl("ks", "t")}},
		{"drop if exists", "DROP TABLE IF EXISTS t", &DropTableStmt{Table: tbl("", "t"), IfExists: true}},
		{"alter add", "ALTER TABLE t ADD c int", &AlterTableStmt{Table: tbl("", "t"), Kind: AlterAdd, Add: []ColumnDef{{Name: "c", Type: tInt}}}},
		{"alter add many", "ALTER TABLE IF EXISTS ks.t ADD IF NOT EXISTS (c int, d set<text> static)",
			&AlterTableStmt{Table: tbl("ks", "t"), IfExists: true, Kind: AlterAdd, AddIfNotExists: true,
				Add: []ColumnDef{{Name: "c", Type: tInt}, {Name: "d", Type: cqltype.SetOf(tText), Static: true}}}},
		{"alter drop", "ALTER TABLE t DROP c", &AlterTableStmt{Table: tbl("", "t"), Kind: AlterDrop, Drop: []string{"c"}}},
		{"alter drop many", "ALTER TABLE t DROP IF EXISTS (c, d)",
			&AlterTableStmt{Table: tbl("", "t"), Kind: AlterDrop, DropIfExists: true, Drop: []string{"c", "d"}}},
		{"alter rename", "ALTER TABLE t RENAME a TO b AND c TO d",
			&AlterTableStmt{Table: tbl("", "t"), Kind: AlterRename, Renames: [][2]string{{"a", "b"}, {"c", "d"}}}},
		{"alter with", "ALTER TABLE gks1.t1 WITH cosmosdb_provisioned_throughput=10000;",
			&AlterTableStmt{Table: tbl("gks1", "t1"), Kind: AlterWith, Options: Options{{Name: "cosmosdb_provisioned_throughput", Value: numOpt("10000")}}}},
		{"alter type", "ALTER TABLE t ALTER c TYPE blob",
			&AlterTableStmt{Table: tbl("", "t"), Kind: AlterColumnType, AlterColumn: "c", AlterType: cqltype.Scalar(cqltype.Blob)}},
		{"alter drop compact storage", "ALTER TABLE t DROP COMPACT STORAGE",
			&AlterTableStmt{Table: tbl("", "t"), Kind: AlterDropCompactStorage}},
		{"alter drop column named compact", "ALTER TABLE t DROP compact",
			&AlterTableStmt{Table: tbl("", "t"), Kind: AlterDrop, Drop: []string{"compact"}}},
	})
}

func TestParseIndexAndTypeDDL(t *testing.T) {
	runParseCases(t, []parseCase{
		{"index", "CREATE INDEX ON t (c)",
			&CreateIndexStmt{Table: tbl("", "t"), Targets: []IndexTarget{{Column: "c"}}}},
		{"named index", "CREATE INDEX IF NOT EXISTS idx ON ks.t (keys(m))",
			&CreateIndexStmt{Name: "idx", IfNotExists: true, Table: tbl("ks", "t"), Targets: []IndexTarget{{Column: "m", Kind: IndexKeys}}}},
		{"index targets", "CREATE INDEX i ON t (VALUES(l), ENTRIES(m), FULL(f), keys)",
			&CreateIndexStmt{Name: "i", Table: tbl("", "t"), Targets: []IndexTarget{
				{Column: "l", Kind: IndexValues}, {Column: "m", Kind: IndexEntries}, {Column: "f", Kind: IndexFull}, {Column: "keys"}}}},
		{"custom index", "CREATE CUSTOM INDEX i ON t (c) USING 'org.apache.cassandra.index.sasi.SASIIndex' WITH OPTIONS = {'mode': 'CONTAINS'}",
			&CreateIndexStmt{Name: "i", Table: tbl("", "t"), Custom: true, Targets: []IndexTarget{{Column: "c"}},
				Using: "org.apache.cassandra.index.sasi.SASIIndex", Options: Options{{Name: "options", Value: mapOpt("mode", strOpt("CONTAINS"))}}}},
		{"drop index", "DROP INDEX IF EXISTS ks.idx", &DropIndexStmt{Index: tbl("ks", "idx"), IfExists: true}},
		{"create type", "CREATE TYPE IF NOT EXISTS ks.address (street text, zip int, tags frozen<set<text>>)",
			&CreateTypeStmt{Name: tbl("ks", "address"), IfNotExists: true, Fields: []cqltype.Field{
				{Name: "street", Type: tText}, {Name: "zip", Type: tInt},
				{Name: "tags", Type: cqltype.Type{Kind: cqltype.Set, Frozen: true, Elems: []cqltype.Type{tText}}}}}},
		{"drop type", "DROP TYPE address", &DropTypeStmt{Name: tbl("", "address")}},
		{"quoted native name", `CREATE TYPE "text" (a int)`, &CreateTypeStmt{Name: tbl("", "text"), Fields: []cqltype.Field{{Name: "a", Type: tInt}}}},
		{"udt named like collections", "CREATE TABLE t (a list, b frozen<map>, c tuple PRIMARY KEY)",
			&CreateTableStmt{Table: tbl("", "t"), Columns: []ColumnDef{
				{Name: "a", Type: cqltype.Type{Kind: cqltype.UDT, Name: "list"}},
				{Name: "b", Type: cqltype.Type{Kind: cqltype.UDT, Name: "map", Frozen: true}},
				{Name: "c", Type: cqltype.Type{Kind: cqltype.UDT, Name: "tuple"}}},
				PartitionKey: []string{"c"}}},
	})
}

func TestParseUnsupported(t *testing.T) {
	for _, tc := range []struct{ q, what string }{
		{"CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE a IS NOT NULL PRIMARY KEY (a)", "CREATE MATERIALIZED VIEW"},
		{"DROP MATERIALIZED VIEW IF EXISTS mv", "DROP MATERIALIZED VIEW"},
		{"ALTER MATERIALIZED VIEW mv WITH comment = 'x'", "ALTER MATERIALIZED VIEW"},
		{"CREATE OR REPLACE FUNCTION f (a int) CALLED ON NULL INPUT RETURNS int LANGUAGE java AS 'return a;'", "CREATE FUNCTION"},
		{"CREATE FUNCTION f (a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS $$ return a; $$", "CREATE FUNCTION"},
		{"DROP FUNCTION f", "DROP FUNCTION"},
		{"CREATE AGGREGATE a (int) SFUNC f STYPE int", "CREATE AGGREGATE"},
		{"DROP AGGREGATE a", "DROP AGGREGATE"},
		{"CREATE TRIGGER tr ON t USING 'x'", "CREATE TRIGGER"},
		{"DROP TRIGGER tr ON t", "DROP TRIGGER"},
		{"ALTER TYPE address ADD country text", "ALTER TYPE"},
		{"LIST SUPERUSERS", "LIST SUPERUSERS"},
		{"DESCRIBE KEYSPACES", "DESCRIBE"},
		{"DESC TABLE t", "DESCRIBE"},
	} {
		got, err := Parse("  " + tc.q + " ; ")
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.q, err)
			continue
		}
		u, ok := got.(*UnsupportedStmt)
		if !ok || u.What != tc.what || u.Text != tc.q {
			t.Errorf("Parse(%q) = %s, want What %q", tc.q, dump(got), tc.what)
		}
	}
}
