package exec

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cql/exec/exectest"
	cqlparser "github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

// The planner's fuzz target: arbitrary CQL text with arbitrary bound
// values goes through everything the executor does before it sends a
// request (parse, PREPARE, binding, analysis of SELECT, INSERT, UPDATE,
// DELETE and BATCH, and the checks of DDL) against a fixed schema, without
// a router or any node. The schema lives in a real cluster.Meta on the
// in-memory metadata store (metakv.Mem): the executor reads the schema
// only through its MetaView. Nothing the target runs writes to the store
// except AllocateID for a CREATE TABLE that passed every check (the placer
// then refuses it), so the schema stays fixed.

// fuzzSchema is the fixed schema: the tables of the CQL conformance tests
// (test/cqltest), whose statements seed the target, and a keyspace ks with
// every shape of key and column besides: simple, compound and composite
// partition keys, clustering orders, frozen collections in keys, static
// columns, collections, tuples and counters.
var fuzzSchema = []string{
	"CREATE TABLE ins.t (k int, c int, v text, w int, PRIMARY KEY (k, c))",
	"CREATE TABLE upd.t (k int, c int, d int, v text, w int, PRIMARY KEY (k, c, d))",
	"CREATE TABLE del.t (k int, c int, v text, w int, m map<text, int>, l list<int>, PRIMARY KEY (k, c))",
	"CREATE TABLE ttl.t (k int, c int, v text, w text, PRIMARY KEY (k, c))",
	"CREATE TABLE ttl.d (k int PRIMARY KEY, v int) WITH default_time_to_live = 1",
	"CREATE TABLE ts.t (k int PRIMARY KEY, v text, w text)",
	"CREATE TABLE cnt.t (k int, c int, hits counter, misses counter, PRIMARY KEY (k, c))",
	"CREATE TABLE coll.t (k int PRIMARY KEY, l list<text>, st set<int>, m map<text, int>)",
	"CREATE TABLE tup.t (k frozen<tuple<int, text>>, c frozen<list<int>>, tp tuple<int, text, double>, fl frozen<list<frozen<set<int>>>>, fm frozen<map<text, frozen<list<int>>>>, nested map<int, frozen<map<text, int>>>, PRIMARY KEY (k, c))",
	"CREATE TABLE st.t (k int, c int, s text STATIC, s2 int STATIC, v text, PRIMARY KEY (k, c))",
	"CREATE TABLE errs.t (k int PRIMARY KEY, v text)",
	"CREATE TABLE prep.t (k int, c int, v text, PRIMARY KEY (k, c))",
	"CREATE TABLE prep.a (k int PRIMARY KEY, v text)",
	"CREATE TABLE comp.t (k int, c int, v text, PRIMARY KEY (k, c))",
	"CREATE TABLE hostile.pk3 (a int, b int, c int, v int, PRIMARY KEY ((a, b, c)))",
	"CREATE TABLE hostile.ck3 (k int, c1 int, c2 int, c3 int, v int, PRIMARY KEY (k, c1, c2, c3))",
	"CREATE TABLE hostile.m (k int, c int, v blob, PRIMARY KEY (k, c))",
	"CREATE TABLE hostile.l (k int PRIMARY KEY, l list<int>)",
	"CREATE TABLE hostile.r (k int, c int, v blob, PRIMARY KEY (k, c))",
	"CREATE TABLE big.t (k int, c int, st int STATIC, v int, PRIMARY KEY (k, c))",
	"CREATE TABLE big.keys (k text, c text, v int, PRIMARY KEY (k, c))",
	"CREATE TABLE lim.t (k int PRIMARY KEY, v text, b blob, l list<text>)",
	"CREATE TABLE lwt.t (k int, c int, v text, w int, m map<text, int>, s text STATIC, PRIMARY KEY (k, c))",
	"CREATE TABLE bat.t (k int, c int, v text, PRIMARY KEY (k, c))",
	"CREATE TABLE bat.u (k int PRIMARY KEY, v text)",
	"CREATE TABLE bat.cnt (k int PRIMARY KEY, n counter)",
	"CREATE TABLE bind.t (k int, c int, v text, PRIMARY KEY (k, c))",
	"CREATE TABLE raw.t (k int, c int, v text, PRIMARY KEY (k, c))",
	"CREATE TABLE raw.tup (k int PRIMARY KEY, tp tuple<int, text>)",
	"CREATE TABLE raw.cnt (k int PRIMARY KEY, n counter)",
	"CREATE TABLE raw.coll (k int PRIMARY KEY, l list<text>, m map<text, int>, ts timestamp, i int)",
	"CREATE TABLE fn.t (k int PRIMARY KEY, tu timeuuid, u uuid, ts timestamp, d date, b blob, i int, tx text)",
	"CREATE TABLE fn.events (k int, at timeuuid, PRIMARY KEY (k, at))",
	"CREATE TABLE tok.fn_int (k int PRIMARY KEY, v int)",
	"CREATE TABLE tok.fn_bigint (k bigint PRIMARY KEY, v int)",
	"CREATE TABLE tok.fn_text (k text PRIMARY KEY, v int)",
	"CREATE TABLE tok.fn_comp (a int, b text, v int, PRIMARY KEY ((a, b)))",
	"CREATE TABLE tok.fn_comp2 (a text, b text, c int, v int, PRIMARY KEY ((a, b), c))",
	"CREATE TABLE scan.t (k int, c int, v int, PRIMARY KEY (k, c))",
	"CREATE TABLE pg.t (k int, c int, st int STATIC, v int, PRIMARY KEY (k, c))",
	"CREATE TABLE pg.d (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)",
	"CREATE TABLE flt.t (a int, b int, c int, d int, st int STATIC, v int, tags set<text>, PRIMARY KEY ((a, b), c, d))",
	"CREATE TABLE uprofile.user (user text, id int, message text, PRIMARY KEY (user, id))",
	"CREATE TABLE ddl.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC) AND comment = 'hi' AND gc_grace_seconds = 0",
	"CREATE TABLE ddl.ru (k int PRIMARY KEY, v int) WITH cosmosdb_provisioned_throughput = 20000",
	`CREATE TABLE "CaseKs"."Tab" ("Key" int, "select" int, "Value" text, value int, PRIMARY KEY ("Key", "select"))`,
	"CREATE TABLE sk.t (k int, c int, v text, PRIMARY KEY (k, c))",
	"CREATE TABLE sk.comp (a int, b text, c int, v int, PRIMARY KEY ((a, b), c))",
	"CREATE TABLE scl.t (k int, c1 int, c2 int, c3 int, v int, PRIMARY KEY (k, c1, c2, c3))",
	"CREATE TABLE scl.d (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)",
	"CREATE TABLE ob.t (k int, c1 int, c2 text, v int, PRIMARY KEY (k, c1, c2))",
	"CREATE TABLE agg.t (k int, c int, i int, d double, de decimal, vi varint, tx text, ts timestamp, PRIMARY KEY (k, c))",
	"CREATE TABLE dis.t (a int, b int, c int, st text STATIC, v int, PRIMARY KEY ((a, b), c))",
	"CREATE TABLE meta.t (a int, b text, c1 int, c2 timestamp, st text STATIC, l list<int>, m map<text, frozen<set<int>>>, tp tuple<int, text>, v text, PRIMARY KEY ((a, b), c1, c2)) WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)",
	"CREATE TABLE ta.t (a int, b text, c int, v int, PRIMARY KEY ((a, b), c))",
	"CREATE TABLE types.dur (k int PRIMARY KEY, v duration)",
	"CREATE TABLE types.lit (k int PRIMARY KEY, a ascii, b blob, bo boolean, d date, de decimal, do double, f float, i inet, t time, ts timestamp, u uuid, tu timeuuid, vi varint, bi bigint)",
	"CREATE TABLE uprofile.names (firstname text, lastname text, id int, message text, PRIMARY KEY ((firstname, lastname), id))",
	"CREATE TABLE clientskew.c (k int PRIMARY KEY, n counter)",
	"CREATE TABLE clientskew.t (k int PRIMARY KEY, v int)",
	"CREATE TABLE ks.t (k int, c int, v text, w int, PRIMARY KEY (k, c))",
	"CREATE TABLE ks.simple (k int PRIMARY KEY, v text, n bigint, b blob, f double, ok boolean)",
	"CREATE TABLE ks.compound (k text, c1 int, c2 timestamp, s int STATIC, v text, l list<int>, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)",
	"CREATE TABLE ks.composite (a uuid, b date, c time, d frozen<set<int>>, e varint, v map<text, int>, PRIMARY KEY ((a, b), c, d, e)) WITH CLUSTERING ORDER BY (c DESC, d ASC, e DESC)",
	"CREATE TABLE ks.coll (k int PRIMARY KEY, l list<text>, s set<int>, m map<text, frozen<list<int>>>, t tuple<int, text>, fl frozen<list<int>>, fm frozen<map<int, text>>)",
	"CREATE TABLE ks.counters (k text, c int, hits counter, misses counter, PRIMARY KEY (k, c))",
	"CREATE TABLE ks.keys (a tinyint, b smallint, c decimal, d inet, e timeuuid, f duration, g frozen<tuple<int, text>>, v ascii, PRIMARY KEY ((a, b), c, d, e, g))",
	"CREATE TABLE ks.ttl (k int, c int, v text, PRIMARY KEY (k, c)) WITH default_time_to_live = 3600 AND gc_grace_seconds = 10",
}

// fuzzPlacer places a new table's partitions evenly, all on node 1. With
// refuse set it refuses every table, so that CREATE TABLE statements the
// target runs stop after their checks.
type fuzzPlacer struct {
	catalog *cluster.Catalog
	refuse  bool
}

func (p *fuzzPlacer) PlaceTable(ctx context.Context, t *schema.Table, n int) ([]*kvpb.Descriptor, error) {
	if p.refuse {
		return nil, errors.New("the planner's fuzz target creates no tables")
	}
	first, err := p.catalog.AllocateID(ctx, "partition", uint64(n))
	if err != nil {
		return nil, err
	}
	out := make([]*kvpb.Descriptor, n)
	for i, r := range ring.Even(n) {
		out[i] = &kvpb.Descriptor{Id: first + uint64(i), TableId: t.ID, Start: r[0], End: r[1],
			Replicas: []*kvpb.ReplicaDescriptor{{NodeId: 1, ReplicaId: 1}}, NextReplicaId: 2}
	}
	return out, nil
}

// fuzzNow is the executor's clock in the target, so that analysis
// (default timestamps, now()) is repeatable.
var fuzzNow = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// fuzzKeyspace is the session keyspace of the target's statements.
const fuzzKeyspace = "ks"

// fuzzExecutor builds, once per fuzz process, a Meta on the in-memory
// metadata store holding fuzzSchema and returns an executor on it whose
// placer refuses tables.
func fuzzExecutor(tb testing.TB) *Executor {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, meta := exectest.NewMeta(tb)
	catalog := cluster.NewCatalog(meta)
	cfg := Config{NodeID: 1, Meta: meta, Catalog: catalog, Placer: &fuzzPlacer{catalog: catalog},
		PreparedCacheSize: 256, Now: func() time.Time { return fuzzNow }}
	setup := New(cfg)
	created := map[string]bool{}
	for _, ddl := range fuzzSchema {
		stmt, err := parse(ddl)
		if err != nil {
			tb.Fatalf("%s: %v", ddl, err)
		}
		ks := stmt.(*cqlparser.CreateTableStmt).Table.Keyspace
		if !created[ks] {
			created[ks] = true
			if _, err := setup.Query(ctx, &Session{}, fmt.Sprintf("CREATE KEYSPACE %q WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", ks), Request{}); err != nil {
				tb.Fatalf("keyspace %s: %v", ks, err)
			}
		}
		if _, err := setup.Query(ctx, &Session{}, ddl, Request{}); err != nil {
			tb.Fatalf("%s: %v", ddl, err)
		}
	}
	// The catalog returns once Meta shows its change, so the whole schema
	// is visible now, and fixed from here.
	n := 0
	for _, ts := range meta.State().Schema.Tables {
		n += len(ts)
	}
	if n != len(fuzzSchema) {
		tb.Fatalf("meta shows %d tables of %d", n, len(fuzzSchema))
	}
	cfg.Placer = &fuzzPlacer{refuse: true}
	return New(cfg)
}

// fuzzValues decodes the bound values of a fuzz input: each is a tag byte,
// 0xff for null, 0xfe for unset, else the length of the bytes that follow.
// Values missing at the end of raw are null, so every marker is bound.
func fuzzValues(raw []byte, n int) []Value {
	vals := make([]Value, 0, n)
	for len(vals) < n {
		if len(raw) == 0 {
			vals = append(vals, Value{})
			continue
		}
		tag := raw[0]
		raw = raw[1:]
		switch {
		case tag == 0xff:
			vals = append(vals, Value{})
		case tag == 0xfe:
			vals = append(vals, Value{Unset: true})
		default:
			l := min(int(tag), len(raw))
			vals = append(vals, Value{Bytes: append([]byte{}, raw[:l]...)})
			raw = raw[l:]
		}
	}
	return vals
}

// appendFuzzValue encodes one value for fuzzValues.
func appendFuzzValue(dst, v []byte) []byte {
	if v == nil {
		return append(dst, 0xff)
	}
	if len(v) > 0xfd {
		v = v[:0xfd]
	}
	return append(append(dst, byte(len(v))), v...)
}

// planErr fails t unless err is nil or a CQL error a client may get for a
// statement that is wrong: syntax, invalid, unauthorized, configuration or
// already exists. A server error (or any other error) for a statement is a
// bug: the executor failed to classify bad input.
func planErr(t *testing.T, stage string, query string, err error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("%s of %q: error %T %v is not a CQL error", stage, query, err, err)
	}
	switch ce.Code {
	case CodeSyntax, CodeInvalid, CodeUnauthorized, CodeConfig, CodeAlreadyExists:
	default:
		t.Fatalf("%s of %q: %v (code 0x%04x) for a statement", stage, query, err, int32(ce.Code))
	}
	return false
}

// plan runs everything the executor does with a statement before sending
// it anywhere.
func plan(t *testing.T, e *Executor, query string, raw []byte) {
	ctx := context.Background()
	sess := &Session{keyspace: fuzzKeyspace}
	stmt, err := parse(query)
	if !planErr(t, "parse", query, err) {
		return
	}
	markers := len(cqlparser.BindMarkers(stmt))
	if _, err := e.Prepare(ctx, sess, query); !planErr(t, "prepare", query, err) {
		// A statement refused at PREPARE may still be fine unprepared
		// (a large one), so go on.
		_ = err
	}
	req := Request{Consistency: Quorum, SerialConsistency: Serial, PageSize: 100}
	b, err := e.newBinder(fuzzValues(raw, markers), nil, markers)
	if !planErr(t, "bind", query, err) {
		return
	}
	switch s := stmt.(type) {
	case *cqlparser.SelectStmt:
		p, err := e.analyzeSelect(sess, s, b, req)
		if planErr(t, "analyze", query, err) && p.vt == nil {
			if len(p.keys) > e.cfg.MaxPartitionKeyRestrictions || len(p.slices) > e.cfg.MaxClusteringKeyRestrictions*2 {
				t.Fatalf("%q: planned %d keys and %d slices, over the limits", query, len(p.keys), len(p.slices))
			}
		}
	case *cqlparser.InsertStmt, *cqlparser.UpdateStmt, *cqlparser.DeleteStmt:
		p, err := e.analyzeModify(sess, stmt, b, modContext{req: req})
		if planErr(t, "analyze", query, err) {
			limit := e.cfg.MaxPartitionKeyRestrictions * max(1, e.cfg.MaxClusteringKeyRestrictions)
			if len(p.mutations) > limit {
				t.Fatalf("%q: planned %d mutations, over the limits", query, len(p.mutations))
			}
			planErr(t, "size check", query, e.checkMutationSize(&kvpb.WriteRequest{Mutations: p.mutations}))
		}
	case *cqlparser.BatchStmt:
		items := make([]batchItem, len(s.Statements))
		for i, st := range s.Statements {
			items[i] = batchItem{stmt: st, b: b}
		}
		_, err := e.planBatch(sess, s.Kind, s.Using, items, req)
		planErr(t, "analyze", query, err)
	case *cqlparser.UseStmt:
		_, err := e.use(&Session{}, s.Keyspace)
		planErr(t, "use", query, err)
	case *cqlparser.CreateTableStmt:
		// The placer refuses the table once every check has passed.
		_, err := e.createTable(ctx, sess, s)
		planErr(t, "create table", query, err)
	case *cqlparser.CreateKeyspaceStmt, *cqlparser.AlterKeyspaceStmt:
		// The checks of CREATE and ALTER KEYSPACE before the catalog.
		var opts cqlparser.Options
		if c, ok := s.(*cqlparser.CreateKeyspaceStmt); ok {
			opts = c.Options
		} else {
			opts = s.(*cqlparser.AlterKeyspaceStmt).Options
		}
		ks := &schema.Keyspace{Name: "scratch"}
		if err := keyspaceOptions(ks, opts); planErr(t, "keyspace options", query, err) {
			planErr(t, "throughput", query, e.checkThroughput(0, ks.Throughput))
		}
	case *cqlparser.AlterTableStmt:
		// The checks of ALTER TABLE, on a copy of the table.
		ks, err := e.tableKeyspace(sess, s.Table)
		if !planErr(t, "alter table", query, err) {
			return
		}
		if tab := e.lookupTable(ks, s.Table.Name); tab != nil {
			c := tab.Clone()
			noop := false
			if err := alterTableDef(c, s, &noop); planErr(t, "alter table", query, err) {
				planErr(t, "throughput", query, e.checkThroughput(tab.Options.Throughput, c.Options.Throughput))
			}
		}
	case *cqlparser.DropTableStmt:
		_, err := e.tableKeyspace(sess, s.Table)
		planErr(t, "drop table", query, err)
	case *cqlparser.TruncateStmt:
		_, _, err := e.resolveTable(sess, s.Table)
		planErr(t, "truncate", query, err)
	case *cqlparser.DropKeyspaceStmt:
		// Nothing to check before the catalog.
	default:
		// Statements refused outright (indexes, types, unsupported).
		_, err := e.dispatch(ctx, sess, stmt, b, req, query)
		planErr(t, "dispatch", query, err)
	}
}

// FuzzPlan feeds arbitrary CQL text and bound values to the planner: it
// must never panic, and every statement it refuses must get a CQL error a
// client can act on (syntax, invalid, unauthorized, configuration, already
// exists), never a server error. Plans must stay within the restriction
// limits. The seed corpus holds the statements of test/cqltest and of the
// parser's corpus (TestWriteFuzzSeeds).
func FuzzPlan(f *testing.F) {
	e := fuzzExecutor(f)
	f.Fuzz(func(t *testing.T, query string, raw []byte) { plan(t, e, query, raw) })
}

// sampleValue returns a valid value of t, for seeds.
func sampleValue(t cqltype.Type) []byte {
	switch t.Kind {
	case cqltype.List, cqltype.Set:
		return cqltype.EncodeCollection([][]byte{sampleValue(t.Elems[0])})
	case cqltype.Map:
		return cqltype.EncodeMap([][]byte{sampleValue(t.Elems[0])}, [][]byte{sampleValue(t.Elems[1])})
	case cqltype.Tuple:
		var es [][]byte
		for _, et := range t.Elems {
			es = append(es, sampleValue(et))
		}
		return cqltype.EncodeTuple(es)
	}
	lits := map[cqltype.Kind]struct {
		kind cqltype.LitKind
		text string
	}{
		cqltype.Ascii: {cqltype.LitString, "a"}, cqltype.Varchar: {cqltype.LitString, "théo"},
		cqltype.Blob: {cqltype.LitBlob, "0xcafe"}, cqltype.Boolean: {cqltype.LitBoolean, "true"},
		cqltype.Decimal: {cqltype.LitFloat, "1.5"}, cqltype.Double: {cqltype.LitFloat, "2.5"}, cqltype.Float: {cqltype.LitFloat, "-0.5"},
		cqltype.UUID: {cqltype.LitUUID, "123e4567-e89b-12d3-a456-426614174000"}, cqltype.Timeuuid: {cqltype.LitUUID, "d2177dd0-eaa2-11de-a572-001b779c76e3"},
		cqltype.Inet: {cqltype.LitString, "10.0.0.1"}, cqltype.Date: {cqltype.LitString, "2024-02-29"}, cqltype.Time: {cqltype.LitString, "10:11:12"},
		cqltype.Timestamp: {cqltype.LitInteger, "1700000000000"}, cqltype.Duration: {cqltype.LitDuration, "1h30m"},
	}
	l, ok := lits[t.Kind]
	if !ok {
		l.kind, l.text = cqltype.LitInteger, "3"
	}
	v, err := cqltype.ParseLiteral(t, l.kind, l.text)
	if err != nil {
		return []byte{0, 0, 0, 3}
	}
	return v
}

// cqlStatements returns the statements written as string literals in the
// Go files of dir.
func cqlStatements(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, fn := range files {
		file, err := parser.ParseFile(token.NewFileSet(), fn, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || len(s) > 4000 {
				return true
			}
			s = strings.Join(strings.Fields(s), " ")
			first, _, _ := strings.Cut(s, " ")
			switch strings.ToUpper(first) {
			case "SELECT", "INSERT", "UPDATE", "DELETE", "BEGIN", "CREATE", "ALTER", "USE", "DROP", "TRUNCATE":
				if !seen[s] && !strings.Contains(s, "%") {
					seen[s] = true
					out = append(out, s)
				}
			}
			return true
		})
	}
	sort.Strings(out)
	return out
}

// corpusStrings returns the string arguments of a go test corpus
// directory's files.
func corpusStrings(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fn := range files {
		b, err := os.ReadFile(fn)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if arg, ok := strings.CutPrefix(line, "string("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(arg, ")")); err == nil {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// TestWriteFuzzSeeds writes FuzzPlan's corpus: the statements of the CQL
// conformance tests and of the parser's corpus, each with valid values of
// the types PREPARE gives its markers (or null values when it cannot be
// prepared).
func TestWriteFuzzSeeds(t *testing.T) {
	c := fuzzcheck.NewCorpus(t, "testdata/fuzz")
	e := fuzzExecutor(t)
	stmts := append(cqlStatements(t, "../../test/cqltest"), corpusStrings(t, "../parser/testdata/fuzz/FuzzParse")...)
	stmts = append(stmts,
		"SELECT k, c1, c2, s, v, l FROM compound WHERE k = ? AND c1 IN (1, 2) AND c2 >= ? ORDER BY c1 ASC LIMIT 10",
		"SELECT * FROM ks.composite WHERE a = ? AND b = ? AND c = ? AND d = {1, 2} AND e > 10",
		"SELECT token(a, b), a, b FROM ks.composite WHERE token(a, b) > ? AND token(a, b) <= 0",
		"SELECT v['x'], l[0] FROM ks.composite WHERE a IN ? AND b = '2024-01-01' AND (c, d) > ('10:00:00', {1}) ALLOW FILTERING",
		"SELECT count(*), max(n), avg(f) FROM simple WHERE k IN (1, 2, 3)",
		"SELECT DISTINCT k, s FROM compound",
		"SELECT * FROM coll WHERE s CONTAINS ? AND m CONTAINS KEY 'a' ALLOW FILTERING",
		"SELECT CAST(n AS text), writetime(v), ttl(v) FROM simple WHERE k = 1",
		"INSERT INTO ks.composite (a, b, c, d, e, v) VALUES (uuid(), '2024-01-01', ?, ?, 123456789012345678901234567890, {'x': 1}) IF NOT EXISTS",
		"INSERT INTO ks.keys (a, b, c, d, e, g, v, f) VALUES (?, ?, ?, ?, now(), (1, 'x'), 'v', 1h) USING TTL ? AND TIMESTAMP ?",
		"UPDATE coll SET l = l + ['x'], s = s - {1}, m['k'] = [1, 2], t = (1, 'a'), fl = ? WHERE k = ? IF EXISTS",
		"UPDATE ks.counters SET hits = hits + ?, misses = misses - 1 WHERE k = 'a' AND c IN (1, 2)",
		"UPDATE compound USING TTL 10 SET s = 1, v = ? WHERE k = ? AND c1 = 1 AND c2 = ? IF s = 0 AND v IN ('a', null)",
		"DELETE l[1], v FROM compound WHERE k = 'a' AND c1 = 1 AND c2 = '2024-01-01 00:00:00+0000'",
		"DELETE FROM compound WHERE k = ? AND c1 > 1 AND c1 <= ?",
		"DELETE FROM ks.composite USING TIMESTAMP 5 WHERE a = ? AND b = ?",
		"BEGIN UNLOGGED BATCH USING TIMESTAMP ? INSERT INTO simple (k, v) VALUES (1, 'a'); UPDATE compound SET v = 'b' WHERE k = 'x' AND c1 = 1 AND c2 = 0; DELETE FROM coll WHERE k = ?; APPLY BATCH",
		"BEGIN COUNTER BATCH UPDATE ks.counters SET hits = hits + 1 WHERE k = 'a' AND c = 1; APPLY BATCH",
		"BEGIN BATCH INSERT INTO ks.ttl (k, c, v) VALUES (1, 1, 'a') IF NOT EXISTS; UPDATE ks.ttl SET v = 'b' WHERE k = 1 AND c = 2 IF v = 'a'; APPLY BATCH",
		"CREATE TABLE ks.new (k int, c frozen<map<text, int>>, s list<int> static, v counter, PRIMARY KEY ((k), c)) WITH CLUSTERING ORDER BY (c DESC) AND cosmosdb_provisioned_throughput = 40000",
		"ALTER TABLE compound ADD (x int, y set<text> static)",
		"ALTER TABLE ks.compound RENAME k TO kk AND c1 TO cc",
		"ALTER TABLE ks.simple WITH default_time_to_live = 10 AND cosmosdb_provisioned_throughput = 2000000",
		"ALTER KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3} AND durable_writes = false",
		"SELECT * FROM system_schema.columns WHERE keyspace_name = ? AND table_name = 'simple'",
		"SELECT peer, tokens FROM system.peers",
	)
	for i, q := range stmts {
		var raw []byte
		if p, err := e.Prepare(context.Background(), &Session{keyspace: fuzzKeyspace}, q); err == nil {
			for _, v := range p.Variables {
				raw = appendFuzzValue(raw, sampleValue(v.Type))
			}
		}
		c.Add("FuzzPlan", fmt.Sprintf("seed%04d", i), q, raw)
	}
	if len(stmts) < 500 {
		t.Fatalf("only %d seed statements", len(stmts))
	}
}
