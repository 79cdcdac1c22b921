package parser

import (
	"testing"

	"github.com/cosmosd/cosmosd/cqltype"
)

func TestParseInsert(t *testing.T) {
	runParseCases(t, []parseCase{
		{"seed", "insert into uprofile.user (user, id, message) values ('theo', 1, 'hello')",
			&InsertStmt{Table: tbl("uprofile", "user"), Columns: []string{"user", "id", "message"},
				Values: []Term{str("theo"), num("1"), str("hello")}}},
		{"markers", "INSERT INTO tweet (timeline, id, text) VALUES (?, ?, ?)",
			&InsertStmt{Table: tbl("", "tweet"), Columns: []string{"timeline", "id", "text"},
				Values: []Term{qm(0), qm(1), qm(2)}}},
		{"named markers", `INSERT INTO t (a, b) VALUES (:a, :"B")`,
			&InsertStmt{Table: tbl("", "t"), Columns: []string{"a", "b"}, Values: []Term{named(0, "a"), named(1, "B")}}},
		{"if not exists using", "INSERT INTO t (a) VALUES (1) IF NOT EXISTS USING TTL ? AND TIMESTAMP ?",
			&InsertStmt{Table: tbl("", "t"), Columns: []string{"a"}, Values: []Term{num("1")}, IfNotExists: true,
				Using: Using{TTL: qm(0), Timestamp: qm(1)}}},
		{"using timestamp ttl", "INSERT INTO t (a) VALUES (1) USING TIMESTAMP 1234567890 AND TTL 86400",
			&InsertStmt{Table: tbl("", "t"), Columns: []string{"a"}, Values: []Term{num("1")},
				Using: Using{TTL: num("86400"), Timestamp: num("1234567890")}}},
		{"collections", "INSERT INTO t (l, s, m, e, tu, n) VALUES ([1, 2], {'a', 'b'}, {'k': 1, 'j': [2]}, {}, (1, 'x', null), [])",
			&InsertStmt{Table: tbl("", "t"), Columns: []string{"l", "s", "m", "e", "tu", "n"}, Values: []Term{
				list(num("1"), num("2")),
				&SetLit{Elems: []Term{str("a"), str("b")}},
				&MapLit{Keys: []Term{str("k"), str("j")}, Values: []Term{num("1"), list(num("2"))}},
				&SetLit{},
				tuple(num("1"), str("x"), null()),
				&ListLit{}}}},
		{"nested collections", "INSERT INTO t (a) VALUES ({1: {2: [{3}]}})",
			&InsertStmt{Table: tbl("", "t"), Columns: []string{"a"}, Values: []Term{
				&MapLit{Keys: []Term{num("1")}, Values: []Term{
					&MapLit{Keys: []Term{num("2")}, Values: []Term{list(&SetLit{Elems: []Term{num("3")}})}}}}}}},
		{"udt literal", "INSERT INTO t (a) VALUES ({street: '1 Main', zip: 12345, \"Tags\": {'x'}})",
			&InsertStmt{Table: tbl("", "t"), Columns: []string{"a"}, Values: []Term{
				&UDTLit{Fields: []string{"street", "zip", "Tags"}, Values: []Term{str("1 Main"), num("12345"), &SetLit{Elems: []Term{str("x")}}}}}}},
		{"functions and casts", "INSERT INTO t (id, ts, b, c) VALUES (now(), toTimestamp(now()), (bigint)?, minTimeuuid('2013-02-02 10:00+0000'))",
			&InsertStmt{Table: tbl("", "t"), Columns: []string{"id", "ts", "b", "c"}, Values: []Term{
				&FuncCall{Name: "now"},
				&FuncCall{Name: "totimestamp", Args: []Term{&FuncCall{Name: "now"}}},
				&Cast{Term: qm(0), Type: tBigint},
				&FuncCall{Name: "mintimeuuid", Args: []Term{str("2013-02-02 10:00+0000")}}}}},
		{"map of markers", "INSERT INTO t (m) VALUES ({?: ?, :k: :v})",
			&InsertStmt{Table: tbl("", "t"), Columns: []string{"m"}, Values: []Term{
				&MapLit{Keys: []Term{qm(0), named(2, "k")}, Values: []Term{qm(1), named(3, "v")}}}}},
		{"json", "INSERT INTO t JSON '{\"a\": 1}'",
			&InsertStmt{Table: tbl("", "t"), Json: str(`{"a": 1}`)}},
		{"json marker default unset", "INSERT INTO t JSON ? DEFAULT UNSET IF NOT EXISTS USING TTL 5",
			&InsertStmt{Table: tbl("", "t"), Json: qm(0), DefaultUnset: true, IfNotExists: true, Using: Using{TTL: num("5")}}},
		{"json default null", "INSERT INTO t JSON :j DEFAULT NULL",
			&InsertStmt{Table: tbl("", "t"), Json: named(0, "j")}},
		{"json as column", "INSERT INTO t (json) VALUES (1)",
			&InsertStmt{Table: tbl("", "t"), Columns: []string{"json"}, Values: []Term{num("1")}}},
	})
}

func TestParseLiterals(t *testing.T) {
	lit := func(k LitKind, s string) *Literal { return &Literal{Kind: k, Text: s} }
	for _, tc := range []struct {
		in   string
		want Term
	}{
		{"'it''s'", str("it's")},
		{"''", str("")},
		{"$$it's $ a \"pg\" string$$", str(`it's $ a "pg" string`)},
		{"$$$$", str("")},
		{"42", num("42")},
		{"-42", num("-42")},
		{"0", num("0")},
		{"1.5", flt("1.5")},
		{"-1.5e-3", flt("-1.5e-3")},
		{"2.", flt("2.")},
		{"1E10", flt("1E10")},
		{"NaN", flt("NaN")},
		{"-NaN", flt("NaN")},
		{"Infinity", flt("Infinity")},
		{"-infinity", flt("-Infinity")},
		{"true", boolean("true")},
		{"FALSE", boolean("false")},
		{"null", null()},
		{"NULL", null()},
		{"0xCAFE", lit(LitBlob, "0xCAFE")},
		{"0X", lit(LitBlob, "0X")},
		{"123e4567-e89b-12d3-a456-426614174000", lit(LitUUID, "123e4567-e89b-12d3-a456-426614174000")},
		{"ABCDEF01-E89B-12D3-A456-426614174000", lit(LitUUID, "ABCDEF01-E89B-12D3-A456-426614174000")},
		{"1h30m", lit(LitDuration, "1h30m")},
		{"12mo", lit(LitDuration, "12mo")},
		{"3d", lit(LitDuration, "3d")},
		{"-3d", lit(LitDuration, "-3d")},
		{"1y2mo3w4d5h6m7s8ms9us10ns", lit(LitDuration, "1y2mo3w4d5h6m7s8ms9us10ns")},
		{"5µs", lit(LitDuration, "5µs")},
		{"1H30M", lit(LitDuration, "1H30M")},
		{"P1DT2H", lit(LitDuration, "P1DT2H")},
		{"P1W", lit(LitDuration, "P1W")},
		{"PT5M", lit(LitDuration, "PT5M")},
		{"P1Y2M3DT4H5M6S", lit(LitDuration, "P1Y2M3DT4H5M6S")},
		{"-P2D", lit(LitDuration, "-P2D")},
		{"P0001-02-03T04:05:06", lit(LitDuration, "P0001-02-03T04:05:06")},
	} {
		q := "INSERT INTO t (a) VALUES (" + tc.in + ")"
		got, err := Parse(q)
		if err != nil {
			t.Errorf("Parse(%q): %v", q, err)
			continue
		}
		if v := got.(*InsertStmt).Values; len(v) != 1 || !termEqual(v[0], tc.want) {
			t.Errorf("literal %s: got %s, want %s", tc.in, dump(v), dump(tc.want))
		}
	}
}

func TestParseUpdate(t *testing.T) {
	runParseCases(t, []parseCase{
		{"simple", "UPDATE ks.t SET a = 1, b = 'x' WHERE pk = 1 AND ck = 2",
			&UpdateStmt{Table: tbl("ks", "t"),
				Assignments: []Assignment{{Column: "a", Value: num("1")}, {Column: "b", Value: str("x")}},
				Where:       []Relation{eq("pk", num("1")), eq("ck", num("2"))}}},
		{"using before set", "UPDATE t USING TTL ? AND TIMESTAMP ? SET a = ? WHERE pk = ?",
			&UpdateStmt{Table: tbl("", "t"), Using: Using{TTL: qm(0), Timestamp: qm(1)},
				Assignments: []Assignment{{Column: "a", Value: qm(2)}}, Where: []Relation{eq("pk", qm(3))}}},
		{"counters", "UPDATE t SET c = c + 1, d = d - 2, e = e -3, f = f+-1 WHERE pk = 1",
			&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{
				{Column: "c", Op: AssignAdd, Value: num("1")},
				{Column: "d", Op: AssignSub, Value: num("2")},
				{Column: "e", Op: AssignSub, Value: num("3")},
				{Column: "f", Op: AssignAdd, Value: num("-1")}},
				Where: []Relation{eq("pk", num("1"))}}},
		{"collections", "UPDATE t SET s = s + {'a'}, l = [1, 2] + l, m = m + {'k': 'v'}, s2 = s2 - {'b'}, l2 = l2 + ? WHERE pk = 1",
			&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{
				{Column: "s", Op: AssignAdd, Value: &SetLit{Elems: []Term{str("a")}}},
				{Column: "l", Op: AssignPrepend, Value: list(num("1"), num("2"))},
				{Column: "m", Op: AssignAdd, Value: &MapLit{Keys: []Term{str("k")}, Values: []Term{str("v")}}},
				{Column: "s2", Op: AssignSub, Value: &SetLit{Elems: []Term{str("b")}}},
				{Column: "l2", Op: AssignAdd, Value: qm(0)}},
				Where: []Relation{eq("pk", num("1"))}}},
		{"shorthand", "UPDATE t SET c += 1, s -= {'a'} WHERE pk = 1",
			&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{
				{Column: "c", Op: AssignAdd, Value: num("1")},
				{Column: "s", Op: AssignSub, Value: &SetLit{Elems: []Term{str("a")}}}},
				Where: []Relation{eq("pk", num("1"))}}},
		{"element and field", "UPDATE t SET m['k'] = 'v', l[0] = 5, addr.city = 'Paris', m[?] = ? WHERE pk = 1",
			&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{
				{Column: "m", Key: str("k"), Value: str("v")},
				{Column: "l", Key: num("0"), Value: num("5")},
				{Column: "addr", Field: "city", Value: str("Paris")},
				{Column: "m", Key: qm(0), Value: qm(1)}},
				Where: []Relation{eq("pk", num("1"))}}},
		{"function value", "UPDATE t SET ts = now() WHERE pk = 1",
			&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{{Column: "ts", Value: &FuncCall{Name: "now"}}},
				Where: []Relation{eq("pk", num("1"))}}},
		{"if exists", "UPDATE t SET a = 1 WHERE pk = 1 IF EXISTS",
			&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{{Column: "a", Value: num("1")}},
				Where: []Relation{eq("pk", num("1"))}, IfExists: true}},
		{"if conditions", "UPDATE t SET a = 1 WHERE pk = 1 IF a = 0 AND b IN (1, 2) AND m['k'] = 'v' AND l[0] != ? AND addr.zip > 5 AND c IN ? AND m['j'] IN ('a')",
			&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{{Column: "a", Value: num("1")}},
				Where: []Relation{eq("pk", num("1"))}, Conditions: []Condition{
					{Column: "a", Op: OpEq, Value: num("0")},
					{Column: "b", Op: OpIn, Value: in(num("1"), num("2"))},
					{Column: "m", Key: str("k"), Op: OpEq, Value: str("v")},
					{Column: "l", Key: num("0"), Op: OpNeq, Value: qm(0)},
					{Column: "addr", Field: "zip", Op: OpGt, Value: num("5")},
					{Column: "c", Op: OpIn, Value: qm(1)},
					{Column: "m", Key: str("j"), Op: OpIn, Value: in(str("a"))}}}},
		{"exists column condition", "UPDATE t SET a = 1 WHERE pk = 1 IF exists = true",
			&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{{Column: "a", Value: num("1")}},
				Where: []Relation{eq("pk", num("1"))}, Conditions: []Condition{{Column: "exists", Value: boolean("true")}}}},
		{"in where", "UPDATE t SET a = null WHERE pk IN (1, 2) AND ck = 3",
			&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{{Column: "a", Value: null()}},
				Where: []Relation{rel("pk", OpIn, in(num("1"), num("2"))), eq("ck", num("3"))}}},
	})
}

func TestParseDelete(t *testing.T) {
	runParseCases(t, []parseCase{
		{"row", "DELETE FROM t WHERE pk = 1",
			&DeleteStmt{Table: tbl("", "t"), Where: []Relation{eq("pk", num("1"))}}},
		{"columns", "DELETE a, m['k'], l[?], addr.city FROM ks.t USING TIMESTAMP 123 WHERE pk = ? AND ck > 5 IF EXISTS",
			&DeleteStmt{Table: tbl("ks", "t"), Columns: []DeleteTarget{
				{Column: "a"}, {Column: "m", Key: str("k")}, {Column: "l", Key: qm(0)}, {Column: "addr", Field: "city"}},
				Using: Using{Timestamp: num("123")},
				Where: []Relation{eq("pk", qm(1)), rel("ck", OpGt, num("5"))}, IfExists: true}},
		{"conditions", "DELETE FROM t WHERE pk IN ? IF a = 1 AND b CONTAINS 'x'",
			&DeleteStmt{Table: tbl("", "t"), Where: []Relation{rel("pk", OpIn, qm(0))},
				Conditions: []Condition{{Column: "a", Value: num("1")}, {Column: "b", Op: OpContains, Value: str("x")}}}},
	})
}

func TestParseBatch(t *testing.T) {
	runParseCases(t, []parseCase{
		{"logged", `BEGIN BATCH
			INSERT INTO t (a, b) VALUES (?, ?);
			UPDATE t SET b = ? WHERE a = ?;
			DELETE FROM t WHERE a = :x
		APPLY BATCH;`,
			&BatchStmt{Kind: BatchLogged, Statements: []Statement{
				&InsertStmt{Table: tbl("", "t"), Columns: []string{"a", "b"}, Values: []Term{qm(0), qm(1)}},
				&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{{Column: "b", Value: qm(2)}}, Where: []Relation{eq("a", qm(3))}},
				&DeleteStmt{Table: tbl("", "t"), Where: []Relation{eq("a", named(4, "x"))}}}}},
		{"unlogged using", "BEGIN UNLOGGED BATCH USING TIMESTAMP ? INSERT INTO t (a) VALUES (?) INSERT INTO t (a) VALUES (2) APPLY BATCH",
			&BatchStmt{Kind: BatchUnlogged, Using: Using{Timestamp: qm(0)}, Statements: []Statement{
				&InsertStmt{Table: tbl("", "t"), Columns: []string{"a"}, Values: []Term{qm(1)}},
				&InsertStmt{Table: tbl("", "t"), Columns: []string{"a"}, Values: []Term{num("2")}}}}},
		{"counter", "begin counter batch update t set c = c + 1 where k = 1; apply batch",
			&BatchStmt{Kind: BatchCounter, Statements: []Statement{
				&UpdateStmt{Table: tbl("", "t"), Assignments: []Assignment{{Column: "c", Op: AssignAdd, Value: num("1")}}, Where: []Relation{eq("k", num("1"))}}}}},
		{"empty", "BEGIN BATCH APPLY BATCH", &BatchStmt{}},
	})
}

func TestParseMisc(t *testing.T) {
	runParseCases(t, []parseCase{
		{"use quoted", `USE "ks"`, &UseStmt{Keyspace: "ks"}},
		{"use quoted case", `USE "MyKs"`, &UseStmt{Keyspace: "MyKs"}},
		{"use", "use MyKs;", &UseStmt{Keyspace: "myks"}},
		{"truncate", "TRUNCATE ks.t", &TruncateStmt{Table: tbl("ks", "t")}},
		{"truncate table", "TRUNCATE TABLE t", &TruncateStmt{Table: tbl("", "t")}},
		{"comments", "-- leading\nSELECT /* inline\n comment */ a // trailing\nFROM t -- end",
			&SelectStmt{Table: tbl("", "t"), Selectors: colSel("a")}},
	})
}

// termEqual compares terms structurally.
func termEqual(a, b Term) bool { return dump(a) == dump(b) }

var _ = cqltype.Int
