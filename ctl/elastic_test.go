package ctl

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/daemon"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// waitUntil polls cond until it holds or d passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		done, why := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, d, why)
		}
		<-tick.C
	}
}

// settled reports whether every partition has four voters, no learner and
// a leader.
func settled(parts []*adminpb.Partition) (bool, string) {
	for _, p := range parts {
		voters := 0
		for _, r := range p.GetReplicas() {
			if r.GetLearner() {
				return false, fmt.Sprintf("%s has a learner", partitionName(p.GetId()))
			}
			voters++
		}
		if voters != 4 || p.GetLeaderNode() == 0 {
			return false, fmt.Sprintf("%s: %d voters, leader %d", partitionName(p.GetId()), voters, p.GetLeaderNode())
		}
	}
	return len(parts) > 0, "no partitions"
}

func holders(p *adminpb.Partition) map[uint64]bool {
	out := map[uint64]bool{}
	for _, r := range p.GetReplicas() {
		out[r.GetNodeId()] = true
	}
	return out
}

// TestElasticOnFiveNodes drives the commands that move data on a
// five-node raft cluster: move of a replica, move of a logical partition,
// rebalance --dry-run, drain, decommission and ops list.
func TestElasticOnFiveNodes(t *testing.T) {
	t.Parallel()
	off := false
	c := testcluster.Start(t, testcluster.Options{Nodes: 5, Configure: func(_ int, cfg *daemon.Config) {
		cfg.AutoRebalance = &off // the test decides every move
	}})
	s := c.Session(t, 0)
	// The driver spreads statements over the nodes, which learn of new
	// schema through etcd a moment apart: retry until each one applies.
	exec := func(q string, args ...any) {
		t.Helper()
		waitUntil(t, 20*time.Second, q, func() (bool, string) {
			err := s.Query(q, args...).Exec()
			return err == nil, fmt.Sprint(err)
		})
	}
	exec("CREATE KEYSPACE ks WITH REPLICATION = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec("CREATE TABLE IF NOT EXISTS ks.t (k text, i int, v text, PRIMARY KEY (k, i))")
	for i := range 20 {
		exec("INSERT INTO ks.t (k, i, v) VALUES (?, ?, 'v')", fmt.Sprintf("k%d", i%10), i)
	}
	var eps []string
	for _, n := range c.Nodes {
		eps = append(eps, n.AdminAddr())
	}
	ep := strings.Join(eps, ",")
	ctl := func(args ...string) string { t.Helper(); return ok(t, append([]string{"--endpoints", ep}, args...)...) }
	names := map[uint64]string{}
	var nodes []map[string]any
	decodeJSON(t, ctl("nodes", "list", "-o", "json"), &nodes)
	for _, n := range nodes {
		names[uint64(num(t, n["id"]))] = n["name"].(string)
	}
	if len(names) != 5 {
		t.Fatalf("nodes %v", names)
	}
	// follow runs a --wait command, which may take a while.
	follow := func(args ...string) string {
		t.Helper()
		r := cosmosctlWithin(t, 90*time.Second, nil, append([]string{"--endpoints", ep}, args...)...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("cosmosctl %q: exit %d, stderr %q, stdout:\n%s", args, r.code, r.stderr, r.stdout)
		}
		return r.stdout
	}
	var parts []*adminpb.Partition
	waitUntil(t, 30*time.Second, "ks.t settled", func() (bool, string) {
		parts = ringOf(t, ep, "ks.t")
		return settled(parts)
	})
	start := time.Now()

	// 1. Move a follower replica of the partition to the node without one.
	p := parts[0]
	var from, free uint64
	for _, r := range p.GetReplicas() {
		if r.GetNodeId() != p.GetLeaderNode() {
			from = r.GetNodeId()
		}
	}
	for id := range names {
		if !holders(p)[id] {
			free = id
		}
	}
	out := follow("move", "--partition", partitionName(p.GetId()), "--from", names[from], "--to", names[free], "--wait")
	t.Logf("move --wait:\n%s", out)
	moveID := checkFollowed(t, out, "move")
	mustHaveLines(t, out, `partition: +`+partitionName(p.GetId()), `from: +`+nodeRef(from), `to: +`+nodeRef(free),
		`catch up +done .*`, `swap +done .*`)
	waitUntil(t, 30*time.Second, "ring after the move", func() (bool, string) {
		parts = ringOf(t, ep, "ks.t")
		if ok, why := settled(parts); !ok {
			return false, why
		}
		h := holders(parts[0])
		return h[free] && !h[from], fmt.Sprint(parts[0].GetReplicas())
	})
	t.Logf("move: %s", time.Since(start).Round(time.Millisecond))

	// 2. Move the logical partition k7 onto the current replicas but one,
	// plus the node that just gave its replica up.
	tok, owner := tokenOf(t, ep, "ks.t", "k7")
	targets := map[uint64]bool{from: true}
	var to []string
	for _, r := range owner.GetReplicas() {
		if len(targets) < 4 && r.GetNodeId() != owner.GetLeaderNode() {
			targets[r.GetNodeId()] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(targets)) {
		to = append(to, "--to", strconv.FormatUint(id, 10))
	}
	if len(to) != 8 {
		t.Fatalf("targets %v", targets)
	}
	out = follow(append([]string{"move", "--table", "ks.t", "--key", "k7", "--wait"}, to...)...)
	t.Logf("move --table --key --wait:\n%s", out)
	moveKeyID := checkFollowed(t, out, "move-key")
	mustHaveLines(t, out, `table: +ks\.t`, `to nodes: +`+nodeRefs(slices.Sorted(maps.Keys(targets))), `isolate +done .*`)
	waitUntil(t, 30*time.Second, "k7 isolated on its targets", func() (bool, string) {
		_, iso := tokenOf(t, ep, "ks.t", "k7")
		return iso.GetStart() == tok && iso.GetEnd() == tok && maps.Equal(holders(iso), targets) && iso.GetLeaderNode() != 0,
			fmt.Sprintf("[%d, %d] on %v", iso.GetStart(), iso.GetEnd(), iso.GetReplicas())
	})
	t.Logf("move-key: %s", time.Since(start).Round(time.Millisecond))

	// 3. The rebalance plan, as a table and as JSON.
	waitUntil(t, 30*time.Second, "ring settled", func() (bool, string) {
		parts = ringOf(t, ep, "ks.t")
		return settled(parts)
	})
	load := map[uint64]int{}
	for id := range names {
		load[id] = 0
	}
	for _, p := range parts {
		for id := range holders(p) {
			load[id]++
		}
	}
	var plan adminpb.RebalanceResponse
	readProto(t, ctl("rebalance", "--dry-run", "-o", "json"), &plan)
	out = ctl("rebalance", "--dry-run")
	t.Logf("replicas per node %v; rebalance --dry-run:\n%s", load, out)
	if lo, hi := slices.Min(slices.Collect(maps.Values(load))), slices.Max(slices.Collect(maps.Values(load))); hi-lo > 1 && len(plan.GetPlan()) == 0 {
		t.Fatalf("replicas per node %v, but the plan is empty", load)
	}
	if len(plan.GetPlan()) == 0 {
		if out != "nothing to move: the cluster is balanced\n" {
			t.Fatalf("empty plan printed as %q", out)
		}
	} else {
		mustHaveLines(t, out, `PARTITION +TABLE +FROM +TO +REASON`)
		for _, m := range plan.GetPlan() {
			mustHaveLines(t, out, partitionName(m.GetPartition())+` +ks\.t +`+names[m.GetFromNode()]+` +`+names[m.GetToNode()]+` +`+regexp.QuoteMeta(m.GetReason()))
		}
		if n := strings.Count(out, "\n"); n != 1+len(plan.GetPlan()) {
			t.Fatalf("%d lines for %d moves:\n%s", n, len(plan.GetPlan()), out)
		}
	}
	if plan.GetOperation() != nil {
		t.Fatalf("a dry run started operation %v", plan.GetOperation())
	}

	// 4. Rebalance for real: afterwards nothing is left to move.
	out = follow("rebalance", "--wait")
	t.Logf("rebalance --wait:\n%s", out)
	rebalanceID := checkFollowed(t, out, "rebalance")
	if len(plan.GetPlan()) > 0 {
		mustHaveLines(t, out, `Children \([1-9][0-9]*\):`, `moves +done +\S+ +[1-9][0-9]* moves?`)
	}
	waitUntil(t, 30*time.Second, "ring settled", func() (bool, string) {
		parts = ringOf(t, ep, "ks.t")
		return settled(parts)
	})
	if out := ctl("rebalance", "--dry-run"); out != "nothing to move: the cluster is balanced\n" {
		t.Fatalf("after the rebalance: %q", out)
	}
	clear(load)
	for _, p := range parts {
		for id := range holders(p) {
			load[id]++
		}
	}
	t.Logf("rebalance: %s; replicas per node %v", time.Since(start).Round(time.Millisecond), load)

	// 5. Drain the node with the most replicas.
	var drained uint64
	for _, id := range slices.Sorted(maps.Keys(load)) {
		if drained == 0 || load[id] > load[drained] {
			drained = id
		}
	}
	out = follow("nodes", "drain", names[drained], "--wait")
	t.Logf("nodes drain --wait (%d replicas):\n%s", load[drained], out)
	drainID := checkFollowed(t, out, "drain")
	mustHaveLines(t, out, `node: +`+nodeRef(drained), fmt.Sprintf(`Children \(%d\):`, load[drained]),
		`ID +KIND +STATE +PROGRESS +PARTITION +NODES +TABLE +UPDATED +REASON`)
	if n := len(regexp.MustCompile(`(?m)^ *[0-9]+ +move +done +100% +P[0-9]+ +`+nodeRef(drained)+`→n[0-9]+ +ks\.t `).FindAllString(out, -1)); n != load[drained] {
		t.Fatalf("want %d child moves off %s, done:\n%s", load[drained], nodeRef(drained), out)
	}
	nodeState := func(id uint64) *adminpb.Node {
		var resp []map[string]any
		decodeJSON(t, ctl("nodes", "list", "-o", "json"), &resp)
		for _, n := range resp {
			if num(t, n["id"]) == int64(id) {
				return &adminpb.Node{Id: id, State: n["state"].(string), Replicas: uint32(num(t, n["replicas"]))}
			}
		}
		t.Fatalf("node %d not listed", id)
		return nil
	}
	waitUntil(t, 30*time.Second, "drained node empty", func() (bool, string) {
		n := nodeState(drained)
		return n.GetReplicas() == 0 && n.GetState() == "draining", fmt.Sprintf("%s with %d replicas", n.GetState(), n.GetReplicas())
	})
	t.Logf("drain: %s", time.Since(start).Round(time.Millisecond))
	show := ctl("ops", "show", strconv.FormatUint(drainID, 10))
	t.Logf("ops show %d:\n%s", drainID, show)
	mustHaveLines(t, show, `kind: +drain`, `state: +done`, `moves +done +\S+ +[0-9]+ moves?`)

	// 6. Decommission the drained node: nothing left to move.
	var dec adminpb.Operation
	readProto(t, follow("nodes", "decommission", strconv.FormatUint(drained, 10), "--wait", "-o", "json"), &dec)
	if dec.GetKind() != "decommission" || dec.GetState() != opDone || dec.GetNode() != drained {
		t.Fatalf("decommission: %v", &dec)
	}
	if n := nodeState(drained); n.GetState() != "decommissioned" {
		t.Fatalf("after decommission the node is %s", n.GetState())
	}

	// 7. The operations, newest first.
	out = ctl("ops", "list")
	t.Logf("ops list:\n%s", out)
	for _, re := range []string{
		fmt.Sprintf(` *%d +decommission +done +100%% +- +%s +- .*`, dec.GetId(), nodeRef(drained)),
		fmt.Sprintf(` *%d +drain +done +100%% +- +%s +- .*`, drainID, nodeRef(drained)),
		fmt.Sprintf(` *%d +rebalance +done +100%% +- +- +- .*`, rebalanceID),
		fmt.Sprintf(` *%d +move-key +done +100%% +P[0-9]+ +→%s +ks\.t .*`, moveKeyID, nodeRefs(slices.Sorted(maps.Keys(targets)))),
		fmt.Sprintf(` *%d +move +done +100%% +%s +%s→%s +ks\.t +[0-9]+s ago +requested by an operator`, moveID, partitionName(p.GetId()), nodeRef(from), nodeRef(free)),
	} {
		mustHaveLines(t, out, re)
	}
	if lines := strings.Split(out, "\n"); !strings.HasPrefix(strings.TrimSpace(lines[1]), strconv.FormatUint(dec.GetId(), 10)+" ") {
		t.Fatalf("newest first: %q", lines[1])
	}
	if out := ctl("ops", "list", "--active"); out != "no active operations\n" {
		t.Fatalf("ops list --active: %q", out)
	}
}
