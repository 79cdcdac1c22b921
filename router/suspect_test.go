package router

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router/routertest"
)

// A request waiting on a node that stops heartbeating (paused, cut off) is
// canceled with errSilent within a fraction of a second, not at the
// request's deadline; one waiting on a node that keeps heartbeating is not.
func TestWatchSilenceCancelsWaitOnSilentNode(t *testing.T) {
	var silentSince atomic.Int64 // UnixNano; 0: heartbeating
	r := &Router{cfg: Config{NodeID: 1, SilentAfter: 100 * time.Millisecond,
		Liveness: func(node consensus.NodeID) (time.Duration, bool) {
			if s := silentSince.Load(); s != 0 && node == 7 {
				return time.Since(time.Unix(0, s)), true
			}
			return 0, true
		}}}
	ctx, stop := r.watchSilence(context.Background(), 7)
	select {
	case <-ctx.Done():
		t.Fatal("canceled while the node heartbeats")
	case <-time.After(400 * time.Millisecond):
	}
	silentSince.Store(time.Now().UnixNano())
	select {
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), errSilent) {
			t.Fatalf("cause %v, want errSilent", context.Cause(ctx))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not canceled 5s after the node went silent")
	}
	stop()
	if !r.suspect(7) {
		t.Fatal("a silent node is not suspect")
	}
	if r.suspect(1) {
		t.Fatal("this node suspects itself")
	}
}

// Suspect nodes (silent, or recently failed to answer) are tried last, and
// a leader hint naming one is not tried first.
func TestSuspectsTriedLast(t *testing.T) {
	r := &Router{cfg: Config{NodeID: 9, SilentAfter: time.Second}}
	desc := &kvpb.Descriptor{Id: 5}
	for n := uint64(1); n <= 4; n++ {
		desc.Replicas = append(desc.Replicas, &kvpb.ReplicaDescriptor{NodeId: n, ReplicaId: n})
	}
	r.leaders.Store(uint64(5), consensus.NodeID(2))
	r.markSuspect(2)
	for range 20 {
		c := r.candidates(desc, true)
		if len(c) != 4 || c[len(c)-1] != 2 {
			t.Fatalf("candidates %v: want the suspect hinted leader 2 last", c)
		}
	}
	r.suspects.Delete(consensus.NodeID(2))
	if c := r.candidates(desc, true); c[0] != 2 {
		t.Fatalf("candidates %v: the hinted leader, no longer suspect, is not first", c)
	}
}

// pingServer answers pings until frozen, then holds them, as a node whose
// process froze holds every request.
type pingServer struct {
	kvpb.UnimplementedInternalServer
	frozen atomic.Bool
}

func (p *pingServer) Ping(ctx context.Context, _ *kvpb.PingRequest) (*kvpb.PingResponse, error) {
	if p.frozen.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &kvpb.PingResponse{}, nil
}

// The router's prober notices within a few intervals that a node it talks
// to stopped answering (frozen, cut off), even when no partition followed
// here is led by it, and a request waiting on that node is given up.
func TestProbeFindsFrozenNode(t *testing.T) {
	ps := &pingServer{}
	r, c := pingedNode(t, ps, Config{NodeID: 1, ProbeInterval: 20 * time.Millisecond})
	time.Sleep(300 * time.Millisecond)
	if r.silent(7) {
		t.Fatalf("a node that answers pings is silent (quiet %s)", c.quiet())
	}
	ctx, stop := r.watchSilence(context.Background(), 7)
	defer stop()
	ps.frozen.Store(true)
	select {
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), errSilent) {
			t.Fatalf("cause %v, want errSilent", context.Cause(ctx))
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("a request waiting on a frozen node was not given up (quiet %s)", c.quiet())
	}
}

// A write is not sent to a node that has gone quiet for half the silence
// threshold (it may have just frozen: once sent, the write's outcome would
// be unknown); the router waits for a sign of life, and gives up (the
// write unsent, free to go elsewhere) if the node turns out silent.
func TestAwaitLifeBeforeSending(t *testing.T) {
	var quiet atomic.Int64 // ns of silence reported for node 7
	r := &Router{cfg: Config{NodeID: 1, SilentAfter: 200 * time.Millisecond,
		Liveness: func(node consensus.NodeID) (time.Duration, bool) { return time.Duration(quiet.Load()), node == 7 }}}
	if !r.awaitLife(context.Background(), 7) {
		t.Fatal("a node heard from just now is not alive")
	}
	quiet.Store(int64(150 * time.Millisecond)) // doubtful
	go func() {
		time.Sleep(100 * time.Millisecond)
		quiet.Store(0) // heard again
	}()
	if !r.awaitLife(context.Background(), 7) {
		t.Fatal("a node heard from again was given up")
	}
	quiet.Store(int64(150 * time.Millisecond))
	go func() {
		time.Sleep(100 * time.Millisecond)
		quiet.Store(int64(time.Second)) // silent
	}()
	if r.awaitLife(context.Background(), 7) {
		t.Fatal("a node that went silent was taken for alive")
	}
}

// A node that still answers on the router's connection is not declared
// silent because its raft traffic lags (an overloaded node is slow, not
// gone: declaring it silent would cancel its writes in flight and turn
// them into TIMEOUT errors); it is only doubtful. Once it stops answering
// too, it is silent.
func TestSilentNeedsEveryDetector(t *testing.T) {
	ps := &pingServer{}
	r, c := pingedNode(t, ps, Config{NodeID: 1, ProbeInterval: 20 * time.Millisecond, SilentAfter: 100 * time.Millisecond,
		Liveness: func(node consensus.NodeID) (time.Duration, bool) { return time.Hour, node == 7 }})
	time.Sleep(200 * time.Millisecond)
	doubtful, silent := r.hearing(7)
	if silent || !doubtful {
		t.Fatalf("raft-quiet node answering pings: doubtful=%v silent=%v, want doubtful only", doubtful, silent)
	}
	ps.frozen.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for !r.silent(7) {
		if time.Now().After(deadline) {
			t.Fatalf("a node quiet on both detectors is not silent (quiet %s)", c.quiet())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pingedNode serves ps over real gRPC on loopback and returns a router
// with cfg whose connection to node 7 is that server, just heard from.
func pingedNode(t *testing.T, ps *pingServer, cfg Config) (*Router, *nodeConn) {
	t.Helper()
	addr, _ := routertest.ServeInternal(t, ps)
	r := New(cfg)
	t.Cleanup(r.Close)
	c := dialTest(t, addr)
	c.heard()
	r.pool.mu.Lock()
	r.pool.mu.conns[7] = c
	r.pool.mu.Unlock()
	return r, c
}
