package cql

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cql/exec"
	"github.com/cosmosd/cosmosd/cql/frame"
	"github.com/cosmosd/cosmosd/cql/parser"
)

// conn is one client connection.
type conn struct {
	s      *Server
	nc     net.Conn
	rd     *frame.Reader
	sess   exec.Session
	logger *slog.Logger

	out      chan []byte   // encoded response frames for the writer
	done     chan struct{} // closed when nothing more may be sent
	inflight chan struct{} // semaphore of running requests
	reqs     sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc

	// Owned by the reader goroutine.
	started bool
	// authenticated is set once a login succeeded (or at STARTUP when the
	// server has no authenticator).
	authenticated bool

	// mu guards the fields below. It is never held while waiting for the
	// writer, so a client that stops reading blocks only its own
	// requests, never the event broadcast or the server's shutdown.
	mu struct {
		sync.Mutex
		comp     frame.Compressor
		events   map[string]bool
		closed   bool
		draining bool
	}
}

func (s *Server) newConn(nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		s: s, nc: nc, rd: frame.NewReader(nc, s.cfg.MaxFrameBytes),
		logger:   s.cfg.Logger.With("remote", nc.RemoteAddr().String()),
		out:      make(chan []byte, 256),
		done:     make(chan struct{}),
		inflight: make(chan struct{}, s.cfg.MaxRequestsPerConnection),
		ctx:      ctx, cancel: cancel,
	}
	return c
}

// drain stops the reader; in-flight requests finish and then the
// connection closes. The deadline is set under c.mu so that the reader,
// which re-arms its idle deadline under c.mu too (armRead), cannot push it
// back to the future after the drain.
func (c *conn) drain() {
	c.mu.Lock()
	c.mu.draining = true
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
	c.mu.Unlock()
}

// armRead sets the read deadline for the next frame: IdleTimeout from now,
// or none. It reports false when the connection is draining and must not
// read anymore.
func (c *conn) armRead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.draining {
		return false
	}
	var deadline time.Time
	if d := c.s.cfg.IdleTimeout; d > 0 {
		deadline = time.Now().Add(d)
	}
	_ = c.nc.SetReadDeadline(deadline)
	return true
}

func (c *conn) serve() {
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	unsub := func() {}
	if c.s.cfg.Events != nil {
		unsub = c.s.cfg.Events.subscribe(c)
	}
	c.readLoop()
	c.reqs.Wait()
	unsub()
	c.cancel()
	c.mu.Lock()
	c.mu.closed = true
	c.mu.Unlock()
	// Every request has queued its answer; the writer sends what is
	// queued and stops.
	close(c.done)
	<-writerDone
	_ = c.nc.Close()
}

func (c *conn) readLoop() {
	// Handshake messages run on this goroutine: a bug there must not take
	// the node down either. The connection's state may be inconsistent
	// after it, so the connection is closed.
	var cur frame.Header
	defer func() {
		if r := recover(); r != nil {
			c.recovered(cur, r)
		}
	}()
	for {
		if !c.armRead() {
			return
		}
		f, err := c.rd.ReadFrame()
		if err != nil {
			var uv *frame.UnsupportedVersionError
			var tl *frame.FrameTooLargeError
			var nl *frame.NegativeLengthError
			var ne net.Error
			switch {
			case errors.As(err, &uv):
				// Cassandra answers a frame it cannot decode on stream 0,
				// in the highest version it supports, and drivers rely on
				// both: gocql takes an error on stream 0 as a protocol
				// error, reads the version to retry with from its header
				// and downgrades, while an error on the request's stream
				// whose version is not the one it sent fails its protocol
				// discovery (gocql v2 starts with v5, issue 15). The
				// Python driver sends its first request on stream 0 and
				// downgrades on the message.
				// Uncompressed: a client speaking another version cannot
				// be assumed to share this connection's compression.
				c.send(0, nil, &frame.Error{Code: frame.CodeProtocolError, Message: uv.Error()}, false)
				return
			case errors.As(err, &tl):
				c.sendError(tl.Stream, &frame.Error{Code: frame.CodeProtocolError,
					Message: fmt.Sprintf("Request is too big: length %d exceeds maximum allowed length %d.", tl.Length, tl.Max)})
				return
			case errors.As(err, &nl):
				// The body cannot be skipped: nothing after this header
				// can be trusted to start a frame.
				c.sendError(nl.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: nl.Error() + "; closing the connection"})
				return
			case errors.Is(err, frame.ErrMalformed):
				c.sendError(f.Header.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: err.Error()})
				continue
			case errors.As(err, &ne) && ne.Timeout() && !c.isDraining():
				c.logger.Debug("closing idle connection", "idle_timeout", c.s.cfg.IdleTimeout)
				return
			}
			if !errors.Is(err, io.EOF) && !c.isDraining() {
				c.logger.Debug("read frame", "err", err)
			}
			return
		}
		cur = f.Header
		if !f.Header.Opcode.IsRequest() {
			c.sendError(f.Header.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: fmt.Sprintf("Unexpected response opcode %s from client", f.Header.Opcode)})
			continue
		}
		req, err := frame.DecodeRequest(f)
		if err != nil {
			c.sendError(f.Header.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: err.Error()})
			continue
		}
		c.handle(f.Header, req)
	}
}

func (c *conn) isDraining() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.draining
}

// handle runs handshake messages inline and dispatches the rest.
func (c *conn) handle(h frame.Header, req frame.Request) {
	switch r := req.(type) {
	case *frame.Options:
		c.send(h.Stream, nil, supported(), false)
		return
	case *frame.Startup:
		if c.started && !c.authenticated {
			c.sendError(h.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: "Unexpected message STARTUP, expecting SASL_RESPONSE"})
			return
		}
		if c.started {
			c.sendError(h.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: "Unexpected message STARTUP, the connection is already initialized"})
			return
		}
		if _, ok := r.Options["CQL_VERSION"]; !ok {
			c.sendError(h.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: "CQL_VERSION is mandatory"})
			return
		}
		var comp frame.Compressor
		if name := r.Options["COMPRESSION"]; name != "" {
			var ok bool
			if comp, ok = frame.CompressorFor(name, c.s.cfg.MaxFrameBytes); !ok {
				c.sendError(h.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: fmt.Sprintf("Unknown compression algorithm: %s", name)})
				return
			}
		}
		// READY (or AUTHENTICATE) goes out uncompressed; everything
		// after it may be compressed both ways.
		if c.s.cfg.Authenticator != nil {
			c.send(h.Stream, nil, &frame.Authenticate{Authenticator: auth.PasswordAuthenticatorClass}, false)
		} else {
			c.send(h.Stream, nil, &frame.Ready{}, false)
			c.authenticated = true
		}
		c.rd.SetCompressor(comp)
		c.mu.Lock()
		c.mu.comp = comp
		c.mu.Unlock()
		c.started = true
		return
	}
	if !c.started {
		c.sendError(h.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: fmt.Sprintf("Unexpected message %s, expecting STARTUP or OPTIONS", h.Opcode)})
		return
	}
	if !c.authenticated {
		// Until it has logged in, a connection may only log in
		// (Cassandra's ServerConnection in state AUTHENTICATION).
		if r, ok := req.(*frame.AuthResponse); ok {
			c.login(h, r)
			return
		}
		c.sendError(h.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: fmt.Sprintf("Unexpected message %s, expecting SASL_RESPONSE", h.Opcode)})
		return
	}
	switch r := req.(type) {
	case *frame.Register:
		c.mu.Lock()
		if c.mu.events == nil {
			c.mu.events = map[string]bool{}
		}
		for _, ev := range r.Events {
			switch ev {
			case frame.EventTopologyChange, frame.EventStatusChange, frame.EventSchemaChange:
				c.mu.events[ev] = true
			default:
				c.mu.Unlock()
				c.sendError(h.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: fmt.Sprintf("Invalid value '%s' for Type", ev)})
				return
			}
		}
		c.mu.Unlock()
		c.send(h.Stream, nil, &frame.Ready{}, true)
		return
	case *frame.AuthResponse:
		msg := "Unexpected AUTH_RESPONSE: authentication is not enabled"
		if c.s.cfg.Authenticator != nil {
			msg = "Unexpected AUTH_RESPONSE: the connection is already authenticated"
		}
		c.sendError(h.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: msg})
		return
	}
	select {
	case c.inflight <- struct{}{}:
	default:
		c.sendError(h.Stream, &frame.Error{Code: frame.CodeOverloaded,
			Message: fmt.Sprintf("Too many requests in flight on this connection (limit %d)", cap(c.inflight))})
		return
	}
	c.reqs.Add(1)
	go func() {
		defer c.reqs.Done()
		defer func() { <-c.inflight }()
		c.run(h, req)
	}()
}

// login checks an AUTH_RESPONSE. It runs on the reader goroutine: nothing
// else may happen on the connection until the login is decided, and the
// bcrypt comparison it spends (tens of milliseconds) is paid by this
// connection alone. A refusal leaves the connection unauthenticated; the
// client may try again, within the failure rate limit. The token is
// neither logged nor echoed.
func (c *conn) login(h frame.Header, r *frame.AuthResponse) {
	role, err := c.s.cfg.Authenticator.Login(clientOf(c.nc), r.Token)
	if err != nil {
		if obs := c.s.cfg.Observe; obs != nil {
			obs(h.Opcode.String(), 0, int32(frame.CodeBadCredentials), true)
		}
		msg := "Unable to perform authentication"
		var le *auth.LoginError
		if errors.As(err, &le) {
			msg = le.Message
		}
		c.sendError(h.Stream, &frame.Error{Code: frame.CodeBadCredentials, Message: msg})
		return
	}
	c.sess.Login(role)
	c.authenticated = true
	if obs := c.s.cfg.Observe; obs != nil {
		obs(h.Opcode.String(), 0, 0, false)
	}
	c.send(h.Stream, nil, &frame.AuthSuccess{}, true)
}

// run executes one request and answers it.
func (c *conn) run(h frame.Header, req frame.Request) {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.RequestTimeout)
	defer cancel()
	defer func() {
		// A bug in executing one request must not take the node down:
		// the client gets a Server error and the connection goes on.
		if r := recover(); r != nil {
			c.recovered(h, r)
		}
	}()
	if k := c.s.cfg.Knobs; k != nil && k.BeforeRequest != nil {
		k.BeforeRequest(req)
	}
	ex := c.s.cfg.Executor
	var res *exec.Result
	var err error
	switch r := req.(type) {
	case *frame.Query:
		res, err = ex.Query(ctx, &c.sess, r.Query, request(r.Params))
	case *frame.Prepare:
		var p *exec.Prepared
		if p, err = ex.Prepare(ctx, &c.sess, r.Query); err == nil {
			res = &exec.Result{Kind: exec.ResultPrepared, Prepared: p}
		}
	case *frame.Execute:
		res, err = ex.Execute(ctx, &c.sess, r.ID, request(r.Params))
	case *frame.Batch:
		stmts := make([]exec.BatchStatement, len(r.Statements))
		for i, bs := range r.Statements {
			stmts[i] = exec.BatchStatement{Query: bs.Query, Values: values(bs.Values)}
			if bs.Prepared {
				stmts[i].ID = bs.ID
			}
		}
		kind := map[frame.BatchType]parser.BatchKind{frame.BatchLogged: parser.BatchLogged, frame.BatchUnlogged: parser.BatchUnlogged, frame.BatchCounter: parser.BatchCounter}[r.Type]
		res, err = ex.Batch(ctx, &c.sess, kind, stmts, exec.Request{
			Consistency: uint16(r.Consistency), SerialConsistency: uint16(r.SerialConsistency),
			Timestamp: r.Timestamp, HasTimestamp: r.HasTimestamp,
		})
	default:
		err = &exec.Error{Code: exec.CodeProtocol, Message: fmt.Sprintf("Unexpected message %s", h.Opcode)}
	}
	if err != nil {
		fe := toFrameError(err)
		if obs := c.s.cfg.Observe; obs != nil {
			obs(h.Opcode.String(), 0, int32(fe.Code), true)
		}
		c.sendError(h.Stream, fe)
		return
	}
	if obs := c.s.cfg.Observe; obs != nil {
		obs(h.Opcode.String(), res.Charge, 0, false)
	}
	var skip bool
	switch r := req.(type) {
	case *frame.Query:
		skip = r.Params.SkipMetadata
	case *frame.Execute:
		skip = r.Params.SkipMetadata
	}
	skip = skip && !res.FullMetadata
	var env *frame.Envelope
	if res.Charge > 0 {
		env = &frame.Envelope{CustomPayload: map[string][]byte{"RequestCharge": binary.BigEndian.AppendUint64(nil, math.Float64bits(res.Charge))}}
	}
	c.send(h.Stream, env, toFrameResult(res, skip), true)
}

// recovered reports a panic while serving the request with header h: the
// client gets a Server error with a generic message and an incident id;
// the panic value and the stack, which may hold user data and internals,
// go only to the server log under that id.
func (c *conn) recovered(h frame.Header, r any) {
	id := incidentID()
	c.logger.Error("request panicked", "incident", id, "opcode", h.Opcode.String(), "stream", h.Stream,
		"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	if obs := c.s.cfg.Observe; obs != nil {
		obs(h.Opcode.String(), 0, int32(frame.CodeServerError), true)
	}
	c.sendError(h.Stream, &frame.Error{Code: frame.CodeServerError,
		Message: fmt.Sprintf("Internal server error (incident %s); the details are in the server log", id)})
}

// incidentID returns a random id that ties an error sent to a client to
// the server's log entry.
func incidentID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (c *conn) sendError(stream int16, e *frame.Error) { c.send(stream, nil, e, true) }

// encode encodes a response frame with the connection's compression, or
// returns nil once the connection is closed.
func (c *conn) encode(stream int16, env *frame.Envelope, resp frame.Response, compress bool) []byte {
	c.mu.Lock()
	closed, comp := c.mu.closed, c.mu.comp
	c.mu.Unlock()
	if closed {
		return nil
	}
	if !compress {
		comp = nil
	}
	buf, err := frame.AppendResponse(nil, frame.Header{Stream: stream}, env, comp, resp)
	if err != nil {
		// The only failure is a body over the protocol limit.
		buf, _ = frame.AppendResponse(nil, frame.Header{Stream: stream}, nil, comp,
			&frame.Error{Code: frame.CodeServerError, Message: fmt.Sprintf("response too large: %v; use paging or a smaller LIMIT", err)})
	}
	return buf
}

// send encodes a response and hands it to the writer, waiting while the
// writer's queue is full (the client is slow to read).
func (c *conn) send(stream int16, env *frame.Envelope, resp frame.Response, compress bool) {
	buf := c.encode(stream, env, resp, compress)
	if buf == nil {
		return
	}
	select {
	case c.out <- buf:
	case <-c.done:
	}
}

// writeLoop writes responses, flushing when no more are queued, until the
// connection is done and the queue empty. After a write error it keeps
// draining the queue so that senders never block on a dead connection.
func (c *conn) writeLoop() {
	w := bufio.NewWriterSize(c.nc, 64<<10)
	failed := false
	write := func(buf []byte) {
		if failed {
			return
		}
		if _, err := w.Write(buf); err != nil {
			failed = true
			return
		}
		if len(c.out) == 0 {
			if err := w.Flush(); err != nil {
				failed = true
			}
		}
	}
	for {
		select {
		case buf := <-c.out:
			write(buf)
			continue
		case <-c.done:
		}
		for {
			select {
			case buf := <-c.out:
				write(buf)
				continue
			default:
			}
			break
		}
		if !failed {
			_ = w.Flush()
		}
		return
	}
}

// eventQueueWait bounds how long an event waits for room in a
// connection's queue before the connection is given up as not reading.
const eventQueueWait = 2 * time.Second

// pushEvent sends an event if the connection registered for its type. It
// never waits long: the broadcast serves every connection in turn. A
// client whose queue stays full does not read what it is sent; its
// connection is closed, and its driver reconnects and refreshes what it
// may have missed.
func (c *conn) pushEvent(ev *frame.Event) {
	c.mu.Lock()
	want := c.mu.events[ev.Type]
	c.mu.Unlock()
	if !want {
		return
	}
	buf := c.encode(-1, nil, ev, true)
	if buf == nil {
		return
	}
	select {
	case c.out <- buf:
		return
	case <-c.done:
		return
	default:
	}
	t := time.NewTimer(eventQueueWait)
	defer t.Stop()
	select {
	case c.out <- buf:
	case <-c.done:
	case <-t.C:
		c.logger.Warn("closing connection that does not read its events", "event", ev.Type)
		_ = c.nc.Close()
	}
}
