package exec

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/storage"
)

// funcTable is a table with a column of most native types and one row of
// values, for evaluating selectors without a cluster.
func funcTable(t *testing.T) (*schema.Table, *qrow) {
	t.Helper()
	cols := []struct{ name, typ string }{
		{"ts", "timestamp"}, {"tu", "timeuuid"}, {"d", "date"}, {"i", "int"}, {"big", "bigint"},
		{"f", "double"}, {"dec", "decimal"}, {"txt", "text"}, {"b", "blob"}, {"l", "list<int>"},
		{"m", "map<int, text>"}, {"s", "set<text>"}, {"u", "uuid"}, {"ip", "inet"}, {"ok", "boolean"},
		{"fl", "frozen<list<text>>"}, {"tm", "time"}, {"n", "int"},
	}
	tb := &schema.Table{Keyspace: "ks", Name: "t", Columns: []schema.Column{
		{ID: 0, Name: "k", Type: cqltype.Scalar(cqltype.Int), Kind: schema.PartitionKey, Position: 0},
	}}
	for i, c := range cols {
		typ, err := cqltype.Parse(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		tb.Columns = append(tb.Columns, schema.Column{ID: uint32(i + 1), Name: c.name, Type: typ, Kind: schema.Regular, Position: -1})
	}
	tb.Canonicalize()
	lit := map[string]string{
		"ts": "'2011-02-03 04:05:06.789+0000'", "tu": "50554d6e-29bb-11e5-b345-feff819cdc9f", "d": "'2011-02-03'",
		"i": "-7", "big": "9000000000", "f": "2.5", "dec": "1.50", "txt": "'it''s \"q\"'", "b": "0x6869",
		"l": "[3, 1, 2]", "m": "{2: 'b', 1: 'a'}", "s": "{'y', 'x'}", "u": "6ab09bec-e68e-48d9-a5f8-97e6fb4c9b47",
		"ip": "'127.0.0.1'", "ok": "true", "fl": "['a']", "tm": "'13:30:00'",
	}
	row := storage.NewRow()
	for name, text := range lit {
		c := tb.Column(name)
		v, err := parseTerm(t, text, c.Type)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		row.Cells = append(row.Cells, storage.Cell{Column: c.ID, Timestamp: 1234, Value: v, TTL: 60, Expiry: 1060})
	}
	sort.Slice(row.Cells, func(i, j int) bool { return row.Cells[i].Column < row.Cells[j].Column })
	k, _ := cqltype.Marshal(cqltype.Scalar(cqltype.Int), int32(1))
	return tb, &qrow{token: 42, pk: [][]byte{k}, row: &row, now: 1000}
}

// parseTerm binds a CQL term written as text to a value of typ.
func parseTerm(t *testing.T, text string, typ cqltype.Type) ([]byte, error) {
	t.Helper()
	st, err := parser.Parse("INSERT INTO ks.t (v) VALUES (" + text + ")")
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	b, err := newBinder(nil, nil, 0, time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC), 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.term(st.(*parser.InsertStmt).Values[0], ColumnSpec{Keyspace: "ks", Table: "t", Name: "v", Type: typ})
	if err != nil {
		return nil, err
	}
	return v.b, nil
}

// selectRow evaluates the selectors of q on r and renders each output
// column as "name=value".
func selectRow(t *testing.T, tb *schema.Table, r *qrow, q string) (string, error) {
	t.Helper()
	st, err := parser.Parse(q)
	if err != nil {
		t.Fatalf("parse %s: %v", q, err)
	}
	sel, err := buildSelection(tb, st.(*parser.SelectStmt), false)
	if err != nil {
		return "", err
	}
	row, err := sel.project(r)
	if err != nil {
		return "", err
	}
	var out []string
	for i, sp := range sel.specs() {
		v := cqltype.Format(sp.Type, row[i])
		if sp.Type.Kind == cqltype.Varchar {
			v = string(row[i])
		}
		out = append(out, sp.Name+"="+v)
	}
	return strings.Join(out, " "), nil
}

func errText(err error) string {
	if ce, ok := err.(*Error); ok {
		return fmt.Sprintf("0x%04x %s", int32(ce.Code), ce.Message)
	}
	return err.Error()
}

// Deterministic functions in a SELECT: their result column names and
// values as Cassandra 3.11 gives them, and the errors for unknown
// functions and wrong argument types (Invalid, 0x2200).
func TestSelectorFunctions(t *testing.T) {
	tb, r := funcTable(t)
	for _, tc := range []struct{ q, want string }{
		{"SELECT writetime(i), ttl(i) FROM ks.t", "writetime(i)=1234 ttl(i)=60"},
		{"SELECT token(k) FROM ks.t", "system.token(k)=42"},
		{"SELECT toDate(ts), toUnixTimestamp(ts), toTimestamp(d) FROM ks.t",
			"system.todate(ts)='2011-02-03' system.tounixtimestamp(ts)=1296705906789 system.totimestamp(d)='2011-02-03 00:00:00.000000+0000'"},
		{"SELECT dateOf(tu), unixTimestampOf(tu), toDate(tu) FROM ks.t",
			"system.dateof(tu)='2015-07-14 00:00:18.805000+0000' system.unixtimestampof(tu)=1436832018805 system.todate(tu)='2015-07-14'"},
		{"SELECT minTimeuuid(ts), maxTimeuuid(ts) FROM ks.t",
			"system.mintimeuuid(ts)=c9072950-2f4a-11e0-8080-808080808080 system.maxtimeuuid(ts)=c9072950-2f4a-11e0-7f7f-7f7f7f7f7f7f"},
		{"SELECT intAsBlob(i), blobAsText(b), textAsBlob(txt) FROM ks.t",
			"system.intasblob(i)=0xfffffff9 system.blobastext(b)=hi system.textasblob(txt)=0x69742773202271" + "22"},
		{"SELECT cast(i as text), cast(f as int), cast(big as int), cast(i as double), cast(dec as text), cast(f as decimal) FROM ks.t",
			"cast(i as text)=-7 cast(f as int)=2 cast(big as int)=410065408 cast(i as double)=-7 cast(dec as text)=1.50 cast(f as decimal)=2.5"},
		{"SELECT cast(ts as text), cast(ts as date), cast(tu as timestamp), cast(ip as text), cast(i as varint) FROM ks.t",
			"cast(ts as text)=2011-02-03 04:05:06.789Z cast(ts as date)='2011-02-03' cast(tu as timestamp)='2015-07-14 00:00:18.805000+0000' cast(ip as text)=127.0.0.1 cast(i as varint)=-7"},
		{"SELECT cast(i as int) AS same FROM ks.t", "same=-7"},
		{"SELECT toJson(txt), toJson(ts), toJson(b), toJson(m), toJson(n) FROM ks.t",
			`system.tojson(txt)="it's \"q\"" system.tojson(ts)="2011-02-03 04:05:06.789Z" system.tojson(b)="0x6869" system.tojson(m)={"1": "a", "2": "b"} system.tojson(n)=null`},
		{"SELECT JSON k, i, l FROM ks.t", `[json]={"k": 1, "i": -7, "l": [3, 1, 2]}`},
		{"SELECT JSON k, writetime(i), toJson(s) AS \"Js\" FROM ks.t", `[json]={"k": 1, "writetime(i)": 1234, "\"Js\"": "[\"x\", \"y\"]"}`},
		{"SELECT JSON count(*) FROM ks.t", `[json]={"count": 1}`},
		// Errors.
		{"SELECT nosuch(i) FROM ks.t", "0x2200 Unknown function 'nosuch'"},
		{"SELECT now(i) FROM ks.t", "0x2200 Invalid number of arguments in call to function system.now: 0 required but 1 provided"},
		{"SELECT toDate(i) FROM ks.t", "0x2200 Type error: i cannot be passed as argument 0 of function system.todate of type timestamp"},
		{"SELECT minTimeuuid(i) FROM ks.t", "0x2200 Type error: i cannot be passed as argument 0 of function system.mintimeuuid of type timestamp"},
		{"SELECT intAsBlob(txt) FROM ks.t", "0x2200 Type error: txt cannot be passed as argument 0 of function system.intasblob of type int"},
		{"SELECT blobAsInt(i) FROM ks.t", "0x2200 Type error: i cannot be passed as argument 0 of function system.blobasint of type blob"},
		{"SELECT blobAsInt(b) FROM ks.t", "0x2200 In call to function system.blobasint(b), value 0x6869 is not a valid binary representation for type int"},
		{"SELECT cast(txt as int) FROM ks.t", "0x2200 txt cannot be cast to int"},
		{"SELECT cast(l as text) FROM ks.t", "0x2200 l cannot be cast to text"},
		{"SELECT cast(b as text) FROM ks.t", "0x2200 b cannot be cast to text"},
		{"SELECT fromJson(txt) FROM ks.t", "0x2200 fromJson() cannot be used in the selection clause of a SELECT statement"},
	} {
		got, err := selectRow(t, tb, r, tc.q)
		if err != nil {
			got = errText(err)
		}
		if got != tc.want {
			t.Errorf("%s\n got: %s\nwant: %s", tc.q, got, tc.want)
		}
	}
}

// The argument-less functions are evaluated per row at the time of the
// read: their types, names, and values near now.
func TestSelectorNowFunctions(t *testing.T) {
	tb, r := funcTable(t)
	st, err := parser.Parse("SELECT now(), currentTimeUUID(), uuid(), currentTimestamp(), currentDate(), currentTime(), toUnixTimestamp(now()), toJson(currentDate()) FROM ks.t")
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	sel, err := buildSelection(tb, st.(*parser.SelectStmt), false)
	if err != nil {
		t.Fatal(err)
	}
	row, err := sel.project(r)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	var names []string
	for _, sp := range sel.specs() {
		names = append(names, sp.Name+":"+sp.Type.String())
	}
	want := "system.now():timeuuid system.currenttimeuuid():timeuuid system.uuid():uuid system.currenttimestamp():timestamp " +
		"system.currentdate():date system.currenttime():time system.tounixtimestamp(system.now()):bigint system.tojson(system.currentdate()):text"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("columns\n got: %s\nwant: %s", got, want)
	}
	inRange := func(what string, ms int64) {
		if ms < before.UnixMilli() || ms > after.UnixMilli() {
			t.Errorf("%s = %d ms, not within [%d, %d]", what, ms, before.UnixMilli(), after.UnixMilli())
		}
	}
	for i, fn := range []string{"now", "currenttimeuuid"} {
		ms, err := timeMillis(cqltype.Timeuuid, row[i])
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		inRange(fn, ms)
	}
	if row[2][6]>>4 != 4 {
		t.Errorf("uuid() = %x: not a version 4 UUID", row[2])
	}
	inRange("currentTimestamp", int64(binary.BigEndian.Uint64(row[3])))
	if got, want := cqltype.Format(cqltype.Scalar(cqltype.Date), row[4]), "'"+after.UTC().Format("2006-01-02")+"'"; got != want && after.UTC().Day() == before.UTC().Day() {
		t.Errorf("currentDate() = %s, want %s", got, want)
	}
	if ns := int64(binary.BigEndian.Uint64(row[5])); ns < 0 || ns >= 86400e9 {
		t.Errorf("currentTime() = %d ns: not a time of day", ns)
	}
	inRange("toUnixTimestamp(now())", int64(binary.BigEndian.Uint64(row[6])))
	if got := string(row[7]); !strings.HasPrefix(got, `"`+before.UTC().Format("2006-")) {
		t.Errorf("toJson(currentDate()) = %s", got)
	}
}

// Functions as values in INSERT, UPDATE and WHERE terms, evaluated by the
// binder at a fixed time.
func TestValueFunctions(t *testing.T) {
	for _, tc := range []struct{ term, typ, want string }{
		{"currentTimestamp()", "timestamp", "'2020-05-06 07:08:09.000000+0000'"},
		{"currentDate()", "date", "'2020-05-06'"},
		{"currentTime()", "time", "'07:08:09.000000000'"},
		{"toDate(currentTimestamp())", "date", "'2020-05-06'"},
		{"toUnixTimestamp(currentTimestamp())", "bigint", "1588748889000"},
		{"minTimeuuid('2011-02-03 04:05:06.789+0000')", "timeuuid", "c9072950-2f4a-11e0-8080-808080808080"},
		{"intAsBlob(7)", "blob", "0x00000007"},
		{"blobAsBigint(0x0000000000000009)", "bigint", "9"},
		{"fromJson('{\"a\": [1, 2]}')", "map<text, frozen<list<int>>>", "{'a': [1, 2]}"},
		{"fromJson('\"2011-02-03 04:05:06.789Z\"')", "timestamp", "'2011-02-03 04:05:06.789000+0000'"},
		{"fromJson('null')", "int", "null"},
		{"fromJson('\"12\"')", "int", "12"},
		{"now()", "int", "0x2200 Type error: now() returns timeuuid, cannot be assigned to v of type int"},
		{"nosuch(1)", "int", "0x2200 Unknown function nosuch called"},
		{"fromJson('[1')", "list<int>", "0x2200 Error decoding JSON value for v: Could not decode JSON string '[1'"},
		{"fromJson('\"x\"')", "int", "0x2200 Error decoding JSON value for v: Expected an int value, but got a String: \"x\""},
		{"fromJson('1')", "text", "0x2200 Error decoding JSON value for v: Expected a text string, but got a Number: 1"},
		{"toJson(1)", "text", "0x2200 toJson() may only be used within the selection clause of SELECT statements"},
	} {
		typ, err := cqltype.Parse(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		v, err := parseTerm(t, tc.term, typ)
		got := cqltype.Format(typ, v)
		if err != nil {
			got = errText(err)
		}
		if !strings.HasPrefix(got, tc.want) || (!strings.HasPrefix(tc.want, "0x22") && got != tc.want) {
			t.Errorf("%s as %s\n got: %s\nwant: %s", tc.term, tc.typ, got, tc.want)
		}
	}
}

// INSERT JSON becomes the INSERT of its columns as fromJson() values;
// what the document leaves out is null (DEFAULT NULL) or untouched
// (DEFAULT UNSET), except key columns, which are never defaulted.
func TestInsertJSONColumns(t *testing.T) {
	tb := &schema.Table{Keyspace: "ks", Name: "j", Columns: []schema.Column{
		{ID: 0, Name: "k", Type: cqltype.Scalar(cqltype.Int), Kind: schema.PartitionKey, Position: 0},
		{ID: 1, Name: "c", Type: cqltype.Scalar(cqltype.Int), Kind: schema.Clustering, Position: 0},
		{ID: 2, Name: "v", Type: cqltype.Scalar(cqltype.Varchar), Kind: schema.Regular, Position: -1},
		{ID: 3, Name: "Up", Type: cqltype.Scalar(cqltype.Int), Kind: schema.Regular, Position: -1},
	}}
	tb.Canonicalize()
	render := func(s *parser.InsertStmt) string {
		var out []string
		for i, c := range s.Columns {
			switch v := s.Values[i].(type) {
			case *parser.FuncCall:
				out = append(out, c+"="+v.Args[0].(*parser.Literal).Text)
			case *parser.Literal:
				out = append(out, c+"=null")
			}
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct{ q, want string }{
		{`INSERT INTO ks.j JSON '{"k": 1, "c": 2, "v": "x"}'`, `k=1 c=2 Up=null v="x"`},
		{`INSERT INTO ks.j JSON '{"K": 1, "c": 2, "\"Up\"": 3}' DEFAULT UNSET`, `k=1 c=2 Up=3`},
		{`INSERT INTO ks.j JSON '{"k": 1}' DEFAULT NULL`, `k=1 Up=null v=null`},
		{`INSERT INTO ks.j JSON '{"k": 1, "nope": 2}'`, "0x2200 JSON values map contains unrecognized column: nope"},
		{`INSERT INTO ks.j JSON '[1]'`, "0x2200 Could not decode JSON string as a map"},
		{`INSERT INTO ks.j JSON '{"k": 1} x'`, "0x2200 Could not decode JSON string as a map"},
		{`INSERT INTO ks.j JSON 'null'`, "0x2200 Could not decode JSON string as a map"},
	} {
		st, err := parser.Parse(tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
		b, err := newBinder(nil, nil, 0, time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		out, err := insertJSONColumns(tb, st.(*parser.InsertStmt), b)
		if err != nil {
			got = errText(err)
		} else {
			got = render(out)
		}
		if !strings.HasPrefix(got, tc.want) || (!strings.HasPrefix(tc.want, "0x22") && got != tc.want) {
			t.Errorf("%s\n got: %s\nwant: %s", tc.q, got, tc.want)
		}
	}
}

// Numeric casts follow Java's conversions: narrowing wraps, floating
// point truncates toward zero after saturating.
func TestCastNumber(t *testing.T) {
	for _, tc := range []struct{ from, val, to, want string }{
		{"bigint", "9000000000", "int", "410065408"},
		{"int", "300", "tinyint", "44"},
		{"double", "-2.9", "int", "-2"},
		{"double", "1e300", "int", "2147483647"},
		{"double", "1e300", "smallint", "-1"},
		{"double", "1e300", "bigint", "9223372036854775807"},
		{"decimal", "12.75", "int", "12"},
		{"varint", "123456789012345678901234567890", "double", "1.2345678901234568e+29"},
		{"int", "5", "decimal", "5"},
		{"float", "0.5", "decimal", "0.5"},
		{"double", "NaN", "int", "0"},
		{"double", "Infinity", "varint", "error"},
	} {
		from, _ := cqltype.Parse(tc.from)
		to, _ := cqltype.Parse(tc.to)
		v, err := parseTerm(t, tc.val, from)
		if err != nil {
			t.Fatal(err)
		}
		b, err := castNumber(from, to, v)
		got := cqltype.Format(to, b)
		if err != nil {
			got = "error"
		}
		if got != tc.want {
			t.Errorf("cast(%s %s as %s) = %s, want %s", tc.from, tc.val, tc.to, got, tc.want)
		}
	}
}
