package placement

import (
	"fmt"
	"sort"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// Move is a planned replica move.
type Move struct {
	Partition uint64
	Table     uint64
	From, To  uint64
	Reason    string
}

// View is what planning decisions see of the cluster.
type View struct {
	// Parts are the partitions (routing copies).
	Parts []*kvpb.Descriptor
	// Live are the nodes that can take replicas.
	Live []Node
	// Dead are nodes whose replicas must be replaced.
	Dead map[uint64]bool
	// Busy partitions already have an operation.
	Busy map[uint64]bool
}

// loads counts the replicas per live node.
func (v *View) loads() map[uint64]int {
	load := map[uint64]int{}
	for _, n := range v.Live {
		load[n.ID] = 0
	}
	for _, p := range v.Parts {
		for _, r := range p.GetReplicas() {
			if _, ok := load[r.GetNodeId()]; ok {
				load[r.GetNodeId()]++
			}
		}
	}
	return load
}

// target picks the best live node for a new replica of p, excluding the
// nodes that already hold one: the one that adds the most zone, then rack,
// diversity, then the least loaded.
func (v *View) target(p *kvpb.Descriptor, exclude map[uint64]bool, load map[uint64]int) (uint64, bool) {
	zones, racks := map[string]int{}, map[string]int{}
	byID := map[uint64]Node{}
	for _, n := range v.Live {
		byID[n.ID] = n
	}
	for _, r := range p.GetReplicas() {
		if n, ok := byID[r.GetNodeId()]; ok && !exclude[r.GetNodeId()] {
			zones[n.Zone]++
			racks[n.Zone+"/"+n.Rack]++
		}
	}
	var best *Node
	for i := range v.Live {
		n := v.Live[i]
		if exclude[n.ID] || hasReplica(p, n.ID) {
			continue
		}
		if best == nil || better(n, *best, zones, racks, load) {
			best = &v.Live[i]
		}
	}
	if best == nil {
		return 0, false
	}
	return best.ID, true
}

func hasReplica(p *kvpb.Descriptor, node uint64) bool {
	for _, r := range p.GetReplicas() {
		if r.GetNodeId() == node {
			return true
		}
	}
	return false
}

// PlanRepairs replaces the replicas of dead nodes: for each partition with a
// replica on a dead node and no operation running, one move to the best
// live node. At most max moves are planned.
func PlanRepairs(v View, max int) []Move {
	load := v.loads()
	var out []Move
	parts := append([]*kvpb.Descriptor(nil), v.Parts...)
	sort.Slice(parts, func(i, j int) bool { return parts[i].GetId() < parts[j].GetId() })
	for _, p := range parts {
		if len(out) >= max {
			break
		}
		if v.Busy[p.GetId()] {
			continue
		}
		for _, r := range p.GetReplicas() {
			if !v.Dead[r.GetNodeId()] {
				continue
			}
			to, ok := v.target(p, v.Dead, load)
			if !ok {
				break
			}
			load[to]++
			out = append(out, Move{Partition: p.GetId(), Table: p.GetTableId(), From: r.GetNodeId(), To: to,
				Reason: fmt.Sprintf("node %d is dead", r.GetNodeId())})
			break // one move per partition at a time
		}
	}
	return out
}
