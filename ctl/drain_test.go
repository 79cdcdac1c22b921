package ctl

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// A drain or decommission that cannot complete is refused up front with
// why and what to do, and leaves the node up; a node left draining (by a
// drain that could not finish) comes back with nodes undrain (issue 17).
func TestDrainRefusedAndUndrain(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	s := c.Session(t, 0)
	for _, q := range []string{
		"CREATE KEYSPACE ks WITH REPLICATION = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ep := c.Nodes[0].AdminAddr()
	id := c.Nodes[0].ID()
	for _, cmd := range []string{"drain", "decommission"} {
		fails(t, nil, `^cosmosctl: `+cmd+` node-1 \(id [0-9]+\): cannot drain node [0-9]+: 1 of its partitions \(partition [0-9]+ among them\) keep 1 replicas on distinct nodes, and only 0 other live nodes can hold replicas, all of which already do; add 1 node first \(or lower the replication factor\)\n$`,
			"--endpoints", ep, "nodes", cmd, "node-1")
	}
	nodeState := func() string {
		var nodes []map[string]any
		decodeJSON(t, ok(t, "--endpoints", ep, "nodes", "list", "-o", "json"), &nodes)
		for _, n := range nodes {
			if uint64(num(t, n["id"])) == id {
				st, _ := n["state"].(string)
				return st
			}
		}
		t.Fatalf("node %d not listed", id)
		return ""
	}
	if st := nodeState(); st != "up" {
		t.Fatalf("after the refused drains the node is %q, want up", st)
	}

	// A node stuck draining, as a drain that could not finish left it.
	meta := c.Nodes[0].Meta()
	if err := meta.UpdateMember(context.Background(), id, func(m *cluster.Member) bool {
		m.Draining = true
		return true
	}); err != nil {
		t.Fatal(err)
	}
	waitState := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for st := nodeState(); st != want; st = nodeState() {
			if time.Now().After(deadline) {
				t.Fatalf("node is %q, want %q", st, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitState("draining")
	out := ok(t, "--endpoints", ep, "nodes", "undrain", "node-1")
	if !regexp.MustCompile(`^node node-1 undrained: it takes replicas again\n$`).MatchString(out) {
		t.Fatalf("undrain printed %q", out)
	}
	waitState("up")
	var resp adminpb.UndrainNodeResponse
	readProto(t, ok(t, "--endpoints", ep, "nodes", "undrain", "node-1", "-o", "json"), &resp)
	if resp.GetWasDraining() || resp.GetNode() != id || resp.GetName() != "node-1" {
		t.Fatalf("second undrain: %v", &resp)
	}
	if out := ok(t, "--endpoints", ep, "nodes", "undrain", "node-1"); out != "node node-1 was not draining; nothing changed\n" {
		t.Fatalf("undrain of an up node printed %q", out)
	}
	fails(t, nil, `^cosmosctl: no node named "nope"\n$`, "--endpoints", ep, "nodes", "undrain", "nope")
	fails(t, nil, `missing NODE`, "--endpoints", ep, "nodes", "undrain")
}
