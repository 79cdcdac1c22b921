package metakv_test

import (
	"fmt"
	"github.com/cosmosd/cosmosd/cluster/embedded"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

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
