package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cosmosd/cosmosd/cluster/metakv"
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
// creating it when absent. mutate may run several times (once per lost
// race), on a fresh copy each time; returning false leaves the record.
func (m *Meta) UpdateMember(ctx context.Context, id uint64, mutate func(m *Member) bool) error {
	return updateMember(ctx, m.kv, id, mutate)
}

func updateMember(ctx context.Context, kv metakv.Store, id uint64, mutate func(m *Member) bool) error {
	key := keys{}.member(id)
	for {
		rec, found, err := kv.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("member %d: %w", id, err)
		}
		m := &Member{}
		if found {
			if err := json.Unmarshal(rec.Value, m); err != nil {
				return fmt.Errorf("member %d: %w", id, err)
			}
		}
		if !mutate(m) {
			return nil
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		txn, err := kv.Txn(ctx, metakv.Txn{
			If:   []metakv.Cond{metakv.ModifiedAt(key, rec.ModRevision)},
			Then: []metakv.Op{metakv.Put(key, raw)},
		})
		if err != nil {
			return fmt.Errorf("member %d: %w", id, err)
		}
		if txn.Succeeded {
			return nil
		}
	}
}
