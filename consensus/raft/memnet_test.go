package raft

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
)

// memNet is an in-memory network between engines with fault controls:
// directional cuts (partitions), random drops, duplicates and delays (which
// also reorder). Randomness comes from a seeded source so a failing run can
// be repeated with the same faults (the engines' own timing still varies).
type memNet struct {
	mu struct {
		sync.Mutex
		rng      *rand.Rand
		handlers map[consensus.NodeID]Handler
		cut      map[[2]consensus.NodeID]bool
		drop     float64
		dup      float64
		delay    time.Duration
		timers   map[*time.Timer]bool
		closed   bool
		stats    netStats
	}
	inflight sync.WaitGroup
}

type netStats struct {
	Sent, Dropped, Duplicated, Delayed, Cut int
}

func newMemNet(seed int64) *memNet {
	n := &memNet{}
	n.mu.rng = rand.New(rand.NewSource(seed))
	n.mu.handlers = map[consensus.NodeID]Handler{}
	n.mu.cut = map[[2]consensus.NodeID]bool{}
	n.mu.timers = map[*time.Timer]bool{}
	return n
}

// transport returns the TestingKnobs.Transport hook of node.
func (n *memNet) transport(node consensus.NodeID) func(Handler) Transport {
	return func(h Handler) Transport {
		n.mu.Lock()
		n.mu.handlers[node] = h
		n.mu.Unlock()
		return &memTransport{net: n, node: node, h: h}
	}
}

// faults sets the probability of dropping and of duplicating each message
// and the maximum random delay (0: none).
func (n *memNet) faults(drop, dup float64, delay time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.drop, n.mu.dup, n.mu.delay = drop, dup, delay
}

// partition cuts the network into the given sides; nodes not listed are
// cut off from everyone.
func (n *memNet) partition(sides ...[]consensus.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	side := map[consensus.NodeID]int{}
	for i, s := range sides {
		for _, node := range s {
			side[node] = i + 1
		}
	}
	clear(n.mu.cut)
	for a := consensus.NodeID(1); a <= 16; a++ {
		for b := consensus.NodeID(1); b <= 16; b++ {
			if a != b && (side[a] == 0 || side[a] != side[b]) {
				n.mu.cut[[2]consensus.NodeID{a, b}] = true
			}
		}
	}
}

// isolate cuts node off from every other node.
func (n *memNet) isolate(node consensus.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for b := consensus.NodeID(1); b <= 16; b++ {
		if b != node {
			n.mu.cut[[2]consensus.NodeID{node, b}] = true
			n.mu.cut[[2]consensus.NodeID{b, node}] = true
		}
	}
}

func (n *memNet) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.mu.cut)
}

func (n *memNet) stats() netStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.stats
}

// close stops pending delayed deliveries and waits for running ones.
func (n *memNet) close() {
	n.mu.Lock()
	n.mu.closed = true
	for t := range n.mu.timers {
		if t.Stop() {
			n.inflight.Done()
		}
	}
	clear(n.mu.timers)
	n.mu.Unlock()
	n.inflight.Wait()
}

// reachable reports the handler of to if from can reach it.
func (n *memNet) reachableLocked(from, to consensus.NodeID) Handler {
	if n.mu.closed || n.mu.cut[[2]consensus.NodeID{from, to}] {
		return nil
	}
	return n.mu.handlers[to]
}

func (n *memNet) send(from consensus.NodeID, self Handler, to consensus.NodeID, msgs []*transportpb.RaftMessage) {
	n.mu.Lock()
	n.mu.stats.Sent += len(msgs)
	h := n.reachableLocked(from, to)
	if h == nil {
		n.mu.stats.Cut += len(msgs)
		n.mu.Unlock()
		self.ReportUnreachable(to, msgs)
		return
	}
	var now []*transportpb.RaftMessage
	for _, m := range msgs {
		copies := 1
		if n.mu.rng.Float64() < n.mu.drop {
			n.mu.stats.Dropped++
			continue
		}
		if n.mu.rng.Float64() < n.mu.dup {
			n.mu.stats.Duplicated++
			copies = 2
		}
		for range copies {
			if n.mu.delay > 0 && n.mu.rng.Intn(2) == 0 {
				n.mu.stats.Delayed++
				n.delayLocked(from, to, m, time.Duration(n.mu.rng.Int63n(int64(n.mu.delay))))
				continue
			}
			now = append(now, m)
		}
	}
	n.mu.Unlock()
	if len(now) > 0 {
		h.HandleMessages(from, now)
	}
}

func (n *memNet) delayLocked(from, to consensus.NodeID, m *transportpb.RaftMessage, d time.Duration) {
	n.inflight.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		defer n.inflight.Done()
		n.mu.Lock()
		delete(n.mu.timers, t)
		h := n.reachableLocked(from, to)
		n.mu.Unlock()
		if h != nil {
			h.HandleMessages(from, []*transportpb.RaftMessage{m})
		}
	})
	n.mu.timers[t] = true
}

type memTransport struct {
	net  *memNet
	node consensus.NodeID
	h    Handler
}

func (t *memTransport) Send(to consensus.NodeID, msgs []*transportpb.RaftMessage) {
	t.net.send(t.node, t.h, to, slices.Clone(msgs))
}

func (t *memTransport) SendSnapshot(ctx context.Context, to consensus.NodeID, next func() (*transportpb.SnapshotChunk, error)) (bool, error) {
	t.net.mu.Lock()
	h := t.net.reachableLocked(t.node, to)
	t.net.mu.Unlock()
	if h == nil {
		return false, errors.New("memnet: unreachable")
	}
	return h.HandleSnapshot(ctx, t.node, next)
}

func (t *memTransport) Close() error {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if t.net.mu.handlers[t.node] == t.h {
		delete(t.net.mu.handlers, t.node)
	}
	return nil
}
