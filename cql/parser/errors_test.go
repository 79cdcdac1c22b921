package parser

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		q         string
		line, col int
		msg       string // substring of Msg
	}{
		{"", 1, 0, "empty statement"},
		{"  ;", 1, 2, "empty statement"},
		{"-- only a comment", 1, 17, "empty statement"},
		{"FOO", 1, 0, "no viable alternative at input 'FOO'"},
		{"SELECT * FROMM t", 1, 9, "mismatched input 'FROMM' expecting K_FROM"},
		{"SELECT x", 1, 8, "mismatched input '<EOF>' expecting K_FROM"},
		{"SELECT a, b c FROM t", 1, 12, "mismatched input 'c' expecting K_FROM"},
		{"SELECT * FROM t WHERE", 1, 21, "expecting IDENT"},
		{"SELECT * FROM t WHERE a", 1, 23, "no viable alternative at input '<EOF>'"},
		{"SELECT * FROM t WHERE a = b", 1, 26, "no viable alternative at input 'b'"},
		{"SELECT * FROM t WHERE a = 1\n  AND b = = 2", 2, 10, "no viable alternative at input '='"},
		{"SELECT * FROM t WHERE a = - 1", 1, 26, "no viable alternative at input '-'"},
		{"SELECT * FROM t LIMIT 'x'", 1, 22, "expecting INTEGER"},
		{"SELECT * FROM t LIMIT - 1", 1, 22, "expecting INTEGER"},
		{"SELECT * FROM t ORDER c", 1, 22, "expecting K_BY"},
		{"SELECT * FROM t ALLOW", 1, 21, "expecting K_FILTERING"},
		{"SELECT * FROM t extra", 1, 16, "mismatched input 'extra' expecting EOF"},
		{"SELECT * FROM t;x", 1, 16, "expecting EOF"},
		{"SELECT * FROM ?", 1, 14, "Bind variables cannot be used for table names"},
		{"USE ?", 1, 4, "Bind variables cannot be used for keyspace names"},
		{"SELECT * FROM t WHERE token(a) > token(1", 1, 40, "expecting ')'"},
		{"SELECT * FROM t WHERE (a, b) > 1", 1, 31, "expecting '('"},
		{"SELECT * FROM t WHERE a LIKE 'x'", 1, 24, "no viable alternative at input 'LIKE'"},
		{"SELECT from FROM t", 1, 7, "no viable alternative at input 'from'"},
		{"INSERT INTO t (a, b) VALUES (1, 2", 1, 33, "expecting ')'"},
		{"INSERT INTO t (a) VALUE (1)", 1, 18, "mismatched input 'VALUE' expecting K_VALUES"},
		{"INSERT INTO t (a) VALUES ()", 1, 26, "no viable alternative at input ')'"},
		{"INSERT INTO t VALUES (1)", 1, 14, "expecting '('"},
		{"INSERT INTO t (a) VALUES (1) USING TTL 'x'", 1, 39, "expecting INTEGER"},
		{"INSERT INTO t (a) VALUES (1) USING TIMESTAMP 1 IF NOT EXISTS", 1, 47, "mismatched input 'IF' expecting EOF"},
		{"INSERT INTO t (a) VALUES (1) USING", 1, 34, "no viable alternative"},
		{"INSERT INTO t JSON 1", 1, 19, "expecting STRING_LITERAL"},
		{"INSERT INTO t (a) VALUES ('abc", 1, 26, "unterminated string literal"},
		{"INSERT INTO t (a) VALUES (\"abc)", 1, 26, "unterminated quoted identifier"},
		{"INSERT INTO t (a) VALUES ($$abc)", 1, 26, "unterminated $$ string literal"},
		{"INSERT INTO t (a) VALUES (1) /* unterminated", 1, 29, "unterminated comment"},
		{"INSERT INTO t (a) VALUES (@)", 1, 26, "token recognition error at: '@'"},
		{"INSERT INTO t (\"\") VALUES (1)", 1, 15, "empty quoted identifier"},
		{"INSERT INTO t (a) VALUES (1 + 2)", 1, 28, "expecting ')'"},
		{"INSERT INTO t (a) VALUES ({1: 2, 3})", 1, 34, "expecting ':'"},
		{"INSERT INTO t (a) VALUES (!)", 1, 26, "token recognition error"},
		{"UPDATE t SET c = d + 1 WHERE k = 1", 1, 17, "Only expressions of the form X = X +<value> are supported."},
		{"UPDATE t SET c = d - 1 WHERE k = 1", 1, 17, "Only expressions of the form X = X -<value> are supported."},
		{"UPDATE t SET c = 1 + d WHERE k = 1", 1, 21, "Only expressions of the form X = <value> + X are supported."},
		{"UPDATE t SET c = [1] - c WHERE k = 1", 1, 21, "expecting K_WHERE"},
		{"UPDATE t SET c = c WHERE k = 1", 1, 19, "expecting '+' or '-'"},
		{"UPDATE t SET c = 1", 1, 18, "expecting K_WHERE"},
		{"UPDATE t SET c = 1 WHERE k = 1 IF NOT EXISTS", 1, 34, "mismatched input 'NOT'"},
		{"UPDATE t SET c[0] += 1 WHERE k = 1", 1, 18, "expecting '='"},
		{"DELETE FROM t USING TTL 5 WHERE k = 1", 1, 20, "mismatched input 'TTL' expecting K_TIMESTAMP"},
		{"DELETE FROM t", 1, 13, "expecting K_WHERE"},
		{"DELETE a b FROM t WHERE k = 1", 1, 9, "expecting K_FROM"},
		{"BEGIN BATCH SELECT * FROM t APPLY BATCH", 1, 12, "mismatched input 'SELECT' expecting K_INSERT, K_UPDATE, K_DELETE or K_APPLY"},
		{"BEGIN BATCH INSERT INTO t (a) VALUES (1)", 1, 40, "mismatched input '<EOF>'"},
		{"BEGIN BATCH APPLY", 1, 17, "expecting K_BATCH"},
		{"BEGIN LOGGED BATCH APPLY BATCH", 1, 6, "expecting K_BATCH"},
		{"CREATE TABLE t (a int PRIMARY KEY, b int, PRIMARY KEY (b))", 1, 42, "Multiple PRIMARY KEYs specified (exactly one required)"},
		{"CREATE TABLE t (a int PRIMARY KEY, b int PRIMARY KEY)", 1, 35, "Multiple PRIMARY KEYs specified"},
		{"CREATE TABLE t (a frozen<int> PRIMARY KEY)", 1, 18, "frozen<> is only allowed on collections, tuples, and user-defined types"},
		{"CREATE TABLE t (a map<int> PRIMARY KEY)", 1, 25, "expecting ','"},
		{"CREATE TABLE t (a list<int PRIMARY KEY)", 1, 27, "expecting '>'"},
		{"CREATE TABLE t (a tuple<> PRIMARY KEY)", 1, 24, "no viable alternative at input '>'"},
		{"CREATE TABLE t (a byte PRIMARY KEY)", 1, 18, "Invalid (reserved) user type name byte"},
		{"CREATE TABLE t (select int PRIMARY KEY)", 1, 16, "mismatched input 'select' expecting IDENT"},
		{"CREATE TABLE t (a int PRIMARY KEY) WITH CLUSTERING ORDER BY (a)", 1, 62, "no viable alternative at input ')'"},
		{"CREATE TABLE t (a int PRIMARY KEY) WITH", 1, 39, "expecting IDENT"},
		{"CREATE TYPE byte (a int)", 1, 12, "Invalid (reserved) user type name byte"},
		{"CREATE TYPE ks.text (a int)", 1, 15, "Invalid (reserved) user type name text"},
		{"DROP TYPE int", 1, 10, "Invalid (reserved) user type name int"},
		{"CREATE TABLE t (a ks.byte PRIMARY KEY)", 1, 21, "Invalid (reserved) user type name byte"},
		{"CREATE KEYSPACE ks", 1, 18, "mismatched input '<EOF>' expecting K_WITH"},
		{"CREATE KEYSPACE ks WITH replication = {'class': 'x', 'class': 'y'}", 1, 53, "Multiple definition for property class"},
		{"CREATE KEYSPACE ks WITH a = 1 AND A = 2", 1, 34, "Multiple definition for property a"},
		{"CREATE KEYSPACE ks WITH a = ?", 1, 28, "Invalid property value: ? (bind variables are not supported in DDL queries)"},
		{"CREATE KEYSPACE ks WITH a = {'k': ?}", 1, 34, "bind variables are not supported in DDL queries"},
		{"CREATE KEYSPACE ks WITH a = 0xAB", 1, 28, "Invalid property value: 0xAB"},
		{"CREATE KEYSPACE ks WITH a = {'k': {'n': 1}}", 1, 34, "Invalid property value: {"},
		{"CREATE FOO x", 1, 7, "no viable alternative at input 'FOO'"},
		{"DROP FOO x", 1, 5, "no viable alternative at input 'FOO'"},
		{"DROP TABLE IF t", 1, 14, "expecting K_EXISTS"},
		{"ALTER TABLE t FOO", 1, 14, "no viable alternative at input 'FOO'"},
		{"ALTER TABLE t ADD c", 1, 19, "no viable alternative at input '<EOF>'"},
		{"CREATE INDEX ON t (keys(a, b))", 1, 19, "keys() takes exactly one column"},
		{"CREATE INDEX ON t (c) USING foo", 1, 28, "expecting STRING_LITERAL"},
		{"SELECT * FROM t WHERE é = 1", 1, 22, "token recognition error at: 'é'"},
		{"SELECT * FROM t WHERE\n\n   \u00e9 = 1", 3, 3, "token recognition error"},
		{"SELECT * FROM t WHERE a = 'é' AND \u00e9 = 1", 1, 34, "token recognition error"},
		{"SELECT * FROM t WHERE a = \xff", 1, 26, "invalid UTF-8"},
	} {
		_, err := Parse(tc.q)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", tc.q, err)
			continue
		}
		if se.Line != tc.line || se.Col != tc.col || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("Parse(%q) = %q, want line %d:%d containing %q", tc.q, se.Error(), tc.line, tc.col, tc.msg)
		}
	}
}

func TestSyntaxErrorFormat(t *testing.T) {
	_, err := Parse("SELECT * FROMM t")
	if got, want := err.Error(), "line 1:9 mismatched input 'FROMM' expecting K_FROM"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

// TestDeepNesting checks that hostile nesting fails fast with a syntax
// error instead of exhausting the stack.
func TestDeepNesting(t *testing.T) {
	const n = 20000
	for _, tc := range []struct{ name, q string }{
		{"lists", "INSERT INTO t (a) VALUES (" + strings.Repeat("[", n) + strings.Repeat("]", n) + ")"},
		{"sets", "INSERT INTO t (a) VALUES (" + strings.Repeat("{", n) + ")"},
		{"tuples", "INSERT INTO t (a) VALUES (" + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + ")"},
		{"functions", "INSERT INTO t (a) VALUES (" + strings.Repeat("f(", n) + ")"},
		{"casts", "INSERT INTO t (a) VALUES (" + strings.Repeat("(int)", n) + "1)"},
		{"types", "CREATE TABLE t (a " + strings.Repeat("frozen<list<", n) + "int" + strings.Repeat(">>", n) + " PRIMARY KEY)"},
		{"tuple types", "CREATE TABLE t (a " + strings.Repeat("tuple<", n) + ")"},
		{"relations", "SELECT * FROM t WHERE " + strings.Repeat("(", n) + "a = 1" + strings.Repeat(")", n)},
		{"selectors", "SELECT " + strings.Repeat("f(", n) + "a" + strings.Repeat(")", n) + " FROM t"},
		{"json selectors", "SELECT JSON " + strings.Repeat("f(", n) + " FROM t"},
		{"cast selectors", "SELECT " + strings.Repeat("cast(", n) + " FROM t"},
		{"map keys", "INSERT INTO t (a) VALUES (" + strings.Repeat("{1:", n) + ")"},
		{"udt", "INSERT INTO t (a) VALUES (" + strings.Repeat("{a:", n) + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse(tc.q)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse = %v, want a *SyntaxError", err)
			}
			if !strings.Contains(se.Msg, "too deeply nested") {
				t.Errorf("Parse = %v, want a nesting error", err)
			}
			if d := time.Since(start); d > 10*time.Second { // generous: CI machines are shared
				t.Errorf("Parse took %v", d)
			}
		})
	}
	// Nesting within the limit is fine.
	q := "INSERT INTO t (a) VALUES (" + strings.Repeat("[", 50) + strings.Repeat("]", 50) + ")"
	if _, err := Parse(q); err != nil {
		t.Fatalf("Parse(50 nested lists): %v", err)
	}
}
