package metakvtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster/metakv"
)

var leaseCases = []testCase{
	{"Lease/RevokeDeletesKeysInOneRevision", testLeaseRevoke},
	{"Lease/UnknownLease", testLeaseUnknown},
	{"Lease/OverwriteMovesKeyToNewLease", testLeaseOverwrite},
}

// longTTL is for leases that must not expire during a test.
const longTTL = time.Minute

func grant(t *testing.T, s metakv.Store, ttl time.Duration) metakv.LeaseID {
	t.Helper()
	id, err := s.Grant(t.Context(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	if id == 0 {
		t.Fatal("Grant returned lease 0")
	}
	t.Cleanup(func() {
		ctx, cancel := quiet()
		defer cancel()
		_ = s.Revoke(ctx, id) // most tests end their leases themselves
	})
	return id
}

func wantLeaseNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, metakv.ErrLeaseNotFound) {
		t.Fatalf("%s: %v, want ErrLeaseNotFound", what, err)
	}
}

// Revoke deletes the lease's keys, and only them, in one revision.
func testLeaseRevoke(t *testing.T, h Harness) {
	s := h.Open(t)
	id := grant(t, s, longTTL)
	do(t, s, metakv.PutLeased("l/1", value("1"), id), metakv.PutLeased("l/2", value("2"), id))
	r0 := do(t, s, metakv.Put("l/3", nil))
	if kv, _ := get(t, s, "l/1"); kv.Lease != id {
		t.Fatalf("leased key has lease %x, want %x", kv.Lease, id)
	}
	if err := s.KeepAliveOnce(t.Context(), id); err != nil {
		t.Fatalf("renewing a live lease: %v", err)
	}
	w := s.Watch(t.Context(), "l/", r0)
	if err := s.Revoke(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if r := revision(t, s); r != r0+1 {
		t.Fatalf("revoke: revision %d, want %d", r, r0+1)
	}
	if got := keys(list(t, s, "l/")); len(got) != 1 || got[0] != "l/3" {
		t.Fatalf("after revoke: %q, want [l/3]", got)
	}
	evs, resps := collect(t, w, 2)
	if len(resps) != 1 {
		t.Fatalf("a revoke's 2 deletions came in %d responses", len(resps))
	}
	wantEvent(t, evs[0], "l/1", "-", r0+1)
	wantEvent(t, evs[1], "l/2", "-", r0+1)

	wantLeaseNotFound(t, "KeepAliveOnce of a revoked lease", s.KeepAliveOnce(t.Context(), id))
	wantLeaseNotFound(t, "Revoke of a revoked lease", s.Revoke(t.Context(), id))
	if _, err := metakv.Do(t.Context(), s, metakv.Put("l/4", nil), metakv.PutLeased("l/5", nil, id)); err == nil {
		t.Fatal("put with a revoked lease: no error")
	}
	if exists(t, s, "l/4") {
		t.Fatal("a txn that failed on its lease wrote its other put")
	}
	// A lease without keys goes without a revision.
	empty := grant(t, s, longTTL)
	if err := s.Revoke(t.Context(), empty); err != nil {
		t.Fatal(err)
	}
	if r := revision(t, s); r != r0+1 {
		t.Fatalf("revoking a lease without keys: revision %d, want %d", r, r0+1)
	}
}

// A lease that never was behaves as a revoked one.
func testLeaseUnknown(t *testing.T, h Harness) {
	s := h.Open(t)
	const never = metakv.LeaseID(0x7eadbeef12345)
	wantLeaseNotFound(t, "Revoke", s.Revoke(t.Context(), never))
	wantLeaseNotFound(t, "KeepAliveOnce", s.KeepAliveOnce(t.Context(), never))
	// KeepAlive may fail at once or return a channel that closes.
	ka, err := s.KeepAlive(t.Context(), never)
	if err != nil {
		wantLeaseNotFound(t, "KeepAlive", err)
		return
	}
	select {
	case _, ok := <-ka:
		if ok {
			// A renewal of an unknown lease is a lie; the channel must
			// then close.
			t.Fatal("KeepAlive of an unknown lease renewed it")
		}
	case <-time.After(patience):
		t.Fatal("KeepAlive of an unknown lease did not close")
	}
}

// A put moves a key to the put's lease (or to none): the old lease no
// longer deletes it.
func testLeaseOverwrite(t *testing.T, h Harness) {
	s := h.Open(t)
	a, b := grant(t, s, longTTL), grant(t, s, longTTL)
	do(t, s, metakv.PutLeased("plain", nil, a), metakv.PutLeased("moved", nil, a), metakv.PutLeased("kept", nil, a))
	do(t, s, metakv.Put("plain", value("x")), metakv.PutLeased("moved", value("y"), b))
	if kv, _ := get(t, s, "plain"); kv.Lease != 0 {
		t.Fatalf("plain put left lease %x", kv.Lease)
	}
	if kv, _ := get(t, s, "moved"); kv.Lease != b {
		t.Fatalf("moved has lease %x, want %x", kv.Lease, b)
	}
	if err := s.Revoke(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if !exists(t, s, "plain") || !exists(t, s, "moved") || exists(t, s, "kept") {
		t.Fatalf("after revoking the first lease: %q, want [moved plain]", keys(list(t, s, "")))
	}
	if err := s.Revoke(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if exists(t, s, "moved") {
		t.Fatal("moved survived its new lease")
	}
}

// A lease not renewed expires after its TTL, its keys deleted together.
func testLeaseExpires(t *testing.T, h Harness) {
	s := h.Open(t)
	start := time.Now()
	id := grant(t, s, ttl)
	r0 := do(t, s, metakv.PutLeased("e/1", nil, id), metakv.PutLeased("e/2", nil, id), metakv.Put("e/keep", nil))
	w := s.Watch(t.Context(), "e/", r0)
	evs, resps := collect(t, w, 2)
	if elapsed := time.Since(start); elapsed < ttl {
		t.Fatalf("a lease of %s expired after %s", ttl, elapsed)
	}
	if len(resps) != 1 || evs[0].Kv.ModRevision != evs[1].Kv.ModRevision {
		t.Fatalf("an expiry's deletions: %s in %d responses, want one revision", fmtEvents(evs), len(resps))
	}
	wantEvent(t, evs[0], "e/1", "-", evs[0].Kv.ModRevision)
	wantEvent(t, evs[1], "e/2", "-", evs[0].Kv.ModRevision)
	if !exists(t, s, "e/keep") {
		t.Fatal("an unleased key went with the lease")
	}
	wantLeaseNotFound(t, "KeepAliveOnce of an expired lease", s.KeepAliveOnce(t.Context(), id))
}

// KeepAlive renews a lease past its TTL until its ctx ends; then the
// lease expires.
func testKeepAlive(t *testing.T, h Harness) {
	s := h.Open(t)
	id := grant(t, s, ttl)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ka, err := s.KeepAlive(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	do(t, s, metakv.PutLeased("k", nil, id))
	renewals := 0
	hold := time.After(effectiveTTL(h) * 3 / 2)
	for held := false; !held; {
		select {
		case _, ok := <-ka:
			if !ok {
				t.Fatalf("KeepAlive closed after %d renewals of a live lease", renewals)
			}
			renewals++
		case <-hold:
			held = true
		}
	}
	if renewals < 2 {
		t.Fatalf("%d renewals in 1.5 TTLs", renewals)
	}
	if !exists(t, s, "k") {
		t.Fatal("a renewed lease expired")
	}
	cancel()
	select {
	case <-waitClosed(ka):
	case <-time.After(patience):
		t.Fatal("KeepAlive not closed when its ctx ended")
	}
	waitFor(t, "the lease to expire once no longer renewed", func() bool { return !exists(t, s, "k") })
}

// KeepAlive's channel closes when its lease is revoked.
func testKeepAliveClosesWhenGone(t *testing.T, h Harness) {
	s := h.Open(t)
	id := grant(t, s, ttl)
	ka, err := s.KeepAlive(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ka:
	case <-time.After(patience):
		t.Fatal("no first renewal")
	}
	if err := s.Revoke(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waitClosed(ka):
	case <-time.After(patience):
		t.Fatal("KeepAlive not closed after Revoke")
	}
}

// waitClosed is closed when ka is, draining it meanwhile.
func waitClosed(ka <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range ka {
		}
	}()
	return done
}
