package metakvtest

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/cosmosd/cosmosd/cluster/metakv"
)

var watchCases = []testCase{
	{"Watch/ReplaysFromPastRevision", testWatchReplay},
	{"Watch/TxnEventsInOneResponse", testWatchTxn},
	{"Watch/PrefixIsExact", testWatchPrefix},
	{"Watch/RevisionOrder", testWatchOrder},
	{"Watch/ContextEndCloses", testWatchCancel},
	{"Watch/CompactedHistoryFails", testWatchCompacted},
}

// A watch from a past revision delivers the changes after it (puts and
// deletions), then the live ones.
func testWatchReplay(t *testing.T, h Harness) {
	s := h.Open(t)
	r1 := do(t, s, metakv.Put("w/1", value("a")))
	r2 := do(t, s, metakv.Put("w/2", value("b")))
	r3 := do(t, s, metakv.Put("w/1", value("c")))
	do(t, s, metakv.Put("other", nil))
	r5 := do(t, s, metakv.Delete("w/2"))
	w := s.Watch(t.Context(), "w/", r1)
	evs, _ := collect(t, w, 3)
	wantEvent(t, evs[0], "w/2", "b", r2)
	wantEvent(t, evs[1], "w/1", "c", r3)
	wantEvent(t, evs[2], "w/2", "-", r5)
	if evs[1].Kv.CreateRevision != r1 {
		t.Fatalf("overwrite event: CreateRevision %d, want %d", evs[1].Kv.CreateRevision, r1)
	}
	r6 := do(t, s, metakv.Put("w/3", value("d")))
	evs, _ = collect(t, w, 1)
	wantEvent(t, evs[0], "w/3", "d", r6)
	if evs[0].Kv.CreateRevision != r6 {
		t.Fatalf("live event: CreateRevision %d, want %d", evs[0].Kv.CreateRevision, r6)
	}
	// From the current revision: only what comes next.
	w2 := s.Watch(t.Context(), "w/", r6)
	r7 := do(t, s, metakv.Delete("w/1"))
	evs, _ = collect(t, w2, 1)
	wantEvent(t, evs[0], "w/1", "-", r7)
}

// The events of one revision are never split across responses, and come
// in the order of the transaction's operations.
func testWatchTxn(t *testing.T, h Harness) {
	s := h.Open(t)
	r0 := do(t, s, metakv.Put("t/z", value("0")))
	w := s.Watch(t.Context(), "t/", r0)
	r1 := do(t, s, metakv.Put("t/c", value("1")), metakv.Put("t/a", value("2")), metakv.Delete("t/z"), metakv.Put("t/b", value("3")))
	evs, resps := collect(t, w, 4)
	if len(resps) != 1 {
		t.Fatalf("a txn's 4 events came in %d responses", len(resps))
	}
	wantEvent(t, evs[0], "t/c", "1", r1)
	wantEvent(t, evs[1], "t/a", "2", r1)
	wantEvent(t, evs[2], "t/z", "-", r1)
	wantEvent(t, evs[3], "t/b", "3", r1)
	r2 := do(t, s, metakv.DeleteUnder("t/"))
	evs, resps = collect(t, w, 3)
	if len(resps) != 1 {
		t.Fatalf("a DeleteUnder's 3 events came in %d responses", len(resps))
	}
	for i, k := range []string{"t/a", "t/b", "t/c"} {
		wantEvent(t, evs[i], k, "-", r2)
	}
}

// A watch covers exactly the keys that start with its prefix.
func testWatchPrefix(t *testing.T, h Harness) {
	s := h.Open(t)
	r0 := revision(t, s)
	w := s.Watch(t.Context(), "a/", r0)
	do(t, s, metakv.Put("ab", nil), metakv.Put("a", nil), metakv.Put("b/a/", nil))
	r := do(t, s, metakv.Put("a/", nil), metakv.Put("a/x/y", nil))
	evs, _ := collect(t, w, 2)
	wantEvent(t, evs[0], "a/", "", r)
	wantEvent(t, evs[1], "a/x/y", "", r)
}

// Changes arrive in revision order, however they are batched.
func testWatchOrder(t *testing.T, h Harness) {
	s := h.Open(t)
	r0 := revision(t, s)
	const n = 30
	revs := make([]int64, n)
	for i := range n {
		revs[i] = do(t, s, metakv.Put("o/"+strconv.Itoa(i%3), value(strconv.Itoa(i))))
	}
	w := s.Watch(t.Context(), "o/", r0)
	evs, _ := collect(t, w, n)
	for i, ev := range evs {
		wantEvent(t, ev, "o/"+strconv.Itoa(i%3), strconv.Itoa(i), revs[i])
	}
}

// The channel closes when ctx ends, also while events are pending.
func testWatchCancel(t *testing.T, h Harness) {
	s := h.Open(t)
	r0 := do(t, s, metakv.Put("c/1", nil))
	ctx, cancel := context.WithCancel(t.Context())
	w := s.Watch(ctx, "c/", r0)
	do(t, s, metakv.Put("c/2", nil))
	collect(t, w, 1)
	do(t, s, metakv.Put("c/3", nil)) // pending, not read
	cancel()
	for _, r := range closed(t, w) {
		if errors.Is(r.Err, metakv.ErrCompacted) {
			t.Fatalf("canceled watch reported %v", r.Err)
		}
	}
	// A watch whose ctx already ended closes too.
	if got := closed(t, s.Watch(ctx, "c/", 0)); len(got) > 1 {
		t.Fatalf("watch with an ended ctx delivered %d responses", len(got))
	}
}

// A watch from before the history the store holds delivers ErrCompacted
// and closes; one from the compaction revision on works.
func testWatchCompacted(t *testing.T, h Harness) {
	if h.Compact == nil {
		t.Skip("the harness cannot compact")
	}
	s := h.Open(t)
	r1 := do(t, s, metakv.Put("k/a", value("1")))
	r2 := do(t, s, metakv.Put("k/a", value("2")))
	r3 := do(t, s, metakv.Put("k/a", value("3")))
	h.Compact(t, s, r2)

	w := s.Watch(t.Context(), "k/", r1-1)
	r := recv(t, w)
	if !errors.Is(r.Err, metakv.ErrCompacted) || len(r.Events) != 0 {
		t.Fatalf("watch from %d after compacting to %d: %+v, want ErrCompacted", r1-1, r2, r)
	}
	if rest := closed(t, w); len(rest) != 0 {
		t.Fatalf("watch went on after ErrCompacted: %+v", rest)
	}

	// History from r2 on is kept: a watch from r1 starts at r2.
	evs, _ := collect(t, s.Watch(t.Context(), "k/", r1), 2)
	wantEvent(t, evs[0], "k/a", "2", r2)
	wantEvent(t, evs[1], "k/a", "3", r3)

	// The recovery the doc prescribes: List, and watch from its revision.
	kvs, rl, err := s.List(t.Context(), "k/")
	if err != nil || len(kvs) != 1 || string(kvs[0].Value) != "3" {
		t.Fatalf("List after compaction: %v %v", kvs, err)
	}
	w = s.Watch(t.Context(), "k/", rl)
	r4 := do(t, s, metakv.Put("k/a", value("4")))
	evs, _ = collect(t, w, 1)
	wantEvent(t, evs[0], "k/a", "4", r4)
}
