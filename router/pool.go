package router

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// KeepaliveParams are the client keepalives of internal connections; the
// internal server accepts them with KeepaliveEnforcement. They close a
// connection whose peer vanished within about 13 s (gRPC does not ping
// more often than every 10 s); routing around a node that froze or was cut
// off is the prober's job, within a fraction of a second (see probe).
var (
	KeepaliveParams      = keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 3 * time.Second, PermitWithoutStream: true}
	KeepaliveEnforcement = keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}
)

// ConnectParams reconnect to a node quickly once it is back. gRPC's
// default backoff grows to two minutes while a node is down, and this
// connection lives as long as the node is registered: a node that returns
// after a minute (and may soon lead partitions again) would be unreachable
// from here for up to as long again.
var ConnectParams = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// ConnectWait bounds how long a request waits for a connection to a node
// that is not ready (connecting after the node vanished). gRPC would hold
// the request until the request's deadline; a node whose address no
// longer answers (a killed host: SYNs go unanswered) would then cost the
// whole timeout, although the request never left and another replica
// could take it. A healthy connection is ready at once, and a reconnect on
// a LAN takes milliseconds.
const ConnectWait = time.Second

// errPoolClosed refuses a connection once the router is closed: a request
// still running then would otherwise open a connection nobody closes.
var errPoolClosed = errors.New("router: closed")

// pool holds this router's connections, at most one per node, each with
// its Forward stream. A connection lives as long as its node keeps its
// address: every request to the node shares it (gRPC multiplexes them),
// so the router pays one TCP and HTTP/2 handshake per node, not per
// request. Safe for concurrent use.
type pool struct {
	ctx      context.Context // the router's: ends Forward streams on Close
	dialOpts []grpc.DialOption

	mu struct {
		sync.Mutex
		conns  map[consensus.NodeID]*nodeConn
		closed bool
	}
}

func newPool(ctx context.Context, dialOpts []grpc.DialOption) *pool {
	p := &pool{ctx: ctx, dialOpts: dialOpts}
	p.mu.conns = map[consensus.NodeID]*nodeConn{}
	return p
}

// get returns the connection to node, dialing one when there is none or
// the node registered a new address (the old connection is closed).
// info is the node's registration, nil when it is not registered: a node
// whose registration lease lapsed while it kept serving (its etcd member
// paused) registers again within seconds, so the connection already open
// to it is kept and used; one that really died is found by the connection
// and the silence detectors. An unregistered node without a connection is
// an UNKNOWN partition error (nothing was sent).
func (p *pool) get(node consensus.NodeID, info *cluster.NodeInfo) (*nodeConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return nil, fmt.Errorf("node %d: %w", node, errPoolClosed)
	}
	c, ok := p.mu.conns[node]
	switch {
	case info == nil && ok:
		return c, nil
	case info == nil:
		return nil, errUnregistered(node)
	case ok && c.addr == info.PeerAddr:
		return c, nil
	case ok:
		// The node moved (restarted on another address): its old
		// connection can only fail.
		_ = c.conn.Close()
		delete(p.mu.conns, node)
	}
	cc, err := grpc.NewClient(info.PeerAddr, p.dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("dial node %d at %s: %w", node, info.PeerAddr, err)
	}
	c = newNodeConn(p.ctx, info.PeerAddr, cc)
	p.mu.conns[node] = c
	return c, nil
}

// lookup returns the open connection to node, nil if there is none.
func (p *pool) lookup(node consensus.NodeID) *nodeConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.conns[node]
}

// all returns the open connections.
func (p *pool) all() []*nodeConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*nodeConn, 0, len(p.mu.conns))
	for _, c := range p.mu.conns {
		out = append(out, c)
	}
	return out
}

// close closes every connection (their streams end with them) and refuses
// new ones. Safe to call twice.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.closed = true
	for id, c := range p.mu.conns {
		_ = c.conn.Close()
		delete(p.mu.conns, id)
	}
}

// errUnregistered says a node has no registration and no connection, so a
// request for it was not sent.
func errUnregistered(node consensus.NodeID) error {
	return partition.Errorf(kvpb.Error_UNKNOWN, "node %d is not registered (down?)", node)
}

// nodeConn is the router's connection to one node. It is shared by every
// request to the node; its Forward stream multiplexes their reads and
// writes (forward.go).
type nodeConn struct {
	addr string
	conn *grpc.ClientConn
	kv   kvpb.InternalClient
	fwd  *forwarder
	// pong is when the node last answered a ping or any other request
	// (UnixNano), or when the connection was made; probing is set while a
	// ping is out.
	pong    atomic.Int64
	probing atomic.Bool
}

// newNodeConn wraps a client connection to addr; ctx ends its Forward
// streams. A new connection gets the benefit of the doubt: it counts as
// just heard from.
func newNodeConn(ctx context.Context, addr string, cc *grpc.ClientConn) *nodeConn {
	c := &nodeConn{addr: addr, conn: cc, kv: kvpb.NewInternalClient(cc)}
	c.fwd = &forwarder{client: c.kv, conn: c, ctx: ctx}
	c.heard()
	return c
}

// quiet reports for how long the node has not answered anything.
func (c *nodeConn) quiet() time.Duration { return time.Since(time.Unix(0, c.pong.Load())) }

// heard records an answer from the node: under load the answers to
// forwarded requests are fresher evidence of life than a ping queued
// behind them.
func (c *nodeConn) heard() { c.pong.Store(time.Now().UnixNano()) }

// ready waits until the connection is ready, at most d; false means a
// request sent now would wait for the connection, not for the node.
func (c *nodeConn) ready(ctx context.Context, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		st := c.conn.GetState()
		switch st {
		case connectivity.Ready:
			return true
		case connectivity.Idle:
			c.conn.Connect()
		case connectivity.Shutdown, connectivity.TransientFailure:
			// The last attempt to reach the node failed (refused, reset,
			// timed out): waiting here would only wait for gRPC's
			// backoff. Another replica may take the request now.
			return false
		}
		if !c.conn.WaitForStateChange(ctx, st) {
			return false
		}
	}
}

// errNotConnected says a request was not sent because its node's
// connection was not ready within ConnectWait.
func errNotConnected(node consensus.NodeID, c *nodeConn) error {
	return fmt.Errorf("node %d: %w", node, status.Errorf(codes.Unavailable, "no connection to %s within %s (%s)", c.addr, ConnectWait, c.conn.GetState()))
}
