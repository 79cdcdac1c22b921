package metakv_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/cluster/metakv/metakvtest"
)

func openMem(t *testing.T, opts ...metakv.MemOption) *metakv.Mem {
	m := metakv.NewMem(opts...)
	t.Cleanup(m.Close)
	return m
}

func memHarness() metakvtest.Harness {
	return metakvtest.Harness{
		Open: func(t *testing.T) metakv.Store { return openMem(t) },
		Compact: func(t *testing.T, s metakv.Store, rev int64) {
			if err := s.(*metakv.Mem).Compact(rev); err != nil {
				t.Fatal(err)
			}
		},
	}
}

func TestMemConformance(t *testing.T) {
	metakvtest.Run(t, memHarness())
}

func TestMemCloseEndsEverything(t *testing.T) {
	m := metakv.NewMem()
	ctx := t.Context()
	w := m.Watch(ctx, "", 0)
	id, err := m.Grant(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ka, err := m.KeepAlive(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.Campaign(ctx, "el", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	waiter := make(chan error, 1)
	go func() {
		_, err := m.Campaign(ctx, "el", "b", time.Minute)
		waiter <- err
	}()
	waitUntil(t, func() bool { kvs, _, _ := m.List(ctx, "el/"); return len(kvs) == 2 })

	m.Close() // joins every goroutine of m, so all below is already done
	for range w {
	}
	for range ka {
	}
	<-l.Done()
	if err := <-waiter; err == nil {
		t.Fatal("a campaign waiting when the store closed won")
	}
	if _, err := m.Revision(ctx); err == nil {
		t.Fatal("Revision after Close: no error")
	}
	if _, err := metakv.Do(ctx, m, metakv.Put("k", nil)); err == nil {
		t.Fatal("Txn after Close: no error")
	}
	if _, err := m.Campaign(ctx, "el", "c", time.Second); err == nil {
		t.Fatal("Campaign after Close: no error")
	}
	if _, ok := <-m.Watch(ctx, "", 0); ok {
		t.Fatal("Watch after Close delivered")
	}
	m.Close() // twice is safe
}

func TestMemCompact(t *testing.T) {
	m := openMem(t)
	ctx := t.Context()
	r1, _ := metakv.Do(ctx, m, metakv.Put("k", nil))
	r2, _ := metakv.Do(ctx, m, metakv.Put("k", nil))
	if err := m.Compact(r2 + 1); err == nil {
		t.Fatal("compacting to a future revision: no error")
	}
	if err := m.Compact(r2); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []int64{r1, r2} {
		if err := m.Compact(rev); !errors.Is(err, metakv.ErrCompacted) {
			t.Fatalf("compacting again to %d: %v, want ErrCompacted", rev, err)
		}
	}
}

// Mem forgets history beyond its limit as etcd's auto-compaction does.
func TestMemHistoryLimit(t *testing.T) {
	const limit = 10
	m := openMem(t, metakv.WithHistoryLimit(limit))
	ctx := t.Context()
	var last int64
	for range 3 * limit {
		last, _ = metakv.Do(ctx, m, metakv.Put("k", nil))
	}
	r := <-m.Watch(ctx, "", 0)
	if !errors.Is(r.Err, metakv.ErrCompacted) {
		t.Fatalf("watch from 0 after %d revisions: %+v, want ErrCompacted", 3*limit, r)
	}
	r = <-m.Watch(ctx, "", last-limit)
	if r.Err != nil || len(r.Events) != limit {
		t.Fatalf("watch over the last %d revisions: %d events, err %v", limit, len(r.Events), r.Err)
	}
}

func TestMemMaxTxnOps(t *testing.T) {
	ctx := t.Context()
	puts := func(n int) []metakv.Op {
		ops := make([]metakv.Op, n)
		for i := range ops {
			ops[i] = metakv.Put(strconv.Itoa(i), nil)
		}
		return ops
	}
	m := openMem(t)
	if _, err := metakv.Do(ctx, m, puts(128)...); err != nil {
		t.Fatalf("128 ops (etcd's default limit): %v", err)
	}
	if _, err := metakv.Do(ctx, m, puts(129)...); err == nil {
		t.Fatal("129 ops: no error")
	}
	conds := make([]metakv.Cond, 129)
	for i := range conds {
		conds[i] = metakv.Exists("0")
	}
	if _, err := m.Txn(ctx, metakv.Txn{If: conds}); err == nil {
		t.Fatal("129 conditions: no error")
	}
	small := openMem(t, metakv.WithMaxTxnOps(2))
	if _, err := metakv.Do(ctx, small, puts(3)...); err == nil {
		t.Fatal("3 ops with a limit of 2: no error")
	}
}

// ExpireLease is a lost session, at once: keys gone in one revision,
// keep-alives and Done closed.
func TestMemExpireLease(t *testing.T) {
	m := openMem(t)
	ctx := t.Context()
	l, err := m.Campaign(ctx, "el", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	kvs, _, _ := m.List(ctx, "el/")
	id := kvs[0].Lease
	ka, _ := m.KeepAlive(ctx, id)
	r0, _ := metakv.Do(ctx, m, metakv.PutLeased("x", nil, id))
	if err := m.ExpireLease(id); err != nil {
		t.Fatal(err)
	}
	if r, _ := m.Revision(ctx); r != r0+1 {
		t.Fatalf("expiry: revision %d, want %d", r, r0+1)
	}
	if kvs, _, _ := m.List(ctx, ""); len(kvs) != 0 {
		t.Fatalf("keys left after expiry: %v", kvs)
	}
	<-l.Done()
	for range ka {
	}
	if err := m.ExpireLease(id); !errors.Is(err, metakv.ErrLeaseNotFound) {
		t.Fatalf("expiring a gone lease: %v", err)
	}
	// As with etcd, resigning a lost holding reports the lease gone.
	if err := l.Resign(ctx); !errors.Is(err, metakv.ErrLeaseNotFound) {
		t.Fatalf("resign after the session was lost: %v, want ErrLeaseNotFound", err)
	}
}

// Mem reports a put with a gone lease as ErrLeaseNotFound (etcd.go does
// not wrap it yet: see TestGapPutWithGoneLease).
func TestMemPutWithGoneLease(t *testing.T) {
	m := openMem(t)
	_, err := metakv.Do(t.Context(), m, metakv.PutLeased("k", nil, 42))
	if !errors.Is(err, metakv.ErrLeaseNotFound) {
		t.Fatalf("put with an unknown lease: %v", err)
	}
}

// A candidate whose session is lost while it waits does not win (etcd's
// Campaign would return, holding nothing).
func TestMemCampaignLostWhileWaiting(t *testing.T) {
	m := openMem(t)
	ctx := t.Context()
	a, err := m.Campaign(ctx, "el", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := m.Campaign(ctx, "el", "b", time.Minute)
		res <- err
	}()
	var kvs []metakv.KeyValue
	waitUntil(t, func() bool { kvs, _, _ = m.List(ctx, "el/"); return len(kvs) == 2 })
	for _, kv := range kvs {
		if string(kv.Value) == "b" {
			if err := m.ExpireLease(kv.Lease); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := <-res; !errors.Is(err, metakv.ErrLeaseNotFound) {
		t.Fatalf("campaign whose session was lost: %v, want ErrLeaseNotFound", err)
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Resign(ctx); !errors.Is(err, metakv.ErrLeaseNotFound) {
		t.Fatalf("second resign: %v, want ErrLeaseNotFound (as etcd)", err)
	}
}

// Writers and watchers at once: every watcher sees every revision once, in
// order, each whole.
func TestMemConcurrent(t *testing.T) {
	m := openMem(t)
	ctx := t.Context()
	r0, _ := m.Revision(ctx)
	const writers, writes = 4, 100
	var watches []<-chan metakv.WatchResponse
	for range 3 {
		watches = append(watches, m.Watch(ctx, "", r0))
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range writes {
				k := fmt.Sprintf("w%d/%d", w, i%5)
				if _, err := metakv.Do(ctx, m, metakv.Put(k, nil), metakv.Put(k+"x", nil)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, w := range watches {
		next := r0 + 1
		for next <= r0+writers*writes {
			r := <-w
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			for i := 0; i < len(r.Events); i += 2 {
				if r.Events[i].Kv.ModRevision != next || r.Events[i+1].Kv.ModRevision != next {
					t.Fatalf("events %d and %d at %d and %d, want both at %d",
						i, i+1, r.Events[i].Kv.ModRevision, r.Events[i+1].Kv.ModRevision, next)
				}
				next++
			}
		}
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
