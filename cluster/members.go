package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is the persistent record of a node that joined the cluster. Unlike
// the leased registration, it survives the node's death, which is how the
// cluster tells a dead node (to be replaced) from one it never knew.
type Member struct {
	Info      NodeInfo  `json:"info"`
	FirstSeen time.Time `json:"first_seen"`
	// DownSince is when the controller first saw the node unregistered;
	// zero while the node is registered.
	DownSince time.Time `json:"down_since,omitzero"`
	// Draining nodes get no new replicas and have theirs moved away.
	Draining bool `json:"draining,omitempty"`
	// Decommissioned nodes are kept for the record but hold no replicas.
	Decommissioned bool `json:"decommissioned,omitempty"`
}

// MemberState classifies a member at time now.
func (s *State) MemberState(id uint64, now time.Time, deadAfter time.Duration) string {
	m := s.Members[id]
	if n, live := s.Nodes[id]; live {
		switch {
		case m != nil && m.Decommissioned:
			return "decommissioned"
		case n.Draining || (m != nil && m.Draining):
			return "draining"
		}
		return "up"
	}
	switch {
	case m == nil:
		return "unknown"
	case m.Decommissioned:
		return "decommissioned"
	case m.DownSince.IsZero() || now.Sub(m.DownSince) < deadAfter:
		return "suspect"
	}
	return "dead"
}

// UpdateMember changes a member record with mutate under compare-and-swap,
// creating it when absent.
func UpdateMember(ctx context.Context, cli *clientv3.Client, prefix string, id uint64, mutate func(m *Member) bool) error {
	key := keys{prefix}.member(id)
	for {
		resp, err := cli.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("member %d: %w", id, err)
		}
		m := &Member{}
		var rev int64
		if len(resp.Kvs) == 1 {
			if err := json.Unmarshal(resp.Kvs[0].Value, m); err != nil {
				return fmt.Errorf("member %d: %w", id, err)
			}
			rev = resp.Kvs[0].ModRevision
		}
		if !mutate(m) {
			return nil
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		txn, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, string(raw))).Commit()
		if err != nil {
			return fmt.Errorf("member %d: %w", id, err)
		}
		if txn.Succeeded {
			return nil
		}
	}
}
