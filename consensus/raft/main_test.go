package raft

import (
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	"github.com/cosmosd/cosmosd/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testLogger logs to stderr when COSMOSD_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("COSMOSD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}

// testConfig is the engine configuration of tests: fast ticks so that
// elections take a fraction of a second.
func testConfig(node consensus.NodeID, st *storage.Engine, net *MemNetwork) Config {
	cfg := Config{
		NodeID:       node,
		Storage:      st,
		TickInterval: 10 * time.Millisecond,
		Logger:       testLogger(),
	}
	if net != nil {
		cfg.TestingKnobs = &TestingKnobs{Transport: net.Transport(node)}
	}
	return cfg
}

// memHarness runs engines on one MemNetwork per cluster; tweak adjusts each
// engine's configuration.
func memHarness(replicas int, tweak func(*Config)) (consensustest.Harness, func(t *testing.T) *MemNetwork) {
	var nets = map[*testing.T]*MemNetwork{}
	h := consensustest.Harness{
		Replicas: replicas,
		NewCluster: func(t *testing.T) func(consensus.NodeID, *storage.Engine) (consensus.Engine, error) {
			net := NewMemNetwork(time.Now().UnixNano())
			t.Cleanup(net.Close)
			nets[t] = net
			return func(node consensus.NodeID, st *storage.Engine) (consensus.Engine, error) {
				cfg := testConfig(node, st, net)
				if tweak != nil {
					tweak(&cfg)
				}
				return New(cfg)
			}
		},
	}
	return h, func(t *testing.T) *MemNetwork { return nets[t] }
}

func TestConformanceOneReplica(t *testing.T) {
	h, _ := memHarness(1, nil)
	consensustest.RunEngineConformance(t, h)
}

func TestConformanceFourReplicas(t *testing.T) {
	h, _ := memHarness(4, nil)
	consensustest.RunEngineConformance(t, h)
}

// TestConformanceLeaseReads runs the suite with leader-lease reads
// (raft's ReadOnlyLeaseBased).
func TestConformanceLeaseReads(t *testing.T) {
	h, _ := memHarness(4, func(cfg *Config) { cfg.LeaseReads = true })
	consensustest.RunEngineConformance(t, h)
}

// TestConformanceCrashable runs the suite on crashable in-memory
// filesystems: its restarts are crashes that drop what was not synced, so
// a missing or misplaced fsync fails it. One replica is a case of its own:
// a group of one voter commits without any peer, and raft answers its read
// index without a round (see readHold).
func TestConformanceCrashable(t *testing.T) {
	for _, replicas := range []int{1, 4} {
		t.Run(fmt.Sprintf("%dReplicas", replicas), func(t *testing.T) {
			h, netOf := memHarness(replicas, nil)
			h.Crashable = true
			h.Silence = func(t *testing.T, node consensus.NodeID, silent bool) {
				if silent {
					netOf(t).Isolate(node)
				} else {
					netOf(t).Rejoin(node)
				}
			}
			consensustest.RunEngineConformance(t, h)
		})
	}
}
