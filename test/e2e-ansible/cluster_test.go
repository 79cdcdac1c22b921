package e2eansible

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// Host is one container playing a Debian host.
type Host struct {
	Name       string // docker container name (ansible_host)
	Host       string // inventory host name = cosmosd node name (node-N)
	IP         string
	Zone, Rack string
}

// Cluster is the hosts of one run and what the test built for them.
// Methods are for the test goroutine.
type Cluster struct {
	t       *testing.T
	root    string // the module root
	runID   string
	network string
	prefix  string // "10.x.y."
	image   string
	logs    string      // playbook logs and, on failure, journals
	ctl     string      // the host's cosmosctl
	runs    int         // playbook runs so far, to number their logs
	gocql   *log.Logger // the driver's log, in the log directory
	Hosts   []*Host
}

// newCluster creates the network of a run; hosts are added by addHost.
func newCluster(t *testing.T, root, image, ctl string) *Cluster {
	t.Helper()
	sweepAbandoned()
	c := &Cluster{t: t, root: root, image: image, ctl: ctl, runID: randomID(4)}
	c.network = "cosmosd-e2e-ansible-" + c.runID
	c.logs = filepath.Join(os.TempDir(), c.network)
	if err := os.MkdirAll(c.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(c.logs, "gocql.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	c.gocql = log.New(f, "", log.LstdFlags|log.Lmicroseconds)
	if c.prefix, err = createNetwork(c.network, c.runID); err != nil {
		t.Fatalf("network: %v", err)
	}
	t.Cleanup(c.remove)
	return c
}

// addHost starts host number i (node-i at .20+i) and waits until systemd
// has booted it.
func (c *Cluster) addHost(t *testing.T, i int) *Host {
	t.Helper()
	h := &Host{Name: fmt.Sprintf("%s-node-%d", c.network, i), Host: fmt.Sprintf("node-%d", i), IP: fmt.Sprintf("%s%d", c.prefix, 20+i),
		Zone: fmt.Sprintf("z%d", i), Rack: fmt.Sprintf("r%d", i)}
	args := []string{"run", "-d", "--name", h.Name, "--hostname", h.Host,
		"--label", labelRun + "=" + c.runID, "--label", labelOwner + "=" + strconv.Itoa(os.Getpid()),
		"--network", c.network, "--ip", h.IP}
	args = append(args, systemdRunFlags()...)
	if _, err := dockerT(append(args, c.image)...); err != nil {
		t.Fatalf("start host %s: %v", h.Host, err)
	}
	c.Hosts = append(c.Hosts, h)
	waitFor(t, 2*time.Minute, "systemd booted on "+h.Host, func() (bool, string) {
		// "degraded" still boots: a unit that fails in a container is
		// not ours to judge, and --failed is logged below.
		out, _ := c.exec(h, "systemctl", "is-system-running")
		return out == "running" || out == "degraded", "systemctl is-system-running: " + out
	})
	if failed, _ := c.exec(h, "systemctl", "--failed", "--no-legend", "--plain"); failed != "" {
		t.Logf("%s booted with failed units: %s", h.Host, failed)
	}
	return h
}

// exec runs a command in a host and returns its trimmed output.
func (c *Cluster) exec(h *Host, args ...string) (string, error) {
	out, err := dockerT(append([]string{"exec", h.Name}, args...)...)
	return strings.TrimSpace(out), err
}

// mustExec runs a command in a host that must succeed.
func (c *Cluster) mustExec(t *testing.T, h *Host, args ...string) string {
	t.Helper()
	out, err := c.exec(h, args...)
	if err != nil {
		t.Fatalf("on %s: %v", h.Host, err)
	}
	return out
}

// remove saves the hosts' journals when the test failed, then removes the
// run's containers and network.
func (c *Cluster) remove() {
	if c.t.Failed() {
		c.dumpJournals()
	}
	if err := removeRun(c.runID, c.network); err != nil {
		c.t.Errorf("cleanup: %v", err)
	}
	if !c.t.Failed() && os.Getenv("COSMOSD_E2E_ANSIBLE_KEEP_LOGS") == "" {
		_ = os.RemoveAll(c.logs)
	} else {
		c.t.Logf("playbook logs and journals kept in %s", c.logs)
	}
}

// dumpJournals saves every host's journal (cosmosd and etcd) and prints
// its tail.
func (c *Cluster) dumpJournals() {
	for _, h := range c.Hosts {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, "docker", "exec", h.Name, "journalctl", "--no-pager", "-o", "short-precise",
			"-u", "cosmosd", "-u", "etcd").CombinedOutput()
		cancel()
		if err != nil {
			c.t.Logf("journal of %s: %v", h.Host, err)
		}
		_ = os.WriteFile(filepath.Join(c.logs, h.Host+".journal"), out, 0o644)
		c.t.Logf("---- last journal lines of %s (%s) ----\n%s", h.Host, h.IP, tail(string(out), 30))
	}
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("timed out after %s waiting for %s; last state: %s", d, what, state)
		}
		<-tick.C
	}
}

// cosmosctl, as an operator runs it from the host.

// nodeJSON is one element of `cosmosctl nodes list -o json`.
type nodeJSON struct {
	ID       uint64 `json:"id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	Replicas int    `json:"replicas"`
	Version  string `json:"version"`
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

// Ctl runs the host's cosmosctl against the given hosts' admin ports.
func (c *Cluster) Ctl(hosts []*Host, args ...string) ([]byte, error) {
	var eps []string
	for _, h := range hosts {
		eps = append(eps, h.IP+":7070")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	full := append([]string{"--endpoints", strings.Join(eps, ","), "--timeout", "20s"}, args...)
	cmd := exec.CommandContext(ctx, c.ctl, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cosmosctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// NodesList returns `cosmosctl nodes list`.
func (c *Cluster) NodesList(hosts []*Host) ([]nodeJSON, error) {
	out, err := c.Ctl(hosts, "nodes", "list", "-o", "json")
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
func (c *Cluster) Ring(hosts []*Host) ([]partJSON, error) {
	out, err := c.Ctl(hosts, "ring", "show", "-o", "json")
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

// healthy reports whether exactly the given hosts are up (others may be
// decommissioned) and every table's partitions cover the token ring, each
// with 4 voting replicas on distinct up nodes, all reachable, and a
// leader.
func (c *Cluster) healthy(hosts []*Host) (bool, string) {
	nodes, err := c.NodesList(hosts)
	if err != nil {
		return false, err.Error()
	}
	up := map[uint64]bool{}
	byName := map[string]nodeJSON{}
	for _, n := range nodes {
		byName[n.Name] = n
		if n.State == "up" {
			up[n.ID] = true
		}
	}
	for _, h := range hosts {
		if byName[h.Host].State != "up" {
			return false, fmt.Sprintf("%s is %q: %v", h.Host, byName[h.Host].State, nodes)
		}
	}
	if len(up) != len(hosts) {
		return false, fmt.Sprintf("%d nodes up, want %d: %v", len(up), len(hosts), nodes)
	}
	parts, err := c.Ring(hosts)
	if err != nil {
		return false, err.Error()
	}
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
			if p.Start != next || (i == len(ps)-1 && p.End != math.MaxInt64) {
				problems = append(problems, fmt.Sprintf("%s: P%d covers [%d, %d], expected to start at %d", table, p.ID, p.Start, p.End, next))
			}
			next = p.End + 1
			seen := map[uint64]bool{}
			bad := len(p.Replicas) != 4 || p.LeaderNode == 0
			for _, r := range p.Replicas {
				bad = bad || r.Learner || !r.Reachable || !up[r.NodeID] || seen[r.NodeID]
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

// CQL sessions from the host.

// session opens a gocql session over the given hosts: every one a contact
// point, QUORUM, timeouts longer than the nodes' request timeout and
// retries on the next host for idempotent statements.
func (c *Cluster) session(t *testing.T, hosts ...*Host) *gocql.Session {
	t.Helper()
	var ips []string
	for _, h := range hosts {
		ips = append(ips, h.IP)
	}
	cc := gocql.NewCluster(ips...)
	cc.Port = 9042
	cc.ProtoVersion = 4
	cc.Consistency = gocql.Quorum
	cc.Timeout = 12 * time.Second
	cc.ConnectTimeout = 5 * time.Second
	cc.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 8}
	cc.Logger = c.gocql
	if len(hosts) == 1 {
		cc.HostFilter = gocql.WhiteListHostFilter(hosts[0].IP)
	}
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatalf("gocql session on %v: %v", ips, err)
	}
	t.Cleanup(s.Close)
	return s
}
