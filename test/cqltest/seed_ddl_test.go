package cqltest

import (
	"errors"
	"testing"

	"github.com/gocql/gocql"
)

// testSeed is the scenario with each of the three uprofile.user
// table forms; dropping and re-creating the table in between also checks
// that a new table of the same name starts empty.
func testSeed(t *testing.T, e *env) {
	s := e.s
	exec(t, s, "DROP KEYSPACE IF EXISTS uprofile",
		"CREATE KEYSPACE uprofile WITH REPLICATION = {'class' : 'SimpleStrategy', 'replication_factor' : 1}")
	t.Run("SinglePK", func(t *testing.T) {
		exec(t, s, "CREATE TABLE uprofile.user (id int PRIMARY KEY, user text, message text)",
			"insert into uprofile.user (user, id, message) values ('theo', 1, 'hello')",
			"insert into uprofile.user (user, id, message) values ('theo', 2, 'hello again')")
		var user, msg string
		one(t, s, "select user, message from uprofile.user where id = ?", []any{2}, &user, &msg)
		eq(t, "row 2", []string{user, msg}, []string{"theo", "hello again"})
		eq(t, "count", count(t, s, "select count(*) from uprofile.user"), int64(2))
		// A full scan returns rows in token order; the tokens are
		// Murmur3 of the 4-byte int keys (computed with the Python
		// driver's murmur3).
		eq(t, "tokens", ints(t, s, "select token(id) from uprofile.user"), []int64{-4069959284402364209, -3248873570005575792})
		eq(t, "scan messages", strs(t, s, "select message from uprofile.user"), []string{"hello", "hello again"})
	})
	t.Run("Clustered", func(t *testing.T) {
		exec(t, s, "DROP TABLE uprofile.user",
			"CREATE TABLE uprofile.user (user text, id int, message text, PRIMARY KEY (user, id))")
		eq(t, "rows after re-create", count(t, s, "select count(*) from uprofile.user"), int64(0))
		exec(t, s, "insert into uprofile.user (user, id, message) values ('theo', 2, 'hello again')",
			"insert into uprofile.user (user, id, message) values ('theo', 1, 'hello')")
		eq(t, "clustering order", strs(t, s, "select message from uprofile.user where user = 'theo'"), []string{"hello", "hello again"})
		eq(t, "ids", ints(t, s, "select id from uprofile.user where user = ?", "theo"), []int64{1, 2})
		eq(t, "reverse", ints(t, s, "select id from uprofile.user where user = ? order by id desc", "theo"), []int64{2, 1})
	})
	t.Run("CompositePK", func(t *testing.T) {
		exec(t, s, "DROP TABLE uprofile.user",
			"CREATE TABLE uprofile.user (firstname text, lastname text, id int, message text, PRIMARY KEY ((firstname, lastname), id))",
			"insert into uprofile.user (firstname, lastname, id, message) values ('theo', 'doe', 2, 'hello again')",
			"insert into uprofile.user (firstname, lastname, id, message) values ('theo', 'doe', 1, 'hello')",
			"insert into uprofile.user (firstname, lastname, id, message) values ('theo', 'roe', 1, 'other')")
		eq(t, "doe", strs(t, s, "select message from uprofile.user where firstname = ? and lastname = ?", "theo", "doe"), []string{"hello", "hello again"})
		eq(t, "roe", strs(t, s, "select message from uprofile.user where firstname = 'theo' and lastname = 'roe'"), []string{"other"})
		queryErr(t, s, "select message from uprofile.user where firstname = 'theo'", codeInvalid, "ALLOW FILTERING")
		eq(t, "partial key with filtering", len(query(t, s, "select message from uprofile.user where firstname = 'theo' allow filtering")), 3)
	})
}

func testDDL(t *testing.T, e *env) {
	s := e.s
	ks := keyspace(t, s, "ddl")
	t.Run("Keyspace", func(t *testing.T) {
		err := s.Query("CREATE KEYSPACE ddl WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").Exec()
		wantErr(t, "create existing keyspace", err, codeAlreadyExists, "Keyspace ddl already exists")
		var ae *gocql.RequestErrAlreadyExists
		if !errors.As(err, &ae) || ae.Keyspace != "ddl" || ae.Table != "" {
			t.Fatalf("AlreadyExists fields = %+v, want keyspace ddl and empty table", ae)
		}
		exec(t, s, "CREATE KEYSPACE IF NOT EXISTS ddl WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
			"CREATE KEYSPACE IF NOT EXISTS ddl_nts WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3} AND durable_writes = true",
			"ALTER KEYSPACE ddl_nts WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2} AND durable_writes = false")
		var durable bool
		var repl map[string]string
		one(t, s, "SELECT durable_writes, replication FROM system_schema.keyspaces WHERE keyspace_name = ?", []any{"ddl_nts"}, &durable, &repl)
		eq(t, "altered durable_writes", durable, false)
		eq(t, "altered replication", repl, map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "2"})
		exec(t, s, "DROP KEYSPACE ddl_nts", "DROP KEYSPACE IF EXISTS ddl_nts")
		queryErr(t, s, "DROP KEYSPACE ddl_nts", codeConfig, "Cannot drop non existing keyspace 'ddl_nts'")
		queryErr(t, s, "ALTER KEYSPACE ddl_nts WITH durable_writes = true", codeConfig, "non existing keyspace")
		queryErr(t, s, "CREATE KEYSPACE bad WITH replication = {'replication_factor': 1}", codeConfig, "Missing replication strategy class")
		queryErr(t, s, "CREATE KEYSPACE bad WITH replication = {'class': 'NoSuchStrategy'}", codeConfig, "NoSuchStrategy")
		queryErr(t, s, "CREATE KEYSPACE bad WITH nosuchoption = 1", codeSyntax, "Unknown property 'nosuchoption'")
		queryErr(t, s, "DROP KEYSPACE system", codeUnauthorized, "system keyspace is not user-modifiable")
		// Cosmos DB's throughput option is accepted on keyspaces.
		exec(t, s, "CREATE KEYSPACE IF NOT EXISTS ddl_ru WITH cosmosdb_provisioned_throughput = 400", "DROP KEYSPACE ddl_ru")
	})
	t.Run("Table", func(t *testing.T) {
		exec(t, s, "CREATE TABLE ddl.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC) AND comment = 'hi' AND gc_grace_seconds = 0")
		err := s.Query("CREATE TABLE ddl.t (k int PRIMARY KEY)").Exec()
		wantErr(t, "create existing table", err, codeAlreadyExists, "Table ddl.t already exists")
		var ae *gocql.RequestErrAlreadyExists
		if !errors.As(err, &ae) || ae.Keyspace != "ddl" || ae.Table != "t" {
			t.Fatalf("AlreadyExists fields = %+v, want ddl/t", ae)
		}
		exec(t, s, "CREATE TABLE IF NOT EXISTS ddl.t (k int PRIMARY KEY)")
		var comment string
		var gc int
		one(t, s, "SELECT comment, gc_grace_seconds FROM system_schema.tables WHERE keyspace_name = 'ddl' AND table_name = 't'", nil, &comment, &gc)
		eq(t, "comment", comment, "hi")
		eq(t, "gc_grace_seconds", gc, 0)
		exec(t, s, "INSERT INTO ddl.t (k, c, v) VALUES (1, 1, 'a')", "INSERT INTO ddl.t (k, c, v) VALUES (1, 2, 'b')")
		eq(t, "desc order", ints(t, s, "SELECT c FROM ddl.t WHERE k = 1"), []int64{2, 1})

		// ALTER TABLE ADD / DROP / RENAME / WITH.
		exec(t, s, "ALTER TABLE ddl.t ADD w int", "ALTER TABLE ddl.t ADD (x text, y set<int>)", "ALTER TABLE ddl.t ADD IF NOT EXISTS w int")
		queryErr(t, s, "ALTER TABLE ddl.t ADD w int", codeInvalid, "conflicts with an existing column")
		exec(t, s, "UPDATE ddl.t SET w = 7, x = 'x', y = {1} WHERE k = 1 AND c = 1")
		var w int
		var x string
		one(t, s, "SELECT w, x FROM ddl.t WHERE k = 1 AND c = 1", nil, &w, &x)
		eq(t, "added columns", []any{w, x}, []any{7, "x"})
		exec(t, s, "ALTER TABLE ddl.t DROP w", "ALTER TABLE ddl.t DROP IF EXISTS w")
		queryErr(t, s, "SELECT w FROM ddl.t", codeInvalid, "Undefined column name w")
		queryErr(t, s, "ALTER TABLE ddl.t DROP w", codeInvalid, "Column w was not found")
		queryErr(t, s, "ALTER TABLE ddl.t DROP k", codeInvalid, "Cannot drop PRIMARY KEY part k")
		// A re-added column of a dropped name does not resurrect old data.
		exec(t, s, "ALTER TABLE ddl.t ADD w int")
		var wp *int
		one(t, s, "SELECT w FROM ddl.t WHERE k = 1 AND c = 1", nil, &wp)
		if wp != nil {
			t.Fatalf("re-added column w = %d, want null", *wp)
		}
		exec(t, s, "ALTER TABLE ddl.t RENAME c TO c2")
		eq(t, "renamed clustering column", ints(t, s, "SELECT c2 FROM ddl.t WHERE k = 1 AND c2 = 2"), []int64{2})
		queryErr(t, s, "ALTER TABLE ddl.t RENAME v TO v2", codeInvalid, "Cannot rename non PRIMARY KEY column v")
		exec(t, s, "ALTER TABLE ddl.t WITH comment = 'changed' AND default_time_to_live = 100")
		var ttl int
		one(t, s, "SELECT comment, default_time_to_live FROM system_schema.tables WHERE keyspace_name = 'ddl' AND table_name = 't'", nil, &comment, &ttl)
		eq(t, "altered options", []any{comment, ttl}, []any{"changed", 100})
		queryErr(t, s, "ALTER TABLE ddl.t WITH nosuch = 1", codeSyntax, "Unknown property 'nosuch'")
		queryErr(t, s, "ALTER TABLE ddl.nosuch ADD z int", codeInvalid, "doesn't exist")
		exec(t, s, "ALTER TABLE IF EXISTS ddl.nosuch ADD z int")
		queryErr(t, s, "ALTER TABLE ddl.t ALTER v TYPE blob", codeInvalid, "Altering column types is no longer supported")

		// TRUNCATE empties the table and keeps it.
		exec(t, s, "TRUNCATE ddl.t")
		eq(t, "rows after truncate", count(t, s, "SELECT count(*) FROM ddl.t"), int64(0))
		exec(t, s, "INSERT INTO ddl.t (k, c2, v) VALUES (5, 5, 'after')", "TRUNCATE TABLE ddl.t")
		eq(t, "rows after truncate table", count(t, s, "SELECT count(*) FROM ddl.t"), int64(0))

		exec(t, s, "DROP TABLE ddl.t", "DROP TABLE IF EXISTS ddl.t")
		queryErr(t, s, "DROP TABLE ddl.t", codeInvalid, "doesn't exist")
		queryErr(t, s, "SELECT * FROM ddl.t", codeInvalid, "unconfigured table t")
		queryErr(t, s, "TRUNCATE ddl.t", codeInvalid, "unconfigured table t")
	})
	t.Run("TableErrors", func(t *testing.T) {
		for _, tc := range []struct {
			q    string
			code int
			frag string
		}{
			{"CREATE TABLE ddl.e (k int, v int)", codeInvalid, "PRIMARY KEY"},
			{"CREATE TABLE ddl.e (k int PRIMARY KEY, k int)", codeInvalid, "Multiple definition of identifier k"},
			{"CREATE TABLE ddl.e (k int, PRIMARY KEY (z))", codeInvalid, "Unknown definition z referenced in PRIMARY KEY"},
			{"CREATE TABLE ddl.e (k int PRIMARY KEY, s int STATIC)", codeInvalid, "Static columns are only useful"},
			{"CREATE TABLE ddl.e (k list<int> PRIMARY KEY)", codeInvalid, "Invalid non-frozen collection type for PRIMARY KEY component k"},
			{"CREATE TABLE ddl.e (k int PRIMARY KEY, c counter, v int)", codeInvalid, "Cannot mix counter and non counter columns"},
			{"CREATE TABLE ddl.e (k int, c int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (k DESC)", codeInvalid, "Only clustering key columns"},
			{"CREATE TABLE ddl.e (k int PRIMARY KEY) WITH nosuch = 3", codeSyntax, "Unknown property 'nosuch'"},
			{"CREATE TABLE nosuchks.e (k int PRIMARY KEY)", codeInvalid, "Keyspace 'nosuchks' doesn't exist"},
			{"CREATE TABLE ddl.e (k int PRIMARY KEY, v nosuchtype)", codeInvalid, "nosuchtype"},
			{"CREATE TABLE system.e (k int PRIMARY KEY)", codeUnauthorized, "not user-modifiable"},
			{"CREATE TABLE e (k int PRIMARY KEY)", codeInvalid, "No keyspace has been specified"},
			{"CREATE TABLE ddl.e (k int PRIMARY KEY) WITH COMPACT STORAGE", codeInvalid, "COMPACT STORAGE"},
			{"CREATE TABLE ddl.e (k duration PRIMARY KEY)", codeInvalid, "duration type is not supported for PRIMARY KEY column 'k'"},
		} {
			queryErr(t, s, tc.q, tc.code, tc.frag)
		}
		// Throughput and the other table options are accepted.
		exec(t, s, "CREATE TABLE ddl.ru (k int PRIMARY KEY, v int) WITH cosmosdb_provisioned_throughput = 20000 AND compaction = {'class': 'LeveledCompactionStrategy'} AND caching = {'keys': 'ALL'}",
			"INSERT INTO ddl.ru (k, v) VALUES (1, 1)")
		eq(t, "rows of throughput table", count(t, s, "SELECT count(*) FROM ddl.ru"), int64(1))
	})
	t.Run("QuotedNames", func(t *testing.T) {
		exec(t, s, `DROP KEYSPACE IF EXISTS "CaseKs"`,
			`CREATE KEYSPACE "CaseKs" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
			`CREATE TABLE "CaseKs"."Tab" ("Key" int, "select" int, "Value" text, value int, PRIMARY KEY ("Key", "select"))`,
			`INSERT INTO "CaseKs"."Tab" ("Key", "select", "Value", value) VALUES (1, 2, 'upper', 3)`)
		var upper string
		var lower, sel int
		one(t, s, `SELECT "Value", VALUE, "select" FROM "CaseKs"."Tab" WHERE "Key" = 1`, nil, &upper, &lower, &sel)
		eq(t, "quoted and unquoted columns", []any{upper, lower, sel}, []any{"upper", 3, 2})
		queryErr(t, s, `SELECT * FROM "CaseKs".tab`, codeInvalid, "unconfigured table tab")
		queryErr(t, s, `SELECT * FROM caseks."Tab"`, codeInvalid, "caseks")
		queryErr(t, s, `SELECT key FROM "CaseKs"."Tab"`, codeInvalid, "Undefined column name key")
		km, err := s.KeyspaceMetadata("CaseKs")
		if err != nil || km.Tables["Tab"] == nil || km.Tables["Tab"].PartitionKey[0].Name != "Key" {
			t.Fatalf("metadata of quoted names: %v %+v", err, km)
		}
		cs := e.session(t, func(cc *gocql.ClusterConfig) { cc.Keyspace = "CaseKs" })
		eq(t, "USE of a quoted keyspace", strs(t, cs, `SELECT "Value" FROM "Tab" WHERE "Key" = 1`), []string{"upper"})
		exec(t, s, `DROP KEYSPACE "CaseKs"`)
	})
	t.Run("Use", func(t *testing.T) {
		us := e.session(t, func(cc *gocql.ClusterConfig) { cc.Keyspace = ks; cc.NumConns = 1 })
		exec(t, us, "CREATE TABLE u (k int PRIMARY KEY, v int)", "INSERT INTO u (k, v) VALUES (1, 2)")
		eq(t, "unqualified select", ints(t, us, "SELECT v FROM u WHERE k = 1"), []int64{2})
		eq(t, "qualified select", ints(t, s, "SELECT v FROM ddl.u WHERE k = 1"), []int64{2})
		// gocql refuses USE in a query (ErrUseStmt); USE errors are
		// tested with raw frames.
		if err := s.Query(`USE "ddl"`).Exec(); !errors.Is(err, gocql.ErrUseStmt) {
			t.Fatalf("gocql USE: %v, want ErrUseStmt", err)
		}
	})
}
