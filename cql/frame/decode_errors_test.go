package frame

import (
	"errors"
	"strings"
	"testing"
)

// TestDecodeErrors checks that malformed bodies fail with ErrMalformed and a
// message that says what was wrong.
func TestDecodeErrors(t *testing.T) {
	query := func(b string) func(*testing.T) error { return decodeHex(DecodeQuery, b) }
	batch := func(b string) func(*testing.T) error { return decodeHex(DecodeBatch, b) }
	result := func(b string) func(*testing.T) error { return decodeHex(DecodeResult, b) }
	tests := []struct {
		name   string
		decode func(*testing.T) error
		want   string
	}{
		{"query-short-string", query("0000000c 616263"),
			"QUERY: frame: malformed: read [long string]: need 12 bytes, have 3"},
		{"query-negative-string", query("ffffffff"), "read [long string]: negative length -1"},
		{"query-no-params", query("00000001 78"), "read consistency: need 2 bytes, have 0"},
		{"query-bad-consistency", query("00000001 78 0042 00"), "consistency: unknown consistency level 0x0042"},
		{"query-v5-flag", query("00000001 78 0001 80"), "bits 0x80 are not defined in protocol v4"},
		{"query-bad-value-length", query("00000001 78 0001 01 0002 00000000 fffffffd"),
			"QUERY: value 1 of 2: frame: malformed: read [value]: invalid length -3"},
		{"query-short-value", query("00000001 78 0001 01 0001 00000004 0102"), "read [value]: need 4 bytes, have 2"},
		{"query-short-name", query("00000001 78 0001 41 0001 0005 6162"), "read [string]: need 5 bytes, have 2"},
		{"query-short-timestamp", query("00000001 78 0001 20 0102"), "read default timestamp: need 8 bytes, have 2"},
		{"execute-short-id", decodeHex(DecodeExecute, "0004 ab"),
			"EXECUTE: frame: malformed: read prepared id: need 4 bytes, have 1"},
		{"startup-truncated-map", decodeHex(DecodeStartup, "0002 0001 61 0001 62"),
			"STARTUP: frame: malformed: read [string] length: need 2 bytes, have 0"},
		{"batch-bad-type", batch("03 0000 0001 00"), "unknown batch type 3"},
		{"batch-bad-kind", batch("00 0001 02"), "BATCH: statement 0 of 1: frame: malformed: statement kind 2, want 0 (query) or 1 (prepared id)"},
		{"batch-names", batch("00 0000 0001 40"), "names for values are not supported in batches"},
		{"batch-bad-flags", batch("00 0000 0001 01"), "only 0x10 and 0x20 are allowed"},
		{"register-short", decodeHex(DecodeRegister, "0003 0001 61"),
			"REGISTER: frame: malformed: read [string] length"},
		{"auth-response-short", decodeHex(DecodeAuthResponse, "000000"),
			"read token length: need 4 bytes, have 3"},
		{"payload-short", func(t *testing.T) error {
			_, err := DecodeRequest(Frame{Header: Header{Flags: FlagCustomPayload, Opcode: OpQuery}, Body: unhex(t, "0001 0001")})
			return err
		}, "QUERY: custom payload: frame: malformed: read [string]: need 1 bytes, have 0"},
		{"result-unknown-kind", result("00000009"), "unknown result kind 0x0009"},
		{"rows-negative-columns", result("00000002 00000000 ffffffff"), "column count: negative count -1"},
		{"rows-unknown-type", result("00000002 00000001 00000001 0001 61 0001 62 0001 63 0077"), "read [option]: unknown type id 0x0077"},
		{"rows-lying-count", result("00000002 00000004 00000001 7fffffff"), "2147483647 rows of 1 columns need at least"},
		{"rows-empty-columns-bomb", result("00000002 00000004 00000000 7fffffff"), "2147483647 rows of 0 columns"},
		{"rows-deep-type", result("00000002 00000001 00000001 0001 61 0001 62 0001 63" + strings.Repeat("0020", 100) + "0009"),
			"types nested deeper than 64"},
		{"event-bad-inet", decodeHex(DecodeEvent, "000d 5354415455535f4348414e4745 0002 5550 05 0000000000 00000001"),
			"read [inet]: address size 5, want 4 or 16"},
		{"event-unknown-target", decodeHex(DecodeEvent, "000d 534348454d415f4348414e4745 0001 78 0001 59 0001 6b"),
			`unknown schema change target "Y"`},
		{"lz4-short", func(*testing.T) error { _, err := (LZ4{}).Decode(nil, []byte{0, 0}); return err },
			"lz4: body of 2 bytes is shorter than its 4-byte length prefix"},
		{"lz4-over-limit", func(*testing.T) error {
			_, err := (LZ4{MaxDecodedBytes: 100}).Decode(nil, []byte{0, 0, 0, 101, 0})
			return err
		},
			"lz4: uncompressed length 101 exceeds the limit of 100"},
		{"lz4-bomb", func(*testing.T) error {
			_, err := (LZ4{}).Decode(nil, []byte{0x0f, 0xff, 0xff, 0xff, 0x00})
			return err
		},
			"is impossible for a 1-byte block"},
		{"lz4-wrong-length", func(t *testing.T) error {
			b, _ := (LZ4{}).Encode(nil, []byte("hello hello hello hello"))
			b[3]++
			_, err := (LZ4{}).Decode(nil, b)
			return err
		}, "lz4:"},
		{"snappy-over-limit", func(*testing.T) error { _, err := (Snappy{MaxDecodedBytes: 10}).Decode(nil, []byte{11, 0}); return err },
			"snappy: uncompressed length 11 exceeds the limit of 10"},
		{"snappy-bomb", func(*testing.T) error { _, err := (Snappy{}).Decode(nil, []byte{0xff, 0xff, 0xff, 0x7f}); return err },
			"impossible for a 4-byte block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decode(t)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// decodeHex returns a case of TestDecodeErrors: decode applied to the body
// written in hex.
func decodeHex[M any](decode func([]byte) (M, error), hexBody string) func(*testing.T) error {
	return func(t *testing.T) error {
		_, err := decode(unhex(t, hexBody))
		return err
	}
}
