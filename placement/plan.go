package placement

import (
	"errors"
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
	// Failed are replicas that stopped on a failure (partition -> node ->
	// why): replaced like those of a dead node, although their node lives.
	Failed map[uint64]map[uint64]string
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
			why, failed := v.Failed[p.GetId()][r.GetNodeId()]
			if !v.Dead[r.GetNodeId()] && !failed {
				continue
			}
			// The replica being replaced does not count towards the
			// partition's zones and racks: its replacement should restore
			// the zone it leaves (a failed replica's node is live, and
			// counting it sent the replacement to another zone).
			exclude := v.Dead
			if failed && !v.Dead[r.GetNodeId()] {
				exclude = map[uint64]bool{r.GetNodeId(): true}
				for id := range v.Dead {
					exclude[id] = true
				}
			}
			to, ok := v.target(p, exclude, load)
			if !ok {
				break
			}
			load[to]++
			reason := fmt.Sprintf("node %d is dead", r.GetNodeId())
			if !v.Dead[r.GetNodeId()] {
				reason = fmt.Sprintf("replica on node %d failed: %s", r.GetNodeId(), why)
			}
			out = append(out, Move{Partition: p.GetId(), Table: p.GetTableId(), From: r.GetNodeId(), To: to, Reason: reason})
			break // one move per partition at a time
		}
	}
	return out
}

// PlanRebalance evens out replica counts across the live nodes: while some
// node holds more than tolerance replicas above another, move one replica
// from the most loaded such node to the least loaded one that can take it
// (a partition it does not hold, keeping the partition's zones distinct
// where they were). Trying only the single most and least loaded pair
// stalled for good when zones forbade that pair (a node alone in its zone
// must hold every partition) although another pair could still even out.
// Moves off draining or dead nodes are PlanDrain's and PlanRepairs'. At
// most max moves are returned; Busy partitions are left alone.
func PlanRebalance(v View, tolerance, max int) []Move {
	if tolerance < 1 {
		tolerance = 1
	}
	load := v.loads()
	if len(load) < 2 {
		return nil
	}
	holders := map[uint64][]*kvpb.Descriptor{}
	for _, p := range v.Parts {
		for _, r := range p.GetReplicas() {
			holders[r.GetNodeId()] = append(holders[r.GetNodeId()], p)
		}
	}
	moved := map[uint64]bool{}
	var out []Move
	for len(out) < max {
		pick, hi, lo := rebalanceStep(v, load, holders, moved, tolerance)
		if pick == nil {
			// Nothing movable between any pair that is out of balance;
			// stop rather than thrash.
			break
		}
		moved[pick.GetId()] = true
		load[hi]--
		load[lo]++
		out = append(out, Move{Partition: pick.GetId(), Table: pick.GetTableId(), From: hi, To: lo,
			Reason: fmt.Sprintf("rebalance: node %d holds %d replicas, node %d holds %d", hi, load[hi]+1, lo, load[lo]-1)})
	}
	return out
}

// rebalanceStep finds the next rebalance move: sources from the most
// loaded, targets from the least loaded (ties by id), the first pair more
// than tolerance apart with a partition that can move. Every such move
// lowers the sum of squared loads, so repeated rounds converge.
func rebalanceStep(v View, load map[uint64]int, holders map[uint64][]*kvpb.Descriptor, moved map[uint64]bool, tolerance int) (*kvpb.Descriptor, uint64, uint64) {
	nodes := make([]uint64, 0, len(load))
	for id := range load {
		nodes = append(nodes, id)
	}
	sort.Slice(nodes, func(i, j int) bool {
		if load[nodes[i]] != load[nodes[j]] {
			return load[nodes[i]] < load[nodes[j]]
		}
		return nodes[i] < nodes[j]
	})
	// Sources most loaded first, ties by lower id.
	sources := append([]uint64(nil), nodes...)
	sort.SliceStable(sources, func(i, j int) bool { return load[sources[i]] > load[sources[j]] })
	for _, hi := range sources {
		for _, lo := range nodes {
			if load[hi]-load[lo] <= tolerance {
				break // targets only get more loaded from here
			}
			for _, p := range holders[hi] {
				if v.Busy[p.GetId()] || moved[p.GetId()] || hasReplica(p, lo) || !keepsZones(v, p, hi, lo) {
					continue
				}
				return p, hi, lo
			}
		}
	}
	return nil, 0, 0
}

// keepsZones reports whether replacing from by to in p keeps as many
// distinct zones as p has now.
func keepsZones(v View, p *kvpb.Descriptor, from, to uint64) bool {
	zone := map[uint64]string{}
	for _, n := range v.Live {
		zone[n.ID] = n.Zone
	}
	count := func(replace bool) int {
		zs := map[string]bool{}
		for _, r := range p.GetReplicas() {
			id := r.GetNodeId()
			if replace && id == from {
				id = to
			}
			zs[zone[id]] = true
		}
		return len(zs)
	}
	return count(true) >= count(false)
}

// PlanDrain moves every replica off the given nodes, to the best live
// node for each partition.
func PlanDrain(v View, drain map[uint64]bool, max int) []Move {
	load := v.loads()
	var out []Move
	for _, p := range v.Parts {
		if len(out) >= max {
			break
		}
		if v.Busy[p.GetId()] {
			continue
		}
		for _, r := range p.GetReplicas() {
			if !drain[r.GetNodeId()] {
				continue
			}
			exclude := map[uint64]bool{}
			for id := range drain {
				exclude[id] = true
			}
			for id := range v.Dead {
				exclude[id] = true
			}
			to, ok := v.target(p, exclude, load)
			if !ok {
				break
			}
			load[to]++
			out = append(out, Move{Partition: p.GetId(), Table: p.GetTableId(), From: r.GetNodeId(), To: to,
				Reason: fmt.Sprintf("node %d is draining", r.GetNodeId())})
			break
		}
	}
	return out
}

// Transfer is a planned leadership transfer.
type Transfer struct {
	Partition uint64
	From, To  uint64
}

// LeaderView is one partition's leadership as observed.
type LeaderView struct {
	Partition uint64
	Leader    uint64
	Voters    []uint64
}

// PlanLeaders evens out leader counts: a node that leads more than its
// share (ceil of partitions over live nodes) hands one leadership to the
// least leading live voter of one of its partitions. At most max transfers.
func PlanLeaders(parts []LeaderView, live map[uint64]bool, busy map[uint64]bool, max int) []Transfer {
	if len(live) == 0 {
		return nil
	}
	leads := map[uint64]int{}
	for id := range live {
		leads[id] = 0
	}
	total := 0
	for _, p := range parts {
		if p.Leader != 0 {
			leads[p.Leader]++
			total++
		}
	}
	share := (total + len(live) - 1) / len(live)
	sorted := append([]LeaderView(nil), parts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Partition < sorted[j].Partition })
	var out []Transfer
	for _, p := range sorted {
		if len(out) >= max {
			break
		}
		if p.Leader == 0 || busy[p.Partition] || leads[p.Leader] <= share {
			continue
		}
		var best uint64
		for _, v := range p.Voters {
			if v == p.Leader || !live[v] {
				continue
			}
			if best == 0 || leads[v] < leads[best] || (leads[v] == leads[best] && v < best) {
				best = v
			}
		}
		if best == 0 || leads[best]+1 > share {
			continue
		}
		leads[p.Leader]--
		leads[best]++
		out = append(out, Transfer{Partition: p.Partition, From: p.Leader, To: best})
	}
	return out
}

// ErrCannotDrain reports a drain or decommission that cannot complete.
var ErrCannotDrain = errors.New("cannot drain")

// CheckDrain tells up front whether node can be drained in view v: every
// partition with a replica on node needs a live node (v.Live, not node,
// not dead) that holds none of its replicas yet. Otherwise the drain would
// wait forever with the node marked draining (issue 17: 4 replicas per
// partition on 4 nodes); the error says which partition blocks and what to
// do: add nodes first.
func CheckDrain(v View, node uint64) error {
	blocked, example, need := 0, uint64(0), 0
	hosts := 0
	for _, n := range v.Live {
		if n.ID != node && !v.Dead[n.ID] {
			hosts++
		}
	}
	for _, p := range v.Parts {
		if !hasReplica(p, node) {
			continue
		}
		free := false
		for _, n := range v.Live {
			if n.ID != node && !v.Dead[n.ID] && !hasReplica(p, n.ID) {
				free = true
				break
			}
		}
		if !free {
			if blocked == 0 {
				example, need = p.GetId(), len(p.GetReplicas())
			}
			blocked++
		}
	}
	if blocked == 0 {
		return nil
	}
	add := need - hosts
	if add < 1 {
		add = 1
	}
	return fmt.Errorf("%w node %d: %d of its partitions (partition %d among them) keep %d replicas on distinct nodes, and only %d other live nodes can hold replicas, all of which already do; add %s first (or lower the replication factor)",
		ErrCannotDrain, node, blocked, example, need, hosts, plural(add, "node"))
}
