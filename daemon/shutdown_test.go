package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/embedded"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/test/logbuf"
)

// Shutdown with etcd gone (reliability issue: SIGTERM hung for 24 minutes
// in Node.close at n.bg.Wait()). These tests start a node against an etcd
// that the test owns, stop that etcd while the node runs, and check that the
// node still stops, within its bound.

// startTestEtcd starts an embedded etcd on a free port in the test process.
func startTestEtcd(t *testing.T) *embedded.Server {
	t.Helper()
	e, err := embedded.Start(embedded.Config{Dir: filepath.Join(t.TempDir(), "etcd"), ClientAddr: "127.0.0.1:0", UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	return e
}

// waitRegistered follows the metadata in etcd until want nodes registered
// and returns their registrations.
func waitRegistered(t *testing.T, endpoints []string, prefix string, want int, procs ...*process) []cluster.NodeInfo {
	t.Helper()
	cli, err := metakv.DialEtcd(metakv.EtcdClientConfig{Endpoints: endpoints, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	meta, err := cluster.OpenMeta(ctx, cli.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		for _, p := range procs {
			select {
			case <-p.exited:
				t.Fatalf("cosmosd %s exited before registering; stderr:\n%s", p.name, tail(p.stderr.String(), 20000))
			default:
			}
		}
		if st := meta.State(); len(st.Nodes) == want {
			var out []cluster.NodeInfo
			for _, id := range st.NodeIDs() {
				out = append(out, *st.Nodes[id])
			}
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%d cosmosd nodes did not register within 2m", want)
	return nil
}

// process is a cosmosd process started by a test.
type process struct {
	name   string
	cmd    *exec.Cmd
	stderr logbuf.Buffer
	exited chan struct{}
}

// startProcess starts bin as node name with its data under dir; it is
// killed when the test ends if it still runs.
func startProcess(t *testing.T, bin, dir, name string, args ...string) *process {
	t.Helper()
	p := &process{name: name, exited: make(chan struct{})}
	args = append([]string{"--name", name, "--data-dir", filepath.Join(dir, name),
		"--cql-addr", "127.0.0.1:0", "--peer-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// useNode creates a table and writes to it, so the node runs replicas,
// reconciles and has CQL connections when it is stopped.
func useNode(t *testing.T, cqlAddr string) *gocql.Session {
	t.Helper()
	host, port, _ := net.SplitHostPort(cqlAddr)
	cc := gocql.NewCluster(host)
	cc.Port, _ = strconv.Atoi(port)
	cc.ProtoVersion = 4
	cc.Timeout = 15 * time.Second
	cc.ConnectTimeout = 10 * time.Second
	cc.DisableInitialHostLookup = true
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatalf("gocql session: %v", err)
	}
	t.Cleanup(s.Close)
	for _, q := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k text PRIMARY KEY, v text)",
		"INSERT INTO ks.t (k, v) VALUES ('a', 'b')",
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return s
}

// TestSIGTERMWithEtcdGoneStopsProcess runs two real cosmosd processes
// against an etcd in the test process, stops etcd, sends SIGTERM to both and
// requires each to exit within 15s (shutdown_timeout is 5s). With two nodes
// one of them does not lead the controller election and is still
// campaigning when it stops: that is the node that hung (the etcd client's
// Campaign cleans up with a Resign on the client's own context, which
// nothing canceled before the node's background goroutines had ended).
func TestSIGTERMWithEtcdGoneStopsProcess(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cosmosd")
	build := exec.Command("go", "build", "-o", bin, "./cmd/cosmosd")
	build.Dir = ".." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build cosmosd: %v\n%s", err, out)
	}
	e := startTestEtcd(t)
	const prefix = "/shutdown-test/"
	conf := filepath.Join(dir, "cosmosd.yaml")
	if err := os.WriteFile(conf, []byte("shutdown_timeout: 5s\nregistration_ttl: 2s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var procs []*process
	for _, name := range []string{"n1", "n2"} {
		procs = append(procs, startProcess(t, bin, dir, name, "--config", conf,
			"--etcd-endpoints", strings.Join(e.Endpoints(), ","), "--etcd-prefix", prefix,
			"--consensus", "raft", "--replication-factor", "1", "--log-level", "info"))
	}
	infos := waitRegistered(t, e.Endpoints(), prefix, len(procs), procs...)
	useNode(t, infos[0].CQLAddr)

	// Stop etcd and wait until both nodes have lost their registration
	// lease: their etcd loops are retrying when SIGTERM arrives, as on a
	// host whose etcd has been gone for a while.
	// (TestCloseWithEtcdGone closes nodes right after etcd stops.)
	e.Close()
	deadline := time.Now().Add(time.Minute)
	for _, p := range procs {
		for !strings.Contains(p.stderr.String(), "node registration lease lost") {
			if time.Now().After(deadline) {
				t.Fatalf("cosmosd %s did not notice that etcd is gone within 1m; stderr:\n%s", p.name, tail(p.stderr.String(), 20000))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	start := time.Now()
	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-time.After(time.Until(start.Add(15 * time.Second))):
			_ = p.cmd.Process.Signal(syscall.SIGQUIT) // goroutine dump into stderr
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
			}
			t.Fatalf("cosmosd %s still running 15s after SIGTERM with etcd gone; stderr:\n%s", p.name, tail(p.stderr.String(), 300000))
		}
		t.Logf("cosmosd %s stopped %s after SIGTERM with etcd gone (exit code %d)", p.name, time.Since(start).Round(time.Millisecond), p.cmd.ProcessState.ExitCode())
		for _, l := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(l, "shutdown") || strings.Contains(l, "node stopped") || strings.Contains(l, "abandoned") {
				t.Logf("cosmosd %s: %s", p.name, l)
			}
		}
		if strings.Contains(p.stderr.String(), "shutdown step abandoned") {
			t.Errorf("cosmosd %s abandoned shutdown steps: a goroutine outlived its canceled context", p.name)
		}
		if !strings.Contains(p.stderr.String(), "node stopped") {
			t.Errorf("cosmosd %s: Node.Close did not finish (no \"node stopped\" log); stderr:\n%s", p.name, tail(p.stderr.String(), 20000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestCloseWithEtcdGone stops in-process nodes whose etcd is gone: two
// nodes, so that one of them is campaigning for the controller (the case
// that hung), both closed at once. Each Close must return within its bound
// and without abandoning a step: every goroutine of the node ends once its
// context is canceled, and the store is closed.
func TestCloseWithEtcdGone(t *testing.T) {
	e := startTestEtcd(t)
	dir := t.TempDir()
	var nodes []*Node
	for _, name := range []string{"n1", "n2"} {
		cfg := Config{
			Name: name, DataDir: filepath.Join(dir, name),
			CQLAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
			EtcdEndpoints: e.Endpoints(), EtcdPrefix: "/close-test/", Consensus: "raft", ReplicationFactor: 1,
			LogLevel: "error", ShutdownTimeout: 3 * time.Second, RegistrationTTL: 2 * time.Second,
		}
		n, err := Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	useNode(t, nodes[0].CQLAddr())
	leaders := 0
	for _, n := range nodes {
		if n.Controller().Leading() {
			leaders++
		}
	}
	e.Close()
	start := time.Now()
	type result struct {
		took time.Duration
		err  error
	}
	results := make([]chan result, len(nodes))
	for i, n := range nodes {
		results[i] = make(chan result, 1)
		go func() {
			err := n.Close(context.Background())
			results[i] <- result{time.Since(start), err}
		}()
	}
	for i, n := range nodes {
		bound := n.ShutdownTimeout() + closeMargin
		select {
		case r := <-results[i]:
			t.Logf("node %d: Node.Close returned %s after etcd was stopped (bound %s, %d of 2 nodes led the controller): %v",
				n.ID(), r.took.Round(time.Millisecond), bound, leaders, r.err)
			if errors.Is(r.err, ErrStepAbandoned) {
				t.Errorf("node %d: Close abandoned a step: %v", n.ID(), r.err)
			}
		case <-time.After(time.Until(start.Add(bound + 2*time.Second))):
			t.Fatalf("node %d: Node.Close still running %s after etcd was stopped (bound %s)", n.ID(), time.Since(start).Round(time.Millisecond), bound)
		}
	}
}

// TestCloserAbandonsStuckStep: a shutdown step that never returns is
// abandoned at its deadline and reported, and the steps after it still run
// (each gets minStepWait when it starts late); nothing waits past the hard
// deadline.
func TestCloserAbandonsStuckStep(t *testing.T) {
	start := time.Now()
	c := &closer{logger: slog.New(slog.DiscardHandler), start: start, hard: start.Add(time.Second)}
	stuck := make(chan struct{})
	defer close(stuck)
	if c.step("stuck", start.Add(200*time.Millisecond), func() error { <-stuck; return nil }) {
		t.Fatal("a step that never returns reported finished")
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("stuck step abandoned after %s, before its deadline", took)
	}
	ran := false
	if !c.step("late but quick", start, func() error { ran = true; return errors.New("boom") }) || !ran {
		t.Fatal("a quick step started after its deadline did not run to the end")
	}
	if c.step("stuck past the hard deadline", start.Add(time.Hour), func() error { <-stuck; return nil }) {
		t.Fatal("a step that never returns reported finished")
	}
	if took := time.Since(start); took > time.Second+500*time.Millisecond {
		t.Fatalf("closer waited %s, past its hard deadline of 1s", took)
	}
	err := errors.Join(c.errs...)
	if !errors.Is(err, ErrStepAbandoned) || !strings.Contains(err.Error(), "boom") || len(c.abandoned) != 2 {
		t.Fatalf("errors = %v, abandoned = %v; want both stuck steps abandoned and the quick step's error", err, c.abandoned)
	}
}

// blockingStopper never finishes stopping.
type blockingStopper struct{ release chan struct{} }

func (b blockingStopper) Close(context.Context) error    { <-b.release; return nil }
func (b blockingStopper) ShutdownTimeout() time.Duration { return 100 * time.Millisecond }

// TestRunUntilSignalGivesUpOnOverrun: the SIGTERM handler returns an error
// (the process exits non-zero) when the stop overruns its shutdown timeout
// by stopOverrun, instead of waiting for it.
func TestRunUntilSignalGivesUpOnOverrun(t *testing.T) {
	b := blockingStopper{release: make(chan struct{})}
	defer close(b.release)
	var signaled time.Time
	done := make(chan error, 1)
	go func() {
		done <- runUntilSignal(func(context.Context) (stopper, error) {
			// The handler is installed before start runs.
			signaled = time.Now()
			return b, syscall.Kill(os.Getpid(), syscall.SIGTERM)
		})
	}()
	limit := b.ShutdownTimeout() + stopOverrun
	select {
	case err := <-done:
		took := time.Since(signaled)
		if err == nil || !strings.Contains(err.Error(), "did not finish") {
			t.Fatalf("runUntilSignal = %v, want an error saying the shutdown did not finish", err)
		}
		if took < limit {
			t.Fatalf("gave up after %s, before shutdown_timeout + %s = %s", took, stopOverrun, limit)
		}
		t.Logf("runUntilSignal gave up %s after SIGTERM: %v", took.Round(time.Millisecond), err)
	case <-time.After(limit + 10*time.Second):
		t.Fatal("runUntilSignal still waiting for a stop that never finishes")
	}
}
