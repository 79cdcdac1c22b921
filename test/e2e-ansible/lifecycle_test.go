package e2eansible

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/test/blackbox"
	"github.com/cosmosd/cosmosd/test/dockertest"
)

// requireAll skips the test, with the reason, when it cannot or should not
// run here.
func requireAll(t *testing.T, root string) {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e-ansible: skipped in -short mode (it takes minutes)")
	}
	if v := os.Getenv("COSMOSD_E2E_ANSIBLE"); v == "0" || v == "false" || v == "off" {
		t.Skip("e2e-ansible: skipped because COSMOSD_E2E_ANSIBLE=" + v)
	}
	if why := dockertest.Problem(); why != "" {
		t.Skip("e2e-ansible: needs Docker: " + why)
	}
	if why := ansibleProblem(); why != "" {
		t.Skip("e2e-ansible: " + why)
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("e2e-ansible: needs dpkg-deb (a Debian host) to build the package")
	}
	if why := imageProblem(filepath.Join(root, "test", "e2e-ansible", "image", "build.sh")); why != "" {
		t.Skip("e2e-ansible: " + why)
	}
}

// TestAnsibleLifecycle provisions five hosts with site.yml and takes the
// cluster through a rolling upgrade and a rollback under load, an
// idempotence check, a decommission and a node added; see the package
// documentation.
func TestAnsibleLifecycle(t *testing.T) {
	root, err := dockertest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	requireAll(t, root)
	begin := time.Now()
	dir := t.TempDir()

	deb := makeDist(t, root)
	// Two packages of higher versions than the one built: the roll
	// upgrades to the higher, site.yml then rolls back to the lower.
	upgrade := repackDeb(t, deb, dir, "+e2e2")
	rollback := repackDeb(t, deb, dir, "+e2e1")
	ctl := filepath.Join(dir, "cosmosctl")
	goBuild(t, root, ctl, "./cmd/cosmosctl")
	image := buildImage(t, filepath.Join(root, "test", "e2e-ansible", "image", "build.sh"))

	c := newCluster(t, root, image, ctl)
	// The roles keep the cluster's secrets next to the inventory; the
	// host's cosmosctl presents the client certificate they make.
	c.secrets = dir
	t.Setenv("COSMOSCTL_CERTS_DIR", c.certsDir())
	t0 := time.Now()
	for i := 1; i <= 5; i++ {
		c.addHost(t, i)
	}
	hosts := append([]*Host(nil), c.Hosts...)
	t.Logf("run %s: 5 hosts booted with systemd in %s on %s0/24 (%s)", c.run.ID, time.Since(t0).Round(100*time.Millisecond), c.prefix, strings.Join(systemdRunFlags(), " "))
	// What `apt install etcd-server` leaves on a Debian host: the package's
	// default single-member etcd running. The etcd role must turn it into
	// a member of the new 3-member cluster.
	for _, h := range hosts[:3] {
		c.mustExec(t, h, "systemctl", "enable", "--now", "etcd")
	}
	inv := filepath.Join(dir, "inventory.yml")
	write := func(i inventory) {
		t.Helper()
		if err := i.write(inv); err != nil {
			t.Fatal(err)
		}
	}
	write(inventory{deb: deb, etcd: hosts[:3], cosmosd: hosts})

	var writers []*blackbox.Writer
	var session *gocql.Session
	step := func(name string, f func(t *testing.T)) {
		t0 := time.Now()
		if !t.Run(name, f) {
			t.FailNow()
		}
		t.Logf("step %s took %s", name, time.Since(t0).Round(100*time.Millisecond))
	}

	step("site", func(t *testing.T) {
		res := c.playbook(t, inv, "site.yml")
		if len(res) != 5 {
			t.Errorf("PLAY RECAP lists %d hosts, want 5: %s", len(res), formatRecap(res))
		}
	})

	// The writers' session lives as long as the test: every node a contact
	// point; the driver learns of node-6 from the cluster's events.
	session = c.session(t, hosts...)

	step("forms", func(t *testing.T) {
		nodes, err := c.ctl(hosts).Nodes()
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 5 {
			t.Fatalf("nodes list shows %d nodes, want 5: %v", len(nodes), nodes)
		}
		for _, n := range nodes {
			if n.State != "up" {
				t.Errorf("node %s is %s, want up", n.Name, n.State)
			}
		}
		for _, h := range hosts {
			checkReadyz(t, c, h)
		}
		checkSecure(t, c, hosts)
		for _, q := range []string{
			"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
			blackbox.TableCQL,
			"CREATE KEYSPACE uprofile WITH REPLICATION = {'class' : 'SimpleStrategy', 'replication_factor' : 1}",
			"CREATE TABLE uprofile.user (user text, id int, message text, PRIMARY KEY (user, id))",
		} {
			if err := session.Query(q).Exec(); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		seedScenario(t, c, hosts)
		took := blackbox.WaitFor(t, 3*time.Minute, "4 healthy replicas for every partition", func() (bool, string) { return c.healthy(hosts) })
		parts, _ := c.ctl(hosts).Ring()
		n := 0
		for _, p := range parts {
			if p.Table == blackbox.Table {
				n++
			}
		}
		if n != 3 {
			t.Errorf("%s provisioned with 30000 RU/s has %d physical partitions, want 3: %v", blackbox.Table, n, parts)
		}
		out, _ := c.ctl(hosts).Run("ring", "show")
		t.Logf("ring healthy %s after the tables were created:\n%s", took.Round(100*time.Millisecond), out)
	})

	step("rolling-upgrade", func(t *testing.T) {
		w := blackbox.StartWriter(session, "roll", 1_000_000, 2)
		writers = append(writers, w)
		defer w.Halt()
		w.WaitProgress(t, 50, time.Minute, "before the roll")
		since := time.Now()
		res := c.playbook(t, inv, "rolling-restart.yml", "-e", "cosmosd_deb="+upgrade.path)
		oneAtATime(t, c, hosts, since)
		for _, h := range hosts {
			if res[h.Host].Changed == 0 {
				t.Errorf("%s: rolling-restart.yml changed nothing (%+v), want a restart", h.Host, res[h.Host])
			}
		}
		w.WaitProgress(t, 50, time.Minute, "after the roll")
		w.Halt()
		w.Report(t)
		t.Logf("read back %d acknowledged rows at QUORUM", blackbox.CheckAcked(t, session, w))
		for _, h := range hosts {
			if v := c.mustExec(t, h, "dpkg-query", "-W", "-f", "${Version}", "cosmosd"); v != upgrade.version {
				t.Errorf("%s runs cosmosd %s after the upgrade, want %s", h.Host, v, upgrade.version)
			}
		}
		handOffs(t, c, hosts)
		blackbox.WaitFor(t, 2*time.Minute, "a healthy cluster after the roll", func() (bool, string) { return c.healthy(hosts) })
	})

	// A rollback through site.yml (cosmosd_deb names an older package):
	// the role installs it everywhere at once, but its handler restarts
	// the nodes one at a time, each between two waits for a healthy
	// cluster.
	step("site-rollback", func(t *testing.T) {
		w := blackbox.StartWriter(session, "site-rollback", 4_000_000, 2)
		writers = append(writers, w)
		defer w.Halt()
		w.WaitProgress(t, 50, time.Minute, "before the rollback")
		write(inventory{deb: rollback.path, etcd: hosts[:3], cosmosd: hosts})
		since := time.Now()
		res := c.playbook(t, inv, "site.yml")
		oneAtATime(t, c, hosts, since)
		for _, h := range hosts {
			// Copy, install, and the handler's restart.
			if res[h.Host].Changed < 3 {
				t.Errorf("%s: site.yml with another package changed %d tasks, want 3 (copy, install, restart)", h.Host, res[h.Host].Changed)
			}
			if v := c.mustExec(t, h, "dpkg-query", "-W", "-f", "${Version}", "cosmosd"); v != rollback.version {
				t.Errorf("%s runs cosmosd %s after the rollback, want %s", h.Host, v, rollback.version)
			}
		}
		w.WaitProgress(t, 50, time.Minute, "after the rollback")
		w.Halt()
		w.Report(t)
	})

	step("site-again", func(t *testing.T) {
		requireUnchanged(t, "second site.yml run", c.playbook(t, inv, "site.yml"), hosts...)
	})

	step("rotate-certs", func(t *testing.T) { rotateCerts(t, c, inv, hosts) })

	step("decommission", func(t *testing.T) {
		w := blackbox.StartWriter(session, "decommission", 2_000_000, 2)
		writers = append(writers, w)
		defer w.Halt()
		w.WaitProgress(t, 50, time.Minute, "before the decommission")
		victim, rest := hosts[4], hosts[:4]
		res := c.playbook(t, inv, "decommission.yml", "-e", "node="+victim.Host)
		if res[victim.Host].Changed == 0 {
			t.Errorf("decommission.yml changed nothing on %s: %+v", victim.Host, res[victim.Host])
		}
		nodes, err := c.ctl(rest).Nodes()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if n.Name == victim.Host && (n.State != "decommissioned" || n.Replicas != 0) {
				t.Errorf("%s is %s with %d replicas, want decommissioned with none", n.Name, n.State, n.Replicas)
			}
		}
		if ok, why := c.healthy(rest); !ok {
			t.Errorf("cluster not healthy right after decommission.yml: %s", why)
		}
		if out, _ := c.exec(victim, "systemctl", "is-active", "cosmosd"); out != "inactive" {
			t.Errorf("cosmosd on %s is %q after decommission.yml, want inactive", victim.Host, out)
		}
		if out, _ := c.exec(victim, "systemctl", "is-enabled", "cosmosd"); out != "disabled" {
			t.Errorf("cosmosd on %s is %q after decommission.yml, want disabled", victim.Host, out)
		}
		requireUnchanged(t, "second decommission.yml run", c.playbook(t, inv, "decommission.yml", "-e", "node="+victim.Host), victim)
		w.WaitProgress(t, 50, time.Minute, "after the decommission")
		w.Halt()
		w.Report(t)
	})

	step("add-node", func(t *testing.T) {
		w := blackbox.StartWriter(session, "add-node", 3_000_000, 2)
		writers = append(writers, w)
		defer w.Halt()
		fresh := c.addHost(t, 6)
		live := append(append([]*Host(nil), hosts[:4]...), fresh)
		// The operator removes the decommissioned host from the inventory
		// and adds the new one.
		write(inventory{deb: rollback.path, etcd: hosts[:3], cosmosd: live})
		res := c.playbook(t, inv, "add-node.yml", "-e", "node="+fresh.Host)
		if res[fresh.Host].Changed == 0 {
			t.Errorf("add-node.yml changed nothing on %s", fresh.Host)
		}
		took := blackbox.WaitFor(t, 3*time.Minute, fresh.Host+" holding replicas in a healthy cluster", func() (bool, string) {
			if ok, why := c.healthy(live); !ok {
				return false, why
			}
			nodes, err := c.ctl(live).Nodes()
			if err != nil {
				return false, err.Error()
			}
			for _, n := range nodes {
				if n.Name == fresh.Host && n.Replicas > 0 {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%s holds no replica: %v", fresh.Host, nodes)
		})
		t.Logf("%s holds replicas, cluster healthy %s after add-node.yml", fresh.Host, took.Round(100*time.Millisecond))
		w.WaitProgress(t, 50, time.Minute, "after the node was added")
		w.Halt()
		w.Report(t)
		out, _ := c.ctl(live).Run("nodes", "list")
		t.Logf("nodes after add-node.yml:\n%s", out)
	})

	step("nothing-lost", func(t *testing.T) {
		s := c.session(t, c.Hosts[0], c.Hosts[1], c.Hosts[2], c.Hosts[3], c.Hosts[5])
		t.Logf("every writer's acknowledged rows read back at QUORUM: %d rows", blackbox.CheckAcked(t, s, writers...))
	})
	t.Logf("whole lifecycle in %s", time.Since(begin).Round(time.Second))
}

// seedScenario is the partitioning article's example: rows written
// through one node out of clustering order, read through every node in
// clustering order.
func seedScenario(t *testing.T, c *Cluster, hosts []*Host) {
	t.Helper()
	first := c.session(t, hosts[0])
	for _, q := range []string{
		"insert into uprofile.user (user, id, message) values ('theo', 2, 'hello again')",
		"insert into uprofile.user (user, id, message) values ('theo', 1, 'hello')",
	} {
		if err := first.Query(q).Idempotent(true).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, h := range hosts {
		iter := c.session(t, h).Query("select id, message from uprofile.user where user = ?", "theo").Iter()
		var id int
		var msg string
		var got []string
		for iter.Scan(&id, &msg) {
			got = append(got, fmt.Sprintf("%d:%s", id, msg))
		}
		if err := iter.Close(); err != nil {
			t.Fatalf("read through %s: %v", h.Host, err)
		}
		if strings.Join(got, "|") != "1:hello|2:hello again" {
			t.Errorf("read through %s: rows %q, want [1:hello 2:hello again] in clustering order", h.Host, got)
		}
	}
}

// checkReadyz asks a node's /readyz from the host over HTTPS, as a load
// balancer that trusts the cluster CA does.
func checkReadyz(t *testing.T, c *Cluster, h *Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+h.IP+":8080/readyz", nil)
	resp, err := c.httpsClient(t).Do(req)
	if err != nil {
		t.Errorf("/readyz of %s: %v", h.Host, err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz of %s: %d %s", h.Host, resp.StatusCode, body)
	}
}

// handOffs checks in the journals that the nodes handed their leaderships
// off when SIGTERM stopped them during the roll.
func handOffs(t *testing.T, c *Cluster, hosts []*Host) {
	t.Helper()
	var counts []string
	total := 0
	for _, h := range hosts {
		out, _ := c.exec(h, "journalctl", "--no-pager", "-o", "cat", "-u", "cosmosd", "--grep", "handed off leadership")
		n := 0
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "handed off leadership") {
				n++
			}
		}
		total += n
		counts = append(counts, fmt.Sprintf("%s:%d", h.Host, n))
	}
	t.Logf("leadership hand-offs logged on SIGTERM: %s", strings.Join(counts, " "))
	if total == 0 {
		t.Errorf("no node logged a leadership hand-off while the roll stopped them")
	}
}

// oneAtATime checks in the journals that every host's cosmosd restarted
// exactly once since the given time and that no two were down at once:
// each restart, from systemd's "Stopping" to its "Started" (READY=1),
// ends before the next begins.
func oneAtATime(t *testing.T, c *Cluster, hosts []*Host, since time.Time) {
	t.Helper()
	type window struct {
		host        string
		stop, start float64
	}
	var ws []window
	for _, h := range hosts {
		out, err := c.exec(h, "journalctl", "--no-pager", "-o", "short-unix", "-u", "cosmosd", "--since", fmt.Sprintf("@%d", since.Unix()))
		if err != nil {
			t.Errorf("journal of %s: %v", h.Host, err)
			continue
		}
		var stops, starts []float64
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) < 4 || !strings.HasPrefix(f[2], "systemd[") {
				continue
			}
			var ts float64
			if _, err := fmt.Sscanf(f[0], "%f", &ts); err != nil || ts < float64(since.UnixNano())/1e9 {
				continue
			}
			switch {
			case strings.HasPrefix(f[3], "Stopping"):
				stops = append(stops, ts)
			case strings.HasPrefix(f[3], "Started"):
				starts = append(starts, ts)
			}
		}
		if len(stops) != 1 || len(starts) != 1 || starts[0] < stops[0] {
			t.Errorf("%s: cosmosd stopped %d and started %d times, want one restart:\n%s", h.Host, len(stops), len(starts), out)
			continue
		}
		ws = append(ws, window{h.Host, stops[0], starts[0]})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].stop < ws[j].stop })
	var desc []string
	for i, w := range ws {
		desc = append(desc, fmt.Sprintf("%s down %.1fs", w.host, w.start-w.stop))
		if i > 0 && w.stop < ws[i-1].start {
			t.Errorf("%s stopped at %.3f while %s was still restarting (until %.3f)", w.host, w.stop, ws[i-1].host, ws[i-1].start)
		}
	}
	t.Logf("restarts one at a time: %s", strings.Join(desc, ", "))
}

// makeDist runs `make dist` and returns the Debian package it built.
func makeDist(t *testing.T, root string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "make", "dist")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(root, "dist", "cosmosd_*_amd64.deb"))
	if len(debs) == 0 {
		t.Fatal("make dist built no dist/cosmosd_*_amd64.deb")
	}
	// The newest: dist/ may hold packages of earlier versions.
	sort.Slice(debs, func(i, j int) bool { return modTime(debs[i]).After(modTime(debs[j])) })
	t.Logf("make dist built %s in %s", filepath.Base(debs[0]), time.Since(start).Round(100*time.Millisecond))
	return debs[0]
}

func modTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// debPackage is a Debian package file and its version.
type debPackage struct {
	path, version string
}

var controlVersion = regexp.MustCompile(`(?m)^Version: (\S+)$`)

// repackDeb builds a copy of deb whose version is the original's with
// suffix appended (a higher version): what an upgrade installs.
func repackDeb(t *testing.T, deb, dir, suffix string) debPackage {
	t.Helper()
	tree := filepath.Join(dir, "repack"+suffix)
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("dpkg-deb", "-R", deb, tree)
	control := filepath.Join(tree, "DEBIAN", "control")
	raw, err := os.ReadFile(control)
	if err != nil {
		t.Fatal(err)
	}
	m := controlVersion.FindSubmatch(raw)
	if m == nil {
		t.Fatalf("no Version in %s", control)
	}
	version := string(m[1]) + suffix
	raw = controlVersion.ReplaceAll(raw, []byte("Version: "+version))
	if err := os.WriteFile(control, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "cosmosd_"+version+"_amd64.deb")
	run("dpkg-deb", "--root-owner-group", "--build", tree, out)
	return debPackage{path: out, version: version}
}

// goBuild builds a static binary of the module.
func goBuild(t *testing.T, root, out, pkg string) {
	t.Helper()
	cmd := exec.Command(dockertest.GoTool(), "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, stderr.String())
	}
}
