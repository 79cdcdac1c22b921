// Package clustertest runs multi-node clusters in the test process: an
// embedded etcd and several nodes with the raft engine on loopback, driven
// by gocql, with nodes killed and restarted.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/daemon"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// fastFailover shortens the timers so failures resolve in seconds.
func fastFailover(deadAfter time.Duration) func(int, *daemon.Config) {
	return func(i int, cfg *daemon.Config) {
		cfg.DeadAfter = deadAfter
		cfg.RegistrationTTL = 2 * time.Second
		cfg.RequestTimeout = 8 * time.Second
	}
}

func session(t *testing.T, c *testcluster.Cluster, i int) *gocql.Session {
	t.Helper()
	cc := c.NewClusterConfig(i)
	cc.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 8}
	cc.Timeout = 12 * time.Second
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func exec(t *testing.T, s *gocql.Session, q string, args ...any) {
	t.Helper()
	if err := s.Query(q, args...).Exec(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s; last state: %s", d, what, last)
}

// ringHealthy reports whether every partition of every table has exactly
// 4 voting replicas on live nodes, none on dead ones.
func ringHealthy(st *cluster.State, exclude map[uint64]bool) (bool, string) {
	var parts []string
	ok := true
	for _, r := range st.Rings {
		if err := r.Validate(); err != nil {
			return false, err.Error()
		}
		for _, p := range r.Partitions() {
			voters := 0
			for _, rd := range p.GetReplicas() {
				if !rd.GetLearner() && !exclude[rd.GetNodeId()] && st.Nodes[rd.GetNodeId()] != nil {
					voters++
				}
				if exclude[rd.GetNodeId()] {
					ok = false
				}
			}
			if voters != 4 || len(p.GetReplicas()) != 4 {
				ok = false
			}
			parts = append(parts, fmt.Sprintf("p%d:%s", p.GetId(), replicaList(p)))
		}
	}
	return ok, strings.Join(parts, " ")
}

func replicaList(p *kvpb.Descriptor) string {
	var s []string
	for _, r := range p.GetReplicas() {
		x := fmt.Sprintf("n%d", r.GetNodeId())
		if r.GetLearner() {
			x += "(l)"
		}
		s = append(s, x)
	}
	return strings.Join(s, ",")
}

// writer inserts rows until stopped and records the acknowledged ones.
type writer struct {
	s      *gocql.Session
	acked  sync.Map
	errs   atomic.Int64
	lastEr atomic.Value
	n      atomic.Int64
	// slow counts writes that took over a second.
	slow     atomic.Int64
	lastSlow atomic.Value
	stop     chan struct{}
	done     chan struct{}
}

func startWriter(s *gocql.Session, table string) *writer {
	w := &writer{s: s, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			key := fmt.Sprintf("k%d", i%50)
			q := w.s.Query("INSERT INTO "+table+" (k, i, v) VALUES (?, ?, ?)", key, i, "value").Idempotent(true)
			t0 := time.Now()
			err := q.Exec()
			if d := time.Since(t0); d > time.Second {
				w.slow.Add(1)
				w.lastSlow.Store(fmt.Sprintf("%s took %s", key, d))
			}
			if err != nil {
				w.errs.Add(1)
				w.lastEr.Store(err.Error())
				continue
			}
			w.acked.Store(i, key)
			w.n.Add(1)
		}
	}()
	return w
}

func (w *writer) halt() { close(w.stop); <-w.done }

// checkAcked reads back every acknowledged row at QUORUM, one partition
// at a time, and returns how many it found.
func (w *writer) checkAcked(t *testing.T, s *gocql.Session, table string) int {
	t.Helper()
	want := map[string]map[int]bool{}
	w.acked.Range(func(k, v any) bool {
		key := v.(string)
		if want[key] == nil {
			want[key] = map[int]bool{}
		}
		want[key][k.(int)] = true
		return true
	})
	count := 0
	for key, rows := range want {
		iter := s.Query("SELECT i FROM "+table+" WHERE k = ?", key).Consistency(gocql.Quorum).PageSize(5000).Iter()
		got := map[int]bool{}
		var i int
		for iter.Scan(&i) {
			got[i] = true
		}
		if err := iter.Close(); err != nil {
			t.Fatalf("read partition %s: %v", key, err)
		}
		for i := range rows {
			if !got[i] {
				t.Errorf("acknowledged row (%s, %d) not found", key, i)
			}
			count++
		}
	}
	return count
}

func TestTableCreationNeedsFourLiveNodes(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 3})
	s := session(t, c, 0)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	err := s.Query("CREATE TABLE ks.t (k int PRIMARY KEY, v text)").Exec()
	if err == nil || !strings.Contains(err.Error(), "not enough live nodes") || !strings.Contains(err.Error(), "4 replicas") {
		t.Fatalf("CREATE TABLE on 3 nodes: err = %v, want a clear 'not enough live nodes' error", err)
	}
}

func TestKillNodeRepairsAndLosesNothing(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 5, Configure: fastFailover(3 * time.Second)})
	s := session(t, c, 0)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, s, "CREATE TABLE ks.t (k text, i int, v text, PRIMARY KEY (k, i)) WITH cosmosdb_provisioned_throughput = 20000")
	// Reads and writes through every node.
	for i := range c.Nodes {
		si := session(t, c, i)
		exec(t, si, "INSERT INTO ks.t (k, i, v) VALUES (?, ?, ?)", fmt.Sprintf("via%d", i), i, "x")
		var v string
		if err := si.Query("SELECT v FROM ks.t WHERE k = ? AND i = ?", fmt.Sprintf("via%d", (i+1)%len(c.Nodes)), (i+1)%len(c.Nodes)).Scan(&v); err != nil && i+1 < len(c.Nodes) {
			continue
		}
	}
	st := c.Nodes[0].Meta().State()
	waitFor(t, 30*time.Second, "initial ring with 4 replicas per partition", func() (bool, string) { return ringHealthy(c.Nodes[0].Meta().State(), nil) })
	// Kill a node that holds replicas (not node 0, whose client we use).
	victim := 1
	victimID := c.Nodes[victim].ID()
	w := startWriter(s, "ks.t")
	waitFor(t, 10*time.Second, "writes before the kill", func() (bool, string) { return w.n.Load() > 50, fmt.Sprint(w.n.Load()) })
	start := time.Now()
	c.KillNode(victim)
	before := w.n.Load()
	waitFor(t, 30*time.Second, "writes after the kill", func() (bool, string) { return w.n.Load() > before+100, fmt.Sprint(w.n.Load()) })
	waitFor(t, 60*time.Second, "replicas back to 4 without the dead node", func() (bool, string) {
		return ringHealthy(c.Nodes[0].Meta().State(), map[uint64]bool{victimID: true})
	})
	t.Logf("replicas back to 4 %s after the kill", time.Since(start).Round(100*time.Millisecond))
	w.halt()
	if e := w.errs.Load(); e > 0 {
		t.Errorf("writer saw %d errors beyond driver retries (last: %v)", e, w.lastEr.Load())
	}
	n := w.checkAcked(t, session(t, c, 2), "ks.t")
	t.Logf("ring before: %d partitions; %d acknowledged writes, all read back", len(st.Rings), n)

	// The killed node comes back after being replaced: its stale replicas
	// are collected.
	back := c.RestartNode(victim)
	waitFor(t, 30*time.Second, "stale replicas of the returning node removed", func() (bool, string) {
		reps := back.Store().Replicas()
		return len(reps) == 0, fmt.Sprintf("%d replicas", len(reps))
	})
	n2 := w.checkAcked(t, session(t, c, victim), "ks.t")
	if n2 != n {
		t.Fatalf("read back %d rows through the returned node, want %d", n2, n)
	}
}

func TestRestartBeforeDeadAfterCatchesUp(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 4, Configure: fastFailover(time.Hour)})
	s := session(t, c, 0)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, s, "CREATE TABLE ks.t (k text, i int, v text, PRIMARY KEY (k, i))")
	for i := 0; i < 20; i++ {
		exec(t, s, "INSERT INTO ks.t (k, i, v) VALUES (?, ?, ?)", "a", i, "before")
	}
	c.KillNode(3)
	for i := 20; i < 60; i++ {
		if err := s.Query("INSERT INTO ks.t (k, i, v) VALUES (?, ?, ?)", "a", i, "during").Idempotent(true).Exec(); err != nil {
			t.Fatalf("write with one of four replicas down: %v", err)
		}
	}
	restarted := c.RestartNode(3)
	// The restarted node catches up from the log: reading its own replica
	// at ONE eventually returns every row.
	local := session(t, c, 3)
	waitFor(t, 30*time.Second, "restarted replica caught up", func() (bool, string) {
		var n int
		if err := local.Query("SELECT count(*) FROM ks.t WHERE k = 'a'").Consistency(gocql.One).Scan(&n); err != nil {
			return false, err.Error()
		}
		return n == 60, fmt.Sprint(n)
	})
	// No replacement happened: the node still holds its replica.
	if len(restarted.Store().Replicas()) != 1 {
		t.Fatalf("restarted node holds %d replicas, want its original 1", len(restarted.Store().Replicas()))
	}
	_ = context.Background()
}

func TestQuorumLossFailsFastAndRecovers(t *testing.T) {
	// The production request timeout: failing fast must not depend on a
	// short one.
	c := testcluster.Start(t, testcluster.Options{Nodes: 4, Configure: fastFailover(time.Hour)})
	cc := c.NewClusterConfig(0)
	cc.Timeout = 20 * time.Second
	// Only node 0, which survives: a connection to a killed node fails
	// with the socket's error, which is the driver's to retry, not ours.
	host, _ := c.CQLHostPort(0)
	cc.HostFilter = gocql.WhiteListHostFilter(host)
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, s, "CREATE TABLE ks.t (k text PRIMARY KEY, v text)")
	exec(t, s, "INSERT INTO ks.t (k, v) VALUES ('before', 'x')")
	// Two of the four replicas go down: no quorum of 3. Every request
	// ends within 3s: those in flight while the loss is being noticed
	// (about an election timeout) may be timeouts, whose outcome is
	// unknown; from then on each is refused with Unavailable.
	// The leader of the table's partition is one of them: the survivors
	// must tell an election from a lost quorum without it.
	victims := []int{2, 3}
	for i, n := range c.Nodes {
		for _, r := range n.Store().Replicas() {
			if r.Descriptor().GetTableId() != 0 && r.Group().Status().IsLeader() && i != 0 {
				victims = []int{i, 1 + i%3}
			}
		}
	}
	t.Logf("killing nodes %v (the first leads)", victims)
	c.KillNode(victims[0])
	c.KillNode(victims[1])
	killed := time.Now()
	unavailable := map[string]bool{}
	queries := []string{"INSERT INTO ks.t (k, v) VALUES ('during', 'x')", "SELECT v FROM ks.t WHERE k = 'before'"}
	for len(unavailable) < len(queries) {
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("no Unavailable 20s after two of four replicas went down (got it for %v)", unavailable)
		}
		for _, q := range queries {
			start := time.Now()
			err := s.Query(q).Consistency(gocql.Quorum).Exec()
			took := time.Since(start)
			if err == nil {
				t.Fatalf("%s succeeded without a quorum", q)
			}
			var re gocql.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("%s: err = %v, want a CQL error", q, err)
			}
			switch {
			case took > 3*time.Second:
				t.Fatalf("%s failed after %s (%v), want within 3s", q, took, err)
			case re.Code() == 0x1000:
				unavailable[q] = true
			case unavailable[q]:
				t.Fatalf("%s: %v after an Unavailable, want Unavailable", q, err)
			case re.Code() != 0x1100 && re.Code() != 0x1200:
				t.Fatalf("%s: err = %v, want Unavailable or a timeout", q, err)
			}
			if !strings.Contains(re.Message(), "partition") {
				t.Errorf("%s: error %q does not name the partition", q, re.Message())
			}
			t.Logf("%s: %v after %s (%s since the kill)", q, err, took.Round(10*time.Millisecond), time.Since(killed).Round(10*time.Millisecond))
		}
	}
	if d := time.Since(killed); d > 6*time.Second {
		t.Errorf("Unavailable for every statement only %s after the kill", d.Round(10*time.Millisecond))
	}
	// One replica returns: 3 of 4, writes work again and the refused
	// write was not applied.
	c.RestartNode(victims[1])
	waitFor(t, 30*time.Second, "writes with a quorum again", func() (bool, string) {
		err := s.Query("INSERT INTO ks.t (k, v) VALUES ('after', 'x')").Exec()
		return err == nil, fmt.Sprint(err)
	})
	var v string
	if err := s.Query("SELECT v FROM ks.t WHERE k = 'before'").Consistency(gocql.Quorum).Scan(&v); err != nil || v != "x" {
		t.Fatalf("read after recovery: %q %v", v, err)
	}
}
