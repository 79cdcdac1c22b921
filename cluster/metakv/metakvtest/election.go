package metakvtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster/metakv"
)

type campaignResult struct {
	l   metakv.Leadership
	err error
}

// campaign starts a Campaign; its result comes on the channel.
func campaign(ctx context.Context, s metakv.Store, election, v string) <-chan campaignResult {
	ch := make(chan campaignResult, 1)
	go func() {
		l, err := s.Campaign(ctx, election, v, ttl)
		ch <- campaignResult{l, err}
	}()
	return ch
}

// won waits for a campaign to succeed.
func won(t *testing.T, ch <-chan campaignResult) metakv.Leadership {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("campaign: %v", r.err)
		}
		return r.l
	case <-time.After(patience):
		t.Fatalf("campaign did not win within %s", patience)
	}
	panic("unreachable")
}

// waiting checks that a campaign has not returned.
func waiting(t *testing.T, ch <-chan campaignResult, who string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s's campaign returned (%v) while another holds the election", who, r.err)
	default:
	}
}

func wantLeader(t *testing.T, s metakv.Store, election, want string) {
	t.Helper()
	v, ok, err := s.Leader(t.Context(), election)
	if err != nil {
		t.Fatal(err)
	}
	if want == "" && ok {
		t.Fatalf("leader %q, want none", v)
	}
	if want != "" && (!ok || v != want) {
		t.Fatalf("leader %q (ok %v), want %q", v, ok, want)
	}
}

// candidates waits until the election has n candidate keys.
func candidates(t *testing.T, s metakv.Store, election string, n int) []metakv.KeyValue {
	t.Helper()
	var kvs []metakv.KeyValue
	waitFor(t, "the candidates to register", func() bool {
		kvs = list(t, s, election+"/")
		return len(kvs) == n
	})
	return kvs
}

func resign(t *testing.T, l metakv.Leadership) {
	t.Helper()
	if err := l.Resign(t.Context()); err != nil {
		t.Fatalf("resign: %v", err)
	}
	select {
	case <-l.Done():
	case <-time.After(patience):
		t.Fatal("Done not closed after Resign")
	}
}

func isDone(l metakv.Leadership) bool {
	select {
	case <-l.Done():
		return true
	default:
		return false
	}
}

// One holder at a time, in order of arrival; the fence of a former holder
// fails.
func testElectionOrder(t *testing.T, h Harness) {
	s := h.Open(t)
	const el = "el"
	a := won(t, campaign(t.Context(), s, el, "a"))
	wantLeader(t, s, el, "a")
	kvs := candidates(t, s, el, 1)
	if !strings.HasPrefix(kvs[0].Key, el+"/") || string(kvs[0].Value) != "a" || kvs[0].Lease == 0 {
		t.Fatalf("candidate record %+v: want a leased key under %s/ holding the value", kvs[0], el)
	}
	if !holds(t, s, a.Fence()) || isDone(a) {
		t.Fatal("the holder's fence fails or its Done is closed")
	}
	bc := campaign(t.Context(), s, el, "b")
	candidates(t, s, el, 2)
	cc := campaign(t.Context(), s, el, "c")
	candidates(t, s, el, 3)
	waiting(t, bc, "b")
	waiting(t, cc, "c")
	wantLeader(t, s, el, "a")

	resign(t, a)
	b := won(t, bc)
	wantLeader(t, s, el, "b")
	if holds(t, s, a.Fence()) {
		t.Fatal("the former holder's fence holds")
	}
	if !holds(t, s, b.Fence()) {
		t.Fatal("the holder's fence fails")
	}
	// A write fenced by the former holder loses to the successor.
	fenced := func(l metakv.Leadership, v string) bool {
		return txn(t, s, metakv.Txn{If: []metakv.Cond{l.Fence()}, Then: []metakv.Op{metakv.Put("decision", value(v))}}).Succeeded
	}
	if fenced(a, "a") || !fenced(b, "b") {
		t.Fatal("fenced writes: the former holder's must fail, the holder's succeed")
	}
	waiting(t, cc, "c")

	resign(t, b)
	c := won(t, cc)
	wantLeader(t, s, el, "c")
	resign(t, c)
	wantLeader(t, s, el, "")
	if kvs := list(t, s, el+"/"); len(kvs) != 0 {
		t.Fatalf("candidates left after all resigned: %q", keys(kvs))
	}
}

// A campaign whose ctx ends while waiting fails and withdraws.
func testElectionCancelWaiting(t *testing.T, h Harness) {
	s := h.Open(t)
	const el = "el"
	a := won(t, campaign(t.Context(), s, el, "a"))
	ctx, cancel := context.WithCancel(t.Context())
	bc := campaign(ctx, s, el, "b")
	candidates(t, s, el, 2)
	cancel()
	select {
	case r := <-bc:
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("canceled campaign: %v, want context.Canceled", r.err)
		}
	case <-time.After(patience):
		t.Fatal("canceled campaign did not return")
	}
	candidates(t, s, el, 1)
	wantLeader(t, s, el, "a")
	resign(t, a)
	wantLeader(t, s, el, "")
}

// A holder whose session lease is lost is told (Done), its fence fails
// and the next candidate takes over.
func testElectionLostSession(t *testing.T, h Harness) {
	s := h.Open(t)
	const el = "el"
	a := won(t, campaign(t.Context(), s, el, "a"))
	bc := campaign(t.Context(), s, el, "b")
	kvs := candidates(t, s, el, 2)
	var lease metakv.LeaseID
	for _, kv := range kvs {
		if string(kv.Value) == "a" {
			lease = kv.Lease
		}
	}
	if err := s.Revoke(t.Context(), lease); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	case <-time.After(patience):
		t.Fatal("Done not closed when the session's lease was lost")
	}
	if holds(t, s, a.Fence()) {
		t.Fatal("the fence of a lost holding holds")
	}
	b := won(t, bc)
	wantLeader(t, s, el, "b")
	// Resigning a lost holding returns (an error is allowed: etcd reports
	// the lease not found) and does not disturb the successor.
	_ = a.Resign(t.Context())
	if !holds(t, s, b.Fence()) {
		t.Fatal("the successor's fence fails after the lost holder resigned")
	}
	resign(t, b)
}

// Campaign's ctx bounds the session (as etcd's concurrency session does
// with the context it is made with): when it ends, renewals stop and Done
// closes at once, and the holding lapses within the session's TTL.
func testElectionCampaignContext(t *testing.T, h Harness) {
	s := h.Open(t)
	const el = "el"
	// Campaign's ctx bounds the wait, not the holding: the usual call
	// releases a context bounded for the wait as soon as it returns.
	ctx, cancel := context.WithCancel(t.Context())
	a := won(t, campaign(ctx, s, el, "a"))
	cancel()
	select {
	case <-a.Done():
		t.Fatal("the holding ended with the context of Campaign's wait")
	case <-time.After(3 * time.Second): // longer than the 2s TTL of a lease not renewed
	}
	if !holds(t, s, a.Fence()) {
		t.Fatal("the holding's fence does not hold")
	}
	wantLeader(t, s, el, "a")
	resign(t, a)
}

func testElectionNoLeader(t *testing.T, h Harness) {
	s := h.Open(t)
	wantLeader(t, s, "nobody", "")
	// A key under the election's name that is not a candidate's prefix
	// does not make a leader.
	do(t, s, metakv.Put("nobodyelse/x", value("x")))
	wantLeader(t, s, "nobody", "")
}
