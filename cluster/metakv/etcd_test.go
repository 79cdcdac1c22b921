package metakv_test

import (
	"fmt"
	"github.com/cosmosd/cosmosd/cluster/embedded"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/cluster/metakv/metakvtest"
)

// embeddedEtcd starts a real single-member etcd and returns a client of it.
func embeddedEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	e, err := embedded.Start(embedded.Config{Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

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
