package ctl

import (
	"fmt"
	"math"
	"strings"
)

// humanBytes formats a byte count with binary units and one decimal above
// 1 KiB: "0 B", "512 B", "1.0 KiB", "1.2 MiB".
func humanBytes(n int64) string {
	if n < 0 {
		if n == math.MinInt64 {
			return "-8.0 EiB"
		}
		return "-" + humanBytes(-n)
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n) / unit
	i := 0
	// Move up a unit when rounding to one decimal would show 1024.0.
	for v >= unit-0.05 && i < len(units)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// bar is one line of a bar chart.
type bar struct {
	label string
	value int64
}

// defaultBarWidth is the width of the longest bar, in characters.
const defaultBarWidth = 30

// barChart draws one line per bar, scaled so the largest value fills width
// characters, like the portal's "storage per partition key range" chart:
//
//	P1  [##############################] 1.2 MiB
//	P2  [#########                     ] 380.0 KiB
//
// A non-zero value always shows at least one '#', so that a small partition
// is not mistaken for an empty one; negative values count as zero. label
// formats the value after the bar.
func barChart(bars []bar, width int, label func(int64) string) string {
	if width < 1 {
		width = 1
	}
	var largest int64
	labelWidth := 0
	for _, b := range bars {
		largest = max(largest, b.value)
		labelWidth = max(labelWidth, len(b.label))
	}
	var sb strings.Builder
	for _, b := range bars {
		fmt.Fprintf(&sb, "%-*s  %s %s\n", labelWidth, b.label, barCell(float64(b.value), float64(largest), width), label(b.value))
	}
	return sb.String()
}

// barCell draws one bar of a chart, "[#####     ]", scaled so that largest
// fills width characters. A non-zero value shows at least one '#';
// negative values, NaN and a non-positive largest draw an empty bar.
func barCell(value, largest float64, width int) string {
	width = max(width, 1)
	filled := 0
	if value > 0 && largest > 0 && !math.IsInf(largest, 0) {
		f := math.Round(value / largest * float64(width))
		if math.IsNaN(f) || f > float64(width) {
			f = float64(width)
		}
		filled = min(max(int(f), 1), width)
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat(" ", width-filled) + "]"
}
