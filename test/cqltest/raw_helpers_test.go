package cqltest

import (
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cql/frame"
)

// rawConn is a protocol-level client built on cql/frame's client-side
// encoders and decoders, for what drivers cannot be made to send.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	rd   *frame.Reader
	comp frame.Compressor
}

// rawTLS maps the CQL address of a node that serves TLS (TestCQLOverTLS)
// to the client configuration dialRaw connects to it with.
var rawTLS sync.Map // string → *tls.Config

// rawAuth maps the CQL address of a node that requires a login
// (TestCQLWithPassword) to the SASL PLAIN token startup answers its
// AUTHENTICATE with.
var rawAuth sync.Map // string → []byte

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	var nc net.Conn
	var err error
	if cfg, ok := rawTLS.Load(addr); ok {
		nc, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg.(*tls.Config).Clone())
	} else {
		nc, err = net.DialTimeout("tcp", addr, 5*time.Second)
	}
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, rd: frame.NewResponseReader(nc, 0)}
}

// startup performs OPTIONS/STARTUP, with a compression or "".
func (c *rawConn) startup(compression string) {
	c.t.Helper()
	if _, ok := c.roundTrip(&frame.Options{}).(*frame.Supported); !ok {
		c.t.Fatal("OPTIONS: no SUPPORTED")
	}
	opts := map[string]string{"CQL_VERSION": "3.0.0"}
	if compression != "" {
		opts["COMPRESSION"] = compression
	}
	resp := c.roundTrip(&frame.Startup{Options: opts})
	if a, ok := resp.(*frame.Authenticate); ok {
		cred, ok := rawAuth.Load(c.nc.RemoteAddr().String())
		if !ok {
			c.t.Fatalf("STARTUP: AUTHENTICATE %s from a node without credentials in rawAuth", a.Authenticator)
		}
		if r, ok := c.roundTrip(&frame.AuthResponse{Token: cred.([]byte)}).(*frame.AuthSuccess); !ok {
			c.t.Fatalf("AUTH_RESPONSE: %#v, want AUTH_SUCCESS", r)
		}
		return
	}
	if _, ok := resp.(*frame.Ready); !ok {
		c.t.Fatalf("STARTUP: %#v, want READY", resp)
	}
}

// sendStream writes one request frame on a stream.
func (c *rawConn) sendStream(stream int16, req frame.Request) {
	c.t.Helper()
	buf, err := frame.AppendRequest(nil, frame.Header{Stream: stream}, c.comp, req)
	if err != nil {
		c.t.Fatalf("encode %T: %v", req, err)
	}
	c.write(buf)
}

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// recv reads the next response frame, skipping nothing.
func (c *rawConn) recv() (frame.Header, frame.Response, frame.Envelope) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(15 * time.Second))
	f, err := c.rd.ReadFrame()
	if err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	resp, env, err := frame.DecodeResponse(f)
	if err != nil {
		c.t.Fatalf("decode %s: %v", f.Header, err)
	}
	return f.Header, resp, env
}

// roundTrip sends req on stream 1 and returns the response on that stream,
// skipping events.
func (c *rawConn) roundTrip(req frame.Request) frame.Response {
	c.t.Helper()
	c.sendStream(1, req)
	for {
		h, resp, _ := c.recv()
		if h.Stream == 1 {
			return resp
		}
	}
}

// query runs a QUERY at ONE.
func (c *rawConn) query(q string, values ...frame.Value) frame.Response {
	c.t.Helper()
	return c.roundTrip(&frame.Query{Query: q, Params: frame.QueryParams{Consistency: frame.One, Values: values}})
}

// rawErr asserts that resp is an ERROR with code and message fragment.
func rawErr(t *testing.T, what string, resp frame.Response, code frame.ErrorCode, fragment string) *frame.Error {
	t.Helper()
	e, ok := resp.(*frame.Error)
	if !ok {
		t.Fatalf("%s: %#v, want ERROR 0x%04x", what, resp, int32(code))
	}
	if e.Code != code {
		t.Fatalf("%s: error 0x%04x %q, want 0x%04x", what, int32(e.Code), e.Message, int32(code))
	}
	if fragment != "" && !contains(e.Message, fragment) {
		t.Fatalf("%s: message %q does not contain %q", what, e.Message, fragment)
	}
	return e
}

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func bytesValue(b ...byte) frame.Value {
	if b == nil {
		b = []byte{}
	}
	return frame.BytesValue(b)
}

func rawCheckVoid(t *testing.T, what string, resp frame.Response) {
	t.Helper()
	if _, ok := resp.(*frame.VoidResult); !ok {
		t.Fatalf("%s: %#v, want a Void result", what, resp)
	}
}
