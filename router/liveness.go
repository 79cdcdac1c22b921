package router

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// Liveness. Two detectors tell whether a node answers: the prober (pings
// on this router's connections, and any other answer on them) and
// Config.Liveness (leader traffic on the raft transport). A node that
// failed to answer in time, or is silent, is suspect: tried last and its
// leader hints ignored, for suspectFor.

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
		if c := r.pool.lookup(node); c != nil {
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
		for _, c := range r.pool.all() {
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
