package raft

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	"github.com/cosmosd/cosmosd/storage"
)

// TestLeaderLoss: the leader's node crashes; the other three elect a leader
// and keep accepting writes; the old node returns and catches up.
func TestLeaderLoss(t *testing.T) {
	c, _ := newTestCluster(t, 4, nil)
	c.StartGroup(1, c.Members())
	c.MustPropose(1, consensustest.Put("a", "1"))
	old := c.Leader(1)
	c.StopNode(old)
	rest := without([]int{1, 2, 3, 4}, old)
	for i := range 10 {
		mustProposeAmong(t, c, 1, rest, consensustest.Put(fmt.Sprintf("b%d", i), "2"))
	}
	if l := waitLeader(t, c, 1, rest...); l == old {
		t.Fatalf("stopped node %d still leads", old)
	}
	c.StartNode(old, 1)
	c.CheckConverged(1)
	for i := range 10 {
		if v, ok := readOn(t, c, old, 1, fmt.Sprintf("b%d", i)); !ok || v != "2" {
			t.Fatalf("restarted node %d: b%d = %q %v", old, i, v, ok)
		}
	}
}

// TestMinorityPartition: a cut-off follower does not stop writes; a
// cut-off leader loses leadership to the majority, its pending proposal
// fails (never succeeds), and both catch up when the partition heals.
func TestMinorityPartition(t *testing.T) {
	c, net := newTestCluster(t, 4, nil)
	c.StartGroup(1, c.Members())
	leader := c.Leader(1)
	follower := without([]int{1, 2, 3, 4}, leader)[0]
	net.Isolate(consensus.NodeID(follower))
	for i := range 10 {
		mustProposeAmong(t, c, 1, without([]int{1, 2, 3, 4}, follower), consensustest.Put(fmt.Sprintf("f%d", i), "x"))
	}
	net.Heal()
	c.CheckConverged(1)
	if v, ok := readOn(t, c, follower, 1, "f9"); !ok || v != "x" {
		t.Fatalf("healed follower: f9 = %q %v", v, ok)
	}

	leader = c.Leader(1)
	net.Isolate(consensus.NodeID(leader))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	_, err := c.Group(leader, 1).Propose(ctx, consensustest.Put("lost", "x"))
	cancel()
	var nl *consensus.NotLeaderError
	// Raft may have taken the proposal before the leader knew it was cut
	// off; then the outcome is unknown (the entry may have reached a
	// follower), never ErrNoQuorum, which means "not attempted".
	unknown := errors.Is(err, consensus.ErrAmbiguous) || (errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), "outcome unknown"))
	if err == nil || !(errors.As(err, &nl) || errors.Is(err, consensus.ErrNoQuorum) || unknown) {
		t.Fatalf("propose on an isolated leader: %v, want NotLeaderError, ErrNoQuorum or an unknown outcome", err)
	}
	majority := without([]int{1, 2, 3, 4}, leader)
	newLeader := waitLeader(t, c, 1, majority...)
	mustProposeAmong(t, c, 1, majority, consensustest.Put("after", "y"))
	net.Heal()
	waitLeader(t, c, 1, 1, 2, 3, 4)
	c.CheckConverged(1)
	if v, ok := readOn(t, c, leader, 1, "after"); !ok || v != "y" {
		t.Fatalf("old leader %d (new leader %d): after = %q %v", leader, newLeader, v, ok)
	}
}

// TestNoQuorum: with two of four replicas unreachable (a 2|2 partition, then
// two crashed nodes) every request fails within its deadline with an error
// that names the group and wraps consensus.ErrNoQuorum (or, on a replica
// that still knows a leader, NotLeaderError); nothing hangs and nothing
// reports success. Writes resume once a quorum is back.
func TestNoQuorum(t *testing.T) {
	c, net := newTestCluster(t, 4, nil)
	c.StartGroup(1, c.Members())
	c.MustPropose(1, consensustest.Put("k", "0"))
	leader := c.Leader(1)
	other := without([]int{1, 2, 3, 4}, leader)
	net.Partition(ids(leader, other[0]), ids(other[1], other[2]))

	const deadline = time.Second
	// check runs the requests concurrently; each must fail in time.
	type request struct {
		node int
		op   string
		f    func(ctx context.Context) error
	}
	check := func(reqs ...request) {
		t.Helper()
		errs := make([]error, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				start := time.Now()
				err := r.f(ctx)
				took := time.Since(start)
				var nl *consensus.NotLeaderError
				switch {
				case took > deadline+500*time.Millisecond:
					errs[i] = fmt.Errorf("took %v with a %v deadline (%v)", took, deadline, err)
				case err == nil:
					errs[i] = errors.New("succeeded without a quorum")
				case !strings.Contains(err.Error(), "group 1"):
					errs[i] = fmt.Errorf("%q does not name the group", err)
				case errors.As(err, &nl):
				case errors.Is(err, consensus.ErrNoQuorum):
				case r.op == "propose" && (errors.Is(err, consensus.ErrAmbiguous) || errors.Is(err, context.DeadlineExceeded) && strings.Contains(err.Error(), "outcome unknown")):
					// Raft took the proposal before the loss was known:
					// it may still commit, so it is not "no quorum".
				default:
					errs[i] = fmt.Errorf("%w, want ErrNoQuorum, NotLeaderError or an unknown outcome", err)
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("node %d: %s: %v", reqs[i].node, reqs[i].op, err)
			}
		}
	}
	propose := func(n int, val string) request {
		g := c.Group(n, 1)
		return request{n, "propose", func(ctx context.Context) error {
			_, err := g.Propose(ctx, consensustest.Put("k", val))
			return err
		}}
	}
	readIndex := func(n int) request {
		g := c.Group(n, 1)
		return request{n, "read index", func(ctx context.Context) error { return g.ReadIndex(ctx) }}
	}
	for round := range 2 {
		var reqs []request
		for n := 1; n <= 4; n++ {
			reqs = append(reqs, propose(n, fmt.Sprint(round)), readIndex(n))
		}
		check(reqs...)
	}
	// After an election timeout nobody leads: every replica answers
	// ErrNoQuorum at its deadline.
	eventually(t, waitTimeout, func() error {
		for n := 1; n <= 4; n++ {
			if l := c.Group(n, 1).Status().Leader; l != 0 {
				return fmt.Errorf("node %d still sees leader %d", n, l)
			}
		}
		return nil
	})
	// Every replica now knows that no quorum answers: requests fail at
	// once with ErrNoQuorum (never attempted), not at their deadline.
	for n := 1; n <= 4; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := c.Group(n, 1).Propose(ctx, consensustest.Put("k", "x"))
		rerr := c.Group(n, 1).ReadIndex(ctx)
		cancel()
		for _, e := range []error{err, rerr} {
			if !errors.Is(e, consensus.ErrNoQuorum) || errors.Is(e, context.DeadlineExceeded) {
				t.Fatalf("node %d without leader: %v, want ErrNoQuorum before the deadline", n, e)
			}
		}
	}

	net.Heal()
	c.MustPropose(1, consensustest.Put("k", "healed"))

	// Two crashed nodes.
	down := without([]int{1, 2, 3, 4}, c.Leader(1))[:2]
	for _, n := range down {
		c.StopNode(n)
	}
	up := without([]int{1, 2, 3, 4}, down...)
	check(propose(up[0], "down"), propose(up[1], "down"), readIndex(up[0]), readIndex(up[1]))
	eventually(t, waitTimeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, n := range up {
			if _, err := c.Group(n, 1).Propose(ctx, consensustest.Put("k", "down")); !errors.Is(err, consensus.ErrNoQuorum) || errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("node %d with two of four replicas down: %v, want ErrNoQuorum at once", n, err)
			}
		}
		return nil
	})
	for _, n := range down {
		c.StartNode(n, 1)
	}
	c.MustPropose(1, consensustest.Put("k", "back"))
	c.CheckConverged(1)
	for n := 1; n <= 4; n++ {
		if v, _ := readOn(t, c, n, 1, "k"); v != "back" {
			t.Fatalf("node %d: k = %q", n, v)
		}
	}
}

// TestDroppedProposalFailsPromptly: a proposal appended by a leader that is
// then cut off is overwritten by the new leader's log. It fails long before
// its deadline: with ErrAmbiguous as soon as the cut-off leader knows it
// hears from no quorum, or with NotLeaderError if the old leader rejoins
// and applies the entry at that index first; and it never applies.
func TestDroppedProposalFailsPromptly(t *testing.T) {
	c, net := newTestCluster(t, 4, nil)
	c.StartGroup(1, c.Members())
	c.MustPropose(1, consensustest.Put("k", "0"))
	leader := c.Leader(1)
	net.Isolate(consensus.NodeID(leader))
	type res struct {
		err  error
		took time.Duration
	}
	done := make(chan res, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.Group(leader, 1).Propose(ctx, consensustest.Put("k", "lost"))
		done <- res{err, time.Since(start)}
	}()
	majority := without([]int{1, 2, 3, 4}, leader)
	waitLeader(t, c, 1, majority...)
	for i := range 5 {
		mustProposeAmong(t, c, 1, majority, consensustest.Put("k", fmt.Sprint(i)))
	}
	net.Heal()
	var r res
	select {
	case r = <-done:
	case <-time.After(waitTimeout):
		t.Fatal("dropped proposal still pending")
	}
	var nl *consensus.NotLeaderError
	if !errors.As(r.err, &nl) && !errors.Is(r.err, consensus.ErrAmbiguous) {
		t.Fatalf("dropped proposal: %v after %v, want NotLeaderError or ErrAmbiguous", r.err, r.took)
	}
	c.CheckConverged(1)
	if v, _ := readOn(t, c, leader, 1, "k"); v != "4" {
		t.Fatalf("k = %q, want 4 (the dropped write must not apply)", v)
	}
}

// TestCatchUp restarts a follower that missed many entries, with the log
// kept (it replays the log) and with the log truncated (it needs a
// snapshot).
func TestCatchUp(t *testing.T) {
	for _, tc := range []struct {
		name        string
		truncate    bool
		wantRestore bool
	}{
		{"LogKept", false, false},
		{"LogTruncated", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestCluster(t, 4, func(cfg *Config) {
				if tc.truncate {
					cfg.LogTruncateEntries, cfg.LogRetainEntries = 20, 5
				} else {
					cfg.TestingKnobs.DisableTruncation = true
				}
			})
			c.StartGroup(1, c.Members())
			c.MustPropose(1, consensustest.Put("k", "first"))
			leader := c.Leader(1)
			follower := without([]int{1, 2, 3, 4}, leader)[0]
			c.StopNode(follower)
			rest := without([]int{1, 2, 3, 4}, follower)
			for i := range 120 {
				mustProposeAmong(t, c, 1, rest, consensustest.Put(fmt.Sprintf("k%d", i), fmt.Sprint(i)))
			}
			if tc.truncate {
				// Once the leader no longer counts the stopped follower as
				// recently active, it truncates past it.
				filler := 0
				eventually(t, waitTimeout, func() error {
					if first := firstLogIndex(t, c.Store(leader), 1); first < 50 {
						filler++
						mustProposeAmong(t, c, 1, rest, consensustest.Put("filler", fmt.Sprint(filler)))
						return fmt.Errorf("leader log starts at %d", first)
					}
					return nil
				})
			} else if first := firstLogIndex(t, c.Store(leader), 1); first > 2 {
				t.Fatalf("leader log starts at %d with truncation disabled", first)
			}
			c.StartNode(follower, 1)
			c.CheckConverged(1)
			for i := range 120 {
				if v, ok := readOn(t, c, follower, 1, fmt.Sprintf("k%d", i)); !ok || v != fmt.Sprint(i) {
					t.Fatalf("follower %d: k%d = %q %v", follower, i, v, ok)
				}
			}
			if got := c.KV(follower, 1).Restores() > 0; got != tc.wantRestore {
				t.Fatalf("follower restored a snapshot: %v, want %v", got, tc.wantRestore)
			}
			// The follower's own log is truncated too once it applies enough.
			for i := range 40 {
				c.MustPropose(1, consensustest.Put("more", fmt.Sprint(i)))
			}
			c.CheckConverged(1)
		})
	}
}

// firstLogIndex returns the index of the first raft log entry of group in
// st (0 when the log is empty).
func firstLogIndex(t *testing.T, st *storage.Engine, group uint64) uint64 {
	t.Helper()
	it, err := st.NewIter(storage.RaftLogSpan(group, 0, ^uint64(0)))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if !it.First() {
		return 0
	}
	idx, err := storage.RaftLogIndex(it.Key())
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// TestFaultyNetwork: with messages dropped, duplicated, delayed and
// reordered, concurrent writers still get every acknowledged write applied
// exactly once on every replica.
func TestFaultyNetwork(t *testing.T) {
	c, net := newTestCluster(t, 4, nil)
	c.StartGroup(1, c.Members())
	c.Leader(1)
	net.Faults(0.1, 0.1, 20*time.Millisecond)
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 40 {
				key := fmt.Sprintf("w%d-%d", w, i)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := proposeAmong(ctx, c, 1, []int{1, 2, 3, 4}, consensustest.Append("log", key))
				cancel()
				if err == nil {
					mu.Lock()
					acked[key] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	net.Faults(0, 0, 0)
	st := net.Stats()
	t.Logf("acked %d of 160 appends; network: %+v", len(acked), st)
	if len(acked) < 80 {
		t.Fatalf("only %d of 160 writes acknowledged", len(acked))
	}
	c.MustPropose(1, consensustest.Put("end", "x"))
	c.CheckConverged(1)
	for n := 1; n <= 4; n++ {
		readOn(t, c, n, 1, "end")
		list, err := c.KV(n, 1).List("log")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, v := range list {
			seen[v]++
		}
		for k := range acked {
			if seen[k] != 1 {
				t.Fatalf("node %d: acknowledged append %s applied %d times", n, k, seen[k])
			}
		}
		for k, cnt := range seen {
			if cnt != 1 {
				t.Fatalf("node %d: append %s applied %d times", n, k, cnt)
			}
		}
	}
}

// TestManualTicks: with the ticker off, no election happens until the test
// ticks; then one does.
func TestManualTicks(t *testing.T) {
	c, _ := newTestCluster(t, 4, func(cfg *Config) { cfg.TestingKnobs.ManualTicks = true })
	c.StartGroup(1, c.Members())
	for n := 1; n <= 4; n++ {
		if l := c.Group(n, 1).Status().Leader; l != 0 {
			t.Fatalf("node %d sees leader %d before any tick", n, l)
		}
	}
	ticks := 0
	eventually(t, waitTimeout, func() error {
		for n := 1; n <= 4; n++ {
			rawEngine(c, n).Tick()
		}
		ticks++
		for n := 1; n <= 4; n++ {
			if c.Group(n, 1).Status().IsLeader() {
				return nil
			}
		}
		return errors.New("no leader yet")
	})
	if ticks < 10 {
		t.Fatalf("leader elected after %d ticks, below the election timeout", ticks)
	}
}

// TestStopInFlightIsAmbiguous: a proposal raft has taken may already be in a
// follower's log when its group stops (the leader sends appends before its
// own write is durable), so it fails with ErrAmbiguous, never with
// ErrStopped alone, which callers take as "not attempted" and retry
// elsewhere (a counter or list append would apply twice). A request that
// never reached raft (waiting for a leader) fails with ErrStopped.
func TestStopInFlightIsAmbiguous(t *testing.T) {
	c, net := newTestCluster(t, 4, nil)
	c.StartGroup(1, c.Members())
	c.MustPropose(1, consensustest.Put("k", "0"))
	leader := c.Leader(1)
	g := c.Group(leader, 1)
	before := g.Status().LastIndex
	net.Isolate(consensus.NodeID(leader))
	errc := make(chan error, 1)
	go func() {
		_, err := g.Propose(context.Background(), consensustest.Append("l", "x"))
		errc <- err
	}()
	eventually(t, waitTimeout, func() error {
		if li := g.Status().LastIndex; li <= before {
			return fmt.Errorf("last index %d, proposal not appended yet", li)
		}
		return nil
	})
	if err := rawEngine(c, leader).StopGroup(1); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	if !errors.Is(err, consensus.ErrAmbiguous) || errors.Is(err, consensus.ErrStopped) {
		t.Fatalf("in-flight proposal on a stopped group: %v, want ErrAmbiguous and not ErrStopped", err)
	}

	// A follower cut off from everyone knows no leader after an election
	// timeout; its requests wait without reaching raft, then fail with
	// ErrStopped when the group stops.
	net.Heal()
	follower := without([]int{1, 2, 3, 4}, leader)[0]
	fg := c.Group(follower, 1)
	net.Isolate(consensus.NodeID(follower))
	eventually(t, waitTimeout, func() error {
		if l := fg.Status().Leader; l != 0 {
			return fmt.Errorf("follower still sees leader r%d", l)
		}
		return nil
	})
	go func() {
		_, err := fg.Propose(context.Background(), consensustest.Append("l", "y"))
		errc <- err
	}()
	if err := rawEngine(c, follower).StopGroup(1); err != nil {
		t.Fatal(err)
	}
	err = <-errc
	if errors.Is(err, consensus.ErrAmbiguous) || !(errors.Is(err, consensus.ErrStopped) || errors.Is(err, consensus.ErrNoQuorum)) {
		t.Fatalf("request that never reached raft: %v, want ErrStopped or ErrNoQuorum", err)
	}
}

// TestFollowerDoesNotPointToSilentLeader: once its leader has been quiet
// for half an election timeout (paused, cut off), a follower no longer
// names it, in Status or in NotLeaderError: callers would only wait on a
// node that may never answer. Requests wait for the next leader instead.
func TestFollowerDoesNotPointToSilentLeader(t *testing.T) {
	c, net := newTestCluster(t, 4, nil)
	c.StartGroup(1, c.Members())
	c.MustPropose(1, consensustest.Put("k", "0"))
	leader := c.Leader(1)
	old := c.Group(leader, 1).Status().ReplicaID
	f := c.Group(without([]int{1, 2, 3, 4}, leader)[0], 1)
	net.Isolate(consensus.NodeID(leader))
	eventually(t, waitTimeout, func() error {
		if l := f.Status().Leader; l == old {
			return fmt.Errorf("follower still names the silent leader r%d", l)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := f.Propose(ctx, consensustest.Put("k", "1"))
	var nl *consensus.NotLeaderError
	if errors.As(err, &nl) && nl.Leader == old {
		t.Fatalf("proposal on a follower: %v, naming the silent leader", err)
	}
	if err != nil && !errors.As(err, &nl) {
		t.Fatalf("proposal on a follower: %v", err)
	}
}

// TestLeaderSilence: a node whose replicas follow a leader on another node
// times that node's leader traffic; when the leader is cut off, its
// silence grows from heartbeats' few milliseconds. A node no local replica
// follows is not judged at all (known=false), however long it has been
// quiet: it owes this node nothing.
func TestLeaderSilence(t *testing.T) {
	c, net := newTestCluster(t, 4, nil)
	c.StartGroup(1, c.Members())
	c.MustPropose(1, consensustest.Put("k", "0"))
	leader := c.Leader(1)
	follower := without([]int{1, 2, 3, 4}, leader)[0]
	other := without([]int{1, 2, 3, 4}, leader, follower)[0]
	e := rawEngine(c, follower)
	eventually(t, waitTimeout, func() error {
		if d, ok := e.LeaderSilence(consensus.NodeID(leader)); !ok || d > 200*time.Millisecond {
			return fmt.Errorf("silence of the leader's node: %v %v", d, ok)
		}
		return nil
	})
	if _, ok := e.LeaderSilence(consensus.NodeID(other)); ok {
		t.Fatalf("node %d leads nothing here but is judged", other)
	}
	net.Isolate(consensus.NodeID(leader))
	eventually(t, waitTimeout, func() error {
		// Observed before the follower gives up on it (an election
		// timeout, 100 to 200ms here).
		if d, ok := e.LeaderSilence(consensus.NodeID(leader)); ok && d > 50*time.Millisecond {
			return nil
		}
		return errors.New("the cut-off leader's silence does not grow")
	})
}

// TestLeaseReads: with LeaseReads, a leader whose lease is valid answers
// linearizable reads without sending anything; once the lease has run out
// (no ticks, so no heartbeats renewed it) a read confirms leadership with
// a heartbeat round, which renews the lease for the reads after it.
func TestLeaseReads(t *testing.T) {
	const tick = 50 * time.Millisecond // lease: (10-2) ticks = 400ms
	c, net := newTestCluster(t, 4, func(cfg *Config) {
		cfg.TestingKnobs.ManualTicks = true
		cfg.LeaseReads = true
		cfg.TickInterval = tick
	})
	c.StartGroup(1, c.Members())
	leader := tickUntilLeader(t, c)
	g := c.Group(leader, 1)
	c.MustPropose(1, consensustest.Put("k", "v"))
	quiet := func() int {
		// Wait until the commit reached every follower and nothing moves.
		last := -1
		eventually(t, waitTimeout, func() error {
			time.Sleep(20 * time.Millisecond)
			sent := net.Stats().Sent
			applied := g.Status().Applied
			for n := 1; n <= 4; n++ {
				if a := c.Group(n, 1).Status().Applied; a != applied {
					return fmt.Errorf("node %d applied %d, leader %d", n, a, applied)
				}
			}
			if sent != last {
				last = sent
				return errors.New("messages still moving")
			}
			return nil
		})
		return last
	}
	reads := func(n int) time.Duration {
		start := time.Now()
		for range n {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			err := g.ReadIndex(ctx)
			cancel()
			if err != nil {
				t.Fatalf("read: %v", err)
			}
		}
		return time.Since(start)
	}

	// The lease holds for 400ms after the messages of the write (and the
	// commit that followed) left; settle and read at once.
	c.MustPropose(1, consensustest.Put("k", "w"))
	before := quiet()
	cycles := rawEngine(c, leader).Stats().Cycles
	if d := reads(50); d > 200*time.Millisecond {
		t.Logf("50 reads took %v; the lease may have run out meanwhile", d)
	} else {
		if sent := net.Stats().Sent - before; sent != 0 {
			t.Fatalf("50 reads under a valid lease sent %d messages", sent)
		}
		// The fast path: no scheduling cycle per read.
		if n := rawEngine(c, leader).Stats().Cycles - cycles; n != 0 {
			t.Fatalf("50 reads under a valid lease ran %d scheduling cycles on the leader, want 0 (lease.go, \"The fast path\")", n)
		}
	}

	time.Sleep(8*tick + 100*time.Millisecond) // the lease runs out
	before = net.Stats().Sent
	reads(1)
	if sent := net.Stats().Sent - before; sent == 0 {
		t.Fatal("a read after the lease ran out sent no heartbeat round")
	}
	before = quiet()
	reads(20)
	if sent := net.Stats().Sent - before; sent != 0 {
		t.Fatalf("20 reads after the heartbeat round renewed the lease sent %d messages", sent)
	}

	// A leadership transfer's election ignores leases: the old leader
	// withdraws its fast path before the MsgTimeoutNow leaves, and serves
	// no lease read for the rest of the term.
	rg := g.(*group)
	if !rg.leaseRead() {
		t.Fatal("no fast-path lease on the leader after the renewal")
	}
	target := consensus.ReplicaID(leader%4 + 1)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.TransferLeadership(ctx, target) }()
	eventually(t, waitTimeout, func() error {
		for n := 1; n <= 4; n++ {
			rawEngine(c, n).Tick()
		}
		select {
		case err := <-done:
			done <- err
			return nil
		default:
			return errors.New("transfer under way")
		}
	})
	if err := <-done; err != nil {
		t.Fatalf("transfer: %v", err)
	}
	if rg.leaseRead() || rg.fastLease.Load() != nil {
		t.Fatal("the old leader still offers fast-path lease reads after transferring leadership")
	}
}
