package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cosmosd/cosmosd/cql/parser"
)

// Where the dashboard and the alert rules live, from this package.
var (
	dashboardFile = filepath.Join("..", "deploy", "grafana", "cosmosd.json")
	rulesFile     = filepath.Join("..", "deploy", "prometheus", "cosmosd-rules.yml")
	rulesTestFile = filepath.Join("..", "deploy", "prometheus", "cosmosd-rules_test.yml")
)

// scrape fetches a node's /metrics and returns each family's type by name.
func scrape(t *testing.T, httpAddr string) map[string]string {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape /metrics: status %s", resp.Status)
	}
	types := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	return types
}

// sampleValue scrapes the value of an unlabelled sample.
func sampleValue(httpAddr, name string) (float64, error) {
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			return strconv.ParseFloat(f[1], 64)
		}
	}
	return 0, fmt.Errorf("no sample %s", name)
}

var metricName = regexp.MustCompile(`\bcosmosd_[a-z0-9_]+`)

// usedMetrics returns the cosmosd_ metric names in text, with the
// _bucket/_sum/_count of histograms reduced to the family name.
func usedMetrics(text string, histograms map[string]bool) []string {
	var names []string
	for _, m := range metricName.FindAllString(text, -1) {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(m, suffix); ok && histograms[base] {
				m = base
			}
		}
		if !slices.Contains(names, m) {
			names = append(names, m)
		}
	}
	slices.Sort(names)
	return names
}

// dashboardExprs returns the PromQL of every target and template query of
// the dashboard, failing on JSON that Grafana could not load.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: no uid or no panels", dashboardFile)
	}
	var exprs []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		exprs = append(exprs, v.Definition)
	}
	return exprs
}

// TestMetricsExported starts a node, serves a few requests and checks
// that /metrics exports the raft and storage metrics with sensible
// values, and every metric that the Grafana dashboard and the alert rules
// query.
func TestMetricsExported(t *testing.T) {
	e := startTestEtcd(t)
	cfg := Config{
		Name: "n1", DataDir: filepath.Join(t.TempDir(), "n1"),
		CQLAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		EtcdEndpoints: e.Endpoints(), EtcdPrefix: "/metrics/", Consensus: "raft", ReplicationFactor: 1,
		LogLevel: "error", ShutdownTimeout: 3 * time.Second,
	}
	n, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close(context.Background()) }()
	s := useNode(t, n.CQLAddr())
	for i := range 10 {
		if err := s.Query("INSERT INTO ks.t (k, v) VALUES (?, 'v')", strconv.Itoa(i)).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	var v string
	if err := s.Query("SELECT v FROM ks.t WHERE k = '1'").Scan(&v); err != nil {
		t.Fatal(err)
	}

	// Values read from live state: the table's partitions are raft groups
	// this single node leads, its writes went through proposals and the
	// store is on a real file system.
	deadline := time.Now().Add(20 * time.Second)
	for _, c := range []struct {
		name string
		ok   func(float64) bool
		want string
	}{
		{"cosmosd_raft_groups", func(v float64) bool { return v >= 1 }, ">= 1"},
		{"cosmosd_raft_groups_led", func(v float64) bool { return v >= 1 }, ">= 1"},
		{"cosmosd_raft_groups_leaderless", func(v float64) bool { return v == 0 }, "0"},
		{"cosmosd_raft_leader_changes_total", func(v float64) bool { return v >= 1 }, ">= 1"},
		{"cosmosd_raft_proposals_total", func(v float64) bool { return v >= 10 }, ">= 10"},
		{"cosmosd_raft_proposal_seconds_total", func(v float64) bool { return v > 0 }, "> 0"},
		{"cosmosd_raft_proposals_applied_total", func(v float64) bool { return v >= 10 }, ">= 10"},
		{"cosmosd_raft_proposal_commit_seconds_total", func(v float64) bool { return v > 0 }, "> 0"},
		{"cosmosd_storage_disk_usage_bytes", func(v float64) bool { return v > 0 }, "> 0"},
		{"cosmosd_storage_memtable_bytes", func(v float64) bool { return v > 0 }, "> 0"},
		{"cosmosd_storage_filesystem_size_bytes", func(v float64) bool { return v > 0 }, "> 0"},
		{"cosmosd_storage_filesystem_available_bytes", func(v float64) bool { return v > 0 }, "> 0"},
	} {
		for {
			got, err := sampleValue(n.HTTPAddr(), c.name)
			if err == nil && c.ok(got) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s = %v (%v), want %s", c.name, got, err, c.want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	types := scrape(t, n.HTTPAddr())
	histograms := map[string]bool{}
	for name, typ := range types {
		if typ == "histogram" {
			histograms[name] = true
		}
	}
	// The statements above were timed by kind and table (the executor's
	// ObserveStatement hook).
	if !histograms["cosmosd_cql_request_duration_seconds"] {
		t.Error("cosmosd_cql_request_duration_seconds is not exported as a histogram")
	}
	for _, series := range []string{
		`cosmosd_cql_request_duration_seconds_count{kind="write",table="ks.t"}`,
		`cosmosd_cql_request_duration_seconds_count{kind="read",table="ks.t"}`,
	} {
		if got, err := sampleValue(n.HTTPAddr(), series); err != nil || got < 1 {
			t.Errorf("%s = %v (%v), want >= 1", series, got, err)
		}
	}
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{dashboardFile: strings.Join(dashboardExprs(t), "\n"), rulesFile: string(rules)} {
		used := usedMetrics(text, histograms)
		if len(used) == 0 {
			t.Errorf("%s uses no cosmosd metric", what)
		}
		for _, name := range used {
			if types[name] == "" {
				t.Errorf("%s uses %s, which the node does not export", what, name)
			}
		}
	}
}

// TestRequestDuration: statements are timed by kind and table; a kind the
// daemon does not know is recorded as "other" so that label values stay
// bounded.
func TestRequestDuration(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newRequestMetrics(reg)
	m.observeDuration(kindRead, "ks.t", 3*time.Millisecond)
	m.observeDuration(kindRead, "ks.t", 30*time.Millisecond)
	m.observeDuration("SELECT * FROM ks.t WHERE k = 1", "ks.t", time.Millisecond)
	m.observeDuration(kindDDL, "", time.Second)
	stmt, err := parser.Parse("SELECT v FROM t WHERE k = 1")
	if err != nil {
		t.Fatal(err)
	}
	m.observeStatement(stmt, "ks", time.Millisecond, func(ks, table string) bool { return ks == "ks" && table == "t" })
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, f := range fams {
		if f.GetName() != "cosmosd_cql_request_duration_seconds" {
			continue
		}
		for _, mt := range f.GetMetric() {
			var kind, table string
			for _, l := range mt.GetLabel() {
				switch l.GetName() {
				case "kind":
					kind = l.GetValue()
				case "table":
					table = l.GetValue()
				}
			}
			got[kind+"/"+table] = mt.GetHistogram().GetSampleCount()
		}
	}
	want := map[string]uint64{"read/ks.t": 3, "other/ks.t": 1, "ddl/": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("histogram counts %v, want %v", got, want)
	}
}

// TestPrometheusRules checks the alert rules with promtool: their syntax
// (check rules) and that they fire as intended on synthetic series (test
// rules, deploy/prometheus/cosmosd-rules_test.yml).
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found: install Debian's prometheus package (scripts/deps.sh does)")
	}
	for _, args := range [][]string{
		{"check", "rules", filepath.Base(rulesFile)},
		{"test", "rules", filepath.Base(rulesTestFile)},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = filepath.Dir(rulesFile)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else if err != nil {
			t.Fatalf("promtool %s: %v", strings.Join(args, " "), err)
		}
	}
}

// TestClassifyStatement: the kind and table labels of statements, with
// tables outside the schema left out so that series stay bounded.
func TestClassifyStatement(t *testing.T) {
	known := func(ks, table string) bool { return ks == "ks" && (table == "t" || table == "u") }
	for _, c := range []struct {
		query, session    string
		wantKind, wantTab string
	}{
		{"SELECT * FROM ks.t WHERE k = 1", "", kindRead, "ks.t"},
		{"SELECT * FROM t WHERE k = 1", "ks", kindRead, "ks.t"},
		{"SELECT * FROM t WHERE k = 1", "", kindRead, ""},
		{"SELECT * FROM ks.nope WHERE k = 1", "", kindRead, ""},
		{"INSERT INTO ks.t (k, v) VALUES (1, 2)", "", kindWrite, "ks.t"},
		{"INSERT INTO ks.t (k, v) VALUES (1, 2) IF NOT EXISTS", "", kindLWT, "ks.t"},
		{"UPDATE ks.t SET v = 1 WHERE k = 1", "", kindWrite, "ks.t"},
		{"UPDATE ks.t SET v = 1 WHERE k = 1 IF v = 0", "", kindLWT, "ks.t"},
		{"DELETE FROM ks.t WHERE k = 1", "", kindWrite, "ks.t"},
		{"DELETE FROM ks.t WHERE k = 1 IF EXISTS", "", kindLWT, "ks.t"},
		{"BEGIN BATCH INSERT INTO ks.t (k, v) VALUES (1, 2); UPDATE ks.t SET v = 3 WHERE k = 2; APPLY BATCH", "", kindBatch, "ks.t"},
		{"BEGIN BATCH INSERT INTO ks.t (k, v) VALUES (1, 2); INSERT INTO ks.u (k, v) VALUES (1, 2); APPLY BATCH", "", kindBatch, ""},
		{"BEGIN BATCH UPDATE ks.t SET v = 3 WHERE k = 2 IF v = 1; APPLY BATCH", "", kindLWT, "ks.t"},
		{"CREATE TABLE ks.x (k int PRIMARY KEY)", "", kindDDL, ""},
		{"DROP TABLE ks.t", "", kindDDL, ""},
		{"USE ks", "", kindOther, ""},
	} {
		t.Run(c.query, func(t *testing.T) {
			stmt, err := parser.Parse(c.query)
			if err != nil {
				t.Fatal(err)
			}
			kind, table := classifyStatement(stmt, c.session, known)
			if kind != c.wantKind || table != c.wantTab {
				t.Fatalf("got (%q, %q), want (%q, %q)", kind, table, c.wantKind, c.wantTab)
			}
		})
	}
}
