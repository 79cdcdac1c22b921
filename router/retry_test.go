package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// classify turns each answer into the next step, and keeps the leader
// hint in step with NOT_LEADER answers.
func TestClassify(t *testing.T) {
	notLeader := func(leader consensus.NodeID) error {
		e := partition.Errorf(kvpb.Error_NOT_LEADER, "not leader")
		e.PB.LeaderNode = uint64(leader)
		return e
	}
	refused := fmt.Errorf("node 3: %w", status.Error(codes.Unavailable, "refused"))
	for _, tc := range []struct {
		name     string
		err      error
		sent     bool
		want     outcome
		wantHint consensus.NodeID // after the answer; the hint before is 2
	}{
		{"not leader, names another", notLeader(5), true, retryHint, 5},
		{"not leader, names itself", notLeader(3), true, tryNext, 0},
		{"not leader, no leader known", notLeader(0), true, tryNext, 0},
		{"range mismatch", partition.Errorf(kvpb.Error_RANGE_MISMATCH, "split"), true, refreshRoute, 2},
		{"not found", partition.Errorf(kvpb.Error_NOT_FOUND, "moved"), true, tryNext, 2},
		{"no quorum", partition.Errorf(kvpb.Error_UNAVAILABLE, "no quorum"), true, unavailable, 2},
		{"transport, not sent", refused, false, tryNext, 2},
		{"transport, sent", refused, true, done, 2},
		{"timeout", partition.Errorf(kvpb.Error_TIMEOUT, "in flight"), false, done, 2},
		{"invalid", partition.Errorf(kvpb.Error_INVALID, "bad"), false, done, 2},
		{"overloaded", partition.Errorf(kvpb.Error_OVERLOADED, "slow down"), false, done, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Router{}
			r.leaders.Store(uint64(100), consensus.NodeID(2))
			if got := r.classify(&kvpb.Descriptor{Id: 100}, 3, tc.err, tc.sent); got != tc.want {
				t.Fatalf("classify(%v, sent %v) = %d, want %d", tc.err, tc.sent, got, tc.want)
			}
			if h := r.hint(100); h != tc.wantHint {
				t.Fatalf("hint %d after %v, want %d", h, tc.err, tc.wantHint)
			}
		})
	}
}

// transportFailure tells an answer about the node (it could not be
// reached or did not answer in time) from an answer about the partition.
func TestTransportFailure(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("node 3: %w", context.DeadlineExceeded), true},
		{status.Error(codes.Unavailable, "refused"), true},
		{fmt.Errorf("node 3: %w", status.Error(codes.DeadlineExceeded, "slow")), true},
		{status.Error(codes.Internal, "boom"), false},
		{status.Error(codes.Canceled, "gone"), false},
		{inFlight(1, 3, status.Error(codes.Unavailable, "eof")), true},
		{partition.Errorf(kvpb.Error_TIMEOUT, "the node answered: no quorum in time"), false},
		{errors.New("plain"), false},
	} {
		if got := transportFailure(tc.err); got != tc.want {
			t.Errorf("transportFailure(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// attemptLog records a retry loop's attempts.
type attemptLog struct {
	mu    sync.Mutex
	nodes []consensus.NodeID
}

func (l *attemptLog) add(n consensus.NodeID) {
	l.mu.Lock()
	l.nodes = append(l.nodes, n)
	l.mu.Unlock()
}

func (l *attemptLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.nodes)
}

// loopRouter is a router over a one-partition ring (replicas on nodes),
// without stores or connections: the tests drive do with their own calls.
func loopRouter(t *testing.T, nodes ...consensus.NodeID) *Router {
	t.Helper()
	m := newTestMeta()
	m.setRing(whole(100, nodes...))
	r := newRouter(Config{NodeID: 1, ProbeInterval: -1}, m)
	t.Cleanup(r.Close)
	return r
}

// What a request ends with when its time runs out depends on the last
// answer: no leader anywhere is UNAVAILABLE, nodes that never answered a
// TIMEOUT; an answer that settles the request ends the loop at once.
func TestRetryLoopEndings(t *testing.T) {
	notLeader := partition.Errorf(kvpb.Error_NOT_LEADER, "no leader")
	unsent := fmt.Errorf("node 3: %w", status.Error(codes.Unavailable, "refused"))
	for _, tc := range []struct {
		name     string
		err      error
		sent     bool
		code     kvpb.Error_Code
		contains string
		once     bool // the first answer settles it
	}{
		{"no leader", notLeader, true, kvpb.Error_UNAVAILABLE, "partition 100 has no leader", false},
		{"unreachable", unsent, false, kvpb.Error_TIMEOUT, "partition 100 did not answer within the request timeout", false},
		{"sent, unknown failure", status.Error(codes.Internal, "boom"), true, kvpb.Error_UNKNOWN, "boom", true},
		{"refused as invalid", partition.Errorf(kvpb.Error_INVALID, "bad value"), true, kvpb.Error_INVALID, "bad value", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := loopRouter(t, 2, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			var log attemptLog
			err := r.do(ctx, Target{Partition: 100, Leader: true}, false, func(_ context.Context, node consensus.NodeID, _ *kvpb.Descriptor) (bool, error) {
				log.add(node)
				return tc.sent, tc.err
			})
			if partition.ErrorCode(err) != tc.code || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("ended with %v, want %s containing %q", err, tc.code, tc.contains)
			}
			if n := log.count(); tc.once && n != 1 || !tc.once && n < 4 {
				t.Fatalf("%d attempts", n)
			}
		})
	}
}

// A read may leave a replica that is slow to answer for another: each
// attempt but the last gets half the time left. A write waits for its
// node, whose answer decides whether it may go elsewhere.
func TestReadGivesUpSlowReplica(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(fmt.Sprint("idempotent=", idempotent), func(t *testing.T) {
			r := loopRouter(t, 2, 3)
			r.leaders.Store(uint64(100), consensus.NodeID(2))
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var log attemptLog
			err := r.do(ctx, Target{Partition: 100}, idempotent, func(ctx context.Context, node consensus.NodeID, _ *kvpb.Descriptor) (bool, error) {
				log.add(node)
				if node == 3 {
					return true, nil
				}
				<-ctx.Done() // node 2 hangs
				return true, status.FromContextError(ctx.Err()).Err()
			})
			if idempotent {
				if err != nil || log.count() != 2 {
					t.Fatalf("read: %v after %v, want an answer from node 3", err, log.nodes)
				}
				if !r.suspect(2) {
					t.Fatal("the replica that hung is not suspect")
				}
				return
			}
			if partition.ErrorCode(err) != kvpb.Error_TIMEOUT || log.count() != 1 {
				t.Fatalf("write: %v after %v, want a TIMEOUT from node 2 alone", err, log.nodes)
			}
		})
	}
}

// A node that answers is no longer suspect.
func TestAnswerClearsSuspicion(t *testing.T) {
	r := loopRouter(t, 2)
	r.markSuspect(2)
	r.markSuspect(1) // this node: never suspect
	if !r.suspect(2) || r.suspect(1) {
		t.Fatalf("suspect(2) = %v, suspect(1) = %v; want true, false", r.suspect(2), r.suspect(1))
	}
	err := r.do(writeCtx(t), Target{Partition: 100, Leader: true}, false, func(context.Context, consensus.NodeID, *kvpb.Descriptor) (bool, error) {
		return true, nil
	})
	if err != nil || r.suspect(2) || r.hint(100) != 2 {
		t.Fatalf("after node 2 answered: err %v, suspect %v, hint %d", err, r.suspect(2), r.hint(100))
	}
}
