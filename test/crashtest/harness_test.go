package crashtest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	randv2 "math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/raft"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	table   = 7
	parent  = 100
	right   = 101
	timeout = 20 * time.Second
)

// node is one crashable node: its filesystem, store, engine and replicas.
type node struct {
	id    consensus.NodeID
	fs    *vfs.MemFS
	st    *storage.Engine
	eng   *raft.Engine
	parts *partition.Store
	epoch atomic.Uint64
}

// cluster is four nodes on one in-memory network.
type cluster struct {
	t     *testing.T
	net   *raft.MemNetwork
	rng   *randv2.Rand
	seed  int64
	knobs *partition.StoreKnobs
	// afterInstall, when set, runs on a node's engine once the batch that
	// completes a snapshot installation has committed.
	afterInstall func(n *node, group uint64)

	mu    sync.Mutex
	nodes []*node
}

func seed(t *testing.T) int64 {
	if s := os.Getenv("COSMOSD_CRASH_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("COSMOSD_CRASH_SEED: %v", err)
		}
		return v
	}
	return time.Now().UnixNano()
}

func rounds(def int) int {
	if s := os.Getenv("COSMOSD_CRASH_ROUNDS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return def
}

func newCluster(t *testing.T, seed int64, knobs *partition.StoreKnobs) *cluster {
	t.Helper()
	c := &cluster{t: t, net: raft.NewMemNetwork(seed), rng: randv2.New(randv2.NewPCG(uint64(seed), 1)), seed: seed, knobs: knobs}
	for i := 1; i <= 4; i++ {
		n := &node{id: consensus.NodeID(i), fs: vfs.NewCrashableMem()}
		c.nodes = append(c.nodes, n)
		c.open(n)
	}
	t.Cleanup(c.close)
	return c
}

func (c *cluster) open(n *node) {
	c.t.Helper()
	st, err := storage.Open(storage.Config{Dir: "store", FS: n.fs})
	if err != nil {
		c.t.Fatalf("node %d: open store: %v", n.id, err)
	}
	eng, err := raft.New(raft.Config{NodeID: n.id, Storage: st, TickInterval: 10 * time.Millisecond,
		LogTruncateEntries: 50, LogRetainEntries: 5,
		TestingKnobs: &raft.TestingKnobs{Transport: c.net.Transport(n.id), AfterInstallCommit: func(g consensus.GroupID) {
			if c.afterInstall != nil {
				c.afterInstall(n, uint64(g))
			}
		}}})
	if err != nil {
		c.t.Fatalf("node %d: start engine: %v", n.id, err)
	}
	parts := partition.NewStore(partition.StoreConfig{NodeID: n.id, Storage: st, Consensus: eng, TestingKnobs: c.knobs})
	if err := parts.Recover(context.Background()); err != nil {
		c.t.Fatalf("node %d: recover: %v", n.id, err)
	}
	c.mu.Lock()
	n.st, n.eng, n.parts = st, eng, parts
	c.mu.Unlock()
	c.net.Rejoin(n.id)
}

func (c *cluster) stop(n *node) {
	c.mu.Lock()
	parts, eng, st := n.parts, n.eng, n.st
	n.parts, n.eng, n.st = nil, nil, nil
	c.mu.Unlock()
	if parts == nil {
		return
	}
	parts.Close()
	_ = eng.Close()
	_ = st.Close()
}

func (c *cluster) close() {
	for _, n := range c.nodes {
		c.stop(n)
	}
	c.net.Close()
}

// crashPoint takes the instant of a crash of nodes: they are cut off and
// their epochs advance, and the filesystems they would wake up with are
// returned. They keep running until stopped.
func (c *cluster) crashPoint(nodes ...*node) []*vfs.MemFS {
	for _, n := range nodes {
		n.epoch.Add(1)
		c.net.Isolate(n.id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*vfs.MemFS, len(nodes))
	for i, n := range nodes {
		out[i] = n.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: c.rng.IntN(100), RNG: randv2.New(randv2.NewPCG(c.rng.Uint64(), 2))})
	}
	return out
}

// down crashes n and leaves it down until open.
func (c *cluster) down(n *node) {
	clone := c.crashPoint(n)[0]
	c.stop(n)
	n.fs = clone
}

// crash crashes nodes at one instant and restarts them from their disks.
func (c *cluster) crash(nodes ...*node) {
	c.t.Helper()
	clones := c.crashPoint(nodes...)
	for i, n := range nodes {
		c.stop(n)
		n.fs = clones[i]
	}
	for _, n := range nodes {
		c.open(n)
	}
}

// replica returns node n's replica of partition id, nil if none.
func (c *cluster) replica(n *node, id uint64) *partition.Replica {
	c.mu.Lock()
	parts := n.parts
	c.mu.Unlock()
	if parts == nil {
		return nil
	}
	r, _ := parts.Replica(id)
	return r
}

// leader returns the node leading partition id and its replica.
func (c *cluster) leader(id uint64) (*node, *partition.Replica) {
	for _, n := range c.nodes {
		if r := c.replica(n, id); r != nil && r.Group().Status().IsLeader() {
			return n, r
		}
	}
	return nil, nil
}

// waitLeader waits until partition id has a leader.
func (c *cluster) waitLeader(id uint64) (*node, *partition.Replica) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if n, r := c.leader(id); r != nil {
			return n, r
		}
		time.Sleep(5 * time.Millisecond)
	}
	var states []string
	for _, n := range c.nodes {
		if r := c.replica(n, id); r != nil {
			states = append(states, fmt.Sprintf("n%d: %+v", n.id, r.Group().Status()))
		} else {
			states = append(states, fmt.Sprintf("n%d: none", n.id))
		}
	}
	c.t.Fatalf("partition %d: no leader within %s (seed %d): %v", id, timeout, c.seed, states)
	return nil, nil
}

// bootstrap starts the parent partition (the whole token range) with a
// replica on every node.
func (c *cluster) bootstrap() {
	c.t.Helper()
	d := &kvpb.Descriptor{Id: parent, TableId: table, Start: math.MinInt64, End: math.MaxInt64, NextReplicaId: 5}
	for i := 1; i <= 4; i++ {
		d.Replicas = append(d.Replicas, &kvpb.ReplicaDescriptor{NodeId: uint64(i), ReplicaId: uint64(i)})
	}
	for _, n := range c.nodes {
		if _, err := n.parts.Bootstrap(context.Background(), d); err != nil {
			c.t.Fatalf("node %d: bootstrap: %v", n.id, err)
		}
	}
	c.waitLeader(parent)
}

func ck() []byte {
	k, err := cqltype.AppendKey(nil, cqltype.Scalar(cqltype.Int), []byte{0, 0, 0, 1}, false)
	if err != nil {
		panic(err)
	}
	return k
}

// write upserts one row with key pk into whichever partition holds its
// token, through that partition's leader. It reports whether the write was
// acknowledged by a node that did not crash before answering, and whether
// it provably did not apply.
func (c *cluster) write(pk string) (acked, refused bool) {
	k := []byte(pk)
	tok := ring.Token(k)
	var n *node
	var r *partition.Replica
	for _, id := range []uint64{parent, right} {
		if nn, rr := c.leader(id); rr != nil {
			if d := rr.Descriptor(); partition.HasRange(d) && tok >= d.GetStart() && tok <= d.GetEnd() {
				n, r = nn, rr
				break
			}
		}
	}
	if r == nil {
		return false, true
	}
	epoch := n.epoch.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	d := r.Descriptor()
	_, err := r.Write(ctx, &kvpb.WriteRequest{PartitionId: d.GetId(), TableId: table, NowMicros: time.Now().UnixMicro(),
		Mutations: []*kvpb.Mutation{{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: k, Ck: ck(), Timestamp: time.Now().UnixMicro(),
			Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kvpb.ColumnOp_SET, Value: []byte(pk)}}}}})
	if n.epoch.Load() != epoch {
		return false, false
	}
	if err == nil {
		return true, false
	}
	switch partition.ErrorCode(err) {
	case kvpb.Error_NOT_LEADER, kvpb.Error_RANGE_MISMATCH, kvpb.Error_NOT_FOUND, kvpb.Error_UNAVAILABLE:
		return false, true
	}
	return false, false
}

// checkRows waits for every partition to have a leader and converge, then
// fails the test unless every acknowledged row is readable at its
// partition's leader, no refused row is, and all replicas of each
// partition hash the same.
func (c *cluster) checkRows(acked, refused []string, ids ...uint64) {
	c.t.Helper()
	for _, id := range ids {
		c.waitLeader(id)
	}
	find := func(pk string) (bool, error) {
		k := []byte(pk)
		tok := ring.Token(k)
		for _, id := range ids {
			_, r := c.leader(id)
			if r == nil {
				return false, fmt.Errorf("partition %d lost its leader", id)
			}
			d := r.Descriptor()
			if !partition.HasRange(d) || tok < d.GetStart() || tok > d.GetEnd() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			resp, err := r.Read(ctx, &kvpb.ReadRequest{PartitionId: id, TableId: table, Linearizable: true, Clustering: true,
				Keys: []*kvpb.PartitionKey{{Token: tok, Pk: k}}, NowMicros: time.Now().UnixMicro()})
			cancel()
			if err != nil {
				return false, err
			}
			return len(resp.GetRows()) == 1, nil
		}
		return false, fmt.Errorf("no partition holds token %d", tok)
	}
	for _, pk := range acked {
		ok, err := find(pk)
		if err != nil {
			c.t.Fatalf("read %s: %v (seed %d)", pk, err, c.seed)
		}
		if !ok {
			c.t.Fatalf("acknowledged row %s lost (seed %d)", pk, c.seed)
		}
	}
	for _, pk := range refused {
		if ok, err := find(pk); err == nil && ok {
			c.t.Fatalf("refused row %s was applied (seed %d)", pk, c.seed)
		}
	}
	for _, id := range ids {
		c.checkAgree(id)
	}
}

// checkAgree waits until every replica of id has applied the same index
// and fails unless their data spans hash the same.
func (c *cluster) checkAgree(id uint64) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		last = c.agree(id)
		if last == "" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("partition %d: replicas disagree: %s (seed %d)", id, last, c.seed)
}

func (c *cluster) agree(id uint64) string {
	var applied, sum uint64
	first := true
	for _, n := range c.nodes {
		r := c.replica(n, id)
		if r == nil {
			return fmt.Sprintf("node %d has no replica", n.id)
		}
		st := r.Group().Status()
		if st.Err != nil {
			return fmt.Sprintf("node %d: replica failed: %v", n.id, st.Err)
		}
		d := r.Descriptor()
		h := fnv.New64a()
		snap := n.st.NewSnapshot()
		for _, sp := range []storage.Span{storage.RowsSpan(table, d.GetStart(), d.GetEnd()), storage.StatsSpan(table, d.GetStart(), d.GetEnd())} {
			it, err := snap.NewIter(sp)
			if err != nil {
				_ = snap.Close()
				return err.Error()
			}
			for ok := it.First(); ok; ok = it.Next() {
				v, _ := it.ValueAndErr()
				h.Write(it.Key())
				h.Write([]byte{0})
				h.Write(v)
			}
			_ = it.Close()
		}
		_ = snap.Close()
		fmt.Fprintf(h, "%d/%d/%d", d.GetStart(), d.GetEnd(), d.GetGeneration())
		if first {
			applied, sum, first = st.Applied, h.Sum64(), false
			continue
		}
		if st.Applied != applied {
			return fmt.Sprintf("node %d applied %d, another %d", n.id, st.Applied, applied)
		}
		if h.Sum64() != sum {
			return fmt.Sprintf("node %d: state differs at index %d (descriptor %v)", n.id, applied, d)
		}
	}
	return ""
}

// split asks the parent's leader to split at token 0.
func (c *cluster) split() error {
	_, r := c.waitLeader(parent)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := r.Split(ctx, &kvpb.SplitRequest{PartitionId: parent, SplitToken: 0, RightId: right})
	return err
}
