// Command ycsb is the driver of make bench-ycsb (scripts/bench-ycsb.sh): it
// runs YCSB workload A through go-ycsb's own workload generator and its
// cassandra (gocql, QUORUM) and etcd (etcd client v3) bindings, measures
// each run, and prints the comparison.
//
// It lives in its own module so that go-ycsb and its dependencies (an old
// gocql, an etcd 3.5 client) never enter cosmosd's go.mod. It links only
// the two bindings it needs instead of go-ycsb's command, which registers
// twenty databases (several of them cgo) and cannot bound a run by time.
//
// Subcommands:
//
//	ycsb exec -hosts H:P[,...] STATEMENT...   run CQL statements (schema setup)
//	ycsb load -db cassandra|etcd [flags]      insert recordcount records
//	ycsb run  -db cassandra|etcd [flags]      run workload A for -duration or -ops
//	ycsb idle -cpu NAME=PID,... [flags]       CPU time of idle servers (the fixed cost)
//	ycsb report DIR                           print the comparison of DIR/*.json
//	ycsb ringcheck -table T -partitions N     check cosmosctl ring show -o json (stdin)
//
// load and run write their measurements as JSON (-out) and exit 1 when more
// than -max-error-rate of the operations failed. report exits 0 whether or
// not the targets are met: the benchmark reports, it does not gate.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gocql/gocql"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/client"
	"github.com/pingcap/go-ycsb/pkg/measurement"
	_ "github.com/pingcap/go-ycsb/pkg/workload" // registers the core workload
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	_ "github.com/pingcap/go-ycsb/db/cassandra" // registers "cassandra"
	_ "github.com/pingcap/go-ycsb/db/etcd"      // registers "etcd"
)

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ycsb exec|load|run|idle|report|ringcheck [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "exec":
		err = execCmd(ctx, args)
	case "load", "run":
		err = runCmd(ctx, cmd, args)
	case "idle":
		err = idleCmd(ctx, args)
	case "report":
		err = reportCmd(args)
	case "ringcheck":
		err = ringCheckCmd(args)
	default:
		err = fmt.Errorf("unknown command %q: want exec, load, run, idle, report or ringcheck", cmd)
	}
	if err != nil {
		slog.Error("ycsb "+os.Args[1]+" failed", "err", err)
		os.Exit(1)
	}
}

// execCmd runs CQL statements in order, at QUORUM, failing at the first
// error.
func execCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	hosts := fs.String("hosts", "127.0.0.1:9042", "comma-separated CQL contact points")
	timeout := fs.Duration("timeout", 30*time.Second, "timeout of each statement")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cluster := gocql.NewCluster(strings.Split(*hosts, ",")...)
	cluster.ProtoVersion = 4
	cluster.Timeout = *timeout
	cluster.Consistency = gocql.Quorum
	session, err := cluster.CreateSession()
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *hosts, err)
	}
	defer session.Close()
	for _, stmt := range fs.Args() {
		if err := session.Query(stmt).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
		slog.Info("executed", "cql", stmt)
	}
	return nil
}

// Result is what one load or run measured; report reads it back.
type Result struct {
	// Name says which run this is (load, run-64, run-1, half-peak); DB is
	// the binding (cassandra for cosmosd, etcd for etcd).
	Name    string `json:"name"`
	DB      string `json:"db"`
	Phase   string `json:"phase"`
	Threads int    `json:"threads"`
	// TargetOpsPerSec is the rate go-ycsb paced the run to (0: as fast as
	// it goes).
	TargetOpsPerSec int       `json:"target_ops_per_sec"`
	Start           time.Time `json:"start"`
	WarmupSeconds   float64   `json:"warmup_seconds"`
	// WindowSeconds is the measured window: the run less its warm-up.
	WindowSeconds float64 `json:"window_seconds"`
	// OpsPerSec is the successful operations per second in the window.
	OpsPerSec float64 `json:"ops_per_sec"`
	// Ops are latencies by operation (READ, UPDATE, INSERT) and of all of
	// them together (TOTAL), over the window.
	Ops map[string]OpStats `json:"ops"`
	// Succeeded, Failed and Errors count the whole run, warm-up included.
	Succeeded    int64            `json:"succeeded"`
	Failed       map[string]int64 `json:"failed"`
	Errors       int64            `json:"errors"`
	ErrorSamples []string         `json:"error_samples"`
	// CPU is the CPU time of each group of processes (-cpu) and of this
	// client ("client") in the window, and per operation.
	CPU map[string]CPUStat `json:"cpu"`
	// LoadAvg is /proc/loadavg when the run started: other work on the
	// machine shows there.
	LoadAvg string `json:"loadavg"`
	// Properties are the go-ycsb properties of the run.
	Properties map[string]string `json:"properties"`
}

// workloadA is YCSB's workload A as issue 13 specifies it: 50% reads and
// 50% updates of 1 KB records (10 fields of 100 bytes) chosen zipfian over
// 10,000 records. Updates write all 10 fields: go-ycsb's etcd binding
// stores a record as one value and an update replaces it, so with YCSB's
// default of one field per update etcd's records would shrink to 100 bytes
// while cosmosd's kept 1 KB; writing all fields keeps both at 1 KB.
func workloadA() *properties.Properties {
	p := properties.NewProperties()
	for _, kv := range [][2]string{
		{"workload", "core"},
		{"recordcount", "10000"},
		{"readproportion", "0.5"},
		{"updateproportion", "0.5"},
		{"scanproportion", "0"},
		{"insertproportion", "0"},
		{"requestdistribution", "zipfian"},
		{"fieldcount", "10"},
		{"fieldlength", "100"},
		{"readallfields", "true"},
		{"writeallfields", "true"},
		{"table", "usertable"},
		{"cassandra.keyspace", "ycsb"},
		{"cassandra.cluster", "127.0.0.1:9042"},
		{"etcd.endpoints", "127.0.0.1:2379"},
		// Failures are counted and sampled by the recorder instead.
		{"silence", "true"},
		// go-ycsb's periodic summary reads its own histograms, which
		// this driver does not feed: print it never.
		{"measurement.interval", strconv.Itoa(1 << 30)},
	} {
		p.MustSet(kv[0], kv[1])
	}
	return p
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// runCmd is load (insert the records) and run (the transaction phase).
func runCmd(ctx context.Context, phase string, args []string) error {
	fs := flag.NewFlagSet(phase, flag.ContinueOnError)
	db := fs.String("db", "", "go-ycsb binding: cassandra (cosmosd) or etcd")
	name := fs.String("name", phase, "name of the run in the report (run-64, run-1, half-peak)")
	threads := fs.Int("threads", 64, "client threads")
	ops := fs.Int64("ops", 0, "operations to run (0: until -duration)")
	duration := fs.Duration("duration", 40*time.Second, "measured time after the warm-up (0: until -ops)")
	warmup := fs.Duration("warmup", 5*time.Second, "time before the measured window (run only)")
	target := fs.Int("target", 0, "operations per second to pace the run to (0: unlimited)")
	targetOf := fs.String("target-of", "", "pace to -target-fraction of the ops/s of this result file")
	targetFraction := fs.Float64("target-fraction", 0.5, "fraction of -target-of's ops/s")
	maxErrorRate := fs.Float64("max-error-rate", 0.001, "fail when more than this fraction of operations failed")
	clkTck := fs.Float64("clk-tck", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	out := fs.String("out", "", "write the result as JSON to this file")
	var props, cpus multiFlag
	fs.Var(&props, "p", "go-ycsb property NAME=VALUE (repeatable)")
	fs.Var(&cpus, "cpu", "measure the CPU time of processes: NAME=PID[,PID...] (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *db != "cassandra" && *db != "etcd" {
		return fmt.Errorf("-db %q: want cassandra or etcd", *db)
	}
	if *threads < 1 {
		return fmt.Errorf("-threads %d: want at least 1", *threads)
	}
	if *targetOf != "" {
		prev, err := readResult(*targetOf)
		if err != nil {
			return err
		}
		*target = int(math.Round(prev.OpsPerSec * *targetFraction))
		if *target < 1 {
			return fmt.Errorf("-target-of %s: %.1f ops/s × %g leaves no rate to pace to", *targetOf, prev.OpsPerSec, *targetFraction)
		}
	}
	sampler := &cpuSampler{groups: map[string][]int{}, clkTck: *clkTck, procDir: "/proc"}
	for _, c := range cpus {
		n, pids, err := parseCPUGroup(c)
		if err != nil {
			return err
		}
		sampler.groups[n] = append(sampler.groups[n], pids...)
	}

	p := workloadA()
	for _, kv := range props {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("-p %q: want NAME=VALUE", kv)
		}
		p.MustSet(k, v)
	}
	p.MustSet("threadcount", strconv.Itoa(*threads))
	p.MustSet("target", strconv.Itoa(*target))
	p.MustSet("command", phase)
	if phase == "load" {
		*warmup, *duration = 0, 0
		p.MustSet("dotransactions", "false")
	} else {
		if *ops == 0 && *duration == 0 {
			return errors.New("run: give -ops or -duration")
		}
		n := *ops
		if n == 0 {
			// go-ycsb stops a thread after operationcount/threads
			// operations; the deadline ends the run first.
			n = math.MaxInt64 / 2
		}
		p.MustSet("operationcount", strconv.FormatInt(n, 10))
		p.MustSet("dotransactions", "true")
	}

	res := &Result{Name: *name, DB: *db, Phase: phase, Threads: *threads, TargetOpsPerSec: *target,
		Start: time.Now().UTC(), WarmupSeconds: warmup.Seconds(), Properties: p.Map()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.LoadAvg = strings.TrimSpace(string(b))
	}

	// go-ycsb's client calls its measurement package (warm-up flag,
	// periodic summary), which must be initialised even though the
	// recorder measures instead.
	measurement.InitMeasure(p)
	wl, err := ycsb.GetWorkloadCreator("core").Create(p)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	defer wl.Close()
	binding, err := ycsb.GetDBCreator(*db).Create(p)
	if err != nil {
		return fmt.Errorf("connect with go-ycsb's %s binding: %w", *db, err)
	}
	defer binding.Close()

	rec := newRecorder(sampler)
	runCtx := ctx
	if *duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, *warmup+*duration)
		defer cancel()
		// The window closes at the deadline, not when the threads have
		// returned: the operations the deadline cut off are not the
		// servers' work per completed operation.
		t := time.AfterFunc(*warmup+*duration, rec.closeWindow)
		defer t.Stop()
	}
	if *warmup > 0 {
		t := time.AfterFunc(*warmup, rec.openWindow)
		defer t.Stop()
	} else {
		rec.openWindow()
	}
	slog.Info("starting", "db", *db, "run", *name, "threads", *threads, "target_ops_per_sec", *target,
		"warmup", *warmup, "duration", *duration, "ops", *ops, "loadavg", res.LoadAvg)
	progress := startProgress(runCtx, rec)
	client.NewClient(p, wl, measuredDB{DB: binding, rec: rec}).Run(runCtx)
	progress()
	rec.closeWindow()
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	err = rec.fill(res)
	if *out != "" {
		if werr := writeResult(*out, res); werr != nil {
			return errors.Join(err, werr)
		}
	}
	if err != nil {
		return err
	}
	printResult(res)
	attempted := res.Succeeded + res.Errors
	if attempted == 0 {
		return errors.New("no operation completed")
	}
	if rate := float64(res.Errors) / float64(attempted); rate > *maxErrorRate {
		return fmt.Errorf("%d of %d operations failed (%.3f%%, more than -max-error-rate %.3f%%); first errors: %s",
			res.Errors, attempted, 100*rate, 100**maxErrorRate, strings.Join(res.ErrorSamples, "; "))
	}
	return nil
}

// idleCmd measures the CPU time the servers use with no client: their
// fixed cost (heartbeats, leases, background work), which the
// single-thread run's CPU per operation includes.
func idleCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("idle", flag.ContinueOnError)
	db := fs.String("db", "", "the system, as in load and run: cassandra (cosmosd) or etcd")
	duration := fs.Duration("duration", 5*time.Second, "how long to measure")
	clkTck := fs.Float64("clk-tck", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	out := fs.String("out", "", "write the result as JSON to this file")
	var cpus multiFlag
	fs.Var(&cpus, "cpu", "measure the CPU time of processes: NAME=PID[,PID...] (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *duration <= 0 {
		return fmt.Errorf("-duration %s: want a positive duration", *duration)
	}
	sampler := &cpuSampler{groups: map[string][]int{}, clkTck: *clkTck, procDir: "/proc"}
	for _, c := range cpus {
		n, pids, err := parseCPUGroup(c)
		if err != nil {
			return err
		}
		sampler.groups[n] = append(sampler.groups[n], pids...)
	}
	res := &Result{Name: "idle", DB: *db, Phase: "idle", Start: time.Now().UTC()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.LoadAvg = strings.TrimSpace(string(b))
	}
	rec := newRecorder(sampler)
	rec.openWindow()
	select {
	case <-ctx.Done():
		return errors.New("interrupted")
	case <-time.After(*duration):
	}
	rec.closeWindow()
	if err := rec.fill(res); err != nil {
		return err
	}
	for _, name := range sortedKeys(res.CPU) {
		c := res.CPU[name]
		fmt.Printf("%s idle: CPU %-9s %.2f cores (user %.2f s, system %.2f s over %.1fs)\n",
			system(*db), name, c.Cores, c.UserSeconds, c.SystemSeconds, res.WindowSeconds)
	}
	if *out != "" {
		return writeResult(*out, res)
	}
	return nil
}

// startProgress logs the operations done every 10 seconds until the
// returned function is called, so a long run shows it is alive.
func startProgress(ctx context.Context, rec *recorder) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		var last int64
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				rec.mu.Lock()
				n := rec.succeeded
				var failed int64
				for _, f := range rec.failed {
					failed += f
				}
				rec.mu.Unlock()
				slog.Info("progress", "ops", n, "ops_per_sec", float64(n-last)/10, "errors", failed)
				last = n
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func printResult(r *Result) {
	fmt.Printf("%s %s (%d threads", r.DB, r.Name, r.Threads)
	if r.TargetOpsPerSec > 0 {
		fmt.Printf(", target %d ops/s", r.TargetOpsPerSec)
	}
	fmt.Printf("): %.0f ops/s over %.1fs, %d errors\n", r.OpsPerSec, r.WindowSeconds, r.Errors)
	for _, op := range []string{"READ", "UPDATE", "INSERT", "TOTAL"} {
		s, ok := r.Ops[op]
		if !ok {
			continue
		}
		fmt.Printf("  %-6s count %8d  mean %7.2f ms  p50 %7.2f  p90 %7.2f  p99 %7.2f  p99.9 %7.2f  max %8.2f\n",
			op, s.Count, s.MeanMs, s.P50Ms, s.P90Ms, s.P99Ms, s.P999Ms, s.MaxMs)
	}
	for _, name := range sortedKeys(r.CPU) {
		c := r.CPU[name]
		fmt.Printf("  CPU %-9s %7.2f s (user %.2f, system %.2f)  %7.1f µs/op  %.2f cores\n",
			name, c.Seconds, c.UserSeconds, c.SystemSeconds, c.MicrosPerOp, c.Cores)
	}
	for _, s := range r.ErrorSamples {
		fmt.Printf("  error: %s\n", s)
	}
}

func writeResult(path string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

func readResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("result %s: %w", path, err)
	}
	return &r, nil
}

// goVersion is printed by report so a result names its toolchain.
var goVersion = runtime.Version()
