// Package metakvtest is the conformance suite of metakv.Store: the
// contracts of the metakv package doc, and the etcd behaviour they leave
// open but callers can observe, as tests that every implementation runs.
//
// The suite writes each subtest's keys in a store of its own (Harness.Open)
// but does not assume that stores of one harness have their own revision
// counters (etcd stores under distinct prefixes share etcd's): it asserts
// revision deltas only in subtests that run alone, and runs the slow ones
// (lease expiry, elections), which assert no deltas, in parallel after
// them.
package metakvtest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster/metakv"
)

// Harness is what the suite needs of an implementation.
type Harness struct {
	// Open returns an empty store for one subtest (a new Mem, or an etcd
	// store under a prefix no other subtest uses), released by t's
	// cleanup. It is called from parallel subtests.
	Open func(t *testing.T) metakv.Store
	// Compact discards the history of s before rev, as etcd's Compact:
	// a watch from before rev-1 must then fail with ErrCompacted. Nil
	// skips the compaction cases.
	Compact func(t *testing.T, s metakv.Store, rev int64)
	// MinLeaseTTL is the shortest TTL the store really grants (an
	// embedded etcd: 2 s, from its election timeout); 0 when a TTL is
	// kept as asked. Cases that show a renewed lease outliving its TTL
	// wait past it.
	MinLeaseTTL time.Duration
}

// ttl is the TTL the suite asks for: the shortest there is.
const ttl = time.Second

// patience bounds every wait of the suite for something that must happen
// (an expiry, a delivery): long enough for a loaded machine under -race,
// and only spent when the store is broken.
const patience = 15 * time.Second

type testCase struct {
	name string
	run  func(t *testing.T, h Harness)
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.Open == nil {
		t.Fatal("metakvtest: Harness.Open is nil")
	}
	// Alone, in order: these assert revision deltas.
	for _, tc := range [][]testCase{kvCases, txnCases, watchCases, leaseCases} {
		for _, c := range tc {
			t.Run(c.name, func(t *testing.T) { c.run(t, h) })
		}
	}
	// Together, after the above (a parallel subtest waits for its
	// parent's function to return): these wait on timers.
	for _, c := range slowCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, h)
		})
	}
}

// slowCases wait for leases to expire or for elections to change hands.
var slowCases = []testCase{
	{"Lease/ExpiresWithoutRenewal", testLeaseExpires},
	{"Lease/KeepAliveKeepsItAlive", testKeepAlive},
	{"Lease/KeepAliveClosesWhenLeaseGone", testKeepAliveClosesWhenGone},
	{"Election/HandsOverInOrderOfArrival", testElectionOrder},
	{"Election/CampaignCanceledWhileWaiting", testElectionCancelWaiting},
	{"Election/LostSessionEndsHolding", testElectionLostSession},
	{"Election/CampaignContextBoundsOnlyTheWait", testElectionCampaignContext},
	{"Election/NoLeader", testElectionNoLeader},
}

func revision(t *testing.T, s metakv.Store) int64 {
	t.Helper()
	r, err := s.Revision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func do(t *testing.T, s metakv.Store, ops ...metakv.Op) int64 {
	t.Helper()
	r, err := metakv.Do(t.Context(), s, ops...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func txn(t *testing.T, s metakv.Store, tx metakv.Txn) metakv.TxnResult {
	t.Helper()
	r, err := s.Txn(t.Context(), tx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// holds reports whether c holds, by a transaction that writes nothing.
func holds(t *testing.T, s metakv.Store, c metakv.Cond) bool {
	t.Helper()
	return txn(t, s, metakv.Txn{If: []metakv.Cond{c}}).Succeeded
}

func get(t *testing.T, s metakv.Store, key string) (metakv.KeyValue, bool) {
	t.Helper()
	kv, ok, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return kv, ok
}

func exists(t *testing.T, s metakv.Store, key string) bool {
	t.Helper()
	_, ok := get(t, s, key)
	return ok
}

func list(t *testing.T, s metakv.Store, prefix string) []metakv.KeyValue {
	t.Helper()
	kvs, _, err := s.List(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return kvs
}

func keys(kvs []metakv.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = kv.Key
	}
	return out
}

// value is v as []byte, so that tests can spell values as strings.
func value(v string) []byte { return []byte(v) }

// wantRecord checks kv's key, value and revisions.
func wantRecord(t *testing.T, kv metakv.KeyValue, key, val string, create, mod int64) {
	t.Helper()
	if kv.Key != key || !bytes.Equal(kv.Value, value(val)) || kv.CreateRevision != create || kv.ModRevision != mod {
		t.Fatalf("record = {%s %q create %d mod %d}, want {%s %q create %d mod %d}",
			kv.Key, kv.Value, kv.CreateRevision, kv.ModRevision, key, val, create, mod)
	}
}

// waitFor polls cond until it holds, failing the test after patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %s for %s", patience, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// recv returns the next response of a watch, failing if it closes or
// nothing comes within patience.
func recv(t *testing.T, w <-chan metakv.WatchResponse) metakv.WatchResponse {
	t.Helper()
	select {
	case r, ok := <-w:
		if !ok {
			t.Fatal("watch closed")
		}
		return r
	case <-time.After(patience):
		t.Fatalf("no watch response within %s", patience)
	}
	panic("unreachable")
}

// collect reads responses until n events came, checking that none is an
// error and that each response's Revision is at least its last event's.
func collect(t *testing.T, w <-chan metakv.WatchResponse, n int) ([]metakv.Event, []metakv.WatchResponse) {
	t.Helper()
	var evs []metakv.Event
	var resps []metakv.WatchResponse
	for len(evs) < n {
		r := recv(t, w)
		if r.Err != nil {
			t.Fatalf("watch failed after %d of %d events: %v", len(evs), n, r.Err)
		}
		if len(r.Events) == 0 {
			t.Fatalf("watch response without events: %+v", r)
		}
		if last := r.Events[len(r.Events)-1].Kv.ModRevision; r.Revision < last {
			t.Fatalf("response revision %d below its last event's %d", r.Revision, last)
		}
		evs = append(evs, r.Events...)
		resps = append(resps, r)
	}
	if len(evs) > n {
		t.Fatalf("got %d events, want %d: %s", len(evs), n, fmtEvents(evs))
	}
	return evs, resps
}

// closed waits until w closes, returning what it delivered meanwhile.
func closed(t *testing.T, w <-chan metakv.WatchResponse) []metakv.WatchResponse {
	t.Helper()
	var got []metakv.WatchResponse
	timeout := time.After(patience)
	for {
		select {
		case r, ok := <-w:
			if !ok {
				return got
			}
			got = append(got, r)
		case <-timeout:
			t.Fatalf("watch not closed within %s", patience)
		}
	}
}

func fmtEvents(evs []metakv.Event) string {
	var b bytes.Buffer
	for _, ev := range evs {
		op := "put"
		if ev.Delete {
			op = "del"
		}
		fmt.Fprintf(&b, "[%s %s=%q @%d] ", op, ev.Kv.Key, ev.Kv.Value, ev.Kv.ModRevision)
	}
	return b.String()
}

// wantEvent checks one event: a put of key=val, or a deletion (val "-")
// at rev.
func wantEvent(t *testing.T, ev metakv.Event, key, val string, rev int64) {
	t.Helper()
	del := val == "-"
	if ev.Delete != del || ev.Kv.Key != key || ev.Kv.ModRevision != rev {
		t.Fatalf("event %s, want key %s value %q at %d", fmtEvents([]metakv.Event{ev}), key, val, rev)
	}
	if del && (ev.Kv.Value != nil || ev.Kv.CreateRevision != 0 || ev.Kv.Lease != 0) {
		t.Fatalf("deletion event %+v: want only Key and ModRevision", ev.Kv)
	}
	if !del && !bytes.Equal(ev.Kv.Value, value(val)) {
		t.Fatalf("event %s, want value %q", fmtEvents([]metakv.Event{ev}), val)
	}
}

// effectiveTTL is the TTL a lease of ttl really has.
func effectiveTTL(h Harness) time.Duration { return max(ttl, h.MinLeaseTTL) }

// quiet is a context for calls made after the test's own context ended
// (cleanups).
func quiet() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), patience)
}
