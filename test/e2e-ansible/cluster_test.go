package e2eansible

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/test/blackbox"
	"github.com/cosmosd/cosmosd/test/dockertest"
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
	run     *dockertest.Run
	network string
	prefix  string // "10.x.y."
	image   string
	logs    string      // playbook logs and, on failure, journals
	ctlPath string      // the host's cosmosctl
	runs    int         // playbook runs so far, to number their logs
	gocql   *log.Logger // the driver's log, in the log directory
	// secrets is where the roles keep the cluster's CA, cosmosctl's client
	// certificate and the generated superuser password on the controller:
	// next to the inventory (secure_test.go).
	secrets string
	Hosts   []*Host
}

// newCluster creates the network of a run; hosts are added by addHost.
func newCluster(t *testing.T, root, image, ctl string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, root: root, image: image, ctlPath: ctl, run: dockertest.NewRun(suite)}
	c.network = "cosmosd-e2e-ansible-" + c.run.ID
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
	if c.prefix, err = c.run.CreateNetwork(c.network); err != nil {
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
	args := append([]string{"run", "-d", "--name", h.Name, "--hostname", h.Host}, c.run.Labels()...)
	args = append(args, "--network", c.network, "--ip", h.IP)
	args = append(args, systemdRunFlags()...)
	if _, err := dockertest.DockerT(append(args, c.image)...); err != nil {
		t.Fatalf("start host %s: %v", h.Host, err)
	}
	c.Hosts = append(c.Hosts, h)
	blackbox.WaitFor(t, 2*time.Minute, "systemd booted on "+h.Host, func() (bool, string) {
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
	out, err := dockertest.DockerT(append([]string{"exec", h.Name}, args...)...)
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
	if err := c.run.Remove(c.network); err != nil {
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
		c.t.Logf("---- last journal lines of %s (%s) ----\n%s", h.Host, h.IP, blackbox.Tail(string(out), 30))
	}
}

// cosmosctl, as an operator runs it from the host.

// ctl is the host's cosmosctl pointed at the given hosts' admin ports.
func (c *Cluster) ctl(hosts []*Host) blackbox.Ctl {
	var eps []string
	for _, h := range hosts {
		eps = append(eps, h.IP+":7070")
	}
	return blackbox.Ctl{Path: c.ctlPath, Endpoints: eps}
}

// healthy reports whether exactly the given hosts are up (others may be
// decommissioned) and every table's partitions cover the token ring, each
// with 4 voting replicas on distinct up nodes, all reachable, and a
// leader.
func (c *Cluster) healthy(hosts []*Host) (bool, string) {
	nodes, err := c.ctl(hosts).Nodes()
	if err != nil {
		return false, err.Error()
	}
	up := map[uint64]bool{}
	byName := map[string]blackbox.Node{}
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
	parts, err := c.ctl(hosts).Ring()
	if err != nil {
		return false, err.Error()
	}
	why := blackbox.RingHealth{Live: up, NeedLeader: true}.Check(parts)
	return why == "", why
}

// CQL sessions from the host.

// session opens a gocql session over the given hosts, every one a contact
// point; a session over one host talks to that host only.
func (c *Cluster) session(t *testing.T, hosts ...*Host) *gocql.Session {
	t.Helper()
	var ips []string
	for _, h := range hosts {
		ips = append(ips, h.IP)
	}
	cc := c.secureCQL(t, blackbox.ClusterConfig(c.gocql, ips...))
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
