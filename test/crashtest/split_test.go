package crashtest

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// writer writes unique rows until stopped and sorts them by outcome.
type writer struct {
	mu               sync.Mutex
	acked, refused   []string
	unknown, attempt int
	stop             chan struct{}
	done             chan struct{}
}

func startWriter(c *cluster, prefix string) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			pk := fmt.Sprintf("%s-%d", prefix, i)
			acked, refused := c.write(pk)
			w.mu.Lock()
			w.attempt++
			switch {
			case acked:
				w.acked = append(w.acked, pk)
			case refused:
				w.refused = append(w.refused, pk)
			default:
				w.unknown++
			}
			w.mu.Unlock()
			if !acked {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()
	return w
}

func (w *writer) halt() { close(w.stop); <-w.done }

// splitApplied reports whether the parent's leader has applied the split,
// after making it apply everything committed.
func splitApplied(t *testing.T, c *cluster) bool {
	t.Helper()
	_, r := c.waitLeader(parent)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := r.Read(ctx, &kvpb.ReadRequest{PartitionId: parent, TableId: table, Linearizable: true, Scan: true, ScanStart: 0, ScanEnd: 0, Limit: 1}); err != nil &&
		partition.ErrorCode(err) != kvpb.Error_RANGE_MISMATCH {
		t.Fatalf("read index on the parent: %v (seed %d)", err, c.seed)
	}
	return r.Descriptor().GetEnd() == -1
}

// TestCrashAllAfterSplitApplied: every replica crashes at the instant the
// split's batch is durable but before the right half's replica starts.
// The right half's raft state is in that batch, so after the restart it
// elects a leader and serves its rows; nothing acknowledged is lost and
// the replicas of both halves agree. (Before, the right half's state was
// written by a separate start after the split: a crash in between left a
// right half that could never elect a leader.)
func TestCrashAllAfterSplitApplied(t *testing.T) {
	var armed atomic.Bool
	hit := make(chan []*vfs.MemFS, 1)
	var c *cluster
	knobs := &partition.StoreKnobs{BeforeSplitStart: func(_, _ uint64) {
		if armed.CompareAndSwap(true, false) {
			hit <- c.crashPoint(c.nodes...)
		}
	}}
	c = newCluster(t, seed(t), knobs)
	t.Logf("seed %d", c.seed)
	c.bootstrap()
	w := startWriter(c, "row")
	time.Sleep(100 * time.Millisecond)
	armed.Store(true)
	if err := c.split(); err != nil {
		t.Fatalf("split: %v", err)
	}
	clones := <-hit
	w.halt()
	for i, n := range c.nodes {
		c.stop(n)
		n.fs = clones[i]
	}
	for _, n := range c.nodes {
		c.open(n)
	}
	if !splitApplied(t, c) {
		t.Fatal("the split did not survive the crash although its batch was durable on a replica")
	}
	c.checkRows(w.acked, w.refused, parent, right)
	t.Logf("%d rows acknowledged, %d refused, %d unknown", len(w.acked), len(w.refused), w.unknown)
}

// TestCrashAroundSplit crashes random sets of replicas (often all of them)
// at random instants around a split while rows are written, and restarts
// them from what their disks kept: each round, either the split happened
// and both halves elect leaders, or it did not and the parent still holds
// the whole range; no acknowledged row is lost, no refused row applied,
// and replicas agree.
func TestCrashAroundSplit(t *testing.T) {
	base := seed(t)
	for r := range rounds(4) {
		t.Run(fmt.Sprint(r), func(t *testing.T) {
			c := newCluster(t, base+int64(r), nil)
			rng := rand.New(rand.NewSource(c.seed))
			t.Logf("seed %d", c.seed)
			c.bootstrap()
			w := startWriter(c, "row")
			time.Sleep(time.Duration(20+rng.Intn(80)) * time.Millisecond)
			splitDone := make(chan error, 1)
			go func() { splitDone <- c.split() }()
			time.Sleep(time.Duration(rng.Intn(30)) * time.Millisecond)
			victims := c.nodes
			if rng.Intn(3) == 0 {
				victims = c.nodes[:1+rng.Intn(3)]
			}
			c.crash(victims...)
			<-splitDone
			time.Sleep(time.Duration(rng.Intn(50)) * time.Millisecond)
			w.halt()
			ids := []uint64{parent}
			if splitApplied(t, c) {
				ids = append(ids, right)
			}
			c.checkRows(w.acked, w.refused, ids...)
			t.Logf("crashed %d nodes; split kept: %v; %d rows acknowledged, %d refused, %d unknown", len(victims), len(ids) == 2, len(w.acked), len(w.refused), w.unknown)
		})
	}
}
