package cqltest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/cql/frame"
	"github.com/cosmosd/cosmosd/daemon"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// inList returns "(from, from+1, ..., from+n-1)".
func inList(from, n int) string {
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprint(from + i)
	}
	return "(" + strings.Join(vals, ", ") + ")"
}

// TestHostileQueries sends single requests that would make a node
// allocate without bound ("queries of death") and checks that each is
// refused with a clear error, while ordinary requests work. The node runs
// the default limits except for the result budgets and the partition
// cap, which are small here so the test needs little data.
func TestHostileQueries(t *testing.T) {
	t.Parallel()
	const (
		pageMaxBytes     = 1 << 20
		maxUnpagedResult = 4 << 20
		maxPartitions    = 2
	)
	c := testcluster.Start(t, testcluster.Options{Configure: func(_ int, cfg *daemon.Config) {
		cfg.PageMaxBytes = pageMaxBytes
		cfg.MaxUnpagedResultBytes = maxUnpagedResult
		cfg.MaxPartitionsPerTable = maxPartitions
	}})
	host, port := c.CQLHostPort(0)
	e := &env{c: c, host: host, port: port}
	s := e.session(t, nil)
	keyspace(t, s, "hostile")

	t.Run("NegativeFrameLength", func(t *testing.T) {
		rc := dialRaw(t, e.addr())
		rc.startup("")
		// A valid OPTIONS frame follows the bad header: a server that
		// carried on would read it as the next request.
		opts, err := frame.AppendRequest(nil, frame.Header{Stream: 5}, nil, &frame.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rc.write(append(rawHeader(4, 0, 4, frame.OpQuery, 0xfffffff0), opts...))
		h, resp, _ := rc.recv()
		rawErr(t, "negative body length", resp, frame.CodeProtocolError, "negative body length -16")
		eq(t, "stream", h.Stream, int16(4))
		rc.expectClosed("after a negative body length")
	})

	t.Run("CartesianIN", func(t *testing.T) {
		exec(t, s, "CREATE TABLE hostile.pk3 (a int, b int, c int, v int, PRIMARY KEY ((a, b, c)))",
			"CREATE TABLE hostile.ck3 (k int, c1 int, c2 int, c3 int, v int, PRIMARY KEY (k, c1, c2, c3))")
		in120 := inList(0, 120)
		// 120^3 keys would be 1.7 million partition keys built for one
		// statement.
		queryErr(t, s, "SELECT * FROM hostile.pk3 WHERE a IN "+in120+" AND b IN "+in120+" AND c IN "+in120,
			codeInvalid, "Partition key cartesian product size 1728000 is greater than the maximum of 100", "max_partition_key_restrictions_per_query")
		queryErr(t, s, "SELECT * FROM hostile.ck3 WHERE k = 1 AND c1 IN "+in120+" AND c2 IN "+in120+" AND c3 IN "+in120,
			codeInvalid, "Clustering key cartesian product size 1728000 is greater than the maximum of 100", "max_clustering_key_restrictions_per_query")
		// Just over the limit, for every statement that expands IN.
		in11 := inList(0, 11)
		for _, q := range []string{
			"SELECT * FROM hostile.pk3 WHERE a IN " + in11 + " AND b IN " + in11 + " AND c = 1",
			"UPDATE hostile.pk3 SET v = 1 WHERE a IN " + in11 + " AND b IN " + in11 + " AND c = 1",
			"DELETE FROM hostile.pk3 WHERE a IN " + in11 + " AND b IN " + in11 + " AND c = 1",
		} {
			queryErr(t, s, q, codeInvalid, "Partition key cartesian product size 121 is greater than the maximum of 100")
		}
		for _, q := range []string{
			"SELECT * FROM hostile.ck3 WHERE k = 1 AND c1 IN " + in11 + " AND c2 IN " + in11,
			"UPDATE hostile.ck3 SET v = 1 WHERE k = 1 AND c1 IN " + in11 + " AND c2 IN " + in11 + " AND c3 = 1",
			"DELETE FROM hostile.ck3 WHERE k = 1 AND c1 IN " + in11 + " AND c2 IN " + in11 + " AND c3 = 1",
			"DELETE FROM hostile.ck3 WHERE k = 1 AND c1 IN " + in11 + " AND c2 IN " + in11,
		} {
			queryErr(t, s, q, codeInvalid, "Clustering key cartesian product size 121 is greater than the maximum of 100")
		}
		// Bound IN lists (prepared) are counted the same way, and
		// duplicates count once.
		l11 := make([]int, 11)
		for i := range l11 {
			l11[i] = i
		}
		queryErrArgs(t, s, "SELECT * FROM hostile.pk3 WHERE a IN ? AND b IN ? AND c = 1", []any{l11, l11}, codeInvalid,
			"Partition key cartesian product size 121")
		queryErrArgs(t, s, "SELECT * FROM hostile.ck3 WHERE k = 1 AND (c1, c2) IN ? ", []any{tuples(101)}, codeInvalid,
			"Clustering key cartesian product size 101")
		eq(t, "duplicates", len(query(t, s, "SELECT * FROM hostile.pk3 WHERE a IN ? AND b IN ? AND c = 1",
			[]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, l11[:9])), 0)
		// At the limit everything works.
		in10 := inList(0, 10)
		exec(t, s, "UPDATE hostile.ck3 SET v = 7 WHERE k = 1 AND c1 IN "+in10+" AND c2 IN "+in10+" AND c3 = 0")
		eq(t, "rows at the limit", count(t, s, "SELECT count(*) FROM hostile.ck3 WHERE k = 1 AND c1 IN "+in10+" AND c2 IN "+in10), int64(100))
		exec(t, s, "UPDATE hostile.pk3 SET v = 7 WHERE a IN "+in10+" AND b IN "+in10+" AND c = 0")
		eq(t, "partitions at the limit", count(t, s, "SELECT count(*) FROM hostile.pk3 WHERE a IN "+in10+" AND b IN "+in10+" AND c = 0"), int64(100))
	})

	t.Run("MutationSize", func(t *testing.T) {
		exec(t, s, "CREATE TABLE hostile.m (k int, c int, v blob, PRIMARY KEY (k, c))")
		big := make([]byte, 2<<20) // the largest value a cell may hold
		// 9 rows of 2 MiB in one partition: one 18 MiB raft entry.
		queryErrArgs(t, s, "UPDATE hostile.m SET v = ? WHERE k = 1 AND c IN "+inList(0, 9), []any{big}, codeInvalid,
			"mutation of ", "bytes exceeds the maximum of 16777216 bytes")
		queryErrArgs(t, s, "UPDATE hostile.m SET v = ? WHERE k IN "+inList(0, 9)+" AND c = 1", []any{big}, codeInvalid,
			"bytes exceeds the maximum of 16777216 bytes")
		b := s.NewBatch(gocql.UnloggedBatch)
		for i := 0; i < 9; i++ {
			b.Query("INSERT INTO hostile.m (k, c, v) VALUES (?, ?, ?)", i, i, big)
		}
		wantErr(t, "batch of 9 values of 2 MiB", s.ExecuteBatch(b), codeInvalid, "exceeds the maximum of 16777216 bytes (max_mutation_bytes)")
		// Nothing of the refused writes was applied.
		eq(t, "rows", count(t, s, "SELECT count(*) FROM hostile.m"), int64(0))
		// A protocol BATCH of many query strings: each is within the
		// token limit of one statement, all of them together are not
		// (their parse trees are all kept until the batch is applied).
		list := inList(0, 60)
		list = "[" + list[1:len(list)-1] + "]"
		var stmts []frame.BatchStatement
		for i := 0; i < 2500; i++ { // about 125 tokens each
			stmts = append(stmts, frame.BatchStatement{Query: "INSERT INTO hostile.l (k, l) VALUES (1, " + list + ")"})
		}
		exec(t, s, "CREATE TABLE hostile.l (k int PRIMARY KEY, l list<int>)")
		rc := dialRaw(t, e.addr())
		rc.startup("")
		rawErr(t, "batch of many long statements", rc.roundTrip(&frame.Batch{Type: frame.BatchUnlogged, Consistency: frame.One, Statements: stmts}),
			frame.CodeInvalid, "BATCH too large: its statements have more than 262144 tokens in all")
		rawCheckVoid(t, "batch within the budget", rc.roundTrip(&frame.Batch{Type: frame.BatchUnlogged, Consistency: frame.One, Statements: stmts[:1000]}))
		// Below the limit is fine.
		execArgs(t, s, "UPDATE hostile.m SET v = ? WHERE k = 1 AND c IN "+inList(0, 7), big)
		eq(t, "rows", count(t, s, "SELECT count(*) FROM hostile.m"), int64(7))
	})

	t.Run("ResultBudgets", func(t *testing.T) {
		exec(t, s, "CREATE TABLE hostile.r (k int, c int, v blob, PRIMARY KEY (k, c))")
		const rows, rowBytes = 24, 256 << 10 // 6 MiB in one partition
		val := make([]byte, rowBytes)
		for i := 0; i < rows; i++ {
			execArgs(t, s, "INSERT INTO hostile.r (k, c, v) VALUES (1, ?, ?)", i, val)
		}
		execArgs(t, s, "INSERT INTO hostile.r (k, c, v) VALUES (2, 0, ?)", val)
		// A page ends at page_max_bytes, well before the page size, and
		// paging still returns every row once, in order.
		iter := s.Query("SELECT c, v FROM hostile.r WHERE k = 1").PageSize(5000).Iter()
		if n := iter.NumRows(); n == 0 || n*rowBytes > pageMaxBytes+rowBytes || len(iter.PageState()) == 0 {
			t.Fatalf("first page: %d rows of %d bytes (page_max_bytes %d), paging state %x", n, rowBytes, pageMaxBytes, iter.PageState())
		}
		next := 0
		var ck int
		var v []byte
		for iter.Scan(&ck, &v) {
			if ck != next || len(v) != rowBytes {
				t.Fatalf("row c=%d (%d bytes), want c=%d", ck, len(v), next)
			}
			next++
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		eq(t, "paged rows", next, rows)
		// Unpaged, the same query is refused: the result is over
		// max_unpaged_result_bytes.
		wantErr(t, "unpaged", s.Query("SELECT c, v FROM hostile.r WHERE k = 1").PageSize(0).Exec(), codeInvalid,
			"exceeds 4194304 bytes (max_unpaged_result_bytes); page the query", "or add a LIMIT")
		wantErr(t, "unpaged scan", s.Query("SELECT c, v FROM hostile.r").PageSize(0).Exec(), codeInvalid, "max_unpaged_result_bytes")
		// ORDER BY with IN on the partition key sorts in memory, paged or
		// not: the same budget applies.
		wantErr(t, "sorted in memory", s.Query("SELECT c, v FROM hostile.r WHERE k IN (1, 2) ORDER BY c DESC").PageSize(0).Exec(), codeInvalid,
			"sorted in memory, exceeds 4194304 bytes (max_unpaged_result_bytes)")
		// With a LIMIT within the budget it works.
		eq(t, "unpaged with LIMIT", len(query(t, s, "SELECT c, v FROM hostile.r WHERE k = 1 LIMIT 10")), 10)
		iter = s.Query("SELECT c FROM hostile.r WHERE k = 1").PageSize(0).Iter()
		eq(t, "unpaged small columns", iter.NumRows(), rows)
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Throughput", func(t *testing.T) {
		queryErr(t, s, "CREATE TABLE hostile.ru (k int PRIMARY KEY) WITH cosmosdb_provisioned_throughput = 1000001",
			codeInvalid, "cosmosdb_provisioned_throughput = 1000001 exceeds the maximum of 1000000 RU/s (max_provisioned_throughput)")
		queryErr(t, s, "CREATE KEYSPACE hostile_ru WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND cosmosdb_provisioned_throughput = 9223372036854775807",
			codeInvalid, "exceeds the maximum of 1000000 RU/s")
		queryErr(t, s, "CREATE TABLE hostile.ru (k int PRIMARY KEY) WITH cosmosdb_provisioned_throughput = -1", codeConfig, "not a non-negative integer")
		queryErr(t, s, "ALTER KEYSPACE hostile WITH cosmosdb_provisioned_throughput = 2000000", codeInvalid, "exceeds the maximum of 1000000 RU/s")
		// A table provisioned above what its partition cap allows is
		// created with max_partitions_per_table partitions...
		exec(t, s, "CREATE TABLE hostile.ru (k int PRIMARY KEY) WITH cosmosdb_provisioned_throughput = 50000")
		a := c.Admin(t, 0)
		ctx := context.Background()
		partitions := func() int {
			rg, err := a.ShowRing(ctx, &adminpb.ShowRingRequest{Table: "hostile.ru"})
			if err != nil {
				t.Fatal(err)
			}
			return len(rg.GetPartitions())
		}
		eq(t, "partitions of a table provisioned 50000 RU/s", partitions(), maxPartitions)
		queryErr(t, s, "ALTER TABLE hostile.ru WITH cosmosdb_provisioned_throughput = 1000001", codeInvalid, "exceeds the maximum of 1000000 RU/s")
		exec(t, s, "ALTER TABLE hostile.ru WITH cosmosdb_provisioned_throughput = 1000000")
		_, err := a.SetThroughput(ctx, &adminpb.SetThroughputRequest{Table: "hostile.ru", RuPerSec: 5_000_000})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "exceeds the maximum of 1000000 RU/s") {
			t.Fatalf("SetThroughput over the maximum: %v", err)
		}
		_, err = a.SetThroughput(ctx, &adminpb.SetThroughputRequest{Keyspace: "hostile", RuPerSec: -5})
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("SetThroughput negative: %v", err)
		}
		// ... and the controller does not split it further (it would
		// want 100 partitions), nor does an operator's split.
		rg, err := a.ShowRing(ctx, &adminpb.ShowRingRequest{Table: "hostile.ru"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.Split(ctx, &adminpb.SplitRequest{Partition: rg.GetPartitions()[0].GetId()})
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "max_partitions_per_table") {
			t.Fatalf("split at the partition cap: %v", err)
		}
		// The controller plans every second; a few rounds without a
		// split show it holds back. (A split would show within them.)
		deadline := time.Now().Add(4 * time.Second)
		for time.Now().Before(deadline) {
			if n := partitions(); n != maxPartitions {
				t.Fatalf("table split to %d partitions, over max_partitions_per_table %d", n, maxPartitions)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// tuples returns n (int, int) tuples for a multi-column IN.
func tuples(n int) [][]any {
	out := make([][]any, n)
	for i := range out {
		out[i] = []any{i, i}
	}
	return out
}

// TestConnectionLimitsWithGocql: a driver whose connections are over
// max_connections gets the node's reason and connects once slots are
// free; connections over max_connections_per_client likewise.
func TestConnectionLimitsWithGocql(t *testing.T) {
	t.Parallel()
	const maxConns = 6
	c := testcluster.Start(t, testcluster.Options{Configure: func(_ int, cfg *daemon.Config) {
		cfg.MaxConnections = maxConns
		cfg.MaxConnectionsPerClient = maxConns
	}})
	host, port := c.CQLHostPort(0)
	e := &env{c: c, host: host, port: port}
	// Take every slot with raw connections.
	var raws []*rawConn
	for i := 0; i < maxConns; i++ {
		rc := dialRaw(t, e.addr())
		rc.startup("")
		raws = append(raws, rc)
	}
	// A raw connection over the limit is told why when it starts up.
	rc := dialRaw(t, e.addr())
	if _, ok := rc.roundTrip(&frame.Options{}).(*frame.Supported); !ok {
		t.Fatal("OPTIONS over the limit not answered")
	}
	rc.sendStream(3, &frame.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})
	h, resp, _ := rc.recv()
	rawErr(t, "over max_connections", resp, frame.CodeOverloaded, "too many connections: this node serves at most 6 client connections (max_connections)")
	eq(t, "stream", h.Stream, int16(3))
	rc.expectClosed("over max_connections")
	// So is gocql.
	cc := c.NewClusterConfig(0)
	cc.ConnectTimeout = 5 * time.Second
	if s, err := cc.CreateSession(); err == nil {
		s.Close()
		t.Fatal("session created over max_connections")
	} else if !strings.Contains(err.Error(), "too many connections") {
		t.Fatalf("session over max_connections: %v, want the node's reason", err)
	}
	// Free the slots: the driver connects.
	for _, rc := range raws {
		rc.nc.Close()
	}
	var s *gocql.Session
	eventually(t, 30*time.Second, "a session once slots are free", func() bool {
		var err error
		s, err = c.NewClusterConfig(0).CreateSession()
		return err == nil
	})
	defer s.Close()
	eq(t, "query", len(query(t, s, "SELECT key FROM system.local")), 1)
}

// TestConnectionsPerClientWithGocql: one client address may not take more
// than max_connections_per_client connections; gocql reports the reason.
func TestConnectionsPerClientWithGocql(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{Configure: func(_ int, cfg *daemon.Config) {
		cfg.MaxConnectionsPerClient = 3
	}})
	cc := c.NewClusterConfig(0)
	cc.NumConns = 2 // with the control connection: 3, all this client may have
	s1, err := cc.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	eq(t, "query", len(query(t, s1, "SELECT key FROM system.local")), 1)
	if s2, err := c.NewClusterConfig(0).CreateSession(); err == nil {
		s2.Close()
		t.Fatal("second session created over max_connections_per_client")
	} else if !strings.Contains(err.Error(), "too many connections from 127.0.0.1") {
		t.Fatalf("second session: %v, want the node's reason", err)
	}
	// The first session is unaffected.
	eq(t, "query", len(query(t, s1, "SELECT key FROM system.local")), 1)
}

// TestIdleTimeout: the node closes connections idle for idle_timeout,
// and drivers that heartbeat are not affected: gocql sends OPTIONS on every
// connection every 5s, so with an idle timeout above that its connections
// stay open however long the application is quiet.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	const idle = 8 * time.Second
	c := testcluster.Start(t, testcluster.Options{Configure: func(_ int, cfg *daemon.Config) {
		d := idle
		cfg.IdleTimeout = &d
	}})
	host, port := c.CQLHostPort(0)
	e := &env{c: c, host: host, port: port}
	s := e.session(t, nil)
	keyspace(t, s, "idle")
	exec(t, s, "CREATE TABLE idle.t (k int PRIMARY KEY, v int)")
	quiet := dialRaw(t, e.addr())
	quiet.startup("")
	start := time.Now()
	quiet.expectClosed("after idle_timeout") // waits up to 10s
	if el := time.Since(start); el < idle-time.Second {
		t.Fatalf("quiet connection closed after %v, before the idle timeout %v", el, idle)
	}
	// The session has been quiet as long, and stays quiet for another
	// idle period: its connections are still open, so the first query
	// works (gocql does not retry a query whose connection was closed).
	time.Sleep(idle)
	for i := 0; i < 3; i++ {
		execArgs(t, s, "INSERT INTO idle.t (k, v) VALUES (?, 1)", i)
	}
	eq(t, "rows", count(t, s, "SELECT count(*) FROM idle.t"), int64(3))
}
