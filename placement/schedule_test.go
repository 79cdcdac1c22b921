package placement

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
)

// TestScheduleRunsFromStoredState is the regression test of the double
// split the nemesis suite found: a round lists operations, and a run of one
// of them ends before the round schedules it. The listed copy is stale
// (still active, without the token and right half the finished run chose);
// running it would split the partition a second time. schedule must run
// an operation from what is stored when it starts, and not at all when the
// stored one is no longer active.
func TestScheduleRunsFromStoredState(t *testing.T) {
	kv := metakv.NewMem()
	defer kv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A controller with no cluster behind it: executing an operation would
	// touch its missing metadata and router, so any execution fails the
	// test by panicking.
	c := &Controller{cfg: ControllerConfig{Logger: slog.New(slog.DiscardHandler)}, store: &opStore{ops: cluster.NewOperations(kv)}}
	c.mu.running = map[uint64]*Operation{}
	c.mu.busy = map[uint64]uint64{}

	done := &Operation{ID: 7, Kind: KindSplit, Partition: 3, State: StateDone}
	if err := c.store.save(ctx, nil, done); err != nil {
		t.Fatal(err)
	}
	stale := *done
	stale.State = StateRunning
	var wg sync.WaitGroup
	c.schedule(ctx, &wg, []*Operation{&stale})
	wg.Wait()

	got, err := c.store.get(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.State != StateDone {
		t.Fatalf("stored operation after scheduling a stale copy: %+v, want it left done", got)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.running) != 0 || len(c.mu.busy) != 0 {
		t.Fatalf("running %v busy %v after the round, want both empty", c.mu.running, c.mu.busy)
	}

	// A missing operation (deleted meanwhile) is not run either.
	gone := &Operation{ID: 8, Kind: KindSplit, Partition: 4, State: StatePending}
	c.mu.Unlock()
	c.schedule(ctx, &wg, []*Operation{gone})
	wg.Wait()
	c.mu.Lock()
	if len(c.mu.running) != 0 {
		t.Fatalf("running %v after scheduling a missing operation", c.mu.running)
	}
}
