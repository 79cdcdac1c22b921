package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/daemon"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// CREATE TABLE ... WITH cosmosdb_provisioned_throughput = 10000000 makes a
// table of 1,000 partitions through CQL on a node with an embedded etcd at
// etcd's default limits, and rows are written to and read from it (issue
// 17: 2,000,000 RU/s failed with "too many operations in txn request").
func TestCreateTableTenMillionRU(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 1,000 partitions")
	}
	c := testcluster.Start(t, testcluster.Options{Nodes: 1, Configure: func(_ int, cfg *daemon.Config) {
		cfg.MaxProvisionedThroughput = 10_000_000
	}})
	s, err := c.NewClusterConfig(0).CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.big (k int PRIMARY KEY, v int) WITH cosmosdb_provisioned_throughput = 10000000",
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st := c.Nodes[0].Meta().State()
	tb := st.Schema.Table("ks", "big")
	if tb == nil {
		t.Fatal("table missing after CREATE TABLE")
	}
	if n := len(st.Ring(tb.ID).Partitions()); n != 1000 {
		t.Fatalf("%d partitions, want 1000", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for k := 0; k < 50; k++ {
		if err := s.Query("INSERT INTO ks.big (k, v) VALUES (?, ?)", k, k).WithContext(ctx).Exec(); err != nil {
			t.Fatalf("insert %d: %v", k, err)
		}
	}
	var n int
	if err := s.Query("SELECT count(*) FROM ks.big").WithContext(ctx).Scan(&n); err != nil || n != 50 {
		t.Fatalf("count %d, %v; want 50", n, err)
	}
}
