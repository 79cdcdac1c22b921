package nemesis

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/test/blackbox"
)

// The nemesis injects one fault at a time, holds it, heals it, waits for
// the cluster to recover (bounded: a cluster that does not recover is a
// finding, not a reason to stop) and goes on with the next, until the
// fault phase is over. Its choices (kinds, victims, durations) come from
// the seed alone, so a seed replays the same schedule; what the cluster
// does meanwhile depends on timing.

// Fault kinds.
const (
	kindKill       = "kill"       // docker kill (SIGKILL), later docker start
	kindPause      = "pause"      // docker pause / unpause
	kindDisconnect = "disconnect" // docker network disconnect / connect
	kindPartition  = "partition"  // iptables: cut from some peers, not from etcd or clients
	kindClock      = "clock-skew" // the node's clock ±1h (testing_clock_offset_file)
	kindDiskFull   = "disk-full"  // the data directory's file system filled
	kindWipe       = "wipe"       // killed, data directory emptied, started as a new node
	kindTwoDown    = "two-down"   // two nodes killed at once: partitions on both lose quorum
)

func allKinds() []string {
	return []string{kindKill, kindPause, kindDisconnect, kindPartition, kindClock, kindDiskFull, kindWipe, kindTwoDown}
}

func isKind(k string) bool { return slices.Contains(allKinds(), k) }

// recoverTimeout bounds the wait for the cluster to recover after a
// fault is healed.
const recoverTimeout = 2 * time.Minute

// afterglow is how long after a fault is healed its effects are still
// attributed to it (clients reconnect, leaders settle), at least.
const afterglow = 5 * time.Second

// plannedFault is what the schedule decided, before it runs.
type plannedFault struct {
	kind    string
	victims []int // indexes into Cluster.Nodes
	peers   []int // partition: the peers the victim is cut from
	hold    time.Duration
	gap     time.Duration // quiet time after recovery
	offset  time.Duration // clock skew
}

// faultEvent is a fault as it happened; times are since the run's start.
type faultEvent struct {
	Seq       int
	Kind      string
	Desc      string
	Victims   []string // node names
	VictimIPs []string
	// Start: the nemesis begins the fault; Injected: the fault is in
	// place; HealStart: the nemesis begins to heal it; Healed: it is
	// healed; Recovered: every node up and the ring healthy again.
	Start, Injected, HealStart, Healed, Recovered time.Duration

	Recovery string // "" when recovered, else the last state seen
	Notes    []string
	// noQuorum lists, for two-down, the token ranges (per table) whose
	// partitions had replicas on both victims when they were killed.
	noQuorum map[string][][2]int64
}

func (e *faultEvent) note(format string, args ...any) {
	e.Notes = append(e.Notes, fmt.Sprintf(format, args...))
}

// windowEnd is when the fault stops being blamed for what clients see:
// afterglow after the heal, or when the cluster recovered if later.
func (e *faultEvent) windowEnd() time.Duration { return max(e.Healed+afterglow, e.Recovered) }

// Nemesis runs the fault schedule.
type Nemesis struct {
	c     *Cluster
	hist  *history // for the clock of the run
	kinds []string
	rng   *rand.Rand
	logf  func(format string, args ...any)

	mu     sync.Mutex
	events []*faultEvent
}

func newNemesis(c *Cluster, hist *history, s settings, logf func(string, ...any)) *Nemesis {
	kinds := slices.Clone(s.kinds)
	var left []string
	if c.noDisk != "" && slices.Contains(kinds, kindDiskFull) {
		left = append(left, kindDiskFull+" ("+c.noDisk+")")
		kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == kindDiskFull })
	}
	if c.noCut != "" && slices.Contains(kinds, kindPartition) {
		left = append(left, kindPartition+" ("+c.noCut+")")
		kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == kindPartition })
	}
	if len(left) > 0 {
		logf("fault kinds left out: %s", strings.Join(left, "; "))
	}
	return &Nemesis{c: c, hist: hist, kinds: kinds, rng: rand.New(rand.NewSource(s.seed)), logf: logf}
}

// Events returns the faults so far.
func (n *Nemesis) Events() []*faultEvent {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.events)
}

// plan draws the next fault: the kinds in a seeded order first, so a
// short run sees each at least once, then kinds at random.
func (n *Nemesis) plan(seq int, order []string) plannedFault {
	kind := n.kinds[n.rng.Intn(len(n.kinds))]
	if seq < len(order) {
		kind = order[seq]
	}
	dur := func(lo, hi int) time.Duration { return time.Duration(lo+n.rng.Intn(hi-lo+1)) * time.Second }
	perm := n.rng.Perm(len(n.c.Nodes))
	f := plannedFault{kind: kind, victims: perm[:1], gap: dur(2, 5)}
	switch kind {
	case kindKill, kindPause, kindDisconnect:
		// Some shorter than dead_after (no repair), some longer.
		f.hold = dur(3, 12)
	case kindPartition:
		f.hold = dur(5, 15)
		f.peers = perm[1:3]
		if n.rng.Intn(3) == 0 {
			f.peers = perm[1:]
		}
	case kindClock:
		f.hold = dur(10, 20)
		f.offset = time.Hour
		if n.rng.Intn(2) == 0 {
			f.offset = -time.Hour
		}
	case kindDiskFull:
		f.hold = dur(10, 20)
	case kindWipe:
	case kindTwoDown:
		f.victims = perm[:2]
		f.hold = dur(6, 12)
	}
	return f
}

// Run injects faults until the phase is over (d after it starts); the
// fault under way when the time is up is finished.
func (n *Nemesis) Run(d time.Duration) {
	deadline := time.Now().Add(d)
	order := slices.Clone(n.kinds)
	n.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for seq := 0; time.Now().Before(deadline); seq++ {
		f := n.plan(seq, order)
		ev := n.execute(seq+1, f)
		n.logf("fault %d %s: %s; healed after %s; %s%s", ev.Seq, ev.Kind, ev.Desc, fmtDur(ev.Healed-ev.Start),
			recoveryText(ev), notesText(ev))
		if time.Now().Add(f.gap).After(deadline) {
			break
		}
		time.Sleep(f.gap)
	}
}

func recoveryText(ev *faultEvent) string {
	if ev.Recovery != "" {
		return "NOT recovered within " + recoverTimeout.String() + ": " + ev.Recovery
	}
	return "recovered " + fmtDur(ev.Recovered-ev.Healed) + " after the heal"
}

func notesText(ev *faultEvent) string {
	if len(ev.Notes) == 0 {
		return ""
	}
	return "; " + strings.Join(ev.Notes, "; ")
}

// execute runs one fault: inject, hold, heal, wait for recovery.
func (n *Nemesis) execute(seq int, f plannedFault) *faultEvent {
	c := n.c
	ev := &faultEvent{Seq: seq, Kind: f.kind}
	var victims []*Container
	for _, i := range f.victims {
		victims = append(victims, c.Nodes[i])
		ev.Victims = append(ev.Victims, c.Nodes[i].Host)
		ev.VictimIPs = append(ev.VictimIPs, c.Nodes[i].IP)
	}
	v := victims[0]
	n.mu.Lock()
	n.events = append(n.events, ev)
	n.mu.Unlock()
	fail := func(what string, err error) {
		if err != nil {
			ev.note("%s failed: %v", what, err)
		}
	}
	hold := func() {
		ev.Injected = n.hist.since()
		time.Sleep(f.hold)
		ev.HealStart = n.hist.since()
	}
	ev.Start = n.hist.since()
	switch f.kind {
	case kindKill:
		ev.Desc = fmt.Sprintf("%s (n%d) killed for %s", v.Host, c.ID(v), f.hold)
		fail("kill", c.Kill(v))
		hold()
		fail("start", c.Start(v))
	case kindPause:
		ev.Desc = fmt.Sprintf("%s (n%d) paused for %s", v.Host, c.ID(v), f.hold)
		fail("pause", c.Pause(v))
		hold()
		fail("unpause", c.Unpause(v))
	case kindDisconnect:
		ev.Desc = fmt.Sprintf("%s (n%d) disconnected for %s", v.Host, c.ID(v), f.hold)
		fail("disconnect", c.Disconnect(v))
		hold()
		fail("connect", c.Connect(v))
	case kindPartition:
		var peers []*Container
		var names []string
		for _, i := range f.peers {
			peers = append(peers, c.Nodes[i])
			names = append(names, c.Nodes[i].Host)
		}
		ev.Desc = fmt.Sprintf("%s (n%d) cut from %s (not from etcd or clients) for %s", v.Host, c.ID(v), strings.Join(names, ","), f.hold)
		fail("cut", c.Cut(v, peers))
		hold()
		fail("uncut", c.Uncut(v, peers))
	case kindClock:
		ev.Desc = fmt.Sprintf("%s (n%d) clock %+v for %s", v.Host, c.ID(v), f.offset, f.hold)
		fail("set clock", c.SetClock(v, f.offset))
		n.probeClock(ev, v, seq*100, f.offset)
		hold()
		fail("reset clock", c.SetClock(v, 0))
		n.probeClock(ev, v, seq*100+50, 0)
	case kindDiskFull:
		ev.Desc = fmt.Sprintf("%s (n%d) data directory full for %s", v.Host, c.ID(v), f.hold)
		filled, err := c.Fill(v)
		fail("fill", err)
		ev.note("filled with %d MiB", filled>>20)
		ev.Injected = n.hist.since()
		start := time.Now()
		n.moveOnto(ev, v, f.hold)
		n.watchExit(ev, v, f.hold-time.Since(start))
		ev.HealStart = n.hist.since()
		fail("unfill", c.Unfill(v))
		if running, _, err := c.state(v); err == nil && !running {
			fail("start after disk full", c.Start(v))
			ev.note("restarted %s", v.Host)
		}
	case kindWipe:
		old, err := c.Wipe(v)
		ev.Injected, ev.HealStart = n.hist.since(), n.hist.since()
		ev.Desc = fmt.Sprintf("%s (n%d) killed, data directory wiped, started empty", v.Host, old)
		fail("wipe", err)
		var now uint64
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
			if c.refreshIDs() == nil && c.ID(v) != old {
				now = c.ID(v)
				break
			}
		}
		if now == 0 {
			ev.note("%s did not come back as a new node within 1m", v.Host)
		} else {
			ev.note("%s came back as n%d", v.Host, now)
		}
	case kindTwoDown:
		ev.Desc = fmt.Sprintf("%s (n%d) and %s (n%d) killed for %s", v.Host, c.ID(v), victims[1].Host, c.ID(victims[1]), f.hold)
		ev.noQuorum = n.noQuorum(victims)
		fail("kill", c.Kill(victims[0]))
		fail("kill", c.Kill(victims[1]))
		hold()
		fail("start", c.Start(victims[0]))
		fail("start", c.Start(victims[1]))
	}
	ev.Healed = n.hist.since()
	for _, x := range victims {
		c.restore(x)
	}
	n.waitRecovered(ev)
	return ev
}

// waitRecovered polls until every node is up and the ring healthy, or
// recoverTimeout passes.
func (n *Nemesis) waitRecovered(ev *faultEvent) {
	deadline := time.Now().Add(recoverTimeout)
	for {
		ok, why := n.c.Recovered()
		if ok {
			ev.Recovered = n.hist.since()
			return
		}
		if time.Now().After(deadline) {
			ev.Recovery = why
			ev.Recovered = n.hist.since()
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// probeClock checks that the clock hook took: a row written through the
// victim alone gets a writetime off by the offset (within 30s). key is
// fresh per probe: a row written an hour back would hide behind an
// earlier one.
func (n *Nemesis) probeClock(ev *faultEvent, v *Container, key int, offset time.Duration) {
	s, err := n.c.NodeSession(v)
	if err != nil {
		ev.note("clock probe: session on %s: %v", v.Host, err)
		return
	}
	defer s.Close()
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); key++ {
		before := time.Now()
		if err := s.Query("INSERT INTO "+clockTable+" (k, v) VALUES (?, 0)", key).Exec(); err != nil {
			last = err.Error()
			time.Sleep(time.Second)
			continue
		}
		var wt int64
		if err := s.Query("SELECT writetime(v) FROM "+clockTable+" WHERE k = ?", key).Scan(&wt); err != nil {
			last = err.Error()
			time.Sleep(time.Second)
			continue
		}
		off := time.UnixMicro(wt).Sub(before)
		if off > offset-30*time.Second && off < offset+30*time.Second {
			ev.note("clock probe: %s stamps writes %s off", v.Host, off.Round(time.Second))
			return
		}
		last = fmt.Sprintf("writetime %s off", off.Round(time.Second))
		time.Sleep(time.Second)
	}
	ev.note("clock probe: %s never stamped writes %s off: %s", v.Host, offset, last)
}

// moveOnto asks for a replica to be moved onto a node whose disk is full,
// so the full disk meets a snapshot to write (the node's own WAL is
// preallocated and may absorb the fault's few seconds of writes).
func (n *Nemesis) moveOnto(ev *faultEvent, v *Container, wait time.Duration) {
	parts, err := n.c.Ring()
	if err != nil {
		ev.note("move onto the full disk: ring: %v", err)
		return
	}
	id := n.c.ID(v)
	for _, p := range parts {
		if p.Table != registerTable && p.Table != listTable && p.Table != counterTable {
			continue
		}
		holds := false
		for _, r := range p.Replicas {
			holds = holds || r.NodeID == id
		}
		if holds || len(p.Replicas) == 0 {
			continue
		}
		from := p.Replicas[len(p.Replicas)-1].NodeID
		start := time.Now()
		_, err := n.c.ctl().Run("move", "--partition", fmt.Sprint(p.ID), "--from", fmt.Sprint(from), "--to", fmt.Sprint(id),
			"--wait", "--wait-timeout", max(wait, time.Second).Round(time.Second).String())
		res := "done"
		if err != nil {
			res = err.Error()
		}
		ev.note("move of P%d n%d -> n%d onto the full disk: %s after %s", p.ID, from, id, res, time.Since(start).Round(100*time.Millisecond))
		return
	}
	ev.note("move onto the full disk: n%d holds a replica of every partition", id)
}

// watchExit holds a disk-full fault for d, noting when the node exits.
func (n *Nemesis) watchExit(ev *faultEvent, v *Container, d time.Duration) {
	start := time.Now()
	for time.Since(start) < d {
		running, how, err := n.c.state(v)
		if err == nil && !running {
			ev.note("cosmosd exited %s into the fault (%s): %s", time.Since(start).Round(100*time.Millisecond), how, lastWords(n.c.logTail(v, 300)))
			time.Sleep(d - time.Since(start))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// lastWords picks what a process said before it died: its panic or fatal
// error line, else its last error, else its last line.
func lastWords(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for _, marks := range [][]string{{"panic:", "fatal error:"}, {"level=ERROR"}} {
		for i := len(lines) - 1; i >= 0; i-- {
			for _, m := range marks {
				if strings.Contains(lines[i], m) {
					return strings.TrimSpace(lines[i])
				}
			}
		}
	}
	return blackbox.Tail(lines[len(lines)-1], 1)
}

// noQuorum returns the token ranges, per table, of the partitions with
// replicas on at least two of the victims.
func (n *Nemesis) noQuorum(victims []*Container) map[string][][2]int64 {
	parts, err := n.c.Ring()
	if err != nil {
		return nil
	}
	ids := map[uint64]bool{}
	for _, v := range victims {
		ids[n.c.ID(v)] = true
	}
	out := map[string][][2]int64{}
	for _, p := range parts {
		hit := 0
		for _, r := range p.Replicas {
			if ids[r.NodeID] {
				hit++
			}
		}
		if hit >= 2 {
			out[p.Table] = append(out[p.Table], [2]int64{p.Start, p.End})
		}
	}
	return out
}

// keyToken is the Murmur3 token of an int partition key.
func keyToken(k int) int64 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(int32(k)))
	return ring.Token(b[:])
}

// tableOf returns the table an operation addresses.
func tableOf(o *op) string {
	switch o.Kind {
	case regRead, regInsert, regCAS:
		return registerTable
	case listAppend, listRead:
		return listTable
	}
	return counterTable
}

// inNoQuorum reports whether an operation addressed a partition that had
// lost its quorum in a two-down fault.
func (e *faultEvent) inNoQuorum(o *op) bool {
	tok := keyToken(o.Key)
	for _, r := range e.noQuorum[tableOf(o)] {
		if tok >= r[0] && tok <= r[1] {
			return true
		}
	}
	return false
}
