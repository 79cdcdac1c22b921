package cqltype

import (
	"encoding/hex"
	"errors"
	"testing"
)

func TestDurationEncoding(t *testing.T) {
	// Vectors produced by gocql's marshalDuration.
	for _, tc := range []struct {
		d   DurationValue
		hex string
	}{
		{DurationValue{1, 2, 3}, "020406"},
		{DurationValue{0, 0, 0}, "000000"},
		{DurationValue{-1, -1, -1}, "010101"},
		{DurationValue{14, 0, 5400000000000}, "1c00fc09d29229e000"},
		{DurationValue{0, 0, 64}, "00008080"},
		{DurationValue{0, 0, -65}, "00008081"},
		{DurationValue{2147483647, 2147483647, 9223372036854775807}, "f0fffffffef0fffffffefffffffffffffffffe"},
		{DurationValue{-2147483648, -2147483648, -9223372036854775808}, "f0fffffffff0ffffffffffffffffffffffffff"},
	} {
		if got := hex.EncodeToString(tc.d.encode()); got != tc.hex {
			t.Errorf("encode(%+v) = %s, want %s", tc.d, got, tc.hex)
		}
		b, _ := hex.DecodeString(tc.hex)
		if got, err := decodeDuration(b); err != nil || got != tc.d {
			t.Errorf("decode(%s) = %+v, %v", tc.hex, got, err)
		}
	}
}

func TestParseLiteral(t *testing.T) {
	typ := func(s string) Type {
		t.Helper()
		return mustParse(t, s)
	}
	for _, tc := range []struct {
		typ  string
		lit  LitKind
		text string
		want string // Format of the result
	}{
		{"text", LitString, "it's", "'it''s'"},
		{"ascii", LitString, "abc", "'abc'"},
		{"varchar", LitString, "", "''"},
		{"int", LitInteger, "-2147483648", "-2147483648"},
		{"bigint", LitInteger, "9223372036854775807", "9223372036854775807"},
		{"counter", LitInteger, "-5", "-5"},
		{"smallint", LitInteger, "-32768", "-32768"},
		{"tinyint", LitInteger, "127", "127"},
		{"tinyint", LitBlob, "0x05", "5"},
		{"varint", LitInteger, "-123456789012345678901234567890", "-123456789012345678901234567890"},
		{"decimal", LitInteger, "42", "42"},
		{"decimal", LitFloat, "1.50", "1.50"},
		{"decimal", LitFloat, "-1.5e-10", "-1.5E-10"},
		{"decimal", LitFloat, "1E+3", "1E+3"},
		{"decimal", LitFloat, ".5", "0.5"},
		{"double", LitFloat, "1.5", "1.5"},
		{"double", LitInteger, "3", "3"},
		{"double", LitFloat, "NaN", "NaN"},
		{"double", LitFloat, "-Infinity", "-Infinity"},
		{"double", LitFloat, "1e400", "Infinity"},
		{"float", LitFloat, "Infinity", "Infinity"},
		{"float", LitFloat, "0.1", "0.1"},
		{"float", LitFloat, "1e40", "Infinity"},
		{"boolean", LitBoolean, "TRUE", "true"},
		{"boolean", LitBoolean, "false", "false"},
		{"uuid", LitUUID, "550E8400-E29B-41D4-A716-446655440000", "550e8400-e29b-41d4-a716-446655440000"},
		{"timeuuid", LitUUID, "d2177dd0-eaa2-11de-a572-001b779c76e3", "d2177dd0-eaa2-11de-a572-001b779c76e3"},
		{"blob", LitBlob, "0xCAFE", "0xcafe"},
		{"blob", LitBlob, "0x", "0x"},
		{"inet", LitString, "127.0.0.1", "'127.0.0.1'"},
		{"inet", LitString, "::1", "'::1'"},
		{"inet", LitString, "::ffff:1.2.3.4", "'1.2.3.4'"},
		{"inet", LitString, "", "blobAsInet(0x)"},
		{"timestamp", LitString, "2011-02-03 04:05:00.000000+0000", "'2011-02-03 04:05:00.000000+0000'"},
		{"timestamp", LitString, "2011-02-03", "'2011-02-03 00:00:00.000000+0000'"},
		{"timestamp", LitString, "2011-02-03 04:05", "'2011-02-03 04:05:00.000000+0000'"},
		{"timestamp", LitString, "2011-02-03 04:05:06", "'2011-02-03 04:05:06.000000+0000'"},
		{"timestamp", LitString, "2011-02-03T04:05:06.789Z", "'2011-02-03 04:05:06.789000+0000'"},
		{"timestamp", LitString, "2011-02-03T04:05:06.7", "'2011-02-03 04:05:06.700000+0000'"},
		{"timestamp", LitString, "2011-02-03 04:05:06+0100", "'2011-02-03 03:05:06.000000+0000'"},
		{"timestamp", LitString, "2011-02-03 04:05:06 -02:30", "'2011-02-03 06:35:06.000000+0000'"},
		{"timestamp", LitString, "2011-02-03 04:05 GMT+01:00", "'2011-02-03 03:05:00.000000+0000'"},
		{"timestamp", LitString, "2011-02-03Z", "'2011-02-03 00:00:00.000000+0000'"},
		{"timestamp", LitString, "1299038700000", "'2011-03-02 04:05:00.000000+0000'"},
		{"timestamp", LitInteger, "-1", "'1969-12-31 23:59:59.999000+0000'"},
		{"timestamp", LitInteger, "0", "'1970-01-01 00:00:00.000000+0000'"},
		{"date", LitString, "2011-02-03", "'2011-02-03'"},
		{"date", LitString, "1900-02-28", "'1900-02-28'"},
		{"date", LitString, "-0001-01-01", "'-0001-01-01'"},
		{"date", LitString, "+10000-01-01", "'+10000-01-01'"},
		{"date", LitString, "2147483648", "'1970-01-01'"},
		{"date", LitInteger, "0", "'-5877641-06-23'"},
		{"date", LitInteger, "4294967295", "'+5881580-07-11'"},
		{"time", LitString, "08:12:54", "'08:12:54.000000000'"},
		{"time", LitString, "08:12:54.123", "'08:12:54.123000000'"},
		{"time", LitString, " 23:59:59.999999999 ", "'23:59:59.999999999'"},
		{"time", LitInteger, "1000", "'00:00:00.000001000'"},
		{"time", LitString, "86399999999999", "'23:59:59.999999999'"},
		{"duration", LitDuration, "1h30m", "1h30m"},
		{"duration", LitDuration, "12mo3d", "1y3d"},
		{"duration", LitDuration, "P1DT2H", "1d2h"},
		{"duration", LitDuration, "P1W", "7d"},
		{"duration", LitDuration, "P0001-02-03T04:05:06", "1y2mo3d4h5m6s"},
		{"duration", LitDuration, "1y2mo3w4d5h6m7s8ms9us10ns", "1y2mo25d5h6m7s8ms9us10ns"},
		{"duration", LitDuration, "1µs", "1us"},
		{"duration", LitDuration, "2US1NS", "2us1ns"},
		{"duration", LitDuration, "-3d", "-3d"},
		{"duration", LitDuration, "0s", "0s"},
		{"duration", LitDuration, "P", "0s"},
		{"duration", LitDuration, "2MS", "2ms"},
	} {
		t.Run(tc.typ+"/"+tc.text, func(t *testing.T) {
			ty := typ(tc.typ)
			v, err := ParseLiteral(ty, tc.lit, tc.text)
			if err != nil {
				t.Fatalf("ParseLiteral: %v", err)
			}
			if err := Validate(ty, v); err != nil {
				t.Fatalf("result invalid: %v", err)
			}
			if got := Format(ty, v); got != tc.want {
				t.Fatalf("Format = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseLiteralErrors(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		lit  LitKind
		text string
		want string
		cnst bool // a *ConstantError
	}{
		{"int", LitString, "3", `Invalid STRING constant (3) of type int`, true},
		{"uuid", LitString, "550e8400-e29b-41d4-a716-446655440000", `Invalid STRING constant (550e8400-e29b-41d4-a716-446655440000) of type uuid`, true},
		{"blob", LitString, "abc", `Invalid STRING constant (abc) of type blob`, true},
		{"int", LitFloat, "1.5", `Invalid FLOAT constant (1.5) of type int`, true},
		{"text", LitInteger, "1", `Invalid INTEGER constant (1) of type text`, true},
		{"boolean", LitInteger, "1", `Invalid INTEGER constant (1) of type boolean`, true},
		{"list<int>", LitInteger, "1", `Invalid INTEGER constant (1) of type list<int>`, true},
		{"tuple<int>", LitInteger, "1", `Invalid INTEGER constant (1) of type frozen<tuple<int>>`, true},
		{"text", LitBlob, "0x01", `Invalid HEX constant (0x01) of type text`, true},
		{"int", LitInteger, "3000000000", "Unable to make int from '3000000000'", false},
		{"bigint", LitInteger, "9223372036854775808", "Unable to make long from '9223372036854775808'", false},
		{"smallint", LitInteger, "32768", "Unable to make short from '32768'", false},
		{"tinyint", LitInteger, "-129", "Unable to make byte from '-129'", false},
		{"tinyint", LitBlob, "0x0102", "Expected 1 byte for a tinyint (2)", false},
		{"decimal", LitFloat, "NaN", "Unable to make BigDecimal from 'NaN'", false},
		{"ascii", LitString, "é", "Invalid ASCII character in string literal: 'é'", false},
		{"text", LitString, "\xff", "String didn't validate.", false},
		{"inet", LitString, "localhost", "Unable to make inet address from 'localhost'", false},
		{"inet", LitString, "1.2.3", "Unable to make inet address from '1.2.3'", false},
		{"timestamp", LitString, "2011-02-30", "Unable to coerce '2011-02-30' to a formatted date (long)", false},
		{"timestamp", LitString, "2011-02-03 25:00", "Unable to coerce '2011-02-03 25:00' to a formatted date (long)", false},
		{"timestamp", LitString, "2011-02-03 04:05 PST", "Unable to coerce '2011-02-03 04:05 PST' to a formatted date (long)", false},
		{"timestamp", LitString, "99999999999999999999", "Unable to make long (for date) from: '99999999999999999999'", false},
		{"date", LitString, "2011-2-3", "Unable to coerce '2011-2-3' to a formatted date (long)", false},
		{"date", LitString, "2011-02-29", "Unable to coerce '2011-02-29' to a formatted date (long)", false},
		{"date", LitString, "10000-01-01", "Unable to coerce '10000-01-01' to a formatted date (long)", false},
		{"date", LitString, "-5877642-01-01", "Input date -5877642-01-01 is less than min supported date -5877641-06-23T00:00Z", false},
		{"date", LitString, "+5881581-01-01", "Input date +5881581-01-01 is greater than max supported date +5881580-07-11T00:00Z", false},
		{"date", LitInteger, "-1", "Unable to make unsigned int (for date) from: '-1'", false},
		{"date", LitInteger, "4294967296", "Unable to make unsigned int (for date) from: '4294967296'", false},
		{"time", LitInteger, "86400000000000", "Unable to make long (for time) from: '86400000000000'", false},
		{"time", LitString, "24:00:00", "(TimeType) Unable to coerce '24:00:00' to a formatted time (long)", false},
		{"time", LitString, "12:00:00.", "(TimeType) Unable to coerce '12:00:00.' to a formatted time (long)", false},
		{"time", LitString, "12:00:00.1234567890", "(TimeType) Unable to coerce '12:00:00.1234567890' to a formatted time (long)", false},
		{"time", LitString, "12:00", "(TimeType) Unable to coerce '12:00' to a formatted time (long)", false},
		{"uuid", LitUUID, "550e8400-e29b-41d4-a716-44665544000g", "Unable to make UUID from '550e8400-e29b-41d4-a716-44665544000g'", false},
		{"timeuuid", LitUUID, "550e8400-e29b-41d4-a716-446655440000", "TimeUUID supports only version 1 UUIDs", false},
		{"blob", LitBlob, "0x123", "cannot parse '0x123' as hex bytes", false},
		{"boolean", LitBoolean, "yes", "Unable to make boolean from 'yes'", false},
		{"duration", LitInteger, "5", "Unable to convert '5' to a duration", false},
		{"duration", LitDuration, "1h1h", "Invalid duration. The hours are specified multiple times", false},
		{"duration", LitDuration, "1m1h", "Invalid duration. The minutes should be after hours", false},
		{"duration", LitDuration, "1x", "Unable to convert '1x' to a duration", false},
		{"duration", LitDuration, "P1M1Y", "Unable to convert 'P1M1Y' to a duration", false},
		{"duration", LitDuration, "2147483648mo", "Invalid duration. The total number of months must be less or equal to 2147483647", false},
		{"duration", LitDuration, "1y2147483647mo", "Invalid duration. The total number of months must be less or equal to 2147483647", false},
		{"duration", LitDuration, "306783379w", "Invalid duration. The total number of days must be less or equal to 2147483647", false},
		{"duration", LitDuration, "2562048h", "Invalid duration. The total number of nanoseconds must be less or equal to 9223372036854775807", false},
	} {
		t.Run(tc.typ+"/"+tc.text, func(t *testing.T) {
			v, err := ParseLiteral(mustParse(t, tc.typ), tc.lit, tc.text)
			if err == nil {
				t.Fatalf("ParseLiteral accepted it: %x", v)
			}
			if err.Error() != tc.want {
				t.Errorf("error %q, want %q", err, tc.want)
			}
			var ce *ConstantError
			if errors.As(err, &ce) != tc.cnst {
				t.Errorf("ConstantError: %v, want %v", !tc.cnst, tc.cnst)
			}
			if tc.cnst && !errors.Is(err, ErrInvalidConstant) || !tc.cnst && !errors.Is(err, ErrInvalidValue) {
				t.Errorf("error %v matches the wrong sentinel", err)
			}
		})
	}
	var ce *ConstantError
	_, err := ParseLiteral(Scalar(Int), LitString, "3")
	if !errors.As(err, &ce) || ce.Message("col") != `Invalid STRING constant (3) for "col" of type int` {
		t.Fatalf("Message = %v", err)
	}
}
