package cqltest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/daemon"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// Lightweight transactions and read-modify-writes follow the order in
// which the database applies them, whatever the clocks of the clients and
// coordinators say (partition/write.go, "Write timestamps"). Before, a
// conditional UPDATE from a clock behind the one that wrote the row
// answered [applied] = true and left the old value.

// skewed is one client of a clock test: a session and the offset of the
// client timestamps it sends (none when client timestamps are off).
type skewed struct {
	name     string
	s        *gocql.Session
	clientTS bool
	offset   time.Duration
}

func (c skewed) query(q string, args ...any) *gocql.Query {
	qq := c.s.Query(q, args...)
	if c.clientTS {
		qq = qq.WithTimestamp(time.Now().Add(c.offset).UnixMicro())
	}
	return qq
}

func (c skewed) batch() *gocql.Batch {
	b := c.s.NewBatch(gocql.LoggedBatch)
	if c.clientTS {
		b = b.WithTimestamp(time.Now().Add(c.offset).UnixMicro())
	}
	return b
}

// TestLWTUnderClientClockSkew: one client's timestamps are an hour ahead,
// the other's an hour behind (the protocol's default timestamp, which
// gocql sends with every query).
func TestLWTUnderClientClockSkew(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	s := c.Session(t, 0)
	ahead := skewed{name: "client +1h", s: s, clientTS: true, offset: time.Hour}
	behind := skewed{name: "client -1h", s: c.Session(t, 0), clientTS: true, offset: -time.Hour}
	clockScenario(t, "clientskew", ahead, behind)

	// Counters are read-modify-writes ordered by the log: as in
	// Cassandra, they take no USING TIMESTAMP.
	for _, tc := range []struct{ q, frag string }{
		{"UPDATE clientskew.c USING TIMESTAMP 5 SET n = n + 1 WHERE k = 1", "Cannot provide custom timestamp for counter updates"},
		{"DELETE FROM clientskew.c USING TIMESTAMP 5 WHERE k = 1", "Cannot provide custom timestamp for counter updates"},
		{"BEGIN COUNTER BATCH USING TIMESTAMP 5 UPDATE clientskew.c SET n = n + 1 WHERE k = 1 APPLY BATCH", "Cannot provide custom timestamp for counter BATCH"},
		{"BEGIN UNLOGGED BATCH USING TIMESTAMP 5 UPDATE clientskew.c SET n = n + 1 WHERE k = 1 APPLY BATCH", "Cannot provide custom timestamp for a BATCH containing counters"},
		{"BEGIN BATCH USING TIMESTAMP 5 UPDATE clientskew.t SET v = 1 WHERE k = 1 IF v = 1 APPLY BATCH", "Cannot provide custom timestamp for conditional BATCH"},
		{"UPDATE clientskew.t USING TIMESTAMP 5 SET v = 1 WHERE k = 1 IF v = 1", "Cannot provide custom timestamp for conditional updates"},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
}

// TestLWTUnderCoordinatorClockSkew: two coordinators, one with its clock an
// hour ahead and one an hour behind, and clients that send no timestamps,
// so the coordinators stamp every write.
func TestLWTUnderCoordinatorClockSkew(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	offsets := []string{"1h", "-1h"}
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Configure: func(i int, cfg *daemon.Config) {
		f := filepath.Join(dir, fmt.Sprintf("clock-offset-%d", i))
		if err := os.WriteFile(f, []byte(offsets[i]), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.TestingClockOffsetFile = f
		cfg.ReplicationFactor = 2
	}})
	pinned := func(i int) *gocql.Session {
		cc := c.NewClusterConfig(i)
		host, _ := c.CQLHostPort(i)
		cc.HostFilter = gocql.WhiteListHostFilter(host)
		cc.DefaultTimestamp = false
		// A node that has just started may not be in the ring its peers
		// report yet; the driver then finds no host to connect to.
		var s *gocql.Session
		var err error
		eventually(t, 30*time.Second, fmt.Sprintf("a session on node %d", i), func() bool {
			s, err = cc.CreateSession()
			return err == nil
		})
		t.Cleanup(s.Close)
		return s
	}
	ahead := skewed{name: "coordinator +1h", s: pinned(0)}
	behind := skewed{name: "coordinator -1h", s: pinned(1)}
	clockScenario(t, "nodeskew", ahead, behind)

	// Plain writes stamped by the coordinators: the last one applied
	// wins, also when its coordinator's clock is behind.
	for i := range 6 {
		cl := []skewed{ahead, behind}[i%2]
		if err := cl.query("UPDATE nodeskew.t SET w = ? WHERE k = 9", i).Exec(); err != nil {
			t.Fatalf("%s: plain update: %v", cl.name, err)
		}
		for _, r := range []skewed{ahead, behind} {
			var w int
			if err := r.query("SELECT w FROM nodeskew.t WHERE k = 9").Consistency(gocql.Quorum).Scan(&w); err != nil {
				t.Fatalf("%s: read: %v", r.name, err)
			}
			if w != i {
				t.Fatalf("after %s wrote w = %d, %s reads w = %d", cl.name, i, r.name, w)
			}
		}
	}
}

// clockScenario runs interleaved conditional writes, list updates and
// counter increments from two skewed clients on one key each, and checks
// every answer and every read against a model of the applied order.
func clockScenario(t *testing.T, ks string, a, b skewed) {
	t.Helper()
	clients := []skewed{a, b}
	if err := a.s.Query("CREATE KEYSPACE " + ks + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").Exec(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE " + ks + ".t (k int PRIMARY KEY, v int, w int)",
		"CREATE TABLE " + ks + ".l (k int PRIMARY KEY, l list<int>)",
		"CREATE TABLE " + ks + ".c (k int PRIMARY KEY, n counter)",
		"CREATE TABLE " + ks + ".b (k int, c int, v int, PRIMARY KEY (k, c))",
	} {
		if err := a.s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The other coordinator learns the schema from etcd.
	for _, tbl := range []string{"t", "l", "c", "b"} {
		eventually(t, 30*time.Second, "table "+tbl+" on "+b.name, func() bool {
			return b.s.Query("SELECT * FROM "+ks+"."+tbl+" LIMIT 1").Exec() == nil
		})
	}

	t.Run("ConditionalWrites", func(t *testing.T) {
		// The model: does row k = 1 exist, and its v.
		exists, v := false, 0
		rng := rand.New(rand.NewPCG(7, 11))
		for step := range 80 {
			cl := clients[step%2]
			var q string
			var args []any
			var want bool
			nextExists, nextV := exists, v
			switch op := rng.IntN(5); {
			case op == 0 || (op == 1 && !exists):
				q, args, want = "INSERT INTO "+ks+".t (k, v) VALUES (1, ?) IF NOT EXISTS", []any{step}, !exists
				if want {
					nextExists, nextV = true, step
				}
			case op <= 2:
				q, args, want = "UPDATE "+ks+".t SET v = ? WHERE k = 1 IF v = ?", []any{step, v}, exists
				if want {
					nextV = step
				}
			case op == 3:
				q, args, want = "UPDATE "+ks+".t SET v = ? WHERE k = 1 IF v = ?", []any{step, -1}, false
			default:
				q, want = "DELETE FROM "+ks+".t WHERE k = 1 IF EXISTS", exists
				nextExists = false
			}
			applied, err := cl.query(q, args...).MapScanCAS(map[string]any{})
			if err != nil {
				t.Fatalf("step %d, %s: %s %v: %v", step, cl.name, q, args, err)
			}
			if applied != want {
				t.Fatalf("step %d, %s: %s %v: [applied] = %v, want %v", step, cl.name, q, args, applied, want)
			}
			exists, v = nextExists, nextV
			// Read through the other client, at SERIAL and QUORUM.
			r := clients[(step+1)%2]
			cons, consName := gocql.Quorum, "QUORUM"
			if step%4 < 2 {
				cons, consName = gocql.Consistency(gocql.Serial), "SERIAL"
			}
			rows, err := r.query("SELECT v FROM " + ks + ".t WHERE k = 1").Consistency(cons).Iter().SliceMap()
			if err != nil {
				t.Fatalf("step %d: read: %v", step, err)
			}
			switch {
			case !exists && len(rows) != 0:
				t.Fatalf("step %d, after %s: %s %v: %s reads %v at %s, want no row", step, cl.name, q, args, r.name, rows, consName)
			case exists && (len(rows) != 1 || rows[0]["v"] != v):
				t.Fatalf("step %d, after %s: %s %v: %s reads %v at %s, want v = %d", step, cl.name, q, args, r.name, rows, consName, v)
			}
		}
	})

	t.Run("ConditionalBatch", func(t *testing.T) {
		ins := a.batch()
		ins.Query("INSERT INTO " + ks + ".b (k, c, v) VALUES (1, 1, 0) IF NOT EXISTS")
		ins.Query("INSERT INTO " + ks + ".b (k, c, v) VALUES (1, 2, 0)")
		upd := b.batch()
		upd.Query("UPDATE " + ks + ".b SET v = 1 WHERE k = 1 AND c = 1 IF v = 0")
		upd.Query("UPDATE " + ks + ".b SET v = 1 WHERE k = 1 AND c = 2")
		for _, x := range []struct {
			cl skewed
			bt *gocql.Batch
		}{{a, ins}, {b, upd}} {
			applied, iter, err := x.cl.s.MapExecuteBatchCAS(x.bt, map[string]any{})
			if err != nil {
				t.Fatalf("%s: %v", x.cl.name, err)
			}
			_ = iter.Close()
			if !applied {
				t.Fatalf("%s: conditional batch not applied", x.cl.name)
			}
		}
		eq(t, "rows after the conditional batches", ints(t, a.s, "SELECT v FROM "+ks+".b WHERE k = 1"), []int64{1, 1})
	})

	t.Run("ListsAndCounters", func(t *testing.T) {
		var list []int
		var sum int64
		for i := range 40 {
			cl := clients[i%2]
			var q string
			switch {
			case i%10 == 6:
				// Only the client ahead deletes: its deletion is stamped
				// above everything so far, whoever wrote it.
				cl = a
				q, list = "DELETE l FROM "+ks+".l WHERE k = 1", nil
			case i%3 == 0:
				q, list = "UPDATE "+ks+".l SET l = ? + l WHERE k = 1", append([]int{i}, list...)
			default:
				q, list = "UPDATE "+ks+".l SET l = l + ? WHERE k = 1", append(list, i)
			}
			var err error
			if q[0] == 'D' {
				err = cl.query(q).Exec()
			} else {
				err = cl.query(q, []int{i}).Exec()
			}
			if err != nil {
				t.Fatalf("%s: %s: %v", cl.name, q, err)
			}
			if err := cl.query("UPDATE "+ks+".c SET n = n + ? WHERE k = 1", int64(i)).Exec(); err != nil {
				t.Fatalf("%s: counter: %v", cl.name, err)
			}
			sum += int64(i)
			var got []int
			if err := clients[(i+1)%2].query("SELECT l FROM " + ks + ".l WHERE k = 1").Consistency(gocql.Quorum).Scan(&got); err != nil && err != gocql.ErrNotFound {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(list) && !(len(got) == 0 && len(list) == 0) {
				t.Fatalf("step %d, after %s: %s: list = %v, want %v", i, cl.name, q, got, list)
			}
		}
		eq(t, "counter", ints(t, b.s, "SELECT n FROM "+ks+".c WHERE k = 1"), []int64{sum})
	})
}
