package raft

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	"github.com/cosmosd/cosmosd/storage"
)

// crashHarness is memHarness on crashable in-memory filesystems: a crash
// silences the node on the network, keeps what it synced (and a random
// part of what it did not) and restarts it from there.
func crashHarness(t *testing.T, replicas int, tweak func(*Config), adjust ...func(*consensustest.Harness)) (*consensustest.Cluster, *MemNetwork) {
	t.Helper()
	h, netOf := memHarness(replicas, tweak)
	for _, f := range adjust {
		f(&h)
	}
	h.Timeout = waitTimeout
	h.Crashable = true
	h.Silence = func(t *testing.T, node consensus.NodeID, silent bool) {
		if silent {
			netOf(t).Isolate(node)
		} else {
			netOf(t).Rejoin(node)
		}
	}
	if s := os.Getenv("COSMOSD_CRASH_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("COSMOSD_CRASH_SEED: %v", err)
		}
		h.Seed = seed
	}
	c := consensustest.NewCluster(t, h)
	t.Cleanup(c.Close)
	return c, netOf(t)
}

// crashRounds is how many crashes a randomized crash test injects:
// COSMOSD_CRASH_ROUNDS, default short.
func crashRounds(def int) int {
	if s := os.Getenv("COSMOSD_CRASH_ROUNDS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return def
}

// appendLog records the outcome of every append a crash test proposed.
type appendLog struct {
	mu      sync.Mutex
	acked   map[string]string // value -> key, acknowledged
	failed  map[string]bool   // provably not applied
	unknown int
}

// snapshot returns the acknowledged values so far.
func (l *appendLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.acked))
	for v := range l.acked {
		out = append(out, v)
	}
	return out
}

func newAppendLog() *appendLog {
	return &appendLog{acked: map[string]string{}, failed: map[string]bool{}}
}

// definitelyNotApplied reports errors after which a proposal provably did
// not commit: raft never took it, or it lost its log position.
func definitelyNotApplied(err error) bool {
	var nl *consensus.NotLeaderError
	return errors.As(err, &nl) || errors.Is(err, consensus.ErrNoQuorum) ||
		(errors.Is(err, consensus.ErrStopped) && !errors.Is(err, consensus.ErrAmbiguous)) ||
		errors.Is(err, ErrProposalDropped)
}

// runAppends proposes unique appends to groups through whichever running
// node leads, until stop closes. An answer counts only if the node that
// gave it did not crash in between (a real crash answers nothing after
// its instant).
func runAppends(c *consensustest.Cluster, groups []consensus.GroupID, client int, seed int64, log *appendLog, stop <-chan struct{}) {
	rng := rand.New(rand.NewSource(seed))
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		id := groups[rng.Intn(len(groups))]
		key := fmt.Sprintf("k%d", rng.Intn(4))
		val := fmt.Sprintf("c%d-%d", client, i)
		node, g := 0, consensus.Group(nil)
		for n := 1; n <= c.Nodes(); n++ {
			if gg := c.Group(n, id); gg != nil && gg.Status().IsLeader() {
				node, g = n, gg
				break
			}
		}
		if g == nil {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		epoch := c.Epoch(node)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := g.Propose(ctx, consensustest.Append(key, val))
		cancel()
		crashed := c.Epoch(node) != epoch
		log.mu.Lock()
		switch {
		case err == nil && !crashed:
			log.acked[val] = fmt.Sprintf("%d/%s", id, key)
		case err != nil && !crashed && definitelyNotApplied(err):
			log.failed[val] = true
		default:
			log.unknown++
		}
		log.mu.Unlock()
	}
}

// checkAppends verifies, on every node, that each acknowledged append is
// in its list exactly once, no value is in any list twice, and no append
// that provably failed was applied; and that the replicas' states agree.
func checkAppends(t *testing.T, c *consensustest.Cluster, groups []consensus.GroupID, log *appendLog) {
	t.Helper()
	for _, id := range groups {
		c.CheckStateAgrees(id)
		if err := c.KV(1, id).Err(); err != nil {
			t.Fatalf("group %d: %v", id, err)
		}
	}
	found := map[string]string{}
	for _, id := range groups {
		for k := range 4 {
			key := fmt.Sprintf("k%d", k)
			list, err := c.KV(1, id).List(key)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range list {
				where := fmt.Sprintf("%d/%s", id, key)
				if prev, dup := found[v]; dup {
					t.Fatalf("%s applied twice (%s and %s)", v, prev, where)
				}
				found[v] = where
				if log.failed[v] {
					t.Fatalf("%s was refused but applied in %s", v, where)
				}
			}
		}
	}
	for v, where := range log.acked {
		if found[v] != where {
			t.Fatalf("acknowledged append %s to %s lost (found in %q)", v, where, found[v])
		}
	}
	t.Logf("%d appends acknowledged, %d refused, %d unknown; %d in the lists", len(log.acked), len(log.failed), log.unknown, len(found))
}

// TestCrashRecovery crashes random sets of nodes (one, two, or all four at
// the same instant) while clients append to two groups, and restarts them
// from what their disks kept. Logs are truncated often, so replicas also
// catch up from snapshots and some crashes hit installations. After
// recovery no acknowledged append is lost, none is applied twice, and the
// replicas' states are identical.
func TestCrashRecovery(t *testing.T) {
	c, _ := crashHarness(t, 4, func(cfg *Config) {
		cfg.LogTruncateEntries, cfg.LogRetainEntries = 40, 5
	})
	groups := []consensus.GroupID{1, 2}
	for _, id := range groups {
		c.StartGroup(id, c.Members())
	}
	rng := rand.New(rand.NewSource(c.Seed() + 1))
	log := newAppendLog()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for cl := range 4 {
		seed := rng.Int63()
		wg.Go(func() { runAppends(c, groups, cl, seed, log, stop) })
	}
	nodes := []int{1, 2, 3, 4}
	rounds := crashRounds(8)
	for r := range rounds {
		time.Sleep(time.Duration(20+rng.Intn(150)) * time.Millisecond)
		var victims []int
		switch x := rng.Intn(4); {
		case x < 2:
			victims = []int{nodes[rng.Intn(4)]}
		case x == 2:
			p := rng.Perm(4)
			victims = []int{nodes[p[0]], nodes[p[1]]}
		default:
			victims = nodes
		}
		t.Logf("round %d: crash %v", r, victims)
		c.Crash(victims...)
		time.Sleep(time.Duration(rng.Intn(100)) * time.Millisecond)
		for _, v := range victims {
			c.StartNode(v, groups...)
		}
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	checkAppends(t, c, groups, log)
}

// TestCrashDuringSnapshotInstall crashes a follower at each point of a
// snapshot installation (after each staged span is ingested, and just
// before the batch that completes it) and restarts it from what its disk
// kept: the installation completes on restart and the follower's state
// matches the others'.
func TestCrashDuringSnapshotInstall(t *testing.T) {
	points := []struct {
		name string
		span int // -1: before the completing batch
	}{{"after span 0", 0}, {"after span 1", 1}, {"before commit", -1}}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			var armed atomic.Bool
			hit := make(chan []*vfs.MemFS, 1)
			var c *consensustest.Cluster
			const follower = 4
			crash := func() error {
				if !armed.CompareAndSwap(true, false) {
					return nil
				}
				hit <- c.CrashPoint(follower)
				return errors.New("injected crash")
			}
			c, _ = crashHarness(t, 4, func(cfg *Config) {
				cfg.LogTruncateEntries, cfg.LogRetainEntries = 20, 5
				if cfg.NodeID != follower {
					return
				}
				cfg.TestingKnobs.AfterSnapshotSpan = func(_ consensus.GroupID, span int) error {
					if span == p.span {
						return crash()
					}
					return nil
				}
				cfg.TestingKnobs.BeforeInstallCommit = func(consensus.GroupID) error {
					if p.span == -1 {
						return crash()
					}
					return nil
				}
			})
			c.StartGroup(1, c.Members())
			c.MustPropose(1, consensustest.Put("first", "1"))
			c.Crash(follower)
			rest := []int{1, 2, 3}
			for i := range 60 {
				mustProposeAmong(t, c, 1, rest, consensustest.Put(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
			}
			leader := waitLeader(t, c, 1, rest...)
			eventually(t, waitTimeout, func() error {
				if first := firstLogIndex(t, c.Store(leader), 1); first < 10 {
					mustProposeAmong(t, c, 1, rest, consensustest.Put("filler", "x"))
					return fmt.Errorf("leader log still starts at %d", first)
				}
				return nil
			})
			armed.Store(true)
			c.StartNode(follower, 1)
			var clone []*vfs.MemFS
			select {
			case clone = <-hit:
			case <-time.After(waitTimeout):
				t.Fatal("the follower never installed a snapshot")
			}
			c.StopNode(follower)
			c.ReplaceFS(follower, clone[0])
			c.StartNode(follower, 1)
			if m, err := rawEngine(c, follower).loadInstall(1); err != nil || m != nil {
				t.Fatalf("install record after restart: %v %v", m, err)
			}
			c.MustPropose(1, consensustest.Put("last", "1"))
			c.CheckStateAgrees(1)
			for i := range 60 {
				if v, ok := readOn(t, c, follower, 1, fmt.Sprintf("k%d", i)); !ok || v != fmt.Sprint(i) {
					t.Fatalf("k%d = %q %v", i, v, ok)
				}
			}
		})
	}
}

// TestDiskErrors: one node's disk starts failing writes (EIO, then
// ENOSPC) while clients append. The other three keep committing; the
// node's replicas stop instead of serving state that may not be durable,
// and its engine reports itself unhealthy (so the daemon's watchdog gets
// it restarted). Once the disk works again, the node restarts from what it
// had synced and catches up: nothing acknowledged is lost or applied
// twice, and the replicas agree.
func TestDiskErrors(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.ENOSPC} {
		t.Run(errno.Error(), func(t *testing.T) {
			const sick = 3
			var failing atomic.Bool
			inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
				if failing.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
					return &os.PathError{Op: "write", Path: op.Path, Err: errno}
				}
				return nil
			})
			c, _ := crashHarness(t, 4, func(cfg *Config) {
				cfg.LogTruncateEntries, cfg.LogRetainEntries = 40, 5
			}, func(h *consensustest.Harness) {
				h.WrapFS = func(node consensus.NodeID, fs vfs.FS) vfs.FS {
					if node == sick {
						return errorfs.Wrap(fs, inj)
					}
					return fs
				}
			})
			groups := []consensus.GroupID{1, 2}
			for _, id := range groups {
				c.StartGroup(id, c.Members())
			}
			log := newAppendLog()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for cl := range 3 {
				seed := c.Seed() + int64(cl)
				wg.Go(func() { runAppends(c, groups, cl, seed, log, stop) })
			}
			time.Sleep(100 * time.Millisecond)
			failing.Store(true)
			eventually(t, waitTimeout, func() error {
				if err := rawEngine(c, sick).Healthy(); err == nil {
					return errors.New("the engine of the failing disk still reports healthy")
				}
				for _, id := range groups {
					if c.Group(sick, id).Status().Err == nil {
						return fmt.Errorf("group %d still runs on the failing disk", id)
					}
				}
				return nil
			})
			// The others go on.
			before := len(log.snapshot())
			eventually(t, waitTimeout, func() error {
				if n := len(log.snapshot()); n < before+50 {
					return fmt.Errorf("%d appends acknowledged since the disk failed", n-before)
				}
				return nil
			})
			// The disk is replaced (or space freed): restart from what it
			// had synced.
			c.Crash(sick)
			failing.Store(false)
			c.StartNode(sick, groups...)
			time.Sleep(100 * time.Millisecond)
			close(stop)
			wg.Wait()
			checkAppends(t, c, groups, log)
		})
	}
}

// TestCrashDuringMembershipChange moves replica 4 to a fifth node (add a
// learner, which catches up from a snapshot, then promote it and remove
// replica 4 in one joint change) while clients append, and crashes random
// sets of nodes at random instants of the move. The move is retried after
// each crash until it completes, as the controller would; then nothing
// acknowledged is lost or applied twice and the final replicas agree.
func TestCrashDuringMembershipChange(t *testing.T) {
	for r := range crashRounds(3) {
		t.Run(fmt.Sprint(r), func(t *testing.T) {
			c, _ := crashHarness(t, 4, func(cfg *Config) {
				cfg.LogTruncateEntries, cfg.LogRetainEntries = 30, 5
			})
			rng := rand.New(rand.NewSource(c.Seed() + 7))
			c.StartGroup(1, c.Members())
			n5 := c.AddNode()
			groups := []consensus.GroupID{1}
			log := newAppendLog()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for cl := range 3 {
				seed := rng.Int63()
				wg.Go(func() { runAppends(c, groups, cl, seed, log, stop) })
			}
			c.StartGroupOn(n5, 1, nil)
			moved := make(chan error, 1)
			go func() { moved <- moveReplica(c, 1, 4, 5, consensus.NodeID(n5)) }()
			time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
			var victims []int
			for _, n := range rng.Perm(5)[:1+rng.Intn(3)] {
				victims = append(victims, n+1)
			}
			t.Logf("crash %v during the move", victims)
			c.Crash(victims...)
			time.Sleep(time.Duration(rng.Intn(100)) * time.Millisecond)
			for _, v := range victims {
				c.StartNode(v, 1)
			}
			if err := <-moved; err != nil {
				t.Fatalf("move: %v (seed %d)", err, c.Seed())
			}
			c.DestroyGroupOn(4, 1)
			time.Sleep(100 * time.Millisecond)
			close(stop)
			wg.Wait()
			checkAppends(t, c, groups, log)
			for _, n := range []int{1, 2, 3, n5} {
				st := c.Group(n, 1).Status()
				for _, m := range st.Members {
					if m.ReplicaID == 4 || m.Learner {
						t.Fatalf("node %d: members %v after the move", n, st.Members)
					}
				}
			}
		})
	}
}

// moveReplica replaces replica from with replica to on node, retrying
// every step until it is done or a minute passes: add to as a learner,
// wait until it replicates, then promote it and remove from together.
func moveReplica(c *consensustest.Cluster, id consensus.GroupID, from, to consensus.ReplicaID, node consensus.NodeID) error {
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		var g consensus.Group
		for n := 1; n <= c.Nodes(); n++ {
			if gg := c.Group(n, id); gg != nil && gg.Status().IsLeader() {
				g = gg
				break
			}
		}
		if g == nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		st := g.Status()
		var toMember, fromMember, toLearner bool
		for _, m := range st.Members {
			switch m.ReplicaID {
			case to:
				toMember, toLearner = true, m.Learner
			case from:
				fromMember = true
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		switch {
		case toMember && !toLearner && !fromMember:
			cancel()
			return nil
		case !toMember:
			last = g.ChangeReplicas(ctx, []consensus.ReplicaChange{{Type: consensus.AddLearner, Replica: consensus.Replica{ReplicaID: to, NodeID: node, Learner: true}}})
		case st.Progress[to] == 0 || st.Progress[to] < st.Commit:
			last = fmt.Errorf("learner at %d of %d", st.Progress[to], st.Commit)
			time.Sleep(10 * time.Millisecond)
		default:
			last = g.ChangeReplicas(ctx, []consensus.ReplicaChange{
				{Type: consensus.PromoteLearner, Replica: consensus.Replica{ReplicaID: to}},
				{Type: consensus.RemoveReplica, Replica: consensus.Replica{ReplicaID: from}},
			})
		}
		cancel()
		if last != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return fmt.Errorf("replica %d not moved within a minute: %v", from, last)
}

// TestCrashBetweenLogSyncAndApplySync holds the durability argument of
// applying without sync (doc.go, "Durability"): an acknowledged command
// is durable in a quorum of raft logs, not yet in the leader's state
// machine, whose apply batch waits for a later sync. Right after
// acknowledgements the leader alone, or every node at once, crashes on a
// disk that keeps only what was synced. Some crash must lose an apply
// that was acknowledged (the window is real), and after recovery every
// acknowledged append is in its list exactly once on every replica (the
// apply state travels with the state machine's writes, so nothing is
// applied twice).
func TestCrashBetweenLogSyncAndApplySync(t *testing.T) {
	c, _ := crashHarness(t, 4, nil)
	const id = consensus.GroupID(1)
	c.StartGroup(id, c.Members())
	log := newAppendLog()
	lost := 0
	for round := range crashRounds(6) {
		leader := waitLeader(t, c, id, 1, 2, 3, 4)
		g := c.Group(leader, id)
		for i := range 3 {
			val := fmt.Sprintf("r%d-%d", round, i)
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			_, err := g.Propose(ctx, consensustest.Append("k0", val))
			cancel()
			if err != nil {
				t.Fatalf("round %d: append %s on leader %d: %v", round, val, leader, err)
			}
			log.acked[val] = fmt.Sprintf("%d/k0", id)
		}
		acked := g.Status().Applied
		victims := []int{leader}
		if round%2 == 1 {
			victims = []int{1, 2, 3, 4}
		}
		fss := c.CrashSynced(victims...)
		for i, v := range victims {
			if v != leader {
				continue
			}
			durable := durableApplied(t, fss[i], id)
			t.Logf("round %d: crashed %v; leader %d had applied %d, its disk kept %d", round, victims, leader, acked, durable)
			if durable < acked {
				lost++
			}
		}
		for _, v := range victims {
			c.StartNode(v, id)
		}
	}
	if lost == 0 {
		t.Fatal("no crash lost an acknowledged apply: the test no longer exercises the window between log sync and apply sync")
	}
	checkAppends(t, c, []consensus.GroupID{id}, log)
}

// durableApplied opens a crashed node's store and returns group id's
// applied index as its disk kept it (what a restart resumes from).
func durableApplied(t *testing.T, fs vfs.FS, id consensus.GroupID) uint64 {
	t.Helper()
	st, err := storage.Open(storage.Config{Dir: consensustest.StoreDir, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	raw, ok, err := st.Get(storage.RaftApplyStateKey(uint64(id)))
	if err != nil || !ok {
		t.Fatalf("apply state of group %d: found=%v err=%v", id, ok, err)
	}
	as, err := decodeApplyState(raw)
	if err != nil {
		t.Fatal(err)
	}
	return as.appliedIndex
}

// TestStuckSyncReportsUnhealthy wedges one follower's WAL syncs (a disk
// that stops answering): its cycles still run, since they never wait for
// the disk, but nothing it acknowledges leaves, and Healthy reports the
// pending sync once it is older than StallTimeout (the daemon then stops
// its watchdog pings). The other three go on meanwhile. (A leader whose
// disk wedges stalls its groups until then: it applies only what its own
// log has synced.)
func TestStuckSyncReportsUnhealthy(t *testing.T) {
	const sick = 2
	var stuck atomic.Bool
	release := make(chan struct{})
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			if stuck.Load() {
				<-release
			}
		}
		return nil
	})
	c, _ := crashHarness(t, 4, func(cfg *Config) {
		cfg.StallTimeout = 300 * time.Millisecond
	}, func(h *consensustest.Harness) {
		h.WrapFS = func(node consensus.NodeID, fs vfs.FS) vfs.FS {
			if node == sick {
				return errorfs.Wrap(fs, inj)
			}
			return fs
		}
	})
	const id = consensus.GroupID(1)
	c.StartGroup(id, c.Members())
	c.MustPropose(id, consensustest.Put("a", "1"))
	// The others commit without the sick node only if it does not lead: a
	// leader applies only what its own log has synced.
	if leader := waitLeader(t, c, id, 1, 2, 3, 4); leader == sick {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		err := c.Group(sick, id).TransferLeadership(ctx, consensus.ReplicaID(1))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	stuck.Store(true)
	defer func() {
		if stuck.Swap(false) {
			close(release)
		}
	}()
	for i := range 20 {
		c.MustPropose(id, consensustest.Put("b", fmt.Sprint(i)))
	}
	eventually(t, waitTimeout, func() error {
		err := rawEngine(c, sick).Healthy()
		if err == nil {
			return errors.New("the engine whose syncs hang still reports healthy")
		}
		if !strings.Contains(err.Error(), "sync") {
			return fmt.Errorf("unexpected health error: %v", err)
		}
		return nil
	})
	stuck.Store(false)
	close(release)
	eventually(t, waitTimeout, func() error { return rawEngine(c, sick).Healthy() })
	c.CheckStateAgrees(id)
}
