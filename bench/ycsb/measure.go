package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// maxErrorSamples is how many distinct error messages a result keeps, so a
// failed run says why without logging every failure.
const maxErrorSamples = 5

// recorder measures the operations of one run. Latencies and throughput are
// taken over a window: operations that start before it opens (the warm-up:
// connections, prepared statements, caches) or end after it closes (cut
// off by the run's deadline) are not measured. Errors are counted over the
// whole run, because a failing warm-up is as much a failure as a failing
// window.
type recorder struct {
	mu          sync.Mutex
	open        bool
	closed      bool
	windowStart time.Time
	windowEnd   time.Time
	hists       map[string]*hdrhistogram.Histogram
	succeeded   int64
	failed      map[string]int64
	samples     []string
	cpu         *cpuSampler
	cpuStart    cpuSample
	cpuEnd      cpuSample
	cpuErr      error
}

func newRecorder(cpu *cpuSampler) *recorder {
	return &recorder{hists: map[string]*hdrhistogram.Histogram{}, failed: map[string]int64{}, cpu: cpu}
}

// openWindow starts the measured window now and samples the CPU time of
// the processes under test.
func (r *recorder) openWindow() {
	s, err := r.cpu.sample()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open || r.closed {
		return
	}
	r.open, r.windowStart, r.cpuStart = true, time.Now(), s
	if err != nil && r.cpuErr == nil {
		r.cpuErr = fmt.Errorf("CPU at the window's start: %w", err)
	}
}

// closeWindow ends the measured window (once; later calls do nothing).
func (r *recorder) closeWindow() {
	s, err := r.cpu.sample()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed, r.windowEnd, r.cpuEnd = true, time.Now(), s
	if err != nil && r.cpuErr == nil {
		r.cpuErr = fmt.Errorf("CPU at the window's end (did a server exit during the run?): %w", err)
	}
}

// record accounts for one operation that started at start. ctx is the
// operation's context: an operation that failed because the run's deadline
// or an interrupt cancelled it is not a failure of the system under test.
func (r *recorder) record(ctx context.Context, op string, start time.Time, err error) {
	end := time.Now()
	if err != nil && ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed[op]++
		msg := op + ": " + err.Error()
		if len(r.samples) < maxErrorSamples && !contains(r.samples, msg) {
			r.samples = append(r.samples, msg)
		}
		return
	}
	r.succeeded++
	if !r.open || r.closed || start.Before(r.windowStart) {
		return
	}
	us := max(end.Sub(start).Microseconds(), 1)
	for _, name := range []string{op, "TOTAL"} {
		h := r.hists[name]
		if h == nil {
			// 1 µs to 10 minutes at 3 significant digits.
			h = hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)
			r.hists[name] = h
		}
		// Values above the range are clamped rather than dropped, so a
		// stalled operation still shows as the maximum.
		_ = h.RecordValue(min(us, h.HighestTrackableValue()))
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// OpStats are the latencies of one kind of operation in the window, in
// milliseconds.
type OpStats struct {
	Count     int64   `json:"count"`
	OpsPerSec float64 `json:"ops_per_sec"`
	MeanMs    float64 `json:"mean_ms"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms"`
	P999Ms    float64 `json:"p999_ms"`
	MaxMs     float64 `json:"max_ms"`
}

// CPUStat is the CPU time (user + system) a group of processes used in the
// window.
type CPUStat struct {
	PIDs []int `json:"pids,omitempty"`
	// Seconds is UserSeconds + SystemSeconds.
	Seconds       float64 `json:"seconds"`
	UserSeconds   float64 `json:"user_seconds"`
	SystemSeconds float64 `json:"system_seconds"`
	MicrosPerOp   float64 `json:"us_per_op"`
	// Cores is Seconds over the window's length: how many of the machine's
	// cores the group kept busy on average.
	Cores float64 `json:"cores"`
}

// fill writes what the recorder measured into res.
func (r *recorder) fill(res *Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open || !r.closed {
		return errors.New("the run ended before its measured window opened (warm-up longer than the run?)")
	}
	window := r.windowEnd.Sub(r.windowStart).Seconds()
	res.WindowSeconds = window
	res.Ops = map[string]OpStats{}
	for name, h := range r.hists {
		ms := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
		res.Ops[name] = OpStats{
			Count: h.TotalCount(), OpsPerSec: float64(h.TotalCount()) / window,
			MeanMs: h.Mean() / 1000, P50Ms: ms(50), P90Ms: ms(90), P99Ms: ms(99), P999Ms: ms(99.9),
			MaxMs: float64(h.Max()) / 1000,
		}
	}
	total := res.Ops["TOTAL"]
	res.OpsPerSec = total.OpsPerSec
	res.Succeeded = r.succeeded
	res.Failed = r.failed
	for _, n := range r.failed {
		res.Errors += n
	}
	res.ErrorSamples = r.samples
	if r.cpuErr != nil {
		return r.cpuErr
	}
	res.CPU = map[string]CPUStat{}
	for name, t := range r.cpuEnd {
		user, sys := t.user-r.cpuStart[name].user, t.sys-r.cpuStart[name].sys
		st := CPUStat{PIDs: r.cpu.groups[name], Seconds: user + sys, UserSeconds: user, SystemSeconds: sys,
			Cores: (user + sys) / window}
		if total.Count > 0 {
			st.MicrosPerOp = (user + sys) * 1e6 / float64(total.Count)
		}
		res.CPU[name] = st
	}
	return nil
}

// cpuSampler reads the CPU time of groups of processes: the servers from
// /proc/PID/stat (utime + stime, the figures rusage reports for a process),
// and this client itself from getrusage.
type cpuSampler struct {
	groups map[string][]int
	// clkTck is the kernel's USER_HZ, the unit of /proc/PID/stat's times
	// (getconf CLK_TCK; 100 on every Linux architecture Go supports).
	clkTck float64
	// procDir is /proc; tests point it elsewhere.
	procDir string
}

// clientGroup names this process in a cpuSample.
const clientGroup = "client"

// cpuTime is user and system CPU seconds.
type cpuTime struct{ user, sys float64 }

// cpuSample is the CPU time of each group, by name.
type cpuSample map[string]cpuTime

func (c *cpuSampler) sample() (cpuSample, error) {
	s := cpuSample{}
	var errs []error
	for name, pids := range c.groups {
		var sum cpuTime
		for _, pid := range pids {
			t, err := c.processCPU(pid)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				continue
			}
			sum.user += t.user
			sum.sys += t.sys
		}
		s[name] = sum
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		errs = append(errs, fmt.Errorf("getrusage: %w", err))
	} else {
		s[clientGroup] = cpuTime{user: tvSeconds(ru.Utime), sys: tvSeconds(ru.Stime)}
	}
	return s, errors.Join(errs...)
}

func tvSeconds(tv syscall.Timeval) float64 {
	return float64(tv.Sec) + float64(tv.Usec)/1e6
}

// processCPU is the CPU time of one process (all its threads).
func (c *cpuSampler) processCPU(pid int) (cpuTime, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", c.procDir, pid))
	if err != nil {
		return cpuTime{}, fmt.Errorf("process %d: %w", pid, err)
	}
	utime, stime, err := parseStatTimes(string(b))
	if err != nil {
		return cpuTime{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return cpuTime{user: float64(utime) / c.clkTck, sys: float64(stime) / c.clkTck}, nil
}

// parseStatTimes returns utime and stime (fields 14 and 15, in clock
// ticks) of a /proc/PID/stat line. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStatTimes(stat string) (utime, stime int64, err error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, errors.New("stat: no command name")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(f))
	}
	// A process that exited but was not reaped yet still has a stat.
	if f[0] == "Z" || f[0] == "X" {
		return 0, 0, errors.New("the process has exited")
	}
	if utime, err = strconv.ParseInt(f[11], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("stat utime: %w", err)
	}
	if stime, err = strconv.ParseInt(f[12], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("stat stime: %w", err)
	}
	return utime, stime, nil
}

// parseCPUGroup parses a -cpu flag value, NAME=PID[,PID...].
func parseCPUGroup(v string) (string, []int, error) {
	name, list, ok := strings.Cut(v, "=")
	if !ok || name == "" || name == clientGroup {
		return "", nil, fmt.Errorf("-cpu %q: want NAME=PID[,PID...] with a NAME other than %q", v, clientGroup)
	}
	var pids []int
	for _, p := range strings.Split(list, ",") {
		pid, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || pid <= 0 {
			return "", nil, fmt.Errorf("-cpu %q: bad process id %q", v, p)
		}
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return name, pids, nil
}

// measuredDB times every operation of the binding it wraps (go-ycsb's own
// client.DbWrapper feeds a process-wide histogram that cannot be windowed).
type measuredDB struct {
	ycsb.DB
	rec *recorder
}

func (m measuredDB) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	start := time.Now()
	v, err := m.DB.Read(ctx, table, key, fields)
	m.rec.record(ctx, "READ", start, err)
	return v, err
}

func (m measuredDB) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	start := time.Now()
	v, err := m.DB.Scan(ctx, table, startKey, count, fields)
	m.rec.record(ctx, "SCAN", start, err)
	return v, err
}

func (m measuredDB) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	start := time.Now()
	err := m.DB.Update(ctx, table, key, values)
	m.rec.record(ctx, "UPDATE", start, err)
	return err
}

func (m measuredDB) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	start := time.Now()
	err := m.DB.Insert(ctx, table, key, values)
	m.rec.record(ctx, "INSERT", start, err)
	return err
}

func (m measuredDB) Delete(ctx context.Context, table, key string) error {
	start := time.Now()
	err := m.DB.Delete(ctx, table, key)
	m.rec.record(ctx, "DELETE", start, err)
	return err
}
