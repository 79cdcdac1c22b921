package ctl

import (
	"context"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// fakeAdmin answers GetOperation from a script shared by every fake
// endpoint, so a test can stop one endpoint and carry on with another.
type fakeAdmin struct {
	adminpb.UnimplementedAdminServer
	name string
	s    *script
}

type script struct {
	mu    sync.Mutex
	polls int
	// answer returns the operation of poll n (from 1), or an error.
	answer func(n int) (*adminpb.Operation, error)
	seen   []string // endpoint names in poll order
}

func (f *fakeAdmin) GetOperation(_ context.Context, req *adminpb.GetOperationRequest) (*adminpb.Operation, error) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	f.s.polls++
	f.s.seen = append(f.s.seen, f.name)
	op, err := f.s.answer(f.s.polls)
	if op != nil {
		op.Id = req.GetId()
	}
	return op, err
}

func (f *fakeAdmin) ListOperations(context.Context, *adminpb.ListOperationsRequest) (*adminpb.ListOperationsResponse, error) {
	return &adminpb.ListOperationsResponse{Operations: []*adminpb.Operation{
		{Id: 8, Kind: "move", State: opDone, Partition: 3, FromNode: 1, ToNode: 2, Reason: "node 1 is draining"},
	}}, nil
}

// startFake serves a fake admin endpoint on loopback until stop or the
// end of the test.
func startFake(t *testing.T, name string, s *script) (addr string, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	adminpb.RegisterAdminServer(srv, &fakeAdmin{name: name, s: s})
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	var once sync.Once
	stop = func() { once.Do(func() { srv.Stop(); <-done }) }
	t.Cleanup(stop)
	return l.Addr().String(), stop
}

func testEnv(out *strings.Builder, output format, endpoints ...string) *env {
	return &env{
		opts:      options{endpoints: endpoints, output: output, timeout: 2 * time.Second, dialTimeout: time.Second},
		out:       out,
		pollEvery: 5 * time.Millisecond,
		retryFor:  3 * time.Second,
	}
}

func running(p float64, step, detail string) *adminpb.Operation {
	return &adminpb.Operation{Kind: "drain", State: opRunning, Progress: p, Node: 1,
		Steps: []*adminpb.Step{{Name: step, State: opRunning, Detail: detail, At: "2025-01-02T03:04:05Z"}}}
}

func TestFollowAcrossEndpointFailover(t *testing.T) {
	s := &script{}
	addrA, stopA := startFake(t, "a", s)
	addrB, _ := startFake(t, "b", s)
	s.answer = func(n int) (*adminpb.Operation, error) {
		switch {
		case n <= 2:
			return running(0.2, "moves", "1 of 5 done, 0 failed"), nil
		case n == 3:
			go stopA() // endpoint a goes away (it answers this poll)
			return running(0.45, "moves", "2 of 5 done, 0 failed"), nil
		case n == 4:
			// The new controller has not taken over yet.
			return nil, status.Error(codes.Unavailable, "etcd: leader changed")
		case n < 7:
			return running(0.45, "moves", "2 of 5 done, 0 failed"), nil
		}
		op := running(1, "moves", "5 moves")
		op.State, op.Steps[0].State, op.Children = opDone, opDone, []uint64{8, 9}
		return op, nil
	}
	var out strings.Builder
	e := testEnv(&out, formatTable, addrA, addrB)
	defer e.close()
	start := &adminpb.Operation{Id: 12, Kind: "drain", State: opPending, Node: 1}
	if err := e.follow(t.Context(), start, 0); err != nil {
		t.Fatalf("follow: %v\n%s", err, out.String())
	}
	got := out.String()
	wantLines := "" +
		"op 12 drain: pending 0%\n" +
		"op 12 drain: running 20% (moves: 1 of 5 done, 0 failed)\n" +
		"op 12 drain: running 45% (moves: 2 of 5 done, 0 failed)\n" +
		"op 12 drain: done 100% (moves: 5 moves)\n" +
		"\n"
	if !strings.HasPrefix(got, wantLines) {
		t.Fatalf("progress:\n%s\nwant it to start with\n%s", got, wantLines)
	}
	for _, re := range []string{`id: +12`, `state: +done`, `node: +n1`, `Children \(2\):`, ` *8 +move +done +100% +P3 +n1→n2 +- .*`,
		`not listed \(cosmosctl ops show ID\): 9`} {
		if !regexp.MustCompile(`(?m)^` + re + `$`).MatchString(got) {
			t.Fatalf("output lacks %q:\n%s", re, got)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[0] != "a" || s.seen[len(s.seen)-1] != "b" {
		t.Fatalf("polls went to %v, want a first and b last", s.seen)
	}
	if e.client == nil || e.client.endpoint != addrB {
		t.Fatalf("connected to %v, want %s", e.client, addrB)
	}
}

func TestFollowStops(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  func(n int) (*adminpb.Operation, error)
		timeout time.Duration
		retry   time.Duration
		output  format
		want    string // regexp the error matches
		stdout  string // regexp the whole output matches
	}{
		{
			name: "operation failed",
			answer: func(int) (*adminpb.Operation, error) {
				return &adminpb.Operation{Kind: "split", State: opFailed, Partition: 4, Error: "partition 4 cannot be split"}, nil
			},
			output: formatJSON,
			want:   `operation 12 \(split\) failed: partition 4 cannot be split`,
			stdout: `(?s)^\{\n  "id": 12,\n  "kind": "split",\n  "state": "failed",.*"error": "partition 4 cannot be split",.*\}\n$`,
		},
		{
			name:   "wait timeout",
			answer: func(int) (*adminpb.Operation, error) { return running(0.5, "catch up", "snapshot"), nil },
			// Long enough for the first poll to answer even on a loaded
			// machine under the race detector.
			timeout: 2 * time.Second,
			output:  formatTable,
			want:    `operation 12 is still running after 2s \(--wait-timeout\); it goes on \(cosmosctl ops show 12 --wait\)`,
			stdout:  `^op 12 split: pending 0%\nop 12 drain: running 50% \(catch up: snapshot\)\n\n$`,
		},
		{
			name:   "unreachable for too long",
			answer: func(int) (*adminpb.Operation, error) { return nil, status.Error(codes.Unavailable, "no leader") },
			retry:  50 * time.Millisecond,
			output: formatTable,
			want:   "follow operation 12: 127.0.0.1:[0-9]+: no leader",
			stdout: `^op 12 split: pending 0%\n\n$`,
		},
		{
			name:   "permanent error",
			answer: func(int) (*adminpb.Operation, error) { return nil, status.Error(codes.PermissionDenied, "not allowed") },
			output: formatTable,
			want:   "follow operation 12: not allowed",
			stdout: `^op 12 split: pending 0%\n\n$`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := startFake(t, "a", &script{answer: tc.answer})
			var out strings.Builder
			e := testEnv(&out, tc.output, addr)
			if tc.retry > 0 {
				e.retryFor = tc.retry
			}
			defer e.close()
			err := e.follow(t.Context(), &adminpb.Operation{Id: 12, Kind: "split", State: opPending}, tc.timeout)
			if err == nil || !regexp.MustCompile("^"+tc.want+"$").MatchString(err.Error()) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if !regexp.MustCompile(tc.stdout).MatchString(out.String()) {
				t.Fatalf("stdout:\n%q\nwant a match of %q", out.String(), tc.stdout)
			}
		})
	}
}

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   *adminpb.Operation
		want string
	}{
		{"pending", &adminpb.Operation{Id: 3, Kind: "split", State: opPending}, "op 3 split: pending 0%"},
		{"running step wins over a later done one", &adminpb.Operation{Id: 12, Kind: "rebalance", State: opRunning, Progress: 0.4, Steps: []*adminpb.Step{
			{Name: "moves", State: opRunning, Detail: "4 of 10 done, 0 failed", At: "2025-01-02T03:04:05Z"},
			{Name: "plan", State: opDone, Detail: "10 moves planned", At: "2025-01-02T03:04:09Z"},
		}}, "op 12 rebalance: running 40% (moves: 4 of 10 done, 0 failed)"},
		{"latest step, later on a tie", &adminpb.Operation{Id: 1, Kind: "move", State: opRunning, Progress: 0.999, Steps: []*adminpb.Step{
			{Name: "add learner", State: opDone, At: "2025-01-02T03:04:05Z"},
			{Name: "catch up", State: opDone, At: "2025-01-02T03:04:06Z"},
			{Name: "swap", State: opDone, Detail: "promote node 5", At: "2025-01-02T03:04:06Z"},
			{Name: "allocate replica", State: opDone, At: "2025-01-02T03:04:01Z"},
		}}, "op 1 move: running 99% (swap: promote node 5)"},
		{"done is 100", &adminpb.Operation{Id: 2, Kind: "split", State: opDone, Progress: 0.95}, "op 2 split: done 100%"},
		{"nonsense progress", &adminpb.Operation{Id: 2, Kind: "split", State: opRunning, Progress: -3}, "op 2 split: running 0%"},
		{"progress over 1 before done", &adminpb.Operation{Id: 2, Kind: "split", State: opRunning, Progress: 7}, "op 2 split: running 99%"},
	} {
		if got := progressLine(tc.op); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestBarProgress(t *testing.T) {
	var out strings.Builder
	p := newBarProgress(&out)
	p.update(&adminpb.Operation{Id: 12, Kind: "rebalance", State: opRunning, Progress: 0.4,
		Steps: []*adminpb.Step{{Name: "moves", State: opRunning, Detail: "4 of 10 done, 0 failed"}}})
	p.end(&adminpb.Operation{Id: 12, Kind: "rebalance", State: opDone, Progress: 1}, true)
	got := out.String()
	for _, want := range []string{" 40% [", "] ", "op 12 rebalance: running (moves: 4 of 10 done, 0 failed)", "100% [==============================]"} {
		if !strings.Contains(got, want) {
			t.Fatalf("bar output %q lacks %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "\n\n") || strings.Count(got, "\n") != 2 {
		t.Fatalf("the bar redraws one line and ends it: %q", got)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer reason here", 10, "a longer…"},
		{"héllo wörld", 6, "héllo…"},
		{"abc", 0, "…"},
	} {
		if got := truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
