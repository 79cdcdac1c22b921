package daemon

import (
	"context"
	"fmt"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/placement"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
)

// placer places a new table's partitions on the live nodes.
type placer struct {
	meta    *cluster.Meta
	catalog *cluster.Catalog
	rf      int
	self    uint64
}

// PlaceTable implements exec.Placer.
func (p *placer) PlaceTable(ctx context.Context, t *schema.Table, n int) ([]*kvpb.Descriptor, error) {
	st := p.meta.State()
	load := map[uint64]int{}
	leads := map[uint64]int{}
	for _, r := range st.Rings {
		for _, d := range r.Partitions() {
			for i, rd := range d.GetReplicas() {
				load[rd.GetNodeId()]++
				if i == 0 {
					leads[rd.GetNodeId()]++
				}
			}
		}
	}
	var nodes []placement.Node
	for _, id := range st.NodeIDs() {
		info := st.Nodes[id]
		if info.Draining {
			continue
		}
		nodes = append(nodes, placement.Node{ID: id, Zone: info.Label("zone", ""), Rack: info.Label("rack", ""), Load: load[id], Leads: leads[id]})
	}
	if len(nodes) == 0 && p.rf == 1 {
		nodes = []placement.Node{{ID: p.self}}
	}
	sets, err := placement.Place(nodes, n, p.rf)
	if err != nil {
		return nil, err
	}
	first, err := p.catalog.AllocateID(ctx, "partition", uint64(n))
	if err != nil {
		return nil, fmt.Errorf("allocate partition ids: %w", err)
	}
	ranges := ring.Even(n)
	out := make([]*kvpb.Descriptor, n)
	for i := range out {
		d := &kvpb.Descriptor{Id: first + uint64(i), TableId: t.ID, Start: ranges[i][0], End: ranges[i][1]}
		for j, node := range sets[i] {
			d.Replicas = append(d.Replicas, &kvpb.ReplicaDescriptor{NodeId: node, ReplicaId: uint64(j + 1)})
		}
		d.NextReplicaId = uint64(len(sets[i]) + 1)
		out[i] = d
	}
	return out, nil
}
