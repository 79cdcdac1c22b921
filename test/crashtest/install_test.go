package crashtest

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cosmosd/cosmosd/partition"
)

// TestCrashAfterPartitionSnapshotInstall: a replica that fell behind the
// leader's log catches up from a snapshot and crashes the instant the
// installation's final batch is durable. It restarts with the snapshot's
// range and data, agrees with the other replicas, and serves again.
// (Before, the partition's descriptor was written in a second batch after
// the installation: a crash in between left a replica with raft state at
// the snapshot's index but no range, which refused every later write and
// silently diverged.)
func TestCrashAfterPartitionSnapshotInstall(t *testing.T) {
	c := newCluster(t, seed(t), nil)
	t.Logf("seed %d", c.seed)
	c.bootstrap()
	lagging := c.nodes[3]
	if n, _ := c.leader(parent); n == lagging {
		lagging = c.nodes[2]
	}
	w := startWriter(c, "before")
	time.Sleep(50 * time.Millisecond)
	c.down(lagging)
	downAt := time.Now()
	// Enough writes for the leader to truncate its log past the lagging
	// replica (LogTruncateEntries 50): it will need a snapshot. The leader
	// keeps what a recently active follower needs, and notices the
	// follower is gone within two election timeouts (CheckQuorum, 200ms
	// here): 100 writes after 300ms are enough, however fast the writes.
	deadline := time.Now().Add(timeout)
	atQuiet := -1
	for {
		w.mu.Lock()
		n := len(w.acked)
		w.mu.Unlock()
		if atQuiet < 0 && time.Since(downAt) > 300*time.Millisecond {
			atQuiet = n
		}
		if n > 200 && atQuiet >= 0 && n > atQuiet+100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.halt()
	var armed atomic.Bool
	armed.Store(true)
	hit := make(chan *vfs.MemFS, 1)
	c.afterInstall = func(n *node, group uint64) {
		if n == lagging && group == parent && armed.CompareAndSwap(true, false) {
			hit <- c.crashPoint(n)[0]
		}
	}
	c.open(lagging)
	var clone *vfs.MemFS
	select {
	case clone = <-hit:
	case <-time.After(timeout):
		t.Fatal("the lagging replica never installed a snapshot")
	}
	c.stop(lagging)
	lagging.fs = clone
	c.open(lagging)
	r := c.replica(lagging, parent)
	if r == nil || !partition.HasRange(r.Descriptor()) {
		t.Fatalf("after the crash the replica has no range: %v", r.Descriptor())
	}
	w2 := startWriter(c, "after")
	time.Sleep(100 * time.Millisecond)
	w2.halt()
	c.checkRows(append(w.acked, w2.acked...), append(w.refused, w2.refused...), parent)
}
