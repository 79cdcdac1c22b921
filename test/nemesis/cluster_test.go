package nemesis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/placement"
	"github.com/cosmosd/cosmosd/test/blackbox"
	"github.com/cosmosd/cosmosd/test/dockertest"
)

// The cluster under test is test/e2e's: 3 etcd members (`cosmosd etcd`)
// and 5 cosmosd nodes in containers on a private network, with fast
// repair. Unlike e2e, each node's data directory is a directory of the
// host bind-mounted at /data, a file system of its own when the test may
// mount one (root): the disk-full fault fills it from the host, and the
// wipe fault empties it. It is ext4 on a sparse image file (in /dev/shm
// when there is one, so it costs the memory of what is written only):
// not a tmpfs, because Pebble preallocates each WAL at 110% of its 64 MiB
// memtable and keeps up to about seven WALs before its first flush, which
// a tmpfs would charge in full (a fresh node "uses" ~500 MiB).

// Timings of the cluster under test (see test/e2e for why the TTL is 15s).
const (
	registrationTTL = 15 * time.Second
	deadAfter       = 5 * time.Second
	etcdPrefix      = "/cosmosd/"
	// clockFile is where each node reads its clock offset (the test hook
	// testing_clock_offset_file); the clock-skew fault writes it with
	// docker cp.
	clockFile = "/clock-offset"
	// dataSize bounds each node's data directory: far more than a run
	// writes and Pebble preallocates, so only the disk-full fault fills it.
	dataSize = 2 << 30
)

// nodeConfig is the YAML given to every node for what has no flag.
var nodeConfig = fmt.Sprintf("registration_ttl: %s\nrequest_timeout: 8s\nshutdown_timeout: 10s\ntesting_clock_offset_file: %s\n", registrationTTL, clockFile)

// Container is one host of the cluster.
type Container struct {
	Name    string // docker container name
	Host    string // cosmosd node name (node-N) or etcd member name (eN)
	IP      string
	dataDir string   // host directory mounted at /data; "" for an anonymous volume
	args    []string // the entrypoint's arguments, to re-create the container
}

// Cluster is the containers of one run. Methods are safe for concurrent
// use: the nemesis, the operator and the checks share it.
type Cluster struct {
	t        *testing.T
	art      *dockertest.Artifacts
	run      *dockertest.Run
	network  string
	prefix   string // "10.x.y."
	dir      string // the run's directory: logs, report, histories; kept
	dataRoot string // parent of the nodes' data mounts; "" without them
	noDisk   string // why nodes have no size-limited data directory
	noCut    string // why partial partitions (iptables) are unavailable
	Etcd     []*Container
	Nodes    []*Container
	etcd     *metakv.EtcdClient
	gocqlLog *blackbox.LogBuffer

	mu      sync.Mutex
	faulty  map[*Container]string // nodes that cannot answer now, and why
	ids     map[*Container]uint64 // the node id each container runs as now
	retired []uint64              // node ids whose data was wiped
}

// startCluster starts a cluster that is removed when the test ends.
func startCluster(t *testing.T) *Cluster {
	t.Helper()
	start := time.Now()
	art, err := dockertest.Build(imageRepo)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	c := &Cluster{t: t, art: art, run: dockertest.NewRun(suite), gocqlLog: &blackbox.LogBuffer{},
		faulty: map[*Container]string{}, ids: map[*Container]uint64{}}
	sweepDataMounts()
	c.network = "cosmosd-nemesis-" + c.run.ID
	if c.dir, err = os.MkdirTemp("", "cosmosd-nemesis-"+c.run.ID+"-"); err != nil {
		t.Fatal(err)
	}
	if c.prefix, err = c.run.CreateNetwork(c.network); err != nil {
		t.Fatalf("network: %v", err)
	}
	t.Cleanup(c.remove)
	t.Logf("run %s: image %s, network %s (%s0/24), built in %s; logs and report in %s",
		c.run.ID, art.Image, c.network, c.prefix, time.Since(start).Round(100*time.Millisecond), c.dir)
	c.noCut = cutProblem()

	var initial, endpoints []string
	for i := 1; i <= 3; i++ {
		e := &Container{Name: fmt.Sprintf("%s-e%d", c.network, i), Host: fmt.Sprintf("e%d", i), IP: fmt.Sprintf("%s%d", c.prefix, 10+i)}
		c.Etcd = append(c.Etcd, e)
		initial = append(initial, fmt.Sprintf("%s=http://%s:2380", e.Host, e.IP))
		endpoints = append(endpoints, e.IP+":2379")
	}
	for _, e := range c.Etcd {
		e.args = []string{"etcd", "--name", e.Host, "--data-dir", "/data",
			"--listen-client", "0.0.0.0:2379", "--listen-peer", "0.0.0.0:2380",
			"--advertise-client", e.IP + ":2379", "--advertise-peer", e.IP + ":2380",
			"--initial-cluster", strings.Join(initial, ",")}
		c.must(c.create(e))
		c.must(c.docker("start", e.Name))
	}
	c.etcd, err = metakv.DialEtcd(metakv.EtcdClientConfig{Endpoints: endpoints, Prefix: etcdPrefix})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = c.etcd.Close() })
	for _, e := range c.Etcd {
		blackbox.WaitFor(t, 60*time.Second, "etcd member "+e.Host+" serving", func() (bool, string) { return c.etcdMemberOK(e) })
	}

	c.mountData(5)
	for i := 1; i <= 5; i++ {
		n := &Container{Name: fmt.Sprintf("%s-node-%d", c.network, i), Host: fmt.Sprintf("node-%d", i), IP: fmt.Sprintf("%s%d", c.prefix, 20+i)}
		if c.dataRoot != "" {
			n.dataDir = filepath.Join(c.dataRoot, n.Host)
		}
		n.args = []string{"--config", "/cosmosd.yaml", "--name", n.Host, "--data-dir", "/data",
			"--etcd-endpoints", strings.Join(endpoints, ","), "--advertise-host", n.IP,
			"--cql-addr", "0.0.0.0:9042", "--peer-addr", "0.0.0.0:7000", "--admin-addr", "0.0.0.0:7070", "--http-addr", "0.0.0.0:8080",
			"--consensus", "raft", "--dead-after", deadAfter.String(),
			"--label", fmt.Sprintf("zone=z%d", i), "--label", fmt.Sprintf("rack=r%d", i)}
		c.Nodes = append(c.Nodes, n)
		c.must(c.createNode(n))
		c.must(c.docker("start", n.Name))
	}
	blackbox.WaitFor(t, 90*time.Second, "5 nodes up", func() (bool, string) {
		if err := c.refreshIDs(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	t.Logf("cluster up in %s: %s", time.Since(start).Round(100*time.Millisecond), c.describe())
	return c
}

func (c *Cluster) must(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

// docker runs a docker command.
func (c *Cluster) docker(args ...string) error {
	_, err := dockertest.DockerT(args...)
	return err
}

// create creates a container (not started) with its arguments.
func (c *Cluster) create(x *Container) error {
	args := append([]string{"create", "--name", x.Name, "--hostname", x.Host}, c.run.Labels()...)
	args = append(args, "--network", c.network, "--ip", x.IP, "--init")
	if x.dataDir != "" {
		args = append(args, "-v", x.dataDir+":/data")
	} else {
		args = append(args, "-v", "/data")
	}
	return c.docker(append(append(args, c.art.Image), x.args...)...)
}

// createNode creates a node's container and copies its configuration in:
// a scratch image has no shell to write files with.
func (c *Cluster) createNode(n *Container) error {
	if err := c.create(n); err != nil {
		return err
	}
	cfgPath := filepath.Join(c.dir, "cosmosd.yaml")
	if err := os.WriteFile(cfgPath, []byte(nodeConfig), 0o644); err != nil {
		return err
	}
	return c.docker("cp", cfgPath, n.Name+":/cosmosd.yaml")
}

// dataName names a run's data directories and images after the run and
// the test process, so a later run can sweep what a killed one left.
func dataName(runID string, pid int) string {
	return fmt.Sprintf("cosmosd-nemesis-data-%s-%d", runID, pid)
}

// imageDir holds the file systems' images: /dev/shm when there is one.
func imageDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// mountData gives each node a size-limited ext4 file system on a sparse
// image (mount -o loop). Without the right to mount or the tools, nodes
// keep anonymous volumes and the disk-full fault is left out.
func (c *Cluster) mountData(nodes int) {
	name := dataName(c.run.ID, os.Getpid())
	root := filepath.Join(os.TempDir(), name)
	if os.Geteuid() != 0 {
		c.noDisk = "needs root to mount a file system per node"
		return
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		c.noDisk = "no mkfs.ext4 on the host"
		return
	}
	for i := 1; i <= nodes && c.noDisk == ""; i++ {
		dir := filepath.Join(root, fmt.Sprintf("node-%d", i))
		img := filepath.Join(imageDir(), fmt.Sprintf("%s-node-%d.img", name, i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			c.noDisk = err.Error()
			break
		}
		f, err := os.Create(img)
		if err == nil {
			err = errors.Join(f.Truncate(dataSize), f.Close())
		}
		if err != nil {
			c.noDisk = err.Error()
			break
		}
		for _, cmd := range [][]string{{"mkfs.ext4", "-q", "-F", "-m", "0", img}, {"mount", "-o", "loop", img, dir}} {
			if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
				c.noDisk = fmt.Sprintf("%s: %v: %s", strings.Join(cmd, " "), err, strings.TrimSpace(string(out)))
				break
			}
		}
	}
	if c.noDisk != "" {
		unmountData(name)
		return
	}
	c.dataRoot = root
}

// unmountData unmounts and removes the data directories and images of a
// run.
func unmountData(name string) {
	root := filepath.Join(os.TempDir(), name)
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if exec.Command("umount", dir).Run() != nil {
			// Busy: detach it lazily, so RemoveAll below cannot reach
			// into it.
			_ = exec.Command("umount", "-l", dir).Run()
		}
	}
	_ = os.RemoveAll(root)
	imgs, _ := filepath.Glob(filepath.Join(imageDir(), name+"-node-*.img"))
	for _, img := range imgs {
		_ = os.Remove(img)
	}
}

// sweepDataMounts removes the data directories and images of earlier runs
// whose test process is gone (go test's -timeout skips cleanups). Their
// containers are gone already: dockertest.NewRun swept them.
func sweepDataMounts() {
	pattern := regexp.MustCompile(`^(cosmosd-nemesis-data-[0-9a-f]+-([0-9]+))(-node-[0-9]+\.img)?$`)
	var names []string
	for _, dir := range []string{os.TempDir(), imageDir()} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	if f, err := os.Open("/proc/mounts"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fields := strings.Fields(sc.Text()); len(fields) >= 2 {
				names = append(names, filepath.Base(filepath.Dir(fields[1])))
			}
		}
		f.Close()
	}
	swept := map[string]bool{}
	for _, n := range names {
		m := pattern.FindStringSubmatch(n)
		if m == nil || swept[m[1]] {
			continue
		}
		if pid, _ := strconv.Atoi(m[2]); pid > 0 && syscall.Kill(pid, 0) == nil {
			continue // its test process runs
		}
		swept[m[1]] = true
		unmountData(m[1])
	}
}

// cutProblem says why partial partitions cannot be made: they add
// iptables rules in a container's network namespace from the host.
func cutProblem() string {
	if os.Geteuid() != 0 {
		return "needs root for nsenter and iptables"
	}
	for _, tool := range []string{"nsenter", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "no " + tool + " on the host"
		}
	}
	return ""
}

func (c *Cluster) describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s []string
	for _, n := range c.Nodes {
		s = append(s, fmt.Sprintf("%s=n%d@%s", n.Host, c.ids[n], n.IP))
	}
	return strings.Join(s, " ")
}

// remove saves every container's log in the run directory (printing the
// tails when the test failed or COSMOSD_NEMESIS_LOGS=1), removes the
// containers and the network, and unmounts the data directories.
func (c *Cluster) remove() {
	c.saveLogs(c.t.Failed() || os.Getenv("COSMOSD_NEMESIS_LOGS") == "1")
	if err := c.run.Remove(c.network); err != nil {
		c.t.Errorf("cleanup: %v", err)
	}
	if c.dataRoot != "" {
		unmountData(filepath.Base(c.dataRoot))
	}
	c.t.Logf("logs, report and histories of run %s kept in %s", c.run.ID, c.dir)
}

func (c *Cluster) saveLogs(print bool) {
	dir := filepath.Join(c.dir, "logs")
	_ = os.MkdirAll(dir, 0o755)
	for _, x := range append(append([]*Container{}, c.Etcd...), c.Nodes...) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, "docker", "logs", "-t", x.Name).CombinedOutput()
		cancel()
		if err != nil {
			c.t.Logf("logs of %s: %v", x.Name, err)
		}
		_ = os.WriteFile(filepath.Join(dir, x.Host+".log"), out, 0o644)
		if print {
			c.t.Logf("---- last lines of %s (%s) ----\n%s", x.Host, x.IP, blackbox.Tail(string(out), 40))
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "gocql.log"), []byte(c.gocqlLog.String()), 0o644)
	if print {
		c.t.Logf("---- last gocql log lines ----\n%s", blackbox.Tail(c.gocqlLog.String(), 20))
	}
}

// saveState keeps cosmosctl's views of the cluster (nodes, ring,
// operations) in the run directory, for the report's evidence.
func (c *Cluster) saveState(name string) {
	var b strings.Builder
	for _, args := range [][]string{{"nodes", "list"}, {"ring", "show"}, {"ops", "list"}} {
		out, err := c.ctl().Run(args...)
		fmt.Fprintf(&b, "$ cosmosctl %s\n%s", strings.Join(args, " "), out)
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
		}
		b.WriteString("\n")
	}
	_ = os.WriteFile(filepath.Join(c.dir, name+".txt"), []byte(b.String()), 0o644)
}

// logTail returns the last lines of a container's log.
func (c *Cluster) logTail(x *Container, n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "docker", "logs", "--tail", strconv.Itoa(n), x.Name).CombinedOutput()
	return string(out)
}

// Node ids.

// refreshIDs reads which node id each container runs as: the highest id
// up under its name (a wiped node comes back under a new id while its old
// one is still listed, down).
func (c *Cluster) refreshIDs() error {
	nodes, err := c.ctl().Nodes()
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	found := map[*Container]uint64{}
	for _, n := range c.Nodes {
		for _, ln := range nodes {
			if ln.Name == n.Host && ln.State == "up" && ln.ID > found[n] {
				found[n] = ln.ID
			}
		}
		if found[n] == 0 {
			return fmt.Errorf("%s is not up: %v", n.Host, nodes)
		}
	}
	for n, id := range found {
		c.ids[n] = id
	}
	return nil
}

// ID returns the node id a container runs as.
func (c *Cluster) ID(n *Container) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[n]
}

// byID returns the node container running as an id, or nil.
func (c *Cluster) byID(id uint64) *Container {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, x := range c.ids {
		if x == id {
			return n
		}
	}
	return nil
}

// liveIDs returns the ids of the nodes as a set.
func (c *Cluster) liveIDs(except ...*Container) map[uint64]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[uint64]bool{}
	for _, n := range c.Nodes {
		if !slices.Contains(except, n) {
			m[c.ids[n]] = true
		}
	}
	return m
}

// cosmosctl and etcd views.

// ctl is the host's cosmosctl pointed at the nodes that can answer now.
func (c *Cluster) ctl() blackbox.Ctl {
	c.mu.Lock()
	defer c.mu.Unlock()
	var eps []string
	for _, n := range c.Nodes {
		if c.faulty[n] == "" {
			eps = append(eps, n.IP+":7070")
		}
	}
	return blackbox.Ctl{Path: c.art.Ctl, Endpoints: eps}
}

// Ring returns `cosmosctl ring show`.
func (c *Cluster) Ring() ([]blackbox.Partition, error) { return c.ctl().Ring() }

// Operations lists the placement operations.
func (c *Cluster) Operations() ([]*placement.Operation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return placement.ListOperations(ctx, cluster.NewOperations(c.etcd.Store()))
}

// etcdMemberOK reports whether an etcd member answers and knows a leader.
func (c *Cluster) etcdMemberOK(e *Container) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := c.etcd.MemberStatus(ctx, e.IP+":2379")
	if err != nil {
		return false, err.Error()
	}
	if st.Leader == 0 {
		return false, "no leader"
	}
	return true, ""
}

// Recovered polls once: every node up under its current id and the ring
// healthy on them (the weaker condition the nemesis waits for between
// faults; Calm adds that stale replicas are gone and nothing is in
// flight).
func (c *Cluster) Recovered() (bool, string) {
	if err := c.refreshIDs(); err != nil {
		return false, err.Error()
	}
	parts, err := c.Ring()
	if err != nil {
		return false, err.Error()
	}
	if why := (blackbox.RingHealth{Live: c.liveIDs(), NeedLeader: true}).Check(parts); why != "" {
		return false, "ring: " + why
	}
	return true, ""
}

// Calm polls once, as test/e2e's calm check: exactly the current nodes
// are up, the ring is healthy on them, each holds the replicas the ring
// gives it, and no placement operation is in flight.
func (c *Cluster) Calm() (bool, string) {
	if err := c.refreshIDs(); err != nil {
		return false, err.Error()
	}
	return c.ctl().Calm(blackbox.RingHealth{Live: c.liveIDs(), NeedLeader: true}, c.Operations)
}

// waitCalm waits until the cluster is calm at every check for calmFor
// (the controller plans in rounds and rebalances in waves, so one calm
// check can fall between two waves).
func (c *Cluster) waitCalm(t testing.TB, d time.Duration, what string) time.Duration {
	t.Helper()
	const calmFor = 3 * time.Second
	var since time.Time
	return blackbox.WaitFor(t, d, "a calm cluster "+what, func() (bool, string) {
		ok, why := c.Calm()
		switch {
		case !ok:
			since = time.Time{}
			return false, why
		case since.IsZero():
			since = time.Now()
		}
		return time.Since(since) >= calmFor, fmt.Sprintf("calm for %s", time.Since(since).Round(100*time.Millisecond))
	})
}

// Sessions.

// opTimeout bounds one client operation (and each driver attempt): longer
// than the nodes' request timeout (8s), so a node's own timeout answer
// arrives first.
const opTimeout = 10 * time.Second

// clusterConfig is the driver configuration of the workload's clients:
// test/blackbox's careful client, token-aware, with coordinator-side
// timestamps (so a node's skewed clock stamps what it coordinates) and a
// quick return to nodes that were down. The retry policy serves the
// reads: gocql 1.7 applies it to any statement, idempotent or not, so
// writes run without it (see runOp).
func (c *Cluster) clusterConfig(hosts ...*Container) *gocql.ClusterConfig {
	if len(hosts) == 0 {
		hosts = c.Nodes
	}
	var ips []string
	for _, n := range hosts {
		ips = append(ips, n.IP)
	}
	cc := blackbox.ClusterConfig(c.gocqlLog, ips...)
	cc.Timeout = opTimeout
	cc.SerialConsistency = gocql.Serial
	cc.DefaultTimestamp = false
	cc.ReconnectInterval = 2 * time.Second
	cc.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 2}
	cc.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	return cc
}

// Session opens a session over all nodes, closed when the test ends.
func (c *Cluster) Session(t testing.TB) *gocql.Session {
	t.Helper()
	s, err := c.clusterConfig().CreateSession()
	if err != nil {
		t.Fatalf("gocql session: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// NodeSession opens a session that talks to one node only; the caller
// closes it.
func (c *Cluster) NodeSession(n *Container) (*gocql.Session, error) {
	cc := c.clusterConfig(n)
	cc.HostFilter = gocql.WhiteListHostFilter(n.IP)
	cc.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
	return cc.CreateSession()
}
