package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// offsetClock is the test hook behind Config.TestingClockOffsetFile: the
// wall clock shifted by a duration read from a file, so a test can skew
// one node's clock while it runs (and heal it) by rewriting the file.
// Now is safe for concurrent use; run, on one goroutine, re-reads the
// file every second.
type offsetClock struct {
	path   string
	logger *slog.Logger
	offset atomic.Int64 // nanoseconds; 0 until a file says otherwise
}

// newOffsetClock returns a clock that has already read path once, so
// the offset applies from the first request the node serves.
func newOffsetClock(path string, logger *slog.Logger) *offsetClock {
	c := &offsetClock{path: path, logger: logger}
	c.reload()
	return c
}

// Now is time.Now plus the offset last read.
func (c *offsetClock) Now() time.Time {
	return time.Now().Add(time.Duration(c.offset.Load()))
}

// reload reads the file: a missing file is offset 0. An empty file, or
// content that is not a duration, leaves the offset as it was: a test
// rewriting the file (docker cp truncates, then writes) may be caught
// half-way, and a heal must say "0s".
func (c *offsetClock) reload() {
	var d time.Duration
	raw, err := os.ReadFile(c.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		c.logger.Warn("read clock offset file", "path", c.path, "err", err)
		return
	case strings.TrimSpace(string(raw)) == "":
		return
	default:
		if d, err = time.ParseDuration(strings.TrimSpace(string(raw))); err != nil {
			c.logger.Warn("bad clock offset", "path", c.path, "err", err)
			return
		}
	}
	if old := time.Duration(c.offset.Swap(int64(d))); old != d {
		c.logger.Warn("testing clock offset changed", "from", old, "to", d)
	}
}

// run re-reads the file every second until ctx ends.
func (c *offsetClock) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			c.reload()
		}
	}
}
