package raft

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	"github.com/cosmosd/cosmosd/storage"
)

// benchWriters is the number of concurrent writers of every write
// benchmark, replicated or not, so the figures compare.
const benchWriters = 64

var benchValue = func() string {
	b := make([]byte, 1024)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return string(b)
}()

// BenchmarkReplicatedWrite measures 1 KB writes through raft on a 4-node
// in-process cluster: four engines, each with its own Pebble store (fsync
// on) in its own directory, talking gRPC over loopback. Every group has a
// replica on each node; writers spread over the groups and propose to each
// group's leader. Reported: ops/s, p50 and p99 latency, allocations per op
// (of the whole process: all four nodes).
func BenchmarkReplicatedWrite(b *testing.B) {
	for _, groups := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) { benchReplicated(b, groups, benchWriters) })
	}
}

// BenchmarkReplicatedWriteSerial is BenchmarkReplicatedWrite with one
// writer: the latency of one write alone (no batching to hide behind),
// which BenchmarkPebbleSyncWriteSerial bounds.
func BenchmarkReplicatedWriteSerial(b *testing.B) { benchReplicated(b, 1, 1) }

func benchReplicated(b *testing.B, groups, writers int) {
	book := &addrBook{addrs: map[consensus.NodeID]string{}}
	var nodes []grpcNode
	var stores []*storage.Engine
	defer func() {
		for _, n := range nodes {
			_ = n.Close()
		}
		for _, s := range stores {
			_ = s.Close()
		}
	}()
	members := make([]consensus.Replica, 4)
	for i := range members {
		members[i] = consensus.Replica{ReplicaID: consensus.ReplicaID(i + 1), NodeID: consensus.NodeID(i + 1)}
	}
	for i := 1; i <= 4; i++ {
		st, err := storage.Open(storage.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		stores = append(stores, st)
		n, err := startGRPCNode(consensus.NodeID(i), st, book, func(cfg *Config) {
			cfg.TickInterval = 0 // production default (100ms)
			cfg.SetDefaults()
		})
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	handles := make([][]consensus.Group, groups) // [group][node]
	for g := range groups {
		for i, n := range nodes {
			kv, err := consensustest.NewKV(stores[i], consensus.GroupID(g+1))
			if err != nil {
				b.Fatal(err)
			}
			h, err := n.StartGroup(context.Background(), consensus.GroupConfig{ID: consensus.GroupID(g + 1), ReplicaID: consensus.ReplicaID(i + 1), Members: members, StateMachine: kv})
			if err != nil {
				b.Fatal(err)
			}
			handles[g] = append(handles[g], h)
		}
	}
	leaderOf := func(g int) consensus.Group {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			for _, h := range handles[g] {
				if h.Status().IsLeader() {
					return h
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.Fatalf("group %d: no leader", g+1)
		return nil
	}
	leaders := make([]atomic.Pointer[consensus.Group], groups)
	for g := range groups {
		l := leaderOf(g)
		leaders[g].Store(&l)
	}

	lat := make([][]time.Duration, writers)
	var next atomic.Int64
	var failed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			g := w % groups
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				cmd := consensustest.Put(fmt.Sprintf("w%d-%d", w, i), benchValue)
				t0 := time.Now()
				for {
					l := *leaders[g].Load()
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					_, err := l.Propose(ctx, cmd)
					cancel()
					if err == nil {
						break
					}
					var nl *consensus.NotLeaderError
					if !errors.As(err, &nl) {
						failed.Add(1)
						break
					}
					nl2 := leaderOf(g)
					leaders[g].Store(&nl2)
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d writes failed", f)
	}
	reportLatencies(b, lat, elapsed)
}

// BenchmarkPebbleSyncWrite is the limit the replicated writes are compared
// with: the same 1 KB writes from the same number of writers, each
// committed with sync to one raw Pebble store (whose commit pipeline shares
// fsyncs between concurrent writers).
func BenchmarkPebbleSyncWrite(b *testing.B) { benchPebbleSync(b, benchWriters) }

// BenchmarkPebbleSyncWriteSerial is BenchmarkPebbleSyncWrite with one
// writer: one fsync per write.
func BenchmarkPebbleSyncWriteSerial(b *testing.B) { benchPebbleSync(b, 1) }

func benchPebbleSync(b *testing.B, writers int) {
	st, err := storage.Open(storage.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	lat := make([][]time.Duration, writers)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				t0 := time.Now()
				batch := st.NewWriteBatch()
				if err := batch.Set(consensustest.Key(1, fmt.Sprintf("w%d-%d", w, i)), []byte(benchValue)); err != nil {
					errs <- err
					return
				}
				if err := batch.Commit(true); err != nil {
					errs <- err
					return
				}
				_ = batch.Close()
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	reportLatencies(b, lat, elapsed)
}

func reportLatencies(b *testing.B, per [][]time.Duration, elapsed time.Duration) {
	var all []time.Duration
	for _, l := range per {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000 }
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkReadIndex measures linearizable reads (ReadIndex) issued one
// after another on the leader of one group on an in-memory network: a
// scheduling cycle and, with 4 replicas, a heartbeat round per read; with
// one replica raft answers in the cycle.
func BenchmarkReadIndex(b *testing.B) {
	for _, replicas := range []int{1, 4} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) { benchReadIndex(b, replicas) })
	}
}

func benchReadIndex(b *testing.B, replicas int) {
	net := NewMemNetwork(1)
	defer net.Close()
	members := make([]consensus.Replica, replicas)
	handles := make([]consensus.Group, replicas)
	for i := range members {
		members[i] = consensus.Replica{ReplicaID: consensus.ReplicaID(i + 1), NodeID: consensus.NodeID(i + 1)}
	}
	for i := range members {
		st, err := storage.Open(storage.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		cfg := testConfig(consensus.NodeID(i+1), st, net)
		cfg.Logger = nil
		e, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		kv, err := consensustest.NewKV(st, 1)
		if err != nil {
			b.Fatal(err)
		}
		if handles[i], err = e.StartGroup(context.Background(), consensus.GroupConfig{ID: 1, ReplicaID: members[i].ReplicaID, Members: members, StateMachine: kv}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var leader consensus.Group
	for leader == nil {
		for _, h := range handles {
			if h.Status().IsLeader() {
				leader = h
			}
		}
		if ctx.Err() != nil {
			b.Fatal("no leader")
		}
		time.Sleep(time.Millisecond)
	}
	// A write of the leader's term: raft (and, for one voter, readHold)
	// answers reads only after one.
	if _, err := leader.Propose(ctx, consensustest.Put("k", "v")); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		t0 := time.Now()
		if err := leader.ReadIndex(ctx); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	reportLatencies(b, [][]time.Duration{lat}, elapsed)
}
