package ctl

import (
	"strings"
	"testing"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// bigRing is a table of n partitions whose sizes grow with their id and
// whose tokens run the other way, so token order and size order differ.
func bigRing(n int) []*adminpb.Partition {
	parts := make([]*adminpb.Partition, n)
	for i := range n {
		parts[i] = &adminpb.Partition{Id: uint64(i + 1), Table: "ks.big", Start: int64(n - i), End: int64(n - i),
			Bytes: int64(i+1) << 20, Rows: int64(i + 1), RuPerSec: float64(i)}
	}
	return parts
}

// --sort and --limit pick each table's largest partitions; the header keeps
// the whole table's totals and a line says how many were left out.
func TestRingShowSortAndLimit(t *testing.T) {
	v, err := parseRingView("bytes", 3)
	if err != nil {
		t.Fatal(err)
	}
	parts := append(bigRing(10), &adminpb.Partition{Id: 99, Table: "ks.small", Start: 0, End: 1, Bytes: 5})
	shown := v.apply(parts)
	var ids []uint64
	for _, p := range shown {
		ids = append(ids, p.GetId())
	}
	if want := []uint64{10, 9, 8, 99}; !equalIDs(ids, want) {
		t.Fatalf("shown %v, want %v (the 3 largest of ks.big, then ks.small)", ids, want)
	}
	var sb strings.Builder
	if err := renderRingView(&sb, parts, v); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"ks.big: 10 partitions, 55 rows", "... and 7 partitions more (--limit 3, sorted by bytes)", "ks.small: 1 partition"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "P1 ") {
		t.Errorf("the smallest partition is shown despite --limit 3:\n%s", out)
	}
	v, _ = parseRingView("token", 0)
	first := v.apply(bigRing(5))[0]
	if first.GetStart() != 1 {
		t.Fatalf("token order starts at token %d, want 1", first.GetStart())
	}
}

// A table of more partitions than a bar chart can show gets a summary of
// their distribution instead.
func TestRingShowSummarizesBigTables(t *testing.T) {
	var sb strings.Builder
	if err := renderRing(&sb, bigRing(maxBars+1)); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	if !strings.Contains(out, "partition sizes: smallest 1.0 MiB") || !strings.Contains(out, "partition RU/s: lowest 0, median 32, highest 64") {
		t.Fatalf("no distribution summary for %d partitions:\n%s", maxBars+1, out)
	}
	if strings.Contains(out, "[#") {
		t.Fatalf("a bar chart of %d partitions was drawn:\n%s", maxBars+1, out)
	}
}

func TestRingShowRefusesBadView(t *testing.T) {
	if _, err := parseRingView("size", 0); err == nil || !strings.Contains(err.Error(), "want token, bytes, rows, ru or id") {
		t.Fatalf("--sort size: %v", err)
	}
	if _, err := parseRingView("token", -1); err == nil {
		t.Fatal("--limit -1 accepted")
	}
}

func equalIDs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
