package ctl

import (
	"math"
	"strings"
	"testing"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// FuzzBarCell checks that any rate draws a bar exactly width characters
// wide between its brackets, never more marks than fit, and at least one
// mark for a positive value no larger than a finite largest.
func FuzzBarCell(f *testing.F) {
	f.Add(0.0, 0.0, uint8(20))
	f.Add(70.25, 700.0, uint8(20))
	f.Add(math.Inf(1), math.NaN(), uint8(0))
	f.Add(-1.0, math.MaxFloat64, uint8(255))
	f.Fuzz(func(t *testing.T, value, largest float64, w uint8) {
		width := max(int(w), 1)
		got := barCell(value, largest, int(w))
		if len(got) != width+2 || got[0] != '[' || got[len(got)-1] != ']' {
			t.Fatalf("barCell(%v, %v, %d) = %q, want %d wide", value, largest, w, got, width)
		}
		marks := strings.Count(got, "#")
		if strings.Trim(got[1:len(got)-1], "#") != strings.Repeat(" ", width-marks) {
			t.Fatalf("barCell(%v, %v, %d) = %q: marks then spaces", value, largest, w, got)
		}
		if value > 0 && value <= largest && !math.IsInf(largest, 0) && marks == 0 {
			t.Fatalf("barCell(%v, %v, %d) = %q: a positive value shows a mark", value, largest, w, got)
		}
	})
}

// FuzzProgressLine checks that whatever an operation's fields hold (they
// come from the server), progress output stays one line per change.
func FuzzProgressLine(f *testing.F) {
	f.Add("rebalance", "running", "moves", "4 of 10 done, 0 failed", 0.4)
	f.Add("split", "done", "", "", 1.0)
	f.Add("move\nkey", "run\rning", "st\x00ep", "detail\n\nmore", math.NaN())
	f.Fuzz(func(t *testing.T, kind, state, step, detail string, progress float64) {
		op := &adminpb.Operation{Id: 7, Kind: kind, State: state, Progress: progress,
			Steps: []*adminpb.Step{{Name: step, State: state, Detail: detail}}}
		var sb strings.Builder
		p := &lineProgress{w: &sb}
		p.update(op)
		p.update(op) // unchanged: no second line
		if got := sb.String(); strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") || strings.ContainsAny(strings.TrimSuffix(got, "\n"), "\r\n") {
			t.Fatalf("progress output %q is not one line", got)
		}
		if pct := percent(op); pct < 0 || pct > 100 {
			t.Fatalf("percent %d", pct)
		}
	})
}
