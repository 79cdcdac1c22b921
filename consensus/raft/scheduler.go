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
// snapshot report) or when raft has more to do after a cycle; an idle group
// costs nothing. One cycle:
//
//  1. prepare, in parallel on up to Config.Workers goroutines: each queued
//     group steps its inbox into raft, takes a Ready, and builds its batches
//     (raft log + hard state; state machine writes + apply state);
//  2. commit, on the scheduler goroutine: every raft batch, then every apply
//     batch, the last one with sync, so one fsync covers all groups of the
//     cycle (group commit; Pebble's WAL is ordered, so syncing the last
//     write makes the earlier ones durable too);
//  3. finish, on the scheduler goroutine: advance raft, answer requests,
//     then send the messages that had to wait, one batch per peer node.
//
// Messages that acknowledge local state (append and vote responses) leave
// only after that state is durable; the others, notably the leader's
// appends, leave between phases 1 and 2, so followers persist in parallel
// with the leader (see mustFollowPersist). While a cycle commits, new work
// queues up for the next one, so batches grow with load.
type scheduler struct {
	e    *Engine
	wake chan struct{}
	done chan struct{}
	// cycleStart is when the running cycle began (UnixNano), 0 while
	// idle: a cycle that never ends (an fsync stuck on a dying disk)
	// shows in Engine.Healthy.
	cycleStart atomic.Int64

	mu struct {
		sync.Mutex
		queue  []*group
		closed bool
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
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// close makes run return once the queue is empty.
func (s *scheduler) close() {
	s.mu.Lock()
	s.mu.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
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
		s.mu.Unlock()
		if len(q) == 0 {
			if closed {
				return
			}
			<-s.wake
			continue
		}
		s.cycleStart.Store(time.Now().UnixNano())
		s.cycle(q)
		s.cycleStart.Store(0)
		clear(q)
		spare = q
	}
}

func (s *scheduler) cycle(q []*group) {
	works := make([]*groupWork, len(q))
	s.parallel(len(q), func(i int) { works[i] = q[i].prepare() })

	s.send(works, func(w *groupWork) []outMsg { return w.early })

	var batches []*storage.Batch
	needSync := false
	for _, w := range works {
		if w == nil {
			continue
		}
		needSync = needSync || w.needSync
		if w.raftBatch != nil {
			batches = append(batches, w.raftBatch)
		}
	}
	for _, w := range works {
		if w != nil && w.applyBatch != nil {
			batches = append(batches, w.applyBatch)
		}
	}
	err := commitAll(batches, needSync)
	var fatal *storage.FatalError
	if errors.As(err, &fatal) {
		// The store cannot write any more: every group stops now (their
		// state is ours to touch: prepares are done), not only this
		// cycle's, and the engine reports itself unhealthy. What they
		// applied in memory may not be durable; a restart recovers from
		// what is.
		s.e.failAll(err)
	}
	for _, b := range batches {
		_ = b.Close()
	}

	for _, w := range works {
		if w == nil {
			continue
		}
		w.raftBatch, w.applyBatch = nil, nil
		w.g.finish(w, err)
		if err != nil {
			w.out = nil
		}
	}
	s.send(works, func(w *groupWork) []outMsg { return w.out })
}

// commitAll commits batches in order, the last with sync when needSync.
func commitAll(batches []*storage.Batch, needSync bool) (err error) {
	for i, b := range batches {
		if err = b.Commit(needSync && i == len(batches)-1); err != nil {
			return err
		}
	}
	return nil
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
	start := s.cycleStart.Load()
	if start == 0 {
		return nil
	}
	if d := time.Since(time.Unix(0, start)); d > limit {
		return fmt.Errorf("raft: a scheduling cycle has run for %s (a write or sync that does not return: is the disk failing?)", d.Round(time.Second))
	}
	return nil
}
