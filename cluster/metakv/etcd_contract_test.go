// The tests of this file pin what etcd.go adds to etcd's client so that it
// keeps the package's contracts where etcd alone does not (each failed
// before etcd.go did the work): a put with a gone lease reports
// ErrLeaseNotFound, a holding outlives Campaign's context, and a candidate
// whose session was lost while waiting gets an error, not a holding of
// nothing.
package metakv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster/metakv"
)

func contractStore(t *testing.T) metakv.Store {
	return metakv.NewEtcd(embeddedEtcd(t), "/contract/")
}

// A put with a revoked or expired lease fails with ErrLeaseNotFound: etcd's
// own error, which errors.Is did not match, goes through leaseErr.
func TestEtcdPutWithGoneLease(t *testing.T) {
	s := contractStore(t)
	ctx := t.Context()
	id, err := s.Grant(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, err = metakv.Do(ctx, s, metakv.PutLeased("k", nil, id))
	if !errors.Is(err, metakv.ErrLeaseNotFound) {
		t.Fatalf("put with a revoked lease: %v, want ErrLeaseNotFound", err)
	}
}

// The usual call, Campaign under a context bounded for the wait, keeps the
// holding after that context is released: the session has a context of
// its own (it used to live on Campaign's, so Done closed at once while the
// fence still held until the TTL passed).
func TestEtcdHoldingOutlivesCampaignContext(t *testing.T) {
	s := contractStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	l, err := s.Campaign(ctx, "el", "a", time.Second)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Resign(t.Context())
	select {
	case <-l.Done():
		t.Fatal("the holding ended when the context of Campaign's wait was released")
	case <-time.After(3 * time.Second):
	}
}

// A candidate whose session was lost while it waited gets an error:
// concurrency.Election.Campaign only waits for the earlier candidates' keys
// to go and never checks its own, so it returned a holding of nothing
// until etcd.go checked.
func TestEtcdCampaignLostWhileWaiting(t *testing.T) {
	s := contractStore(t)
	ctx := t.Context()
	a, err := s.Campaign(ctx, "el", "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	var b metakv.Leadership
	go func() {
		var err error
		b, err = s.Campaign(ctx, "el", "b", time.Second)
		res <- err
	}()
	var kvs []metakv.KeyValue
	waitUntil(t, func() bool { kvs, _, _ = s.List(ctx, "el/"); return len(kvs) == 2 })
	for _, kv := range kvs {
		if string(kv.Value) == "b" {
			if err := s.Revoke(ctx, kv.Lease); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err == nil {
		_, held, _ := s.Leader(ctx, "el")
		t.Fatalf("Campaign won after its session was lost (Done closed: %v, election held: %v)", isClosed(b.Done()), held)
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
