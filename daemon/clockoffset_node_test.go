package daemon_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/daemon"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// A node started with testing_clock_offset_file stamps the writes it
// coordinates with its skewed clock, and follows the file while it runs:
// writetime() of a row inserted through it is an hour ahead, then half an
// hour behind once the file says so.
func TestNodeClockOffsetHook(t *testing.T) {
	offsetFile := filepath.Join(t.TempDir(), "clock-offset")
	if err := os.WriteFile(offsetFile, []byte("1h"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, testcluster.Options{Nodes: 1, Configure: func(_ int, cfg *daemon.Config) {
		cfg.TestingClockOffsetFile = offsetFile
	}})
	cc := c.NewClusterConfig(0)
	// Without a client timestamp the coordinator stamps the write.
	cc.DefaultTimestamp = false
	s, err := cc.CreateSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// skew inserts row k and returns how far its writetime is from the
	// test's clock.
	skew := func(k int) time.Duration {
		t.Helper()
		before := time.Now()
		if err := s.Query("INSERT INTO ks.t (k, v) VALUES (?, ?)", k, k).Exec(); err != nil {
			t.Fatal(err)
		}
		var wt int64
		if err := s.Query("SELECT writetime(v) FROM ks.t WHERE k = ?", k).Scan(&wt); err != nil {
			t.Fatal(err)
		}
		return time.UnixMicro(wt).Sub(before)
	}
	const slack = 10 * time.Second
	if d := skew(1); d < time.Hour-slack || d > time.Hour+slack {
		t.Fatalf("writetime is %s from now with the file saying 1h", d)
	}
	if err := os.WriteFile(offsetFile, []byte("-30m"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The node re-reads the file every second.
	deadline := time.Now().Add(20 * time.Second)
	for k := 2; ; k++ {
		d := skew(k)
		if d > -30*time.Minute-slack && d < -30*time.Minute+slack {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writetime still %s from now 20s after the file said -30m", d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
