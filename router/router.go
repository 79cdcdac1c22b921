package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// Config configures a Router.
type Config struct {
	NodeID consensus.NodeID
	Store  *partition.Store
	Meta   *cluster.Meta
	// DialOptions for internal gRPC connections; default insecure (TLS is
	// a configuration option of the daemon).
	DialOptions []grpc.DialOption
	// MaxMessageBytes bounds one forwarded request or response on the wire;
	// it must match the peer server's receive limit (the daemon uses its
	// max frame size plus 1 MiB). Default 64 MiB; gRPC's own default of
	// 4 MiB would fail forwarded reads of large rows.
	MaxMessageBytes int
	// Liveness, when set, tells for how long a node that leads partitions
	// followed on this node has been silent (known=false when it leads
	// none here); the raft engine's LeaderSilence. It lets the router
	// route around a paused or cut-off leader within a fraction of an
	// election timeout instead of waiting on its open connection.
	Liveness func(node consensus.NodeID) (silence time.Duration, known bool)
	// SilentAfter is the silence after which Liveness marks a node
	// suspect. Default 500ms (five heartbeats).
	SilentAfter time.Duration
	// ProbeInterval is how often the router pings each node it has a
	// connection to; a node that answers none for three intervals is
	// suspect. Default 250ms; negative disables the probe.
	ProbeInterval time.Duration
	Logger        *slog.Logger
}

// Router routes requests to partitions. Safe for concurrent use.
type Router struct {
	cfg Config

	leaders sync.Map // partition id → consensus.NodeID hint
	// suspects maps nodes that failed to answer in time (or went silent)
	// to the time until which they are tried last (time.Time).
	suspects sync.Map

	ctx    context.Context // canceled by Close: stops the prober
	cancel context.CancelFunc
	wg     sync.WaitGroup

	connMu sync.Mutex
	conns  map[consensus.NodeID]*nodeConn
}

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

// quiet reports for how long the node has not answered anything.
func (c *nodeConn) quiet() time.Duration { return time.Since(time.Unix(0, c.pong.Load())) }

// heard records an answer from the node: under load the answers to
// forwarded requests are fresher evidence of life than a ping queued
// behind them.
func (c *nodeConn) heard() { c.pong.Store(time.Now().UnixNano()) }

// ConnectWait bounds how long a request waits for a connection to a node
// that is not ready (connecting after the node vanished). gRPC would hold
// the request until the request's deadline; a node whose address no
// longer answers (a killed host: SYNs go unanswered) would then cost the
// whole timeout, although the request never left and another replica
// could take it. A healthy connection is ready at once, and a reconnect on
// a LAN takes milliseconds.
const ConnectWait = time.Second

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

// New returns a router.
func New(cfg Config) *Router {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.DialOptions) == 0 {
		cfg.DialOptions = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 64 << 20
	}
	if cfg.SilentAfter <= 0 {
		cfg.SilentAfter = 500 * time.Millisecond
	}
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = 250 * time.Millisecond
	}
	// Keepalives find a dead or cut-off peer within seconds instead of
	// leaving requests on a silent connection until TCP gives up.
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithKeepaliveParams(KeepaliveParams), grpc.WithConnectParams(ConnectParams),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxMessageBytes), grpc.MaxCallSendMsgSize(cfg.MaxMessageBytes)))
	r := &Router{cfg: cfg, conns: map[consensus.NodeID]*nodeConn{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if cfg.ProbeInterval > 0 {
		r.wg.Go(r.probe)
	}
	return r
}

// probe pings, every ProbeInterval, each node this router has a
// connection to. A node that froze (paused, wedged) or vanished from the
// network keeps its TCP connections open and silent, so requests sent to
// it would wait for their deadline: one that has not answered a ping for
// three intervals is suspect (tried last, its leader hints ignored, and
// requests waiting on it given up; see watchSilence).
func (r *Router) probe() {
	t := time.NewTicker(r.cfg.ProbeInterval)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		r.connMu.Lock()
		conns := make([]*nodeConn, 0, len(r.conns))
		for _, c := range r.conns {
			conns = append(conns, c)
		}
		r.connMu.Unlock()
		for _, c := range conns {
			if !c.probing.CompareAndSwap(false, true) {
				continue // the last ping is still out
			}
			wg.Go(func() {
				defer c.probing.Store(false)
				ctx, cancel := context.WithTimeout(r.ctx, 4*r.cfg.ProbeInterval)
				defer cancel()
				if _, err := c.kv.Ping(ctx, &kvpb.PingRequest{}); err == nil {
					c.heard()
				} else if status.Code(err) == codes.Unimplemented {
					c.heard() // a node of an older version: alive
				}
			})
		}
	}
}

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

// Errors the router returns, matched with errors.Is.
var (
	// ErrNoPartition: the table has no partition for the token (the table
	// was dropped, or its ring is not yet visible).
	ErrNoPartition = errors.New("router: no partition holds the token")
)

// Target says where a request goes.
type Target struct {
	Table uint64
	Token int64
	// Partition, when non-zero, addresses a partition directly (scans);
	// Token is then ignored.
	Partition uint64
	// Leader requires the leader (writes, linearizable reads).
	Leader bool
}

func (r *Router) lookup(t Target) (*kvpb.Descriptor, error) {
	st := r.cfg.Meta.State()
	if t.Partition != 0 {
		if d := st.Partition(t.Partition); d != nil {
			return d, nil
		}
		return nil, fmt.Errorf("%w: partition %d is gone", ErrNoPartition, t.Partition)
	}
	d := st.Ring(t.Table).Lookup(t.Token)
	if d == nil {
		return nil, fmt.Errorf("%w: table %d token %d", ErrNoPartition, t.Table, t.Token)
	}
	return d, nil
}

// suspectFor is how long a node that failed to answer is tried last.
const suspectFor = 3 * time.Second

// errSilent cancels an attempt whose node went silent.
var errSilent = errors.New("router: node went silent")

// suspect reports whether node recently failed to answer in time, or is
// silent now according to Liveness.
func (r *Router) suspect(node consensus.NodeID) bool {
	if node == r.cfg.NodeID {
		return false
	}
	if v, ok := r.suspects.Load(node); ok {
		if time.Now().Before(v.(time.Time)) {
			return true
		}
		r.suspects.Delete(node)
	}
	return r.silent(node)
}

func (r *Router) silent(node consensus.NodeID) bool {
	_, silent := r.hearing(node)
	return silent
}

// hearing judges node from both detectors: the prober (pings, and any
// other answer on this router's connection) and Liveness (leader traffic
// on the raft transport). Doubtful when either has been quiet for half its
// threshold, as for a node that just froze: a write waits for a sign of
// life before it is sent (awaitLife), which costs only a delay. Silent
// only when every detector that knows the node has been quiet for its
// threshold (three ping intervals, SilentAfter), because silence cancels
// requests in flight and makes their outcome unknown: an overloaded node
// whose raft traffic lags (a busy 2-core machine delays it by hundreds of
// milliseconds) but that still answers here is slow, not gone, and its
// writes must not turn into TIMEOUT errors. A frozen node goes quiet on
// both within their thresholds.
func (r *Router) hearing(node consensus.NodeID) (doubtful, silent bool) {
	if node == r.cfg.NodeID {
		return false, false
	}
	known, quietAll := false, true
	if r.cfg.ProbeInterval > 0 {
		r.connMu.Lock()
		c := r.conns[node]
		r.connMu.Unlock()
		if c != nil {
			q := c.quiet()
			known = true
			quietAll = q > 3*r.cfg.ProbeInterval
			doubtful = q > 3*r.cfg.ProbeInterval/2
		}
	}
	if r.cfg.Liveness != nil {
		if d, ok := r.cfg.Liveness(node); ok {
			known = true
			quietAll = quietAll && d > r.cfg.SilentAfter
			doubtful = doubtful || d > r.cfg.SilentAfter/2
		}
	}
	if known && quietAll {
		return true, true
	}
	return doubtful, false
}

// errStillSilent says a write was not sent to a node that went silent
// while the router waited for a sign of life from it.
var errStillSilent = errors.New("router: node went silent before the write was sent")

// awaitLife returns once node is heard from again (true) or found silent
// (false). A write sent to a node that has just frozen has an unknown
// outcome once the router gives up on it; waiting a few hundred
// milliseconds first keeps it unsent, so another replica may take it.
func (r *Router) awaitLife(ctx context.Context, node consensus.NodeID) bool {
	for {
		doubtful, silent := r.hearing(node)
		switch {
		case silent:
			return false
		case !doubtful:
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *Router) markSuspect(node consensus.NodeID) {
	if node != r.cfg.NodeID {
		r.suspects.Store(node, time.Now().Add(suspectFor))
	}
}

// watchSilence cancels ctx with errSilent if node goes silent while an
// attempt waits on it; stop ends the watch.
func (r *Router) watchSilence(ctx context.Context, node consensus.NodeID) (context.Context, func()) {
	if (r.cfg.Liveness == nil && r.cfg.ProbeInterval <= 0) || node == r.cfg.NodeID {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	check := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if r.silent(node) {
			cancel(errSilent)
			return
		}
		t.Reset(r.cfg.SilentAfter / 5)
	}
	mu.Lock()
	t = time.AfterFunc(r.cfg.SilentAfter/5, check)
	mu.Unlock()
	return ctx, func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
		cancel(nil)
	}
}

// candidates orders the nodes to try for desc.
func (r *Router) candidates(desc *kvpb.Descriptor, leader bool) []consensus.NodeID {
	var out []consensus.NodeID
	seen := map[consensus.NodeID]bool{}
	add := func(n consensus.NodeID) {
		if n != 0 && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	isReplica := func(n consensus.NodeID) bool {
		for _, rd := range desc.GetReplicas() {
			if consensus.NodeID(rd.GetNodeId()) == n && !rd.GetLearner() {
				return true
			}
		}
		return false
	}
	if h, ok := r.leaders.Load(desc.GetId()); ok && isReplica(h.(consensus.NodeID)) && !r.suspect(h.(consensus.NodeID)) {
		add(h.(consensus.NodeID))
	}
	if isReplica(r.cfg.NodeID) {
		add(r.cfg.NodeID)
	}
	voters := make([]consensus.NodeID, 0, len(desc.GetReplicas()))
	for _, rd := range desc.GetReplicas() {
		if !rd.GetLearner() {
			voters = append(voters, consensus.NodeID(rd.GetNodeId()))
		}
	}
	// Spread first attempts of different requests when there is no hint.
	rand.Shuffle(len(voters), func(i, j int) { voters[i], voters[j] = voters[j], voters[i] })
	var last []consensus.NodeID
	for _, v := range voters {
		if r.suspect(v) {
			last = append(last, v) // paused or cut off: only if nothing else answers
			continue
		}
		add(v)
	}
	for _, v := range last {
		add(v)
	}
	return out
}

// attempt is one try at one node; outcome says what to do next.
type outcome int

const (
	done         outcome = iota // return the result
	tryNext                     // try another node (not applied)
	refreshRoute                // wait for a newer ring, then look up again
	retryHint                   // retry on the hinted leader
	unavailable                 // this replica knows its group lacks a quorum (not applied)
)

// classify decides what an error means for routing.
func (r *Router) classify(desc *kvpb.Descriptor, node consensus.NodeID, err error, sent bool) outcome {
	switch partition.ErrorCode(err) {
	case kvpb.Error_NOT_LEADER:
		var pe *partition.Error
		if errors.As(err, &pe) && pe.PB.GetLeaderNode() != 0 && consensus.NodeID(pe.PB.GetLeaderNode()) != node {
			r.leaders.Store(desc.GetId(), consensus.NodeID(pe.PB.GetLeaderNode()))
			return retryHint
		}
		r.leaders.Delete(desc.GetId())
		return tryNext
	case kvpb.Error_RANGE_MISMATCH:
		return refreshRoute
	case kvpb.Error_NOT_FOUND:
		return tryNext
	case kvpb.Error_UNAVAILABLE:
		return unavailable
	case kvpb.Error_UNKNOWN:
		if !sent {
			return tryNext
		}
	}
	return done
}

// do runs call against the replicas of the partition the target names,
// retrying as the package documentation describes, until ctx ends.
func (r *Router) do(ctx context.Context, t Target, idempotent bool, call func(ctx context.Context, node consensus.NodeID, desc *kvpb.Descriptor) (sent bool, err error)) error {
	backoff := 5 * time.Millisecond
	var lastErr error
	var lastPart uint64
	// expired turns the end of the request's time into an error that says
	// which partition could not answer and why.
	expired := func() error {
		switch partition.ErrorCode(lastErr) {
		case kvpb.Error_INVALID, kvpb.Error_OVERLOADED, kvpb.Error_PARTITION_TOO_LARGE, kvpb.Error_UNAVAILABLE, kvpb.Error_TIMEOUT:
			return lastErr
		case kvpb.Error_NOT_LEADER:
			return partition.Errorf(kvpb.Error_UNAVAILABLE, "partition %d has no leader: fewer than a quorum of its replicas are reachable (%v)", lastPart, lastErr)
		}
		if lastErr == nil {
			lastErr = ctx.Err()
		}
		return partition.Errorf(kvpb.Error_TIMEOUT, "partition %d did not answer within the request timeout: %v", lastPart, lastErr)
	}
	for {
		if ctx.Err() != nil {
			return expired()
		}
		desc, err := r.lookup(t)
		if err != nil {
			lastErr = err
			if !r.waitMeta(ctx, backoff) {
				return lastErr
			}
			backoff = min(2*backoff, 200*time.Millisecond)
			continue
		}
		lastPart = desc.GetId()
		cands := r.candidates(desc, t.Leader)
		tried := map[consensus.NodeID]int{}
		// unavail is the last UNAVAILABLE answer of this round; other
		// says some replica answered anything else (a leader hint, a
		// replica not found), which leaves hope that another round works.
		var unavail error
		other := false
		unavailNodes := map[consensus.NodeID]bool{}
		var hints []consensus.NodeID
	nodes:
		for len(cands) > 0 {
			node := cands[0]
			cands = cands[1:]
			if tried[node] >= 2 {
				continue
			}
			tried[node]++
			callCtx, cancel := ctx, context.CancelFunc(func() {})
			if idempotent && len(cands) > 0 {
				// A read may try another replica when this one is slow to
				// answer (paused, cut off): give it part of the time left.
				if dl, ok := ctx.Deadline(); ok {
					callCtx, cancel = context.WithTimeout(ctx, time.Until(dl)/2)
				}
			}
			callCtx, stopWatch := r.watchSilence(callCtx, node)
			sent, err := call(callCtx, node, desc)
			wentSilent := errors.Is(context.Cause(callCtx), errSilent)
			stopWatch()
			cancel()
			if err == nil {
				if t.Leader {
					r.leaders.Store(desc.GetId(), node)
				}
				r.suspects.Delete(node)
				return nil
			}
			if wentSilent {
				// The node stopped sending heartbeats while the request
				// waited on it (paused, cut off, wedged): do not wait for
				// the request's deadline. A write may have reached it and
				// may yet commit, so its outcome is unknown; a read just
				// goes elsewhere.
				r.markSuspect(node)
				if h, ok := r.leaders.Load(desc.GetId()); ok && h.(consensus.NodeID) == node {
					r.leaders.Delete(desc.GetId())
				}
				if sent && !idempotent {
					return &inFlightError{partition.Errorf(kvpb.Error_TIMEOUT, "partition %d: node %d went silent while the write was in flight, so it may or may not have been applied", desc.GetId(), node)}
				}
				lastErr = fmt.Errorf("node %d went silent: %w", node, err)
				continue
			}
			lastErr = err
			if transportFailure(err) && (sent || !errors.Is(err, context.DeadlineExceeded)) {
				r.markSuspect(node)
			}
			if h, ok := r.leaders.Load(desc.GetId()); ok && h.(consensus.NodeID) == node && transportFailure(err) {
				// The hinted leader did not answer: forget the hint so
				// the next request (a driver retry) asks another replica
				// instead of waiting on the same node again.
				r.leaders.Delete(desc.GetId())
			}
			if ctx.Err() != nil {
				return expired()
			}
			outcome := r.classify(desc, node, err, sent && !idempotent)
			switch {
			case outcome == unavailable:
				unavailNodes[node] = true
			case outcome == retryHint:
				// A follower's hint may name a leader that has just
				// refused for lack of a quorum (the follower has not
				// noticed yet): that is no reason to keep trying.
				if h, ok := r.leaders.Load(desc.GetId()); ok {
					hints = append(hints, h.(consensus.NodeID))
				}
			case sent:
				other = true
			}
			switch outcome {
			case done:
				return err
			case unavailable:
				// The replica refused before proposing: its group cannot
				// reach a quorum as far as it knows. Another replica may
				// know better (it may have just restarted), so ask the rest.
				unavail = err
			case retryHint:
				if h, ok := r.leaders.Load(desc.GetId()); ok && !r.suspect(h.(consensus.NodeID)) {
					cands = append([]consensus.NodeID{h.(consensus.NodeID)}, cands...)
				}
			case refreshRoute:
				break nodes
			}
		}
		for _, h := range hints {
			other = other || !unavailNodes[h]
		}
		if unavail != nil && !other {
			// Every replica that answered said its group lacks a quorum,
			// and the rest could not be reached: fail now, as Cassandra's
			// Unavailable, instead of waiting out the request's time.
			return unavail
		}
		// Every candidate failed retryably: leadership is moving or the
		// ring changed. Back off a little and look again.
		if !r.waitMeta(ctx, backoff) {
			return expired()
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// waitMeta waits for a metadata change or d, whichever first; false when
// ctx ended.
func (r *Router) waitMeta(ctx context.Context, d time.Duration) bool {
	ch, unsub := r.cfg.Meta.Subscribe()
	defer unsub()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-ch:
	case <-t.C:
	}
	return true
}

// Write sends a write to the leader of the partition holding t.Token (or
// t.Partition) and fills in the request's partition id and generation.
func (r *Router) Write(ctx context.Context, t Target, req *kvpb.WriteRequest) (*kvpb.WriteResponse, error) {
	t.Leader = true
	var resp *kvpb.WriteResponse
	err := r.do(ctx, t, false, func(ctx context.Context, node consensus.NodeID, desc *kvpb.Descriptor) (bool, error) {
		req.PartitionId, req.Generation, req.TableId = desc.GetId(), desc.GetGeneration(), desc.GetTableId()
		var err error
		var sent bool
		resp, sent, err = r.write(ctx, node, req)
		return sent, err
	})
	return resp, err
}

// Read sends a read to the partition's leader (t.Leader or a linearizable
// request) or to any replica, preferring this node.
func (r *Router) Read(ctx context.Context, t Target, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	t.Leader = t.Leader || req.GetLinearizable()
	var resp *kvpb.ReadResponse
	err := r.do(ctx, t, true, func(ctx context.Context, node consensus.NodeID, desc *kvpb.Descriptor) (bool, error) {
		req.PartitionId, req.Generation, req.TableId = desc.GetId(), desc.GetGeneration(), desc.GetTableId()
		var err error
		var sent bool
		resp, sent, err = r.read(ctx, node, req)
		return sent, err
	})
	return resp, err
}

func (r *Router) write(ctx context.Context, node consensus.NodeID, req *kvpb.WriteRequest) (*kvpb.WriteResponse, bool, error) {
	if node == r.cfg.NodeID {
		rep, ok := r.cfg.Store.Replica(req.GetPartitionId())
		if !ok {
			return nil, false, partition.Errorf(kvpb.Error_NOT_FOUND, "no replica of partition %d on node %d", req.GetPartitionId(), node)
		}
		resp, err := rep.Write(ctx, req)
		return resp, true, err
	}
	c, err := r.conn(node)
	if err != nil {
		return nil, false, err
	}
	if !c.ready(ctx, ConnectWait) {
		return nil, false, errNotConnected(node, c)
	}
	if !r.awaitLife(ctx, node) {
		r.markSuspect(node)
		return nil, false, fmt.Errorf("node %d: %w", node, status.Error(codes.Unavailable, errStillSilent.Error()))
	}
	resp, sent, err := r.forwardWrite(ctx, c, req)
	if err != nil {
		if !sent {
			// Still queued when the stream broke or the caller gave up:
			// it never left, so another replica may take it.
			return nil, false, fmt.Errorf("node %d: %w", node, err)
		}
		// The write may have reached the node and be committed whatever
		// the status says: a connection that breaks mid-call also reports
		// Unavailable. Retrying it elsewhere could apply a list append or
		// counter twice, or answer an LWT that did apply with [applied] =
		// false.
		return nil, true, inFlight(req.GetPartitionId(), node, fmt.Errorf("node %d: %w", node, err))
	}
	if resp.GetError() != nil {
		return nil, true, partition.FromPB(resp.GetError())
	}
	return resp, true, nil
}

// read is write's twin for reads; sent reports whether the request left
// (reads are idempotent, so it only matters for telling an unreachable
// node from one that answered).
func (r *Router) read(ctx context.Context, node consensus.NodeID, req *kvpb.ReadRequest) (*kvpb.ReadResponse, bool, error) {
	if node == r.cfg.NodeID {
		rep, ok := r.cfg.Store.Replica(req.GetPartitionId())
		if !ok {
			return nil, true, partition.Errorf(kvpb.Error_NOT_FOUND, "no replica of partition %d on node %d", req.GetPartitionId(), node)
		}
		resp, err := rep.Read(ctx, req)
		return resp, true, err
	}
	c, err := r.conn(node)
	if err != nil {
		return nil, false, err
	}
	if !c.ready(ctx, ConnectWait) {
		return nil, false, errNotConnected(node, c)
	}
	resp, err := r.forwardRead(ctx, c, req)
	if err != nil {
		return nil, true, fmt.Errorf("node %d: %w", node, err)
	}
	if resp.GetError() != nil {
		return nil, true, partition.FromPB(resp.GetError())
	}
	return resp, true, nil
}

// transportFailure reports an error that says nothing about the partition,
// only that its node did not answer in time or could not be reached. A
// TIMEOUT the node itself answered (its group lost its quorum with the
// write in flight) is not one: the node is alive and still the best guess
// of the leader.
func transportFailure(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var inf *inFlightError
	if errors.As(err, &inf) {
		return true
	}
	// The status may be err itself or one it wraps ("node N: %w").
	// status.FromError(nil) reports OK, so nil is skipped.
	for e := err; e != nil; e = errors.Unwrap(e) {
		if s, ok := status.FromError(e); ok && s.Code() != codes.Unknown {
			return s.Code() == codes.Unavailable || s.Code() == codes.DeadlineExceeded
		}
	}
	return false
}

// inFlightError is the TIMEOUT of a write whose node failed while the write
// was in flight.
type inFlightError struct{ pe *partition.Error }

func (e *inFlightError) Error() string { return e.pe.Error() }
func (e *inFlightError) Unwrap() error { return e.pe }

// inFlight turns the failure of a node that had received a write into the
// timeout Cassandra gives when a write's outcome is unknown; the client
// may retry an idempotent statement.
func inFlight(part uint64, node consensus.NodeID, err error) error {
	if partition.ErrorCode(err) != kvpb.Error_UNKNOWN || !transportFailure(err) {
		return err
	}
	return &inFlightError{partition.Errorf(kvpb.Error_TIMEOUT, "partition %d: node %d failed while the write was in flight, so it may or may not have been applied: %v", part, node, err)}
}

// sentRPC reports whether a failed admin RPC may have reached the server.
// Admin calls (membership changes, leader transfers, splits) are checked
// again by the controller against the partition's descriptor, so an
// Unavailable is taken as not sent and retried elsewhere; writes never
// are (see write).
func sentRPC(err error) bool {
	s, ok := status.FromError(err)
	if !ok {
		return true
	}
	// Unavailable before the stream starts means the connection could not
	// be made; the request never left.
	return s.Code() != codes.Unavailable
}

func (r *Router) conn(node consensus.NodeID) (*nodeConn, error) {
	info := r.cfg.Meta.State().Nodes[uint64(node)]
	r.connMu.Lock()
	defer r.connMu.Unlock()
	if info == nil {
		// A node whose registration lease lapsed while it kept serving
		// (its etcd member paused) registers again within seconds: keep
		// using the connection already open to it. One that really died
		// is found by the connection and the silence detectors.
		if c, ok := r.conns[node]; ok {
			return c, nil
		}
		return nil, partition.Errorf(kvpb.Error_UNKNOWN, "node %d is not registered (down?)", node)
	}
	if c, ok := r.conns[node]; ok && c.addr == info.PeerAddr {
		return c, nil
	} else if ok {
		_ = c.conn.Close()
	}
	cc, err := grpc.NewClient(info.PeerAddr, r.cfg.DialOptions...)
	if err != nil {
		return nil, fmt.Errorf("dial node %d at %s: %w", node, info.PeerAddr, err)
	}
	c := &nodeConn{addr: info.PeerAddr, conn: cc, kv: kvpb.NewInternalClient(cc)}
	c.fwd = &forwarder{client: c.kv, conn: c, ctx: r.ctx}
	c.pong.Store(time.Now().UnixNano()) // a new connection gets the benefit of the doubt
	r.conns[node] = c
	return c, nil
}

// Close closes connections. Safe to call twice.
func (r *Router) Close() {
	r.cancel()
	r.wg.Wait()
	r.connMu.Lock()
	defer r.connMu.Unlock()
	for id, c := range r.conns {
		_ = c.conn.Close()
		delete(r.conns, id)
	}
}

// Ping implements kvpb.InternalServer.
func (s *Server) Ping(context.Context, *kvpb.PingRequest) (*kvpb.PingResponse, error) {
	return &kvpb.PingResponse{}, nil
}

// Server serves the internal service for requests forwarded to this node.
type Server struct {
	kvpb.UnimplementedInternalServer
	store *partition.Store
}

// NewServer returns the internal service over a node's store.
func NewServer(store *partition.Store) *Server { return &Server{store: store} }

// Write implements kvpb.InternalServer.
func (s *Server) Write(ctx context.Context, req *kvpb.WriteRequest) (*kvpb.WriteResponse, error) {
	rep, ok := s.store.Replica(req.GetPartitionId())
	if !ok {
		return &kvpb.WriteResponse{Error: &kvpb.Error{Code: kvpb.Error_NOT_FOUND, Message: fmt.Sprintf("no replica of partition %d here", req.GetPartitionId())}}, nil
	}
	resp, err := rep.Write(ctx, req)
	if err != nil {
		return &kvpb.WriteResponse{Error: partition.AsPB(err)}, nil
	}
	return resp, nil
}

// Read implements kvpb.InternalServer.
func (s *Server) Read(ctx context.Context, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	rep, ok := s.store.Replica(req.GetPartitionId())
	if !ok {
		return &kvpb.ReadResponse{Error: &kvpb.Error{Code: kvpb.Error_NOT_FOUND, Message: fmt.Sprintf("no replica of partition %d here", req.GetPartitionId())}}, nil
	}
	resp, err := rep.Read(ctx, req)
	if err != nil {
		return &kvpb.ReadResponse{Error: partition.AsPB(err)}, nil
	}
	return resp, nil
}

// ReplicaStatus implements kvpb.InternalServer.
func (s *Server) ReplicaStatus(ctx context.Context, req *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error) {
	resp, err := s.store.Status(req.GetPartitionIds(), req.GetStats())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "replica status: %v", err)
	}
	return resp, nil
}

// ReplicaStatus asks a node (this one in process) for its replicas.
func (r *Router) ReplicaStatus(ctx context.Context, node consensus.NodeID, req *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error) {
	if node == r.cfg.NodeID {
		return r.cfg.Store.Status(req.GetPartitionIds(), req.GetStats())
	}
	c, err := r.conn(node)
	if err != nil {
		return nil, err
	}
	return c.kv.ReplicaStatus(ctx, req)
}

// ChangeReplicas implements kvpb.InternalServer.
func (s *Server) ChangeReplicas(ctx context.Context, req *kvpb.ChangeReplicasRequest) (*kvpb.ChangeReplicasResponse, error) {
	rep, ok := s.store.Replica(req.GetPartitionId())
	if !ok {
		return &kvpb.ChangeReplicasResponse{Error: notHere(req.GetPartitionId())}, nil
	}
	d, err := rep.ChangeReplicas(ctx, req.GetChanges())
	if err != nil {
		return &kvpb.ChangeReplicasResponse{Error: partition.AsPB(err)}, nil
	}
	return &kvpb.ChangeReplicasResponse{Desc: d}, nil
}

// TransferLeader implements kvpb.InternalServer.
func (s *Server) TransferLeader(ctx context.Context, req *kvpb.TransferLeaderRequest) (*kvpb.TransferLeaderResponse, error) {
	rep, ok := s.store.Replica(req.GetPartitionId())
	if !ok {
		return &kvpb.TransferLeaderResponse{Error: notHere(req.GetPartitionId())}, nil
	}
	if err := rep.TransferLeader(ctx, consensus.NodeID(req.GetTargetNode())); err != nil {
		return &kvpb.TransferLeaderResponse{Error: partition.AsPB(err)}, nil
	}
	return &kvpb.TransferLeaderResponse{}, nil
}

// Split implements kvpb.InternalServer.
func (s *Server) Split(ctx context.Context, req *kvpb.SplitRequest) (*kvpb.SplitResponse, error) {
	rep, ok := s.store.Replica(req.GetPartitionId())
	if !ok {
		return &kvpb.SplitResponse{Error: notHere(req.GetPartitionId())}, nil
	}
	l, r, err := rep.Split(ctx, req)
	if err != nil {
		return &kvpb.SplitResponse{Error: partition.AsPB(err)}, nil
	}
	return &kvpb.SplitResponse{Left: l, Right: r}, nil
}

func notHere(id uint64) *kvpb.Error {
	return &kvpb.Error{Code: kvpb.Error_NOT_FOUND, Message: fmt.Sprintf("no replica of partition %d here", id)}
}

// leaderCall runs call on the node that leads partition id, following
// leadership hints; call returns the partition error of the response.
func (r *Router) leaderCall(ctx context.Context, id uint64, call func(ctx context.Context, node consensus.NodeID) error) error {
	return r.do(ctx, Target{Partition: id, Leader: true}, false, func(ctx context.Context, node consensus.NodeID, _ *kvpb.Descriptor) (bool, error) {
		if node != r.cfg.NodeID && r.cfg.Meta.State().Nodes[uint64(node)] == nil {
			// Nothing was sent, so another replica may be asked. Without
			// this, a leader hint naming a dead node made every call fail
			// at once (the error looked "sent") and the hint was never
			// replaced: repairs of partitions the dead node led retried
			// forever.
			return false, partition.Errorf(kvpb.Error_UNKNOWN, "node %d is not registered (down?)", node)
		}
		err := call(ctx, node)
		sent := true
		if err != nil && partition.ErrorCode(err) == kvpb.Error_UNKNOWN {
			sent = sentRPC(err)
		}
		return sent, err
	})
}

// ChangeReplicas asks a partition's leader to change its membership.
func (r *Router) ChangeReplicas(ctx context.Context, id uint64, changes []*kvpb.ReplicaChange) (*kvpb.Descriptor, error) {
	var out *kvpb.Descriptor
	err := r.leaderCall(ctx, id, func(ctx context.Context, node consensus.NodeID) error {
		if node == r.cfg.NodeID {
			rep, ok := r.cfg.Store.Replica(id)
			if !ok {
				return partition.FromPB(notHere(id))
			}
			d, err := rep.ChangeReplicas(ctx, changes)
			out = d
			return err
		}
		c, err := r.conn(node)
		if err != nil {
			return err
		}
		resp, err := c.kv.ChangeReplicas(ctx, &kvpb.ChangeReplicasRequest{PartitionId: id, Changes: changes})
		if err != nil {
			return err
		}
		out = resp.GetDesc()
		return partition.FromPB(resp.GetError())
	})
	return out, err
}

// TransferLeader asks a partition's leader to hand leadership to target.
func (r *Router) TransferLeader(ctx context.Context, id uint64, target consensus.NodeID) error {
	return r.leaderCall(ctx, id, func(ctx context.Context, node consensus.NodeID) error {
		if node == r.cfg.NodeID {
			rep, ok := r.cfg.Store.Replica(id)
			if !ok {
				return partition.FromPB(notHere(id))
			}
			return rep.TransferLeader(ctx, target)
		}
		c, err := r.conn(node)
		if err != nil {
			return err
		}
		resp, err := c.kv.TransferLeader(ctx, &kvpb.TransferLeaderRequest{PartitionId: id, TargetNode: uint64(target)})
		if err != nil {
			return err
		}
		return partition.FromPB(resp.GetError())
	})
}

// Split asks a partition's leader to split it.
func (r *Router) Split(ctx context.Context, req *kvpb.SplitRequest) (*kvpb.Descriptor, *kvpb.Descriptor, error) {
	var left, right *kvpb.Descriptor
	err := r.leaderCall(ctx, req.GetPartitionId(), func(ctx context.Context, node consensus.NodeID) error {
		if node == r.cfg.NodeID {
			rep, ok := r.cfg.Store.Replica(req.GetPartitionId())
			if !ok {
				return partition.FromPB(notHere(req.GetPartitionId()))
			}
			var err error
			left, right, err = rep.Split(ctx, req)
			return err
		}
		c, err := r.conn(node)
		if err != nil {
			return err
		}
		resp, err := c.kv.Split(ctx, req)
		if err != nil {
			return err
		}
		left, right = resp.GetLeft(), resp.GetRight()
		return partition.FromPB(resp.GetError())
	})
	return left, right, err
}

// PartitionDetail implements kvpb.InternalServer.
func (s *Server) PartitionDetail(ctx context.Context, req *kvpb.PartitionDetailRequest) (*kvpb.PartitionDetailResponse, error) {
	rep, ok := s.store.Replica(req.GetPartitionId())
	if !ok {
		return &kvpb.PartitionDetailResponse{Error: notHere(req.GetPartitionId())}, nil
	}
	resp, err := rep.Detail(int(req.GetTop()))
	if err != nil {
		return &kvpb.PartitionDetailResponse{Error: partition.AsPB(err)}, nil
	}
	return resp, nil
}

// PartitionDetail inspects a partition on one of its replicas (the leader
// when reachable, as its data is the most recent).
func (r *Router) PartitionDetail(ctx context.Context, id uint64, top int) (*kvpb.PartitionDetailResponse, error) {
	var out *kvpb.PartitionDetailResponse
	err := r.leaderCall(ctx, id, func(ctx context.Context, node consensus.NodeID) error {
		if node == r.cfg.NodeID {
			rep, ok := r.cfg.Store.Replica(id)
			if !ok {
				return partition.FromPB(notHere(id))
			}
			var err error
			out, err = rep.Detail(top)
			return err
		}
		c, err := r.conn(node)
		if err != nil {
			return err
		}
		resp, err := c.kv.PartitionDetail(ctx, &kvpb.PartitionDetailRequest{PartitionId: id, Top: uint32(top)})
		if err != nil {
			return err
		}
		out = resp
		return partition.FromPB(resp.GetError())
	})
	return out, err
}
