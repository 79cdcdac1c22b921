// Package fuzzcheck holds the assertions that the fuzz targets of every
// package share (see docs/reliability.md, "Fuzzing").
//
// A decoder of outside bytes must not allocate far more than its input
// justifies: a length field that claims 2^31 elements must not make it
// reserve them before it finds out the input is ten bytes long. Allocs
// measures what one call allocated with the runtime's cumulative heap
// allocation counter (runtime/metrics "/gc/heap/allocs:bytes"), which is
// exact for large objects and counts small ones a span (8 KiB) at a time;
// Slack absorbs that granularity, so the bounds catch the allocations that
// matter (megabytes out of bytes) and not a few spans more or less.
//
// The counter is process-wide: call Allocs only where no other goroutine
// allocates megabytes at the same time (a fuzz target's body runs alone).
package fuzzcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
)

// Slack is the allocation every bound allows besides its per-byte share:
// the counter's granularity (a span per size class touched) and the
// constant overhead of a decoder (its maps and first slices).
const Slack = 1 << 20

// Bound is the allocation allowed for an input of n bytes at perByte bytes
// per input byte (a decoded element may cost many times the bytes that
// encode it: a 2-byte protobuf entry becomes a 100-byte struct).
func Bound(n, perByte int) uint64 { return uint64(n)*uint64(perByte) + Slack }

func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Allocs runs f and fails t if it allocated more than max bytes.
func Allocs(t testing.TB, max uint64, what string, f func()) {
	t.Helper()
	before := allocated()
	f()
	if got := allocated() - before; got > max {
		t.Fatalf("%s allocated %d bytes, more than the %d its input allows", what, got, max)
	}
}

// SeedsEnv is the environment variable that makes the seed writers of the
// fuzz targets (tests named TestWriteFuzzSeeds) rewrite testdata/fuzz:
//
//	COSMOSD_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./storage/
const SeedsEnv = "COSMOSD_WRITE_FUZZ_SEEDS"

// Corpus writes seed corpus files of fuzz targets in the format go test
// reads from testdata/fuzz/<target>/<name>. Seeds are built by the
// package's own encoders from realistic values, so they are rewritten
// rather than edited when an encoding changes.
type Corpus struct {
	t   testing.TB
	dir string
}

// NewCorpus returns a writer into dir (normally "testdata/fuzz"), or skips
// t unless SeedsEnv is set.
func NewCorpus(t testing.TB, dir string) *Corpus {
	t.Helper()
	if os.Getenv(SeedsEnv) == "" {
		t.Skipf("set %s=1 to rewrite %s", SeedsEnv, dir)
	}
	return &Corpus{t: t, dir: dir}
}

// Add writes one seed of target: args are the fuzz function's arguments
// after *testing.T, of the types go test's corpus format knows.
func (c *Corpus) Add(target, name string, args ...any) {
	c.t.Helper()
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case bool:
			fmt.Fprintf(&b, "bool(%t)\n", v)
		case byte:
			fmt.Fprintf(&b, "byte(%q)\n", v)
		case int:
			fmt.Fprintf(&b, "int(%d)\n", v)
		case int32:
			fmt.Fprintf(&b, "int32(%d)\n", v)
		case int64:
			fmt.Fprintf(&b, "int64(%d)\n", v)
		case uint32:
			fmt.Fprintf(&b, "uint32(%d)\n", v)
		case uint64:
			fmt.Fprintf(&b, "uint64(%d)\n", v)
		default:
			c.t.Fatalf("fuzzcheck: seed argument of type %T", a)
		}
	}
	dir := filepath.Join(c.dir, target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
		c.t.Fatal(err)
	}
}
