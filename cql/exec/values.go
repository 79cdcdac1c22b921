package exec

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"strings"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
)

// Value is one bound value of a request: Bytes nil is null; Unset marks a
// value the client left unset (protocol v4 "not set").
type Value struct {
	Bytes []byte
	Unset bool
}

// ColumnSpec describes a result column or a bind variable.
type ColumnSpec struct {
	Keyspace, Table, Name string
	Type                  cqltype.Type
}

// bval is a bound term.
type bval struct {
	b     []byte
	null  bool
	unset bool
}

// binder turns terms into serialized values for their receivers. In prepare
// mode it binds nothing and records each bind marker's receiver, which is
// how PREPARE learns the variables' metadata from the same code that
// executes the statement.
type binder struct {
	prepare  bool
	values   []Value
	names    []string
	byName   map[string]Value
	specs    []ColumnSpec // receivers by marker index
	now      time.Time
	maxValue int
	// limits bound the key combinations of IN restrictions (zero: none,
	// as while preparing, when no value is bound).
	limits restrictionLimits
}

func newBinder(values []Value, names []string, markers int, now time.Time, maxValue int) (*binder, error) {
	b := &binder{values: values, names: names, now: now, maxValue: maxValue, specs: make([]ColumnSpec, markers)}
	if len(names) > 0 {
		b.byName = make(map[string]Value, len(names))
		for i, n := range names {
			if i < len(values) {
				b.byName[strings.ToLower(n)] = values[i]
			}
		}
	} else if len(values) != markers {
		return nil, Invalid("There were %d markers(?) in CQL but %d bound variables", markers, len(values))
	}
	return b, nil
}

func newPrepareBinder(markers int) *binder {
	return &binder{prepare: true, specs: make([]ColumnSpec, markers), now: time.Now()}
}

// marker returns the value bound to m and records its receiver.
func (b *binder) marker(m *parser.BindMarker, recv ColumnSpec) (bval, error) {
	if m.Index >= 0 && m.Index < len(b.specs) && b.specs[m.Index].Name == "" {
		spec := recv
		if m.Name != "" {
			spec.Name = m.Name
		}
		b.specs[m.Index] = spec
	}
	if b.prepare {
		return bval{null: true}, nil
	}
	var v Value
	if b.byName != nil && m.Name != "" {
		var ok bool
		if v, ok = b.byName[strings.ToLower(m.Name)]; !ok {
			return bval{}, Invalid("No value bound for variable %s", m.Name)
		}
	} else {
		if m.Index < 0 || m.Index >= len(b.values) {
			return bval{}, Invalid("No value bound for variable %d", m.Index)
		}
		v = b.values[m.Index]
	}
	if v.Unset {
		return bval{unset: true}, nil
	}
	if v.Bytes == nil {
		return bval{null: true}, nil
	}
	if b.maxValue > 0 && len(v.Bytes) > b.maxValue {
		return bval{}, Invalid("Value of %s is %d bytes, larger than the maximum of %d bytes", recv.Name, len(v.Bytes), b.maxValue)
	}
	if err := cqltype.Validate(recv.Type, v.Bytes); err != nil {
		return bval{}, Invalid("Invalid value for %s of type %s: %v", recv.Name, recv.Type, err)
	}
	// A driver sends a set or map in its own order, duplicates included
	// (a Go slice, a Python list); it is stored, compared and returned in
	// the type's order, as Cassandra does (issue 15). Literals are built
	// normalized (collection, mapLit).
	nb, err := cqltype.Normalize(recv.Type, v.Bytes)
	if err != nil {
		return bval{}, Invalid("Invalid value for %s of type %s: %v", recv.Name, recv.Type, err)
	}
	return bval{b: nb}, nil
}

var litKinds = map[parser.LitKind]cqltype.LitKind{
	parser.LitString: cqltype.LitString, parser.LitInteger: cqltype.LitInteger, parser.LitFloat: cqltype.LitFloat,
	parser.LitBoolean: cqltype.LitBoolean, parser.LitUUID: cqltype.LitUUID, parser.LitBlob: cqltype.LitBlob,
	parser.LitDuration: cqltype.LitDuration,
}

// term binds t for recv.
func (b *binder) term(t parser.Term, recv ColumnSpec) (bval, error) {
	switch t := t.(type) {
	case *parser.BindMarker:
		return b.marker(t, recv)
	case *parser.Literal:
		if t.Kind == parser.LitNull {
			return bval{null: true}, nil
		}
		v, err := cqltype.ParseLiteral(recv.Type, litKinds[t.Kind], t.Text)
		if err != nil {
			var ce *cqltype.ConstantError
			if errors.As(err, &ce) {
				return bval{}, Invalid("%s", ce.Message(recv.Name))
			}
			return bval{}, Invalid("%v", err)
		}
		if b.maxValue > 0 && len(v) > b.maxValue {
			return bval{}, Invalid("Value of %s is %d bytes, larger than the maximum of %d bytes", recv.Name, len(v), b.maxValue)
		}
		return bval{b: v}, nil
	case *parser.ListLit:
		return b.collection(t.Elems, recv, cqltype.List)
	case *parser.SetLit:
		if len(t.Elems) == 0 && recv.Type.Kind == cqltype.Map {
			return b.mapLit(nil, nil, recv)
		}
		return b.collection(t.Elems, recv, cqltype.Set)
	case *parser.MapLit:
		return b.mapLit(t.Keys, t.Values, recv)
	case *parser.TupleLit:
		if recv.Type.Kind != cqltype.Tuple {
			return bval{}, Invalid("Invalid tuple literal for %s of type %s", recv.Name, recv.Type)
		}
		if len(t.Elems) > len(recv.Type.Elems) {
			return bval{}, Invalid("Invalid tuple literal for %s: too many elements. Type %s expects %d but got %d", recv.Name, recv.Type, len(recv.Type.Elems), len(t.Elems))
		}
		elems := make([][]byte, len(recv.Type.Elems))
		for i, e := range t.Elems {
			v, err := b.term(e, ColumnSpec{Keyspace: recv.Keyspace, Table: recv.Table, Name: fmt.Sprintf("%s[%d]", recv.Name, i), Type: recv.Type.Elems[i]})
			if err != nil {
				return bval{}, err
			}
			if v.unset {
				return bval{}, Invalid("Invalid unset value for tuple field number %d", i)
			}
			elems[i] = v.b
		}
		return bval{b: cqltype.EncodeTuple(elems)}, nil
	case *parser.FuncCall:
		return b.function(t, recv)
	case *parser.Cast:
		v, err := b.term(t.Term, ColumnSpec{Keyspace: recv.Keyspace, Table: recv.Table, Name: recv.Name, Type: t.Type})
		if err != nil {
			return bval{}, err
		}
		if !t.Type.Equal(recv.Type) && !(isTextual(t.Type) && isTextual(recv.Type)) {
			return bval{}, Invalid("Type error: (%s) cannot be passed as argument for %s of type %s", t.Type, recv.Name, recv.Type)
		}
		return v, nil
	case *parser.UDTLit:
		return bval{}, Invalid("User-defined types are not supported")
	case *parser.InList:
		return bval{}, Invalid("Invalid list literal for %s", recv.Name)
	}
	return bval{}, Invalid("Unsupported term %T for %s", t, recv.Name)
}

func isTextual(t cqltype.Type) bool { return t.Kind == cqltype.Varchar || t.Kind == cqltype.Ascii }

func (b *binder) collection(elems []parser.Term, recv ColumnSpec, kind cqltype.Kind) (bval, error) {
	t := recv.Type
	if t.Kind != kind && !(kind == cqltype.List && t.Kind == cqltype.Set) {
		return bval{}, Invalid("Invalid %s literal for %s of type %s", strings.ToLower(kindName(kind)), recv.Name, t)
	}
	er := ColumnSpec{Keyspace: recv.Keyspace, Table: recv.Table, Name: recv.Name, Type: t.Elems[0]}
	if t.Kind == cqltype.Set {
		er.Name = "value(" + recv.Name + ")"
	}
	out := make([][]byte, 0, len(elems))
	for _, e := range elems {
		v, err := b.term(e, er)
		if err != nil {
			return bval{}, err
		}
		if v.null {
			if b.prepare {
				continue
			}
			return bval{}, Invalid("null is not supported inside collections")
		}
		if v.unset {
			return bval{}, Invalid("unset value is not supported inside collections")
		}
		out = append(out, v.b)
	}
	if len(out) == 0 && (t.IsMultiCell() || b.prepare) {
		// An empty non-frozen collection is no collection at all; a
		// frozen one is an empty value (e.g. a clustering key []).
		return bval{null: true}, nil
	}
	if t.Kind == cqltype.Set {
		out = cqltype.NormalizeSet(t, out)
	}
	return bval{b: cqltype.EncodeCollection(out)}, nil
}

func kindName(k cqltype.Kind) string {
	switch k {
	case cqltype.List:
		return "LIST"
	case cqltype.Set:
		return "SET"
	case cqltype.Map:
		return "MAP"
	}
	return "collection"
}

func (b *binder) mapLit(keys, vals []parser.Term, recv ColumnSpec) (bval, error) {
	t := recv.Type
	if t.Kind != cqltype.Map {
		return bval{}, Invalid("Invalid map literal for %s of type %s", recv.Name, t)
	}
	kr := ColumnSpec{Keyspace: recv.Keyspace, Table: recv.Table, Name: "key(" + recv.Name + ")", Type: t.Elems[0]}
	vr := ColumnSpec{Keyspace: recv.Keyspace, Table: recv.Table, Name: "value(" + recv.Name + ")", Type: t.Elems[1]}
	var ks, vs [][]byte
	for i := range keys {
		k, err := b.term(keys[i], kr)
		if err != nil {
			return bval{}, err
		}
		v, err := b.term(vals[i], vr)
		if err != nil {
			return bval{}, err
		}
		if b.prepare {
			continue
		}
		if k.null || v.null {
			return bval{}, Invalid("null is not supported inside collections")
		}
		if k.unset || v.unset {
			return bval{}, Invalid("unset value is not supported inside collections")
		}
		ks, vs = append(ks, k.b), append(vs, v.b)
	}
	if len(ks) == 0 && (t.IsMultiCell() || b.prepare) {
		return bval{null: true}, nil
	}
	ks, vs = cqltype.NormalizeMap(t, ks, vs)
	return bval{b: cqltype.EncodeMap(ks, vs)}, nil
}

// function evaluates the native functions that may appear as values.
func (b *binder) function(f *parser.FuncCall, recv ColumnSpec) (bval, error) {
	name := strings.ToLower(f.Name)
	arity := func(n int) error {
		if len(f.Args) != n {
			return Invalid("Invalid number of arguments in call to function system.%s: %d required but %d provided", name, n, len(f.Args))
		}
		return nil
	}
	want := func(k cqltype.Kind) error {
		if recv.Type.Kind != k && !(k == cqltype.Timeuuid && recv.Type.Kind == cqltype.UUID) {
			return Invalid("Type error: %s() returns %s, cannot be assigned to %s of type %s", name, cqltype.Scalar(k), recv.Name, recv.Type)
		}
		return nil
	}
	arg := func(t cqltype.Type) (bval, error) {
		return b.term(f.Args[0], ColumnSpec{Keyspace: recv.Keyspace, Table: recv.Table, Name: "arg0(" + name + ")", Type: t})
	}
	switch name {
	case "now", "currenttimeuuid":
		if err := arity(0); err != nil {
			return bval{}, err
		}
		if err := want(cqltype.Timeuuid); err != nil {
			return bval{}, err
		}
		u := NewTimeUUID(b.now)
		return bval{b: u[:]}, nil
	case "uuid":
		if err := arity(0); err != nil {
			return bval{}, err
		}
		if err := want(cqltype.UUID); err != nil {
			return bval{}, err
		}
		var u [16]byte
		_, _ = rand.Read(u[:])
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		return bval{b: u[:]}, nil
	case "currenttimestamp":
		if err := arity(0); err != nil {
			return bval{}, err
		}
		if err := want(cqltype.Timestamp); err != nil {
			return bval{}, err
		}
		return bval{b: binary.BigEndian.AppendUint64(nil, uint64(b.now.UnixMilli()))}, nil
	case "currentdate":
		if err := arity(0); err != nil {
			return bval{}, err
		}
		if err := want(cqltype.Date); err != nil {
			return bval{}, err
		}
		return bval{b: dateOfMillis(b.now.UnixMilli())}, nil
	case "currenttime":
		if err := arity(0); err != nil {
			return bval{}, err
		}
		if err := want(cqltype.Time); err != nil {
			return bval{}, err
		}
		y, m, d := b.now.UTC().Date()
		ns := b.now.UTC().Sub(time.Date(y, m, d, 0, 0, 0, 0, time.UTC)).Nanoseconds()
		return bval{b: binary.BigEndian.AppendUint64(nil, uint64(ns))}, nil
	case "totimestamp", "dateof", "todate", "tounixtimestamp", "unixtimestampof":
		if err := arity(1); err != nil {
			return bval{}, err
		}
		ms, null, err := b.timeArg(f.Args[0], recv, name)
		if err != nil || null {
			return bval{null: null}, err
		}
		switch name {
		case "totimestamp", "dateof":
			if err := want(cqltype.Timestamp); err != nil {
				return bval{}, err
			}
			return bval{b: binary.BigEndian.AppendUint64(nil, uint64(ms))}, nil
		case "todate":
			if err := want(cqltype.Date); err != nil {
				return bval{}, err
			}
			return bval{b: dateOfMillis(ms)}, nil
		default:
			if err := want(cqltype.Bigint); err != nil {
				return bval{}, err
			}
			return bval{b: binary.BigEndian.AppendUint64(nil, uint64(ms))}, nil
		}
	case "mintimeuuid", "maxtimeuuid":
		if err := arity(1); err != nil {
			return bval{}, err
		}
		if err := want(cqltype.Timeuuid); err != nil {
			return bval{}, err
		}
		v, err := arg(cqltype.Scalar(cqltype.Timestamp))
		if err != nil || v.null || v.unset || len(v.b) != 8 || b.prepare {
			return bval{null: true}, err
		}
		ms := int64(binary.BigEndian.Uint64(v.b))
		u := timeUUIDAt(ms*10_000+uuidEpochOffset, name == "maxtimeuuid")
		return bval{b: u[:]}, nil
	case "token":
		return bval{}, Invalid("Invalid use of token() as a value")
	case "fromjson":
		if err := arity(1); err != nil {
			return bval{}, err
		}
		v, err := arg(cqltype.Scalar(cqltype.Varchar))
		if err != nil || v.null || v.unset || b.prepare {
			return v, err
		}
		return fromJSON(recv, v.b)
	case "tojson":
		return bval{}, Invalid("toJson() may only be used within the selection clause of SELECT statements")
	}
	// typeAsBlob and blobAsType conversions.
	if strings.HasSuffix(name, "asblob") {
		t, err := cqltype.Parse(strings.TrimSuffix(name, "asblob"))
		if err != nil || len(f.Args) != 1 {
			return bval{}, Invalid("Unknown function %s", f.Name)
		}
		if err := want(cqltype.Blob); err != nil {
			return bval{}, err
		}
		return arg(t)
	}
	if strings.HasPrefix(name, "blobas") {
		t, err := cqltype.Parse(strings.TrimPrefix(name, "blobas"))
		if err != nil || len(f.Args) != 1 {
			return bval{}, Invalid("Unknown function %s", f.Name)
		}
		if !t.Equal(recv.Type) && !(isTextual(t) && isTextual(recv.Type)) {
			return bval{}, Invalid("Type error: %s() returns %s, cannot be assigned to %s of type %s", name, t, recv.Name, recv.Type)
		}
		v, err := arg(cqltype.Scalar(cqltype.Blob))
		if err != nil || v.null || b.prepare {
			return v, err
		}
		if err := cqltype.Validate(t, v.b); err != nil {
			return bval{}, Invalid("In call to function system.%s, value 0x%x is not a valid binary representation for type %s", name, v.b, t)
		}
		return v, nil
	}
	return bval{}, Invalid("Unknown function %s called", f.Name)
}

// timeArg evaluates a timeuuid, timestamp or date argument to milliseconds.
func (b *binder) timeArg(t parser.Term, recv ColumnSpec, fn string) (int64, bool, error) {
	// The argument type follows the term: now() and timeuuid markers are
	// timeuuids, literals strings of timestamps.
	argType := cqltype.Scalar(cqltype.Timeuuid)
	switch t := t.(type) {
	case *parser.Literal:
		if t.Kind == parser.LitString || t.Kind == parser.LitInteger {
			argType = cqltype.Scalar(cqltype.Timestamp)
		}
	case *parser.FuncCall:
		switch strings.ToLower(t.Name) {
		case "currenttimestamp", "totimestamp":
			argType = cqltype.Scalar(cqltype.Timestamp)
		case "currentdate", "todate":
			argType = cqltype.Scalar(cqltype.Date)
		}
	}
	v, err := b.term(t, ColumnSpec{Keyspace: recv.Keyspace, Table: recv.Table, Name: "arg0(" + fn + ")", Type: argType})
	if err != nil || v.null || v.unset || len(v.b) == 0 || b.prepare {
		// Empty values, valid on the wire, have no time either.
		return 0, true, err
	}
	switch argType.Kind {
	case cqltype.Timestamp:
		return int64(binary.BigEndian.Uint64(v.b)), false, nil
	case cqltype.Date:
		days := int64(binary.BigEndian.Uint32(v.b)) - (1 << 31)
		return days * 86_400_000, false, nil
	}
	ts, err := TimeUUIDTime(v.b)
	if err != nil {
		return 0, false, Invalid("%s: %v", fn, err)
	}
	return (ts - uuidEpochOffset) / 10_000, false, nil
}

func dateOfMillis(ms int64) []byte {
	days := ms / 86_400_000
	if ms < 0 && ms%86_400_000 != 0 {
		days--
	}
	return binary.BigEndian.AppendUint32(nil, uint32(days+(1<<31)))
}

// uuidEpochOffset is 1970-01-01 in 100ns intervals since 1582-10-15.
const uuidEpochOffset = 0x01B21DD213814000

var timeUUIDState struct {
	sync.Mutex
	last  int64
	clock uint16
	node  [6]byte
	init  bool
}

// NewTimeUUID returns a version-1 UUID for t, unique within the process
// even for equal times (the 100ns counter advances).
func NewTimeUUID(t time.Time) [16]byte {
	s := &timeUUIDState
	s.Lock()
	if !s.init {
		var b [8]byte
		_, _ = rand.Read(b[:])
		copy(s.node[:], b[:6])
		s.node[0] |= 0x01 // multicast bit: not a real MAC
		s.clock = binary.BigEndian.Uint16(b[6:]) & 0x3fff
		s.init = true
	}
	ts := t.UnixNano()/100 + uuidEpochOffset
	if ts <= s.last {
		ts = s.last + 1
	}
	s.last = ts
	clock, node := s.clock, s.node
	s.Unlock()
	var u [16]byte
	binary.BigEndian.PutUint32(u[0:], uint32(ts))
	binary.BigEndian.PutUint16(u[4:], uint16(ts>>32))
	binary.BigEndian.PutUint16(u[6:], uint16(ts>>48)&0x0fff|0x1000)
	binary.BigEndian.PutUint16(u[8:], clock|0x8000)
	copy(u[10:], node[:])
	return u
}

// timeUUIDAt returns the smallest (or largest) timeuuid at 100ns time ts,
// as Cassandra's minTimeuuid/maxTimeuuid.
func timeUUIDAt(ts int64, maxUUID bool) [16]byte {
	var u [16]byte
	binary.BigEndian.PutUint32(u[0:], uint32(ts))
	binary.BigEndian.PutUint16(u[4:], uint16(ts>>32))
	binary.BigEndian.PutUint16(u[6:], uint16(ts>>48)&0x0fff|0x1000)
	lsb := uint64(0x8080808080808080)
	if maxUUID {
		lsb = 0x7f7f7f7f7f7f7f7f
	}
	binary.BigEndian.PutUint64(u[8:], lsb)
	return u
}

// TimeUUIDTime returns the 100ns timestamp of a version-1 UUID.
func TimeUUIDTime(u []byte) (int64, error) {
	if len(u) != 16 || u[6]>>4 != 1 {
		return 0, fmt.Errorf("not a time-based UUID")
	}
	hi := int64(binary.BigEndian.Uint16(u[6:]) & 0x0fff)
	mid := int64(binary.BigEndian.Uint16(u[4:]))
	lo := int64(binary.BigEndian.Uint32(u[0:]))
	return hi<<48 | mid<<32 | lo, nil
}

// int32Of and int64Of read serialized integers.
func int32Of(b []byte) int32 { return int32(binary.BigEndian.Uint32(b)) }

// fromJSON decodes one JSON value for recv (fromJson(), INSERT JSON).
func fromJSON(recv ColumnSpec, text []byte) (bval, error) {
	v, err := cqltype.FromJSON(recv.Type, text)
	if err != nil {
		return bval{}, Invalid("Error decoding JSON value for %s: %v", recv.Name, err)
	}
	if v == nil {
		return bval{null: true}, nil
	}
	return bval{b: v}, nil
}
