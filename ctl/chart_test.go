package ctl

import (
	"math"
	"strings"
	"testing"
)

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1024*1024 - 1, "1.0 MiB"}, // rounds up into the next unit, never "1024.0 KiB"
		{1258291, "1.2 MiB"},
		{5 << 30, "5.0 GiB"},
		{50_000_000_000, "46.6 GiB"},
		{3 << 40, "3.0 TiB"},
		{1 << 50, "1.0 PiB"},
		{math.MaxInt64, "8.0 EiB"},
		{-1536, "-1.5 KiB"},
		{math.MinInt64, "-8.0 EiB"},
	} {
		if got := humanBytes(tc.n); got != tc.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestBarChart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bars  []bar
		width int
		want  string
	}{
		{name: "empty", bars: nil, width: 10, want: ""},
		{
			name:  "scaled to the largest",
			bars:  []bar{{"P1", 100}, {"P2", 50}, {"P10", 0}},
			width: 10,
			want: "" +
				"P1   [##########] 100 B\n" +
				"P2   [#####     ] 50 B\n" +
				"P10  [          ] 0 B\n",
		},
		{
			name:  "small but not empty shows one mark",
			bars:  []bar{{"P1", 1 << 30}, {"P2", 1}},
			width: 20,
			want: "" +
				"P1  [####################] 1.0 GiB\n" +
				"P2  [#                   ] 1 B\n",
		},
		{
			name:  "all empty",
			bars:  []bar{{"P1", 0}, {"P2", 0}},
			width: 4,
			want: "" +
				"P1  [    ] 0 B\n" +
				"P2  [    ] 0 B\n",
		},
		{
			name:  "negative counts as empty",
			bars:  []bar{{"P1", -5}, {"P2", 10}},
			width: 4,
			want: "" +
				"P1  [    ] -5 B\n" +
				"P2  [####] 10 B\n",
		},
		{
			name:  "extremes do not overflow",
			bars:  []bar{{"P1", math.MaxInt64}, {"P2", math.MaxInt64 / 2}},
			width: 4,
			want: "" +
				"P1  [####] 8.0 EiB\n" +
				"P2  [##  ] 4.0 EiB\n",
		},
		{
			name:  "width below one is one",
			bars:  []bar{{"P1", 3}},
			width: 0,
			want:  "P1  [#] 3 B\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := barChart(tc.bars, tc.width, humanBytes); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// FuzzBarChart checks that any sizes give one line per bar, each bar
// exactly width characters wide between its brackets.
func FuzzBarChart(f *testing.F) {
	f.Add(int64(0), int64(0), int64(0), uint8(30))
	f.Add(int64(1), int64(1<<40), int64(-1), uint8(10))
	f.Add(int64(math.MaxInt64), int64(math.MinInt64), int64(7), uint8(0))
	f.Fuzz(func(t *testing.T, a, b, c int64, w uint8) {
		width := int(w)
		got := barChart([]bar{{"P1", a}, {"P2", b}, {"P3", c}}, width, humanBytes)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("%d lines:\n%s", len(lines), got)
		}
		for _, l := range lines {
			open, closing := strings.Index(l, "["), strings.Index(l, "]")
			if open < 0 || closing < open || closing-open-1 != max(width, 1) {
				t.Fatalf("bar %q not %d wide", l, max(width, 1))
			}
		}
	})
}
