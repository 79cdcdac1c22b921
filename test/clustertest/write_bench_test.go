package clustertest

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/test/testcluster"
)

// BenchmarkCQLOps runs YCSB-like operations (records of ten 100-byte
// fields, QUORUM) through the whole stack: gocql, the CQL front end, the
// router (forwarding when the driver's node does not lead), 4 raft
// replicas on loopback gRPC and Pebble on disk, all in this process. It
// reports the process's CPU per operation (µs, from rusage), which covers
// the client too, and is the tool to profile the write path with
// (-cpuprofile, -memprofile): `make bench` runs it. Each sub-benchmark
// starts its own cluster.
func BenchmarkCQLOps(b *testing.B) {
	b.Run("update", func(b *testing.B) { benchCQL(b, false) })
	b.Run("read", func(b *testing.B) { benchCQL(b, true) })
}

func benchCQL(b *testing.B, read bool) {
	const (
		records = 1000
		fields  = 10
	)
	c := testcluster.Start(b, testcluster.Options{Nodes: 4})
	cc := c.NewClusterConfig(0)
	cc.NumConns = 2
	cc.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	cc.WriteCoalesceWaitTime = 0
	s, err := cc.CreateSession()
	if err != nil {
		b.Fatalf("session: %v", err)
	}
	defer s.Close()
	cols := make([]string, fields)
	for i := range cols {
		cols[i] = fmt.Sprintf("field%d", i)
	}
	for _, q := range []string{
		"CREATE KEYSPACE ycsb WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 4}",
		"CREATE TABLE ycsb.usertable (ycsb_key text PRIMARY KEY, " + strings.Join(cols, " text, ") + " text) WITH cosmosdb_provisioned_throughput = 160000",
	} {
		if err := s.Query(q).Exec(); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	insert := "INSERT INTO ycsb.usertable (ycsb_key, " + strings.Join(cols, ", ") + ") VALUES (?" + strings.Repeat(", ?", fields) + ")"
	value := strings.Repeat("x", 100)
	args := func(key string) []any {
		a := []any{key}
		for range fields {
			a = append(a, value)
		}
		return a
	}
	for i := range records {
		if err := s.Query(insert, args(fmt.Sprintf("user%d", i))...).Exec(); err != nil {
			b.Fatalf("load: %v", err)
		}
	}
	sel := "SELECT " + strings.Join(cols, ", ") + " FROM ycsb.usertable WHERE ycsb_key = ?"

	var failed atomic.Int64
	syncs, cycles := metricSum(b, c, "cosmosd_raft_wal_syncs_total"), metricSum(b, c, "cosmosd_raft_cycles_total")
	cycleSecs := metricSum(b, c, "cosmosd_raft_cycle_seconds_total")
	syncSecs := metricSum(b, c, "cosmosd_raft_wal_sync_seconds_total")
	stageNames := []string{"queue", "commit", "answer"}
	applied := metricSum(b, c, "cosmosd_raft_proposals_applied_total")
	stages := make([]float64, len(stageNames))
	for i, st := range stageNames {
		stages[i] = metricSum(b, c, "cosmosd_raft_proposal_"+st+"_seconds_total")
	}
	start, before := time.Now(), cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	b.SetParallelism(16) // 16 × GOMAXPROCS clients
	b.RunParallel(func(pb *testing.PB) {
		dest := make([]any, fields)
		for i := range dest {
			dest[i] = new(string)
		}
		for pb.Next() {
			key := fmt.Sprintf("user%d", rand.IntN(records))
			var err error
			if read {
				err = s.Query(sel, key).Scan(dest...)
			} else {
				err = s.Query(insert, args(key)...).Exec()
			}
			if err != nil {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric((metricSum(b, c, "cosmosd_raft_wal_syncs_total")-syncs)/float64(b.N), "syncs/op")
	b.ReportMetric((metricSum(b, c, "cosmosd_raft_cycles_total")-cycles)/float64(b.N), "cycles/op")
	if n := metricSum(b, c, "cosmosd_raft_wal_syncs_total") - syncs; n > 0 {
		b.ReportMetric((metricSum(b, c, "cosmosd_raft_wal_sync_seconds_total")-syncSecs)/n*1e3, "sync-ms")
	}
	// The mean stages of a proposal on its leader: waiting for a cycle,
	// until applied (replication, syncs, commit), until the caller ran.
	if n := metricSum(b, c, "cosmosd_raft_proposals_applied_total") - applied; n > 0 {
		for i, st := range stageNames {
			b.ReportMetric((metricSum(b, c, "cosmosd_raft_proposal_"+st+"_seconds_total")-stages[i])/n*1e3, "propose-"+st+"-ms")
		}
	}
	// The share of the time a node's raft scheduler spent in cycles (it
	// runs one at a time): near 1, the scheduler is the bottleneck.
	b.ReportMetric((metricSum(b, c, "cosmosd_raft_cycle_seconds_total")-cycleSecs)/time.Since(start).Seconds()/float64(len(c.Nodes)), "sched-busy")
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d operations failed", n, b.N)
	}
}

// metricSum is the sum over the cluster's nodes of an unlabelled metric
// from their /metrics pages.
func metricSum(b *testing.B, c *testcluster.Cluster, name string) float64 {
	var sum float64
	for _, n := range c.Nodes {
		resp, err := http.Get("http://" + n.HTTPAddr() + "/metrics")
		if err != nil {
			b.Fatalf("metrics: %v", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatalf("metrics: %v", err)
		}
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					b.Fatalf("metric %s: %v", line, err)
				}
				sum += f
			}
		}
	}
	return sum
}

// cpuTime is the user and system CPU time of this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
