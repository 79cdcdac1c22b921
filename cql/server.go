package cql

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cql/exec"
	"github.com/cosmosd/cosmosd/cql/frame"
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
	// MaxConnections bounds the client connections of this server.
	// Default 4096.
	MaxConnections int
	// MaxConnectionsPerClient bounds the connections from one remote IP
	// address, so that one misbehaving client (a connection leak, a pool
	// sized per thread) cannot take every slot. Default 512.
	MaxConnectionsPerClient int
	// IdleTimeout closes a connection from which no frame was read for
	// this long. 0 disables it. Drivers send an OPTIONS heartbeat on idle
	// connections (gocql every 5s, the DataStax drivers every 30s), so a
	// timeout well above that only closes connections whose client is gone
	// without a FIN (a host that crashed or was cut off).
	IdleTimeout time.Duration
	// Observe, when set, is told about every request (opcode name, request
	// units charged, and the CQL error code when it failed), for metrics.
	Observe func(op string, charge float64, errCode int32, failed bool)
	// Authenticator, when set, requires every connection to log in after
	// STARTUP (authenticator password): the server answers STARTUP with
	// AUTHENTICATE naming Cassandra's PasswordAuthenticator, and accepts
	// nothing but OPTIONS and AUTH_RESPONSE (a SASL PLAIN token) until a
	// login succeeds. Nil lets every connection in (allow-all).
	Authenticator *auth.Authenticator
	Logger        *slog.Logger
	// Knobs are test hooks; nil in production.
	Knobs *TestingKnobs
}

// TestingKnobs are hooks for tests.
type TestingKnobs struct {
	// BeforeRequest runs on the request's goroutine before a QUERY,
	// PREPARE, EXECUTE or BATCH is executed (a panic in it is handled as
	// one in the executor would be).
	BeforeRequest func(frame.Request)
}

// Defaults of Config.
const (
	DefaultMaxConnections          = 4096
	DefaultMaxConnectionsPerClient = 512
)

// maxPendingRejections bounds the connections over a limit that are kept
// open to be told why (OVERLOADED on their STARTUP, see reject). Beyond it a
// connection over a limit is closed at once, so a connection flood cannot
// make the server hold unbounded goroutines and sockets.
const maxPendingRejections = 64

// rejectTimeout bounds how long a connection over a limit may take to send
// its requests before it is closed without an answer.
const rejectTimeout = 5 * time.Second

// rejectMaxFrame bounds the frames read from a connection over a limit:
// STARTUP and OPTIONS are a few hundred bytes.
const rejectMaxFrame = 64 << 10

// Server is a CQL native protocol server. Safe for concurrent use.
type Server struct {
	cfg Config

	mu struct {
		sync.Mutex
		ln    net.Listener
		conns map[*conn]struct{}
		// perClient counts the connections in conns by remote IP.
		perClient map[string]int
		// rejecting holds connections over a limit that wait for their
		// first request to be answered OVERLOADED.
		rejecting map[net.Conn]struct{}
		draining  bool
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
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxConnectionsPerClient <= 0 {
		cfg.MaxConnectionsPerClient = DefaultMaxConnectionsPerClient
	}
	if cfg.IdleTimeout < 0 {
		cfg.IdleTimeout = 0
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg}
	s.mu.conns = map[*conn]struct{}{}
	s.mu.perClient = map[string]int{}
	s.mu.rejecting = map[net.Conn]struct{}{}
	return s
}

// NumConns returns the number of client connections being served (those
// refused over a limit excluded).
func (s *Server) NumConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.conns)
}

// clientOf returns the remote IP address of a connection, the key of the
// per-client limit.
func clientOf(nc net.Conn) string {
	addr := nc.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// overLimitLocked returns why a new connection from client is refused, or
// "" when it may be served.
func (s *Server) overLimitLocked(client string) string {
	if n := len(s.mu.conns); n >= s.cfg.MaxConnections {
		return fmt.Sprintf("too many connections: this node serves at most %d client connections (max_connections)", s.cfg.MaxConnections)
	}
	if s.mu.perClient[client] >= s.cfg.MaxConnectionsPerClient {
		return fmt.Sprintf("too many connections from %s: this node serves at most %d connections per client address (max_connections_per_client)",
			client, s.cfg.MaxConnectionsPerClient)
	}
	return ""
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
		client := clientOf(nc)
		s.mu.Lock()
		if s.mu.draining {
			s.mu.Unlock()
			_ = nc.Close()
			continue
		}
		if why := s.overLimitLocked(client); why != "" {
			// The accept loop never waits on a refused client: it is
			// answered on a goroutine of its own, or closed at once
			// when too many are already waiting.
			if len(s.mu.rejecting) >= maxPendingRejections {
				s.mu.Unlock()
				_ = nc.Close()
				continue
			}
			s.mu.rejecting[nc] = struct{}{}
			s.mu.Unlock()
			s.cfg.Logger.Debug("refusing connection", "remote", nc.RemoteAddr().String(), "reason", why)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.reject(nc, why)
				s.mu.Lock()
				delete(s.mu.rejecting, nc)
				s.mu.Unlock()
			}()
			continue
		}
		c := s.newConn(nc)
		s.mu.conns[c] = struct{}{}
		s.mu.perClient[client]++
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.mu.conns, c)
			if s.mu.perClient[client]--; s.mu.perClient[client] <= 0 {
				delete(s.mu.perClient, client)
			}
			s.mu.Unlock()
		}()
	}
}

// reject refuses a connection over a limit: it answers its first request
// other than OPTIONS (STARTUP, normally) with OVERLOADED, naming the limit,
// and closes it. OPTIONS is answered as usual first: gocql reports an
// error answer to OPTIONS only as "Unknown type of response to startup
// frame", while it returns the error answering STARTUP as is, so the user
// sees why (the Python driver reports either). Only well-formed v4 frames
// are answered; anything else is just closed.
func (s *Server) reject(nc net.Conn, why string) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(rejectTimeout))
	for range 2 {
		f, err := frame.ReadFrame(nc, rejectMaxFrame, nil)
		if err != nil {
			return
		}
		var resp frame.Response = &frame.Error{Code: frame.CodeOverloaded, Message: why}
		if f.Header.Opcode == frame.OpOptions {
			resp = supported()
		}
		buf, err := frame.AppendResponse(nil, frame.Header{Stream: f.Header.Stream}, nil, nil, resp)
		if err != nil {
			return
		}
		if _, err := nc.Write(buf); err != nil {
			return
		}
		if f.Header.Opcode != frame.OpOptions {
			return
		}
	}
}

// supported is the answer to OPTIONS.
func supported() *frame.Supported {
	return &frame.Supported{Options: map[string][]string{
		"CQL_VERSION": {"3.4.4"}, "COMPRESSION": frame.SupportedCompressions(), "PROTOCOL_VERSIONS": {"4/v4"},
	}}
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
	for nc := range s.mu.rejecting {
		_ = nc.Close()
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
