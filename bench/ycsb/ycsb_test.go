package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseStatTimes(t *testing.T) {
	// A command name with spaces and parentheses must not shift the fields.
	stat := "4242 (cosmo (d) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 12 0 100 0 0"
	u, s, err := parseStatTimes(stat)
	if err != nil {
		t.Fatal(err)
	}
	if u != 1234 || s != 567 {
		t.Fatalf("utime, stime = %d, %d; want 1234, 567", u, s)
	}
	if _, _, err := parseStatTimes("4242 (x) S 1 2"); err == nil {
		t.Fatal("a short line parsed")
	}
	if _, _, err := parseStatTimes(strings.Replace(stat, ") S ", ") Z ", 1)); err == nil {
		t.Fatal("a zombie's times parsed")
	}
}

func TestProcessCPU(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "7"), 0o755); err != nil {
		t.Fatal(err)
	}
	stat := "7 (etcd) S 1 7 7 0 -1 0 0 0 0 0 250 50 0 0 20 0 1 0 1 0 0\n"
	if err := os.WriteFile(filepath.Join(dir, "7", "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &cpuSampler{groups: map[string][]int{"servers": {7, 7}}, clkTck: 100, procDir: dir}
	s, err := c.sample()
	if err != nil {
		t.Fatal(err)
	}
	if got := s["servers"]; got.user != 5 || got.sys != 1 {
		t.Fatalf("servers = %+v; want 5 s user, 1 s system (2.5 + 0.5 twice)", got)
	}
	if _, ok := s[clientGroup]; !ok {
		t.Fatal("no client CPU")
	}
	c.groups["servers"] = []int{8}
	if _, err := c.sample(); err == nil {
		t.Fatal("a missing process sampled without error")
	}
}

func TestParseCPUGroup(t *testing.T) {
	name, pids, err := parseCPUGroup("servers=30,10,20")
	if err != nil || name != "servers" || len(pids) != 3 || pids[0] != 10 {
		t.Fatalf("got %q %v %v", name, pids, err)
	}
	for _, bad := range []string{"servers", "=1", "client=1", "servers=1,x", "servers=0"} {
		if _, _, err := parseCPUGroup(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestRecorderWindow(t *testing.T) {
	r := newRecorder(&cpuSampler{groups: map[string][]int{}, clkTck: 100, procDir: t.TempDir()})
	ctx := context.Background()
	before := time.Now()
	r.record(ctx, "READ", before, nil) // warm-up: counted, not measured
	r.record(ctx, "UPDATE", before, errors.New("timeout"))
	r.openWindow()
	for range 10 {
		r.record(ctx, "READ", time.Now(), nil)
	}
	r.record(ctx, "READ", before, nil) // started before the window
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	r.record(cancelled, "UPDATE", time.Now(), context.Canceled) // cut off by the deadline
	r.closeWindow()
	r.record(ctx, "READ", time.Now(), nil) // after the window
	var res Result
	if err := r.fill(&res); err != nil {
		t.Fatal(err)
	}
	if got := res.Ops["READ"].Count; got != 10 {
		t.Errorf("READ measured %d; want 10", got)
	}
	if got := res.Ops["TOTAL"].Count; got != 10 {
		t.Errorf("TOTAL measured %d; want 10", got)
	}
	if res.Succeeded != 13 || res.Errors != 1 || res.Failed["UPDATE"] != 1 {
		t.Errorf("succeeded %d, errors %d (%v); want 13, 1 UPDATE", res.Succeeded, res.Errors, res.Failed)
	}
	if len(res.ErrorSamples) != 1 || !strings.Contains(res.ErrorSamples[0], "timeout") {
		t.Errorf("samples %q", res.ErrorSamples)
	}
	if _, ok := res.CPU[clientGroup]; !ok {
		t.Error("no client CPU in the result")
	}
}

func TestRecorderNeverOpened(t *testing.T) {
	r := newRecorder(&cpuSampler{groups: map[string][]int{}, clkTck: 100, procDir: t.TempDir()})
	r.closeWindow()
	if err := r.fill(&Result{}); err == nil {
		t.Fatal("a run whose window never opened filled a result")
	}
}

func result(db, name string, opsPerSec, readP99, updateP99, totalP99 float64) *Result {
	return &Result{DB: db, Name: name, Threads: 64, OpsPerSec: opsPerSec, Ops: map[string]OpStats{
		"READ":   {Count: 100, P50Ms: readP99 / 2, P99Ms: readP99},
		"UPDATE": {Count: 100, P50Ms: updateP99 / 2, P99Ms: updateP99},
		"TOTAL":  {Count: 200, P50Ms: totalP99 / 2, P99Ms: totalP99, P999Ms: totalP99 * 2},
	}, CPU: map[string]CPUStat{cpuServers: {Seconds: 2, SystemSeconds: 1, MicrosPerOp: 500, Cores: 1}}}
}

func TestReport(t *testing.T) {
	etcd := map[string]*Result{
		runPeak:   result(dbEtcd, runPeak, 2000, 80, 80, 80),
		runSingle: result(dbEtcd, runSingle, 400, 4, 6, 5),
	}
	cos := map[string]*Result{
		runPeak:     result(dbCosmosd, runPeak, 4100, 70, 75, 79),
		runSingle:   result(dbCosmosd, runSingle, 300, 3, 7, 6),
		runHalfPeak: result(dbCosmosd, runHalfPeak, 2050, 8, 9, 9.5),
	}
	cos[runHalfPeak].TargetOpsPerSec = 2050
	var b bytes.Buffer
	report(&b, etcd, cos)
	out := b.String()
	for _, want := range []string{
		"| 64 threads: ops/s | 2,000 | 4,100 | 2.05× |",
		"- PASS 64 threads: cosmosd ops/s >= 2x etcd's: 2.05x",
		"- PASS 64 threads: cosmosd p99 <= etcd's: 79.0 ms vs 80.0 ms",
		"- FAIL 1 thread: cosmosd update p99 <= etcd's: 7.0 ms vs 6.0 ms",
		"- PASS 1 thread: cosmosd read p99 <= etcd's: 3.0 ms vs 4.0 ms",
		"- PASS half of cosmosd's peak: p99 < 10 ms: 9.5 ms",
		"paced to 2,050 ops/s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}

	// One system only: the other's cells and the targets say n/a.
	b.Reset()
	report(&b, nil, cos)
	out = b.String()
	for _, want := range []string{"| 64 threads: ops/s | n/a | 4,100 |  |", "- n/a  64 threads: cosmosd ops/s >= 2x etcd's: not measured"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.4: "1,234,567"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q; want %q", v, got, want)
		}
	}
}

func TestRingCheck(t *testing.T) {
	part := func(table string, leader, reachable, throttled int) string {
		var reps []string
		for i := range 4 {
			reps = append(reps, fmt.Sprintf(`{"node_id": %d, "learner": false, "reachable": %t}`, i+1, i < reachable))
		}
		return fmt.Sprintf(`{"table": %q, "leader_node": %d, "ru_share": 10000, "throttled": %d, "replicas": [%s]}`,
			table, leader, throttled, strings.Join(reps, ","))
	}
	ring := func(parts ...string) string { return `{"partitions": [` + strings.Join(parts, ",") + `]}` }

	got, err := ringCheck(strings.NewReader(ring(part("ycsb.usertable", 1, 4, 2), part("ycsb.usertable", 2, 4, 3), part("other.t", 0, 0, 0))), "ycsb.usertable", 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "2 physical partitions") || !strings.Contains(got, "20000 RU/s") || !strings.Contains(got, "5 requests throttled") {
		t.Errorf("summary %q", got)
	}
	for name, in := range map[string]string{
		"too few partitions":  ring(part("ycsb.usertable", 1, 4, 0)),
		"no leader":           ring(part("ycsb.usertable", 1, 4, 0), part("ycsb.usertable", 0, 4, 0)),
		"a voter unreachable": ring(part("ycsb.usertable", 1, 4, 0), part("ycsb.usertable", 2, 3, 0)),
		"not JSON":            "cosmosctl: no endpoint answered",
	} {
		if _, err := ringCheck(strings.NewReader(in), "ycsb.usertable", 2, 4); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}
