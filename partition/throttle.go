package partition

import (
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// ThroughputFunc reports a table's provisioned RU/s and how many physical
// partitions share it (RU/s 0 = unlimited).
type ThroughputFunc func(table uint64) (ruPerSec float64, partitions int)

const (
	meterWindow = 10 // seconds of history for RU/s figures
	maxKeyLoads = 4096
)

// throttle enforces a partition's share of its table's provisioned
// throughput with a token bucket, and measures the load: RU/s of the
// partition and of its logical partitions. Safe for concurrent use.
//
// Admission happens before any work: a write knows its cost up front; a
// read is admitted on a minimal cost and charged its actual cost afterwards,
// which the bucket carries as debt (x/time/rate reservations may take the
// bucket below zero), so the next requests wait for it.
type throttle struct {
	mu       sync.Mutex
	share    float64 // RU/s; 0 = unlimited
	lim      *rate.Limiter
	buckets  [meterWindow]float64 // RU consumed per second, ring by unix second
	stamps   [meterWindow]int64
	refused  int64
	refusedW [meterWindow]int64
	keys     map[string]*keyLoad
	decayed  int64 // unix second of the last decay
}

type keyLoad struct {
	token int64
	pk    []byte
	ru    float64 // decayed RU (halves every meterWindow seconds)
}

func newThrottle() *throttle {
	return &throttle{keys: map[string]*keyLoad{}, decayed: time.Now().Unix()}
}

// setShare updates the enforced share; a change takes effect at once.
func (t *throttle) setShareLocked(share float64) {
	if share == t.share {
		return
	}
	t.share = share
	if share <= 0 {
		t.lim = nil
		return
	}
	// One second of capacity as burst: short spikes pass, sustained load
	// converges to the share.
	burst := int(math.Max(1, math.Ceil(share)))
	if t.lim == nil {
		t.lim = rate.NewLimiter(rate.Limit(share), burst)
		return
	}
	t.lim.SetLimit(rate.Limit(share))
	t.lim.SetBurst(burst)
}

// admit takes cost RU from the bucket if it can be served now, or returns
// how long to wait.
func (t *throttle) admit(now time.Time, share, cost float64) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setShareLocked(share)
	if t.lim == nil {
		return 0, true
	}
	n := int(math.Min(math.Ceil(cost), float64(t.lim.Burst())))
	r := t.lim.ReserveN(now, n)
	if !r.OK() {
		return time.Second, false
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		t.refused++
		t.refusedW[now.Unix()%meterWindow]++
		t.stampLocked(now)
		return d, false
	}
	// The part of the cost above one burst is debt.
	t.debtLocked(now, cost-float64(n))
	return 0, true
}

// charge records cost RU consumed by a request (admitted with admitted
// RU already taken) against the partition and the logical partition.
func (t *throttle) charge(now time.Time, admitted, cost float64, token int64, pk []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lim != nil && cost > admitted {
		t.debtLocked(now, cost-admitted)
	}
	t.stampLocked(now)
	t.buckets[now.Unix()%meterWindow] += cost
	if pk != nil {
		t.decayLocked(now)
		k := t.keys[string(pk)]
		if k == nil {
			if len(t.keys) >= maxKeyLoads {
				t.evictLocked()
			}
			k = &keyLoad{token: token, pk: append([]byte(nil), pk...)}
			t.keys[string(pk)] = k
		}
		k.ru += cost
	}
}

func (t *throttle) debtLocked(now time.Time, extra float64) {
	for extra >= 1 && t.lim != nil {
		n := int(math.Min(extra, float64(t.lim.Burst())))
		t.lim.ReserveN(now, n)
		extra -= float64(n)
	}
}

// stampLocked clears meter slots that belong to past windows.
func (t *throttle) stampLocked(now time.Time) {
	sec := now.Unix()
	i := sec % meterWindow
	if t.stamps[i] != sec {
		t.stamps[i], t.buckets[i], t.refusedW[i] = sec, 0, 0
	}
}

// decayLocked halves key loads for every window that passed since the last
// decay, so an idle key's load fades even when nothing is charged.
func (t *throttle) decayLocked(now time.Time) {
	sec := now.Unix()
	windows := (sec - t.decayed) / meterWindow
	if windows <= 0 {
		return
	}
	t.decayed += windows * meterWindow
	factor := math.Pow(0.5, float64(min(windows, 64)))
	for pk, k := range t.keys {
		k.ru *= factor
		if k.ru < 0.01 {
			delete(t.keys, pk)
		}
	}
}

func (t *throttle) evictLocked() {
	var minK string
	minRU := math.Inf(1)
	for pk, k := range t.keys {
		if k.ru < minRU {
			minK, minRU = pk, k.ru
		}
	}
	delete(t.keys, minK)
}

// stats returns RU/s over the last full window, refusals in the window and
// in total.
func (t *throttle) stats(now time.Time) (ruPerSec float64, share float64, refusedWindow, refused int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sec := now.Unix()
	var sum float64
	for i := int64(1); i <= meterWindow; i++ {
		s := sec - i
		j := s % meterWindow
		if t.stamps[j] == s {
			sum += t.buckets[j]
			refusedWindow += t.refusedW[j]
		}
	}
	return sum / meterWindow, t.share, refusedWindow, t.refused
}

// topKeys returns the logical partitions with the most recent load.
func (t *throttle) topKeys(n int) []*kvpb.LogicalPartition {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.decayLocked(time.Now())
	all := make([]*keyLoad, 0, len(t.keys))
	for _, k := range t.keys {
		all = append(all, k)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ru > all[j].ru })
	var out []*kvpb.LogicalPartition
	for _, k := range all[:min(n, len(all))] {
		// The decayed sum approximates twice a window's load.
		out = append(out, &kvpb.LogicalPartition{Token: k.token, Pk: k.pk, RuPerSec: k.ru / (2 * meterWindow)})
	}
	return out
}

// loadSplit returns the token boundary that halves the recent load, if the
// load spans at least two tokens.
func (t *throttle) loadSplit() (int64, bool) {
	t.mu.Lock()
	t.decayLocked(time.Now())
	byToken := map[int64]float64{}
	for _, k := range t.keys {
		byToken[k.token] += k.ru
	}
	t.mu.Unlock()
	if len(byToken) < 2 {
		return 0, false
	}
	toks := make([]int64, 0, len(byToken))
	var total float64
	for tok, v := range byToken {
		toks = append(toks, tok)
		total += v
	}
	sort.Slice(toks, func(i, j int) bool { return toks[i] < toks[j] })
	var acc float64
	best, bestDiff := toks[1], math.Inf(1)
	for i := 1; i < len(toks); i++ {
		acc += byToken[toks[i-1]]
		if d := math.Abs(2*acc - total); d < bestDiff {
			best, bestDiff = toks[i], d
		}
	}
	return best, true
}

// overloaded is the error a throttled request gets: CQL Overloaded with
// Cosmos DB's RetryAfterMs hint.
func overloaded(id uint64, share float64, wait time.Duration) *Error {
	ms := max(1, wait.Milliseconds())
	e := Errorf(kvpb.Error_OVERLOADED, "Request rate is large: partition %d is over its share of %.0f RU/s, RetryAfterMs=%d", id, share, ms)
	e.PB.RetryAfterMs = ms
	return e
}

var _ = fmt.Sprint
