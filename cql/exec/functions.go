package exec

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/schema"
)

// This file holds the native scalar functions of SELECT clauses that
// selection.go does not: the argument-less time and uuid functions,
// minTimeuuid/maxTimeuuid, toJson, SELECT JSON, and the conversions CAST
// allows (Cassandra 3.11 CastFcts); and INSERT JSON, rewritten into an
// ordinary INSERT of fromJson() values. Values in INSERT, UPDATE and WHERE are
// evaluated by binder.function (values.go).

// nowSel evaluates an argument-less function (now(), currentTimestamp(),
// uuid(), ...) once per row, as Cassandra evaluates non-deterministic
// functions per selected row.
type nowSel struct {
	fn string
	sp ColumnSpec
	v  []byte
}

// nowFunctions are the argument-less native functions and their types.
var nowFunctions = map[string]cqltype.Kind{
	"now": cqltype.Timeuuid, "currenttimeuuid": cqltype.Timeuuid, "uuid": cqltype.UUID,
	"currenttimestamp": cqltype.Timestamp, "currentdate": cqltype.Date, "currenttime": cqltype.Time,
}

func (s *nowSel) spec() ColumnSpec { return s.sp }
func (s *nowSel) aggregate() bool  { return false }
func (s *nowSel) reset()           { s.v = nil }
func (s *nowSel) result() []byte   { return s.v }
func (s *nowSel) add(r *qrow) error {
	if s.v == nil {
		// The executor's clock (Config.Now), as the values of INSERT and
		// WHERE use: a node's now() must not depend on where it is used.
		at := r.at
		if at.IsZero() {
			at = time.Now()
		}
		s.v = nowValue(s.fn, at)
	}
	return nil
}

// nowValue is the value of the argument-less function fn at now.
func nowValue(fn string, now time.Time) []byte {
	switch fn {
	case "now", "currenttimeuuid":
		u := NewTimeUUID(now)
		return u[:]
	case "uuid":
		var u [16]byte
		_, _ = rand.Read(u[:])
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // IETF variant
		return u[:]
	case "currenttimestamp":
		return binary.BigEndian.AppendUint64(nil, uint64(now.UnixMilli()))
	case "currentdate":
		return dateOfMillis(now.UnixMilli())
	case "currenttime":
		y, m, d := now.UTC().Date()
		ns := now.UTC().Sub(time.Date(y, m, d, 0, 0, 0, 0, time.UTC)).Nanoseconds()
		return binary.BigEndian.AppendUint64(nil, uint64(ns))
	}
	return nil
}

// boundUUIDSel is minTimeuuid(ts) or maxTimeuuid(ts) of a timestamp.
type boundUUIDSel struct {
	arg     selector
	maxUUID bool
	sp      ColumnSpec
	v       []byte
}

func (s *boundUUIDSel) spec() ColumnSpec { return s.sp }
func (s *boundUUIDSel) aggregate() bool  { return false }
func (s *boundUUIDSel) reset()           { s.v = nil; s.arg.reset() }
func (s *boundUUIDSel) result() []byte   { return s.v }
func (s *boundUUIDSel) add(r *qrow) error {
	if err := s.arg.add(r); err != nil {
		return err
	}
	v := s.arg.result()
	if len(v) != 8 {
		return nil
	}
	u := timeUUIDAt(int64(binary.BigEndian.Uint64(v))*10_000+uuidEpochOffset, s.maxUUID)
	s.v = u[:]
	return nil
}

// toJSONSel is toJson(arg): the argument's JSON encoding as text; a null
// argument gives the text "null", as in Cassandra.
type toJSONSel struct {
	arg selector
	sp  ColumnSpec
	v   []byte
}

func (s *toJSONSel) spec() ColumnSpec { return s.sp }
func (s *toJSONSel) aggregate() bool  { return s.arg.aggregate() }
func (s *toJSONSel) reset()           { s.v = nil; s.arg.reset() }
func (s *toJSONSel) add(r *qrow) error {
	return s.arg.add(r)
}
func (s *toJSONSel) result() []byte {
	return []byte(cqltype.ToJSON(s.arg.spec().Type, s.arg.result()))
}

// jsonRowSel is the single "[json]" column of SELECT JSON: an object of
// the selected columns by their result names.
type jsonRowSel struct {
	sels []selector
	sp   ColumnSpec
}

func newJSONRowSel(t *schema.Table, sels []selector) *jsonRowSel {
	return &jsonRowSel{sels: sels, sp: ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "[json]", Type: cqltype.Scalar(cqltype.Varchar)}}
}

func (s *jsonRowSel) spec() ColumnSpec { return s.sp }
func (s *jsonRowSel) aggregate() bool {
	for _, x := range s.sels {
		if x.aggregate() {
			return true
		}
	}
	return false
}
func (s *jsonRowSel) reset() {
	for _, x := range s.sels {
		x.reset()
	}
}
func (s *jsonRowSel) add(r *qrow) error {
	for _, x := range s.sels {
		if err := x.add(r); err != nil {
			return err
		}
	}
	return nil
}
func (s *jsonRowSel) result() []byte {
	var b strings.Builder
	b.WriteByte('{')
	for i, x := range s.sels {
		if i > 0 {
			b.WriteString(", ")
		}
		sp := x.spec()
		// A case-sensitive name is written quoted inside the key, so
		// that INSERT JSON reads it back as the same column
		// (Selection.rowToJson in Cassandra 3.11).
		name := sp.Name
		if name != strings.ToLower(name) {
			name = `"` + name + `"`
		}
		b.WriteString(cqltype.ToJSON(cqltype.Scalar(cqltype.Varchar), []byte(name)))
		b.WriteString(": ")
		b.WriteString(cqltype.ToJSON(sp.Type, x.result()))
	}
	b.WriteByte('}')
	return []byte(b.String())
}

// castable reports whether CAST(x AS to) is one of Cassandra 3.11's
// conversions (CastFcts): between numeric types, anything but a blob or a
// collection to text or ascii, timestamps and timeuuids to dates, dates
// and timeuuids to timestamps, and a type to itself.
func castable(from, to cqltype.Type) bool {
	if from.IsCollection() || to.IsCollection() || from.Kind == cqltype.Tuple || to.Kind == cqltype.Tuple {
		return false
	}
	if from.Equal(to) {
		return true
	}
	switch to.Kind {
	case cqltype.Varchar, cqltype.Ascii:
		return from.Kind != cqltype.Blob && from.Kind != cqltype.Custom && from.Kind != cqltype.UDT &&
			!(from.Kind == cqltype.Varchar && to.Kind == cqltype.Ascii)
	case cqltype.Date:
		return from.Kind == cqltype.Timestamp || from.Kind == cqltype.Timeuuid
	case cqltype.Timestamp:
		return from.Kind == cqltype.Date || from.Kind == cqltype.Timeuuid
	}
	return isNumeric(from) && isNumeric(to) && to.Kind != cqltype.Counter
}

// castText is CAST(v AS text): the value's text as Cassandra's
// AbstractType.getString writes it (no CQL quotes; timestamps as
// yyyy-mm-dd hh:mm:ss.SSSZ).
func castText(from cqltype.Type, v []byte) []byte {
	switch from.Kind {
	case cqltype.Varchar, cqltype.Ascii:
		return v
	case cqltype.Timestamp:
		if len(v) == 8 {
			return []byte(cqltype.FormatTimestampJSON(int64(binary.BigEndian.Uint64(v))))
		}
	}
	s := cqltype.Format(from, v)
	if strings.HasPrefix(s, "'") && strings.HasSuffix(s, "'") && len(s) >= 2 {
		s = strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	}
	return []byte(s)
}

// castNumber converts between numeric types as Java's Number conversions
// do: narrowing an integer keeps its low-order bits, a floating-point
// value is truncated toward zero (saturating at the int or long range
// first), and widening is exact.
func castNumber(from, to cqltype.Type, v []byte) ([]byte, error) {
	x, err := cqltype.Unmarshal(from, v)
	if err != nil {
		return nil, Invalid("%v", err)
	}
	var f float64
	isFloat := false
	switch n := x.(type) {
	case float32:
		f, isFloat = float64(n), true
	case float64:
		f, isFloat = n, true
	}
	var rat *big.Rat
	if !isFloat {
		if rat, err = numericRat(from, v); err != nil {
			return nil, err
		}
	}
	switch to.Kind {
	case cqltype.Float:
		if !isFloat {
			f, _ = rat.Float64()
		}
		return cqltype.Marshal(to, float32(f))
	case cqltype.Double:
		if !isFloat {
			f, _ = rat.Float64()
		}
		return cqltype.Marshal(to, f)
	case cqltype.Decimal:
		if isFloat {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, Invalid("Cannot cast %s value %s to decimal", from, cqltype.Format(from, v))
			}
			// BigDecimal.valueOf(double) goes through Double.toString.
			return cqltype.ParseLiteral(to, cqltype.LitFloat, strconv.FormatFloat(f, 'g', -1, 64))
		}
		if from.Kind == cqltype.Decimal {
			return v, nil
		}
		return cqltype.ParseLiteral(to, cqltype.LitInteger, cqltype.Format(from, v))
	}
	// Integer targets.
	var i *big.Int
	if isFloat {
		switch {
		case math.IsNaN(f):
			i = new(big.Int)
		case to.Kind == cqltype.Varint:
			if math.IsInf(f, 0) {
				return nil, Invalid("Cannot cast %s value %s to varint", from, cqltype.Format(from, v))
			}
			i, _ = big.NewFloat(math.Trunc(f)).Int(nil)
		case to.Kind == cqltype.Bigint:
			i = big.NewInt(saturate(f, math.MinInt64, math.MaxInt64))
		default:
			i = big.NewInt(saturate(f, math.MinInt32, math.MaxInt32))
		}
	} else {
		i = new(big.Int).Quo(rat.Num(), rat.Denom())
	}
	if to.Kind == cqltype.Varint {
		return cqltype.Marshal(to, i)
	}
	// Keep the low 64 bits, then narrow: two's complement wrapping.
	low := new(big.Int).And(i, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	switch to.Kind {
	case cqltype.Tinyint:
		return cqltype.Marshal(to, int8(low))
	case cqltype.Smallint:
		return cqltype.Marshal(to, int16(low))
	case cqltype.Int:
		return cqltype.Marshal(to, int32(low))
	}
	return cqltype.Marshal(to, int64(low))
}

func saturate(f float64, lo, hi int64) int64 {
	switch {
	case f <= float64(lo):
		return lo
	case f >= float64(hi):
		return hi
	}
	return int64(f)
}

// insertJSONColumns rewrites INSERT JSON into the equivalent INSERT of
// its columns, each value a fromJson('<its JSON>') call, so that INSERT
// JSON shares every check and the planning of an ordinary INSERT. Columns
// the document leaves out are null (DEFAULT NULL, Cassandra's default:
// the insert deletes them) or untouched (DEFAULT UNSET); key columns are
// never defaulted, so a missing one is reported as usual. While
// preparing, no document is bound: every column is planned as null.
func insertJSONColumns(t *schema.Table, s *parser.InsertStmt, b *binder) (*parser.InsertStmt, error) {
	out := *s
	out.Json, out.Columns, out.Values = nil, nil, nil
	doc, err := b.term(s.Json, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "[json]", Type: cqltype.Scalar(cqltype.Varchar)})
	if err != nil {
		return nil, err
	}
	if b.prepare {
		for _, c := range selectOrder(t) {
			out.Columns = append(out.Columns, c.Name)
			out.Values = append(out.Values, &parser.Literal{Kind: parser.LitNull})
		}
		return &out, nil
	}
	if doc.null || doc.unset {
		return nil, Invalid("Got null for INSERT JSON values")
	}
	dec := json.NewDecoder(bytes.NewReader(doc.b))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return nil, Invalid("Could not decode JSON string as a map: %v. (String was: %s)", err, doc.b)
	}
	if dec.More() || obj == nil {
		return nil, Invalid("Could not decode JSON string as a map: not a single JSON object. (String was: %s)", doc.b)
	}
	given := make(map[string]json.RawMessage, len(obj))
	for key, raw := range obj {
		// A quoted key names a case-sensitive column; others are
		// lower-cased like unquoted identifiers (Json.parseJson).
		name := strings.ToLower(key)
		if len(key) >= 2 && strings.HasPrefix(key, `"`) && strings.HasSuffix(key, `"`) {
			name = strings.ReplaceAll(key[1:len(key)-1], `""`, `"`)
		}
		if t.Column(name) == nil {
			return nil, Invalid("JSON values map contains unrecognized column: %s", name)
		}
		given[name] = raw
	}
	for _, c := range selectOrder(t) {
		raw, ok := given[c.Name]
		switch {
		case ok:
			out.Columns = append(out.Columns, c.Name)
			out.Values = append(out.Values, &parser.FuncCall{Name: "fromjson", Args: []parser.Term{&parser.Literal{Kind: parser.LitString, Text: string(raw)}}})
		case !s.DefaultUnset && !c.IsPrimaryKey():
			out.Columns = append(out.Columns, c.Name)
			out.Values = append(out.Values, &parser.Literal{Kind: parser.LitNull})
		}
	}
	return &out, nil
}
