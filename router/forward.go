package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// Forwarding stream.
//
// Requests that land on a node that does not hold the partition's leader
// are forwarded to the node that does. A unary gRPC call per request costs
// a new HTTP/2 stream: headers both ways, trailers, flow-control updates, a
// server goroutine whose stack grows on every call; under load that was
// the largest single share of a node's CPU. Instead each router keeps one
// long-lived Forward stream per node it forwards to. Callers encode their
// request in their own goroutine and queue it; one sender goroutine per
// stream sends everything queued in one batch (one HTTP/2 frame, usually
// one write syscall, for all the requests that arrived while the previous
// batch was sent); one receiver goroutine hands each response to the caller
// waiting on its id. The server runs each request in its own goroutine
// (they block on raft) and batches the responses the same way.
//
// The outcome rules are the unary call's: a request that may have left
// this process (its batch was handed to the stream) and then lost its
// stream has an unknown outcome, reported as in flight; a request still
// queued when the stream broke was never sent and may go elsewhere. A
// caller whose context ends withdraws its request (the server cancels it
// if it is still running; a write already proposed may still commit, as
// with a unary call canceled mid-flight).
//
// Memory is bounded on both sides: the client's queue holds at most one
// request per waiting caller (callers are bounded by the CQL server's
// limits), and the server runs at most maxForwardInFlight requests per
// stream, after which it stops reading the stream and HTTP/2 flow control
// holds the client back (a request holds its slot until its response is
// sent, so a peer that stops reading cannot make responses pile up).

// maxForwardBatchBytes bounds one ForwardBatch, well below the peer
// server's receive limit; one larger request travels alone (the limit that
// applies to it is the one a unary call would meet).
const maxForwardBatchBytes = 1 << 20

// batchLen is how many of the n leading encoded messages (item i of size
// size(i)) one ForwardBatch takes: as many as fit in maxForwardBatchBytes,
// and at least one.
func batchLen(n int, size func(i int) int) int {
	total := 0
	for i := range n {
		total += size(i)
		if i > 0 && total > maxForwardBatchBytes {
			return i
		}
	}
	return n
}

// maxForwardInFlight bounds the requests one stream runs at once on the
// server.
const maxForwardInFlight = 4096

// errForwardUnsupported says the node does not serve Forward (a node of an
// older version during a rolling upgrade): the request was not run, and
// the caller uses a unary call instead.
var errForwardUnsupported = errors.New("router: node does not serve the Forward stream")

// forwarder multiplexes the requests this router forwards to one node.
type forwarder struct {
	client kvpb.InternalClient
	conn   *nodeConn
	ctx    context.Context // the router's: ends streams on Close

	mu          sync.Mutex
	cur         *fstream
	unsupported bool
	nextID      atomic.Uint64
}

// fstream is one open Forward stream.
type fstream struct {
	f      *forwarder
	stream kvpb.Internal_ForwardClient
	cancel context.CancelFunc
	signal chan struct{}
	// done is closed once the stream broke; err (set first, under mu)
	// says why.
	done chan struct{}
	once sync.Once

	// mu orders taking requests off the queue against the stream's end:
	// a request is either taken (and marked sent) before the stream
	// failed, or never sent at all.
	mu      sync.Mutex
	failed  bool
	err     error
	queue   []queued
	pending map[uint64]*fcall
}

// queued is one encoded request; c is nil for a cancellation.
type queued struct {
	raw []byte
	c   *fcall
}

// fcall is one caller waiting on a response.
type fcall struct {
	ch   chan *kvpb.ForwardResponse
	sent atomic.Bool
}

// open returns the current stream, opening one if there is none.
func (f *forwarder) open() (*fstream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unsupported {
		return nil, errForwardUnsupported
	}
	if f.cur != nil {
		return f.cur, nil
	}
	ctx, cancel := context.WithCancel(f.ctx)
	st, err := f.client.Forward(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	s := &fstream{f: f, stream: st, cancel: cancel, signal: make(chan struct{}, 1), done: make(chan struct{}),
		pending: map[uint64]*fcall{}}
	f.cur = s
	go s.send()
	go s.receive()
	return s, nil
}

// fail ends the stream once: every caller still waiting wakes with err.
func (s *fstream) fail(err error) {
	s.once.Do(func() {
		if status.Code(err) == codes.Unimplemented {
			s.f.mu.Lock()
			s.f.unsupported = true
			s.f.mu.Unlock()
			err = errForwardUnsupported
		}
		s.mu.Lock()
		s.failed, s.err = true, err
		s.mu.Unlock()
		s.f.mu.Lock()
		if s.f.cur == s {
			s.f.cur = nil
		}
		s.f.mu.Unlock()
		s.cancel()
		close(s.done)
	})
}

// send writes everything queued, in batches, until the stream breaks.
func (s *fstream) send() {
	for {
		select {
		case <-s.signal:
		case <-s.done:
			return
		}
		s.mu.Lock()
		if s.failed {
			s.mu.Unlock()
			return
		}
		q := s.queue
		s.queue = nil
		for _, e := range q {
			if e.c != nil {
				e.c.sent.Store(true)
			}
		}
		s.mu.Unlock()
		for len(q) > 0 {
			n := batchLen(len(q), func(i int) int { return len(q[i].raw) })
			b := &kvpb.ForwardBatch{Requests: make([][]byte, n)}
			for i := range n {
				b.Requests[i] = q[i].raw
			}
			q = q[n:]
			if err := s.stream.Send(b); err != nil {
				if errors.Is(err, io.EOF) {
					// The server ended the stream; Recv has its status.
					_, err = s.stream.Recv()
				}
				s.fail(fmt.Errorf("forward stream: send: %w", err))
				return
			}
		}
	}
}

// receive hands responses to their callers until the stream breaks.
func (s *fstream) receive() {
	for {
		b, err := s.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = status.Error(codes.Unavailable, "the node closed the forward stream")
			}
			s.fail(err)
			return
		}
		s.f.conn.heard()
		for _, raw := range b.GetResponses() {
			resp := &kvpb.ForwardResponse{}
			if err := proto.Unmarshal(raw, resp); err != nil {
				s.fail(status.Errorf(codes.Internal, "forward stream: bad response: %v", err))
				return
			}
			s.mu.Lock()
			c := s.pending[resp.GetId()]
			delete(s.pending, resp.GetId())
			s.mu.Unlock()
			if c != nil {
				c.ch <- resp // buffered: never blocks
			}
		}
	}
}

// enqueue queues an encoded request and wakes the sender.
func (s *fstream) enqueue(raw []byte, id uint64, c *fcall) bool {
	s.mu.Lock()
	if s.failed {
		s.mu.Unlock()
		return false
	}
	if c != nil {
		s.pending[id] = c
	}
	s.queue = append(s.queue, queued{raw: raw, c: c})
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
	return true
}

// call forwards req and waits for its response. sent reports whether the
// request may have reached the node (see the outcome rules above).
func (f *forwarder) call(ctx context.Context, req *kvpb.ForwardRequest) (resp *kvpb.ForwardResponse, sent bool, err error) {
	s, err := f.open()
	if err != nil {
		return nil, false, err
	}
	req.Id = f.nextID.Add(1)
	if dl, ok := ctx.Deadline(); ok {
		req.TimeoutMicros = max(time.Until(dl).Microseconds(), 1)
	}
	raw, err := proto.Marshal(req)
	if err != nil {
		return nil, false, status.Errorf(codes.Internal, "encode forwarded request: %v", err)
	}
	c := &fcall{ch: make(chan *kvpb.ForwardResponse, 1)}
	if !s.enqueue(raw, req.Id, c) {
		return nil, false, streamErr(s.failure())
	}
	select {
	case resp := <-c.ch:
		return resp, true, nil
	case <-ctx.Done():
		s.mu.Lock()
		_, waiting := s.pending[req.Id]
		delete(s.pending, req.Id)
		s.mu.Unlock()
		if !waiting {
			// The response arrived as the context ended: take it.
			return <-c.ch, true, nil
		}
		if !c.sent.Load() {
			// Still queued: take it back, so it is never sent.
			s.mu.Lock()
			sent := c.sent.Load()
			if !sent {
				for i, e := range s.queue {
					if e.c == c {
						s.queue = append(s.queue[:i], s.queue[i+1:]...)
						break
					}
				}
			}
			s.mu.Unlock()
			if !sent {
				return nil, false, status.FromContextError(ctx.Err()).Err()
			}
		}
		if cancel, err := proto.Marshal(&kvpb.ForwardRequest{Id: req.Id, Cancel: true}); err == nil {
			s.enqueue(cancel, 0, nil)
		}
		return nil, true, status.FromContextError(ctx.Err()).Err()
	case <-s.done:
		select {
		case resp := <-c.ch:
			return resp, true, nil
		default:
		}
		err := s.failure()
		if errors.Is(err, errForwardUnsupported) {
			// The node refused the stream itself: nothing ran.
			return nil, false, errForwardUnsupported
		}
		return nil, c.sent.Load(), streamErr(err)
	}
}

// failure is why the stream ended.
func (s *fstream) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// streamErr reports a broken stream as Unavailable, as a unary call on a
// broken connection would, keeping a status the stream already had.
func streamErr(err error) error {
	if errors.Is(err, errForwardUnsupported) {
		return err
	}
	if err == nil {
		return status.Error(codes.Unavailable, "forward stream ended")
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if s, ok := status.FromError(e); ok && s.Code() != codes.Unknown && s.Code() != codes.OK {
			return s.Err()
		}
	}
	return status.Errorf(codes.Unavailable, "%v", err)
}

// forwardWrite forwards a write on the stream, falling back to a unary
// call on a node that does not serve it.
func (c *nodeConn) forwardWrite(ctx context.Context, req *kvpb.WriteRequest) (*kvpb.WriteResponse, bool, error) {
	resp, sent, err := c.fwd.call(ctx, &kvpb.ForwardRequest{Request: &kvpb.ForwardRequest_Write{Write: req}})
	if errors.Is(err, errForwardUnsupported) {
		resp, err := c.kv.Write(ctx, req)
		if err == nil {
			c.heard()
		}
		return resp, true, err
	}
	if err != nil {
		return nil, sent, err
	}
	if f := resp.GetFailure(); f != "" {
		return nil, true, status.Error(codes.Internal, f)
	}
	if resp.GetWrite() == nil {
		return nil, true, status.Errorf(codes.Internal, "forwarded write %d: the response holds no write result", resp.GetId())
	}
	return resp.GetWrite(), true, nil
}

// forwardRead is forwardWrite's twin for reads.
func (c *nodeConn) forwardRead(ctx context.Context, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	resp, _, err := c.fwd.call(ctx, &kvpb.ForwardRequest{Request: &kvpb.ForwardRequest_Read{Read: req}})
	if errors.Is(err, errForwardUnsupported) {
		resp, err := c.kv.Read(ctx, req)
		if err == nil {
			c.heard()
		}
		return resp, err
	}
	if err != nil {
		return nil, err
	}
	if f := resp.GetFailure(); f != "" {
		return nil, status.Error(codes.Internal, f)
	}
	if resp.GetRead() == nil {
		return nil, status.Errorf(codes.Internal, "forwarded read %d: the response holds no read result", resp.GetId())
	}
	return resp.GetRead(), nil
}

// Forward implements kvpb.InternalServer: it runs the requests of one
// router's stream and streams the responses back in batches.
func (s *Server) Forward(stream kvpb.Internal_ForwardServer) error {
	return serveForward(stream, s.serveForwarded)
}

// serveForward runs each request of a Forward stream in its own goroutine
// with handle, which returns the encoded response, and sends the responses
// back in batches.
func serveForward(stream kvpb.Internal_ForwardServer, handle func(context.Context, *kvpb.ForwardRequest) []byte) error {
	ctx, cancelAll := context.WithCancel(stream.Context())
	// sem counts requests from their arrival until their response is
	// sent, so a peer that stops reading responses stops being served.
	sem := make(chan struct{}, maxForwardInFlight)
	out := &responseQueue{signal: make(chan struct{}, 1), sem: sem}
	sendErr := make(chan error, 1)
	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		sendErr <- out.run(ctx, stream)
	}()
	var (
		mu      sync.Mutex
		running = map[uint64]context.CancelFunc{}
		wg      sync.WaitGroup
	)
	// The stream may not be used once Forward returns: cancel what still
	// runs (a write already proposed may still commit, as when a unary
	// caller goes away) and wait for it and for the sender.
	defer func() {
		cancelAll()
		wg.Wait()
		<-senderDone
	}()
	for {
		b, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, raw := range b.GetRequests() {
			req := &kvpb.ForwardRequest{}
			if err := proto.Unmarshal(raw, req); err != nil {
				return status.Errorf(codes.InvalidArgument, "forward stream: bad request: %v", err)
			}
			if req.GetCancel() {
				mu.Lock()
				if cancel := running[req.GetId()]; cancel != nil {
					cancel()
				}
				mu.Unlock()
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return nil
			case err := <-sendErr:
				return err
			}
			rctx, cancel := context.WithCancel(ctx)
			if t := req.GetTimeoutMicros(); t > 0 {
				rctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Microsecond)
			}
			id := req.GetId()
			mu.Lock()
			running[id] = cancel
			mu.Unlock()
			wg.Go(func() {
				resp := handle(rctx, req)
				mu.Lock()
				delete(running, id)
				mu.Unlock()
				cancel()
				out.push(resp)
			})
		}
	}
}

// serveForwarded runs one forwarded request; a panic becomes the
// request's failure instead of taking the node down.
func (s *Server) serveForwarded(ctx context.Context, req *kvpb.ForwardRequest) (raw []byte) {
	resp := &kvpb.ForwardResponse{Id: req.GetId()}
	defer func() {
		if p := recover(); p != nil {
			resp = &kvpb.ForwardResponse{Id: req.GetId(), Failure: fmt.Sprintf("forwarded request panicked: %v", p)}
			raw, _ = proto.Marshal(resp)
		}
	}()
	switch r := req.GetRequest().(type) {
	case *kvpb.ForwardRequest_Write:
		w, _ := s.Write(ctx, r.Write) // errors travel in the response
		resp.Response = &kvpb.ForwardResponse_Write{Write: w}
	case *kvpb.ForwardRequest_Read:
		rd, _ := s.Read(ctx, r.Read)
		resp.Response = &kvpb.ForwardResponse_Read{Read: rd}
	default:
		resp.Failure = fmt.Sprintf("forwarded request %d holds no read or write", req.GetId())
	}
	raw, err := proto.Marshal(resp)
	if err != nil {
		raw, _ = proto.Marshal(&kvpb.ForwardResponse{Id: req.GetId(), Failure: fmt.Sprintf("encode response: %v", err)})
	}
	return raw
}

// responseQueue batches a stream's encoded responses for its one sender,
// which frees a slot of sem for each response sent.
type responseQueue struct {
	signal chan struct{}
	sem    chan struct{}
	mu     sync.Mutex
	queue  [][]byte
}

func (q *responseQueue) push(raw []byte) {
	q.mu.Lock()
	q.queue = append(q.queue, raw)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// run sends queued responses until ctx ends or a send fails.
func (q *responseQueue) run(ctx context.Context, stream kvpb.Internal_ForwardServer) error {
	for {
		select {
		case <-q.signal:
		case <-ctx.Done():
			return nil
		}
		q.mu.Lock()
		pending := q.queue
		q.queue = nil
		q.mu.Unlock()
		for len(pending) > 0 {
			n := batchLen(len(pending), func(i int) int { return len(pending[i]) })
			b := &kvpb.ForwardBatch{Responses: pending[:n:n]}
			pending = pending[n:]
			if err := stream.Send(b); err != nil {
				return err
			}
			for range b.Responses {
				<-q.sem
			}
		}
	}
}
