package cql

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/cql/frame"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// These tests run a real Server on loopback without an executor: they
// exercise what the server decides before a request reaches the executor
// (framing, handshake, connection limits, panics). Requests that would
// reach the executor are stopped by TestingKnobs.BeforeRequest.

// logBuffer collects a server's log output.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer serves cfg on a loopback port until the test ends.
func startServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(cfg)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

type client struct {
	t  *testing.T
	nc net.Conn
	rd *frame.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc, rd: frame.NewResponseReader(nc, 0)}
}

func (c *client) write(b []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *client) send(stream int16, req frame.Request) {
	c.t.Helper()
	b, err := frame.AppendRequest(nil, frame.Header{Stream: stream}, nil, req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.write(b)
}

func (c *client) recv() (frame.Header, frame.Response) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := c.rd.ReadFrame()
	if err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	resp, _, err := frame.DecodeResponse(f)
	if err != nil {
		c.t.Fatalf("decode %s: %v", f.Header, err)
	}
	return f.Header, resp
}

func (c *client) startup() {
	c.t.Helper()
	c.send(0, &frame.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}})
	if _, r := c.recv(); r == nil {
		c.t.Fatal("no answer to STARTUP")
	} else if _, ok := r.(*frame.Ready); !ok {
		c.t.Fatalf("STARTUP: %#v", r)
	}
}

// expectClosed checks that the server closed the connection (after what
// it already sent was read).
func (c *client) expectClosed(what string) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c.nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("%s: connection still open", what)
	}
}

func wantError(t *testing.T, what string, r frame.Response, code frame.ErrorCode, fragment string) *frame.Error {
	t.Helper()
	e, ok := r.(*frame.Error)
	if !ok || e.Code != code || !strings.Contains(e.Message, fragment) {
		t.Fatalf("%s: %#v, want error 0x%04x containing %q", what, r, int32(code), fragment)
	}
	return e
}

func header(stream int16, op frame.Opcode, length uint32) []byte {
	b := []byte{frame.VersionRequest, 0, 0, 0, byte(op), 0, 0, 0, 0}
	binary.BigEndian.PutUint16(b[2:], uint16(stream))
	binary.BigEndian.PutUint32(b[5:], length)
	return b
}

// TestNegativeBodyLength: a header whose body length is negative cannot be
// skipped; the server must say so and close rather than read the bytes
// that follow as the next header.
func TestNegativeBodyLength(t *testing.T) {
	_, addr := startServer(t, Config{})
	for _, length := range []uint32{0xffffffff, 0x80000000} {
		c := dial(t, addr)
		c.startup()
		// What follows the bad header is a valid OPTIONS frame: a server
		// that carries on would answer it.
		buf := header(7, frame.OpQuery, length)
		opts, _ := frame.AppendRequest(nil, frame.Header{Stream: 8}, nil, &frame.Options{})
		c.write(append(buf, opts...))
		h, r := c.recv()
		wantError(t, "negative length", r, frame.CodeProtocolError, "negative body length")
		if h.Stream != 7 {
			t.Fatalf("answered on stream %d, want 7", h.Stream)
		}
		c.expectClosed("after a negative body length")
	}
}

// TestOversizedBodyLength: a body over the configured maximum is refused
// on its stream and the connection closed, before any of it is read.
func TestOversizedBodyLength(t *testing.T) {
	_, addr := startServer(t, Config{MaxFrameBytes: 4096})
	c := dial(t, addr)
	c.startup()
	c.write(header(3, frame.OpQuery, 1<<30))
	h, r := c.recv()
	wantError(t, "oversized", r, frame.CodeProtocolError, "exceeds maximum allowed length 4096")
	if h.Stream != 3 {
		t.Fatalf("answered on stream %d, want 3", h.Stream)
	}
	c.expectClosed("after an oversized body length")
}

// TestPanicIsNotSentToClients: a panicking request is answered with a
// generic Server error carrying an incident id; the panic text and stack
// go only to the log, at error level, under that id. The connection and
// the server go on.
func TestPanicIsNotSentToClients(t *testing.T) {
	logs := &logBuffer{}
	const secret = "secret-panic-detail"
	_, addr := startServer(t, Config{
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelError})),
		Knobs: &TestingKnobs{BeforeRequest: func(req frame.Request) {
			if q, ok := req.(*frame.Query); ok && strings.Contains(q.Query, "boom") {
				panic(secret)
			}
		}},
	})
	c := dial(t, addr)
	c.startup()
	c.send(5, &frame.Query{Query: "SELECT boom FROM t", Params: frame.QueryParams{Consistency: frame.One}})
	h, r := c.recv()
	e := wantError(t, "panic", r, frame.CodeServerError, "Internal server error (incident ")
	if h.Stream != 5 {
		t.Fatalf("answered on stream %d, want 5", h.Stream)
	}
	if strings.Contains(e.Message, secret) || strings.Contains(e.Message, "goroutine") {
		t.Fatalf("panic details sent to the client: %q", e.Message)
	}
	id := e.Message[strings.Index(e.Message, "incident ")+len("incident "):]
	id = id[:strings.IndexByte(id, ')')]
	if len(id) != 16 {
		t.Fatalf("incident id %q", id)
	}
	out := logs.String()
	if !strings.Contains(out, `"incident":"`+id+`"`) || !strings.Contains(out, secret) || !strings.Contains(out, `"level":"ERROR"`) ||
		!strings.Contains(out, "server_test.go") {
		t.Fatalf("log lacks the incident, panic or stack:\n%s", out)
	}
	// The connection still serves.
	c.send(6, &frame.Options{})
	if _, r := c.recv(); r == nil {
		t.Fatal("no answer after the panic")
	} else if _, ok := r.(*frame.Supported); !ok {
		t.Fatalf("OPTIONS after the panic: %#v", r)
	}
}

// TestConnectionLimits: connections over max_connections or
// max_connections_per_client get OVERLOADED on their first request and are
// closed, without holding up the accept loop; a freed slot can be used
// again.
func TestConnectionLimits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		fragment string
	}{
		{"PerNode", Config{MaxConnections: 2}, "at most 2 client connections (max_connections)"},
		{"PerClient", Config{MaxConnectionsPerClient: 2}, "too many connections from 127.0.0.1: this node serves at most 2 connections per client address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, addr := startServer(t, tc.cfg)
			a, b := dial(t, addr), dial(t, addr)
			a.startup()
			b.startup()
			startup := &frame.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}
			for _, options := range []bool{false, true} {
				c := dial(t, addr)
				if options {
					// OPTIONS is answered as usual (see reject).
					c.send(8, &frame.Options{})
					if _, r := c.recv(); r == nil {
						t.Fatal("no answer to OPTIONS")
					} else if _, ok := r.(*frame.Supported); !ok {
						t.Fatalf("OPTIONS over the limit: %#v", r)
					}
				}
				c.send(9, startup)
				h, r := c.recv()
				wantError(t, "over the limit", r, frame.CodeOverloaded, tc.fragment)
				if h.Stream != 9 {
					t.Fatalf("answered on stream %d, want 9", h.Stream)
				}
				c.expectClosed("over the limit")
			}
			// A client that says nothing does not hold the accept loop:
			// the others are still answered.
			silent := dial(t, addr)
			c := dial(t, addr)
			c.send(1, &frame.Query{Query: "SELECT * FROM t", Params: frame.QueryParams{Consistency: frame.One}})
			_, r := c.recv()
			wantError(t, "behind a silent client", r, frame.CodeOverloaded, "too many connections")
			_ = silent
			// Freeing a slot lets a new connection in.
			a.nc.Close()
			deadline := time.Now().Add(10 * time.Second)
			for s.NumConns() > 1 {
				if time.Now().After(deadline) {
					t.Fatalf("%d connections after one closed", s.NumConns())
				}
				time.Sleep(10 * time.Millisecond)
			}
			dial(t, addr).startup()
		})
	}
}

// TestIdleTimeout: a connection from which nothing is read for the idle
// timeout is closed; one that sends heartbeats stays.
func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	s, addr := startServer(t, Config{IdleTimeout: idle})
	quiet, busy := dial(t, addr), dial(t, addr)
	quiet.startup()
	busy.startup()
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = quiet.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.Copy(io.Discard, quiet.nc)
	}()
	tick := time.NewTicker(idle / 4)
	defer tick.Stop()
	quietClosed := time.Duration(0)
	for {
		select {
		case <-closed:
			closed = nil
			quietClosed = time.Since(start)
			if quietClosed < idle {
				t.Fatalf("idle connection closed after %v, before the %v timeout", quietClosed, idle)
			}
		case <-tick.C:
			// Heartbeats keep the other connection open well past the
			// idle timeout.
			busy.send(1, &frame.Options{})
			if _, r := busy.recv(); r == nil {
				t.Fatal("no answer")
			} else if _, ok := r.(*frame.Supported); !ok {
				t.Fatalf("heartbeat: %#v", r)
			}
		}
		if quietClosed > 0 && time.Since(start) > 3*idle {
			if n := s.NumConns(); n != 1 {
				t.Fatalf("%d connections, want the heartbeating one", n)
			}
			return
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("idle connection never closed")
		}
	}
}
