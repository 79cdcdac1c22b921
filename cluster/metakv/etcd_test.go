package metakv_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosmosd/cosmosd/cluster/embedded"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/cluster/metakv/metakvtest"
)

// embeddedEtcd starts a real single-member etcd and returns a client of
// it (the contract tests' store runs on it too).
func embeddedEtcd(t *testing.T) *clientv3.Client { return embedded.StartForTest(t) }

// etcdHarness opens each subtest's store under a prefix of its own in one
// etcd, so the stores share etcd's revision counter.
func etcdHarness(cli *clientv3.Client) metakvtest.Harness {
	var n atomic.Int64
	return metakvtest.Harness{
		Open: func(t *testing.T) metakv.Store {
			return metakv.NewEtcd(cli, fmt.Sprintf("/metakvtest/%d/", n.Add(1)))
		},
		Compact: func(t *testing.T, _ metakv.Store, rev int64) {
			if _, err := cli.Compact(t.Context(), rev); err != nil {
				t.Fatalf("compact to %d: %v", rev, err)
			}
		},
		// etcd's floor: 1.5 election timeouts (1 s by default), rounded
		// up to a second.
		MinLeaseTTL: 2 * time.Second,
	}
}

func TestEtcdConformance(t *testing.T) {
	metakvtest.Run(t, etcdHarness(embeddedEtcd(t)))
}

// DialEtcd connects under a prefix, answers Ping, and reports a member's
// status; an empty prefix is refused.
func TestDialEtcd(t *testing.T) {
	raw := embeddedEtcd(t)
	if _, err := metakv.DialEtcd(metakv.EtcdClientConfig{Endpoints: raw.Endpoints()}); err == nil {
		t.Fatal("dialing without a key prefix succeeded")
	}
	cli, err := metakv.DialEtcd(metakv.EtcdClientConfig{Endpoints: raw.Endpoints(), Prefix: "/dial/"})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if err := cli.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := metakv.Do(t.Context(), cli.Store(), metakv.Put("k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	// The store's keys live under the prefix.
	if resp, err := raw.Get(t.Context(), "/dial/k"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("key under the prefix: %v %v", resp, err)
	}
	if eps := cli.Endpoints(); len(eps) != 1 || eps[0] != raw.Endpoints()[0] {
		t.Fatalf("endpoints %v", eps)
	}
	st, err := cli.MemberStatus(t.Context(), raw.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	if st.ID == 0 || st.Leader != st.ID {
		t.Fatalf("status of a single member: %+v, want it to lead", st)
	}
	cli.CancelPending()
	if err := cli.Ping(t.Context()); err != nil {
		t.Fatalf("a call with its own context after CancelPending: %v", err)
	}
}
