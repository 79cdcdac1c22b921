package frame

import "fmt"

// Version bytes. The top bit of the version byte is the direction
// (0 = request, 1 = response) [V4 §2.1].
const (
	VersionRequest  byte = 0x04
	VersionResponse byte = 0x84
	directionBit    byte = 0x80
)

// HeaderSize is the size of a v3+ frame header.
const HeaderSize = 9

// DefaultMaxBodyBytes is the protocol's frame size limit (256 MB, V4 §2.5)
// and the default limit of the decompressors. gocql refuses bigger frames.
const DefaultMaxBodyBytes = 256 << 20

// MinCompressBytes is the body size below which FinishFrame does not compress:
// compressing a few bytes costs CPU and usually makes them longer.
const MinCompressBytes = 64

// Opcode is the message type of a frame [V4 §2.4].
type Opcode byte

// Opcodes. There is no 0x04.
const (
	OpError         Opcode = 0x00
	OpStartup       Opcode = 0x01
	OpReady         Opcode = 0x02
	OpAuthenticate  Opcode = 0x03
	OpOptions       Opcode = 0x05
	OpSupported     Opcode = 0x06
	OpQuery         Opcode = 0x07
	OpResult        Opcode = 0x08
	OpPrepare       Opcode = 0x09
	OpExecute       Opcode = 0x0A
	OpRegister      Opcode = 0x0B
	OpEvent         Opcode = 0x0C
	OpBatch         Opcode = 0x0D
	OpAuthChallenge Opcode = 0x0E
	OpAuthResponse  Opcode = 0x0F
	OpAuthSuccess   Opcode = 0x10
)

var opcodeNames = [...]string{
	OpError: "ERROR", OpStartup: "STARTUP", OpReady: "READY", OpAuthenticate: "AUTHENTICATE",
	OpOptions: "OPTIONS", OpSupported: "SUPPORTED", OpQuery: "QUERY", OpResult: "RESULT",
	OpPrepare: "PREPARE", OpExecute: "EXECUTE", OpRegister: "REGISTER", OpEvent: "EVENT",
	OpBatch: "BATCH", OpAuthChallenge: "AUTH_CHALLENGE", OpAuthResponse: "AUTH_RESPONSE",
	OpAuthSuccess: "AUTH_SUCCESS",
}

func (o Opcode) String() string {
	if int(o) < len(opcodeNames) && opcodeNames[o] != "" {
		return opcodeNames[o]
	}
	return fmt.Sprintf("OPCODE(0x%02x)", byte(o))
}

// IsRequest reports whether o is sent by clients.
func (o Opcode) IsRequest() bool {
	switch o {
	case OpStartup, OpOptions, OpQuery, OpPrepare, OpExecute, OpRegister, OpBatch, OpAuthResponse:
		return true
	}
	return false
}

// Header flags [V4 §2.2]. Other bits are ignored.
const (
	FlagCompression   byte = 0x01
	FlagTracing       byte = 0x02
	FlagCustomPayload byte = 0x04
	FlagWarning       byte = 0x08
	FlagBeta          byte = 0x10
)

// Consistency is a [consistency] level [V4 §3].
type Consistency uint16

// Consistency levels.
const (
	Any         Consistency = 0x0000
	One         Consistency = 0x0001
	Two         Consistency = 0x0002
	Three       Consistency = 0x0003
	Quorum      Consistency = 0x0004
	All         Consistency = 0x0005
	LocalQuorum Consistency = 0x0006
	EachQuorum  Consistency = 0x0007
	Serial      Consistency = 0x0008
	LocalSerial Consistency = 0x0009
	LocalOne    Consistency = 0x000A
)

var consistencyNames = [...]string{
	"ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "SERIAL",
	"LOCAL_SERIAL", "LOCAL_ONE",
}

func (c Consistency) String() string {
	if c.Valid() {
		return consistencyNames[c]
	}
	return fmt.Sprintf("CONSISTENCY(0x%04x)", uint16(c))
}

// Valid reports whether c is one of the defined levels.
func (c Consistency) Valid() bool { return c <= LocalOne }

// IsSerial reports whether c is SERIAL or LOCAL_SERIAL, the only levels
// allowed as a serial consistency.
func (c Consistency) IsSerial() bool { return c == Serial || c == LocalSerial }

// Query flags, shared by QUERY and EXECUTE [V4 §4.1.4]; BATCH allows only
// SerialConsistency and DefaultTimestamp (NamesForValues "does not work" there
// and is rejected).
const (
	QueryFlagValues            byte = 0x01
	QueryFlagSkipMetadata      byte = 0x02
	QueryFlagPageSize          byte = 0x04
	QueryFlagPagingState       byte = 0x08
	QueryFlagSerialConsistency byte = 0x10
	QueryFlagDefaultTimestamp  byte = 0x20
	QueryFlagNamesForValues    byte = 0x40

	queryFlagsKnown = 0x7F
	batchFlagsKnown = QueryFlagSerialConsistency | QueryFlagDefaultTimestamp
)

// ResultKind is the first [int] of a RESULT body [V4 §4.2.5].
type ResultKind int32

// Result kinds.
const (
	ResultVoid         ResultKind = 0x0001
	ResultRows         ResultKind = 0x0002
	ResultSetKeyspace  ResultKind = 0x0003
	ResultPrepared     ResultKind = 0x0004
	ResultSchemaChange ResultKind = 0x0005
)

func (k ResultKind) String() string {
	switch k {
	case ResultVoid:
		return "Void"
	case ResultRows:
		return "Rows"
	case ResultSetKeyspace:
		return "Set_keyspace"
	case ResultPrepared:
		return "Prepared"
	case ResultSchemaChange:
		return "Schema_change"
	}
	return fmt.Sprintf("RESULT_KIND(0x%04x)", int32(k))
}

// Rows/Prepared metadata flags [V4 §4.2.5.2].
const (
	MetadataGlobalTableSpec int32 = 0x0001
	MetadataHasMorePages    int32 = 0x0002
	MetadataNoMetadata      int32 = 0x0004
)

// BatchType is the type byte of a BATCH [V4 §4.1.7].
type BatchType byte

// Batch types.
const (
	BatchLogged   BatchType = 0
	BatchUnlogged BatchType = 1
	BatchCounter  BatchType = 2
)

func (t BatchType) String() string {
	switch t {
	case BatchLogged:
		return "LOGGED"
	case BatchUnlogged:
		return "UNLOGGED"
	case BatchCounter:
		return "COUNTER"
	}
	return fmt.Sprintf("BATCH_TYPE(%d)", byte(t))
}

// ErrorCode is the code of an ERROR response [V4 §9].
type ErrorCode int32

// Error codes of protocol v4. gocql panics on any other code.
const (
	CodeServerError     ErrorCode = 0x0000
	CodeProtocolError   ErrorCode = 0x000A
	CodeBadCredentials  ErrorCode = 0x0100
	CodeUnavailable     ErrorCode = 0x1000
	CodeOverloaded      ErrorCode = 0x1001
	CodeIsBootstrapping ErrorCode = 0x1002
	CodeTruncateError   ErrorCode = 0x1003
	CodeWriteTimeout    ErrorCode = 0x1100
	CodeReadTimeout     ErrorCode = 0x1200
	CodeReadFailure     ErrorCode = 0x1300
	CodeFunctionFailure ErrorCode = 0x1400
	CodeWriteFailure    ErrorCode = 0x1500
	CodeSyntaxError     ErrorCode = 0x2000
	CodeUnauthorized    ErrorCode = 0x2100
	CodeInvalid         ErrorCode = 0x2200
	CodeConfigError     ErrorCode = 0x2300
	CodeAlreadyExists   ErrorCode = 0x2400
	CodeUnprepared      ErrorCode = 0x2500
)

var errorCodeNames = map[ErrorCode]string{
	CodeServerError: "Server error", CodeProtocolError: "Protocol error",
	CodeBadCredentials: "Authentication error", CodeUnavailable: "Unavailable",
	CodeOverloaded: "Overloaded", CodeIsBootstrapping: "Is_bootstrapping",
	CodeTruncateError: "Truncate_error", CodeWriteTimeout: "Write_timeout",
	CodeReadTimeout: "Read_timeout", CodeReadFailure: "Read_failure",
	CodeFunctionFailure: "Function_failure", CodeWriteFailure: "Write_failure",
	CodeSyntaxError: "Syntax_error", CodeUnauthorized: "Unauthorized", CodeInvalid: "Invalid",
	CodeConfigError: "Config_error", CodeAlreadyExists: "Already_exists",
	CodeUnprepared: "Unprepared",
}

func (c ErrorCode) String() string {
	if n, ok := errorCodeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("ERROR_CODE(0x%04x)", int32(c))
}

// Known reports whether c is an error code of protocol v4.
func (c ErrorCode) Known() bool {
	_, ok := errorCodeNames[c]
	return ok
}

// Write types of Write_timeout and Write_failure errors [V4 §9].
const (
	WriteTypeSimple        = "SIMPLE"
	WriteTypeBatch         = "BATCH"
	WriteTypeUnloggedBatch = "UNLOGGED_BATCH"
	WriteTypeCounter       = "COUNTER"
	WriteTypeBatchLog      = "BATCH_LOG"
	WriteTypeCAS           = "CAS"
	WriteTypeView          = "VIEW"
	WriteTypeCDC           = "CDC"
)

// Event types [V4 §4.2.6], as registered by REGISTER and sent in EVENT.
const (
	EventTopologyChange = "TOPOLOGY_CHANGE"
	EventStatusChange   = "STATUS_CHANGE"
	EventSchemaChange   = "SCHEMA_CHANGE"
)

// Changes carried by TOPOLOGY_CHANGE and STATUS_CHANGE events.
const (
	TopologyNewNode     = "NEW_NODE"
	TopologyRemovedNode = "REMOVED_NODE"
	StatusUp            = "UP"
	StatusDown          = "DOWN"
)

// Change types and targets of schema changes [V4 §4.2.6].
const (
	ChangeCreated = "CREATED"
	ChangeUpdated = "UPDATED"
	ChangeDropped = "DROPPED"

	TargetKeyspace  = "KEYSPACE"
	TargetTable     = "TABLE"
	TargetType      = "TYPE"
	TargetFunction  = "FUNCTION"
	TargetAggregate = "AGGREGATE"
)

// STARTUP option keys [V4 §4.1.1] and SUPPORTED keys [V4 §4.2.4].
const (
	StartupCQLVersion         = "CQL_VERSION"
	StartupCompression        = "COMPRESSION"
	StartupNoCompact          = "NO_COMPACT"
	StartupThrowOnOverload    = "THROW_ON_OVERLOAD"
	StartupDriverName         = "DRIVER_NAME"
	StartupDriverVersion      = "DRIVER_VERSION"
	SupportedProtocolVersions = "PROTOCOL_VERSIONS"
)
