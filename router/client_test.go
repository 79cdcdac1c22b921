package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/router/routertest"
)

func writeCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A partition on this node is served in process: the write and the read
// reach the store without any connection.
func TestLocalPathNeedsNoConnection(t *testing.T) {
	m := newTestMeta()
	n1 := startNode(t, m, 1, Config{})
	n1.Bootstrap(t, whole(100, 1))
	m.setRing(whole(100, 1))
	pk := []byte("alpha")
	if err := writeValue(writeCtx(t), n1.router, pk, "v1"); err != nil {
		t.Fatalf("local write: %v", err)
	}
	if got := n1.storeValue(t, 100, pk); got != "v1" {
		t.Fatalf("store holds %q after the write, want v1", got)
	}
	if got := readValue(t, n1.router, pk); got != "v1" {
		t.Fatalf("local read %q, want v1", got)
	}
	if h := n1.router.hint(100); h != 1 {
		t.Fatalf("leader hint %d after a write served here, want 1", h)
	}
	if conns := n1.router.pool.all(); len(conns) != 0 {
		t.Fatalf("%d connections opened for requests this node serves", len(conns))
	}
}

// A partition on another node is reached over the internal service; every
// request shares one pooled connection and one Forward stream, and each
// caller gets its own answer.
func TestRemotePathSharesOneConnection(t *testing.T) {
	m, n1, n2 := twoNodes(t, Config{})
	m.setRing(whole(100, 1))
	ctx := writeCtx(t)
	first := []byte("first")
	if err := writeValue(ctx, n2.router, first, "1"); err != nil {
		t.Fatal(err)
	}
	conn := n2.router.pool.lookup(1)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Go(func() {
			pk := fmt.Appendf(nil, "key-%d", i)
			if err := writeValue(ctx, n2.router, pk, fmt.Sprint(i)); err != nil {
				errs <- fmt.Errorf("write %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range 32 {
		pk := fmt.Appendf(nil, "key-%d", i)
		if got := n1.storeValue(t, 100, pk); got != fmt.Sprint(i) {
			t.Fatalf("node 1 holds %q for key %d", got, i)
		}
		if got := readValue(t, n2.router, pk); got != fmt.Sprint(i) {
			t.Fatalf("remote read of key %d: %q", i, got)
		}
	}
	conns := n2.router.pool.all()
	if conn == nil || len(conns) != 1 || conns[0] != conn {
		t.Fatalf("%d connections after 65 requests to one node, want the first request's one", len(conns))
	}
	conns[0].fwd.mu.Lock()
	open := conns[0].fwd.cur != nil
	conns[0].fwd.mu.Unlock()
	if !open {
		t.Fatal("no Forward stream open: reads and writes did not travel on the stream")
	}
}

// A replica that is not where the routing copy says (moved away, not
// started yet) answers NOT_FOUND, locally or remotely, and the request
// goes to the next replica; a write that this node's store refused was
// never run, so it is not ambiguous.
func TestReplicaMovedAwayTriesNext(t *testing.T) {
	m, n1, n2 := twoNodes(t, Config{})
	startNode(t, m, 3, Config{})
	// The routing copy lists 2 (this router's node: in process) and 3
	// (the hinted leader: remote), which hold nothing.
	m.setRing(whole(100, 3, 2, 1))
	for i, kind := range []string{"write", "read"} {
		t.Run(kind, func(t *testing.T) {
			n2.router.leaders.Store(uint64(100), consensus.NodeID(3))
			pk := fmt.Appendf(nil, "moved-%d", i)
			if kind == "write" {
				if err := writeValue(writeCtx(t), n2.router, pk, "w"); err != nil {
					t.Fatal(err)
				}
				if got := n1.storeValue(t, 100, pk); got != "w" {
					t.Fatalf("node 1 holds %q, want w", got)
				}
			} else if got := readValue(t, n2.router, pk); got != "" {
				t.Fatalf("read %q of an absent row", got)
			}
			if h := n2.router.hint(100); kind == "write" && h != 1 {
				t.Fatalf("leader hint %d after node 1 served the write, want 1", h)
			}
		})
	}
}

// A node that cannot be reached before the request is sent (its address
// refuses connections, or it is not registered and no connection is open)
// is skipped at once for another replica, even for a write, and becomes
// suspect; its leader hint is forgotten.
func TestUnreachableNodeTriesNext(t *testing.T) {
	for _, tc := range []struct {
		name string
		down func(t *testing.T, m *testMeta)
	}{
		{"refused", func(t *testing.T, m *testMeta) { m.register(3, routertest.RefusedAddr(t)) }},
		{"unregistered", func(t *testing.T, m *testMeta) { m.register(3, "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, n1, n2 := twoNodes(t, Config{})
			m.setRing(whole(100, 3, 1))
			tc.down(t, m)
			n2.router.leaders.Store(uint64(100), consensus.NodeID(3))
			pk := []byte("reach")
			start := time.Now()
			if err := writeValue(writeCtx(t), n2.router, pk, "x"); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("write took %s: waited on the unreachable node", d)
			}
			if got := n1.storeValue(t, 100, pk); got != "x" {
				t.Fatalf("node 1 holds %q, want x", got)
			}
			if h := n2.router.hint(100); h != 1 {
				t.Fatalf("leader hint %d, want 1", h)
			}
			if tc.name == "refused" && !n2.router.suspect(3) {
				t.Fatal("a node that refused the connection is not suspect")
			}
			n2.router.leaders.Store(uint64(100), consensus.NodeID(3))
			if got := readValue(t, n2.router, pk); got != "x" {
				t.Fatalf("read %q, want x", got)
			}
		})
	}
}

// errHandler answers every forwarded request with a partition error.
func errHandler(code kvpb.Error_Code, leader consensus.NodeID, calls *atomic.Int64) func(context.Context, *kvpb.ForwardRequest) *kvpb.ForwardResponse {
	return func(_ context.Context, req *kvpb.ForwardRequest) *kvpb.ForwardResponse {
		calls.Add(1)
		e := &kvpb.Error{Code: code, Message: "test answer", LeaderNode: uint64(leader)}
		if req.GetWrite() != nil {
			return &kvpb.ForwardResponse{Id: req.GetId(), Response: &kvpb.ForwardResponse_Write{Write: &kvpb.WriteResponse{Error: e}}}
		}
		return &kvpb.ForwardResponse{Id: req.GetId(), Response: &kvpb.ForwardResponse_Read{Read: &kvpb.ReadResponse{Error: e}}}
	}
}

// A follower that answers NOT_LEADER naming the leader sends the request
// there; the hint is cached, so the next request asks the leader first.
func TestNotLeaderFollowsHint(t *testing.T) {
	m, n1, n2 := twoNodes(t, Config{})
	var calls atomic.Int64
	addr, _ := servedServer(t, &forwardServer{handle: errHandler(kvpb.Error_NOT_LEADER, 1, &calls)})
	m.register(3, addr)
	m.setRing(whole(100, 3, 1))
	n2.router.leaders.Store(uint64(100), consensus.NodeID(3))
	for i := range 3 {
		pk := fmt.Appendf(nil, "led-%d", i)
		if err := writeValue(writeCtx(t), n2.router, pk, "v"); err != nil {
			t.Fatal(err)
		}
		if got := n1.storeValue(t, 100, pk); got != "v" {
			t.Fatalf("leader holds %q, want v", got)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the follower was asked %d times, want once: the hint it gave was not kept", n)
	}
	if h := n2.router.hint(100); h != 1 {
		t.Fatalf("leader hint %d, want 1", h)
	}
}

// When every replica that answers says its group lacks a quorum, and the
// only other answer is a hint naming one of them, the request fails at
// once as UNAVAILABLE instead of waiting out its time.
func TestUnavailableFailsFast(t *testing.T) {
	m := newTestMeta()
	n2 := startNode(t, m, 2, Config{})
	var unavail, follower atomic.Int64
	a3, _ := servedServer(t, &forwardServer{handle: errHandler(kvpb.Error_UNAVAILABLE, 0, &unavail)})
	a4, _ := servedServer(t, &forwardServer{handle: errHandler(kvpb.Error_NOT_LEADER, 3, &follower)})
	m.register(3, a3)
	m.register(4, a4)
	m.setRing(whole(100, 3, 4))
	for _, kind := range []string{"write", "read"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			pk := []byte("uv")
			var err error
			if kind == "write" {
				err = writeValue(ctx, n2.router, pk, "v")
			} else {
				_, err = n2.router.Read(ctx, Target{Table: table, Token: ring.Token(pk), Leader: true}, readReq(pk))
			}
			if partition.ErrorCode(err) != kvpb.Error_UNAVAILABLE {
				t.Fatalf("%s: %v, want UNAVAILABLE", kind, err)
			}
			if ctx.Err() != nil {
				t.Fatalf("%s waited out its time instead of failing at once", kind)
			}
		})
	}
}

// A write that reached a node whose connection then broke has an unknown
// outcome: it fails as a TIMEOUT saying so, and is not sent to another
// replica (a list append or counter would apply twice). A read in the
// same situation is retried on another replica.
func TestWriteInFlightIsNotRetried(t *testing.T) {
	for _, kind := range []string{"write", "read"} {
		t.Run(kind, func(t *testing.T) {
			m, n1, n2 := twoNodes(t, Config{})
			received := make(chan struct{}, 1)
			addr, srv := servedServer(t, &forwardServer{handle: func(ctx context.Context, req *kvpb.ForwardRequest) *kvpb.ForwardResponse {
				received <- struct{}{}
				<-ctx.Done() // the node dies with the request
				return &kvpb.ForwardResponse{Id: req.GetId(), Failure: "gone"}
			}})
			m.register(3, addr)
			m.setRing(whole(100, 3, 1))
			n2.router.leaders.Store(uint64(100), consensus.NodeID(3))
			go func() {
				<-received
				srv.Stop()
			}()
			pk := []byte("ambiguous")
			ctx := writeCtx(t)
			if kind == "read" {
				if _, err := n2.router.Read(ctx, Target{Table: table, Token: ring.Token(pk), Leader: true}, readReq(pk)); err != nil {
					t.Fatalf("read after its first node died: %v, want an answer from node 1", err)
				}
				return
			}
			err := writeValue(ctx, n2.router, pk, "once")
			var inf *inFlightError
			if partition.ErrorCode(err) != kvpb.Error_TIMEOUT || !errors.As(err, &inf) || !strings.Contains(err.Error(), "may or may not have been applied") {
				t.Fatalf("write whose node died with it in flight: %v, want an in-flight TIMEOUT", err)
			}
			if ctx.Err() != nil {
				t.Fatal("the write waited out its deadline")
			}
			if got := n1.storeValue(t, 100, pk); got != "" {
				t.Fatalf("the ambiguous write was retried on node 1 (it holds %q)", got)
			}
			if h := n2.router.hint(100); h == 3 {
				t.Fatal("the hint still names the node that failed")
			}
		})
	}
}

// A node that goes silent (Liveness) while a write waits on it ends the
// wait within a fraction of a second: the write, which may commit there,
// fails as in flight and is not retried; a read goes to another replica.
func TestSilentNodeMidRequest(t *testing.T) {
	for _, kind := range []string{"write", "read"} {
		t.Run(kind, func(t *testing.T) {
			var silent atomic.Bool
			cfg := Config{SilentAfter: 50 * time.Millisecond, Liveness: func(node consensus.NodeID) (time.Duration, bool) {
				if node == 3 && silent.Load() {
					return time.Hour, true
				}
				return 0, node == 3
			}}
			m, n1, n2 := twoNodes(t, cfg)
			addr, _ := servedServer(t, &forwardServer{handle: func(ctx context.Context, req *kvpb.ForwardRequest) *kvpb.ForwardResponse {
				silent.Store(true) // the node freezes with the request
				<-ctx.Done()
				return &kvpb.ForwardResponse{Id: req.GetId(), Failure: "frozen"}
			}})
			m.register(3, addr)
			m.setRing(whole(100, 3, 1))
			n2.router.leaders.Store(uint64(100), consensus.NodeID(3))
			ctx := writeCtx(t)
			pk := []byte("frozen")
			if kind == "read" {
				if got := readValue(t, n2.router, pk); got != "" {
					t.Fatalf("read %q of an absent row", got)
				}
			} else {
				err := writeValue(ctx, n2.router, pk, "v")
				var inf *inFlightError
				if !errors.As(err, &inf) || !strings.Contains(err.Error(), "went silent") {
					t.Fatalf("write on a node that froze: %v, want in flight, went silent", err)
				}
				if ctx.Err() != nil {
					t.Fatal("the write waited out its deadline")
				}
				if got := n1.storeValue(t, 100, pk); got != "" {
					t.Fatalf("the write was retried on node 1 (it holds %q)", got)
				}
			}
			if !n2.router.suspect(3) {
				t.Fatal("the frozen node is not suspect")
			}
		})
	}
}

// A write is not sent to a node already silent (frozen, cut off: its
// outcome would be unknown): it waits for another replica, as never sent.
func TestSilentNodeIsNotSentWrites(t *testing.T) {
	m, n1, n2 := twoNodes(t, Config{SilentAfter: 50 * time.Millisecond, Liveness: func(node consensus.NodeID) (time.Duration, bool) {
		return time.Hour, node == 3
	}})
	var calls atomic.Int64
	addr, _ := servedServer(t, &forwardServer{handle: errHandler(kvpb.Error_INVALID, 0, &calls)})
	m.register(3, addr)
	m.setRing(whole(100, 3))
	pk := []byte("quiet")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err := writeValue(ctx, n2.router, pk, "v")
	cancel()
	if partition.ErrorCode(err) != kvpb.Error_TIMEOUT || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("write whose only replica is silent: %v, want a TIMEOUT", err)
	}
	m.setRing(whole(100, 3, 1))
	if err := writeValue(writeCtx(t), n2.router, pk, "v"); err != nil {
		t.Fatal(err)
	}
	if got := n1.storeValue(t, 100, pk); got != "v" {
		t.Fatalf("node 1 holds %q, want v", got)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the silent node received %d writes", n)
	}
}

// After a split the old routing copy sends a key to the left half, which
// answers RANGE_MISMATCH: the router waits for the newer routing copy and
// then writes to the right half, never to the wrong one.
func TestRangeMismatchWaitsForNewRing(t *testing.T) {
	m, n1, n2 := twoNodes(t, Config{})
	m.setRing(whole(100, 1))
	left, right, err := n2.router.Split(writeCtx(t), &kvpb.SplitRequest{PartitionId: 100, SplitToken: 0, RightId: 101})
	if err != nil {
		t.Fatalf("split through the router: %v", err)
	}
	if left.GetEnd() != -1 || right.GetStart() != 0 || right.GetId() != 101 || left.GetGeneration() == 0 {
		t.Fatalf("split halves %v %v", left, right)
	}
	routertest.WaitUntil(t, "the right half to start", func() bool { _, ok := n1.Store.Replica(101); return ok })
	pk, tok := keyWithToken(t, func(tok int64) bool { return tok >= 0 })
	target := Target{Table: table, Token: tok}

	done := make(chan error, 1)
	go func() {
		_, err := n2.router.Write(writeCtx(t), target, upsertReq(pk, "fresh"))
		done <- err
	}()
	routertest.WaitUntil(t, "the router to wait for a newer ring", func() bool { return m.subscribers() > 0 })
	l, r := whole(100, 1), whole(101, 1)
	l.End, r.Start = -1, 0
	m.setRing(l, r)
	if err := <-done; err != nil {
		t.Fatalf("write after the new ring: %v", err)
	}
	if got := n1.storeValue(t, 101, pk); got != "fresh" {
		t.Fatalf("right half holds %q, want fresh", got)
	}
	if got := readValue(t, n2.router, pk); got != "fresh" {
		t.Fatalf("read %q, want fresh", got)
	}
}

// A token no partition holds (the table was dropped, or its ring is not
// visible yet) fails with ErrNoPartition once the request's time is up,
// as does a partition id that is gone.
func TestNoPartition(t *testing.T) {
	m := newTestMeta()
	n1 := startNode(t, m, 1, Config{})
	for _, target := range []Target{{Table: table, Token: 5}, {Table: table, Partition: 999}} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := n1.router.Write(ctx, target, upsertReq([]byte("x"), "v"))
		cancel()
		// ErrNoPartition itself, or (when the deadline passed between two
		// looks) the timeout that quotes it.
		if !errors.Is(err, ErrNoPartition) && !strings.Contains(fmt.Sprint(err), ErrNoPartition.Error()) {
			t.Fatalf("write to %+v: %v, want ErrNoPartition", target, err)
		}
	}
}
