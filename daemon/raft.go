package daemon

import (
	"fmt"
	"path/filepath"

	"google.golang.org/grpc"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/raft"
	"github.com/cosmosd/cosmosd/router"
)

// newRaftEngine builds the multi-raft engine. Peers are found through the
// node registrations in etcd.
func newRaftEngine(n *Node) (consensus.Engine, error) {
	return raft.New(raftConfig(n))
}

// raftConfig is the raft engine's configuration for node n.
func raftConfig(n *Node) raft.Config {
	return raft.Config{
		NodeID:      consensus.NodeID(n.id),
		Storage:     n.store,
		SnapshotDir: filepath.Join(n.cfg.DataDir, "snapshots"),
		Resolver: func(node consensus.NodeID) (string, error) {
			info := n.meta.State().Nodes[uint64(node)]
			if info == nil {
				return "", fmt.Errorf("node %d is not registered", node)
			}
			return info.PeerAddr, nil
		},
		DialOptions:  []grpc.DialOption{n.peerDialCreds(), grpc.WithKeepaliveParams(router.KeepaliveParams)},
		LeaseReads:   n.cfg.LeaseReads != nil && *n.cfg.LeaseReads,
		Logger:       n.logger,
		TestingKnobs: raftKnobs(n.cfg.Knobs),
	}
}

func raftKnobs(k *Knobs) *raft.TestingKnobs {
	if k == nil {
		return nil
	}
	return k.Raft
}
