package clustertest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/daemon"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// latencies records request latencies of a steady client.
type latencies struct {
	mu  sync.Mutex
	obs []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.obs = append(l.obs, d); l.mu.Unlock() }

func (l *latencies) take() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.obs
	l.obs = nil
	return out
}

func percentile(obs []time.Duration, p float64) time.Duration {
	if len(obs) == 0 {
		return 0
	}
	sort.Slice(obs, func(i, j int) bool { return obs[i] < obs[j] })
	return obs[min(len(obs)-1, int(p*float64(len(obs))))]
}

// BenchmarkRebalanceAfterAddingNode loads 4 nodes, adds a fifth and
// measures how long the controller takes to even out replicas, how many
// bytes the moved replicas held, and the p99 latency of a steady client
// before and during the rebalance.
func BenchmarkRebalanceAfterAddingNode(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchRebalance(b)
	}
}

func benchRebalance(b *testing.B) {
	c := testcluster.Start(b, testcluster.Options{Nodes: 4, Configure: func(i int, cfg *daemon.Config) {
		cfg.DeadAfter = time.Hour
		cfg.RegistrationTTL = 2 * time.Second
	}})
	cc := c.NewClusterConfig(0)
	cc.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 8}
	cc.NumConns = 2
	s, err := cc.CreateSession()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE ks.t (k text, i int, v text, PRIMARY KEY (k, i)) WITH cosmosdb_provisioned_throughput = 80000",
	} {
		if err := s.Query(q).Exec(); err != nil {
			b.Fatal(err)
		}
	}
	// About 8 MB over 8 partitions.
	value := strings.Repeat("v", 1000)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				if err := s.Query("INSERT INTO ks.t (k, i, v) VALUES (?, ?, ?)", fmt.Sprintf("k%d", (w*1000+i)%400), w*1000+i, value).Idempotent(true).Exec(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	a := c.Admin(b, 0)
	ctx := context.Background()
	ring, err := a.ShowRing(ctx, &adminpb.ShowRingRequest{Table: "ks.t"})
	if err != nil {
		b.Fatal(err)
	}
	bytesOf := map[uint64]int64{}
	replicasBefore := map[uint64]map[uint64]bool{}
	for _, p := range ring.GetPartitions() {
		bytesOf[p.GetId()] = p.GetBytes()
		replicasBefore[p.GetId()] = map[uint64]bool{}
		for _, r := range p.GetReplicas() {
			replicasBefore[p.GetId()][r.GetNodeId()] = true
		}
	}
	// A steady client: one read-modify stream, latency per request.
	var lat latencies
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			if err := s.Query("INSERT INTO ks.t (k, i, v) VALUES (?, ?, ?)", fmt.Sprintf("k%d", i%400), 100000+i, "x").Idempotent(true).Exec(); err == nil {
				lat.add(time.Since(t0))
			}
		}
	}()
	time.Sleep(5 * time.Second) // the "before" measurement window
	before := lat.take()
	start := time.Now()
	c.AddNode()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if ok, _ := balanced(c); ok {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("no balance within 5 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	during := lat.take()
	close(stop)
	<-done
	ring, err = a.ShowRing(ctx, &adminpb.ShowRingRequest{Table: "ks.t"})
	if err != nil {
		b.Fatal(err)
	}
	var moved int64
	moves := 0
	for _, p := range ring.GetPartitions() {
		for _, r := range p.GetReplicas() {
			if !replicasBefore[p.GetId()][r.GetNodeId()] {
				moved += bytesOf[p.GetId()]
				moves++
			}
		}
	}
	b.ReportMetric(took.Seconds(), "rebalance-s")
	b.ReportMetric(float64(moves), "replicas-moved")
	b.ReportMetric(float64(moved)/(1<<20), "MiB-moved")
	b.ReportMetric(float64(percentile(before, 0.99).Microseconds())/1000, "p99-before-ms")
	b.ReportMetric(float64(percentile(during, 0.99).Microseconds())/1000, "p99-during-ms")
	b.Logf("rebalance after adding a node: %s, %d replicas (%.1f MiB) moved; p99 %s before, %s during (%d/%d samples)",
		took.Round(10*time.Millisecond), moves, float64(moved)/(1<<20), percentile(before, 0.99), percentile(during, 0.99), len(before), len(during))
}
