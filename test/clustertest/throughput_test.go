package clustertest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/daemon"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// load drives writes as fast as it can and accounts the request units of
// the accepted ones (from the RequestCharge custom payload) and the
// Overloaded refusals.
type load struct {
	accepted  atomic.Int64 // writes
	refused   atomic.Int64
	otherErrs atomic.Int64
	lastOther atomic.Value
	mu        sync.Mutex
	charges   []charge
}

type charge struct {
	at time.Time
	ru float64
}

func (l *load) rate(from, to time.Time) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sum float64
	for _, c := range l.charges {
		if !c.at.Before(from) && c.at.Before(to) {
			sum += c.ru
		}
	}
	return sum / to.Sub(from).Seconds()
}

// drive runs workers writers for d, each choosing its key with key(i).
func (l *load) drive(t *testing.T, s *gocql.Session, table string, workers int, d time.Duration, key func(w, i int) string) {
	t.Helper()
	value := strings.Repeat("x", 900) // about 1 KB per row: 5 RU
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				iter := s.Query("INSERT INTO "+table+" (k, i, v) VALUES (?, ?, ?)", key(w, i), w*1_000_000+i, value).Iter()
				payload := iter.GetCustomPayload()
				err := iter.Close()
				var re gocql.RequestError
				switch {
				case err == nil:
					raw := payload["RequestCharge"]
					if len(raw) != 8 {
						l.otherErrs.Add(1)
						l.lastOther.Store(fmt.Sprintf("no RequestCharge payload (%v)", payload))
						continue
					}
					l.accepted.Add(1)
					l.mu.Lock()
					l.charges = append(l.charges, charge{at: time.Now(), ru: math.Float64frombits(binary.BigEndian.Uint64(raw))})
					l.mu.Unlock()
				case errors.As(err, &re) && re.Code() == 0x1001:
					if !strings.Contains(re.Message(), "RetryAfterMs=") {
						t.Errorf("Overloaded without RetryAfterMs: %q", re.Message())
					}
					l.refused.Add(1)
				default:
					l.otherErrs.Add(1)
					l.lastOther.Store(err.Error())
				}
			}
		}()
	}
	wg.Wait()
}

func throughputCluster(t *testing.T, maxRU int64) (*testcluster.Cluster, *gocql.Session) {
	c := testcluster.Start(t, testcluster.Options{Configure: func(i int, cfg *daemon.Config) {
		cfg.PhysicalPartitionMaxRU = maxRU
		cfg.SizeCheckEvery = 1
	}})
	cc := c.NewClusterConfig(0)
	cc.NumConns = 4
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	return c, s
}

func count(t *testing.T, s *gocql.Session, table string) int {
	t.Helper()
	var n int
	if err := s.Query("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestProvisionedThroughputIsEnforced(t *testing.T) {
	_, s := throughputCluster(t, 10_000)
	exec(t, s, "CREATE TABLE ks.t (k text, i int, v text, PRIMARY KEY (k, i)) WITH cosmosdb_provisioned_throughput = 500")
	var l load
	start := time.Now()
	l.drive(t, s, "ks.t", 8, 9*time.Second, func(w, i int) string { return fmt.Sprintf("k%d", (w*7919+i)%1000) })
	// Skip the first second: the bucket starts with one second of burst.
	got := l.rate(start.Add(time.Second), start.Add(9*time.Second))
	t.Logf("accepted %.0f RU/s (provisioned 500); %d writes accepted, %d refused", got, l.accepted.Load(), l.refused.Load())
	if got < 450 || got > 550 {
		t.Errorf("accepted %.1f RU/s, want 500 ± 10%%", got)
	}
	if l.refused.Load() == 0 {
		t.Error("no request was refused although the load exceeded the provisioned throughput")
	}
	if n := l.otherErrs.Load(); n > 0 {
		t.Errorf("%d requests failed otherwise (last: %v)", n, l.lastOther.Load())
	}
	// Nothing refused was applied: every row is an accepted write.
	if n := count(t, s, "ks.t"); int64(n) != l.accepted.Load() {
		t.Errorf("table holds %d rows, %d writes were accepted", n, l.accepted.Load())
	}
}

// keysIn returns n keys whose tokens fall in [lo, hi].
func keysIn(lo, hi int64, n int, prefix string) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if tok := ring.Token([]byte(k)); tok >= lo && tok <= hi {
			out = append(out, k)
		}
	}
	return out
}

func TestHotPartitionThrottledColdNot(t *testing.T) {
	c, s := throughputCluster(t, 500)
	// 1000 RU/s over two partitions: 500 RU/s each.
	exec(t, s, "CREATE TABLE ks.t (k text, i int, v text, PRIMARY KEY (k, i)) WITH cosmosdb_provisioned_throughput = 1000")
	a := c.Admin(t, 0)
	ctx := context.Background()
	rg, err := a.ShowRing(ctx, &adminpb.ShowRingRequest{Table: "ks.t"})
	if err != nil || len(rg.GetPartitions()) != 2 {
		t.Fatalf("ring: %v %v", rg, err)
	}
	hotP, coldP := rg.GetPartitions()[0], rg.GetPartitions()[1]
	hot := keysIn(hotP.GetStart(), hotP.GetEnd(), 1, "hot")[0]
	cold := keysIn(coldP.GetStart(), coldP.GetEnd(), 20, "cold")
	var hotLoad, coldLoad load
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		hotLoad.drive(t, s, "ks.t", 6, 6*time.Second, func(w, i int) string { return hot })
	}()
	// The cold writer stays well under its partition's share: one write
	// every 50 ms (about 100 RU/s of its partition's 500).
	value := strings.Repeat("x", 900)
	for i := 0; i < 120; i++ {
		iter := s.Query("INSERT INTO ks.t (k, i, v) VALUES (?, ?, ?)", cold[i%len(cold)], i, value).Iter()
		var re gocql.RequestError
		switch err := iter.Close(); {
		case err == nil:
			coldLoad.accepted.Add(1)
		case errors.As(err, &re) && re.Code() == 0x1001:
			coldLoad.refused.Add(1)
		default:
			coldLoad.otherErrs.Add(1)
		}
		time.Sleep(50 * time.Millisecond) // pacing the load, not waiting for a condition
	}
	wg.Wait()
	t.Logf("hot key: %d accepted, %d refused; cold keys: %d accepted, %d refused", hotLoad.accepted.Load(), hotLoad.refused.Load(), coldLoad.accepted.Load(), coldLoad.refused.Load())
	if hotLoad.refused.Load() == 0 {
		t.Error("the hot partition was never throttled")
	}
	if coldLoad.refused.Load() != 0 || coldLoad.otherErrs.Load() != 0 {
		t.Errorf("cold keys in the other partition were refused %d times (other errors %d)", coldLoad.refused.Load(), coldLoad.otherErrs.Load())
	}
	rg, err = a.ShowRing(ctx, &adminpb.ShowRingRequest{Table: "ks.t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rg.GetPartitions() {
		t.Logf("partition %d: %.0f RU/s of %.0f, %d throttled, hot=%v", p.GetId(), p.GetRuPerSec(), p.GetRuShare(), p.GetThrottled(), p.GetHot())
		if p.GetId() == hotP.GetId() && (p.GetThrottled() == 0 || p.GetRuShare() != 500) {
			t.Errorf("hot partition shows throttled=%d share=%v", p.GetThrottled(), p.GetRuShare())
		}
		if p.GetId() == coldP.GetId() && p.GetThrottled() != 0 {
			t.Errorf("cold partition shows %d throttled", p.GetThrottled())
		}
	}
	// Prometheus sees the throttling and the request units.
	resp, err := http.Get("http://" + c.Nodes[0].HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		fmt.Sprintf(`cosmosd_partition_throttled_requests_total{partition="%d",table="ks.t"} %d`, hotP.GetId(), hotLoad.refused.Load()),
		`cosmosd_request_units_total{op="EXECUTE"}`,
		`cosmosd_cql_requests_total{op="EXECUTE",outcome="0x1001"}`,
		`cosmosd_partition_request_units_share{partition="` + fmt.Sprint(hotP.GetId()) + `",table="ks.t"} 500`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	det, err := a.ShowPartition(ctx, &adminpb.ShowPartitionRequest{Id: hotP.GetId()})
	if err != nil || len(det.GetTopByRu()) == 0 || det.GetTopByRu()[0].GetKey()[0] != "'"+hot+"'" {
		t.Errorf("top logical partitions by RU of the hot partition: %v %v", det.GetTopByRu(), err)
	}
}

func TestRaisingThroughputSplitsPartitions(t *testing.T) {
	c, s := throughputCluster(t, 500)
	exec(t, s, "CREATE TABLE ks.t (k text, i int, v text, PRIMARY KEY (k, i)) WITH cosmosdb_provisioned_throughput = 500")
	spread := func(w, i int) string { return fmt.Sprintf("k%d", (w*7919+i)%5000) }
	var before load
	start := time.Now()
	before.drive(t, s, "ks.t", 8, 5*time.Second, spread)
	rateBefore := before.rate(start.Add(time.Second), start.Add(5*time.Second))

	a := c.Admin(t, 0)
	ctx := context.Background()
	resp, err := a.SetThroughput(ctx, &adminpb.SetThroughputRequest{Table: "ks.t", RuPerSec: 2000})
	if err != nil || resp.GetPartitionsNeeded() != 4 {
		t.Fatalf("set throughput: %v %v", resp, err)
	}
	waitFor(t, 60*time.Second, "splits to 4 partitions", func() (bool, string) {
		rg, err := a.ShowRing(ctx, &adminpb.ShowRingRequest{Table: "ks.t"})
		if err != nil {
			return false, err.Error()
		}
		ok := len(rg.GetPartitions()) >= 4
		var shares []float64
		for _, p := range rg.GetPartitions() {
			shares = append(shares, p.GetRuShare())
			ok = ok && p.GetRuShare() <= 500
		}
		return ok, fmt.Sprint(shares)
	})
	var after load
	start = time.Now()
	after.drive(t, s, "ks.t", 8, 5*time.Second, spread)
	rateAfter := after.rate(start.Add(time.Second), start.Add(5*time.Second))
	t.Logf("accepted %.0f RU/s at 500 RU/s provisioned, %.0f RU/s after raising it to 2000", rateBefore, rateAfter)
	if rateBefore > 550 {
		t.Errorf("before: %.0f RU/s accepted, over the 500 provisioned", rateBefore)
	}
	if rateAfter < 1.5*rateBefore || rateAfter > 2200 {
		t.Errorf("after: %.0f RU/s accepted; want well above %.0f and at most 2000 + 10%%", rateAfter, rateBefore)
	}
}

func TestLogicalPartitionLimit(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{Configure: func(i int, cfg *daemon.Config) {
		cfg.LogicalPartitionMaxBytes = 20_000
	}})
	s := c.Session(t, 0)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, s, "CREATE TABLE ks.t (k text, i int, v text, PRIMARY KEY (k, i))")
	value := strings.Repeat("x", 1000)
	var refused error
	rows := 0
	for i := 0; i < 100 && refused == nil; i++ {
		if err := s.Query("INSERT INTO ks.t (k, i, v) VALUES (?, ?, ?)", "full", i, value).Exec(); err != nil {
			refused = err
			break
		}
		rows++
	}
	if refused == nil {
		t.Fatal("writes beyond the 20 kB logical partition limit were accepted")
	}
	var re gocql.RequestError
	if !errors.As(refused, &re) || re.Code() != 0x2200 || !strings.Contains(re.Message(), "k='full'") {
		t.Fatalf("refusal = %v, want Invalid naming the partition key", refused)
	}
	if n := count(t, s, "ks.t"); n != rows {
		t.Fatalf("partition holds %d rows after the refusal, want %d", n, rows)
	}
	// Other keys still write, and the full partition still reads.
	exec(t, s, "INSERT INTO ks.t (k, i, v) VALUES ('other', 1, 'v')")
	var got string
	if err := s.Query("SELECT v FROM ks.t WHERE k = 'full' AND i = 0").Scan(&got); err != nil || got != value {
		t.Fatalf("full partition read: %v", err)
	}
}
