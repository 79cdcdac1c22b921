// Package cqltest drives a real cosmosd node (embedded etcd, Pebble on disk,
// real listeners) with gocql, raw protocol frames and the Python driver,
// through every statement family, type and error the CQL front end
// supports.
//
// One node serves all of TestCQL's subtests; each subtest works in its own
// keyspace so they do not interfere. Tests that need different node limits
// (TestLimits) or another client (TestPythonDriver) start a node of their
// own.
package cqltest

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/test/testcluster"
)

// env is the node shared by TestCQL's subtests.
type env struct {
	c    *testcluster.Cluster
	s    *gocql.Session
	host string
	port int
	// superuser is set when the node requires a login (Options.Password)
	// and the sessions are logged in as the superuser; otherwise every
	// session is anonymous (authenticator allow-all).
	superuser bool
}

func (e *env) addr() string { return fmt.Sprintf("%s:%d", e.host, e.port) }

// session opens another gocql session, optionally adjusting its config.
func (e *env) session(t *testing.T, adjust func(*gocql.ClusterConfig)) *gocql.Session {
	t.Helper()
	cc := e.c.NewClusterConfig(0)
	if adjust != nil {
		adjust(cc)
	}
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestCQL runs the driver-level suite against one node.
func TestCQL(t *testing.T) {
	t.Parallel()
	runCQL(t, testcluster.Options{})
}

// TestCQLOverTLS runs the same suite, unchanged, against a node that
// serves CQL over TLS and requires client certificates (docs/security.md):
// gocql connects with its SslOptions, raw-frame cases over tls.Dial.
func TestCQLOverTLS(t *testing.T) {
	t.Parallel()
	runCQL(t, testcluster.Options{TLS: true, CQLRequireClientCert: true})
}

// runCQL starts one node with opts and runs every case against it.
func runCQL(t *testing.T, opts testcluster.Options) {
	c := testcluster.Start(t, opts)
	e := &env{c: c, s: c.Session(t, 0)}
	e.host, e.port = c.CQLHostPort(0)
	if opts.TLS {
		rawTLS.Store(e.addr(), testcluster.ClientTLS(t, c.CertsDir, "root"))
		t.Cleanup(func() { rawTLS.Delete(e.addr()) })
	}
	if opts.Password != "" {
		e.superuser = true
		rawAuth.Store(e.addr(), []byte("\x00"+testcluster.Superuser+"\x00"+opts.Password))
		t.Cleanup(func() { rawAuth.Delete(e.addr()) })
	}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"Seed", testSeed},
		{"DDL", testDDL},
		{"Insert", testInsert},
		{"Update", testUpdate},
		{"Delete", testDelete},
		{"TTL", testTTL},
		{"Timestamp", testTimestamp},
		{"Counters", testCounters},
		{"Collections", testCollections},
		{"TuplesAndFrozen", testTuplesAndFrozen},
		{"Static", testStatic},
		{"LWT", testLWT},
		{"Batch", testBatch},
		{"BindMarkers", testBindMarkers},
		{"Types", testTypes},
		{"SelectKeys", testSelectKeys},
		{"SelectClustering", testSelectClustering},
		{"OrderBy", testOrderBy},
		{"Limits", testSelectLimits},
		{"Aggregates", testAggregates},
		{"Functions", testFunctions},
		{"Token", testToken},
		{"FullScanPaging", testFullScanPaging},
		{"Paging", testPaging},
		{"Large", testLarge},
		{"Filtering", testFiltering},
		{"Distinct", testDistinct},
		{"SystemTables", testSystemTables},
		{"Metadata", testMetadata},
		{"TokenAware", testTokenAware},
		{"Errors", testErrors},
		{"Prepared", testPrepared},
		{"Compression", testCompression},
		{"Raw", testRaw},
		{"Events", testEvents},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, e) })
	}
}

// exec runs statements that must succeed.
func exec(t *testing.T, s *gocql.Session, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// execArgs runs one statement with values.
func execArgs(t *testing.T, s *gocql.Session, q string, args ...any) {
	t.Helper()
	if err := s.Query(q, args...).Exec(); err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
}

// keyspace creates a fresh keyspace for one subtest.
func keyspace(t *testing.T, s *gocql.Session, name string) string {
	t.Helper()
	exec(t, s, "DROP KEYSPACE IF EXISTS "+name,
		"CREATE KEYSPACE "+name+" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	return name
}

// query returns all rows of a query as maps.
func query(t *testing.T, s *gocql.Session, q string, args ...any) []map[string]any {
	t.Helper()
	rows, err := s.Query(q, args...).Iter().SliceMap()
	if err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	return rows
}

// ints runs a query and returns the first column of every row as int64.
func ints(t *testing.T, s *gocql.Session, q string, args ...any) []int64 {
	t.Helper()
	iter := s.Query(q, args...).Iter()
	var out []int64
	var v int64
	for iter.Scan(&v) {
		out = append(out, v)
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	return out
}

// strs runs a query and returns the first column of every row as string.
func strs(t *testing.T, s *gocql.Session, q string, args ...any) []string {
	t.Helper()
	iter := s.Query(q, args...).Iter()
	var out []string
	var v string
	for iter.Scan(&v) {
		out = append(out, v)
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
	return out
}

// one scans the single row of a query into dest.
func one(t *testing.T, s *gocql.Session, q string, args []any, dest ...any) {
	t.Helper()
	if err := s.Query(q, args...).Scan(dest...); err != nil {
		t.Fatalf("%s %v: %v", q, args, err)
	}
}

// count returns SELECT COUNT(*) of a query.
func count(t *testing.T, s *gocql.Session, q string, args ...any) int64 {
	t.Helper()
	var n int64
	one(t, s, q, args, &n)
	return n
}

// sorted returns ss sorted, for results whose order across partitions is
// the token order.
func sorted(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %#v, want %#v", what, got, want)
	}
}

// Error codes as gocql reports them.
const (
	codeServer        = 0x0000
	codeProtocol      = 0x000A
	codeOverloaded    = 0x1001
	codeSyntax        = 0x2000
	codeUnauthorized  = 0x2100
	codeInvalid       = 0x2200
	codeConfig        = 0x2300
	codeAlreadyExists = 0x2400
	codeUnprepared    = 0x2500
)

// wantErr checks that err is a CQL error with code whose message contains
// every fragment.
func wantErr(t *testing.T, what string, err error, code int, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want code 0x%04x %q", what, code, fragments)
	}
	var re gocql.RequestError
	if !errors.As(err, &re) {
		t.Fatalf("%s: error %T %v is not a CQL error (want 0x%04x)", what, err, err, code)
	}
	if re.Code() != code {
		t.Fatalf("%s: code 0x%04x (%s), want 0x%04x", what, re.Code(), re.Message(), code)
	}
	for _, f := range fragments {
		if !strings.Contains(re.Message(), f) {
			t.Fatalf("%s: message %q does not contain %q", what, re.Message(), f)
		}
	}
}

// queryErr runs a statement that must fail with code and fragments.
func queryErr(t *testing.T, s *gocql.Session, q string, code int, fragments ...string) {
	t.Helper()
	wantErr(t, q, s.Query(q).Exec(), code, fragments...)
}

// queryErrArgs is queryErr with bound values (a prepared statement).
func queryErrArgs(t *testing.T, s *gocql.Session, q string, args []any, code int, fragments ...string) {
	t.Helper()
	wantErr(t, q, s.Query(q, args...).Exec(), code, fragments...)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func asRequestError(err error, re *gocql.RequestError) bool { return errors.As(err, re) }

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
