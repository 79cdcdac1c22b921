package raft

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
)

// linInput is one operation on a list register: append value, or read.
type linInput struct {
	key    string
	append string // "" for a read
}

// linOutput is an operation's result; unknown marks an append whose fate
// the client could not learn (its return time is then the end of time).
type linOutput struct {
	list    string // reads: the elements joined by ","
	unknown bool
}

// listModel is a register per key holding a list that appends extend.
var listModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(linInput).key
			by[k] = append(by[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return "" },
	Hash: func(state any) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(string)))
		return h.Sum64()
	},
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(string), input.(linInput), output.(linOutput)
		if in.append != "" {
			if s == "" {
				return true, in.append
			}
			return true, s + "," + in.append
		}
		return out.list == s, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		if in.append != "" {
			return fmt.Sprintf("append(%s, %s) unknown=%v", in.key, in.append, out.unknown)
		}
		return fmt.Sprintf("read(%s) = [%s]", in.key, out.list)
	},
}

// TestLinearizability runs concurrent clients against a group of 4 replicas
// while a nemesis isolates replicas, splits the network 2|2, kills and
// restarts nodes and makes the network drop, duplicate and delay messages.
// The history (appends through Propose; reads through ReadIndex on a random
// replica followed by a local read, and through a Get command) is checked
// with porcupine, and afterwards every acknowledged append must be in the
// final lists exactly once. COSMOSD_LIN_DURATION overrides the duration
// (default 15s, 3s with -short).
func TestLinearizability(t *testing.T) { runLinearizability(t, false) }

// TestLinearizabilityLeaseReads is TestLinearizability with leader leases
// (lease.go): half of the reads go to a replica that believes it leads,
// deposed leaders included, and leadership transfers (whose forced
// elections void leases) join the faults.
func TestLinearizabilityLeaseReads(t *testing.T) { runLinearizability(t, true) }

func runLinearizability(t *testing.T, lease bool) {
	dur := 15 * time.Second
	if testing.Short() {
		dur = 3 * time.Second
	}
	if s := os.Getenv("COSMOSD_LIN_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d, duration %v", seed, dur)
	c, net := newTestCluster(t, 4, func(cfg *Config) {
		cfg.LogTruncateEntries, cfg.LogRetainEntries = 200, 50 // exercise snapshots too
		cfg.LeaseReads = lease
	})
	c.StartGroup(1, c.Members())
	c.Leader(1)

	start := time.Now()
	now := func() int64 { return time.Since(start).Nanoseconds() }
	var (
		histMu  sync.Mutex
		history []porcupine.Operation
		acked   = map[string]bool{}
		unknown = map[string]bool{}
		stats   struct{ appends, reads, failedReads, unknowns, notLeader atomic.Int64 }
	)
	record := func(op porcupine.Operation) {
		histMu.Lock()
		history = append(history, op)
		histMu.Unlock()
	}
	keys := []string{"a", "b", "c", "d"}
	var nodeLocks [5]sync.RWMutex
	stopNode := func(n int) {
		nodeLocks[n].Lock()
		defer nodeLocks[n].Unlock()
		c.StopNode(n)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const clients = 6
	for cl := range clients {
		rng := rand.New(rand.NewSource(seed + int64(cl)))
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := keys[rng.Intn(len(keys))]
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				switch r := rng.Intn(10); {
				case r < 5:
					val := fmt.Sprintf("%d.%d", cl, i)
					call := now()
					_, err := proposeAmong(ctx, c, 1, []int{1, 2, 3, 4}, consensustest.Append(key, val))
					ret := now()
					var nl *consensus.NotLeaderError
					switch {
					case err == nil:
						stats.appends.Add(1)
						record(porcupine.Operation{ClientId: cl, Input: linInput{key: key, append: val}, Call: call, Output: linOutput{}, Return: ret})
						histMu.Lock()
						acked[val] = true
						histMu.Unlock()
					case errors.As(err, &nl) || errors.Is(err, ErrProposalDropped):
						// Provably not applied: not part of the history.
						stats.notLeader.Add(1)
					default:
						stats.unknowns.Add(1)
						record(porcupine.Operation{ClientId: cl, Input: linInput{key: key, append: val}, Call: call, Output: linOutput{unknown: true}, Return: math.MaxInt64})
						histMu.Lock()
						unknown[val] = true
						histMu.Unlock()
					}
				case r < 8:
					node := 1 + rng.Intn(4)
					if lease && rng.Intn(2) == 0 {
						// A replica that believes it leads serves from
						// its lease: the reads a stale lease would break.
						for n := 1; n <= 4; n++ {
							if g := c.Group(n, 1); g != nil && g.Status().IsLeader() {
								node = n
							}
						}
					}
					// Hold the node up while reading its store directly.
					nodeLocks[node].RLock()
					g, kv := c.Group(node, 1), c.KV(node, 1)
					if g == nil || kv == nil {
						nodeLocks[node].RUnlock()
						cancel()
						continue
					}
					call := now()
					err := g.ReadIndex(ctx)
					var list []string
					if err == nil {
						list, err = kv.List(key)
					}
					ret := now()
					nodeLocks[node].RUnlock()
					if err != nil {
						stats.failedReads.Add(1)
						break
					}
					stats.reads.Add(1)
					record(porcupine.Operation{ClientId: cl, Input: linInput{key: key}, Call: call, Output: linOutput{list: strings.Join(list, ",")}, Return: ret})
				default:
					call := now()
					v, err := proposeAmong(ctx, c, 1, []int{1, 2, 3, 4}, consensustest.Get(key))
					ret := now()
					if err != nil {
						stats.failedReads.Add(1)
						break
					}
					list, err := consensustest.DecodeList(v.(consensustest.GetResult).Value)
					if err != nil {
						t.Errorf("decode list: %v", err)
						break
					}
					stats.reads.Add(1)
					record(porcupine.Operation{ClientId: cl, Input: linInput{key: key}, Call: call, Output: linOutput{list: strings.Join(list, ",")}, Return: ret})
				}
				cancel()
			}
		})
	}

	// Nemesis: one fault at a time, each lasting a few hundred ms.
	faults := map[string]int{}
	rng := rand.New(rand.NewSource(seed))
	deadline := time.Now().Add(dur)
	pause := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-stop:
		}
	}
	for time.Now().Before(deadline) {
		pause(time.Duration(100+rng.Intn(200)) * time.Millisecond)
		hold := time.Duration(200+rng.Intn(600)) * time.Millisecond
		kinds := 5
		if lease {
			kinds = 6
		}
		switch f := rng.Intn(kinds); f {
		case 0:
			n := 1 + rng.Intn(4)
			faults["isolate one replica"]++
			net.Isolate(consensus.NodeID(n))
			pause(hold)
			net.Heal()
		case 1:
			p := rng.Perm(4)
			faults["partition 2|2 (no quorum)"]++
			net.Partition(ids(p[0]+1, p[1]+1), ids(p[2]+1, p[3]+1))
			pause(hold)
			net.Heal()
		case 2:
			n := 1 + rng.Intn(4)
			faults["kill and restart a node"]++
			stopNode(n)
			pause(hold)
			c.StartNode(n, 1)
		case 3:
			n := c.Leader(1)
			faults["kill and restart the leader"]++
			stopNode(n)
			pause(hold)
			c.StartNode(n, 1)
		case 4:
			faults["drop/duplicate/delay messages"]++
			net.Faults(0.05, 0.05, 15*time.Millisecond)
			pause(hold)
			net.Faults(0, 0, 0)
		case 5:
			n := c.Leader(1)
			to := consensus.ReplicaID(1 + (n+rng.Intn(3))%4)
			faults["transfer leadership"]++
			if g := c.Group(n, 1); g != nil {
				ctx, cancel := context.WithTimeout(context.Background(), hold)
				_ = g.TransferLeadership(ctx, to)
				cancel()
			}
		}
	}
	close(stop)
	wg.Wait()
	net.Heal()
	net.Faults(0, 0, 0)

	// Every acknowledged append is in the final lists exactly once, and no
	// append is in them twice.
	c.CheckConverged(1)
	final := map[string][]string{}
	for _, k := range keys {
		for n := 1; n <= 4; n++ {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			err := consensustest.ReadIndex(ctx, c.Group(n, 1))
			cancel()
			if err != nil {
				t.Fatalf("final read index on node %d: %v", n, err)
			}
			list, err := c.KV(n, 1).List(k)
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				final[k] = list
			} else if !slices.Equal(list, final[k]) {
				t.Fatalf("key %s: node %d has %v, node 1 has %v", k, n, list, final[k])
			}
		}
	}
	count := map[string]int{}
	for _, l := range final {
		for _, v := range l {
			count[v]++
		}
	}
	lost := 0
	for v := range acked {
		if count[v] != 1 {
			lost++
			t.Errorf("acknowledged append %s found %d times", v, count[v])
		}
	}
	for v, n := range count {
		if n > 1 || (!acked[v] && !unknown[v]) {
			t.Errorf("append %s found %d times (acknowledged %v, unknown %v)", v, n, acked[v], unknown[v])
		}
	}

	// An append with an unknown outcome that is in no final list never took
	// effect: drop it, which keeps the checker's search small.
	checked := slices.DeleteFunc(slices.Clone(history), func(op porcupine.Operation) bool {
		in := op.Input.(linInput)
		return op.Output.(linOutput).unknown && count[in.append] == 0
	})
	checkStart := time.Now()
	res, info := porcupine.CheckOperationsVerbose(listModel, checked, 2*time.Minute)
	t.Logf("checked %d operations in %v", len(checked), time.Since(checkStart).Round(time.Millisecond))
	violations := 0
	if res == porcupine.Illegal {
		violations = 1
		if dir, err := os.MkdirTemp("", "cosmosd-linearizability-"); err == nil {
			path := dir + "/history.html"
			if err := porcupine.VisualizePath(listModel, info, path); err == nil {
				t.Logf("history visualized in %s", path)
			}
		}
	}
	unknownApplied := 0
	for v := range unknown {
		unknownApplied += count[v]
	}
	t.Logf("operations: %d (appends acknowledged %d, reads %d, appends with unknown outcome %d of which applied %d, refused with NotLeader %d, failed reads %d)",
		len(history), stats.appends.Load(), stats.reads.Load(), stats.unknowns.Load(), unknownApplied, stats.notLeader.Load(), stats.failedReads.Load())
	t.Logf("faults injected: %v; network: %+v", faults, net.Stats())
	t.Logf("linearizability: %s, violations: %d; acknowledged appends missing: %d", res, violations, lost)
	if res != porcupine.Ok {
		t.Fatalf("history is not linearizable: %s", res)
	}
}
