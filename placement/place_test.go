package placement

import (
	"errors"
	"strings"
	"testing"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

func TestPlaceDistinctAndBalanced(t *testing.T) {
	nodes := []Node{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
	sets, err := Place(nodes, 10, 4)
	if err != nil {
		t.Fatal(err)
	}
	count := map[uint64]int{}
	leaders := map[uint64]int{}
	for _, s := range sets {
		seen := map[uint64]bool{}
		for _, id := range s {
			if seen[id] {
				t.Fatalf("replica set %v repeats node %d", s, id)
			}
			seen[id] = true
			count[id]++
		}
		leaders[s[0]]++
	}
	for id, c := range count {
		if c != 8 {
			t.Errorf("node %d holds %d replicas, want 8 (40 replicas over 5 nodes)", id, c)
		}
	}
	for id, l := range leaders {
		if l != 2 {
			t.Errorf("node %d is preferred leader of %d partitions, want 2", id, l)
		}
	}
}

func TestPlaceSpreadsZones(t *testing.T) {
	nodes := []Node{
		{ID: 1, Zone: "a"}, {ID: 2, Zone: "a"}, {ID: 3, Zone: "a"},
		{ID: 4, Zone: "b"}, {ID: 5, Zone: "c"}, {ID: 6, Zone: "d"},
	}
	sets, err := Place(nodes, 6, 4)
	if err != nil {
		t.Fatal(err)
	}
	zone := map[uint64]string{1: "a", 2: "a", 3: "a", 4: "b", 5: "c", 6: "d"}
	for _, s := range sets {
		zs := map[string]bool{}
		for _, id := range s {
			zs[zone[id]] = true
		}
		if len(zs) != 4 {
			t.Errorf("replica set %v uses zones %v, want 4 distinct", s, zs)
		}
	}
}

func TestPlaceNeedsEnoughNodes(t *testing.T) {
	_, err := Place([]Node{{ID: 1}, {ID: 2}, {ID: 3}}, 1, 4)
	if !errors.Is(err, ErrNotEnoughNodes) {
		t.Fatalf("err = %v, want ErrNotEnoughNodes", err)
	}
	if _, err := Place([]Node{{ID: 1}}, 1, 1); err != nil {
		t.Fatalf("one replica on one node: %v", err)
	}
}

func descWith(id uint64, nodes ...uint64) *kvpb.Descriptor {
	d := &kvpb.Descriptor{Id: id, TableId: 1}
	for i, n := range nodes {
		d.Replicas = append(d.Replicas, &kvpb.ReplicaDescriptor{NodeId: n, ReplicaId: uint64(i + 1)})
	}
	return d
}

func TestPlanRepairs(t *testing.T) {
	live := []Node{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 5}, {ID: 6}}
	tests := []struct {
		name   string
		parts  []*kvpb.Descriptor
		busy   map[uint64]bool
		max    int
		want   []Move
		failed map[uint64]map[uint64]string
	}{
		{"nothing dead", []*kvpb.Descriptor{descWith(10, 1, 2, 3, 5)}, nil, 10, nil, nil},
		{"one dead replica moves to the node without one",
			[]*kvpb.Descriptor{descWith(10, 1, 2, 3, 4)}, nil, 10,
			[]Move{{Partition: 10, Table: 1, From: 4, To: 5}}, nil},
		{"spread over the least loaded",
			[]*kvpb.Descriptor{descWith(10, 1, 2, 3, 4), descWith(11, 1, 2, 3, 4)}, nil, 10,
			[]Move{{Partition: 10, Table: 1, From: 4, To: 5}, {Partition: 11, Table: 1, From: 4, To: 6}}, nil},
		{"busy partitions wait", []*kvpb.Descriptor{descWith(10, 1, 2, 3, 4)}, map[uint64]bool{10: true}, 10, nil, nil},
		{"bounded", []*kvpb.Descriptor{descWith(10, 1, 2, 3, 4), descWith(11, 1, 2, 3, 4)}, nil, 1,
			[]Move{{Partition: 10, Table: 1, From: 4, To: 5}}, nil},
		{"a failed replica on a live node is replaced like a dead one",
			[]*kvpb.Descriptor{descWith(10, 1, 2, 3, 5), descWith(11, 1, 2, 3, 5)}, nil, 10,
			[]Move{{Partition: 11, Table: 1, From: 2, To: 6}}, map[uint64]map[uint64]string{11: {2: "disk I/O error"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanRepairs(View{Parts: tc.parts, Live: live, Dead: map[uint64]bool{4: true}, Busy: tc.busy, Failed: tc.failed}, tc.max)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				got[i].Reason = ""
				if got[i] != tc.want[i] {
					t.Fatalf("move %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestPlanRebalanceOntoNewNode(t *testing.T) {
	// Four nodes hold every replica of 5 partitions; node 5 just joined.
	var parts []*kvpb.Descriptor
	for i := uint64(1); i <= 5; i++ {
		parts = append(parts, descWith(i, 1, 2, 3, 4))
	}
	live := []Node{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
	moves := PlanRebalance(View{Parts: parts, Live: live}, 1, 100)
	load := map[uint64]int{1: 5, 2: 5, 3: 5, 4: 5, 5: 0}
	seen := map[uint64]bool{}
	for _, m := range moves {
		if m.To != 5 {
			t.Errorf("move %+v does not go to the new node", m)
		}
		if seen[m.Partition] {
			t.Errorf("partition %d moved twice in one plan", m.Partition)
		}
		seen[m.Partition] = true
		load[m.From]--
		load[m.To]++
	}
	for id, l := range load {
		if l < 3 || l > 5 {
			t.Errorf("node %d ends with %d replicas (%v)", id, l, load)
		}
	}
	if len(moves) != 4 {
		t.Errorf("planned %d moves, want 4 (20 replicas over 5 nodes = 4 each)", len(moves))
	}
	if again := PlanRebalance(View{Parts: parts, Live: live}, 1, 100); len(again) != len(moves) {
		t.Errorf("planning is not deterministic: %d then %d moves", len(moves), len(again))
	}
}

func TestPlanRebalanceBalancedDoesNothing(t *testing.T) {
	parts := []*kvpb.Descriptor{descWith(1, 1, 2, 3, 4), descWith(2, 2, 3, 4, 5), descWith(3, 1, 3, 4, 5), descWith(4, 1, 2, 4, 5), descWith(5, 1, 2, 3, 5)}
	if moves := PlanRebalance(View{Parts: parts, Live: []Node{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}}, 1, 100); len(moves) != 0 {
		t.Fatalf("balanced cluster got moves %+v", moves)
	}
}

func TestPlanDrain(t *testing.T) {
	parts := []*kvpb.Descriptor{descWith(1, 1, 2, 3, 4), descWith(2, 1, 2, 3, 5)}
	live := []Node{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}, {ID: 5}}
	moves := PlanDrain(View{Parts: parts, Live: live}, map[uint64]bool{1: true}, 10)
	if len(moves) != 2 || moves[0].From != 1 || moves[0].To != 5 || moves[1].From != 1 || moves[1].To != 4 {
		t.Fatalf("drain moves %+v", moves)
	}
}

func TestPlanLeaders(t *testing.T) {
	live := map[uint64]bool{1: true, 2: true, 3: true, 4: true}
	var parts []LeaderView
	for i := uint64(1); i <= 8; i++ {
		parts = append(parts, LeaderView{Partition: i, Leader: 1, Voters: []uint64{1, 2, 3, 4}})
	}
	tr := PlanLeaders(parts, live, nil, 100)
	leads := map[uint64]int{1: 8}
	for _, x := range tr {
		leads[x.From]--
		leads[x.To]++
	}
	for id := range live {
		if leads[id] != 2 {
			t.Fatalf("leaders after plan %v, want 2 each (transfers %+v)", leads, tr)
		}
	}
	if again := PlanLeaders([]LeaderView{{Partition: 1, Leader: 2, Voters: []uint64{1, 2}}}, live, nil, 10); len(again) != 0 {
		t.Fatalf("balanced leaders got transfers %+v", again)
	}
}

// A drain that cannot complete is refused up front with the reason and
// the remedy (issue 17: 4 replicas per partition on 4 nodes).
func TestCheckDrain(t *testing.T) {
	four := []Node{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}
	parts := []*kvpb.Descriptor{descWith(1, 1, 2, 3, 4), descWith(2, 1, 2, 3, 4), descWith(3, 2, 3, 4)}
	for _, tc := range []struct {
		name string
		v    View
		node uint64
		want string // "" = drainable
	}{
		{"4 replicas on 4 nodes", View{Parts: parts, Live: four}, 1,
			"cannot drain node 1: 2 of its partitions (partition 1 among them) keep 4 replicas on distinct nodes, and only 3 other live nodes can hold replicas, all of which already do; add 1 node first (or lower the replication factor)"},
		{"a fifth node", View{Parts: parts, Live: append(four, Node{ID: 5})}, 1, ""},
		{"the fifth node is dead", View{Parts: parts, Live: append(four, Node{ID: 5}), Dead: map[uint64]bool{5: true}}, 1, "add 1 node first"},
		{"node 1 holds no replica of partition 3", View{Parts: parts[2:], Live: four}, 1, ""},
		{"3 replicas on 4 nodes", View{Parts: parts[2:], Live: four}, 2, ""},
		{"one node, one replica", View{Parts: []*kvpb.Descriptor{descWith(1, 1)}, Live: []Node{{ID: 1}}}, 1,
			"only 0 other live nodes can hold replicas, all of which already do; add 1 node first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDrain(tc.v, tc.node)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("drainable node refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrCannotDrain) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrCannotDrain with %q", err, tc.want)
			}
			// And the drain planner indeed finds no move for the blocked
			// partitions.
			if moves := PlanDrain(tc.v, map[uint64]bool{tc.node: true}, 100); len(moves) != 0 && len(tc.v.Live) == 4 {
				t.Fatalf("refused drain has moves %+v", moves)
			}
		})
	}
}
