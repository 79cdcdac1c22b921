package cqltest

import (
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/cql/frame"
	"github.com/cosmosd/cosmosd/daemon"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// TestLimits runs a node with small frame, value and in-flight limits and
// checks that each is enforced with a clear error, and that gocql
// re-prepares transparently after the node forgot its statements.
func TestLimits(t *testing.T) {
	t.Parallel()
	const (
		maxInflight = 2
		maxFrame    = 64 << 10
		maxValue    = 1024
	)
	c := testcluster.Start(t, testcluster.Options{Configure: func(_ int, cfg *daemon.Config) {
		cfg.MaxRequestsPerConnection = maxInflight
		cfg.MaxFrameBytes = maxFrame
		cfg.MaxValueBytes = maxValue
	}})
	host, port := c.CQLHostPort(0)
	e := &env{c: c, host: host, port: port}
	e.s = e.session(t, func(cc *gocql.ClusterConfig) { cc.ReconnectInterval = 100 * time.Millisecond })
	s := e.s
	keyspace(t, s, "lim")
	exec(t, s, "CREATE TABLE lim.t (k int PRIMARY KEY, v text, b blob, l list<text>)")

	t.Run("ValueSize", func(t *testing.T) {
		execArgs(t, s, "INSERT INTO lim.t (k, v) VALUES (?, ?)", 1, strings.Repeat("x", maxValue))
		queryErrArgs(t, s, "INSERT INTO lim.t (k, v) VALUES (?, ?)", []any{2, strings.Repeat("x", maxValue+1)}, codeInvalid, "larger than the maximum of 1024 bytes")
		queryErrArgs(t, s, "INSERT INTO lim.t (k, b) VALUES (?, ?)", []any{2, make([]byte, 5000)}, codeInvalid, "larger than the maximum")
		queryErr(t, s, "INSERT INTO lim.t (k, v) VALUES (2, '"+strings.Repeat("y", 2000)+"')", codeInvalid, "larger than the maximum")
		eq(t, "rows", count(t, s, "SELECT count(*) FROM lim.t"), int64(1))
	})
	t.Run("FrameSize", func(t *testing.T) {
		rc := dialRaw(t, e.addr())
		rc.startup("")
		rc.sendStream(4, &frame.Query{Query: "SELECT * FROM lim.t WHERE v = '" + strings.Repeat("z", maxFrame) + "' ALLOW FILTERING",
			Params: frame.QueryParams{Consistency: frame.One}})
		h, resp, _ := rc.recv()
		rawErr(t, "frame over the limit", resp, frame.CodeProtocolError, "Request is too big")
		eq(t, "stream", h.Stream, int16(4))
		rc.expectClosed("after a frame over the limit")
		// Just under the limit is fine.
		rc = dialRaw(t, e.addr())
		rc.startup("")
		r := rc.query("SELECT * FROM lim.t WHERE k IN (" + strings.Repeat("0, ", (maxFrame-200)/3) + "1)")
		if _, ok := r.(*frame.RowsResult); !ok {
			t.Fatalf("frame under the limit: %#v", r)
		}
	})
	t.Run("InFlight", func(t *testing.T) {
		rc := dialRaw(t, e.addr())
		rc.startup("")
		const n = 400
		var buf []byte
		for i := 0; i < n; i++ {
			b, err := frame.AppendRequest(nil, frame.Header{Stream: int16(i)}, nil,
				&frame.Query{Query: "SELECT * FROM system_schema.columns", Params: frame.QueryParams{Consistency: frame.One}})
			if err != nil {
				t.Fatal(err)
			}
			buf = append(buf, b...)
		}
		rc.write(buf)
		seen := map[int16]bool{}
		overloaded := 0
		for len(seen) < n {
			h, resp, _ := rc.recv()
			if seen[h.Stream] {
				t.Fatalf("stream %d answered twice", h.Stream)
			}
			seen[h.Stream] = true
			switch r := resp.(type) {
			case *frame.RowsResult:
			case *frame.Error:
				rawErr(t, "over the in-flight limit", r, frame.CodeOverloaded, "Too many requests in flight on this connection (limit 2)")
				overloaded++
			default:
				t.Fatalf("stream %d: %#v", h.Stream, resp)
			}
		}
		if overloaded == 0 || overloaded == n {
			t.Fatalf("%d of %d requests overloaded, want some but not all", overloaded, n)
		}
		if _, ok := rc.query("SELECT key FROM system.local").(*frame.RowsResult); !ok {
			t.Fatal("connection unusable after overload")
		}
	})
	t.Run("ReprepareAfterRestart", func(t *testing.T) {
		q := "SELECT v FROM lim.t WHERE k = ?"
		eq(t, "before restart", strs(t, s, q, 1), []string{strings.Repeat("x", maxValue)})
		c.RestartNode(0)
		// gocql still holds the prepared id; the restarted node answers
		// Unprepared and gocql prepares again without surfacing it.
		var got []string
		eventually(t, 30*time.Second, "query after restart", func() bool {
			iter := s.Query(q, 1).Iter()
			var v string
			got = nil
			for iter.Scan(&v) {
				got = append(got, v)
			}
			err := iter.Close()
			if err != nil {
				t.Logf("after restart: %v", err)
			}
			return err == nil
		})
		eq(t, "after restart", got, []string{strings.Repeat("x", maxValue)})
	})
}
