package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"
)

// This file reads the cluster's state the way an operator does: the host's
// cosmosctl against the nodes' admin port, output as JSON.

// nodeJSON is one element of `cosmosctl nodes list -o json`.
type nodeJSON struct {
	ID       uint64 `json:"id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	Replicas int    `json:"replicas"`
	Leaders  int    `json:"leaders"`
}

func (n nodeJSON) String() string {
	return fmt.Sprintf("%s(n%d):%s/%dr/%dl", n.Name, n.ID, n.State, n.Replicas, n.Leaders)
}

// partJSON is one partition of `cosmosctl ring show -o json`.
type partJSON struct {
	ID       uint64 `json:"id"`
	Table    string `json:"table"`
	Start    int64  `json:"start"`
	End      int64  `json:"end"`
	Replicas []struct {
		NodeID    uint64 `json:"node_id"`
		Learner   bool   `json:"learner"`
		Reachable bool   `json:"reachable"`
	} `json:"replicas"`
	LeaderNode uint64 `json:"leader_node"`
}

func (p partJSON) String() string {
	var r []string
	for _, x := range p.Replicas {
		s := fmt.Sprintf("n%d", x.NodeID)
		if x.NodeID == p.LeaderNode {
			s += "*"
		}
		if x.Learner {
			s += "(l)"
		}
		if !x.Reachable {
			s += "?"
		}
		r = append(r, s)
	}
	return fmt.Sprintf("P%d[%s]", p.ID, strings.Join(r, ","))
}

// Ctl runs the host's cosmosctl against the nodes that can answer and
// returns its standard output.
func (c *Cluster) Ctl(args ...string) ([]byte, error) {
	c.mu.Lock()
	var eps []string
	for _, n := range c.Nodes {
		if c.faulty[n] == "" {
			eps = append(eps, n.IP+":7070")
		}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	full := append([]string{"--endpoints", strings.Join(eps, ","), "--timeout", "20s"}, args...)
	cmd := exec.CommandContext(ctx, c.art.ctl, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cosmosctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// NodesList returns `cosmosctl nodes list`.
func (c *Cluster) NodesList() ([]nodeJSON, error) {
	out, err := c.Ctl("nodes", "list", "-o", "json")
	if err != nil {
		return nil, err
	}
	var nodes []nodeJSON
	if err := json.Unmarshal(out, &nodes); err != nil {
		return nil, fmt.Errorf("nodes list: %w: %s", err, out)
	}
	return nodes, nil
}

// Ring returns `cosmosctl ring show`.
func (c *Cluster) Ring() ([]partJSON, error) {
	out, err := c.Ctl("ring", "show", "-o", "json")
	if err != nil {
		return nil, err
	}
	var resp struct {
		Partitions []partJSON `json:"partitions"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("ring show: %w: %s", err, out)
	}
	return resp.Partitions, nil
}

// ringHealthy reports whether each table's partitions cover the token ring
// without gap or overlap and each has exactly 4 voting replicas, all on
// distinct nodes of live, all reachable.
func ringHealthy(parts []partJSON, live map[uint64]bool) (bool, string) {
	if len(parts) == 0 {
		return false, "no partitions"
	}
	byTable := map[string][]partJSON{}
	for _, p := range parts {
		byTable[p.Table] = append(byTable[p.Table], p)
	}
	var problems []string
	for table, ps := range byTable {
		sort.Slice(ps, func(i, j int) bool { return ps[i].Start < ps[j].Start })
		next := int64(math.MinInt64)
		for i, p := range ps {
			if p.Start != next {
				problems = append(problems, fmt.Sprintf("%s: P%d starts at %d, want %d", table, p.ID, p.Start, next))
			}
			if i == len(ps)-1 && p.End != math.MaxInt64 {
				problems = append(problems, fmt.Sprintf("%s: last partition ends at %d", table, p.End))
			}
			next = p.End + 1
			seen := map[uint64]bool{}
			bad := len(p.Replicas) != 4
			for _, r := range p.Replicas {
				bad = bad || r.Learner || !r.Reachable || !live[r.NodeID] || seen[r.NodeID]
				seen[r.NodeID] = true
			}
			if bad {
				problems = append(problems, table+": "+p.String())
			}
		}
	}
	if len(problems) > 0 {
		return false, strings.Join(problems, "; ")
	}
	return true, ""
}

// replicasMatchRing reports whether every live node holds exactly the
// replicas the ring assigns it: none missing, no stale one left behind.
func replicasMatchRing(nodes []nodeJSON, parts []partJSON, live map[uint64]bool) (bool, string) {
	want := map[uint64]int{}
	for _, p := range parts {
		for _, r := range p.Replicas {
			want[r.NodeID]++
		}
	}
	var problems []string
	for _, n := range nodes {
		if live[n.ID] && n.Replicas != want[n.ID] {
			problems = append(problems, fmt.Sprintf("%s holds %d replicas, the ring gives it %d", n.Name, n.Replicas, want[n.ID]))
		}
	}
	if len(problems) > 0 {
		return false, strings.Join(problems, "; ")
	}
	return true, ""
}

// ids returns the node ids of containers as a set.
func ids(xs ...*Container) map[uint64]bool {
	m := map[uint64]bool{}
	for _, x := range xs {
		m[x.ID] = true
	}
	return m
}

// without returns the nodes except some.
func (c *Cluster) without(except ...*Container) []*Container {
	var out []*Container
	for _, n := range c.Nodes {
		if !slices.Contains(except, n) {
			out = append(out, n)
		}
	}
	return out
}

// RingHealthy polls once: the ring is healthy on exactly the nodes live.
func (c *Cluster) RingHealthy(live []*Container) (bool, string) {
	parts, err := c.Ring()
	if err != nil {
		return false, err.Error()
	}
	return ringHealthy(parts, ids(live...))
}

// Calm polls once: the nodes up are exactly up, the ring is healthy on
// them, each holds the replicas the ring gives it, and no operation runs.
func (c *Cluster) Calm(up []*Container) (bool, string) {
	nodes, err := c.NodesList()
	if err != nil {
		return false, err.Error()
	}
	live := ids(up...)
	for _, n := range nodes {
		if live[n.ID] != (n.State == "up") {
			return false, fmt.Sprintf("nodes: %v", nodes)
		}
	}
	parts, err := c.Ring()
	if err != nil {
		return false, err.Error()
	}
	if ok, why := ringHealthy(parts, live); !ok {
		return false, "ring: " + why
	}
	if ok, why := replicasMatchRing(nodes, parts, live); !ok {
		return false, why
	}
	ops, err := c.Operations()
	if err != nil {
		return false, err.Error()
	}
	for _, op := range ops {
		if op.Active() {
			return false, "operation in flight: " + op.String()
		}
	}
	return true, ""
}

// replicaHolders returns how many replicas each node holds in the ring.
func replicaHolders(parts []partJSON) map[uint64]int {
	m := map[uint64]int{}
	for _, p := range parts {
		for _, r := range p.Replicas {
			m[r.NodeID]++
		}
	}
	return m
}
