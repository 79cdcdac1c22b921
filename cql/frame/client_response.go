package frame

import (
	"fmt"
)

// This file is the client side of responses: decoders, used by tests, fuzz
// targets and our own tooling. Errors wrap ErrMalformed.

// DecodeResponse decodes the (decompressed) response frame f into its
// message and its envelope (tracing id, warnings, custom payload).
func DecodeResponse(f Frame) (Response, Envelope, error) {
	var env Envelope
	if f.Header.Compressed() {
		return nil, env, fmt.Errorf("%w: %s: body is still compressed", ErrMalformed, f.Header)
	}
	r := reader{b: f.Body}
	if f.Header.Tracing() {
		if id := r.take("tracing id", 16); id != nil {
			env.TracingID = (*[16]byte)(id)
		}
	}
	if f.Header.HasWarnings() {
		env.Warnings = r.readStringList()
	}
	if f.Header.HasCustomPayload() {
		env.CustomPayload = r.readBytesMap()
	}
	if err := r.finish(f.Header.Opcode.String()); err != nil {
		return nil, env, err
	}
	resp, err := decodeResponseMessage(f.Header.Opcode, r.b)
	return resp, env, err
}

func decodeResponseMessage(op Opcode, body []byte) (Response, error) {
	switch op {
	case OpError:
		return DecodeError(body)
	case OpReady:
		return &Ready{}, nil
	case OpAuthenticate:
		r := reader{b: body}
		a := &Authenticate{Authenticator: r.readString()}
		return a, r.finish("AUTHENTICATE")
	case OpSupported:
		r := reader{b: body}
		s := &Supported{Options: r.readStringMultimap()}
		return s, r.finish("SUPPORTED")
	case OpAuthChallenge:
		r := reader{b: body}
		a := &AuthChallenge{Token: r.readBytes("token")}
		return a, r.finish("AUTH_CHALLENGE")
	case OpAuthSuccess:
		r := reader{b: body}
		a := &AuthSuccess{Token: r.readBytes("token")}
		return a, r.finish("AUTH_SUCCESS")
	case OpResult:
		return DecodeResult(body)
	case OpEvent:
		return DecodeEvent(body)
	}
	return nil, fmt.Errorf("%w: unexpected opcode %s in a response", ErrMalformed, op)
}

// DecodeError decodes an ERROR body with the extra fields of its code.
// Unknown codes decode without extras.
func DecodeError(body []byte) (*Error, error) {
	r := reader{b: body}
	e := &Error{Code: ErrorCode(r.readInt("error code")), Message: r.readString()}
	counts := func() {
		e.Consistency = Consistency(r.readShort("consistency"))
		e.Received = r.readInt("received")
		e.BlockFor = r.readInt("blockfor")
	}
	switch e.Code {
	case CodeUnavailable:
		e.Consistency = Consistency(r.readShort("consistency"))
		e.Required = r.readInt("required")
		e.Alive = r.readInt("alive")
	case CodeWriteTimeout:
		counts()
		e.WriteType = r.readString()
	case CodeReadTimeout:
		counts()
		e.DataPresent = r.readByte("data_present") != 0
	case CodeReadFailure:
		counts()
		e.NumFailures = r.readInt("num_failures")
		e.DataPresent = r.readByte("data_present") != 0
	case CodeWriteFailure:
		counts()
		e.NumFailures = r.readInt("num_failures")
		e.WriteType = r.readString()
	case CodeFunctionFailure:
		e.Keyspace = r.readString()
		e.Function = r.readString()
		e.ArgTypes = r.readStringList()
	case CodeAlreadyExists:
		e.Keyspace = r.readString()
		e.Table = r.readString()
	case CodeUnprepared:
		e.UnpreparedID = r.readShortBytes("unprepared id")
	}
	return decoded(&r, "ERROR", e)
}

// DecodeResult decodes a RESULT body.
func DecodeResult(body []byte) (Response, error) {
	r := reader{b: body}
	kind := ResultKind(r.readInt("result kind"))
	var res Response
	switch {
	case r.err != nil:
	case kind == ResultVoid:
		res = &VoidResult{}
	case kind == ResultRows:
		rows := &RowsResult{}
		r.readRowsMetadata(&rows.Metadata)
		r.readRows(rows)
		res = rows
	case kind == ResultSetKeyspace:
		res = &SetKeyspaceResult{Keyspace: r.readString()}
	case kind == ResultPrepared:
		p := &PreparedResult{ID: r.readShortBytes("prepared id")}
		r.readPreparedMetadata(&p.Metadata)
		r.readRowsMetadata(&p.ResultMetadata)
		res = p
	case kind == ResultSchemaChange:
		s := &SchemaChangeResult{}
		r.readSchemaChange(&s.SchemaChange)
		res = s
	default:
		r.failf("unknown result kind 0x%04x", int32(kind))
	}
	return decoded(&r, "RESULT "+kind.String(), res)
}

func (r *reader) readColumnSpecs(n int, global bool, ks, table string) []ColumnSpec {
	cols := make([]ColumnSpec, 0, r.capFor(n, 4))
	for i := 0; i < n && r.err == nil; i++ {
		c := ColumnSpec{Keyspace: ks, Table: table}
		if !global {
			c.Keyspace = r.readString()
			c.Table = r.readString()
		}
		c.Name = r.readString()
		c.Type = r.readOption(0)
		cols = append(cols, c)
		if r.err != nil {
			r.wrap(fmt.Sprintf("column %d of %d", i, n))
		}
	}
	return cols
}

func (r *reader) readRowsMetadata(m *RowsMetadata) {
	flags := r.readInt("metadata flags")
	m.ColumnCount = r.count("column count")
	if flags&MetadataHasMorePages != 0 {
		m.PagingState = r.readBytes("paging state")
		if m.PagingState == nil && r.err == nil {
			m.PagingState = []byte{}
		}
	}
	if flags&MetadataNoMetadata != 0 {
		m.NoMetadata = true
		return
	}
	if flags&MetadataGlobalTableSpec != 0 {
		m.GlobalTableSpec = true
		m.Keyspace = r.readString()
		m.Table = r.readString()
	}
	m.Columns = r.readColumnSpecs(m.ColumnCount, m.GlobalTableSpec, m.Keyspace, m.Table)
	r.wrap("rows metadata")
}

func (r *reader) readPreparedMetadata(m *PreparedMetadata) {
	flags := r.readInt("metadata flags")
	n := r.count("column count")
	pk := r.count("pk count")
	m.PKIndices = make([]uint16, 0, r.capFor(pk, 2))
	for i := 0; i < pk && r.err == nil; i++ {
		m.PKIndices = append(m.PKIndices, r.readShort("pk index"))
	}
	if flags&MetadataGlobalTableSpec != 0 {
		m.GlobalTableSpec = true
		m.Keyspace = r.readString()
		m.Table = r.readString()
	}
	m.Columns = r.readColumnSpecs(n, m.GlobalTableSpec, m.Keyspace, m.Table)
	r.wrap("prepared metadata")
}

// maxEmptyRows caps the rows of a result with no columns: such rows take no
// bytes, so the row count alone would decide the allocation.
const maxEmptyRows = 1 << 16

func (r *reader) readRows(rs *RowsResult) {
	n := r.count("row count")
	cols := rs.Metadata.ColumnCount
	if r.err != nil {
		return
	}
	if cols == 0 {
		if n > maxEmptyRows {
			r.failf("%d rows of 0 columns", n)
			return
		}
		rs.Rows = make([][][]byte, n)
		return
	}
	// Every cell takes at least 4 bytes, which bounds a believable count.
	if int64(n)*int64(cols) > int64(len(r.b)/4) {
		r.failf("%d rows of %d columns need at least %d bytes, have %d", n, cols, int64(n)*int64(cols)*4, len(r.b))
		return
	}
	rs.Rows = make([][][]byte, n)
	cells := make([][]byte, n*cols)
	for i := range rs.Rows {
		row := cells[i*cols : (i+1)*cols : (i+1)*cols]
		for j := range row {
			row[j] = r.readBytes("cell")
		}
		rs.Rows[i] = row
		if r.err != nil {
			r.wrap(fmt.Sprintf("row %d of %d", i, n))
			return
		}
	}
}

func (r *reader) readSchemaChange(s *SchemaChange) {
	s.Change = r.readString()
	s.Target = r.readString()
	s.Keyspace = r.readString()
	switch {
	case r.err != nil:
	case s.Target == TargetKeyspace:
	case s.Target == TargetTable || s.Target == TargetType:
		s.Name = r.readString()
	case s.Target == TargetFunction || s.Target == TargetAggregate:
		s.Name = r.readString()
		s.ArgTypes = r.readStringList()
	default:
		r.failf("unknown schema change target %q", s.Target)
	}
}

// DecodeEvent decodes an EVENT body.
func DecodeEvent(body []byte) (*Event, error) {
	r := reader{b: body}
	ev := &Event{Type: r.readString()}
	switch {
	case r.err != nil:
	case ev.Type == EventTopologyChange || ev.Type == EventStatusChange:
		ev.Change = r.readString()
		ev.Addr = r.readInet()
	case ev.Type == EventSchemaChange:
		r.readSchemaChange(&ev.Schema)
	default:
		r.failf("unknown event type %q", ev.Type)
	}
	return decoded(&r, "EVENT", ev)
}
