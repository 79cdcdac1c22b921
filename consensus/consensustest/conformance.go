package consensustest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	randv2 "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/storage"
)

// Harness adapts an engine implementation to RunEngineConformance.
type Harness struct {
	// Replicas is the number of replicas of every test group, one per node,
	// on nodes 1..Replicas (1 for consensus/local).
	Replicas int
	// NewCluster is called once per test cluster and returns the function
	// that starts the engine of one node on its store; it is called again
	// for a node after the suite restarted it. Per-cluster shared state (an
	// in-memory network) lives in the closure.
	NewCluster func(t *testing.T) func(node consensus.NodeID, store *storage.Engine) (consensus.Engine, error)
	// Timeout bounds every wait of the suite. Default 20s.
	Timeout time.Duration
	// Crashable gives every node's store a crashable in-memory filesystem
	// (Pebble's vfs.NewCrashableMem) instead of a directory, so that
	// Cluster.Crash can drop what the node had not synced.
	Crashable bool
	// Silence cuts node off from the cluster's network (silent) or
	// reconnects it. Crash calls it first: nothing may leave a node after
	// the instant it crashes, or a peer could count an acknowledgement of
	// state the crash then loses. Required with Crashable.
	Silence func(t *testing.T, node consensus.NodeID, silent bool)
	// WrapFS, with Crashable, wraps node's filesystem each time the node
	// starts, for instance with Pebble's errorfs to inject I/O errors.
	WrapFS func(node consensus.NodeID, fs vfs.FS) vfs.FS
	// Seed drives the random choices of crashes (which unsynced writes
	// survive). Zero means a seed from the clock; the suite logs it.
	Seed int64
}

// RunEngineConformance tests the consensus.Engine and consensus.Group
// contracts: bootstrap, apply order and results, deterministic rejection,
// concurrency, ReadIndex, Status, restart recovery, stop/start/destroy and
// context handling. With a crashable harness, restarts are crashes of
// every node at once that keep only what was synced (and some of what was
// not).
func RunEngineConformance(t *testing.T, h Harness) {
	if h.Timeout == 0 {
		h.Timeout = 20 * time.Second
	}
	tests := []struct {
		name string
		run  func(t *testing.T, c *Cluster)
	}{
		{"Bootstrap", testBootstrap},
		{"ProposeApplyOrder", testApplyOrder},
		{"DeterministicRejection", testRejection},
		{"ConcurrentProposals", testConcurrent},
		{"ReadIndex", testReadIndex},
		{"Status", testStatus},
		{"RestartRecovery", testRestart},
		{"StopStartGroup", testStopStart},
		{"DestroyGroup", testDestroy},
		{"ContextCanceled", testContext},
		{"MultipleGroups", testMultipleGroups},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCluster(t, h)
			defer c.Close()
			tc.run(t, c)
		})
	}
}

// Cluster is a set of nodes, each with its own store and engine, running
// KV groups with one replica per node (replica id = node id).
//
// Methods that only look things up (Group, KV, Engine, Store) are safe to
// call concurrently with each other and with node restarts; the others are
// meant for the test goroutine.
type Cluster struct {
	t     *testing.T
	h     Harness
	start func(consensus.NodeID, *storage.Engine) (consensus.Engine, error)
	dirs  []string

	// rng (under mu) decides which unsynced writes survive a crash.
	rng *rand.Rand
	// fss are the nodes' crashable filesystems (Harness.Crashable);
	// epochs count each node's crashes, so a client can tell an answer
	// from before a crash from one the crashed node gave after it.
	fss    []*vfs.MemFS
	epochs []atomic.Uint64

	mu      sync.RWMutex
	stores  []*storage.Engine
	engines []consensus.Engine
	// kvs[node-1][group]
	kvs    []map[consensus.GroupID]*KV
	groups []map[consensus.GroupID]consensus.Group
}

// Engine returns node's engine (nil while it is stopped).
func (c *Cluster) Engine(node int) consensus.Engine {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.engines[node-1]
}

// Store returns node's store (nil while it is stopped).
func (c *Cluster) Store(node int) *storage.Engine {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.stores[node-1]
}

// NewCluster starts h.Replicas nodes.
func NewCluster(t *testing.T, h Harness) *Cluster {
	if h.Crashable && h.Silence == nil {
		t.Fatal("consensustest: a crashable harness needs Silence")
	}
	if h.Seed == 0 {
		h.Seed = time.Now().UnixNano()
	}
	if h.Crashable {
		t.Logf("crash seed %d", h.Seed)
	}
	c := &Cluster{t: t, h: h, start: h.NewCluster(t), rng: rand.New(rand.NewSource(h.Seed)), epochs: make([]atomic.Uint64, 16)}
	for i := 0; i < h.Replicas; i++ {
		c.AddNode()
	}
	return c
}

// AddNode adds a node (not a member of any group) and returns its number.
func (c *Cluster) AddNode() int {
	c.mu.Lock()
	c.dirs = append(c.dirs, c.t.TempDir())
	if c.h.Crashable {
		c.fss = append(c.fss, vfs.NewCrashableMem())
	}
	c.stores = append(c.stores, nil)
	c.engines = append(c.engines, nil)
	c.kvs = append(c.kvs, map[consensus.GroupID]*KV{})
	c.groups = append(c.groups, map[consensus.GroupID]consensus.Group{})
	n := len(c.dirs)
	c.mu.Unlock()
	c.startNode(n - 1)
	return n
}

// StopNode closes node's engine and store (a crash as far as the other
// nodes can tell; all acknowledged writes are durable).
func (c *Cluster) StopNode(node int) { c.stopNode(node - 1) }

// StartNode reopens node's store and engine and restarts the given groups
// from their persisted state.
func (c *Cluster) StartNode(node int, groups ...consensus.GroupID) {
	c.t.Helper()
	c.startNode(node - 1)
	if c.h.Silence != nil {
		c.h.Silence(c.t, consensus.NodeID(node), false)
	}
	for _, id := range groups {
		c.startGroupOn(node-1, id, nil)
	}
}

// StartGroupOn starts group id on one node, bootstrapping it with members
// when they are given and it has no state.
func (c *Cluster) StartGroupOn(node int, id consensus.GroupID, members []consensus.Replica) {
	c.t.Helper()
	c.startGroupOn(node-1, id, members)
}

// DestroyGroupOn destroys group id on node (engine and state machine
// state) and forgets it.
func (c *Cluster) DestroyGroupOn(node int, id consensus.GroupID) {
	c.t.Helper()
	c.mu.Lock()
	delete(c.groups[node-1], id)
	delete(c.kvs[node-1], id)
	c.mu.Unlock()
	if err := c.Engine(node).DestroyGroup(id); err != nil {
		c.t.Fatalf("node %d: destroy group %d: %v", node, id, err)
	}
	if err := Clear(c.Store(node), id); err != nil {
		c.t.Fatal(err)
	}
}

// Nodes returns the number of nodes.
func (c *Cluster) Nodes() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.dirs)
}

// Running reports whether node runs.
func (c *Cluster) Running(node int) bool { return c.Engine(node) != nil }

func (c *Cluster) startNode(i int) {
	c.t.Helper()
	c.mu.RLock()
	cfg := storage.Config{Dir: c.dirs[i]}
	if c.h.Crashable {
		cfg = storage.Config{Dir: StoreDir, FS: c.fss[i]}
		if c.h.WrapFS != nil {
			cfg.FS = c.h.WrapFS(consensus.NodeID(i+1), c.fss[i])
		}
	}
	c.mu.RUnlock()
	st, err := storage.Open(cfg)
	if err != nil {
		c.t.Fatalf("open store %d: %v", i+1, err)
	}
	e, err := c.start(consensus.NodeID(i+1), st)
	if err != nil {
		c.t.Fatalf("start engine %d: %v", i+1, err)
	}
	c.mu.Lock()
	c.stores[i], c.engines[i] = st, e
	c.mu.Unlock()
}

func (c *Cluster) stopNode(i int) { c.stopNodeQuiet(i, false) }

// stopNodeQuiet stops node i; a crashed node's close errors (its disk may
// be failing) are expected and not reported when quiet.
func (c *Cluster) stopNodeQuiet(i int, quiet bool) {
	c.t.Helper()
	c.mu.Lock()
	e, st := c.engines[i], c.stores[i]
	c.engines[i], c.stores[i] = nil, nil
	clear(c.kvs[i])
	clear(c.groups[i])
	c.mu.Unlock()
	if e != nil {
		if err := e.Close(); err != nil && !quiet {
			c.t.Errorf("close engine %d: %v", i+1, err)
		}
	}
	if st != nil {
		if err := st.Close(); err != nil && !quiet {
			c.t.Errorf("close store %d: %v", i+1, err)
		}
	}
}

// Seed returns the seed of the cluster's random choices; tests derive
// their own from it so that COSMOSD_CRASH_SEED-style reruns repeat them.
func (c *Cluster) Seed() int64 { return c.h.Seed }

// Epoch returns how many times node has crashed. A client that sees the
// epoch of the node that answered change between its request and the
// answer must treat the answer as unknown: the node may have answered
// after the instant of its crash, which a real crash never does.
func (c *Cluster) Epoch(node int) uint64 { return c.epochs[node-1].Load() }

// Crash crashes nodes at one instant: each is silenced, its epoch
// advances, and its filesystem is replaced by what a crash at that instant
// leaves (everything synced, and a random part of what was not); then the
// nodes are stopped. They stay down until StartNode. Needs
// Harness.Crashable.
func (c *Cluster) Crash(nodes ...int) {
	c.t.Helper()
	c.crash(nodes, c.CrashPoint(nodes...))
}

// CrashSynced is Crash on the strictest disk: everything the nodes did not
// sync is lost. It returns their filesystems as they restart from them.
func (c *Cluster) CrashSynced(nodes ...int) []*vfs.MemFS {
	c.t.Helper()
	clones := c.crashPoint(nodes, func() vfs.CrashCloneCfg { return vfs.CrashCloneCfg{UnsyncedDataPercent: 0} })
	c.crash(nodes, clones)
	return clones
}

// crash stops nodes and gives them the filesystems a crash point left.
func (c *Cluster) crash(nodes []int, clones []*vfs.MemFS) {
	for i, n := range nodes {
		c.stopNodeQuiet(n-1, true)
		c.mu.Lock()
		c.fss[n-1] = clones[i]
		c.mu.Unlock()
	}
}

// StoreDir is the directory of every node's store on its filesystem in a
// crashable harness.
const StoreDir = "store"

// CrashPoint takes the instant of a crash of nodes without stopping them:
// it silences them, advances their epochs and returns the filesystems a
// crash now would leave. Hooks that run inside an engine (which cannot
// stop it from there) call it, make the engine fail, and the test then
// replaces the filesystems with ReplaceFS after StopNode.
func (c *Cluster) CrashPoint(nodes ...int) []*vfs.MemFS {
	c.t.Helper()
	// Pebble's crash clones keep a random part of the unsynced data, as a
	// real disk might (called under c.mu, which guards c.rng).
	return c.crashPoint(nodes, func() vfs.CrashCloneCfg {
		return vfs.CrashCloneCfg{UnsyncedDataPercent: c.rng.Intn(100), RNG: randv2.New(randv2.NewPCG(uint64(c.rng.Int63()), 0))}
	})
}

// crashPoint is CrashPoint with the clone configuration of each node.
func (c *Cluster) crashPoint(nodes []int, cfg func() vfs.CrashCloneCfg) []*vfs.MemFS {
	c.t.Helper()
	if !c.h.Crashable {
		c.t.Fatal("consensustest: Crash needs a crashable harness")
	}
	for _, n := range nodes {
		c.epochs[n-1].Add(1)
		c.h.Silence(c.t, consensus.NodeID(n), true)
	}
	clones := make([]*vfs.MemFS, len(nodes))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, n := range nodes {
		clones[i] = c.fss[n-1].CrashClone(cfg())
	}
	return clones
}

// ReplaceFS gives a stopped node the filesystem a CrashPoint returned.
func (c *Cluster) ReplaceFS(node int, fs *vfs.MemFS) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fss[node-1] = fs
}

// Checksum hashes every key and value of group id's state machine on node
// (the spans of Spans), for comparing replicas.
func (c *Cluster) Checksum(node int, id consensus.GroupID) (uint64, error) {
	st := c.Store(node)
	if st == nil {
		return 0, fmt.Errorf("node %d is down", node)
	}
	h := fnv.New64a()
	for _, sp := range Spans(id) {
		it, err := st.NewIter(sp)
		if err != nil {
			return 0, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				_ = it.Close()
				return 0, err
			}
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uint64(len(it.Key())))
			h.Write(n[:])
			h.Write(it.Key())
			binary.BigEndian.PutUint64(n[:], uint64(len(v)))
			h.Write(n[:])
			h.Write(v)
		}
		if err := it.Close(); err != nil {
			return 0, err
		}
	}
	return h.Sum64(), nil
}

// CheckStateAgrees waits until every running replica of id has applied
// the same index, then fails the test unless their states hash the same.
// Call it once nothing is being proposed.
func (c *Cluster) CheckStateAgrees(id consensus.GroupID) {
	c.t.Helper()
	c.CheckConverged(id)
	var last string
	ok := c.poll(func() bool {
		var applied uint64
		var sum uint64
		first := true
		for n := 1; n <= c.Nodes(); n++ {
			kv := c.KV(n, id)
			if kv == nil {
				continue
			}
			a := kv.AppliedIndex()
			cs, err := c.Checksum(n, id)
			if err != nil {
				last = err.Error()
				return false
			}
			if first {
				applied, sum, first = a, cs, false
				continue
			}
			if a != applied {
				last = fmt.Sprintf("node %d applied %d, another %d", n, a, applied)
				return false
			}
			if cs != sum {
				last = fmt.Sprintf("node %d state hashes to %x at index %d, another to %x", n, cs, a, sum)
				return false
			}
		}
		return true
	})
	if !ok {
		c.t.Fatalf("group %d: replicas disagree: %s", id, last)
	}
}

// Close stops every node.
func (c *Cluster) Close() {
	for i := range c.Nodes() {
		c.stopNode(i)
	}
}

// Members is the configuration of a group: replica i on node i.
func (c *Cluster) Members() []consensus.Replica {
	var ms []consensus.Replica
	for i := 1; i <= c.h.Replicas; i++ {
		ms = append(ms, consensus.Replica{ReplicaID: consensus.ReplicaID(i), NodeID: consensus.NodeID(i)})
	}
	return ms
}

// StartGroup starts group id on every node, bootstrapping it when members
// is non-empty.
func (c *Cluster) StartGroup(id consensus.GroupID, members []consensus.Replica) {
	c.t.Helper()
	for i := range c.Nodes() {
		c.startGroupOn(i, id, members)
	}
}

func (c *Cluster) startGroupOn(i int, id consensus.GroupID, members []consensus.Replica) {
	c.t.Helper()
	kv, err := NewKV(c.Store(i+1), id)
	if err != nil {
		c.t.Fatal(err)
	}
	g, err := c.Engine(i+1).StartGroup(context.Background(), consensus.GroupConfig{ID: id, ReplicaID: consensus.ReplicaID(i + 1), Members: members, StateMachine: kv})
	if err != nil {
		c.t.Fatalf("node %d: start group %d: %v", i+1, id, err)
	}
	c.mu.Lock()
	c.kvs[i][id] = kv
	c.groups[i][id] = g
	c.mu.Unlock()
}

// KV returns the state machine of group id on node.
func (c *Cluster) KV(node int, id consensus.GroupID) *KV {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.kvs[node-1][id]
}

// Group returns the handle of group id on node.
// (nil when the node does not run it).
func (c *Cluster) Group(node int, id consensus.GroupID) consensus.Group {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.groups[node-1][id]
}

func (c *Cluster) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.h.Timeout)
}

// Leader waits until exactly one replica of id leads and every replica
// agrees, and returns its node (1-based).
func (c *Cluster) Leader(id consensus.GroupID) int {
	c.t.Helper()
	var last string
	ok := c.poll(func() bool {
		leader := 0
		for i := range c.Nodes() {
			g := c.Group(i+1, id)
			if g == nil {
				continue
			}
			st := g.Status()
			if st.IsLeader() {
				if leader != 0 {
					last = "two leaders"
					return false
				}
				leader = i + 1
			}
		}
		if leader == 0 {
			last = "no leader"
			return false
		}
		lead := c.Group(leader, id).Status().ReplicaID
		for i := range c.Nodes() {
			if g := c.Group(i+1, id); g != nil && g.Status().Leader != lead {
				last = fmt.Sprintf("node %d sees leader %d", i+1, g.Status().Leader)
				return false
			}
		}
		return true
	})
	if !ok {
		c.t.Fatalf("group %d: no stable leader: %s", id, last)
	}
	for i := range c.Nodes() {
		if g := c.Group(i+1, id); g != nil && g.Status().IsLeader() {
			return i + 1
		}
	}
	c.t.Fatalf("group %d: leader vanished", id)
	return 0
}

// poll calls f until it returns true or the timeout passes.
func (c *Cluster) poll(f func() bool) bool {
	deadline := time.Now().Add(c.h.Timeout)
	for time.Now().Before(deadline) {
		if f() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return f()
}

// Propose proposes cmd to group id through its leader, following
// NotLeaderError hints until the timeout. ErrNoQuorum (the request was not
// attempted: the leader lost touch with a quorum, as it may for a moment
// while peers restart) is retried too.
func (c *Cluster) Propose(id consensus.GroupID, cmd []byte) (any, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	for {
		node := c.Leader(id)
		v, err := c.Group(node, id).Propose(ctx, cmd)
		var nl *consensus.NotLeaderError
		if (errors.As(err, &nl) || errors.Is(err, consensus.ErrNoQuorum)) && ctx.Err() == nil {
			if !errors.As(err, &nl) {
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		return v, err
	}
}

// MustPropose is Propose failing the test on error.
func (c *Cluster) MustPropose(id consensus.GroupID, cmd []byte) any {
	c.t.Helper()
	v, err := c.Propose(id, cmd)
	if err != nil {
		c.t.Fatalf("group %d: propose %q: %v", id, cmd, err)
	}
	return v
}

// Restart closes every node's engine and store and starts them again with
// the groups that ran, recovering them from disk.
func (c *Cluster) Restart() {
	c.t.Helper()
	var ids []consensus.GroupID
	c.mu.RLock()
	for id := range c.groups[0] {
		ids = append(ids, id)
	}
	c.mu.RUnlock()
	if c.h.Crashable {
		// A crash of every node at once: what was not synced may be gone.
		all := make([]int, c.Nodes())
		for i := range all {
			all[i] = i + 1
		}
		c.Crash(all...)
	} else {
		for i := range c.Nodes() {
			c.stopNode(i)
		}
	}
	for i := range c.Nodes() {
		c.startNode(i)
		if c.h.Silence != nil {
			c.h.Silence(c.t, consensus.NodeID(i+1), false)
		}
		for _, id := range ids {
			c.startGroupOn(i, id, nil)
		}
	}
}

// ReadIndex calls g.ReadIndex until it succeeds, fails with anything but
// consensus.ErrNoQuorum, or ctx ends. ErrNoQuorum means the read was not
// attempted because the replica has not heard from a quorum lately, which
// is normal for a moment after a restart while peers reconnect.
func ReadIndex(ctx context.Context, g consensus.Group) error {
	for {
		err := g.ReadIndex(ctx)
		if err == nil || !errors.Is(err, consensus.ErrNoQuorum) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// CheckConverged waits until every replica of id applied the same entries
// as the leader's last ReadIndex and compares the applied commands.
func (c *Cluster) CheckConverged(id consensus.GroupID) {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	for i := range c.Nodes() {
		if g := c.Group(i+1, id); g != nil {
			if err := ReadIndex(ctx, g); err != nil {
				c.t.Fatalf("node %d: read index: %v", i+1, err)
			}
		}
	}
	// Entries at the same index must be the same command everywhere.
	// (Replicas may be a few entries apart, and one that caught up from a
	// snapshot has no history before it.)
	byIndex := map[uint64]string{}
	from := map[uint64]int{}
	for i := range c.Nodes() {
		kv := c.KV(i+1, id)
		if kv == nil {
			continue
		}
		if err := kv.Err(); err != nil {
			c.t.Fatalf("node %d: %v", i+1, err)
		}
		for _, a := range kv.History() {
			if a.Type != consensus.EntryCommand {
				continue
			}
			if prev, ok := byIndex[a.Index]; ok && prev != a.Command {
				c.t.Fatalf("index %d: node %d applied %q, node %d applied %q", a.Index, i+1, a.Command, from[a.Index], prev)
			}
			byIndex[a.Index], from[a.Index] = a.Command, i+1
		}
	}
}

func testBootstrap(t *testing.T, c *Cluster) {
	c.StartGroup(7, c.Members())
	leader := c.Leader(7)
	for i := 1; i <= c.h.Replicas; i++ {
		st := c.Group(i, 7).Status()
		if st.ID != 7 || st.ReplicaID != consensus.ReplicaID(i) {
			t.Errorf("node %d: status id %d replica %d", i, st.ID, st.ReplicaID)
		}
		if !slices.Equal(st.Members, c.Members()) {
			t.Errorf("node %d: members %v, want %v", i, st.Members, c.Members())
		}
		if st.Leader != consensus.ReplicaID(leader) || st.LeaderNode != consensus.NodeID(leader) {
			t.Errorf("node %d: leader r%d@n%d, want r%d@n%d", i, st.Leader, st.LeaderNode, leader, leader)
		}
		h := c.KV(i, 7).History()
		if len(h) == 0 || h[0].Index != 1 || h[0].Type != consensus.EntryMembership || !slices.Equal(h[0].Members, c.Members()) {
			t.Errorf("node %d: first applied entry %+v, want the membership at index 1", i, h)
		}
	}
}

func testApplyOrder(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	var last uint64
	for i := range 30 {
		v := c.MustPropose(1, Put("k", fmt.Sprint(i)))
		idx, ok := v.(uint64)
		if !ok || idx <= last {
			t.Fatalf("put %d: result %v after index %d", i, v, last)
		}
		last = idx
		got := c.MustPropose(1, Get("k"))
		if got != (GetResult{Value: fmt.Sprint(i), Found: true}) {
			t.Fatalf("get after put %d: %+v", i, got)
		}
	}
	if got := c.MustPropose(1, Get("absent")); got != (GetResult{}) {
		t.Fatalf("get absent: %+v", got)
	}
	c.CheckConverged(1)
	for i := 1; i <= c.h.Replicas; i++ {
		var puts []string
		var prev uint64
		for _, a := range c.KV(i, 1).History() {
			if a.Index <= prev {
				t.Fatalf("node %d: index %d applied after %d", i, a.Index, prev)
			}
			prev = a.Index
			if a.Type == consensus.EntryCommand && a.Command[0] == opPut {
				puts = append(puts, a.Command)
			}
		}
		if len(puts) > 30 {
			t.Fatalf("node %d: %d puts applied, want at most 30", i, len(puts))
		}
		for j, p := range puts {
			if p != string(Put("k", fmt.Sprint(j))) {
				t.Fatalf("node %d: put %d is %q", i, j, p)
			}
		}
	}
}

func testRejection(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	c.MustPropose(1, Put("k", "a"))
	if _, err := c.Propose(1, CAS("k", "b", true, "c")); !errors.Is(err, ErrCASMismatch) {
		t.Fatalf("cas with wrong old value: %v, want ErrCASMismatch", err)
	}
	if _, err := c.Propose(1, CAS("k", "", false, "c")); !errors.Is(err, ErrCASMismatch) {
		t.Fatalf("cas expecting absence: %v, want ErrCASMismatch", err)
	}
	if _, err := c.Propose(1, []byte("xyz")); !errors.Is(err, ErrBadCommand) {
		t.Fatalf("malformed command: %v, want ErrBadCommand", err)
	}
	if got := c.MustPropose(1, Get("k")); got != (GetResult{Value: "a", Found: true}) {
		t.Fatalf("after rejected cas: %+v", got)
	}
	c.MustPropose(1, CAS("k", "a", true, "c"))
	if got := c.MustPropose(1, Get("k")); got != (GetResult{Value: "c", Found: true}) {
		t.Fatalf("after cas: %+v", got)
	}
}

func testConcurrent(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if _, err := c.Propose(1, Put(fmt.Sprintf("w%d-%d", w, i), "v")); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent propose: %v", err)
	}
	c.CheckConverged(1)
	for n := 1; n <= c.h.Replicas; n++ {
		for w := range workers {
			for i := range each {
				if _, ok, err := c.KV(n, 1).Read(fmt.Sprintf("w%d-%d", w, i)); err != nil || !ok {
					t.Fatalf("node %d: key w%d-%d missing (%v)", n, w, i, err)
				}
			}
		}
	}
}

func testReadIndex(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	ctx, cancel := c.ctx()
	defer cancel()
	for i := range 10 {
		c.MustPropose(1, Put("k", fmt.Sprint(i)))
		for n := 1; n <= c.h.Replicas; n++ {
			if err := ReadIndex(ctx, c.Group(n, 1)); err != nil {
				t.Fatalf("node %d: read index: %v", n, err)
			}
			if v, ok, err := c.KV(n, 1).Read("k"); err != nil || !ok || v != fmt.Sprint(i) {
				t.Fatalf("node %d: read after read index: %q %v %v, want %d", n, v, ok, err, i)
			}
		}
	}
}

func testStatus(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	idx := c.MustPropose(1, Put("k", "v")).(uint64)
	leader := c.Leader(1)
	st := c.Group(leader, 1).Status()
	if !st.IsLeader() || st.Term == 0 {
		t.Fatalf("leader status %+v", st)
	}
	if st.Applied < idx || st.Commit < st.Applied {
		t.Fatalf("leader applied %d commit %d, write at %d", st.Applied, st.Commit, idx)
	}
	ok := c.poll(func() bool {
		st := c.Group(leader, 1).Status()
		if len(st.Progress) != c.h.Replicas {
			return false
		}
		for _, m := range c.Members() {
			if st.Progress[m.ReplicaID] < idx {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("leader progress %v, want every member at %d or later", c.Group(leader, 1).Status().Progress, idx)
	}
	for n := 1; n <= c.h.Replicas; n++ {
		if n == leader {
			continue
		}
		st := c.Group(n, 1).Status()
		if st.IsLeader() || st.Leader != consensus.ReplicaID(leader) || st.Term == 0 {
			t.Errorf("follower %d status %+v", n, st)
		}
	}
}

func testRestart(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	for i := range 20 {
		c.MustPropose(1, Put(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
	}
	c.CheckConverged(1)
	old := make([]*KV, c.h.Replicas)
	for n := 1; n <= c.h.Replicas; n++ {
		old[n-1] = c.KV(n, 1)
	}
	c.Restart()
	for n := 1; n <= c.h.Replicas; n++ {
		// The old incarnation is stopped: its applied index is final. A
		// crash may lose applied entries that were not synced yet (they
		// are applied again from the log), never invent any.
		got, want := c.KV(n, 1).ResumedAt(), old[n-1].AppliedIndex()
		if got > want || (got != want && !c.h.Crashable) {
			t.Fatalf("node %d: state machine resumed at %d, had applied %d", n, got, want)
		}
	}
	c.MustPropose(1, Put("after", "restart"))
	c.CheckConverged(1)
	ctx, cancel := c.ctx()
	defer cancel()
	for n := 1; n <= c.h.Replicas; n++ {
		if err := c.Group(n, 1).ReadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			if v, ok, _ := c.KV(n, 1).Read(fmt.Sprintf("k%d", i)); !ok || v != fmt.Sprint(i) {
				t.Fatalf("node %d: k%d = %q %v after restart", n, i, v, ok)
			}
		}
		if err := c.KV(n, 1).Err(); err != nil {
			t.Fatalf("node %d: %v", n, err)
		}
		if st := c.Group(n, 1).Status(); !slices.Equal(st.Members, c.Members()) {
			t.Fatalf("node %d: members after restart %v", n, st.Members)
		}
	}
}

func testStopStart(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	c.MustPropose(1, Put("k", "v"))
	kv, err := NewKV(c.Store(1), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Engine(1).StartGroup(context.Background(), consensus.GroupConfig{ID: 1, ReplicaID: 1, StateMachine: kv}); !errors.Is(err, consensus.ErrGroupExists) {
		t.Fatalf("second StartGroup: %v, want ErrGroupExists", err)
	}
	if err := c.Engine(1).StopGroup(99); !errors.Is(err, consensus.ErrGroupNotFound) {
		t.Fatalf("StopGroup of an unknown group: %v, want ErrGroupNotFound", err)
	}
	for n := 1; n <= c.h.Replicas; n++ {
		old := c.Group(n, 1)
		if err := c.Engine(n).StopGroup(1); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Engine(n).Group(1); ok {
			t.Fatalf("node %d: stopped group still listed", n)
		}
		ctx, cancel := c.ctx()
		_, err := old.Propose(ctx, Put("x", "y"))
		cancel()
		if !errors.Is(err, consensus.ErrStopped) {
			t.Fatalf("node %d: propose on a stopped group: %v, want ErrStopped", n, err)
		}
	}
	for n := 1; n <= c.h.Replicas; n++ {
		c.startGroupOn(n-1, 1, nil)
	}
	if got := c.MustPropose(1, Get("k")); got != (GetResult{Value: "v", Found: true}) {
		t.Fatalf("after stop and start: %+v", got)
	}
}

func testDestroy(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	c.MustPropose(1, Put("k", "v"))
	for n := 1; n <= c.h.Replicas; n++ {
		if err := c.Engine(n).DestroyGroup(1); err != nil {
			t.Fatal(err)
		}
		if err := Clear(c.Store(n), 1); err != nil {
			t.Fatal(err)
		}
	}
	c.StartGroup(1, c.Members())
	if got := c.MustPropose(1, Get("k")); got != (GetResult{}) {
		t.Fatalf("after destroy: %+v", got)
	}
	for n := 1; n <= c.h.Replicas; n++ {
		if h := c.KV(n, 1).History(); len(h) == 0 || h[0].Index != 1 || h[0].Type != consensus.EntryMembership {
			t.Fatalf("node %d: a destroyed group must bootstrap afresh, applied %+v", n, h)
		}
	}
}

func testContext(t *testing.T, c *Cluster) {
	c.StartGroup(1, c.Members())
	leader := c.Leader(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Group(leader, 1).Propose(ctx, Put("k", "v")); !errors.Is(err, context.Canceled) {
		t.Fatalf("propose with a canceled context: %v", err)
	}
	if err := c.Group(leader, 1).ReadIndex(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("read index with a canceled context: %v", err)
	}
}

func testMultipleGroups(t *testing.T, c *Cluster) {
	for id := consensus.GroupID(1); id <= 3; id++ {
		c.StartGroup(id, c.Members())
	}
	for id := consensus.GroupID(1); id <= 3; id++ {
		c.MustPropose(id, Put("k", fmt.Sprint(id)))
	}
	for id := consensus.GroupID(1); id <= 3; id++ {
		if got := c.MustPropose(id, Get("k")); got != (GetResult{Value: fmt.Sprint(id), Found: true}) {
			t.Fatalf("group %d: %+v", id, got)
		}
		c.CheckConverged(id)
	}
}
