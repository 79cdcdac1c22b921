package placement

import (
	"errors"
	"testing"
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
