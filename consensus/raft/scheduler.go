package raft

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
	"github.com/cosmosd/cosmosd/storage"
)

// scheduler drives every group of the engine in cycles. A group enters the
// queue when something arrives for it (a message, a request, a tick, a
// snapshot report, a response of a durable write) or when raft has more to
// do after a cycle; an idle group costs nothing. One cycle:
//
//  1. prepare, in parallel on up to Config.Workers goroutines: each queued
//     group steps its inbox into raft, takes a Ready, and builds its batches
//     (raft log + hard state; state machine writes + apply state);
//  2. send the Readys' network messages, one batch per peer node;
//  3. commit, on the scheduler goroutine: every raft batch, then every apply
//     batch, as one Pebble batch (one WAL write, atomic), requesting a WAL
//     sync without waiting for it when anything waits for durability;
//  4. finish: update the groups' log views, answer the requests whose
//     entries were applied, and hand what waits for durability to the
//     syncer (handOff).
//
// Nothing in a cycle waits for the disk, so a cycle is short and the next
// one starts while the syncer waits; work that arrives meanwhile queues up
// for the next cycle, so batches grow with load. See doc.go, "Durability".
type scheduler struct {
	e    *Engine
	wake chan struct{}
	done chan struct{}
	// cycleStart is when the running cycle began (UnixNano), 0 while
	// idle: a cycle that never ends (a write stuck on a dying disk) shows
	// in Engine.Healthy.
	cycleStart atomic.Int64
	// cycles and cycleNanos count the cycles run and their time
	// (Engine.Stats).
	cycles, cycleNanos atomic.Int64

	mu struct {
		sync.Mutex
		queue  []*group
		closed bool
		// failed is a sync error the syncer reported, not yet handled.
		failed error
	}
}

// poke wakes the goroutine that waits on ch (a channel of capacity one)
// without blocking: a wake-up already pending covers this one.
func poke(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func newScheduler(e *Engine) *scheduler {
	return &scheduler{e: e, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// enqueue adds g to the next cycle. Callers guarantee (through
// group.mu.queued) that a group is queued at most once.
func (s *scheduler) enqueue(g *group) {
	s.mu.Lock()
	s.mu.queue = append(s.mu.queue, g)
	s.mu.Unlock()
	poke(s.wake)
}

// close makes run return once the queue is empty.
func (s *scheduler) close() {
	s.mu.Lock()
	s.mu.closed = true
	s.mu.Unlock()
	poke(s.wake)
	<-s.done
}

func (s *scheduler) run() {
	defer close(s.done)
	// Two queue buffers alternate: one collects the next cycle while the
	// other is processed.
	var spare []*group
	for {
		s.mu.Lock()
		q := s.mu.queue
		closed := s.mu.closed
		if len(q) > 0 {
			s.mu.queue, spare = spare[:0], nil
		}
		failed := s.mu.failed
		s.mu.failed = nil
		s.mu.Unlock()
		if failed != nil {
			s.e.failAll(failed)
		}
		if len(q) == 0 {
			if closed {
				return
			}
			<-s.wake
			continue
		}
		start := time.Now()
		s.cycleStart.Store(start.UnixNano())
		s.cycle(q)
		s.cycleStart.Store(0)
		s.cycles.Add(1)
		s.cycleNanos.Add(int64(time.Since(start)))
		clear(q)
		spare = q
	}
}

func (s *scheduler) cycle(q []*group) {
	works := make([]*groupWork, len(q))
	s.parallel(len(q), func(i int) { works[i] = q[i].prepare() })

	s.send(works, func(w *groupWork) []outMsg { return w.early })

	ps, err := s.commit(works)
	for _, w := range works {
		if w == nil {
			continue
		}
		w.g.finish(w, err)
	}
	if err == nil {
		s.handOff(works, ps)
	}
	var fatal *storage.FatalError
	if errors.As(err, &fatal) {
		// The store cannot write any more: every group stops now (their
		// state is ours to touch: prepares are done), not only this
		// cycle's, and the engine reports itself unhealthy. What they
		// applied in memory may not be durable; a restart recovers from
		// what is.
		s.e.failAll(err)
	}
}

// commit writes the cycle's batches as one: every raft batch, then every
// apply batch, so that on disk the applied index never passes the log and
// commit index (Pebble's WAL is ordered and a batch is atomic). When
// anything waits for durability (responses, post-apply work) it requests a
// WAL sync without waiting for it; the syncer waits (handOff).
func (s *scheduler) commit(works []*groupWork) (*storage.PendingSync, error) {
	cb := s.e.cfg.Storage.NewWriteBatch()
	needSync := false
	var err error
	add := func(b *storage.Batch) {
		if b != nil && err == nil {
			err = cb.Append(b)
		}
	}
	for _, w := range works {
		if w != nil {
			add(w.raftBatch)
		}
	}
	for _, w := range works {
		if w == nil {
			continue
		}
		add(w.applyBatch)
		if w.needSync {
			needSync = true
		}
	}
	for _, w := range works {
		if w != nil {
			if w.raftBatch != nil {
				_ = w.raftBatch.Close()
			}
			if w.applyBatch != nil {
				_ = w.applyBatch.Close()
			}
			w.raftBatch, w.applyBatch = nil, nil
		}
	}
	if err != nil {
		_ = cb.Close()
		return nil, err
	}
	if needSync {
		return cb.CommitNoSyncWait()
	}
	defer cb.Close()
	if cb.Empty() {
		return nil, nil
	}
	return nil, cb.Commit(false)
}

// handOff gives the syncer what the cycle's responses and post-apply work
// wait for, with the sync commit requested.
func (s *scheduler) handOff(works []*groupWork, ps *storage.PendingSync) {
	if ps == nil {
		return
	}
	it := &syncItem{ps: ps, requested: time.Now().UnixNano()}
	for _, w := range works {
		if w != nil && w.needSync {
			it.waiters = append(it.waiters, syncWaiter{g: w.g, gen: w.gen, local: w.syncLocal, remote: w.syncRemote, postApply: w.postApply})
		}
	}
	// Waited for even without waiters: a later sync's waiters are released
	// in order after it.
	s.e.syncer.add(it)
}

// fail stops every group from the scheduler goroutine after the syncer
// saw a sync fail.
func (s *scheduler) fail(err error) {
	s.mu.Lock()
	s.mu.failed = err
	s.mu.Unlock()
	poke(s.wake)
}

// send hands the messages pick selects to the transport, one batch per
// peer node.
func (s *scheduler) send(works []*groupWork, pick func(*groupWork) []outMsg) {
	var out map[consensus.NodeID][]*transportpb.RaftMessage
	for _, w := range works {
		if w == nil {
			continue
		}
		for _, m := range pick(w) {
			if out == nil {
				out = map[consensus.NodeID][]*transportpb.RaftMessage{}
			}
			out[m.node] = append(out[m.node], m.m)
		}
	}
	for node, msgs := range out {
		s.e.transport.Send(node, msgs)
	}
}

// parallel runs f(0..n-1) on up to Config.Workers goroutines, the calling
// one included.
func (s *scheduler) parallel(n int, f func(int)) {
	workers := min(s.e.cfg.Workers, n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			f(i)
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
}

// stalled reports a cycle that has run longer than limit.
func (s *scheduler) stalled(limit time.Duration) error {
	if d, ok := overdue(&s.cycleStart, limit); ok {
		return fmt.Errorf("raft: a scheduling cycle has run for %s (a write or sync that does not return: is the disk failing?)", d.Round(time.Second))
	}
	return nil
}

// overdue reports how long the operation that began at *start (UnixNano;
// 0 while none runs) has been running, when that is longer than limit.
func overdue(start *atomic.Int64, limit time.Duration) (time.Duration, bool) {
	t := start.Load()
	if t == 0 {
		return 0, false
	}
	d := time.Since(time.Unix(0, t))
	return d, d > limit
}
