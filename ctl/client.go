package ctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// defaultAdminPort completes an endpoint given without a port.
const defaultAdminPort = "7070"

// ErrNoEndpoint is returned (wrapped, with each endpoint's reason) when no
// endpoint answers.
var ErrNoEndpoint = errors.New("cannot reach any endpoint")

// splitEndpoints parses "host:port[,host:port...]", dropping empty items
// and adding the default admin port where none is given.
func splitEndpoints(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(e); err != nil {
			// "host" or "::1": no port. Bracket bare IPv6 addresses.
			e = net.JoinHostPort(strings.Trim(e, "[]"), defaultAdminPort)
		}
		out = append(out, e)
	}
	return out
}

// client is one connection to the admin API of the endpoint that answered.
// Owned by one command; not for concurrent Close.
type client struct {
	conn     *grpc.ClientConn
	endpoint string
	timeout  time.Duration
	admin    adminpb.AdminClient
}

// dial connects to the first endpoint, in order, that completes a gRPC
// handshake within dialTimeout. Calls through the client are bounded by
// callTimeout.
func dial(ctx context.Context, endpoints []string, dialTimeout, callTimeout time.Duration, tlsCreds credentials.TransportCredentials) (*client, error) {
	var reasons []string
	for _, ep := range endpoints {
		conn, err := dialOne(ctx, ep, dialTimeout, tlsCreds)
		if err == nil {
			return &client{conn: conn, endpoint: ep, timeout: callTimeout, admin: adminpb.NewAdminClient(conn)}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		reasons = append(reasons, ep+": "+err.Error())
	}
	if len(endpoints) == 1 {
		// "cannot reach any endpoint (127.0.0.1:7070): connection refused"
		_, reason, _ := strings.Cut(reasons[0], ": ")
		return nil, fmt.Errorf("%w (%s): %s", ErrNoEndpoint, endpoints[0], reason)
	}
	return nil, fmt.Errorf("%w (%s): %s", ErrNoEndpoint, strings.Join(endpoints, ", "), strings.Join(reasons, "; "))
}

// dialRecorder keeps the last TCP dial error of one endpoint, because gRPC
// reports only a state (TransientFailure), not why.
type dialRecorder struct {
	mu  sync.Mutex
	err error
	// handshake is the first error of the TLS handshake or of the first
	// reads after it (recordingCreds).
	handshake error
}

func (r *dialRecorder) setHandshake(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handshake == nil {
		r.handshake = err
	}
}

func (r *dialRecorder) lastHandshake() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.handshake
}

func (r *dialRecorder) dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
	}
	return conn, err
}

func (r *dialRecorder) last() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// dialOne connects to one endpoint and waits until the connection is ready,
// has failed, or dialTimeout has passed. tlsCreds nil dials plaintext.
func dialOne(ctx context.Context, ep string, dialTimeout time.Duration, tlsCreds credentials.TransportCredentials) (*grpc.ClientConn, error) {
	rec := &dialRecorder{}
	// passthrough: our dialer resolves the host, so a name that does not
	// resolve fails with the resolver's reason.
	conn, err := grpc.NewClient("passthrough:///"+ep,
		grpc.WithTransportCredentials(newRecordingCreds(tlsCreds, rec)),
		grpc.WithContextDialer(rec.dial))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn.Connect()
	for {
		st := conn.GetState()
		switch st {
		case connectivity.Ready:
			return conn, nil
		case connectivity.TransientFailure, connectivity.Shutdown:
			_ = conn.Close()
			if err := rec.last(); err != nil {
				return nil, errors.New(dialReason(err))
			}
			return nil, errors.New(handshakeReason(rec.lastHandshake(), tlsCreds != nil))
		}
		if !conn.WaitForStateChange(ctx, st) {
			_ = conn.Close()
			if err := rec.last(); err != nil {
				return nil, errors.New(dialReason(err))
			}
			if err := rec.lastHandshake(); err != nil {
				return nil, errors.New(handshakeReason(err, tlsCreds != nil))
			}
			return nil, fmt.Errorf("no answer within %s", dialTimeout)
		}
	}
}

// dialReason shortens a dial error to its cause ("connection refused",
// "no such host") for the one-line message.
func dialReason(err error) string {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.Err
	}
	var sysErr *os.SyscallError
	if errors.As(err, &sysErr) {
		return sysErr.Err.Error()
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		return opErr.Err.Error()
	}
	return err.Error()
}

// Close closes the connection.
func (c *client) Close() error { return c.conn.Close() }

// call runs one RPC under the call timeout and turns its error into the
// one-line reason the contract promises.
func (c *client) call(ctx context.Context, rpc func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.explain(rpc(ctx))
}

// rpcError is a server's answer: its message is the gRPC status message
// alone, and status.Code still sees the code.
type rpcError struct{ st *status.Status }

func (e *rpcError) Error() string              { return e.st.Message() }
func (e *rpcError) GRPCStatus() *status.Status { return e.st }

func (c *client) explain(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s did not answer within %s (--timeout): %w", c.endpoint, c.timeout, &rpcError{st})
	case codes.Unavailable:
		return fmt.Errorf("%s: %w", c.endpoint, &rpcError{st})
	case codes.Canceled:
		return fmt.Errorf("interrupted: %w", &rpcError{st})
	}
	return &rpcError{st}
}
