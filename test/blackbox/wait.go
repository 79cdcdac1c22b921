package blackbox

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// WaitFor polls cond until it holds and returns how long that took; after
// d it fails the test with the last state cond described.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last state: %s", d, what, state)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Tail returns the last n lines of s for a failure report, each cut at
// 400 bytes.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + "..."
		}
	}
	return strings.Join(lines, "\n")
}

// ClusterConfig is the driver configuration of a careful client: the
// given contact points, QUORUM, timeouts longer than the nodes' request
// timeout (so the node's answer arrives first) and retries on the next
// host. gocql 1.7 applies the retry policy to every statement, idempotent
// or not: a session that sends statements that are not idempotent must
// give them Query.RetryPolicy(nil) (the writer here only sends idempotent
// ones).
func ClusterConfig(logger gocql.StdLogger, ips ...string) *gocql.ClusterConfig {
	cc := gocql.NewCluster(ips...)
	cc.Port = 9042
	cc.ProtoVersion = 4
	cc.Consistency = gocql.Quorum
	cc.Timeout = 12 * time.Second
	cc.ConnectTimeout = 5 * time.Second
	cc.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 8}
	cc.Logger = logger
	return cc
}

// LogBuffer keeps the driver's last log lines for failure reports.
type LogBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *LogBuffer) add(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, time.Now().Format("15:04:05.000 ")+strings.TrimRight(s, "\n"))
	if len(b.lines) > 5000 {
		b.lines = b.lines[len(b.lines)-4000:]
	}
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

func (b *LogBuffer) Print(v ...any)                 { b.add(fmt.Sprint(v...)) }
func (b *LogBuffer) Printf(format string, v ...any) { b.add(fmt.Sprintf(format, v...)) }
func (b *LogBuffer) Println(v ...any)               { b.add(fmt.Sprintln(v...)) }
