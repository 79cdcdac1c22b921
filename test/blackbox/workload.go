package blackbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// Table is the table writers insert into; TableCQL creates it.
const Table = "ks.t"

// TableCQL creates Table with room for three physical partitions at the
// default split threshold of 10,000 RU/s each.
const TableCQL = "CREATE TABLE " + Table + " (k text, i int, v text, PRIMARY KEY (k, i)) WITH cosmosdb_provisioned_throughput = 30000"

// keysPerWriter spreads writes over enough partition keys to reach every
// physical partition.
const keysPerWriter = 60

// Writer inserts rows until halted and records the acknowledged ones; every
// fourth operation reads back an acknowledged row at QUORUM, which must
// find it (a QUORUM read after an acknowledged QUORUM write is
// linearizable here).
type Writer struct {
	s     *gocql.Session
	name  string
	start time.Time

	acked  sync.Map // row id (int) -> partition key (string)
	n      atomic.Int64
	reads  atomic.Int64
	errs   atomic.Int64
	misses atomic.Int64
	maxLat atomic.Int64 // nanoseconds of the slowest successful operation

	mu      sync.Mutex
	errLog  []string // first errors, with times since start
	stalls  []string // operations slower than 2s
	stop    chan struct{}
	done    sync.WaitGroup
	stopped time.Time
}

// StartWriter starts workers goroutines writing rows with ids from base
// (distinct per writer, so scenarios never overwrite each other's rows).
func StartWriter(s *gocql.Session, name string, base, workers int) *Writer {
	w := &Writer{s: s, name: name, start: time.Now(), stop: make(chan struct{})}
	for g := 0; g < workers; g++ {
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			var mine []int // acknowledged ids of this worker, for reads
			for seq := 0; ; seq++ {
				select {
				case <-w.stop:
					return
				default:
				}
				if seq%4 == 3 && len(mine) > 0 {
					w.read(mine[(seq*7919)%len(mine)])
					continue
				}
				id := base + seq*workers + g
				key := fmt.Sprintf("%s-%d", name, id%keysPerWriter)
				if w.write(id, key) {
					mine = append(mine, id)
				}
			}
		}()
	}
	return w
}

// attempts records the driver's attempts of one statement, to tell in a
// failure report which hosts were tried and what each answered.
type attempts struct {
	mu   sync.Mutex
	list []string
}

func (a *attempts) ObserveQuery(_ context.Context, q gocql.ObservedQuery) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := fmt.Sprintf("attempt %d on %s took %s", q.Attempt, q.Host.ConnectAddress(), q.End.Sub(q.Start).Round(time.Millisecond))
	if q.Err != nil {
		s += ": " + q.Err.Error()
	}
	a.list = append(a.list, s)
}

func (a *attempts) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return "[" + strings.Join(a.list, "; ") + "]"
}

// StallLimit is the longest a writer's operation may take before it counts
// as a stall: the reliability bar is that one host paused or cut off
// stalls no operation longer than this.
const StallLimit = 2 * time.Second

// Speculative is the speculative execution of the writer's idempotent
// statements: when a host has not answered within 500 ms, the driver asks
// the next one as well, as DataStax recommends for idempotent workloads.
// It is what keeps a client off a paused or cut-off coordinator, which no
// server can answer for; what the cluster itself does about the host is
// then what the writer measures.
var Speculative = &gocql.SimpleSpeculativeExecution{NumAttempts: 2, TimeoutDelay: 500 * time.Millisecond}

func (w *Writer) write(id int, key string) bool {
	begin := time.Now()
	var at attempts
	err := w.s.Query("INSERT INTO "+Table+" (k, i, v) VALUES (?, ?, ?)", key, id, w.name).Idempotent(true).SetSpeculativeExecutionPolicy(Speculative).Observer(&at).Exec()
	if err != nil {
		w.fail("insert", key, id, begin, fmt.Errorf("%w %s", err, &at))
		return false
	}
	w.acked.Store(id, key)
	w.n.Add(1)
	w.latency("insert", begin, &at)
	return true
}

func (w *Writer) read(id int) {
	k, _ := w.acked.Load(id)
	key := k.(string)
	begin := time.Now()
	var v string
	var at attempts
	err := w.s.Query("SELECT v FROM "+Table+" WHERE k = ? AND i = ?", key, id).Idempotent(true).SetSpeculativeExecutionPolicy(Speculative).Observer(&at).Scan(&v)
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		w.misses.Add(1)
		w.note(&w.errLog, fmt.Sprintf("%s: acknowledged row (%s, %d) not found by a QUORUM read", w.since(begin), key, id))
	case err != nil:
		w.fail("select", key, id, begin, fmt.Errorf("%w %s", err, &at))
	default:
		w.reads.Add(1)
		w.latency("select", begin, &at)
	}
}

func (w *Writer) fail(op, key string, id int, begin time.Time, err error) {
	w.errs.Add(1)
	w.note(&w.errLog, fmt.Sprintf("%s: %s (%s, %d) after %s: %v", w.since(begin), op, key, id, time.Since(begin).Round(time.Millisecond), err))
}

func (w *Writer) latency(op string, begin time.Time, at *attempts) {
	d := time.Since(begin)
	for {
		old := w.maxLat.Load()
		if int64(d) <= old || w.maxLat.CompareAndSwap(old, int64(d)) {
			break
		}
	}
	if d > StallLimit {
		w.note(&w.stalls, fmt.Sprintf("%s: %s took %s %s", w.since(begin), op, d.Round(time.Millisecond), at))
	}
}

func (w *Writer) since(t time.Time) string {
	return "+" + t.Sub(w.start).Round(100*time.Millisecond).String()
}

func (w *Writer) note(list *[]string, s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(*list) < 20 {
		*list = append(*list, s)
	}
}

// Stalls returns the operations that took longer than StallLimit (at most
// the first 20).
func (w *Writer) Stalls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.stalls...)
}

// Halt stops the writer and waits for its workers.
func (w *Writer) Halt() {
	if w.stopped.IsZero() {
		close(w.stop)
		w.done.Wait()
		w.stopped = time.Now()
	}
}

// WaitProgress waits until the writer has acknowledged n more rows.
func (w *Writer) WaitProgress(t testing.TB, n int64, d time.Duration, what string) {
	t.Helper()
	target := w.n.Load() + n
	WaitFor(t, d, fmt.Sprintf("%d more acknowledged writes %s", n, what), func() (bool, string) {
		return w.n.Load() >= target, fmt.Sprintf("%d of %d; errors %d", w.n.Load(), target, w.errs.Load())
	})
}

// Report logs what the writer saw and fails the test on any error or
// missing row; the writer must have been halted.
func (w *Writer) Report(t testing.TB) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("writer %s: %d rows acknowledged, %d reads in %s, slowest operation %s, %d stalls > %s",
		w.name, w.n.Load(), w.reads.Load(), w.stopped.Sub(w.start).Round(100*time.Millisecond),
		time.Duration(w.maxLat.Load()).Round(time.Millisecond), len(w.stalls), StallLimit)
	if len(w.stalls) > 0 {
		t.Logf("writer %s stalls:\n  %s", w.name, strings.Join(w.stalls, "\n  "))
	}
	if e, m := w.errs.Load(), w.misses.Load(); e > 0 || m > 0 {
		t.Errorf("writer %s: %d errors beyond driver retries, %d acknowledged rows not read back:\n  %s", w.name, e, m, strings.Join(w.errLog, "\n  "))
	}
}

// CheckAcked reads back, at QUORUM and one partition at a time, every row
// the writers acknowledged, and returns how many it found.
func CheckAcked(t testing.TB, s *gocql.Session, writers ...*Writer) int {
	t.Helper()
	want := map[string]map[int]bool{}
	for _, w := range writers {
		w.acked.Range(func(k, v any) bool {
			key := v.(string)
			if want[key] == nil {
				want[key] = map[int]bool{}
			}
			want[key][k.(int)] = true
			return true
		})
	}
	count, missing := 0, 0
	for key, rows := range want {
		iter := s.Query("SELECT i FROM "+Table+" WHERE k = ?", key).Consistency(gocql.Quorum).PageSize(5000).Idempotent(true).Iter()
		got := map[int]bool{}
		var i int
		for iter.Scan(&i) {
			got[i] = true
		}
		if err := iter.Close(); err != nil {
			t.Errorf("read partition %s: %v", key, err)
			continue
		}
		for i := range rows {
			if !got[i] {
				missing++
				if missing <= 20 {
					t.Errorf("acknowledged row (%s, %d) not found", key, i)
				}
			}
			count++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged rows lost", missing, count)
	}
	return count - missing
}
