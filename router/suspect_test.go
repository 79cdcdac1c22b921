package router

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
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
