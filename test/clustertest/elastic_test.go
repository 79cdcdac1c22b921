package clustertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/daemon"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// reader reads acknowledged rows back while the cluster changes.
type reader struct {
	errs    atomic.Int64
	reads   atomic.Int64
	lastErr atomic.Value
	stop    chan struct{}
	done    chan struct{}
}

func startReader(s *gocql.Session, w *writer, table string) *reader {
	r := &reader{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-r.stop:
				return
			default:
			}
			n := w.n.Load()
			if n == 0 {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			// Pick a recently acknowledged row.
			var key string
			var idx int
			for tries := 0; tries < 20 && key == ""; tries++ {
				i := int(rng.Int64N(n * 2))
				if v, ok := w.acked.Load(i); ok {
					key, idx = v.(string), i
				}
			}
			if key == "" {
				continue
			}
			var got int
			if err := s.Query("SELECT i FROM "+table+" WHERE k = ? AND i = ?", key, idx).Consistency(gocql.Quorum).Idempotent(true).Scan(&got); err != nil {
				r.errs.Add(1)
				r.lastErr.Store(err.Error())
				continue
			}
			r.reads.Add(1)
		}
	}()
	return r
}

func (r *reader) halt() { close(r.stop); <-r.done }

// waitOp waits until an operation finishes and fails the test if it failed.
func waitOp(t *testing.T, a adminpb.AdminClient, op *adminpb.Operation, d time.Duration) *adminpb.Operation {
	t.Helper()
	var last *adminpb.Operation
	waitFor(t, d, fmt.Sprintf("operation %d (%s)", op.GetId(), op.GetKind()), func() (bool, string) {
		got, err := a.GetOperation(context.Background(), &adminpb.GetOperationRequest{Id: op.GetId()})
		if err != nil {
			return false, err.Error()
		}
		last = got
		if got.GetState() == "failed" {
			t.Fatalf("operation %d failed: %s (steps %v)", got.GetId(), got.GetError(), got.GetSteps())
		}
		return got.GetState() == "done", fmt.Sprintf("%s %.0f%% %v", got.GetState(), 100*got.GetProgress(), got.GetSteps())
	})
	return last
}

// ringSettled checks the invariants: full coverage without overlap, and
// exactly 4 voters on live nodes per partition, no learners.
func ringSettled(st *cluster.State) (bool, string) {
	return ringHealthy(st, nil)
}

func partitionsOf(st *cluster.State, table string) int {
	for id, t := range st.Schema.ByID {
		if t.QualifiedName() == table {
			return len(st.Ring(id).Partitions())
		}
	}
	return 0
}

func TestElasticityUnderLoad(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 5, Configure: func(i int, cfg *daemon.Config) {
		fastFailover(time.Hour)(i, cfg)
		cfg.PhysicalPartitionMaxBytes = 100_000
		cfg.SizeCheckEvery = 1
	}})
	s := session(t, c, 0)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, s, "CREATE TABLE ks.t (k text, i int, v text, PRIMARY KEY (k, i))")
	a := c.Admin(t, 0)
	ctx := context.Background()
	w := startWriter(s, "ks.t")
	r := startReader(session(t, c, 1), w, "ks.t")
	stepStart := time.Now()
	settled := func(what string) {
		t.Helper()
		defer func() { stepStart = time.Now() }()
		waitFor(t, 60*time.Second, "ring invariants after "+what, func() (bool, string) { return ringSettled(c.Live().Meta().State()) })
		t.Logf("%s: ok after %s (%d writes, %d reads so far, %d partitions, %d slow writes, last %v)", what, time.Since(stepStart).Round(100*time.Millisecond), w.n.Load(), r.reads.Load(), partitionsOf(c.Live().Meta().State(), "ks.t"), w.slow.Load(), w.lastSlow.Load())
	}
	waitFor(t, 20*time.Second, "some data", func() (bool, string) { return w.n.Load() > 300, fmt.Sprint(w.n.Load()) })
	settled("start")

	// 1. Forced split at the byte midpoint.
	ring, err := a.ShowRing(ctx, &adminpb.ShowRingRequest{Table: "ks.t"})
	if err != nil {
		t.Fatal(err)
	}
	op, err := a.Split(ctx, &adminpb.SplitRequest{Partition: ring.GetPartitions()[0].GetId()})
	if err != nil {
		t.Fatal(err)
	}
	waitOp(t, a, op, 60*time.Second)
	settled("forced split")
	if n := partitionsOf(c.Live().Meta().State(), "ks.t"); n < 2 {
		t.Fatalf("after a forced split the table has %d partitions", n)
	}

	// 2. Automatic split: partitions grow past 100 kB as writes go on
	// (about 1,700 rows each, at some 60 sequential writes a second).
	before := partitionsOf(c.Live().Meta().State(), "ks.t")
	waitFor(t, 120*time.Second, "an automatic split", func() (bool, string) {
		n := partitionsOf(c.Live().Meta().State(), "ks.t")
		return n > before, fmt.Sprintf("%d partitions", n)
	})
	settled("automatic split")

	// 3. Move a leader replica.
	ring, err = a.ShowRing(ctx, &adminpb.ShowRingRequest{Table: "ks.t"})
	if err != nil {
		t.Fatal(err)
	}
	p := ring.GetPartitions()[0]
	leader := p.GetLeaderNode()
	if leader == 0 {
		t.Fatalf("partition %d has no leader in ring show: %v", p.GetId(), p)
	}
	var target uint64
	for _, n := range c.Nodes {
		has := false
		for _, r := range p.GetReplicas() {
			has = has || r.GetNodeId() == n.ID()
		}
		if !has {
			target = n.ID()
		}
	}
	op, err = a.Move(ctx, &adminpb.MoveRequest{Partition: p.GetId(), From: fmt.Sprint(leader), To: fmt.Sprint(target)})
	if err != nil {
		t.Fatal(err)
	}
	waitOp(t, a, op, 90*time.Second)
	settled("leader move")

	// 4. Move one logical partition onto four chosen nodes.
	var to []string
	for _, n := range c.Nodes[1:] {
		to = append(to, fmt.Sprint(n.ID()))
	}
	op, err = a.MoveKey(ctx, &adminpb.MoveKeyRequest{Table: "ks.t", Key: []string{"k7"}, To: to})
	if err != nil {
		t.Fatal(err)
	}
	waitOp(t, a, op, 120*time.Second)
	settled("logical partition move")
	tok, err := a.Token(ctx, &adminpb.TokenRequest{Table: "ks.t", Key: []string{"k7"}})
	if err != nil {
		t.Fatal(err)
	}
	iso := tok.GetPartition()
	if iso.GetStart() != tok.GetToken() || iso.GetEnd() != tok.GetToken() {
		t.Fatalf("k7 (token %d) is not alone in partition %d [%d, %d]", tok.GetToken(), iso.GetId(), iso.GetStart(), iso.GetEnd())
	}
	for _, r := range iso.GetReplicas() {
		if r.GetNodeId() == c.Nodes[0].ID() {
			t.Fatalf("isolated partition still on node %d: %v", r.GetNodeId(), iso.GetReplicas())
		}
	}

	// 5. Add a node: the controller moves replicas onto it until balanced.
	c.AddNode()
	waitFor(t, 180*time.Second, "rebalance onto the new node", func() (bool, string) { return balanced(c) })
	settled("rebalance after adding a node")

	r.halt()
	w.halt()
	if e := w.errs.Load(); e > 0 {
		t.Errorf("writes failed %d times beyond driver retries (last: %v)", e, w.lastEr.Load())
	}
	if e := r.errs.Load(); e > 0 {
		t.Errorf("reads failed %d times beyond driver retries (last: %v)", e, r.lastErr.Load())
	}
	n := w.checkAcked(t, session(t, c, 2), "ks.t")
	t.Logf("%d acknowledged writes read back; %d reads during the changes", n, r.reads.Load())
}

// controllerIndex returns the index of the node that is controller.
func controllerIndex(t *testing.T, c *testcluster.Cluster) int {
	t.Helper()
	idx := -1
	waitFor(t, 20*time.Second, "a controller", func() (bool, string) {
		for i, n := range c.Nodes {
			if n != nil && n.Controller().Leading() {
				idx = i
				return true, ""
			}
		}
		return false, "none leads"
	})
	return idx
}

// pickMove chooses a partition and a move between two nodes other than
// avoid (the controller, about to be killed) when possible.
func pickMove(c *testcluster.Cluster, parts []*adminpb.Partition, avoid uint64) (*adminpb.Partition, uint64, uint64) {
	for _, p := range parts {
		held := map[uint64]bool{}
		for _, r := range p.GetReplicas() {
			held[r.GetNodeId()] = true
		}
		if held[avoid] {
			continue
		}
		for _, n := range c.Nodes {
			if n != nil && !held[n.ID()] && n.ID() != avoid {
				return p, p.GetReplicas()[0].GetNodeId(), n.ID()
			}
		}
	}
	p := parts[0]
	held := map[uint64]bool{}
	var from uint64
	for _, r := range p.GetReplicas() {
		held[r.GetNodeId()] = true
		if r.GetNodeId() != avoid {
			from = r.GetNodeId()
		}
	}
	for _, n := range c.Nodes {
		if n != nil && !held[n.ID()] {
			return p, from, n.ID()
		}
	}
	return p, from, 0
}

// balanced reports whether replica counts differ by at most one.
func balanced(c *testcluster.Cluster) (bool, string) {
	st := c.Live().Meta().State()
	if ok, why := ringSettled(st); !ok {
		return false, why
	}
	load := map[uint64]int{}
	for _, n := range c.Nodes {
		if n != nil {
			load[n.ID()] = 0
		}
	}
	for _, rg := range st.Rings {
		for _, p := range rg.Partitions() {
			for _, r := range p.GetReplicas() {
				load[r.GetNodeId()]++
			}
		}
	}
	lo, hi := 1<<30, 0
	for _, l := range load {
		lo, hi = min(lo, l), max(hi, l)
	}
	return hi-lo <= 1, fmt.Sprint(load)
}

func TestControllerFailoverResumesOperations(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Nodes: 5, Configure: func(i int, cfg *daemon.Config) {
		fastFailover(time.Hour)(i, cfg)
		off := false
		cfg.AutoRebalance = &off
		cfg.Knobs = &daemon.Knobs{ControllerStepDelay: 300 * time.Millisecond}
	}})
	s := session(t, c, 0)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, s, "CREATE TABLE ks.t (k text, i int, v text, PRIMARY KEY (k, i)) WITH cosmosdb_provisioned_throughput = 30000")
	for i := 0; i < 200; i++ {
		exec(t, s, "INSERT INTO ks.t (k, i, v) VALUES (?, ?, ?)", fmt.Sprintf("k%d", i%20), i, "v")
	}
	waitFor(t, 30*time.Second, "ring", func() (bool, string) { return ringSettled(c.Live().Meta().State()) })
	ctx := context.Background()

	// Kill the controller in the middle of a move.
	ctrl := controllerIndex(t, c)
	adminIdx := (ctrl + 1) % len(c.Nodes)
	a := c.Admin(t, adminIdx)
	ring, err := a.ShowRing(ctx, &adminpb.ShowRingRequest{Table: "ks.t"})
	if err != nil {
		t.Fatal(err)
	}
	p, from, to := pickMove(c, ring.GetPartitions(), c.Nodes[ctrl].ID())
	op, err := a.Move(ctx, &adminpb.MoveRequest{Partition: p.GetId(), From: fmt.Sprint(from), To: fmt.Sprint(to)})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "move under way", func() (bool, string) {
		got, err := a.GetOperation(ctx, &adminpb.GetOperationRequest{Id: op.GetId()})
		if err != nil {
			return false, err.Error()
		}
		return got.GetState() == "running" && len(got.GetSteps()) >= 1, fmt.Sprint(got.GetState(), got.GetSteps())
	})
	c.KillNode(ctrl)
	newCtrl := controllerIndex(t, c)
	if newCtrl == ctrl {
		t.Fatal("the killed node still leads")
	}
	done := waitOp(t, a, op, 90*time.Second)
	t.Logf("move finished by the new controller (node %d): %v", c.Nodes[newCtrl].ID(), done.GetSteps())
	c.RestartNode(ctrl)
	waitFor(t, 60*time.Second, "ring after the move", func() (bool, string) { return ringSettled(c.Live().Meta().State()) })

	// Kill the controller in the middle of a rebalance onto a new node.
	c.AddNode()
	ctrl = controllerIndex(t, c)
	adminIdx = (ctrl + 1) % len(c.Nodes)
	a = c.Admin(t, adminIdx)
	plan, err := a.Rebalance(ctx, &adminpb.RebalanceRequest{DryRun: true})
	if err != nil || len(plan.GetPlan()) == 0 {
		t.Fatalf("dry run: %v %v", plan, err)
	}
	for _, m := range plan.GetPlan() {
		if m.GetReason() == "" || m.GetToName() == "" {
			t.Fatalf("plan entry without a reason or target: %v", m)
		}
	}
	rb, err := a.Rebalance(ctx, &adminpb.RebalanceRequest{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "rebalance under way", func() (bool, string) {
		got, err := a.GetOperation(ctx, &adminpb.GetOperationRequest{Id: rb.GetOperation().GetId()})
		if err != nil {
			return false, err.Error()
		}
		return len(got.GetChildren()) > 0, fmt.Sprint(got.GetState(), got.GetSteps())
	})
	c.KillNode(ctrl)
	if controllerIndex(t, c) == ctrl {
		t.Fatal("the killed node still leads")
	}
	waitOp(t, a, rb.GetOperation(), 180*time.Second)
	c.RestartNode(ctrl)
	waitFor(t, 60*time.Second, "balanced ring", func() (bool, string) { return balanced(c) })
	var n int
	if err := session(t, c, adminIdx).Query("SELECT count(*) FROM ks.t").Consistency(gocql.Quorum).Scan(&n); err != nil || n != 200 {
		t.Fatalf("count = %d, %v; want 200", n, err)
	}
}
