package frame

import (
	"net/netip"
	"testing"

	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// cmpOpts compares decoded messages with the ones encoded: nil and empty
// slices and maps are the same on the wire.
var cmpOpts = []cmp.Option{cmpopts.EquateEmpty(), cmpopts.EquateComparable(netip.AddrPort{})}

type namedRequest struct {
	name string
	req  Request
}

func int32Bytes(v int32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }

// sampleRequests covers every request and every optional section. Each is
// in the form the decoder produces (PageSize -1 when absent, and so on), so
// that decode(encode(x)) == x.
func sampleRequests() []namedRequest {
	five := []Value{BytesValue(int32Bytes(1)), NullValue, UnsetValue, BytesValue([]byte{}), BytesValue([]byte("text"))}
	return []namedRequest{
		{"startup", &Startup{Options: map[string]string{"CQL_VERSION": "3.0.0", "DRIVER_NAME": "gocql", "COMPRESSION": "lz4"}}},
		{"startup-empty", &Startup{}},
		{"options", &Options{}},
		{"query-bare", &Query{Query: "SELECT * FROM system.local WHERE key='local'", Params: QueryParams{Consistency: One, PageSize: -1}}},
		{"query-all-flags", &Query{
			Query: "INSERT INTO ks.t (a, b, c, d, e) VALUES (?, ?, ?, ?, ?)",
			Params: QueryParams{
				Consistency: LocalQuorum, Flags: 0x7F, Values: five, Names: []string{"a", "b", "c", "d", "e"},
				SkipMetadata: true, PageSize: 5000, PagingState: []byte{1, 2, 3},
				SerialConsistency: LocalSerial, HasSerialConsistency: true,
				Timestamp: 1700000000000000, HasTimestamp: true,
			},
			CustomPayload: map[string][]byte{"k": []byte("v"), "null": nil},
		}},
		{"query-values", &Query{Query: "SELECT v FROM t WHERE k = ?", Params: QueryParams{
			Consistency: Quorum, Flags: QueryFlagValues | QueryFlagPageSize, Values: five, PageSize: 100}}},
		{"prepare", &Prepare{Query: "SELECT * FROM ks.t WHERE k = ?"}},
		{"prepare-payload", &Prepare{Query: "SELECT 1", CustomPayload: map[string][]byte{}}},
		{"execute", &Execute{ID: []byte{0xde, 0xad, 0xbe, 0xef}, Params: QueryParams{
			Consistency: One, Flags: QueryFlagValues | QueryFlagSkipMetadata | QueryFlagDefaultTimestamp,
			Values: five[:2], SkipMetadata: true, PageSize: -1, Timestamp: -5, HasTimestamp: true}}},
		{"execute-empty-id", &Execute{ID: []byte{}, Params: QueryParams{Consistency: Any, PageSize: -1}}},
		{"batch", &Batch{
			Type: BatchUnlogged,
			Statements: []BatchStatement{
				{Query: "INSERT INTO t (k) VALUES (?)", Values: five[:1]},
				{Prepared: true, ID: []byte{9, 9}, Values: five},
				{Query: "DELETE FROM t WHERE k = 1", Values: []Value{}},
			},
			Consistency: Quorum, Flags: QueryFlagSerialConsistency | QueryFlagDefaultTimestamp,
			SerialConsistency: Serial, HasSerialConsistency: true, Timestamp: 42, HasTimestamp: true,
			CustomPayload: map[string][]byte{"x": {0}},
		}},
		{"batch-counter-bare", &Batch{Type: BatchCounter, Statements: []BatchStatement{}, Consistency: One}},
		{"register", &Register{Events: []string{EventTopologyChange, EventStatusChange, EventSchemaChange}}},
		{"auth-response", &AuthResponse{Token: []byte("\x00cassandra\x00cassandra")}},
		{"auth-response-null", &AuthResponse{}},
	}
}

type namedResponse struct {
	name string
	resp Response
}

var (
	intT  = cqltype.Scalar(cqltype.Int)
	textT = cqltype.Scalar(cqltype.Varchar)
)

// allTypes lists a column of every type shape, as the decoder returns them
// (collections unfrozen, tuples frozen).
func allTypes() []ColumnSpec {
	kinds := []cqltype.Kind{cqltype.Ascii, cqltype.Bigint, cqltype.Blob, cqltype.Boolean, cqltype.Counter,
		cqltype.Decimal, cqltype.Double, cqltype.Float, cqltype.Int, cqltype.Timestamp, cqltype.UUID,
		cqltype.Varchar, cqltype.Varint, cqltype.Timeuuid, cqltype.Inet, cqltype.Date, cqltype.Time,
		cqltype.Smallint, cqltype.Tinyint, cqltype.Duration}
	var cols []ColumnSpec
	for _, k := range kinds {
		cols = append(cols, ColumnSpec{Keyspace: "ks", Table: "t", Name: "c_" + cqltype.Scalar(k).String(), Type: cqltype.Scalar(k)})
	}
	udt := cqltype.Type{Kind: cqltype.UDT, Keyspace: "ks", Name: "addr", Fields: []cqltype.Field{
		{Name: "street", Type: textT}, {Name: "nums", Type: cqltype.ListOf(intT)}}}
	complex := []cqltype.Type{
		cqltype.ListOf(intT),
		cqltype.SetOf(textT),
		cqltype.MapOf(textT, cqltype.ListOf(cqltype.MapOf(intT, textT))),
		cqltype.TupleOf(intT, textT, cqltype.TupleOf(intT)),
		udt,
		cqltype.ListOf(udt),
		{Kind: cqltype.Custom, Custom: "org.example.MyType"},
	}
	for i, t := range complex {
		cols = append(cols, ColumnSpec{Keyspace: "ks2", Table: "t2", Name: "x" + string(rune('a'+i)), Type: t})
	}
	return cols
}

func sampleResponses() []namedResponse {
	cols := allTypes()
	oneInt := RowsMetadata{GlobalTableSpec: true, Keyspace: "ks", Table: "t",
		Columns: []ColumnSpec{{Keyspace: "ks", Table: "t", Name: "v", Type: intT}}, ColumnCount: 1}
	var wideRow [][]byte
	for i := range cols {
		if i%3 == 0 {
			wideRow = append(wideRow, nil)
		} else {
			wideRow = append(wideRow, []byte{byte(i)})
		}
	}
	return []namedResponse{
		{"ready", &Ready{}},
		{"authenticate", &Authenticate{Authenticator: "org.apache.cassandra.auth.PasswordAuthenticator"}},
		{"auth-challenge", &AuthChallenge{Token: []byte{1, 2}}},
		{"auth-success-null", &AuthSuccess{}},
		{"auth-success", &AuthSuccess{Token: []byte{}}},
		{"supported", &Supported{Options: map[string][]string{
			"CQL_VERSION": {"3.4.5"}, "COMPRESSION": {"lz4", "snappy"}, "PROTOCOL_VERSIONS": {"4/v4"}, "EMPTY": {}}}},
		{"error-server", &Error{Code: CodeServerError, Message: "boom"}},
		{"error-protocol", &Error{Code: CodeProtocolError, Message: "Invalid or unsupported protocol version (66); supported versions are (4/v4)"}},
		{"error-unavailable", &Error{Code: CodeUnavailable, Message: "u", Consistency: Quorum, Required: 2, Alive: 1}},
		{"error-write-timeout", &Error{Code: CodeWriteTimeout, Message: "wt", Consistency: One, Received: 0, BlockFor: 1, WriteType: WriteTypeCAS}},
		{"error-read-timeout", &Error{Code: CodeReadTimeout, Message: "rt", Consistency: All, Received: 1, BlockFor: 3, DataPresent: true}},
		{"error-read-failure", &Error{Code: CodeReadFailure, Message: "rf", Consistency: Two, Received: 1, BlockFor: 2, NumFailures: 1, DataPresent: false}},
		{"error-write-failure", &Error{Code: CodeWriteFailure, Message: "wf", Consistency: LocalOne, Received: 1, BlockFor: 2, NumFailures: 3, WriteType: WriteTypeBatchLog}},
		{"error-function-failure", &Error{Code: CodeFunctionFailure, Message: "ff", Keyspace: "ks", Function: "f", ArgTypes: []string{"int", "text"}}},
		{"error-already-exists", &Error{Code: CodeAlreadyExists, Message: "ae", Keyspace: "ks", Table: ""}},
		{"error-unprepared", &Error{Code: CodeUnprepared, Message: "up", UnpreparedID: []byte{1, 2, 3}}},
		{"error-invalid", &Error{Code: CodeInvalid, Message: "unconfigured table peers_v2"}},
		{"void", &VoidResult{}},
		{"set-keyspace", &SetKeyspaceResult{Keyspace: "ks"}},
		{"rows-one-int", &RowsResult{Metadata: oneInt, Rows: [][][]byte{{int32Bytes(42)}, {nil}, {{}}}}},
		{"rows-all-types", &RowsResult{Metadata: RowsMetadata{Columns: cols, ColumnCount: len(cols), PagingState: []byte("next")},
			Rows: [][][]byte{wideRow, wideRow}}},
		{"rows-no-metadata", &RowsResult{Metadata: RowsMetadata{NoMetadata: true, ColumnCount: 2, PagingState: []byte{}},
			Rows: [][][]byte{{{1}, nil}}}},
		{"rows-empty", &RowsResult{Metadata: oneInt}},
		{"prepared", &PreparedResult{
			ID: []byte{0xca, 0xfe},
			Metadata: PreparedMetadata{GlobalTableSpec: true, Keyspace: "ks", Table: "t",
				Columns:   []ColumnSpec{{Keyspace: "ks", Table: "t", Name: "k", Type: intT}, {Keyspace: "ks", Table: "t", Name: "c", Type: textT}},
				PKIndices: []uint16{0}},
			ResultMetadata: oneInt,
		}},
		{"prepared-dml", &PreparedResult{
			ID:             []byte{1},
			Metadata:       PreparedMetadata{Columns: cols[:3], PKIndices: []uint16{2, 0}},
			ResultMetadata: RowsMetadata{NoMetadata: true},
		}},
		{"schema-keyspace", &SchemaChangeResult{SchemaChange{Change: ChangeCreated, Target: TargetKeyspace, Keyspace: "ks"}}},
		{"schema-table", &SchemaChangeResult{SchemaChange{Change: ChangeUpdated, Target: TargetTable, Keyspace: "ks", Name: "t"}}},
		{"schema-type", &SchemaChangeResult{SchemaChange{Change: ChangeDropped, Target: TargetType, Keyspace: "ks", Name: "ty"}}},
		{"schema-function", &SchemaChangeResult{SchemaChange{Change: ChangeCreated, Target: TargetFunction, Keyspace: "ks", Name: "f", ArgTypes: []string{"int"}}}},
		{"schema-aggregate", &SchemaChangeResult{SchemaChange{Change: ChangeCreated, Target: TargetAggregate, Keyspace: "ks", Name: "a", ArgTypes: []string{}}}},
		{"event-topology", &Event{Type: EventTopologyChange, Change: TopologyNewNode, Addr: netip.MustParseAddrPort("10.0.0.7:9042")}},
		{"event-status-v6", &Event{Type: EventStatusChange, Change: StatusDown, Addr: netip.MustParseAddrPort("[2001:db8::1]:19042")}},
		{"event-schema", &Event{Type: EventSchemaChange, Schema: SchemaChange{Change: ChangeDropped, Target: TargetTable, Keyspace: "ks", Name: "t"}}},
	}
}
