package placement

import (
	"errors"
	"fmt"
	"sort"
)

// Node is a placement candidate.
type Node struct {
	ID    uint64
	Zone  string
	Rack  string
	Load  int // replicas it holds
	Leads int // leaders it holds
}

// ErrNotEnoughNodes reports fewer live nodes than replicas per partition.
var ErrNotEnoughNodes = errors.New("not enough live nodes")

// Place chooses rf distinct nodes for each of n new partitions. It prefers
// the least loaded nodes and spreads each partition's replicas over as many
// zones, then racks, as the labels allow; it counts its own choices as load
// so consecutive partitions spread too. The first node of each set is the
// preferred leader, rotated so leaders spread evenly as well.
func Place(nodes []Node, n, rf int) ([][]uint64, error) {
	if rf < 1 {
		return nil, fmt.Errorf("replication factor %d must be at least 1", rf)
	}
	if len(nodes) < rf {
		return nil, fmt.Errorf("%w: a table needs %d replicas per partition on distinct nodes and only %d nodes are live", ErrNotEnoughNodes, rf, len(nodes))
	}
	load := map[uint64]int{}
	leads := map[uint64]int{}
	for _, nd := range nodes {
		load[nd.ID] = nd.Load
		leads[nd.ID] = nd.Leads
	}
	out := make([][]uint64, n)
	for p := 0; p < n; p++ {
		var chosen []Node
		zones, racks := map[string]int{}, map[string]int{}
		for len(chosen) < rf {
			best := -1
			for i, nd := range nodes {
				if contains(chosen, nd.ID) {
					continue
				}
				if best < 0 || better(nd, nodes[best], zones, racks, load) {
					best = i
				}
			}
			nd := nodes[best]
			chosen = append(chosen, nd)
			zones[nd.Zone]++
			racks[nd.Zone+"/"+nd.Rack]++
		}
		// The least-leading chosen node goes first (preferred leader).
		sort.SliceStable(chosen, func(i, j int) bool {
			if leads[chosen[i].ID] != leads[chosen[j].ID] {
				return leads[chosen[i].ID] < leads[chosen[j].ID]
			}
			return chosen[i].ID < chosen[j].ID
		})
		ids := make([]uint64, len(chosen))
		for i, nd := range chosen {
			ids[i] = nd.ID
			load[nd.ID]++
		}
		leads[ids[0]]++
		out[p] = ids
	}
	return out, nil
}

// better reports whether a is a better next replica than b given the zones
// and racks already used by the partition.
func better(a, b Node, zones, racks map[string]int, load map[uint64]int) bool {
	if zones[a.Zone] != zones[b.Zone] {
		return zones[a.Zone] < zones[b.Zone]
	}
	ra, rb := racks[a.Zone+"/"+a.Rack], racks[b.Zone+"/"+b.Rack]
	if ra != rb {
		return ra < rb
	}
	if load[a.ID] != load[b.ID] {
		return load[a.ID] < load[b.ID]
	}
	return a.ID < b.ID
}

func contains(nodes []Node, id uint64) bool {
	for _, n := range nodes {
		if n.ID == id {
			return true
		}
	}
	return false
}
