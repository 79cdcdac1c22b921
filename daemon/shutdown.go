package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
)

// closeMargin is how long Node.Close may run past its graceful deadline
// (shutdown_timeout): the teardown that follows the graceful steps (the
// metadata watch, the etcd client, the embedded etcd, Pebble) runs in it.
const closeMargin = 2 * time.Second

// minStepWait is what a step still gets when it starts after its deadline
// (never past the hard deadline): enough for a step that has nothing to
// wait for to finish instead of being reported abandoned.
const minStepWait = 50 * time.Millisecond

// ErrStepAbandoned reports a shutdown step that did not finish in its time;
// it still runs on a goroutine of its own, and the process is expected to
// exit soon.
var ErrStepAbandoned = errors.New("daemon: shutdown step abandoned")

// closer runs the steps of Node.close, each on a goroutine of its own, and
// waits for each until its deadline. A step still running then is abandoned:
// nothing can stop a call that ignores its context, but Close must return
// (the reliability issue: SIGTERM hung for 24 minutes on a step that waited
// for etcd). Owned by the goroutine running close.
type closer struct {
	logger *slog.Logger
	start  time.Time
	// hard is the deadline no wait goes past: shutdown_timeout (or the
	// caller's deadline) plus closeMargin.
	hard      time.Time
	errs      []error
	abandoned []string
}

// step runs fn and waits for it until by (at least minStepWait from now,
// never past c.hard). It reports whether fn finished; fn's error is
// recorded either way it ends in time.
func (c *closer) step(name string, by time.Time, fn func() error) bool {
	if floor := time.Now().Add(minStepWait); by.Before(floor) {
		by = floor
	}
	if by.After(c.hard) {
		by = c.hard
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	t := time.NewTimer(time.Until(by))
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("%s: %w", name, err))
		}
		return true
	case <-t.C:
	}
	elapsed := time.Since(c.start).Round(time.Millisecond)
	c.logger.Error("shutdown step abandoned", "step", name, "elapsed", elapsed)
	c.errs = append(c.errs, fmt.Errorf("%s: %w after %s", name, ErrStepAbandoned, elapsed))
	c.abandoned = append(c.abandoned, name)
	return false
}

// close takes the node down. Bounds, with T = shutdown_timeout from the
// start of close (or ctx's deadline if sooner) and H = T + closeMargin:
//
//   - the controller's context is canceled first: it resigns (one etcd
//     round trip, at most 2s) while the steps below run;
//   - leadership hand-off: min(5s, shutdown_timeout/3), and T;
//   - CQL drain: in-flight requests get until T - 2*reserve (reserve =
//     min(5s, shutdown_timeout/4)); then connections are cut, and the wait
//     for their goroutines ends at T;
//   - deregistration (lease revoke): 3s, and T - reserve; with etcd gone
//     the lease expires after registration_ttl instead;
//   - then the node's context and the etcd client's context are canceled:
//     every goroutine the node started (reconcile loop, controller,
//     watchdog) and every etcd call made without a caller's deadline ends;
//   - admin gRPC (5s of grace, then cut), HTTP, replicas, consensus engine,
//     peer gRPC (1s of grace), router, the node's goroutines: each until T;
//   - teardown: metadata watch, etcd client, embedded etcd, Pebble: each
//     until H.
//
// A step that does not end by its deadline is abandoned (logged at error
// level, returned in the error) and close moves on, so close returns by H
// plus scheduling delays. Pebble is closed only if every step that uses it
// ended: a replica still running on a closed store would crash the process,
// while a store left open is what a crash leaves, which the node recovers
// from at its next start.
func (n *Node) close(ctx context.Context) error {
	start := time.Now()
	graceEnd := start.Add(n.cfg.ShutdownTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(graceEnd) {
		graceEnd = d
	}
	c := &closer{logger: n.logger, start: start, hard: graceEnd.Add(closeMargin)}
	storeFree := true
	storeStep := func(name string, by time.Time, fn func() error) {
		if !c.step(name, by, fn) {
			storeFree = false
		}
	}

	n.ready.Store(false)
	if n.stopCtrl != nil {
		n.stopCtrl()
	}
	killed := n.killed.Load()
	if !killed {
		notifyStopping()
		// Hand leadership off first, on a budget of its own: a partition
		// that lost its quorum cannot transfer, and waiting for it must
		// not eat the drain's time.
		if n.parts != nil && n.meta != nil {
			handEnd := start.Add(min(5*time.Second, n.cfg.ShutdownTimeout/3))
			storeStep("hand off leadership", graceEnd, func() error {
				handCtx, stop := context.WithDeadline(ctx, handEnd)
				defer stop()
				n.handOffLeadership(handCtx)
				return nil
			})
		}
	}
	// The drain leaves two reserves of the grace: one for deregistration,
	// one for stopping everything else.
	reserve := min(5*time.Second, n.cfg.ShutdownTimeout/4)
	drainEnd := graceEnd.Add(-2 * reserve)
	drainCtx, cancel := context.WithDeadline(ctx, drainEnd)
	defer cancel()
	if killed {
		cancel() // no grace for anything
	}
	if n.cqlSrv != nil {
		storeStep("drain cql", graceEnd, func() error { return n.cqlSrv.Shutdown(drainCtx) })
	} else if n.cqlLn != nil {
		_ = n.cqlLn.Close()
	}
	if n.reg != nil && killed {
		c.step("abandon registration", graceEnd, func() error { n.reg.Abandon(); return nil })
	} else if n.reg != nil {
		deregEnd := graceEnd.Add(-reserve)
		if t := time.Now().Add(3 * time.Second); t.Before(deregEnd) {
			deregEnd = t
		}
		c.step("deregister", graceEnd, func() error {
			regCtx, stop := context.WithDeadline(ctx, deregEnd)
			defer stop()
			return n.reg.Close(regCtx)
		})
	}
	if n.events != nil {
		c.step("stop cql events", graceEnd, func() error { n.events.Close(); return nil })
	}
	if n.cancel != nil {
		n.cancel()
	}
	if n.etcd != nil {
		// The etcd client's own calls (an election's resign) end
		// with the node's (metakv.DialEtcd).
		n.etcd.CancelPending()
	}
	// stopGRPC lets running calls finish for up to grace. Peer streams
	// (raft transport from other nodes) never finish on their own, so the
	// internal server gets a short grace.
	stopGRPC := func(s *grpc.Server, ln net.Listener, grace time.Duration) error {
		if s == nil {
			if ln != nil {
				_ = ln.Close()
			}
			return nil
		}
		done := make(chan struct{})
		go func() { s.GracefulStop(); close(done) }()
		t := time.NewTimer(min(grace, time.Until(graceEnd)))
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			s.Stop()
		case <-drainCtx.Done():
			s.Stop()
		}
		<-done
		return nil
	}
	storeStep("stop admin grpc", graceEnd, func() error { return stopGRPC(n.adminSrv, n.adminLn, 5*time.Second) })
	if n.httpSrv != nil {
		c.step("stop http", graceEnd, func() error {
			httpCtx, stop := context.WithDeadline(ctx, graceEnd)
			defer stop()
			if err := n.httpSrv.Shutdown(httpCtx); err != nil {
				_ = n.httpSrv.Close()
			}
			return nil
		})
	} else if n.httpLn != nil {
		_ = n.httpLn.Close()
	}
	if n.parts != nil {
		storeStep("stop replicas", graceEnd, func() error { n.parts.Close(); return nil })
	}
	if n.cons != nil {
		storeStep("close consensus", graceEnd, n.cons.Close)
	}
	storeStep("stop peer grpc", graceEnd, func() error { return stopGRPC(n.peerSrv, n.peerLn, time.Second) })
	if n.router != nil {
		storeStep("close router", graceEnd, func() error { n.router.Close(); return nil })
	}
	storeStep("join node goroutines", graceEnd, func() error { n.bg.Wait(); return nil })

	// Teardown, in the margin.
	if n.meta != nil {
		c.step("close metadata watch", c.hard, func() error { n.meta.Close(); return nil })
	}
	if n.etcd != nil {
		c.step("close etcd client", c.hard, func() error { _ = n.etcd.Close(); return nil })
	}
	if n.embedded != nil {
		c.step("stop embedded etcd", c.hard, func() error { n.embedded.Close(); return nil })
	}
	if n.store != nil {
		if storeFree {
			c.step("close storage", c.hard, n.store.Close)
		} else {
			n.logger.Error("storage left open: steps that use it were abandoned", "abandoned", c.abandoned)
			c.errs = append(c.errs, fmt.Errorf("close storage: skipped, steps that use it were abandoned: %v", c.abandoned))
		}
	}
	took := time.Since(start).Round(time.Millisecond)
	if len(c.abandoned) > 0 {
		n.logger.Error("node stopped with abandoned steps", "elapsed", took, "abandoned", c.abandoned)
	} else {
		n.logger.Info("node stopped", "elapsed", took)
	}
	return errors.Join(c.errs...)
}
