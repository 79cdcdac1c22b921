package e2eansible

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

// workloadTable is the table the writers insert into.
const workloadTable = "ks.t"

// keysPerWriter spreads writes over enough partition keys to reach every
// physical partition.
const keysPerWriter = 60

// writer inserts idempotent rows at QUORUM until halted and records the
// acknowledged ones; every fourth operation reads an acknowledged row back
// at QUORUM, which must find it.
type writer struct {
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
	errLog  []string
	stop    chan struct{}
	done    sync.WaitGroup
	stopped time.Time
}

// startWriter starts workers goroutines writing rows with ids from base.
func startWriter(s *gocql.Session, name string, base, workers int) *writer {
	w := &writer{s: s, name: name, start: time.Now(), stop: make(chan struct{})}
	for g := 0; g < workers; g++ {
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			var mine []int
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

func (w *writer) write(id int, key string) bool {
	begin := time.Now()
	err := w.s.Query("INSERT INTO "+workloadTable+" (k, i, v) VALUES (?, ?, ?)", key, id, w.name).Idempotent(true).Exec()
	if err != nil {
		w.fail(fmt.Sprintf("insert (%s, %d) after %s: %v", key, id, time.Since(begin).Round(time.Millisecond), err))
		return false
	}
	w.acked.Store(id, key)
	w.n.Add(1)
	w.latency(begin)
	return true
}

func (w *writer) read(id int) {
	k, _ := w.acked.Load(id)
	key := k.(string)
	begin := time.Now()
	var v string
	err := w.s.Query("SELECT v FROM "+workloadTable+" WHERE k = ? AND i = ?", key, id).Idempotent(true).Scan(&v)
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		w.misses.Add(1)
		w.note(fmt.Sprintf("acknowledged row (%s, %d) not found by a QUORUM read", key, id))
	case err != nil:
		w.fail(fmt.Sprintf("select (%s, %d) after %s: %v", key, id, time.Since(begin).Round(time.Millisecond), err))
	default:
		w.reads.Add(1)
		w.latency(begin)
	}
}

func (w *writer) fail(msg string) {
	w.errs.Add(1)
	w.note(msg)
}

func (w *writer) note(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errLog) < 20 {
		w.errLog = append(w.errLog, fmt.Sprintf("+%s: %s", time.Since(w.start).Round(100*time.Millisecond), msg))
	}
}

func (w *writer) latency(begin time.Time) {
	d := int64(time.Since(begin))
	for {
		old := w.maxLat.Load()
		if d <= old || w.maxLat.CompareAndSwap(old, d) {
			return
		}
	}
}

// halt stops the writer and waits for its workers.
func (w *writer) halt() {
	if w.stopped.IsZero() {
		close(w.stop)
		w.done.Wait()
		w.stopped = time.Now()
	}
}

// waitProgress waits until the writer has acknowledged n more rows.
func (w *writer) waitProgress(t testing.TB, n int64, d time.Duration, what string) {
	t.Helper()
	target := w.n.Load() + n
	waitFor(t, d, fmt.Sprintf("%d more acknowledged writes %s", n, what), func() (bool, string) {
		return w.n.Load() >= target, fmt.Sprintf("%d of %d; errors %d", w.n.Load(), target, w.errs.Load())
	})
}

// report logs what the writer saw and fails the test on any error or
// missing row; the writer must have been halted.
func (w *writer) report(t testing.TB) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("writer %s: %d rows acknowledged, %d reads, %d failed operations in %s, slowest operation %s",
		w.name, w.n.Load(), w.reads.Load(), w.errs.Load(), w.stopped.Sub(w.start).Round(100*time.Millisecond),
		time.Duration(w.maxLat.Load()).Round(time.Millisecond))
	if e, m := w.errs.Load(), w.misses.Load(); e > 0 || m > 0 {
		t.Errorf("writer %s: %d failed operations beyond the driver's retries, %d acknowledged rows not read back:\n  %s",
			w.name, e, m, strings.Join(w.errLog, "\n  "))
	}
}

// checkAcked reads back at QUORUM, one partition key at a time, every row
// the writers acknowledged, and returns how many it found.
func checkAcked(t testing.TB, s *gocql.Session, writers ...*writer) int {
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
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		iter := s.Query("SELECT i FROM "+workloadTable+" WHERE k = ?", key).WithContext(ctx).Consistency(gocql.Quorum).
			PageSize(5000).Idempotent(true).Iter()
		got := map[int]bool{}
		var i int
		for iter.Scan(&i) {
			got[i] = true
		}
		err := iter.Close()
		cancel()
		if err != nil {
			t.Errorf("read partition %s: %v", key, err)
			continue
		}
		for i := range rows {
			count++
			if !got[i] {
				missing++
				if missing <= 20 {
					t.Errorf("acknowledged row (%s, %d) not found", key, i)
				}
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged rows lost", missing, count)
	}
	return count - missing
}
