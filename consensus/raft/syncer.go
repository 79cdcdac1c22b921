package raft

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
	"github.com/cosmosd/cosmosd/storage"
)

// syncer makes the engine's writes durable off the scheduler's path. The
// scheduler commits every batch of a cycle without waiting for the disk,
// asks the store for a WAL sync (storage.Batch.CommitNoSyncWait) and hands the
// syncer what must wait for that sync: the raft messages that attest
// durable state (doc.go, "Durability") and a state machine's post-apply
// work. The syncer waits for each sync in cycle order and then releases
// them: messages for peers go to the transport, messages for the local
// replica (raft's MsgStorageAppendResp and a leader's own acknowledgement)
// go back into the group's inbox, post-apply work is flagged there.
//
// Meanwhile the scheduler runs the next cycles: a group proposes, appends,
// replicates and applies while its earlier appends are being synced (raft's
// AsyncStorageWrites), and the fsyncs of many cycles and groups are shared.
type syncer struct {
	e    *Engine
	wake chan struct{}
	done chan struct{}
	// waitStart is when the sync being waited for was requested
	// (UnixNano), 0 while idle: a sync that never ends (a dying disk)
	// shows in Engine.Healthy.
	waitStart atomic.Int64
	// syncs and syncNanos count the syncs waited for and their time from
	// request to completion (Engine.Stats).
	syncs, syncNanos atomic.Int64

	mu struct {
		sync.Mutex
		queue  []*syncItem
		closed bool
	}
}

// syncItem is one cycle's sync and what waits for it.
type syncItem struct {
	ps        *storage.PendingSync
	requested int64 // UnixNano
	waiters   []syncWaiter
}

// syncWaiter is what one group's cycle left waiting for the sync.
type syncWaiter struct {
	g *group
	// gen is the group's RawNode generation (group.resets) when the
	// messages were produced: responses of a RawNode that was rebuilt
	// since are dropped (see group.deliverLocal).
	gen    int
	local  []*pb.Message
	remote []outMsg
	// postApply is the group's applySeq whose post-apply work waits, 0
	// for none.
	postApply uint64
}

func newSyncer(e *Engine) *syncer {
	return &syncer{e: e, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// add queues a cycle's sync.
func (s *syncer) add(it *syncItem) {
	s.mu.Lock()
	s.mu.queue = append(s.mu.queue, it)
	s.mu.Unlock()
	poke(s.wake)
}

// close makes run return once every queued sync is done.
func (s *syncer) close() {
	s.mu.Lock()
	s.mu.closed = true
	s.mu.Unlock()
	poke(s.wake)
	<-s.done
}

func (s *syncer) run() {
	defer close(s.done)
	failed := false
	for {
		s.mu.Lock()
		q := s.mu.queue
		s.mu.queue = nil
		closed := s.mu.closed
		s.mu.Unlock()
		if len(q) == 0 {
			if closed {
				return
			}
			<-s.wake
			continue
		}
		var out map[consensus.NodeID][]*transportpb.RaftMessage
		for _, it := range q {
			if failed {
				continue
			}
			s.waitStart.Store(it.requested)
			err := it.ps.Wait()
			s.waitStart.Store(0)
			s.syncs.Add(1)
			s.syncNanos.Add(time.Now().UnixNano() - it.requested)
			if err != nil {
				// Nothing of this sync or later ones may be released:
				// the writes may not be durable. The scheduler stops
				// every group (their pending commands fail as
				// ambiguous) and the engine reports itself unhealthy.
				failed = true
				s.e.sched.fail(err)
				continue
			}
			for _, w := range it.waiters {
				for _, m := range w.remote {
					if out == nil {
						out = map[consensus.NodeID][]*transportpb.RaftMessage{}
					}
					out[m.node] = append(out[m.node], m.m)
				}
				if k := s.e.cfg.TestingKnobs; k != nil && k.BeforeLocalResponses != nil && len(w.local) > 0 {
					k.BeforeLocalResponses(w.g.id, w.local)
				}
				if len(w.local) > 0 || w.postApply != 0 {
					w.g.deliverLocal(w.gen, w.local, w.postApply)
				}
			}
		}
		for node, msgs := range out {
			s.e.transport.Send(node, msgs)
		}
	}
}

// stalled reports a sync that has been pending for longer than limit.
func (s *syncer) stalled(limit time.Duration) error {
	if d, ok := overdue(&s.waitStart, limit); ok {
		return fmt.Errorf("raft: a WAL sync has been pending for %s (is the disk failing?)", d.Round(time.Second))
	}
	return nil
}

// deliverLocal hands g the responses of its local storage writes (and the
// post-apply flag) once they are durable. prepare drops responses produced
// by a RawNode that has since been rebuilt (gen): the new one recovered
// from the store and does not expect them.
func (g *group) deliverLocal(gen int, msgs []*pb.Message, postApply uint64) {
	g.mu.Lock()
	if g.mu.stopped {
		g.mu.Unlock()
		return
	}
	for _, m := range msgs {
		g.mu.inbox.local = append(g.mu.inbox.local, localMsg{m: m, gen: gen})
	}
	g.mu.inbox.postApply = max(g.mu.inbox.postApply, postApply)
	wake := !g.mu.queued
	g.mu.queued = true
	g.mu.Unlock()
	if wake {
		g.e.sched.enqueue(g)
	}
}
