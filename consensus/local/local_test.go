package local

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	"github.com/cosmosd/cosmosd/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newEngines makes the local engine of each node of a conformance cluster.
func newEngines(*testing.T) func(consensus.NodeID, *storage.Engine) (consensus.Engine, error) {
	return func(node consensus.NodeID, st *storage.Engine) (consensus.Engine, error) {
		return New(Config{NodeID: node, Storage: st})
	}
}

func TestConformance(t *testing.T) {
	consensustest.RunEngineConformance(t, consensustest.Harness{Replicas: 1, NewCluster: newEngines})
}

// The same suite on a crashable disk: its crash cases (restarts keeping
// only what was synced) check that the engine syncs before it answers.
func TestConformanceCrashable(t *testing.T) {
	consensustest.RunEngineConformance(t, consensustest.Harness{Replicas: 1, Crashable: true, NewCluster: newEngines})
}
