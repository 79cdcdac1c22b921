package raft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
)

// maxBatchBytes bounds one MessageBatch on the wire, well below gRPC's
// default 4 MiB receive limit; a single larger message travels alone.
const maxBatchBytes = 2 << 20

// grpcTransport is the production Transport: one client stream per peer
// node carries the messages of all groups, fed by a per-peer queue and
// goroutine; snapshots use one stream each. A broken stream is reopened
// with exponential backoff; messages that could not be sent are reported
// unreachable so raft probes again.
type grpcTransport struct {
	cfg *Config
	h   Handler
	ctx context.Context
	// cancel stops every peer goroutine.
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		peers  map[consensus.NodeID]*peer
		closed bool
	}
}

func newGRPCTransport(cfg *Config, h Handler) *grpcTransport {
	t := &grpcTransport{cfg: cfg, h: h}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.mu.peers = map[consensus.NodeID]*peer{}
	return t
}

// peer is the connection to one node. Lock order: grpcTransport.mu, then
// peer.mu.
type peer struct {
	t      *grpcTransport
	node   consensus.NodeID
	signal chan struct{}

	mu struct {
		sync.Mutex
		queue      []*transportpb.RaftMessage
		queueBytes int // encoded bytes of queue
		conn       *grpc.ClientConn
	}
}

func (t *grpcTransport) peer(node consensus.NodeID) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.closed {
		return nil
	}
	p := t.mu.peers[node]
	if p == nil {
		p = &peer{t: t, node: node, signal: make(chan struct{}, 1)}
		t.mu.peers[node] = p
		t.wg.Go(p.run)
	}
	return p
}

// Send implements Transport.
func (t *grpcTransport) Send(to consensus.NodeID, msgs []*transportpb.RaftMessage) {
	p := t.peer(to)
	if p == nil {
		return
	}
	p.mu.Lock()
	room := t.cfg.SendQueueMessages - len(p.mu.queue)
	var dropped []*transportpb.RaftMessage
	n := 0
	for n < len(msgs) && n < room {
		size := len(msgs[n].GetMessage())
		if len(p.mu.queue) > 0 && p.mu.queueBytes+size > t.cfg.SendQueueBytes {
			break // one message always fits, however large
		}
		p.mu.queue = append(p.mu.queue, msgs[n])
		p.mu.queueBytes += size
		n++
	}
	dropped = msgs[n:]
	p.mu.Unlock()
	if len(dropped) > 0 {
		t.h.ReportUnreachable(to, dropped)
	}
	poke(p.signal)
}

// conn returns the peer's client connection, dialling it if needed.
func (p *peer) conn() (*grpc.ClientConn, error) {
	p.mu.Lock()
	if c := p.mu.conn; c != nil {
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	// Resolve and dial without p.mu: Send takes it from the scheduler,
	// which must never wait on a slow resolver.
	addr, err := p.t.cfg.Resolver(p.node)
	if err != nil {
		return nil, fmt.Errorf("resolve node %d: %w", p.node, err)
	}
	c, err := grpc.NewClient(addr, p.t.cfg.DialOptions...)
	if err != nil {
		return nil, fmt.Errorf("dial node %d at %s: %w", p.node, addr, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.conn != nil {
		// Another caller (a snapshot send) dialled meanwhile.
		_ = c.Close()
		return p.mu.conn, nil
	}
	p.mu.conn = c
	return c, nil
}

// resetConn drops the connection so that the next attempt resolves the
// node's address again (it may have moved).
func (p *peer) resetConn() {
	p.mu.Lock()
	c := p.mu.conn
	p.mu.conn = nil
	p.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

func (p *peer) take() []*transportpb.RaftMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.mu.queue
	p.mu.queue, p.mu.queueBytes = nil, 0
	return q
}

// run sends the peer's queue over one long-lived stream.
func (p *peer) run() {
	defer p.resetConn()
	ctx := p.t.ctx
	backoff := p.t.cfg.ReconnectBackoff
	var stream grpc.ClientStreamingClient[transportpb.MessageBatch, transportpb.MessagesResponse]
	var cancelStream context.CancelFunc
	closeStream := func() {
		if stream != nil {
			_ = stream.CloseSend()
			cancelStream()
			stream, cancelStream = nil, nil
		}
	}
	defer closeStream()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.signal:
		}
		msgs := p.take()
		for len(msgs) > 0 {
			if stream == nil {
				c, err := p.conn()
				if err == nil {
					sctx, cancel := context.WithCancel(ctx)
					stream, err = transportpb.NewRaftTransportClient(c).Messages(sctx)
					if err != nil {
						cancel()
						stream = nil
					} else {
						cancelStream = cancel
					}
				}
				if err != nil {
					p.t.h.ReportUnreachable(p.node, msgs)
					msgs = nil
					failures++
					if failures%8 == 0 {
						p.resetConn()
					}
					if !sleepCtx(ctx, backoff) {
						return
					}
					backoff = min(2*backoff, p.t.cfg.MaxReconnectBackoff)
					break
				}
			}
			n, size := 0, 0
			for n < len(msgs) && (n == 0 || size+proto.Size(msgs[n]) <= maxBatchBytes) {
				size += proto.Size(msgs[n])
				n++
			}
			batch := &transportpb.MessageBatch{FromNode: uint64(p.t.cfg.NodeID), ToNode: uint64(p.node), Messages: msgs[:n]}
			if err := stream.Send(batch); err != nil {
				p.t.cfg.Logger.Debug("raft stream broken", "node", uint64(p.node), "err", err)
				closeStream()
				p.t.h.ReportUnreachable(p.node, msgs)
				msgs = nil
				failures++
				if failures%8 == 0 {
					p.resetConn()
				}
				if !sleepCtx(ctx, backoff) {
					return
				}
				backoff = min(2*backoff, p.t.cfg.MaxReconnectBackoff)
				break
			}
			msgs = msgs[n:]
			failures, backoff = 0, p.t.cfg.ReconnectBackoff
		}
		// More may have queued while sending.
		p.mu.Lock()
		more := len(p.mu.queue) > 0
		p.mu.Unlock()
		if more {
			poke(p.signal)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// SendSnapshot implements Transport.
func (t *grpcTransport) SendSnapshot(ctx context.Context, to consensus.NodeID, next func() (*transportpb.SnapshotChunk, error)) (bool, error) {
	p := t.peer(to)
	if p == nil {
		return false, errors.New("raft: transport closed")
	}
	c, err := p.conn()
	if err != nil {
		return false, err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := transportpb.NewRaftTransportClient(c).Snapshot(sctx)
	if err != nil {
		return false, err
	}
	for {
		chunk, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return false, err
		}
		if err := stream.Send(chunk); err != nil {
			if errors.Is(err, io.EOF) {
				// The server ended the stream; its status is in CloseAndRecv.
				break
			}
			return false, err
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return false, err
	}
	return resp.GetApplied(), nil
}

// Close implements Transport.
func (t *grpcTransport) Close() error {
	t.mu.Lock()
	if t.mu.closed {
		t.mu.Unlock()
		return nil
	}
	t.mu.closed = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
	return nil
}

// grpcService serves the RaftTransport service for a Handler.
type grpcService struct {
	transportpb.UnimplementedRaftTransportServer
	h    Handler
	node consensus.NodeID
}

// Messages implements transportpb.RaftTransportServer.
func (s *grpcService) Messages(stream grpc.ClientStreamingServer[transportpb.MessageBatch, transportpb.MessagesResponse]) error {
	for {
		b, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&transportpb.MessagesResponse{})
		}
		if err != nil {
			return err
		}
		if b.GetToNode() != uint64(s.node) {
			return status.Errorf(codes.FailedPrecondition, "raft messages for node %d reached node %d", b.GetToNode(), s.node)
		}
		s.h.HandleMessages(consensus.NodeID(b.GetFromNode()), b.GetMessages())
	}
}

// Snapshot implements transportpb.RaftTransportServer.
func (s *grpcService) Snapshot(stream grpc.ClientStreamingServer[transportpb.SnapshotChunk, transportpb.SnapshotResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	from := consensus.NodeID(first.GetHeader().GetFromNode())
	next := func() (*transportpb.SnapshotChunk, error) {
		if first != nil {
			c := first
			first = nil
			return c, nil
		}
		return stream.Recv()
	}
	applied, err := s.h.HandleSnapshot(stream.Context(), from, next)
	if err != nil {
		if errors.Is(err, consensus.ErrGroupNotFound) {
			return status.Error(codes.NotFound, err.Error())
		}
		return status.Error(codes.Unavailable, err.Error())
	}
	return stream.SendAndClose(&transportpb.SnapshotResponse{Applied: applied})
}
