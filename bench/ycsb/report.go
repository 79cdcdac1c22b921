package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Names of the runs scripts/bench-ycsb.sh makes, and of the CPU groups it
// measures.
const (
	runPeak     = "run-64"
	runSingle   = "run-1"
	runHalfPeak = "half-peak"
	runIdle     = "idle"
	cpuServers  = "servers"
	cpuMetaEtcd = "meta-etcd"
	dbCosmosd   = "cassandra"
	dbEtcd      = "etcd"
	// halfPeakP99Ms is issue 13's bar for p99 at half of cosmosd's peak
	// (Cosmos DB's bar for point operations).
	halfPeakP99Ms = 10.0
)

// reportCmd prints the comparison of the results in a directory.
func reportCmd(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: ycsb report DIR")
	}
	files, err := filepath.Glob(filepath.Join(fs.Arg(0), "*.json"))
	if err != nil {
		return err
	}
	results := map[string]map[string]*Result{}
	for _, f := range files {
		r, err := readResult(f)
		if err != nil {
			return err
		}
		if results[r.DB] == nil {
			results[r.DB] = map[string]*Result{}
		}
		results[r.DB][r.Name] = r
	}
	if len(results) == 0 {
		return fmt.Errorf("no results in %s", fs.Arg(0))
	}
	report(os.Stdout, results[dbEtcd], results[dbCosmosd])
	return nil
}

// report writes the comparison as Markdown, ready for docs/performance.md.
// Either side may be missing (a run of one system only): its cells and the
// targets that need it say n/a.
func report(w io.Writer, etcd, cos map[string]*Result) {
	get := func(m map[string]*Result, name string) *Result {
		if m == nil {
			return nil
		}
		return m[name]
	}
	fmt.Fprintln(w, "| | etcd, 4 members | cosmosd, 4 nodes | cosmosd / etcd |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, run := range []struct{ name, label string }{{runPeak, "64 threads"}, {runSingle, "1 thread"}} {
		e, c := get(etcd, run.name), get(cos, run.name)
		if run.name == runSingle && e == nil && c == nil {
			continue
		}
		row(w, run.label+": ops/s", e, c, func(r *Result) (string, float64) {
			return thousands(r.OpsPerSec), r.OpsPerSec
		}, "×")
		for _, op := range []struct{ key, label string }{{"READ", "read"}, {"UPDATE", "update"}} {
			row(w, run.label+": "+op.label+" p50 / p99", e, c, func(r *Result) (string, float64) {
				s, ok := r.Ops[op.key]
				if !ok {
					return "n/a", 0
				}
				return ms(s.P50Ms) + " / " + ms(s.P99Ms) + " ms", s.P99Ms
			}, "× p99")
		}
		row(w, run.label+": p99 (p99.9), all ops", e, c, func(r *Result) (string, float64) {
			s := r.Ops["TOTAL"]
			return ms(s.P99Ms) + " ms (" + ms(s.P999Ms) + " ms)", s.P99Ms
		}, "×")
		row(w, run.label+": server CPU per op", e, c, func(r *Result) (string, float64) {
			s, ok := r.CPU[cpuServers]
			if !ok {
				return "n/a", 0
			}
			return fmt.Sprintf("%.0f µs (%.2f cores, %.0f%% system)", s.MicrosPerOp, s.Cores, 100*s.SystemSeconds/max(s.Seconds, 1e-9)), s.MicrosPerOp
		}, "×")
		row(w, run.label+": client CPU per op", e, c, func(r *Result) (string, float64) {
			s := r.CPU[clientGroup]
			return fmt.Sprintf("%.0f µs", s.MicrosPerOp), s.MicrosPerOp
		}, "")
		if c != nil {
			if m, ok := c.CPU[cpuMetaEtcd]; ok {
				fmt.Fprintf(w, "| %s: cosmosd's metadata etcd, CPU per op | | %.1f µs | |\n", run.label, m.MicrosPerOp)
			}
		}
		row(w, run.label+": errors", e, c, func(r *Result) (string, float64) {
			return fmt.Sprintf("%d of %d", r.Errors, r.Errors+r.Succeeded), 0
		}, "")
	}
	row(w, "idle: server CPU", get(etcd, runIdle), get(cos, runIdle), func(r *Result) (string, float64) {
		s, ok := r.CPU[cpuServers]
		if !ok {
			return "n/a", 0
		}
		return fmt.Sprintf("%.2f cores", s.Cores), s.Cores
	}, "×")
	half := get(cos, runHalfPeak)
	if half != nil {
		t := half.Ops["TOTAL"]
		fmt.Fprintf(w, "| cosmosd at half its peak (%d threads paced to %s ops/s): ops/s, p50 / p99 (p99.9) | | %s, %s / %s ms (%s ms) | |\n",
			half.Threads, thousands(float64(half.TargetOpsPerSec)), thousands(half.OpsPerSec), ms(t.P50Ms), ms(t.P99Ms), ms(t.P999Ms))
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "Latencies are go-ycsb's, measured by the client from the start to the end of each operation,")
	fmt.Fprintln(w, "over each run's measured window (the warm-up excluded). Server CPU is utime + stime of the 4 server")
	fmt.Fprintln(w, "processes (/proc/PID/stat) over the window, divided by the operations completed in it; cores is")
	fmt.Fprintln(w, "that CPU time over the window's length. Client CPU is the go-ycsb process's own (getrusage).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets (issue 13):")
	e64, c64, e1, c1 := get(etcd, runPeak), get(cos, runPeak), get(etcd, runSingle), get(cos, runSingle)
	target(w, "64 threads: cosmosd ops/s >= 2x etcd's", e64 != nil && c64 != nil, func() (bool, string) {
		return c64.OpsPerSec >= 2*e64.OpsPerSec, fmt.Sprintf("%.2fx", c64.OpsPerSec/e64.OpsPerSec)
	})
	target(w, "64 threads: cosmosd p99 <= etcd's", e64 != nil && c64 != nil, func() (bool, string) {
		return lePercentile(c64, e64, "TOTAL")
	})
	target(w, "1 thread: cosmosd update p99 <= etcd's", e1 != nil && c1 != nil, func() (bool, string) {
		return lePercentile(c1, e1, "UPDATE")
	})
	target(w, "1 thread: cosmosd read p99 <= etcd's", e1 != nil && c1 != nil, func() (bool, string) {
		return lePercentile(c1, e1, "READ")
	})
	target(w, fmt.Sprintf("half of cosmosd's peak: p99 < %g ms", halfPeakP99Ms), half != nil, func() (bool, string) {
		p := half.Ops["TOTAL"].P99Ms
		return p < halfPeakP99Ms, ms(p) + " ms"
	})

	var loads []string
	for _, m := range []map[string]*Result{etcd, cos} {
		for _, name := range sortedKeys(m) {
			r := m[name]
			loads = append(loads, fmt.Sprintf("%s %s: %s", system(r.DB), r.Name, r.LoadAvg))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Load average at the start of each run (1, 5, 15 min): %s.\n", strings.Join(loads, "; "))
	fmt.Fprintf(w, "Driver built with %s.\n", goVersion)
}

func system(db string) string {
	if db == dbCosmosd {
		return "cosmosd"
	}
	return db
}

// row prints one line of the table: the cell of each side and, when both
// are there and the unit is given, cosmosd's value over etcd's.
func row(w io.Writer, label string, e, c *Result, cell func(*Result) (string, float64), unit string) {
	if e == nil && c == nil {
		return
	}
	var ev, cv float64
	es, cs, ratio := "n/a", "n/a", ""
	if e != nil {
		es, ev = cell(e)
	}
	if c != nil {
		cs, cv = cell(c)
	}
	if unit != "" && e != nil && c != nil && ev > 0 {
		ratio = fmt.Sprintf("%.2f%s", cv/ev, unit)
	}
	fmt.Fprintf(w, "| %s | %s | %s | %s |\n", label, es, cs, ratio)
}

// lePercentile compares cosmosd's p99 of an operation with etcd's.
func lePercentile(c, e *Result, op string) (bool, string) {
	cs, cok := c.Ops[op]
	es, eok := e.Ops[op]
	if !cok || !eok {
		return false, "no " + op + " measured"
	}
	return cs.P99Ms <= es.P99Ms, fmt.Sprintf("%s ms vs %s ms", ms(cs.P99Ms), ms(es.P99Ms))
}

func target(w io.Writer, label string, measured bool, check func() (bool, string)) {
	if !measured {
		fmt.Fprintf(w, "- n/a  %s: not measured\n", label)
		return
	}
	ok, detail := check()
	verdict := "FAIL"
	if ok {
		verdict = "PASS"
	}
	fmt.Fprintf(w, "- %s %s: %s\n", verdict, label, detail)
}

// ms formats milliseconds with about two significant digits below 10 ms.
func ms(v float64) string {
	switch {
	case v < 1:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// thousands formats a rate as an integer with thousands separators.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
