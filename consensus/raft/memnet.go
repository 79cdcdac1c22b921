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

// MemNetwork is the in-memory twin of the gRPC transport, for tests of the
// engine and of what runs on it: engines in one process exchange messages
// and snapshots through it, with fault controls: directional cuts
// (partitions), random drops, duplicates and delays (which also reorder).
// Randomness comes from a seeded source so a failing run can be repeated
// with the same faults (the engines' own timing still varies). Messages are
// delivered on the sender's goroutine (or a timer's, when delayed); a cut
// takes effect for every send after the call returns. Safe for concurrent
// use.
type MemNetwork struct {
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
		stats    MemNetStats
	}
	inflight sync.WaitGroup
}

// MemNetStats counts what a MemNetwork did with the messages sent through
// it.
type MemNetStats struct {
	Sent, Dropped, Duplicated, Delayed, Cut int
}

// NewMemNetwork returns a network whose random faults follow seed.
func NewMemNetwork(seed int64) *MemNetwork {
	n := &MemNetwork{}
	n.mu.rng = rand.New(rand.NewSource(seed))
	n.mu.handlers = map[consensus.NodeID]Handler{}
	n.mu.cut = map[[2]consensus.NodeID]bool{}
	n.mu.timers = map[*time.Timer]bool{}
	return n
}

// Transport returns the TestingKnobs.Transport hook of node.
func (n *MemNetwork) Transport(node consensus.NodeID) func(Handler) Transport {
	return func(h Handler) Transport {
		n.mu.Lock()
		n.mu.handlers[node] = h
		n.mu.Unlock()
		return &memTransport{net: n, node: node, h: h}
	}
}

// Faults sets the probability of dropping and of duplicating each message
// and the maximum random delay (0: none).
func (n *MemNetwork) Faults(drop, dup float64, delay time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.drop, n.mu.dup, n.mu.delay = drop, dup, delay
}

// Partition cuts the network into the given sides; nodes not listed are
// cut off from everyone.
func (n *MemNetwork) Partition(sides ...[]consensus.NodeID) {
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

// Isolate cuts node off from every other node.
func (n *MemNetwork) Isolate(node consensus.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for b := consensus.NodeID(1); b <= 16; b++ {
		if b != node {
			n.mu.cut[[2]consensus.NodeID{node, b}] = true
			n.mu.cut[[2]consensus.NodeID{b, node}] = true
		}
	}
}

// Rejoin removes the cuts that Isolate (or Partition) put around node.
func (n *MemNetwork) Rejoin(node consensus.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for b := consensus.NodeID(1); b <= 16; b++ {
		delete(n.mu.cut, [2]consensus.NodeID{node, b})
		delete(n.mu.cut, [2]consensus.NodeID{b, node})
	}
}

// Heal removes every cut.
func (n *MemNetwork) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.mu.cut)
}

// Stats returns the counts so far.
func (n *MemNetwork) Stats() MemNetStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.stats
}

// Close stops pending delayed deliveries and waits for running ones.
func (n *MemNetwork) Close() {
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
func (n *MemNetwork) reachableLocked(from, to consensus.NodeID) Handler {
	if n.mu.closed || n.mu.cut[[2]consensus.NodeID{from, to}] {
		return nil
	}
	return n.mu.handlers[to]
}

func (n *MemNetwork) send(from consensus.NodeID, self Handler, to consensus.NodeID, msgs []*transportpb.RaftMessage) {
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

func (n *MemNetwork) delayLocked(from, to consensus.NodeID, m *transportpb.RaftMessage, d time.Duration) {
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
	net  *MemNetwork
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
