package local

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	"github.com/cosmosd/cosmosd/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	consensustest.RunEngineConformance(t, consensustest.Harness{
		Replicas: 1,
		NewCluster: func(t *testing.T) func(consensus.NodeID, *storage.Engine) (consensus.Engine, error) {
			return func(node consensus.NodeID, st *storage.Engine) (consensus.Engine, error) {
				return New(Config{NodeID: node, Storage: st})
			}
		},
	})
}
