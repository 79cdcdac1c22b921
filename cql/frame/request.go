package frame

import (
	"fmt"
)

// This file is the server side of requests: their types and decoders. The
// client side (encoders) is in client_request.go.

// ValueKind tells a bound value from null and "not set" [V4 §3 [value]].
type ValueKind uint8

// Value kinds. The zero Value is a (possibly empty) byte value.
const (
	ValueBytes ValueKind = iota
	ValueNull            // length -1
	ValueUnset           // length -2: leave the column as it is
)

// Value is a bound value. Bytes aliases the frame body it was decoded from.
type Value struct {
	Kind  ValueKind
	Bytes []byte
}

// NullValue and UnsetValue are the two non-byte values.
var (
	NullValue  = Value{Kind: ValueNull}
	UnsetValue = Value{Kind: ValueUnset}
)

// BytesValue returns a byte value; nil b is an empty value, not null.
func BytesValue(b []byte) Value { return Value{Bytes: b} }

// IsNull and IsUnset report the value's kind.
func (v Value) IsNull() bool  { return v.Kind == ValueNull }
func (v Value) IsUnset() bool { return v.Kind == ValueUnset }

// QueryParams are the <query_parameters> of QUERY and EXECUTE [V4 §4.1.4].
// The decoder sets every field from the wire; the client encoder derives the
// flags from the fields (see Flags).
type QueryParams struct {
	Consistency Consistency
	// Flags are the flags as received. When encoding, the sections flagged
	// here are written in addition to those the fields call for.
	Flags  byte
	Values []Value
	// Names are the value names when QueryFlagNamesForValues is set (nil
	// otherwise); len(Names) == len(Values).
	Names        []string
	SkipMetadata bool
	// PageSize is -1 when absent. The encoder writes it when > 0.
	PageSize int32
	// PagingState is nil when absent (or sent as null).
	PagingState          []byte
	SerialConsistency    Consistency
	HasSerialConsistency bool
	// Timestamp is the default timestamp in microseconds since the epoch.
	Timestamp    int64
	HasTimestamp bool
}

// Request is a decoded request message: *Startup, *Options, *Query,
// *Prepare, *Execute, *Batch, *Register or *AuthResponse.
type Request interface {
	Opcode() Opcode
	// AppendMessage appends the message body (without custom payload), as a
	// client would send it. Errors wrap ErrTooLong.
	AppendMessage(dst []byte) ([]byte, error)
}

// Startup is STARTUP [V4 §4.1.1].
type Startup struct {
	Options map[string]string
}

// Options is OPTIONS [V4 §4.1.3].
type Options struct{}

// Query is QUERY [V4 §4.1.4].
type Query struct {
	Query  string
	Params QueryParams
	// CustomPayload is the frame's custom payload (flag 0x04), nil if none.
	CustomPayload map[string][]byte
}

// Prepare is PREPARE [V4 §4.1.5].
type Prepare struct {
	Query         string
	CustomPayload map[string][]byte
}

// Execute is EXECUTE [V4 §4.1.6].
type Execute struct {
	ID            []byte
	Params        QueryParams
	CustomPayload map[string][]byte
}

// BatchStatement is one statement of a BATCH.
type BatchStatement struct {
	// Prepared tells which of Query and ID is set.
	Prepared bool
	Query    string
	ID       []byte
	Values   []Value
}

// Batch is BATCH [V4 §4.1.7].
type Batch struct {
	Type       BatchType
	Statements []BatchStatement
	// Consistency, Flags, SerialConsistency and Timestamp are as in
	// QueryParams; only the serial-consistency and timestamp flags exist.
	Consistency          Consistency
	Flags                byte
	SerialConsistency    Consistency
	HasSerialConsistency bool
	Timestamp            int64
	HasTimestamp         bool
	CustomPayload        map[string][]byte
}

// Register is REGISTER [V4 §4.1.8].
type Register struct {
	Events []string
}

// AuthResponse is AUTH_RESPONSE [V4 §4.1.2]. Token is nil when sent as null.
type AuthResponse struct {
	Token []byte
}

func (*Startup) Opcode() Opcode      { return OpStartup }
func (*Options) Opcode() Opcode      { return OpOptions }
func (*Query) Opcode() Opcode        { return OpQuery }
func (*Prepare) Opcode() Opcode      { return OpPrepare }
func (*Execute) Opcode() Opcode      { return OpExecute }
func (*Batch) Opcode() Opcode        { return OpBatch }
func (*Register) Opcode() Opcode     { return OpRegister }
func (*AuthResponse) Opcode() Opcode { return OpAuthResponse }

// SplitCustomPayload splits a request body into its custom payload and the
// message, according to the header flags. Without FlagCustomPayload it
// returns (nil, body, nil).
func SplitCustomPayload(flags byte, body []byte) (map[string][]byte, []byte, error) {
	if flags&FlagCustomPayload == 0 {
		return nil, body, nil
	}
	r := reader{b: body}
	m := r.readBytesMap()
	if r.err != nil {
		return nil, nil, fmt.Errorf("custom payload: %w", r.err)
	}
	return m, r.b, nil
}

// DecodeRequest decodes the (decompressed) request frame f. A custom payload
// is returned in the CustomPayload field of Query, Prepare, Execute and
// Batch and is ignored on other requests. Errors wrap ErrMalformed, including
// a response opcode or an unknown one; the frame is consumed either way.
func DecodeRequest(f Frame) (Request, error) {
	if f.Header.Compressed() {
		return nil, fmt.Errorf("%w: %s: body is still compressed", ErrMalformed, f.Header)
	}
	payload, body, err := SplitCustomPayload(f.Header.Flags, f.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Header.Opcode, err)
	}
	switch f.Header.Opcode {
	case OpStartup:
		return DecodeStartup(body)
	case OpOptions:
		return &Options{}, nil
	case OpQuery:
		q, err := DecodeQuery(body)
		if err == nil {
			q.CustomPayload = payload
		}
		return q, err
	case OpPrepare:
		p, err := DecodePrepare(body)
		if err == nil {
			p.CustomPayload = payload
		}
		return p, err
	case OpExecute:
		e, err := DecodeExecute(body)
		if err == nil {
			e.CustomPayload = payload
		}
		return e, err
	case OpBatch:
		b, err := DecodeBatch(body)
		if err == nil {
			b.CustomPayload = payload
		}
		return b, err
	case OpRegister:
		return DecodeRegister(body)
	case OpAuthResponse:
		return DecodeAuthResponse(body)
	}
	return nil, fmt.Errorf("%w: unexpected opcode %s in a request", ErrMalformed, f.Header.Opcode)
}

// finish returns r's error wrapped with the message name, or nil. Trailing
// bytes after a message are ignored, as Cassandra does.
func (r *reader) finish(msg string) error {
	if r.err != nil {
		return fmt.Errorf("%s: %w", msg, r.err)
	}
	return nil
}

// decoded returns the message m that r decoded, or the zero M (nil) and
// r's error wrapped with the message's name (see finish).
func decoded[M any](r *reader, name string, m M) (M, error) {
	if err := r.finish(name); err != nil {
		var none M
		return none, err
	}
	return m, nil
}

// DecodeStartup decodes a STARTUP body: a [string map].
func DecodeStartup(body []byte) (*Startup, error) {
	r := reader{b: body}
	return decoded(&r, "STARTUP", &Startup{Options: r.readStringMap()})
}

// DecodeQuery decodes a QUERY body.
func DecodeQuery(body []byte) (*Query, error) {
	r := reader{b: body}
	q := &Query{Query: r.readLongString()}
	r.readQueryParams(&q.Params)
	return decoded(&r, "QUERY", q)
}

// DecodePrepare decodes a PREPARE body: the query as a [long string] (v4 has
// no flags or keyspace here).
func DecodePrepare(body []byte) (*Prepare, error) {
	r := reader{b: body}
	return decoded(&r, "PREPARE", &Prepare{Query: r.readLongString()})
}

// DecodeExecute decodes an EXECUTE body.
func DecodeExecute(body []byte) (*Execute, error) {
	r := reader{b: body}
	e := &Execute{ID: r.readShortBytes("prepared id")}
	r.readQueryParams(&e.Params)
	return decoded(&r, "EXECUTE", e)
}

// DecodeRegister decodes a REGISTER body: a [string list] of event types.
func DecodeRegister(body []byte) (*Register, error) {
	r := reader{b: body}
	return decoded(&r, "REGISTER", &Register{Events: r.readStringList()})
}

// DecodeAuthResponse decodes an AUTH_RESPONSE body: a [bytes] token.
func DecodeAuthResponse(body []byte) (*AuthResponse, error) {
	r := reader{b: body}
	return decoded(&r, "AUTH_RESPONSE", &AuthResponse{Token: r.readBytes("token")})
}

func (r *reader) readQueryParams(p *QueryParams) {
	p.Consistency = r.readConsistency("consistency")
	flags := r.readByte("query flags")
	p.PageSize = -1
	if r.err != nil {
		return
	}
	if flags&^queryFlagsKnown != 0 {
		r.failf("query flags 0x%02x: bits 0x%02x are not defined in protocol v4", flags, flags&^queryFlagsKnown)
		return
	}
	p.Flags = flags
	p.SkipMetadata = flags&QueryFlagSkipMetadata != 0
	if flags&QueryFlagValues != 0 {
		p.Values, p.Names = r.readValues(flags&QueryFlagNamesForValues != 0)
	}
	if flags&QueryFlagPageSize != 0 {
		p.PageSize = r.readInt("page size")
	}
	if flags&QueryFlagPagingState != 0 {
		p.PagingState = r.readBytes("paging state")
	}
	p.SerialConsistency, p.HasSerialConsistency, p.Timestamp, p.HasTimestamp = r.readSerialAndTimestamp(flags)
}

// readSerialAndTimestamp reads the serial consistency and the default
// timestamp that end the parameters of QUERY and EXECUTE and a BATCH, each
// only when flags announce it; has* report which were there.
func (r *reader) readSerialAndTimestamp(flags byte) (serial Consistency, hasSerial bool, ts int64, hasTs bool) {
	if flags&QueryFlagSerialConsistency != 0 {
		serial, hasSerial = r.readConsistency("serial consistency"), true
	}
	if flags&QueryFlagDefaultTimestamp != 0 {
		ts, hasTs = r.readLong("default timestamp"), true
	}
	return serial, hasSerial, ts, hasTs
}

// readValues reads <n:[short]> then n [value]s, each preceded by a [string]
// name if named.
func (r *reader) readValues(named bool) ([]Value, []string) {
	n := int(r.readShort("value count"))
	values := make([]Value, 0, r.capFor(n, 4))
	var names []string
	if named {
		names = make([]string, 0, r.capFor(n, 6))
	}
	for i := 0; i < n && r.err == nil; i++ {
		if named {
			names = append(names, r.readString())
		}
		values = append(values, r.readValue())
		if r.err != nil {
			r.wrap(fmt.Sprintf("value %d of %d", i, n))
		}
	}
	return values, names
}

// DecodeBatch decodes a BATCH body. Names for values (flag 0x40) are
// rejected: they cannot be parsed (the flags come after the values) and
// Cassandra refuses them too.
func DecodeBatch(body []byte) (*Batch, error) {
	r := reader{b: body}
	b := &Batch{Type: BatchType(r.readByte("batch type"))}
	if r.err == nil && b.Type > BatchCounter {
		r.failf("unknown batch type %d", b.Type)
	}
	n := int(r.readShort("statement count"))
	b.Statements = make([]BatchStatement, 0, r.capFor(n, 3))
	for i := 0; i < n && r.err == nil; i++ {
		var s BatchStatement
		switch kind := r.readByte("statement kind"); {
		case r.err != nil:
		case kind == 0:
			s.Query = r.readLongString()
		case kind == 1:
			s.Prepared = true
			s.ID = r.readShortBytes("prepared id")
		default:
			r.failf("statement kind %d, want 0 (query) or 1 (prepared id)", kind)
		}
		s.Values, _ = r.readValues(false)
		b.Statements = append(b.Statements, s)
		if r.err != nil {
			r.wrap(fmt.Sprintf("statement %d of %d", i, n))
		}
	}
	b.Consistency = r.readConsistency("consistency")
	b.Flags = r.readByte("batch flags")
	if r.err == nil && b.Flags&^batchFlagsKnown != 0 {
		if b.Flags&QueryFlagNamesForValues != 0 {
			r.failf("batch flags 0x%02x: names for values are not supported in batches", b.Flags)
		} else {
			r.failf("batch flags 0x%02x: only 0x10 and 0x20 are allowed", b.Flags)
		}
	}
	b.SerialConsistency, b.HasSerialConsistency, b.Timestamp, b.HasTimestamp = r.readSerialAndTimestamp(b.Flags)
	return decoded(&r, "BATCH", b)
}
