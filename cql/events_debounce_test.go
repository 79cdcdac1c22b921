package cql

import (
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cql/frame"
	"github.com/cosmosd/cosmosd/schema"
)

func nodesState(addrs map[uint64]string) *cluster.State {
	st := &cluster.State{Schema: &schema.Schema{}, Nodes: map[uint64]*cluster.NodeInfo{}}
	for id, a := range addrs {
		st.Nodes[id] = &cluster.NodeInfo{ID: id, CQLAddr: a}
	}
	return st
}

func kinds(evs []*frame.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Change+" "+ev.Addr.String())
	}
	return out
}

// A node whose registration lapses and comes back within DownGrace at the
// same address is never announced (drivers would drop a live host); one
// that stays away is announced down once the grace has passed; one that
// returns at another address is down at the old one and new at the other.
func TestNodeFlapIsNotAnnounced(t *testing.T) {
	const grace = 5 * time.Second
	t0 := time.Unix(1000, 0)
	all := nodesState(map[uint64]string{1: "10.0.0.1:9042", 2: "10.0.0.2:9042", 3: "10.0.0.3:9042"})
	lapsed := nodesState(map[uint64]string{1: "10.0.0.1:9042"})
	gone := map[uint64]goneNode{}

	if evs := debounceNodes(diffEvents(all, lapsed), all, lapsed, gone, t0, grace); len(evs) != 0 {
		t.Fatalf("events as two registrations lapse: %v, want none before the grace", kinds(evs))
	}
	moved := nodesState(map[uint64]string{1: "10.0.0.1:9042", 2: "10.0.0.2:9042", 3: "10.0.0.9:9042"})
	evs := debounceNodes(diffEvents(lapsed, moved), lapsed, moved, gone, t0.Add(time.Second), grace)
	got := kinds(evs)
	want := map[string]bool{"NEW_NODE 10.0.0.9:9042": true, "UP 10.0.0.9:9042": true, "DOWN 10.0.0.3:9042": true}
	if len(got) != len(want) {
		t.Fatalf("node 2 back, node 3 back elsewhere: %v, want %v", got, want)
	}
	for _, k := range got {
		if !want[k] {
			t.Fatalf("node 2 back, node 3 back elsewhere: %v, want %v", got, want)
		}
	}
	if len(gone) != 0 {
		t.Fatalf("still waiting on %v", gone)
	}

	// Node 2 goes for good: DOWN only once the grace has passed.
	down := nodesState(map[uint64]string{1: "10.0.0.1:9042", 3: "10.0.0.9:9042"})
	if evs := debounceNodes(diffEvents(moved, down), moved, down, gone, t0.Add(2*time.Second), grace); len(evs) != 0 {
		t.Fatalf("events when node 2 lapses: %v", kinds(evs))
	}
	if next, ok := nextDeadline(gone); !ok || !next.Equal(t0.Add(7*time.Second)) {
		t.Fatalf("next deadline %v %v, want %v", next, ok, t0.Add(7*time.Second))
	}
	if evs := debounceNodes(nil, down, down, gone, t0.Add(6*time.Second), grace); len(evs) != 0 {
		t.Fatalf("events before the grace ended: %v", kinds(evs))
	}
	evs = debounceNodes(nil, down, down, gone, t0.Add(7*time.Second), grace)
	if got := kinds(evs); len(got) != 1 || got[0] != "DOWN 10.0.0.2:9042" {
		t.Fatalf("after the grace: %v, want DOWN 10.0.0.2:9042", got)
	}
}
