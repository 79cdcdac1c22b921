package consensustest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	randv2 "math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/storage"
)

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
	if h.Crashable && h.Silence == nil && h.Replicas > 1 {
		t.Fatal("consensustest: a crashable harness of several nodes needs Silence")
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
		if c.h.Silence != nil {
			c.h.Silence(c.t, consensus.NodeID(n), true)
		}
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
