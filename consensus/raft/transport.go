package raft

import (
	"context"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
)

// Transport carries raft traffic between nodes. The engine owns exactly one
// and uses it from its scheduler and snapshot goroutines. The production
// implementation is gRPC (grpc.go); tests inject an in-memory network with
// fault controls through TestingKnobs.Transport.
type Transport interface {
	// Send queues msgs (all addressed to replicas on node to) and returns
	// without blocking. Delivery is best effort: messages may be dropped,
	// and the transport reports messages it knows were not delivered with
	// Handler.ReportUnreachable so raft probes the follower again. The
	// transport takes ownership of msgs.
	Send(to consensus.NodeID, msgs []*transportpb.RaftMessage)

	// SendSnapshot streams one snapshot to node to. next returns the chunks
	// in order (the first carries the header) and io.EOF after the last. It
	// returns once the receiver has installed (applied=true) or ignored
	// (applied=false) the snapshot, or with an error.
	SendSnapshot(ctx context.Context, to consensus.NodeID, next func() (*transportpb.SnapshotChunk, error)) (applied bool, err error)

	// Close stops every goroutine of the transport. Safe to call twice.
	Close() error
}

// Handler receives inbound traffic; the engine implements it. Its methods
// are safe for concurrent use and do not block on raft processing except
// HandleSnapshot, which returns after the snapshot is installed.
type Handler interface {
	// HandleMessages delivers messages sent by node from. The handler does
	// not retain msgs' slice but may retain the messages.
	HandleMessages(from consensus.NodeID, msgs []*transportpb.RaftMessage)
	// HandleSnapshot receives one snapshot stream sent by node from; next
	// returns its chunks and io.EOF at the end.
	HandleSnapshot(ctx context.Context, from consensus.NodeID, next func() (*transportpb.SnapshotChunk, error)) (applied bool, err error)
	// ReportUnreachable tells raft that msgs, addressed to node to, were
	// not delivered.
	ReportUnreachable(to consensus.NodeID, msgs []*transportpb.RaftMessage)
}
