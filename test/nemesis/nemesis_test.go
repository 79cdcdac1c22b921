package nemesis

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNemesis runs the suite: a cluster, the workload, the operator and
// the nemesis for the fault phase, then a calm cluster, final reads and
// the checks. See the package documentation.
func TestNemesis(t *testing.T) {
	requireDocker(t)
	s := loadSettings(t)
	// go test's -timeout kills the process without cleanups: fit the
	// fault phase into it, leaving room for the set-up, the calm wait,
	// the final reads and the checks.
	if dl, ok := t.Deadline(); ok {
		budget := time.Until(dl) - 9*time.Minute
		if budget < time.Minute {
			t.Fatalf("go test -timeout leaves %s: the suite needs about 9 minutes besides its fault phase (%s); use -timeout 30m",
				time.Until(dl).Round(time.Second), s.duration)
		}
		if budget < s.duration {
			t.Logf("fault phase cut from %s to %s to fit go test's -timeout", s.duration, budget.Round(time.Second))
			s.duration = budget.Round(time.Second)
		}
	}
	t.Logf("seed %d (replay with COSMOSD_NEMESIS_SEED=%d); fault phase %s; fault kinds %s",
		s.seed, s.seed, s.duration, strings.Join(s.kinds, ","))
	c := startCluster(t)
	sess := c.Session(t)
	for _, q := range schemaCQL {
		if err := sess.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c.waitCalm(t, 3*time.Minute, "with the tables created")
	if parts, err := c.Ring(); err == nil {
		t.Logf("ring: %v", parts)
	}

	hist := &history{t0: time.Now()}
	w := StartWorkload(sess, hist, s.seed)
	defer w.Halt()
	// A baseline before the first fault.
	waitOps(t, hist, 200, time.Minute)
	t.Logf("workload running: %d operations in %s before the first fault", len(hist.ops()), hist.since().Round(100*time.Millisecond))

	oper := StartOperator(c, hist, s.seed)
	defer oper.Halt()
	nem := newNemesis(c, hist, s, t.Logf)
	nem.Run(s.duration)
	oper.Halt()

	// The clients go on while the cluster settles: calm (every node up,
	// ring healthy, stale replicas gone, nothing in flight) must come.
	calmStart := time.Now()
	calm := "calm " + calmWithin(c, 4*time.Minute)
	if !strings.HasPrefix(calm, "calm after") {
		t.Errorf("the cluster did not calm down after the faults: %s", calm)
	}
	t.Logf("%s (%s after the last fault)", calm, time.Since(calmStart).Round(100*time.Millisecond))
	w.Halt()
	elapsed := hist.since()
	c.saveState("state-at-end")
	if err := finalReads(sess, hist, 2*time.Minute); err != nil {
		t.Errorf("final reads: %v", err)
	}

	ops := hist.ops()
	if err := writeHistory(filepath.Join(c.dir, "history.txt"), ops); err != nil {
		t.Errorf("write history: %v", err)
	}
	checkStart := time.Now()
	v := check(ops, c.dir)
	t.Logf("checks took %s", time.Since(checkStart).Round(100*time.Millisecond))
	r := &runSummary{seed: s.seed, duration: s.duration, elapsed: elapsed, ops: ops, faults: nem.Events(),
		cluster: oper.Events(), verdict: v, calm: calm, nodes: c.describe()}
	report := r.markdown()
	for _, path := range []string{filepath.Join(c.dir, "report.md"), s.report} {
		if path == "" {
			continue
		}
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Errorf("write report: %v", err)
		}
	}
	t.Logf("report (also in %s):\n%s", filepath.Join(c.dir, "report.md"), report)
	for _, x := range v.violations {
		t.Errorf("violation (seed %d): %s", s.seed, x)
	}
	for _, x := range v.unchecked {
		t.Errorf("not checked (seed %d): %s", s.seed, x)
	}
	if len(v.violations) > 0 {
		t.Errorf("%d violations with seed %d; the history is in %s", len(v.violations), s.seed, filepath.Join(c.dir, "history.txt"))
	}
}

// waitOps waits until the history holds n operations.
func waitOps(t *testing.T, h *history, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ops := h.ops()
		if len(ops) >= n {
			return
		}
		if time.Now().After(deadline) {
			failures := 0
			var last string
			for _, o := range ops {
				if o.Outcome != ok {
					failures++
					last = o.String()
				}
			}
			t.Fatalf("only %d operations after %s (%d failed; last failure: %s)", len(ops), d, failures, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// calmWithin waits up to d for the cluster to be calm at every check for
// 3s, and says how long that took or what was still wrong.
func calmWithin(c *Cluster, d time.Duration) string {
	start := time.Now()
	var since time.Time
	var why string
	for time.Since(start) < d {
		ok, state := c.Calm()
		switch {
		case !ok:
			since, why = time.Time{}, state
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= 3*time.Second:
			return fmt.Sprintf("after %s", time.Since(start).Round(100*time.Millisecond))
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Sprintf("NOT reached within %s: %s", d, why)
}
