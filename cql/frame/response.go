package frame

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"

	"github.com/cosmosd/cosmosd/cqltype"
)

// This file is the server side of responses: their types and encoders. The
// client side (decoders) is in client_response.go.

// Response is a response message: *Error, *Ready, *Authenticate, *Supported,
// *AuthChallenge, *AuthSuccess, *Event, or a result (*VoidResult,
// *RowsResult, *SetKeyspaceResult, *PreparedResult, *SchemaChangeResult).
type Response interface {
	Opcode() Opcode
	// AppendMessage appends the message body. It does not fail; text too long
	// for its length prefix is truncated (see the package doc).
	AppendMessage(dst []byte) []byte
}

// Error is an ERROR response [V4 §9]. The extra fields are written only for
// the codes that carry them:
//
//	Unavailable:     Consistency, Required, Alive
//	WriteTimeout:    Consistency, Received, BlockFor, WriteType
//	ReadTimeout:     Consistency, Received, BlockFor, DataPresent
//	ReadFailure:     Consistency, Received, BlockFor, NumFailures, DataPresent
//	WriteFailure:    Consistency, Received, BlockFor, NumFailures, WriteType
//	FunctionFailure: Keyspace, Function, ArgTypes
//	AlreadyExists:   Keyspace, Table ("" for a keyspace)
//	Unprepared:      UnpreparedID
//
// *Error also implements error, so client code can return it as is.
type Error struct {
	Code    ErrorCode
	Message string

	Consistency  Consistency
	Required     int32
	Alive        int32
	Received     int32
	BlockFor     int32
	NumFailures  int32
	DataPresent  bool
	WriteType    string
	Keyspace     string
	Table        string
	Function     string
	ArgTypes     []string
	UnpreparedID []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("cql error 0x%04x (%s): %s", int32(e.Code), e.Code, e.Message)
}

// Ready is READY [V4 §4.2.2].
type Ready struct{}

// Authenticate is AUTHENTICATE [V4 §4.2.3]. gocql accepts only approved
// class names, e.g. "org.apache.cassandra.auth.PasswordAuthenticator".
type Authenticate struct {
	Authenticator string
}

// Supported is SUPPORTED [V4 §4.2.4]. The Python driver needs the
// CQL_VERSION and COMPRESSION keys (an empty list is fine).
type Supported struct {
	Options map[string][]string
}

// AuthChallenge is AUTH_CHALLENGE [V4 §4.2.7]; nil Token is sent as null.
type AuthChallenge struct {
	Token []byte
}

// AuthSuccess is AUTH_SUCCESS [V4 §4.2.8]; nil Token is sent as null.
type AuthSuccess struct {
	Token []byte
}

// VoidResult is RESULT Void.
type VoidResult struct{}

// SetKeyspaceResult is RESULT Set_keyspace, the answer to USE.
type SetKeyspaceResult struct {
	Keyspace string
}

// ColumnSpec describes a result column or a bind marker.
type ColumnSpec struct {
	Keyspace string
	Table    string
	Name     string
	Type     cqltype.Type
}

// RowsMetadata is the <metadata> of a Rows result, and the <result_metadata>
// of a Prepared result [V4 §4.2.5.2].
type RowsMetadata struct {
	// GlobalTableSpec writes Keyspace and Table once for all columns instead
	// of each column's own; decoding copies them into every column.
	GlobalTableSpec bool
	Keyspace        string
	Table           string
	Columns         []ColumnSpec
	// ColumnCount is the number of columns in each row. Encoding uses it
	// only when Columns is empty (e.g. with NoMetadata); decoding always
	// sets it.
	ColumnCount int
	// PagingState, when non-nil, sets Has_more_pages and is sent.
	PagingState []byte
	// NoMetadata sends no table spec and no column specs, only the count.
	// Send it only when the request set Skip_metadata.
	NoMetadata bool
}

func (m *RowsMetadata) columnCount() int {
	if len(m.Columns) > 0 {
		return len(m.Columns)
	}
	return m.ColumnCount
}

// RowsResult is RESULT Rows. Each row holds one cell per column; a nil cell
// is null. Rows with too few cells are padded with nulls and extra cells are
// dropped, so the frame always matches the metadata.
type RowsResult struct {
	Metadata RowsMetadata
	Rows     [][][]byte
}

// PreparedMetadata is the <metadata> of a Prepared result: the bind markers.
type PreparedMetadata struct {
	GlobalTableSpec bool
	Keyspace        string
	Table           string
	Columns         []ColumnSpec
	// PKIndices maps each partition-key column, in order, to the index of its
	// bind marker; leave it empty if some partition-key column is not bound.
	PKIndices []uint16
}

// PreparedResult is RESULT Prepared (v4: no result_metadata_id).
type PreparedResult struct {
	ID       []byte
	Metadata PreparedMetadata
	// ResultMetadata describes the rows an EXECUTE will return; for
	// non-SELECT statements send NoMetadata with no columns.
	ResultMetadata RowsMetadata
}

// SchemaChange is the body of RESULT Schema_change and of the SCHEMA_CHANGE
// event: Change is CREATED/UPDATED/DROPPED, Target KEYSPACE/TABLE/TYPE/
// FUNCTION/AGGREGATE. Name is the table, type, function or aggregate (unused
// for KEYSPACE); ArgTypes are the argument types of a function or aggregate.
// gocql panics on an unknown target.
type SchemaChange struct {
	Change   string
	Target   string
	Keyspace string
	Name     string
	ArgTypes []string
}

// SchemaChangeResult is RESULT Schema_change.
type SchemaChangeResult struct {
	SchemaChange
}

// Event is EVENT [V4 §4.2.6]; send it on stream -1.
type Event struct {
	// Type is EventTopologyChange, EventStatusChange or EventSchemaChange.
	Type string
	// Change and Addr describe topology and status changes: Change is
	// NEW_NODE/REMOVED_NODE or UP/DOWN; Addr is the node's native address.
	Change string
	Addr   netip.AddrPort
	// Schema describes a schema change.
	Schema SchemaChange
}

func (*Error) Opcode() Opcode              { return OpError }
func (*Ready) Opcode() Opcode              { return OpReady }
func (*Authenticate) Opcode() Opcode       { return OpAuthenticate }
func (*Supported) Opcode() Opcode          { return OpSupported }
func (*AuthChallenge) Opcode() Opcode      { return OpAuthChallenge }
func (*AuthSuccess) Opcode() Opcode        { return OpAuthSuccess }
func (*VoidResult) Opcode() Opcode         { return OpResult }
func (*SetKeyspaceResult) Opcode() Opcode  { return OpResult }
func (*RowsResult) Opcode() Opcode         { return OpResult }
func (*PreparedResult) Opcode() Opcode     { return OpResult }
func (*SchemaChangeResult) Opcode() Opcode { return OpResult }
func (*Event) Opcode() Opcode              { return OpEvent }

// AppendMessage appends the ERROR body. A code outside the v4 table is sent
// as Server error, since gocql panics on codes it does not know.
func (e *Error) AppendMessage(dst []byte) []byte {
	code, msg := e.Code, e.Message
	if !code.Known() {
		code, msg = CodeServerError, fmt.Sprintf("(error code 0x%04x) %s", int32(e.Code), msg)
	}
	dst = appendInt(dst, int32(code))
	dst = appendString(dst, msg)
	switch code {
	case CodeUnavailable:
		dst = appendShort(dst, uint16(e.Consistency))
		dst = appendInt(dst, e.Required)
		dst = appendInt(dst, e.Alive)
	case CodeWriteTimeout:
		dst = e.appendCounts(dst)
		dst = appendString(dst, e.WriteType)
	case CodeReadTimeout:
		dst = e.appendCounts(dst)
		dst = append(dst, boolByte(e.DataPresent))
	case CodeReadFailure:
		dst = e.appendCounts(dst)
		dst = appendInt(dst, e.NumFailures)
		dst = append(dst, boolByte(e.DataPresent))
	case CodeWriteFailure:
		dst = e.appendCounts(dst)
		dst = appendInt(dst, e.NumFailures)
		dst = appendString(dst, e.WriteType)
	case CodeFunctionFailure:
		dst = appendString(dst, e.Keyspace)
		dst = appendString(dst, e.Function)
		dst = appendStringList(dst, e.ArgTypes)
	case CodeAlreadyExists:
		dst = appendString(dst, e.Keyspace)
		dst = appendString(dst, e.Table)
	case CodeUnprepared:
		dst = appendShortBytes(dst, e.UnpreparedID)
	}
	return dst
}

func (e *Error) appendCounts(dst []byte) []byte {
	dst = appendShort(dst, uint16(e.Consistency))
	dst = appendInt(dst, e.Received)
	return appendInt(dst, e.BlockFor)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (*Ready) AppendMessage(dst []byte) []byte { return dst }

func (a *Authenticate) AppendMessage(dst []byte) []byte {
	return appendString(dst, a.Authenticator)
}

func (s *Supported) AppendMessage(dst []byte) []byte {
	return appendStringMultimap(dst, s.Options)
}

func (a *AuthChallenge) AppendMessage(dst []byte) []byte { return appendBytes(dst, a.Token) }

func (a *AuthSuccess) AppendMessage(dst []byte) []byte { return appendBytes(dst, a.Token) }

func (*VoidResult) AppendMessage(dst []byte) []byte { return appendInt(dst, int32(ResultVoid)) }

func (s *SetKeyspaceResult) AppendMessage(dst []byte) []byte {
	dst = appendInt(dst, int32(ResultSetKeyspace))
	return appendString(dst, s.Keyspace)
}

func (s *SchemaChangeResult) AppendMessage(dst []byte) []byte {
	dst = appendInt(dst, int32(ResultSchemaChange))
	return appendSchemaChange(dst, &s.SchemaChange)
}

func appendSchemaChange(dst []byte, s *SchemaChange) []byte {
	dst = appendString(dst, s.Change)
	dst = appendString(dst, s.Target)
	dst = appendString(dst, s.Keyspace)
	switch s.Target {
	case TargetKeyspace:
	case TargetFunction, TargetAggregate:
		dst = appendString(dst, s.Name)
		dst = appendStringList(dst, s.ArgTypes)
	default: // TABLE, TYPE
		dst = appendString(dst, s.Name)
	}
	return dst
}

func (ev *Event) AppendMessage(dst []byte) []byte {
	dst = appendString(dst, ev.Type)
	if ev.Type == EventSchemaChange {
		return appendSchemaChange(dst, &ev.Schema)
	}
	dst = appendString(dst, ev.Change)
	return appendInet(dst, ev.Addr)
}

func (p *PreparedResult) AppendMessage(dst []byte) []byte {
	dst = appendInt(dst, int32(ResultPrepared))
	dst = appendShortBytes(dst, p.ID)
	m := &p.Metadata
	var flags int32
	if m.GlobalTableSpec {
		flags |= MetadataGlobalTableSpec
	}
	dst = appendInt(dst, flags)
	dst = appendInt(dst, int32(len(m.Columns)))
	dst = appendInt(dst, int32(len(m.PKIndices)))
	for _, i := range m.PKIndices {
		dst = appendShort(dst, i)
	}
	dst = appendColumnSpecs(dst, m.GlobalTableSpec, m.Keyspace, m.Table, m.Columns)
	return appendRowsMetadata(dst, &p.ResultMetadata)
}

func appendColumnSpecs(dst []byte, global bool, ks, table string, cols []ColumnSpec) []byte {
	if global {
		dst = appendString(dst, ks)
		dst = appendString(dst, table)
	}
	for i := range cols {
		c := &cols[i]
		if !global {
			dst = appendString(dst, c.Keyspace)
			dst = appendString(dst, c.Table)
		}
		dst = appendString(dst, c.Name)
		dst = AppendOption(dst, c.Type)
	}
	return dst
}

func appendRowsMetadata(dst []byte, m *RowsMetadata) []byte {
	var flags int32
	if m.GlobalTableSpec && !m.NoMetadata {
		flags |= MetadataGlobalTableSpec
	}
	if m.PagingState != nil {
		flags |= MetadataHasMorePages
	}
	if m.NoMetadata {
		flags |= MetadataNoMetadata
	}
	dst = appendInt(dst, flags)
	dst = appendInt(dst, int32(m.columnCount()))
	if m.PagingState != nil {
		dst = appendBytes(dst, m.PagingState)
	}
	if m.NoMetadata {
		return dst
	}
	return appendColumnSpecs(dst, m.GlobalTableSpec, m.Keyspace, m.Table, m.Columns)
}

func (rs *RowsResult) AppendMessage(dst []byte) []byte {
	dst, at := AppendRowsHeader(dst, &rs.Metadata)
	cols := rs.Metadata.columnCount()
	for _, row := range rs.Rows {
		for i := range cols {
			if i < len(row) {
				dst = AppendCell(dst, row[i])
			} else {
				dst = AppendCell(dst, nil)
			}
		}
	}
	SetRowCount(dst, at, len(rs.Rows))
	return dst
}

// AppendRowsHeader starts a Rows result whose rows are streamed: it appends
// the result kind, the metadata and a row count of 0, and returns the offset
// of the count in dst for SetRowCount. Then append, for each row, one
// AppendCell per column (len(m.Columns), or m.ColumnCount if that is empty).
func AppendRowsHeader(dst []byte, m *RowsMetadata) ([]byte, int) {
	dst = appendInt(dst, int32(ResultRows))
	dst = appendRowsMetadata(dst, m)
	at := len(dst)
	return appendInt(dst, 0), at
}

// AppendCell appends one cell ([bytes]); nil is null, an empty non-nil slice
// is an empty value.
func AppendCell(dst []byte, cell []byte) []byte { return appendBytes(dst, cell) }

// SetRowCount patches the row count written by AppendRowsHeader at offset at
// of b (an offset into the same buffer, which may have grown since).
func SetRowCount(b []byte, at int, n int) {
	binary.BigEndian.PutUint32(b[at:at+4], uint32(min(n, math.MaxInt32)))
}
