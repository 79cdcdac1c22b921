// Package blackbox checks a running cosmosd cluster from outside, the way
// its operators and clients see it: cosmosctl's JSON output, the health of
// the token ring it shows, gocql sessions configured as a careful client
// configures them, and a writer workload that verifies every acknowledged
// write. The container suites (test/e2e, test/e2e-ansible) share it.
package blackbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/cosmosd/cosmosd/placement"
)

// Node is one element of `cosmosctl nodes list -o json`.
type Node struct {
	ID       uint64 `json:"id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	Replicas int    `json:"replicas"`
	Leaders  int    `json:"leaders"`
	Version  string `json:"version"`
}

func (n Node) String() string {
	return fmt.Sprintf("%s(n%d):%s/%dr/%dl", n.Name, n.ID, n.State, n.Replicas, n.Leaders)
}

// Partition is one partition of `cosmosctl ring show -o json`.
type Partition struct {
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

// String is "P<id>[n1*,n2,n3(l),n4?]": * the leader, (l) a learner, ? an
// unreachable replica.
func (p Partition) String() string {
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

// Ctl is a cosmosctl binary and the admin endpoints it talks to.
type Ctl struct {
	Path      string
	Endpoints []string // host:port of admin APIs
}

// Run runs cosmosctl and returns its standard output.
func (c Ctl) Run(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	full := append([]string{"--endpoints", strings.Join(c.Endpoints, ","), "--timeout", "20s"}, args...)
	cmd := exec.CommandContext(ctx, c.Path, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cosmosctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Nodes returns `cosmosctl nodes list`.
func (c Ctl) Nodes() ([]Node, error) {
	out, err := c.Run("nodes", "list", "-o", "json")
	if err != nil {
		return nil, err
	}
	var nodes []Node
	if err := json.Unmarshal(out, &nodes); err != nil {
		return nil, fmt.Errorf("nodes list: %w: %s", err, out)
	}
	return nodes, nil
}

// Ring returns `cosmosctl ring show`.
func (c Ctl) Ring() ([]Partition, error) {
	out, err := c.Run("ring", "show", "-o", "json")
	if err != nil {
		return nil, err
	}
	var resp struct {
		Partitions []Partition `json:"partitions"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("ring show: %w: %s", err, out)
	}
	return resp.Partitions, nil
}

// RingHealth is what a healthy ring requires beyond full coverage.
type RingHealth struct {
	Live       map[uint64]bool // the nodes replicas may be on
	NeedLeader bool            // every partition reports a leader
}

// Check reports whether each table's partitions cover the token ring
// without gap or overlap and each has exactly 4 voting replicas, all on
// distinct live nodes, all reachable; "" or what is wrong.
func (h RingHealth) Check(parts []Partition) string {
	if len(parts) == 0 {
		return "no partitions"
	}
	byTable := map[string][]Partition{}
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
			bad := len(p.Replicas) != 4 || (h.NeedLeader && p.LeaderNode == 0)
			for _, r := range p.Replicas {
				bad = bad || r.Learner || !r.Reachable || !h.Live[r.NodeID] || seen[r.NodeID]
				seen[r.NodeID] = true
			}
			if bad {
				problems = append(problems, table+": "+p.String())
			}
		}
	}
	sort.Strings(problems)
	return strings.Join(problems, "; ")
}

// ReplicaHolders returns how many replicas each node holds in the ring.
func ReplicaHolders(parts []Partition) map[uint64]int {
	m := map[uint64]int{}
	for _, p := range parts {
		for _, r := range p.Replicas {
			m[r.NodeID]++
		}
	}
	return m
}

// ReplicasMatchRing reports "" when every live node holds exactly the
// replicas the ring assigns it (none missing, no stale one left behind),
// else what differs.
func ReplicasMatchRing(nodes []Node, parts []Partition, live map[uint64]bool) string {
	want := ReplicaHolders(parts)
	var problems []string
	for _, n := range nodes {
		if live[n.ID] && n.Replicas != want[n.ID] {
			problems = append(problems, fmt.Sprintf("%s holds %d replicas, the ring gives it %d", n.Name, n.Replicas, want[n.ID]))
		}
	}
	return strings.Join(problems, "; ")
}

// Calm polls once: the nodes up are exactly ring.Live, the ring is healthy
// on them (ring), each holds the replicas the ring gives it, and no
// placement operation is in flight (operations lists them).
func (c Ctl) Calm(ring RingHealth, operations func() ([]*placement.Operation, error)) (bool, string) {
	nodes, err := c.Nodes()
	if err != nil {
		return false, err.Error()
	}
	for _, n := range nodes {
		if ring.Live[n.ID] != (n.State == "up") {
			return false, fmt.Sprintf("nodes: %v", nodes)
		}
	}
	parts, err := c.Ring()
	if err != nil {
		return false, err.Error()
	}
	if why := ring.Check(parts); why != "" {
		return false, "ring: " + why
	}
	if why := ReplicasMatchRing(nodes, parts, ring.Live); why != "" {
		return false, why
	}
	ops, err := operations()
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
