package raft

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
)

// dropRecorder is the transport's handler in TestSendQueueBoundedByBytes:
// it counts what the transport reports undelivered.
type dropRecorder struct {
	mu      sync.Mutex
	dropped int
}

func (d *dropRecorder) HandleMessages(consensus.NodeID, []*transportpb.RaftMessage) {}
func (d *dropRecorder) HandleSnapshot(context.Context, consensus.NodeID, func() (*transportpb.SnapshotChunk, error)) (bool, error) {
	return false, errors.New("no snapshots here")
}
func (d *dropRecorder) ReportUnreachable(_ consensus.NodeID, msgs []*transportpb.RaftMessage) {
	d.mu.Lock()
	d.dropped += len(msgs)
	d.mu.Unlock()
}

// TestSendQueueBoundedByBytes: while a peer cannot be reached, the
// messages queued for it stay within SendQueueBytes (the rest are dropped
// and reported unreachable, so raft probes again later) even when their
// count is far below SendQueueMessages; one message larger than the bound
// is still queued when the queue is empty.
func TestSendQueueBoundedByBytes(t *testing.T) {
	release := make(chan struct{})
	rec := &dropRecorder{}
	cfg := &Config{NodeID: 1, SendQueueMessages: 1 << 20, SendQueueBytes: 10_000, ReconnectBackoff: 1, MaxReconnectBackoff: 1,
		Resolver: func(consensus.NodeID) (string, error) {
			<-release // the peer's goroutine holds its first batch here
			return "", errors.New("unreachable")
		}}
	tr := newGRPCTransport(cfg, rec)
	defer func() { close(release); _ = tr.Close() }()
	msg := func(size int) *transportpb.RaftMessage {
		return &transportpb.RaftMessage{Group: 1, FromReplica: 1, ToReplica: 2, Message: make([]byte, size)}
	}
	tr.Send(2, []*transportpb.RaftMessage{msg(1)})
	// Wait until the peer goroutine took the first batch and blocks.
	p := tr.peer(2)
	for {
		p.mu.Lock()
		empty := len(p.mu.queue) == 0
		p.mu.Unlock()
		if empty {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for range 100 {
		tr.Send(2, []*transportpb.RaftMessage{msg(1000)})
	}
	p.mu.Lock()
	queued, bytes := len(p.mu.queue), p.mu.queueBytes
	p.mu.Unlock()
	if bytes > cfg.SendQueueBytes || queued != 10 {
		t.Fatalf("queued %d messages of %d bytes, want 10 within %d bytes", queued, bytes, cfg.SendQueueBytes)
	}
	rec.mu.Lock()
	dropped := rec.dropped
	rec.mu.Unlock()
	if dropped != 90 {
		t.Fatalf("%d messages reported unreachable, want 90", dropped)
	}
	// Drain, then one oversized message alone is accepted.
	p.mu.Lock()
	p.mu.queue, p.mu.queueBytes = nil, 0
	p.mu.Unlock()
	tr.Send(2, []*transportpb.RaftMessage{msg(50_000)})
	p.mu.Lock()
	queued = len(p.mu.queue)
	p.mu.Unlock()
	if queued != 1 {
		t.Fatalf("an oversized message was not queued alone (%d queued)", queued)
	}
}
