package placement

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testCluster is a real cluster.Meta and Catalog on metakv.Mem with
// simulated nodes: the controller runs against it in process, without
// etcd or raft.
type testCluster struct {
	t    *testing.T
	ctx  context.Context
	kv   *metakv.Mem
	meta *cluster.Meta
	cat  *cluster.Catalog
	sim  *simNodes
	regs map[uint64]*cluster.Registration
}

func newTestCluster(t *testing.T) *testCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	kv := metakv.NewMem()
	meta, err := cluster.OpenMeta(ctx, kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := &testCluster{t: t, ctx: ctx, kv: kv, meta: meta, cat: cluster.NewCatalog(meta), regs: map[uint64]*cluster.Registration{}}
	tc.sim = newSimNodes(meta)
	t.Cleanup(func() {
		for _, r := range tc.regs {
			_ = r.Close(context.Background())
		}
		meta.Close()
		kv.Close()
		cancel()
	})
	if err := tc.cat.EnsureSchemaVersion(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.cat.CreateKeyspace(ctx, &schema.Keyspace{Name: "ks", Replication: map[string]string{"class": "SimpleStrategy"}}, false); err != nil {
		t.Fatal(err)
	}
	return tc
}

// addNode registers a node (zone label z) and records it as a member, as
// a node joining does.
func (tc *testCluster) addNode(id uint64, zone string) {
	tc.t.Helper()
	info := cluster.NodeInfo{ID: id, Name: fmt.Sprintf("n%d", id), Labels: map[string]string{"zone": zone}}
	reg, err := cluster.Register(tc.ctx, tc.kv, info, 10*time.Second, nil)
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.regs[id] = reg
	if err := tc.meta.UpdateMember(tc.ctx, id, func(m *cluster.Member) bool {
		m.Info, m.FirstSeen, m.DownSince = info, time.Now().UTC(), time.Time{}
		return true
	}); err != nil {
		tc.t.Fatal(err)
	}
	tc.waitState("node registered", func(st *cluster.State) bool { return st.Nodes[id] != nil && st.Members[id] != nil })
}

// addNodes adds nodes 1 to n, all in zone.
func (tc *testCluster) addNodes(n uint64, zone string) {
	tc.t.Helper()
	for id := uint64(1); id <= n; id++ {
		tc.addNode(id, zone)
	}
}

// stopNode ends a node's registration, as its death does after the lease.
func (tc *testCluster) stopNode(id uint64) {
	tc.t.Helper()
	if err := tc.regs[id].Close(tc.ctx); err != nil {
		tc.t.Fatal(err)
	}
	delete(tc.regs, id)
	tc.sim.setDown(id, true)
	tc.waitState("node gone", func(st *cluster.State) bool { return st.Nodes[id] == nil })
}

// createTable creates ks.<name> with n partitions over the whole ring,
// each on the given nodes, and starts their groups (with bytes and
// logical partitions each).
func (tc *testCluster) createTable(name string, throughput int64, n int, nodes []uint64, bytes, logical int64) (uint64, []*kvpb.Descriptor) {
	tc.t.Helper()
	id, err := tc.cat.AllocateID(tc.ctx, "table", 1)
	if err != nil {
		tc.t.Fatal(err)
	}
	first, err := tc.cat.AllocateID(tc.ctx, "partition", uint64(n))
	if err != nil {
		tc.t.Fatal(err)
	}
	tb := &schema.Table{ID: id, Keyspace: "ks", Name: name, UUID: cluster.NewUUID(), NextColumnID: 2, Options: schema.Options{Throughput: throughput},
		Columns: []schema.Column{
			{ID: 0, Name: "k", Type: cqltype.Scalar(cqltype.Varchar), Kind: schema.PartitionKey, Position: 0},
			{ID: 1, Name: "v", Type: cqltype.Scalar(cqltype.Int), Kind: schema.Regular, Position: -1},
		}}
	tb.Canonicalize()
	var parts []*kvpb.Descriptor
	for i, r := range ring.Even(n) {
		d := &kvpb.Descriptor{Id: first + uint64(i), TableId: id, Start: r[0], End: r[1], Generation: 1}
		for j, node := range nodes {
			d.Replicas = append(d.Replicas, &kvpb.ReplicaDescriptor{NodeId: node, ReplicaId: uint64(j + 1)})
		}
		d.NextReplicaId = uint64(len(nodes) + 1)
		parts = append(parts, d)
		tc.sim.add(d, bytes, logical)
	}
	if _, err := tc.cat.CreateTable(tc.ctx, tb, parts, false); err != nil {
		tc.t.Fatal(err)
	}
	tc.waitState("table created", func(st *cluster.State) bool { return st.Schema.ByID[id] != nil })
	return id, parts
}

// controller returns a controller of node id on the cluster, quick to
// plan and to notice dead nodes.
func (tc *testCluster) controller(id uint64, tweak func(*ControllerConfig)) *Controller {
	cfg := ControllerConfig{NodeID: id, Meta: tc.meta, Catalog: tc.cat, Router: tc.sim,
		Interval: 10 * time.Millisecond, DeadAfter: time.Hour, SessionTTL: 1, StepTimeout: 10 * time.Second,
		DisableAutoRebalance: true}
	if tweak != nil {
		tweak(&cfg)
	}
	return NewController(cfg)
}

// run runs c until the test ends.
func (tc *testCluster) run(c *Controller) (stop func()) {
	ctx, cancel := context.WithCancel(tc.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	tc.t.Cleanup(stop)
	return stop
}

// lead runs a controller of node id (see controller) until the test ends
// and returns it once it leads.
func (tc *testCluster) lead(id uint64, tweak func(*ControllerConfig)) *Controller {
	tc.t.Helper()
	c := tc.controller(id, tweak)
	tc.run(c)
	tc.eventually(fmt.Sprintf("node %d to lead", id), c.Leading)
	return c
}

// submit stores op for the leading controller to run.
func (tc *testCluster) submit(op *Operation) {
	tc.t.Helper()
	if err := Submit(tc.ctx, tc.meta.Operations(), op); err != nil {
		tc.t.Fatalf("submit %s: %v", op.Kind, err)
	}
}

// runOp submits op and returns it once it has finished, failing the test
// unless it ended in state with an error containing errText.
func (tc *testCluster) runOp(op *Operation, state, errText string) *Operation {
	tc.t.Helper()
	tc.submit(op)
	done := tc.waitOp(op.ID)
	if done.State != state || !strings.Contains(done.Error, errText) {
		tc.t.Fatalf("%s ended %s: %q; want %s with %q", done, done.State, done.Error, state, errText)
	}
	return done
}

// eventually polls cond until it holds, failing the test after 20s.
func (tc *testCluster) eventually(what string, cond func() bool) {
	tc.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			tc.t.Logf("goroutines:\n%s", buf[:runtime.Stack(buf, true)])
			tc.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (tc *testCluster) waitState(what string, cond func(*cluster.State) bool) {
	tc.t.Helper()
	tc.eventually(what, func() bool { return cond(tc.meta.State()) })
}

// ops lists the stored operations, newest first.
func (tc *testCluster) ops() []*Operation {
	tc.t.Helper()
	ops, err := ListOperations(tc.ctx, tc.meta.Operations())
	if err != nil {
		tc.t.Fatal(err)
	}
	return ops
}

// waitOp waits until operation id has finished and returns it.
func (tc *testCluster) waitOp(id uint64) *Operation {
	tc.t.Helper()
	var op *Operation
	tc.eventually(fmt.Sprintf("operation %d to finish", id), func() bool {
		var err error
		op, err = GetOperation(tc.ctx, tc.meta.Operations(), id)
		return err == nil && !op.Active()
	})
	return op
}

// ringOf returns a table's routing copies in token order.
func (tc *testCluster) ringOf(table uint64) []*kvpb.Descriptor {
	return tc.meta.State().Ring(table).Partitions()
}

// covers reports whether a table's routing copies cover the token range
// exactly, each with replicas.
func covers(parts []*kvpb.Descriptor) error {
	next := int64(math.MinInt64)
	for i, p := range parts {
		if len(p.GetReplicas()) == 0 {
			return fmt.Errorf("partition %d has no replicas", p.GetId())
		}
		if p.GetStart() != next {
			return fmt.Errorf("partition %d starts at %d, want %d", p.GetId(), p.GetStart(), next)
		}
		if p.GetEnd() == math.MaxInt64 {
			if i != len(parts)-1 {
				return fmt.Errorf("partition %d ends the ring before others", p.GetId())
			}
			return nil
		}
		next = p.GetEnd() + 1
	}
	return fmt.Errorf("the ring ends at %d", next-1)
}

// nodesOfDesc lists a descriptor's nodes, learners marked.
func nodesOfDesc(d *kvpb.Descriptor) string { return replicaNames(d) }
