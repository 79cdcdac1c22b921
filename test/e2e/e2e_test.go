package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/placement"
	"github.com/cosmosd/cosmosd/test/blackbox"
	"github.com/cosmosd/cosmosd/test/dockertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.RemoveBuilds()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Deadlines of the scenarios' waits: generous for a loaded 2-core machine;
// the logs show how long each step really took.
const (
	calmTimeout   = 3 * time.Minute
	calmFor       = 3 * time.Second
	repairTimeout = 2 * time.Minute
)

// TestFailures runs the failure scenarios one after another on one
// cluster; see the package documentation for what each proves. Each
// scenario starts by waiting for a calm cluster, so one that fails does
// not hide the others' results unless it leaves the cluster broken.
func TestFailures(t *testing.T) {
	requireDocker(t)
	c := startCluster(t)
	s := c.Session(t)
	var writers []*blackbox.Writer
	used := map[*Container]bool{}

	if !t.Run("forms", func(t *testing.T) { scenarioForms(t, c, s) }) {
		t.FailNow()
	}
	t.Run("refuses-insecure", func(t *testing.T) { scenarioRefusesInsecure(t, c) })
	nodeFaults := []struct {
		name          string
		inject, heal  func(testing.TB, *Container)
		injectedState string
	}{
		{"stop", c.Stop, c.Start, "stopped (SIGTERM)"},
		{"pause", c.Pause, c.Unpause, "paused"},
		{"disconnect", c.Disconnect, c.Connect, "disconnected from the network"},
	}
	for i, f := range nodeFaults {
		t.Run(f.name, func(t *testing.T) {
			waitCalm(t, c, "before the scenario")
			victim := pickVictim(t, c, used)
			var victimLeads []string
			if parts, err := c.Ring(); err == nil {
				for _, p := range parts {
					if p.LeaderNode == victim.ID {
						victimLeads = append(victimLeads, fmt.Sprintf("P%d", p.ID))
					}
				}
			}
			w := blackbox.StartWriter(s, f.name, (i+1)*10_000_000, 2)
			writers = append(writers, w)
			defer w.Halt()
			w.WaitProgress(t, 50, time.Minute, "before the fault")

			t0 := time.Now()
			t.Cleanup(func() { c.restore(t, victim) })
			f.inject(t, victim)
			t.Logf("%s (n%d) %s in %s", victim.Host, victim.ID, f.injectedState, time.Since(t0).Round(10*time.Millisecond))
			if len(victimLeads) > 0 {
				t.Logf("%s led %s", victim.Host, strings.Join(victimLeads, ", "))
			}
			w.WaitProgress(t, 100, time.Minute, "with "+victim.Host+" "+f.injectedState)
			t.Logf("writes continued: 100 more rows %s after the fault", time.Since(t0).Round(100*time.Millisecond))
			blackbox.WaitFor(t, repairTimeout, "replicas of "+victim.Host+" replaced", func() (bool, string) { return c.RingHealthy(c.without(victim)) })
			t.Logf("replicas of %s replaced %s after the fault", victim.Host, time.Since(t0).Round(100*time.Millisecond))

			t1 := time.Now()
			f.heal(t, victim)
			waitCalm(t, c, victim.Host+" back, its stale replicas collected")
			t.Logf("%s back and its stale replicas collected %s after it returned", victim.Host, time.Since(t1).Round(100*time.Millisecond))
			w.WaitProgress(t, 50, time.Minute, "after the node returned")
			w.Halt()
			w.Report(t)
			if stalls := w.Stalls(); len(stalls) > 0 && f.name != "stop" {
				// One host paused or cut off may not stall any operation
				// longer than 2s: the cluster routes around it (its
				// silence is noticed within half a second) and the client
				// leaves it by speculative execution.
				t.Errorf("%d operations took longer than %s with one host %s", len(stalls), blackbox.StallLimit, f.injectedState)
			}
			t.Logf("read back %d acknowledged rows at QUORUM", blackbox.CheckAcked(t, s, w))
		})
	}
	keep := func(w *blackbox.Writer) { writers = append(writers, w) }
	t.Run("kill-controller", func(t *testing.T) { scenarioKillController(t, c, s, keep) })
	t.Run("kill-etcd", func(t *testing.T) {
		scenarioEtcdLeaderFault(t, c, s, keep, "kill-etcd", 50_000_000, c.Kill, c.Start, "killed")
	})
	t.Run("pause-etcd", func(t *testing.T) {
		scenarioEtcdLeaderFault(t, c, s, keep, "pause-etcd", 60_000_000, c.Pause, c.Unpause, "paused")
	})
	t.Run("nothing-lost", func(t *testing.T) {
		waitCalm(t, c, "at the end")
		n := blackbox.CheckAcked(t, c.Session(t), writers...)
		t.Logf("every scenario's acknowledged rows read back: %d rows", n)
	})
}

// waitCalm waits until every node is up and the ring is healthy and
// settled: calm at every check for calmFor. The controller plans a round
// per second and rebalances in waves, so one calm check can fall between
// two waves; a fault injected then would hit a move in flight.
func waitCalm(t *testing.T, c *Cluster, what string) {
	t.Helper()
	var since time.Time
	blackbox.WaitFor(t, calmTimeout, "a calm cluster "+what, func() (bool, string) {
		ok, why := c.Calm(c.Nodes)
		switch {
		case !ok:
			since = time.Time{}
			return false, why
		case since.IsZero():
			since = time.Now()
		}
		return time.Since(since) >= calmFor, fmt.Sprintf("calm for %s", time.Since(since).Round(100*time.Millisecond))
	})
}

// pickVictim picks a node that holds replicas and is not the controller;
// preferably one that was no victim yet (so scenarios hit different hosts)
// and that leads partitions (so their leadership must fail over too).
func pickVictim(t *testing.T, c *Cluster, used map[*Container]bool) *Container {
	t.Helper()
	parts, err := c.Ring()
	if err != nil {
		t.Fatal(err)
	}
	holders := blackbox.ReplicaHolders(parts)
	leads := map[uint64]int{}
	for _, p := range parts {
		leads[p.LeaderNode]++
	}
	ctrl, err := c.ControllerNode()
	if err != nil {
		t.Fatal(err)
	}
	score := func(n *Container) int {
		s := 0
		if !used[n] {
			s += 2
		}
		if leads[n.ID] > 0 {
			s++
		}
		return s
	}
	var pick *Container
	for _, n := range c.Nodes {
		if n.ID == ctrl || holders[n.ID] == 0 {
			continue
		}
		if pick == nil || score(n) > score(pick) {
			pick = n
		}
	}
	if pick == nil {
		t.Fatalf("no node other than the controller n%d holds replicas: %v", ctrl, parts)
	}
	used[pick] = true
	return pick
}

// scenarioForms checks the fresh cluster and creates the tables.
func scenarioForms(t *testing.T, c *Cluster, s *gocql.Session) {
	nodes, err := c.NodesList()
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 5 {
		t.Fatalf("nodes list shows %d nodes, want 5: %v", len(nodes), nodes)
	}
	for _, q := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		blackbox.TableCQL,
		"CREATE KEYSPACE uprofile WITH REPLICATION = {'class' : 'SimpleStrategy', 'replication_factor' : 1}",
		"CREATE TABLE uprofile.user (user text, id int, message text, PRIMARY KEY (user, id))",
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	parts, err := c.Ring()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range parts {
		if p.Table == blackbox.Table {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%s provisioned with 30000 RU/s has %d physical partitions, want 3: %v", blackbox.Table, n, parts)
	}
	// The article's seed scenario, written through one node (out of
	// clustering order) and read through every node.
	first := c.NodeSession(t, c.Nodes[0])
	for _, q := range []string{
		"insert into uprofile.user (user, id, message) values ('theo', 2, 'hello again')",
		"insert into uprofile.user (user, id, message) values ('theo', 1, 'hello')",
	} {
		if err := first.Query(q).Idempotent(true).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, node := range c.Nodes {
		ns := c.NodeSession(t, node)
		iter := ns.Query("select id, message from uprofile.user where user = ?", "theo").Iter()
		var id int
		var msg string
		var got []string
		for iter.Scan(&id, &msg) {
			got = append(got, fmt.Sprintf("%d:%s", id, msg))
		}
		if err := iter.Close(); err != nil {
			t.Fatalf("read through %s: %v", node.Host, err)
		}
		if len(got) != 2 || got[0] != "1:hello" || got[1] != "2:hello again" {
			t.Errorf("read through %s: rows %q, want [1:hello 2:hello again] in clustering order", node.Host, got)
		}
		checkPeers(t, ns, node)
	}
	waitCalm(t, c, "with the tables created")
	parts, _ = c.Ring()
	t.Logf("ring: %v", parts)
}

// checkPeers checks that a node describes itself and the 4 others so that
// drivers accept them: gocql ignores a peer without data center, rack,
// host id or tokens ("Found invalid peer").
func checkPeers(t *testing.T, s *gocql.Session, node *Container) {
	t.Helper()
	var dc, rack string
	if err := s.Query("SELECT data_center, rack FROM system.local").Scan(&dc, &rack); err != nil {
		t.Fatalf("system.local on %s: %v", node.Host, err)
	}
	if dc == "" || rack == "" {
		t.Errorf("system.local on %s: data_center %q, rack %q: drivers need both", node.Host, dc, rack)
	}
	iter := s.Query("SELECT peer, data_center, rack, host_id, tokens FROM system.peers").Iter()
	var peer string
	var hostID gocql.UUID
	var tokens []string
	n := 0
	for iter.Scan(&peer, &dc, &rack, &hostID, &tokens) {
		n++
		if dc == "" || rack == "" || len(tokens) == 0 {
			t.Errorf("system.peers on %s: peer %s has data_center %q, rack %q, %d tokens: drivers ignore it", node.Host, peer, dc, rack, len(tokens))
		}
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("system.peers on %s: %v", node.Host, err)
	}
	if n != 4 {
		t.Errorf("system.peers on %s lists %d peers, want 4", node.Host, n)
	}
}

// scenarioKillController kills the elected controller: another node must
// take over and repair the dead controller's replicas.
func scenarioKillController(t *testing.T, c *Cluster, s *gocql.Session, keep func(*blackbox.Writer)) {
	waitCalm(t, c, "before the scenario")
	ctrl, err := c.ControllerNode()
	if err != nil || ctrl == 0 {
		t.Fatalf("controller: %d, %v", ctrl, err)
	}
	victim := c.byID(ctrl)
	if victim == nil {
		t.Fatalf("controller n%d is none of the nodes %s", ctrl, c.describe())
	}
	parts, err := c.Ring()
	if err != nil {
		t.Fatal(err)
	}
	// The controller must hold replicas so that its death needs a repair
	// that only the new controller can do.
	if blackbox.ReplicaHolders(parts)[ctrl] == 0 {
		t.Fatalf("controller %s holds no replica, so killing it needs no repair: %v", victim.Host, parts)
	}
	w := blackbox.StartWriter(s, "kill-controller", 40_000_000, 2)
	keep(w)
	defer w.Halt()
	w.WaitProgress(t, 50, time.Minute, "before the fault")

	t0 := time.Now()
	t.Cleanup(func() { c.restore(t, victim) })
	c.Kill(t, victim)
	t.Logf("controller %s (n%d, %d replicas) killed", victim.Host, ctrl, blackbox.ReplicaHolders(parts)[ctrl])
	var next uint64
	took := blackbox.WaitFor(t, 30*time.Second, "another controller", func() (bool, string) {
		id, err := c.ControllerNode()
		if err != nil {
			return false, err.Error()
		}
		next = id
		return id != 0 && id != ctrl, fmt.Sprintf("controller n%d", id)
	})
	if c.byID(next) == nil {
		t.Fatalf("new controller n%d is none of the nodes", next)
	}
	t.Logf("%s (n%d) took over as controller %s after the kill", c.byID(next).Host, next, took.Round(100*time.Millisecond))
	w.WaitProgress(t, 100, time.Minute, "with the controller dead")
	blackbox.WaitFor(t, repairTimeout, "replicas of the dead controller replaced", func() (bool, string) { return c.RingHealthy(c.without(victim)) })
	t.Logf("replicas of %s replaced %s after the kill", victim.Host, time.Since(t0).Round(100*time.Millisecond))
	ops, err := c.Operations()
	if err != nil {
		t.Fatal(err)
	}
	repairs := 0
	for _, op := range ops {
		if op.Kind == placement.KindRepair && op.From == ctrl && op.State == placement.StateDone && op.Created.After(t0) {
			repairs++
		}
	}
	if repairs == 0 {
		t.Errorf("no finished repair of n%d's replicas among the operations", ctrl)
	}

	t1 := time.Now()
	c.Start(t, victim)
	waitCalm(t, c, victim.Host+" back, its stale replicas collected")
	t.Logf("%s back and its stale replicas collected %s after it restarted", victim.Host, time.Since(t1).Round(100*time.Millisecond))
	w.WaitProgress(t, 50, time.Minute, "after the old controller returned")
	w.Halt()
	w.Report(t)
	t.Logf("read back %d acknowledged rows at QUORUM", blackbox.CheckAcked(t, s, w))
}

// scenarioEtcdLeaderFault kills or pauses the etcd leader: the other two
// members keep quorum, so nothing the clients see changes, and the member
// rejoins. A killed member's connections are closed by its kernel; a paused
// one's stay open and silent, which only keepalives detect.
func scenarioEtcdLeaderFault(t *testing.T, c *Cluster, s *gocql.Session, keep func(*blackbox.Writer), name string, base int,
	inject, heal func(testing.TB, *Container), injected string) {
	waitCalm(t, c, "before the scenario")
	leader, err := c.EtcdLeader()
	if err != nil {
		t.Fatal(err)
	}
	leaderID, err := c.etcdLeaderSeenBy(leader)
	if err != nil {
		t.Fatal(err)
	}
	opsBefore, err := c.Operations()
	if err != nil {
		t.Fatal(err)
	}
	known := map[uint64]bool{}
	for _, op := range opsBefore {
		known[op.ID] = true
	}
	w := blackbox.StartWriter(s, name, base, 2)
	keep(w)
	defer w.Halt()
	w.WaitProgress(t, 50, time.Minute, "before the fault")

	t0 := time.Now()
	t.Cleanup(func() { c.restore(t, leader) })
	inject(t, leader)
	t.Logf("etcd leader %s %s", leader.Host, injected)
	var others []*Container
	for _, e := range c.Etcd {
		if e != leader {
			others = append(others, e)
		}
	}
	took := blackbox.WaitFor(t, 30*time.Second, "a new etcd leader", func() (bool, string) {
		for _, e := range others {
			lead, err := c.etcdLeaderSeenBy(e)
			if err != nil || lead == 0 || lead == leaderID {
				return false, fmt.Sprintf("%s sees leader %x (%v)", e.Host, lead, err)
			}
		}
		return true, ""
	})
	t.Logf("etcd has a new leader %s after the fault", took.Round(100*time.Millisecond))
	w.WaitProgress(t, 100, time.Minute, "with an etcd member dead")

	// DDL goes through etcd transactions.
	table := "ks." + strings.ReplaceAll(name, "-", "_")
	for _, q := range []string{
		"CREATE TABLE " + table + " (k int PRIMARY KEY, v text)",
		"INSERT INTO " + table + " (k, v) VALUES (1, 'one')",
	} {
		if err := s.Query(q).Idempotent(true).Exec(); err != nil {
			t.Fatalf("%s with the etcd leader %s: %v", q, injected, err)
		}
	}
	var v string
	if err := s.Query("SELECT v FROM " + table + " WHERE k = 1").Scan(&v); err != nil || v != "one" {
		t.Fatalf("read the new table: %q, %v", v, err)
	}
	// Registrations live on: for longer than a lease lifetime every node
	// stays up and the controller plans no repair.
	holdFor(t, registrationTTL+5*time.Second, "every node registered", func() (bool, string) {
		nodes, err := c.NodesList()
		if err != nil {
			return false, err.Error()
		}
		for _, n := range nodes {
			if n.State != "up" {
				return false, fmt.Sprint(nodes)
			}
		}
		return len(nodes) == 5, fmt.Sprint(nodes)
	})
	ops, err := c.Operations()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if !known[op.ID] && op.Kind == placement.KindRepair {
			t.Errorf("repair planned while only etcd was failing: %s (%s)", op, op.Reason)
		}
	}

	heal(t, leader)
	took = blackbox.WaitFor(t, time.Minute, "the etcd member back", func() (bool, string) { return c.etcdMemberOK(leader) })
	t.Logf("etcd member %s back %s after it was restored (%s after the fault)", leader.Host, took.Round(100*time.Millisecond), time.Since(t0).Round(100*time.Millisecond))
	waitCalm(t, c, "after the etcd member returned")
	w.WaitProgress(t, 50, time.Minute, "after the etcd member returned")
	w.Halt()
	w.Report(t)
	t.Logf("read back %d acknowledged rows at QUORUM", blackbox.CheckAcked(t, s, w))
}

// holdFor checks cond repeatedly for d; it must hold every time.
func holdFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for checks := 0; time.Now().Before(deadline) || checks == 0; checks++ {
		if ok, state := cond(); !ok {
			t.Fatalf("%s stopped holding after %d checks: %s", what, checks, state)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
