package frame

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// unhex decodes hex written with spaces and | separators for readability.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// TestGoldenResponses checks encodings byte for byte against the layouts of
// native_protocol_v4.spec.
func TestGoldenResponses(t *testing.T) {
	tests := []struct {
		name   string
		stream int16
		resp   Response
		want   string
	}{
		{"ready", 5, &Ready{},
			"84 00 0005 02 00000000"},
		{"error-invalid", 1, &Error{Code: CodeInvalid, Message: "bad"},
			"84 00 0001 00 00000009 | 00002200 | 0003 626164"},
		{"error-unavailable", 2, &Error{Code: CodeUnavailable, Message: "", Consistency: Quorum, Required: 3, Alive: 1},
			"84 00 0002 00 00000010 | 00001000 | 0000 | 0004 | 00000003 | 00000001"},
		{"error-unprepared", 2, &Error{Code: CodeUnprepared, Message: "", UnpreparedID: []byte{0xab, 0xcd}},
			"84 00 0002 00 0000000a | 00002500 | 0000 | 0002 abcd"},
		{"rows-one-int", 3, &RowsResult{
			Metadata: RowsMetadata{GlobalTableSpec: true, Keyspace: "ks", Table: "t",
				Columns: []ColumnSpec{{Name: "v", Type: intT}}},
			Rows: [][][]byte{{int32Bytes(42)}}},
			"84 00 0003 08 00000024" +
				"| 00000002" + // kind Rows
				"| 00000001 | 00000001" + // flags Global_tables_spec, 1 column
				"| 0002 6b73 | 0001 74" + // ks, t
				"| 0001 76 | 0009" + // v int
				"| 00000001 | 00000004 0000002a"}, // 1 row: 42
		{"set-keyspace", 4, &SetKeyspaceResult{Keyspace: "ks"},
			"84 00 0004 08 00000008 | 00000003 | 0002 6b73"},
		{"supported", 0, &Supported{Options: map[string][]string{"COMPRESSION": {"lz4"}, "CQL_VERSION": {"3.4.5"}}},
			"84 00 0000 06 0000002c | 0002" +
				"| 000b 434f4d5052455353494f4e | 0001 0003 6c7a34" +
				"| 000b 43514c5f56455253494f4e | 0001 0005 332e342e35"},
		{"event-status", -1, &Event{Type: EventStatusChange, Change: StatusUp, Addr: netip.MustParseAddrPort("127.0.0.1:9042")},
			"84 00 ffff 0c 0000001c | 000d 5354415455535f4348414e4745 | 0002 5550 | 04 7f000001 00002352"},
		{"prepared", 6, &PreparedResult{ID: []byte{1},
			Metadata:       PreparedMetadata{GlobalTableSpec: true, Keyspace: "k", Table: "t", Columns: []ColumnSpec{{Name: "a", Type: intT}}, PKIndices: []uint16{0}},
			ResultMetadata: RowsMetadata{NoMetadata: true}},
			"84 00 0006 08 00000028 | 00000004 | 0001 01" +
				"| 00000001 | 00000001 | 00000001 | 0000 | 0001 6b | 0001 74 | 0001 61 | 0009" +
				"| 00000004 | 00000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendResponse(nil, Header{Stream: tc.stream}, nil, nil, tc.resp)
			if err != nil {
				t.Fatal(err)
			}
			if want := unhex(t, tc.want); !bytes.Equal(got, want) {
				t.Fatalf("got  %x\nwant %x", got, want)
			}
		})
	}
}

// TestGoldenRequests decodes requests written by hand from the spec, shaped
// like what gocql and the Python driver send.
func TestGoldenRequests(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Request
	}{
		{"options", "04 00 0000 05 00000000", &Options{}},
		{"startup", "04 00 0001 01 00000016 | 0001 | 000b 43514c5f56455253494f4e | 0005 332e302e30",
			&Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}},
		{"query-page-size", "04 00 0002 07 00000013 | 00000008 53454c4543542031 | 0001 | 04 | 00001388",
			&Query{Query: "SELECT 1", Params: QueryParams{Consistency: One, Flags: QueryFlagPageSize, PageSize: 5000}}},
		{"execute-values", "04 00 0003 0a 00000022 | 0002 abcd | 0006 | 25 | 0003 00000001 2a ffffffff fffffffe | 00001388 | 0000000000000064",
			&Execute{ID: []byte{0xab, 0xcd}, Params: QueryParams{Consistency: LocalQuorum,
				Flags:  QueryFlagValues | QueryFlagPageSize | QueryFlagDefaultTimestamp,
				Values: []Value{BytesValue([]byte{42}), NullValue, UnsetValue}, PageSize: 5000, Timestamp: 100, HasTimestamp: true}}},
		{"batch", "04 00 0004 0d 0000001a | 01 | 0002 | 00 00000001 78 0000 | 01 0001 09 0001 00000000 | 0004 | 10 | 0008",
			&Batch{Type: BatchUnlogged, Statements: []BatchStatement{
				{Query: "x"}, {Prepared: true, ID: []byte{9}, Values: []Value{BytesValue([]byte{})}}},
				Consistency: Quorum, Flags: QueryFlagSerialConsistency, SerialConsistency: Serial, HasSerialConsistency: true}},
		{"query-payload", "04 04 0005 07 00000012 | 0001 0001 6b 00000001 76 | 00000001 78 | 0000 | 00",
			&Query{Query: "x", Params: QueryParams{Consistency: Any, PageSize: -1}, CustomPayload: map[string][]byte{"k": []byte("v")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := unhex(t, tc.in)
			f, got := readRequest(t, in)
			if diff := cmp.Diff(tc.want, got, cmpOpts...); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			// The client encoder must produce the same bytes.
			if re := reencodeRequest(t, f.Header, got); !bytes.Equal(re, in) {
				t.Fatalf("re-encoded\n%x\nwant\n%x", re, in)
			}
		})
	}
}

// readRequest reads the one request frame in b and decodes it, failing t on
// either error.
func readRequest(t *testing.T, b []byte) (Frame, Request) {
	t.Helper()
	f, err := ReadFrame(bytes.NewReader(b), DefaultMaxBodyBytes, nil)
	if err != nil {
		t.Fatalf("ReadFrame: %v", err)
	}
	req, err := DecodeRequest(f)
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	return f, req
}

// reencodeRequest encodes req as a client does under the header h it was
// read with. The custom payload flag is cleared: a decoded payload lives in
// req and AppendRequest sets the flag again when there is one.
func reencodeRequest(t *testing.T, h Header, req Request) []byte {
	t.Helper()
	h.Flags &^= FlagCustomPayload
	out, err := AppendRequest(nil, h, nil, req)
	if err != nil {
		t.Fatalf("re-encode %T: %v", req, err)
	}
	return out
}
