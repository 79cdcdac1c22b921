package partition

import (
	"time"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// Totals sums the stats of the logical partitions in a physical partition.
type Totals struct {
	Bytes, Rows, LogicalPartitions int64
}

// SumStats scans the stats span of d in r.
func SumStats(r storage.Reader, d *kvpb.Descriptor) (Totals, error) {
	var t Totals
	if !HasRange(d) {
		return t, nil
	}
	it, err := r.NewIter(storage.StatsSpan(d.GetTableId(), d.GetStart(), d.GetEnd()))
	if err != nil {
		return t, err
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		s, err := storage.DecodeStats(it.Value())
		if err != nil {
			return t, err
		}
		t.Bytes += s.Bytes
		t.Rows += s.Rows
		if s.Rows > 0 {
			t.LogicalPartitions++
		}
	}
	return t, it.Error()
}

// Status reports the replica's state for the admin API.
func (r *Replica) Status(stats bool) (*kvpb.ReplicaStatus, error) {
	st := r.group.Status()
	out := &kvpb.ReplicaStatus{
		Desc:       r.Descriptor(),
		ReplicaId:  uint64(st.ReplicaID),
		Leader:     st.IsLeader(),
		LeaderNode: uint64(st.LeaderNode),
		Term:       st.Term,
		Applied:    st.Applied,
		Commit:     st.Commit,
	}
	if st.Err != nil {
		out.Failed = st.Err.Error()
	}
	now := time.Now()
	rps, share, refusedW, refused := r.throttle.stats(now)
	out.RuPerSec, out.RuShare, out.Throttled = rps, share, refused
	if s := r.share(); s > 0 {
		out.RuShare = s
	}
	out.Hot = refusedW > 0 && share > 0 && rps >= 0.9*share
	if stats {
		snap := r.engine.NewSnapshot()
		defer snap.Close()
		t, err := SumStats(snap, out.Desc)
		if err != nil {
			return nil, err
		}
		out.Bytes, out.Rows, out.LogicalPartitions = t.Bytes, t.Rows, t.LogicalPartitions
	}
	return out, nil
}

// Status reports the store's replicas (all when ids is empty).
func (s *Store) Status(ids []uint64, stats bool) (*kvpb.ReplicaStatusResponse, error) {
	resp := &kvpb.ReplicaStatusResponse{NodeId: uint64(s.cfg.NodeID)}
	var reps []*Replica
	if len(ids) == 0 {
		reps = s.Replicas()
	} else {
		for _, id := range ids {
			if r, ok := s.Replica(id); ok {
				reps = append(reps, r)
			}
		}
	}
	for _, r := range reps {
		st, err := r.Status(stats)
		if err != nil {
			return nil, err
		}
		resp.Replicas = append(resp.Replicas, st)
	}
	return resp, nil
}
