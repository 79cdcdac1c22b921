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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router/routertest"
)

// forwardServer serves Forward with a test handler over real gRPC on
// loopback; Write and Read are unary fallbacks that count their calls.
type forwardServer struct {
	kvpb.UnimplementedInternalServer
	handle func(context.Context, *kvpb.ForwardRequest) *kvpb.ForwardResponse
	noFwd  bool // behave as a node of an older version
	unary  atomic.Int64
}

func (s *forwardServer) Forward(stream kvpb.Internal_ForwardServer) error {
	if s.noFwd {
		return status.Error(codes.Unimplemented, "method Forward not implemented")
	}
	return serveForward(stream, func(ctx context.Context, req *kvpb.ForwardRequest) []byte {
		raw, _ := proto.Marshal(s.handle(ctx, req))
		return raw
	})
}

func (s *forwardServer) Write(_ context.Context, req *kvpb.WriteRequest) (*kvpb.WriteResponse, error) {
	s.unary.Add(1)
	return &kvpb.WriteResponse{BytesWritten: int64(req.GetPartitionId())}, nil
}

func (s *forwardServer) Read(_ context.Context, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	s.unary.Add(1)
	return &kvpb.ReadResponse{RequestUnits: float64(req.GetPartitionId())}, nil
}

// startForward serves s and returns a router connection to it.
func startForward(t *testing.T, s *forwardServer) *nodeConn {
	t.Helper()
	addr, _ := routertest.ServeInternal(t, s)
	return dialTest(t, addr)
}

// echo answers a write with its partition id in BytesWritten and a read
// with its partition id in RequestUnits, so each caller can check it got
// its own answer.
func echo(_ context.Context, req *kvpb.ForwardRequest) *kvpb.ForwardResponse {
	if w := req.GetWrite(); w != nil {
		return &kvpb.ForwardResponse{Id: req.GetId(), Response: &kvpb.ForwardResponse_Write{Write: &kvpb.WriteResponse{BytesWritten: int64(w.GetPartitionId())}}}
	}
	return &kvpb.ForwardResponse{Id: req.GetId(), Response: &kvpb.ForwardResponse_Read{Read: &kvpb.ReadResponse{RequestUnits: float64(req.GetRead().GetPartitionId())}}}
}

// Many callers share one stream and each gets its own answer, large
// requests included (a batch over the size bound is split).
func TestForwardMultiplexes(t *testing.T) {
	c := startForward(t, &forwardServer{handle: echo})
	big := strings.Repeat("x", maxForwardBatchBytes/3)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			id := uint64(i + 1)
			if i%2 == 0 {
				req := &kvpb.WriteRequest{PartitionId: id}
				if i%20 == 0 {
					req.Mutations = []*kvpb.Mutation{{Pk: []byte(big)}}
				}
				resp, sent, err := c.forwardWrite(ctx, req)
				switch {
				case err != nil || !sent:
					errs <- fmt.Errorf("write %d: sent %v, %v", id, sent, err)
				case resp.GetBytesWritten() != int64(id):
					errs <- fmt.Errorf("write %d got the answer of %d", id, resp.GetBytesWritten())
				}
				return
			}
			resp, err := c.forwardRead(ctx, &kvpb.ReadRequest{PartitionId: id})
			switch {
			case err != nil:
				errs <- fmt.Errorf("read %d: %v", id, err)
			case resp.GetRequestUnits() != float64(id):
				errs <- fmt.Errorf("read %d got the answer of %v", id, resp.GetRequestUnits())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	c.fwd.mu.Lock()
	open := c.fwd.cur != nil
	c.fwd.mu.Unlock()
	if !open {
		t.Error("no stream open after the calls: each call should not need its own")
	}
}

// A caller that gives up withdraws its request: the server's handler sees
// its context canceled, and the caller reports the request as sent (a
// write's outcome is then unknown).
func TestForwardCancelReachesServer(t *testing.T) {
	started := make(chan struct{})
	canceled := make(chan struct{})
	c := startForward(t, &forwardServer{handle: func(ctx context.Context, req *kvpb.ForwardRequest) *kvpb.ForwardResponse {
		close(started)
		<-ctx.Done()
		close(canceled)
		return &kvpb.ForwardResponse{Id: req.GetId(), Failure: "canceled"}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, sent, err := c.forwardWrite(ctx, &kvpb.WriteRequest{PartitionId: 1})
	if status.Code(err) != codes.Canceled || !sent {
		t.Fatalf("canceled write: sent %v, err %v; want sent, Canceled", sent, err)
	}
	select {
	case <-canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's handler was not canceled")
	}
}

// The server's deadline is the caller's: a handler that waits for its
// context ends when the caller's time is up, not later.
func TestForwardCarriesDeadline(t *testing.T) {
	got := make(chan time.Duration, 1)
	c := startForward(t, &forwardServer{handle: func(ctx context.Context, req *kvpb.ForwardRequest) *kvpb.ForwardResponse {
		dl, ok := ctx.Deadline()
		if !ok {
			got <- -1
		} else {
			got <- time.Until(dl)
		}
		return echo(ctx, req)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.forwardRead(ctx, &kvpb.ReadRequest{PartitionId: 1}); err != nil {
		t.Fatal(err)
	}
	if d := <-got; d <= 0 || d > 3*time.Second {
		t.Fatalf("server-side time left %v, want within (0, 3s]", d)
	}
}

// A request the server could not run (the production server turns a
// handler's panic into this; see TestServeForwardedRecovers) fails alone
// with an internal error; the stream and the other requests carry on.
func TestForwardFailureIsInternal(t *testing.T) {
	c := startForward(t, &forwardServer{handle: func(ctx context.Context, req *kvpb.ForwardRequest) *kvpb.ForwardResponse {
		if req.GetWrite().GetPartitionId() == 13 {
			return &kvpb.ForwardResponse{Id: req.GetId(), Failure: "forwarded request panicked: boom"}
		}
		return echo(ctx, req)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := c.forwardWrite(ctx, &kvpb.WriteRequest{PartitionId: 13})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("failed request: %v, want Internal naming the failure", err)
	}
	resp, _, err := c.forwardWrite(ctx, &kvpb.WriteRequest{PartitionId: 14})
	if err != nil || resp.GetBytesWritten() != 14 {
		t.Fatalf("request after the failure: %v %v", resp, err)
	}
}

// The production server turns a panic into the request's failure.
func TestServeForwardedRecovers(t *testing.T) {
	s := &Server{} // no store: Write dereferences nil and panics
	raw := s.serveForwarded(context.Background(), &kvpb.ForwardRequest{Id: 7, Request: &kvpb.ForwardRequest_Write{Write: &kvpb.WriteRequest{PartitionId: 1}}})
	resp := &kvpb.ForwardResponse{}
	if err := proto.Unmarshal(raw, resp); err != nil {
		t.Fatal(err)
	}
	if resp.GetId() != 7 || !strings.Contains(resp.GetFailure(), "panicked") {
		t.Fatalf("response %v: want id 7 and a failure naming the panic", resp)
	}
	raw = s.serveForwarded(context.Background(), &kvpb.ForwardRequest{Id: 8})
	if err := proto.Unmarshal(raw, resp); err != nil || resp.GetFailure() == "" {
		t.Fatalf("empty request: %v %v, want a failure", resp, err)
	}
}

// A node that does not serve the stream (an older version) gets unary
// calls: nothing ran on the stream, so nothing runs twice.
func TestForwardFallsBackToUnary(t *testing.T) {
	s := &forwardServer{noFwd: true}
	c := startForward(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 3 {
		resp, sent, err := c.forwardWrite(ctx, &kvpb.WriteRequest{PartitionId: uint64(i + 5)})
		if err != nil || !sent || resp.GetBytesWritten() != int64(i+5) {
			t.Fatalf("write %d to an old node: %v sent %v %v", i, resp, sent, err)
		}
	}
	if n := s.unary.Load(); n != 3 {
		t.Fatalf("%d unary writes, want 3 (each exactly once)", n)
	}
	resp, err := c.forwardRead(ctx, &kvpb.ReadRequest{PartitionId: 9})
	if err != nil || resp.GetRequestUnits() != 9 {
		t.Fatalf("read from an old node: %v %v", resp, err)
	}
	if n := s.unary.Load(); n != 4 {
		t.Fatalf("%d unary calls after the read, want 4", n)
	}
}

// A stream that breaks with requests in flight fails them as sent and
// Unavailable (their outcome is unknown), and the next call opens a new
// stream.
func TestForwardStreamBreak(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int64
	s := &forwardServer{handle: func(ctx context.Context, req *kvpb.ForwardRequest) *kvpb.ForwardResponse {
		if calls.Add(1) == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return echo(ctx, req)
	}}
	c := startForward(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, sent, err := c.forwardWrite(ctx, &kvpb.WriteRequest{PartitionId: 1})
		if err == nil || !sent {
			done <- fmt.Errorf("write on a broken stream: sent %v, err %v; want sent and an error", sent, err)
			return
		}
		if !transportFailure(err) {
			done <- fmt.Errorf("write on a broken stream: %v, want a transport failure", err)
			return
		}
		done <- nil
	}()
	for calls.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	c.fwd.mu.Lock()
	st := c.fwd.cur
	c.fwd.mu.Unlock()
	st.fail(errors.New("test: stream cut"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(release)
	resp, _, err := c.forwardWrite(ctx, &kvpb.WriteRequest{PartitionId: 2})
	if err != nil || resp.GetBytesWritten() != 2 {
		t.Fatalf("write after the break: %v %v", resp, err)
	}
}

// batchLen takes as many messages as fit in maxForwardBatchBytes, and one
// larger message alone.
func TestBatchLen(t *testing.T) {
	m := maxForwardBatchBytes
	for _, c := range []struct {
		sizes []int
		want  int
	}{
		{[]int{10, 20, 30}, 3},
		{[]int{m / 2, m / 2, 1}, 2},
		{[]int{m + 1, 1}, 1},
		{[]int{1, m}, 1},
		{[]int{m}, 1},
	} {
		if got := batchLen(len(c.sizes), func(i int) int { return c.sizes[i] }); got != c.want {
			t.Errorf("batchLen(%v) = %d, want %d", c.sizes, got, c.want)
		}
	}
}
