package cqltype

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// DurationValue is a CQL duration: months, days and nanoseconds, which all have
// the same sign (or are zero). Serialized as three zig-zag vints in
// Cassandra's VIntCoding (the number of leading one bits of the first byte
// is the number of extra bytes, big-endian).
type DurationValue struct {
	Months int32
	Days   int32
	Nanos  int64
}

// String returns the duration in CQL literal form as Cassandra's
// Duration.toString writes it ("1y2mo3d4h5m6s7ms8us9ns", "-1h"), and "0s"
// for zero (where Cassandra writes an empty string).
func (d DurationValue) String() string {
	var b strings.Builder
	if d.Months < 0 || d.Days < 0 || d.Nanos < 0 {
		b.WriteByte('-')
	}
	rem := appendUnit(&b, absU64(int64(d.Months)), 12, "y")
	appendUnit(&b, rem, 1, "mo")
	appendUnit(&b, absU64(int64(d.Days)), 1, "d")
	if d.Nanos != 0 {
		rem = appendUnit(&b, absU64(d.Nanos), 3600e9, "h")
		rem = appendUnit(&b, rem, 60e9, "m")
		rem = appendUnit(&b, rem, 1e9, "s")
		rem = appendUnit(&b, rem, 1e6, "ms")
		rem = appendUnit(&b, rem, 1e3, "us")
		appendUnit(&b, rem, 1, "ns")
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}

func absU64(v int64) uint64 {
	if v < 0 {
		return uint64(-(v + 1)) + 1 // no overflow for MinInt64
	}
	return uint64(v)
}

func appendUnit(b *strings.Builder, v, unit uint64, name string) uint64 {
	if v == 0 || v < unit {
		return v
	}
	b.WriteString(strconv.FormatUint(v/unit, 10))
	b.WriteString(name)
	return v % unit
}

func (d DurationValue) encode() []byte {
	out := make([]byte, 0, 12)
	out = appendVint(out, int64(d.Months))
	out = appendVint(out, int64(d.Days))
	return appendVint(out, d.Nanos)
}

// appendUvint appends v in Cassandra's unsigned VInt encoding.
func appendUvint(dst []byte, v uint64) []byte {
	size := (639 - bits.LeadingZeros64(v|1)*9) >> 6
	if size == 1 {
		return append(dst, byte(v))
	}
	var buf [9]byte
	for i := size - 1; i >= 0; i-- {
		buf[i] = byte(v)
		v >>= 8
	}
	buf[0] |= ^byte(0xFF >> (size - 1))
	return append(dst, buf[:size]...)
}

func appendVint(dst []byte, v int64) []byte {
	return appendUvint(dst, uint64(v<<1)^uint64(v>>63))
}

// readVint decodes one signed VInt from b; n is the number of bytes used,
// 0 if b is truncated.
func readVint(b []byte) (v int64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	extra := bits.LeadingZeros8(^b[0])
	if len(b) < 1+extra {
		return 0, 0
	}
	u := uint64(b[0] & (0xFF >> extra))
	for i := 1; i <= extra; i++ {
		u = u<<8 | uint64(b[i])
	}
	return int64(u>>1) ^ -int64(u&1), 1 + extra
}

// decodeDuration parses and validates a serialized duration as Cassandra's
// DurationSerializer.validate does, and also rejects trailing bytes.
func decodeDuration(b []byte) (DurationValue, error) {
	if len(b) < 3 {
		return DurationValue{}, valueErrorf("Expected at least 3 bytes for a duration (%d)", len(b))
	}
	var vals [3]int64
	pos := 0
	for i := range vals {
		v, n := readVint(b[pos:])
		if n == 0 {
			return DurationValue{}, valueErrorf("Not enough bytes to read a duration")
		}
		vals[i], pos = v, pos+n
	}
	if pos != len(b) {
		return DurationValue{}, valueErrorf("Unexpected extraneous bytes after duration value")
	}
	if vals[0] != int64(int32(vals[0])) {
		return DurationValue{}, valueErrorf("The duration months must be a 32 bits integer but was: %d", vals[0])
	}
	if vals[1] != int64(int32(vals[1])) {
		return DurationValue{}, valueErrorf("The duration days must be a 32 bits integer but was: %d", vals[1])
	}
	d := DurationValue{Months: int32(vals[0]), Days: int32(vals[1]), Nanos: vals[2]}
	if !((d.Months >= 0 && d.Days >= 0 && d.Nanos >= 0) || (d.Months <= 0 && d.Days <= 0 && d.Nanos <= 0)) {
		return DurationValue{}, valueErrorf("The duration months, days and nanoseconds must be all of the same sign (%d, %d, %d)", d.Months, d.Days, d.Nanos)
	}
	return d, nil
}

// Duration units in the order Cassandra's Duration.Builder requires.
const (
	unitYears = iota + 1
	unitMonths
	unitWeeks
	unitDays
	unitHours
	unitMinutes
	unitSeconds
	unitMillis
	unitMicros
	unitNanos
)

var unitNames = [...]string{"", "years", "months", "weeks", "days", "hours", "minutes", "seconds",
	"milliseconds", "microseconds", "nanoseconds"}

// durationBuilder mirrors Cassandra's Duration.Builder, including its order
// and overflow checks.
type durationBuilder struct {
	neg         bool
	months      int64
	days        int64
	nanos       int64
	currentUnit int
}

func (b *durationBuilder) add(unit int, n int64) error {
	if unit == b.currentUnit {
		return valueErrorf("Invalid duration. The %s are specified multiple times", unitNames[unit])
	}
	if unit < b.currentUnit {
		return valueErrorf("Invalid duration. The %s should be after %s", unitNames[b.currentUnit], unitNames[unit])
	}
	b.currentUnit = unit
	switch unit {
	case unitYears, unitMonths:
		return addUnits(&b.months, n, unitScale[unit], math.MaxInt32, "months")
	case unitWeeks, unitDays:
		return addUnits(&b.days, n, unitScale[unit], math.MaxInt32, "days")
	}
	return addUnits(&b.nanos, n, unitScale[unit], math.MaxInt64, "nanoseconds")
}

// unitScale is what a unit is worth in the total it adds to: months for
// years and months, days for weeks and days, nanoseconds for the rest.
var unitScale = [...]int64{unitYears: 12, unitMonths: 1, unitWeeks: 7, unitDays: 1,
	unitHours: 3600e9, unitMinutes: 60e9, unitSeconds: 1e9, unitMillis: 1e6, unitMicros: 1e3, unitNanos: 1}

// addUnits adds n units worth scale each to *total, refusing a total above
// most (what names the total in the error).
func addUnits(total *int64, n, scale, most int64, what string) error {
	if n > (most-*total)/scale {
		return valueErrorf("Invalid duration. The total number of %s must be less or equal to %d", what, most)
	}
	*total += n * scale
	return nil
}

func (b *durationBuilder) build() DurationValue {
	if b.neg {
		return DurationValue{Months: int32(-b.months), Days: int32(-b.days), Nanos: -b.nanos}
	}
	return DurationValue{Months: int32(b.months), Days: int32(b.days), Nanos: b.nanos}
}

// parseDuration parses a duration literal as Cassandra's Duration.from:
// the standard format (1y2mo3w4d5h6m7s8ms9us10ns, units case-insensitive,
// "µs" accepted), ISO 8601 (P1Y2M3DT4H5M6S), ISO week (P2W) and the ISO
// alternative format (P0001-02-03T04:05:06); a leading '-' negates.
func parseDuration(input string) (DurationValue, error) {
	source, neg := strings.CutPrefix(input, "-")
	b := durationBuilder{neg: neg}
	bad := valueErrorf("Unable to convert '%s' to a duration", source)
	var err error
	switch {
	case strings.HasPrefix(source, "P") && strings.HasSuffix(source, "W"):
		n, ok := parseDigits(source[1 : len(source)-1])
		if !ok {
			return DurationValue{}, bad
		}
		err = b.add(unitWeeks, n)
	case strings.HasPrefix(source, "P") && strings.Contains(source, "-"):
		err = parseISOAlternative(&b, source, bad)
	case strings.HasPrefix(source, "P"):
		err = parseISO(&b, source, bad)
	default:
		err = parseStandardDuration(&b, source, bad)
	}
	if err != nil {
		return DurationValue{}, err
	}
	return b.build(), nil
}

// parseDigits parses a non-empty run of ASCII digits that fits an int64.
func parseDigits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func leadingDigits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

var durationUnits = []struct {
	sym  string
	unit int
}{
	// Longest symbols first where one is a prefix of another ("mo", "ms"
	// before "m"), as in Cassandra's regular expression.
	{"y", unitYears}, {"mo", unitMonths}, {"w", unitWeeks}, {"d", unitDays}, {"h", unitHours},
	{"s", unitSeconds}, {"ms", unitMillis}, {"us", unitMicros}, {"µs", unitMicros},
	{"ns", unitNanos}, {"m", unitMinutes},
}

func parseStandardDuration(b *durationBuilder, s string, bad error) error {
	if s == "" {
		return bad
	}
	for s != "" {
		nd := leadingDigits(s)
		n, ok := parseDigits(s[:nd])
		if !ok {
			return bad
		}
		s = s[nd:]
		unit, size := 0, 0
		for _, u := range durationUnits {
			if len(s) >= len(u.sym) && strings.EqualFold(s[:len(u.sym)], u.sym) {
				unit, size = u.unit, len(u.sym)
				break
			}
		}
		if unit == 0 {
			return bad
		}
		if err := b.add(unit, n); err != nil {
			return err
		}
		s = s[size:]
	}
	return nil
}

// parseISO parses P[nY][nM][nD][T[nH][nM][nS]].
func parseISO(b *durationBuilder, s string, bad error) error {
	s = s[1:]
	datePart, timePart, hasT := strings.Cut(s, "T")
	parts := []struct {
		text  string
		units string
		ids   []int
	}{
		{datePart, "YMD", []int{unitYears, unitMonths, unitDays}},
	}
	if hasT {
		parts = append(parts, struct {
			text  string
			units string
			ids   []int
		}{timePart, "HMS", []int{unitHours, unitMinutes, unitSeconds}})
	}
	for _, p := range parts {
		rest, next := p.text, 0
		for rest != "" {
			nd := leadingDigits(rest)
			n, ok := parseDigits(rest[:nd])
			if !ok || nd == len(rest) {
				return bad
			}
			i := strings.IndexByte(p.units[next:], rest[nd])
			if i < 0 {
				return bad
			}
			next += i
			if err := b.add(p.ids[next], n); err != nil {
				return err
			}
			next++
			rest = rest[nd+1:]
		}
	}
	return nil
}

// parseISOAlternative parses PYYYY-MM-DDThh:mm:ss.
func parseISOAlternative(b *durationBuilder, s string, bad error) error {
	if len(s) != 20 || s[5] != '-' || s[8] != '-' || s[11] != 'T' || s[14] != ':' || s[17] != ':' {
		return bad
	}
	fields := []struct {
		from, to, unit int
	}{{1, 5, unitYears}, {6, 8, unitMonths}, {9, 11, unitDays}, {12, 14, unitHours},
		{15, 17, unitMinutes}, {18, 20, unitSeconds}}
	for _, f := range fields {
		n, ok := parseDigits(s[f.from:f.to])
		if !ok {
			return bad
		}
		if err := b.add(f.unit, n); err != nil {
			return err
		}
	}
	return nil
}
