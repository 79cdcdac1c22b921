package daemon

import (
	"errors"

	"github.com/cosmosd/cosmosd/consensus"
)

// newRaftEngine builds the multi-raft engine.
func newRaftEngine(n *Node) (consensus.Engine, error) {
	return nil, errors.New("the raft engine is not built into this version yet; use --consensus local")
}
