package cql

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/cql/exec"
	"github.com/cosmosd/cosmosd/cql/frame"
	"github.com/cosmosd/cosmosd/cql/parser"
)

// Config configures a Server.
type Config struct {
	Executor *exec.Executor
	// Events, when set, feeds server-pushed events (schema, topology,
	// status) to connections that REGISTERed for them.
	Events *EventSource
	// MaxFrameBytes bounds a request body. Default 256 MiB.
	MaxFrameBytes int
	// MaxRequestsPerConnection bounds in-flight requests per connection.
	// Default 2048.
	MaxRequestsPerConnection int
	// RequestTimeout bounds one request. Default 10s.
	RequestTimeout time.Duration
	// Observe, when set, is told about every request (opcode name, request
	// units charged, and the CQL error code when it failed), for metrics.
	Observe func(op string, charge float64, errCode int32, failed bool)
	Logger  *slog.Logger
}

// Server is a CQL native protocol server. Safe for concurrent use.
type Server struct {
	cfg Config

	mu struct {
		sync.Mutex
		ln       net.Listener
		conns    map[*conn]struct{}
		draining bool
	}
	wg sync.WaitGroup // connection goroutines
}

// NewServer returns a server.
func NewServer(cfg Config) *Server {
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = frame.DefaultMaxBodyBytes
	}
	if cfg.MaxRequestsPerConnection <= 0 {
		cfg.MaxRequestsPerConnection = 2048
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg}
	s.mu.conns = map[*conn]struct{}{}
	return s
}

// Serve accepts connections on ln until Shutdown. It returns nil after a
// shutdown and the accept error otherwise.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.mu.draining {
		s.mu.Unlock()
		return ln.Close()
	}
	s.mu.ln = ln
	s.mu.Unlock()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			draining := s.mu.draining
			s.mu.Unlock()
			if draining {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		c := s.newConn(nc)
		s.mu.Lock()
		if s.mu.draining {
			s.mu.Unlock()
			_ = nc.Close()
			continue
		}
		s.mu.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.mu.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Shutdown stops accepting connections, stops reading new requests, waits
// for in-flight requests to finish (or ctx to end) and closes every
// connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.mu.draining = true
	ln := s.mu.ln
	conns := make([]*conn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, c := range conns {
		c.drain()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		for _, c := range conns {
			_ = c.nc.Close()
		}
		<-done
		return ctx.Err()
	}
}

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
// connection closes.
func (c *conn) drain() {
	c.mu.Lock()
	c.mu.draining = true
	c.mu.Unlock()
	_ = c.nc.SetReadDeadline(time.Unix(1, 0))
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
	for {
		f, err := c.rd.ReadFrame()
		if err != nil {
			var uv *frame.UnsupportedVersionError
			var tl *frame.FrameTooLargeError
			switch {
			case errors.As(err, &uv):
				c.sendError(uv.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: uv.Error()})
				return
			case errors.As(err, &tl):
				c.sendError(tl.Stream, &frame.Error{Code: frame.CodeProtocolError,
					Message: fmt.Sprintf("Request is too big: length %d exceeds maximum allowed length %d.", tl.Length, tl.Max)})
				return
			case errors.Is(err, frame.ErrMalformed):
				c.sendError(f.Header.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: err.Error()})
				continue
			}
			if !errors.Is(err, io.EOF) && !c.isDraining() {
				c.logger.Debug("read frame", "err", err)
			}
			return
		}
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
		c.send(h.Stream, nil, &frame.Supported{Options: map[string][]string{
			"CQL_VERSION": {"3.4.4"}, "COMPRESSION": frame.SupportedCompressions(), "PROTOCOL_VERSIONS": {"4/v4"},
		}}, false)
		return
	case *frame.Startup:
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
		// READY goes out uncompressed; everything after it may be
		// compressed both ways.
		c.send(h.Stream, nil, &frame.Ready{}, false)
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
		c.sendError(h.Stream, &frame.Error{Code: frame.CodeProtocolError, Message: "Unexpected AUTH_RESPONSE: authentication is not enabled"})
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

// run executes one request and answers it.
func (c *conn) run(h frame.Header, req frame.Request) {
	ctx, cancel := context.WithTimeout(c.ctx, c.s.cfg.RequestTimeout)
	defer cancel()
	defer func() {
		// A bug in executing one request must not take the node down:
		// the client gets a Server error and the connection goes on.
		if r := recover(); r != nil {
			c.logger.Error("request panicked", "opcode", h.Opcode.String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			c.sendError(h.Stream, &frame.Error{Code: frame.CodeServerError, Message: fmt.Sprintf("internal error: %v", r)})
		}
	}()
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

func request(p frame.QueryParams) exec.Request {
	r := exec.Request{
		Consistency: uint16(p.Consistency), Values: values(p.Values), Names: p.Names, PageSize: p.PageSize,
		PagingState: p.PagingState, Timestamp: p.Timestamp, HasTimestamp: p.HasTimestamp,
	}
	if p.HasSerialConsistency {
		r.SerialConsistency = uint16(p.SerialConsistency)
	} else {
		r.SerialConsistency = exec.Serial
	}
	return r
}

func values(vs []frame.Value) []exec.Value {
	out := make([]exec.Value, len(vs))
	for i, v := range vs {
		switch {
		case v.IsUnset():
			out[i] = exec.Value{Unset: true}
		case v.IsNull():
			out[i] = exec.Value{}
		default:
			b := v.Bytes
			if b == nil {
				b = []byte{}
			}
			out[i] = exec.Value{Bytes: b}
		}
	}
	return out
}

func specs(cs []exec.ColumnSpec) []frame.ColumnSpec {
	out := make([]frame.ColumnSpec, len(cs))
	for i, c := range cs {
		out[i] = frame.ColumnSpec{Keyspace: c.Keyspace, Table: c.Table, Name: c.Name, Type: c.Type}
	}
	return out
}

func toFrameResult(r *exec.Result, skipMetadata bool) frame.Response {
	switch r.Kind {
	case exec.ResultRows:
		md := frame.RowsMetadata{Columns: specs(r.Rows.Columns), PagingState: r.Rows.PagingState}
		if skipMetadata {
			md = frame.RowsMetadata{NoMetadata: true, ColumnCount: len(r.Rows.Columns), PagingState: r.Rows.PagingState}
		}
		return &frame.RowsResult{Metadata: md, Rows: r.Rows.Rows}
	case exec.ResultSetKeyspace:
		return &frame.SetKeyspaceResult{Keyspace: r.Keyspace}
	case exec.ResultSchemaChange:
		return &frame.SchemaChangeResult{SchemaChange: frame.SchemaChange{Change: r.Change.Change, Target: r.Change.Target, Keyspace: r.Change.Keyspace, Name: r.Change.Name}}
	case exec.ResultPrepared:
		p := r.Prepared
		res := &frame.PreparedResult{ID: p.ID, Metadata: frame.PreparedMetadata{Columns: specs(p.Variables), PKIndices: p.PKIndices}}
		if p.ResultColumns != nil {
			res.ResultMetadata = frame.RowsMetadata{Columns: specs(p.ResultColumns)}
		} else {
			res.ResultMetadata = frame.RowsMetadata{NoMetadata: true}
		}
		return res
	}
	return &frame.VoidResult{}
}

func toFrameError(err error) *frame.Error {
	e := exec.AsError(err)
	return &frame.Error{
		Code: frame.ErrorCode(e.Code), Message: e.Message, Consistency: frame.Consistency(e.Consistency),
		Required: e.Required, Alive: e.Alive, Received: e.Alive, BlockFor: e.Required, DataPresent: e.DataPresent,
		WriteType: e.WriteType, Keyspace: e.Keyspace, Table: e.Table, UnpreparedID: e.PreparedID,
	}
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
