package cqltype

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// dateEpoch is the serialized date of 1970-01-01: dates are unsigned days
// with the epoch at 2^31.
const dateEpoch = 1 << 31

// maxAbsDays bounds the days of a timestamp literal so that its
// milliseconds fit an int64 (about ±290 million years).
const maxAbsDays = math.MaxInt64 / 86400000

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm; valid for any int64-sized year here).
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays inverts daysFromCivil.
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func daysIn(y int64, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// formatYMD writes a date as ISO_LOCAL_DATE does: four-digit years, a '+'
// before years above 9999 and a '-' before negative ones.
func formatYMD(y int64, m, d int) string {
	switch {
	case y > 9999:
		return fmt.Sprintf("+%d-%02d-%02d", y, m, d)
	case y < 0:
		return fmt.Sprintf("-%04d-%02d-%02d", -y, m, d)
	}
	return fmt.Sprintf("%04d-%02d-%02d", y, m, d)
}

// formatTimestamp writes milliseconds since the epoch as cqlsh does:
// "2011-02-03 04:05:00.000000+0000" (UTC).
func formatTimestamp(ms int64) string {
	days, rem := ms/86400000, ms%86400000
	if rem < 0 {
		days, rem = days-1, rem+86400000
	}
	y, m, d := civilFromDays(days)
	return fmt.Sprintf("%s %02d:%02d:%02d.%03d000+0000", formatYMD(y, m, d),
		rem/3600000, rem/60000%60, rem/1000%60, rem%1000)
}

// formatDate writes a serialized date's uint32 day number as yyyy-mm-dd.
func formatDate(days uint32) string {
	return formatYMD(civilFromDays(int64(days) - dateEpoch))
}

// formatTime writes nanoseconds since midnight as Cassandra's
// TimeSerializer.toString: hh:mm:ss.nnnnnnnnn.
func formatTime(ns int64) string {
	return fmt.Sprintf("%02d:%02d:%02d.%09d", ns/3600e9, ns/60e9%60, ns/1e9%60, ns%1e9)
}

func isRawNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && allDigits(s)
}

// parseTimestampText converts a timestamp literal as Cassandra's
// TimestampSerializer.dateStringToTimestamp does: "now", milliseconds since
// the epoch, or yyyy-mm-dd[( |T)hh:mm[:ss[.f…]]][zone]. Differences: a
// timestamp without a zone is UTC (Cassandra uses the JVM's zone); the
// fraction is a decimal fraction of a second of 1 to 9 digits truncated to
// milliseconds (Java's SimpleDateFormat reads ".5" as 5 ms); zones are Z,
// ±hh, ±hhmm, ±hh:mm, UTC, GMT and GMT±hh[:mm], optionally after a space;
// dates are proleptic Gregorian.
func parseTimestampText(s string) (int64, error) {
	if strings.EqualFold(s, "now") {
		return time.Now().UnixMilli(), nil
	}
	if isRawNumber(s) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, valueErrorf("Unable to make long (for date) from: '%s'", s)
		}
		return v, nil
	}
	ms, ok := parseDateTime(s)
	if !ok {
		return 0, valueErrorf("Unable to coerce '%s' to a formatted date (long)", s)
	}
	return ms, nil
}

// scanner is a tiny cursor for hand-written literal parsers.
type scanner struct {
	s   string
	pos int
}

func (sc *scanner) done() bool { return sc.pos >= len(sc.s) }

func (sc *scanner) peekByte() byte {
	if sc.done() {
		return 0
	}
	return sc.s[sc.pos]
}

func (sc *scanner) acceptByte(c byte) bool {
	if sc.peekByte() == c && !sc.done() {
		sc.pos++
		return true
	}
	return false
}

// digits reads between lo and hi ASCII digits.
func (sc *scanner) digits(lo, hi int) (string, bool) {
	start := sc.pos
	for sc.pos < len(sc.s) && sc.pos-start < hi && sc.s[sc.pos] >= '0' && sc.s[sc.pos] <= '9' {
		sc.pos++
	}
	return sc.s[start:sc.pos], sc.pos-start >= lo
}

func (sc *scanner) number(lo, hi int) (int, bool) {
	d, ok := sc.digits(lo, hi)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(d)
	return n, err == nil
}

func parseDateTime(s string) (int64, bool) {
	sc := scanner{s: s}
	year, ok1 := sc.number(1, 9)
	if !ok1 || !sc.acceptByte('-') {
		return 0, false
	}
	month, ok2 := sc.number(1, 2)
	if !ok2 || !sc.acceptByte('-') {
		return 0, false
	}
	day, ok3 := sc.number(1, 2)
	if !ok3 || month < 1 || month > 12 || day < 1 || day > daysIn(int64(year), month) {
		return 0, false
	}
	var hour, minute, sec, millis int
	if c := sc.peekByte(); c == 'T' || (c == ' ' && sc.pos+1 < len(s) && s[sc.pos+1] >= '0' && s[sc.pos+1] <= '9') {
		sc.pos++
		var ok bool
		if hour, ok = sc.number(1, 2); !ok || hour > 23 || !sc.acceptByte(':') {
			return 0, false
		}
		if minute, ok = sc.number(1, 2); !ok || minute > 59 {
			return 0, false
		}
		if sc.acceptByte(':') {
			if sec, ok = sc.number(1, 2); !ok || sec > 59 {
				return 0, false
			}
			if sc.acceptByte('.') {
				frac, ok := sc.digits(1, 9)
				if !ok {
					return 0, false
				}
				frac = (frac + "00")[:3]
				millis, _ = strconv.Atoi(frac)
			}
		}
	}
	offset := 0 // seconds east of UTC
	if !sc.done() {
		sc.acceptByte(' ')
		var ok bool
		if offset, ok = parseZone(s[sc.pos:]); !ok {
			return 0, false
		}
	}
	days := daysFromCivil(int64(year), month, day)
	if days > maxAbsDays-1 || days < -maxAbsDays+1 {
		return 0, false
	}
	return days*86400000 + int64(hour)*3600000 + int64(minute)*60000 + int64(sec)*1000 +
		int64(millis) - int64(offset)*1000, true
}

// parseZone parses a zone designator and returns its offset in seconds.
func parseZone(z string) (int, bool) {
	switch z {
	case "Z", "UTC", "GMT", "UT":
		return 0, true
	}
	if rest, ok := strings.CutPrefix(z, "GMT"); ok {
		z = rest
	} else if rest, ok := strings.CutPrefix(z, "UTC"); ok {
		z = rest
	}
	sc := scanner{s: z}
	sign := 1
	switch {
	case sc.acceptByte('+'):
	case sc.acceptByte('-'):
		sign = -1
	default:
		return 0, false
	}
	hh, ok := sc.number(1, 2)
	if !ok || hh > 23 {
		return 0, false
	}
	mm := 0
	colon := sc.acceptByte(':')
	if colon || !sc.done() {
		if mm, ok = sc.number(2, 2); !ok || mm > 59 {
			return 0, false
		}
	}
	if !sc.done() {
		return 0, false
	}
	return sign * (hh*3600 + mm*60), true
}

var (
	minDateText = formatYMD(civilFromDays(math.MinInt32)) + "T00:00Z"
	maxDateText = formatYMD(civilFromDays(math.MaxInt32)) + "T00:00Z"
)

// parseDateText converts a date literal as Cassandra's
// SimpleDateSerializer.dateStringToDays: a raw unsigned day number (epoch at
// 2^31), or an ISO local date yyyy-mm-dd (years of more than four digits
// need a sign), strictly checked.
func parseDateText(s string) (uint32, error) {
	if isRawNumber(s) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 || v > math.MaxUint32 {
			return 0, valueErrorf("Unable to make unsigned int (for date) from: '%s'", s)
		}
		return uint32(v), nil
	}
	bad := valueErrorf("Unable to coerce '%s' to a formatted date (long)", s)
	sc := scanner{s: s}
	sign := int64(1)
	signed := false
	if sc.acceptByte('+') {
		signed = true
	} else if sc.acceptByte('-') {
		signed, sign = true, -1
	}
	yd, ok := sc.digits(4, 10)
	if !ok || (!signed && len(yd) != 4) || !sc.acceptByte('-') {
		return 0, bad
	}
	year, _ := strconv.ParseInt(yd, 10, 64)
	year *= sign
	md, ok1 := sc.digits(2, 2)
	if !ok1 || !sc.acceptByte('-') {
		return 0, bad
	}
	dd, ok2 := sc.digits(2, 2)
	if !ok2 || !sc.done() || year > 999999999 || year < -999999999 {
		return 0, bad
	}
	month, _ := strconv.Atoi(md)
	day, _ := strconv.Atoi(dd)
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) {
		return 0, bad
	}
	days := daysFromCivil(year, month, day)
	if days < math.MinInt32 {
		return 0, valueErrorf("Input date %s is less than min supported date %s", s, minDateText)
	}
	if days > math.MaxInt32 {
		return 0, valueErrorf("Input date %s is greater than max supported date %s", s, maxDateText)
	}
	return uint32(days + dateEpoch), nil
}

// parseTimeText converts a time literal as Cassandra's
// TimeSerializer.timeStringToLong: raw nanoseconds since midnight, or
// hh:mm:ss[.fffffffff].
func parseTimeText(s string) (int64, error) {
	if isRawNumber(s) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 || v > maxTime {
			return 0, valueErrorf("Unable to make long (for time) from: '%s'", s)
		}
		return v, nil
	}
	bad := valueErrorf("(TimeType) Unable to coerce '%s' to a formatted time (long)", s)
	t := strings.TrimSpace(s)
	first := strings.IndexByte(t, ':')
	second := -1
	if first > 0 {
		if i := strings.IndexByte(t[first+1:], ':'); i >= 0 {
			second = first + 1 + i
		}
	}
	if first <= 0 || second <= 0 || second >= len(t)-1 {
		return 0, bad
	}
	hour, err1 := strconv.Atoi(t[:first])
	minute, err2 := strconv.Atoi(t[first+1 : second])
	if err1 != nil || err2 != nil || hour < 0 || hour >= 24 || minute < 0 || minute >= 60 {
		return 0, bad
	}
	secText, nanoText, hasDot := strings.Cut(t[second+1:], ".")
	sec, err := strconv.Atoi(secText)
	if err != nil || sec < 0 || sec >= 60 {
		return 0, bad
	}
	var nanos int
	if hasDot {
		if nanoText == "" || len(nanoText) > 9 || nanoText[0] < '0' || nanoText[0] > '9' {
			return 0, bad
		}
		if nanos, err = strconv.Atoi((nanoText + "000000000")[:9]); err != nil {
			return 0, bad
		}
	}
	return int64(hour)*3600e9 + int64(minute)*60e9 + int64(sec)*1e9 + int64(nanos), nil
}
