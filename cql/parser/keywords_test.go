package parser

import (
	"reflect"
	"strings"
	"testing"
)

// unreservedKeywords are CQL keywords that Cassandra also accepts as
// identifiers; drivers and system tables use several of them as column
// names (key, type, kind, position, options, value, values).
var unreservedKeywords = []string{
	"key", "keys", "type", "types", "ttl", "writetime", "count", "kind", "position", "options", "value",
	"values", "json", "distinct", "exists", "static", "frozen", "list", "map", "tuple", "text",
	"int", "timestamp", "date", "time", "counter", "filtering", "storage", "compact", "clustering",
	"contains", "custom", "per", "partition", "group", "default", "unset", "user", "users", "role",
	"roles", "function", "aggregate", "trigger", "login", "password", "superuser", "is", "like",
	"cast", "permissions", "keyspaces", "all", "materialized", "returns", "language", "input", "called",
}

func TestUnreservedKeywordsAsIdentifiers(t *testing.T) {
	for _, kw := range unreservedKeywords {
		for _, q := range []string{
			"SELECT KW, x AS KW FROM KW.KW WHERE KW = 1 AND KW IN (1) AND KW CONTAINS 1 ORDER BY KW DESC",
			"SELECT JSON KW FROM KW",
			"SELECT DISTINCT KW FROM KW",
			"INSERT INTO KW (KW) VALUES (:KW)",
			"UPDATE KW SET KW = KW + 1, KW = [1] + KW, KW[1] = 2, KW.KW = 3 WHERE KW = 1 IF KW = 1 AND KW.KW > 2",
			"DELETE KW, KW[1], KW.KW FROM KW WHERE KW = 1 IF KW IN (1)",
			"CREATE TABLE KW.KW (KW int PRIMARY KEY, x KW) WITH KW = 1",
			"CREATE TABLE KW (KW int, PRIMARY KEY ((KW), KW)) WITH CLUSTERING ORDER BY (KW ASC)",
			"ALTER TABLE KW RENAME KW TO KW",
			"CREATE KEYSPACE KW WITH KW = KW",
			"USE KW",
			"CREATE INDEX KW ON KW (KW)",
			"CREATE TYPE KW.KW (KW int)",
		} {
			if _, native := scalarTypes[kw]; native && strings.HasPrefix(q, "CREATE TYPE") {
				continue // native type names cannot name user types
			}
			q := strings.ReplaceAll(q, "KW", kw)
			if _, err := Parse(q); err != nil {
				t.Errorf("Parse(%q): %v", q, err)
			}
		}
	}
}

func TestKeywordsAreCaseInsensitive(t *testing.T) {
	a, err := Parse("select * from T where A = 1 allow filtering")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse("SeLeCt * FrOm t WhErE a = 1 AlLoW fIlTeRiNg")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s != %s", dump(a), dump(b))
	}
}

func TestReservedKeywordsNeedQuotes(t *testing.T) {
	for kw := range reserved {
		q := "SELECT " + kw + " FROM t"
		st, err := Parse(q)
		if err == nil {
			// null, NaN and Infinity are constants, so they parse as terms.
			if _, isTerm := st.(*SelectStmt).Selectors[0].Expr.(*TermSel); !isTerm {
				t.Errorf("Parse(%q) = %s; %s is reserved", q, dump(st), kw)
			}
		}
		q = `SELECT "` + kw + `" FROM "` + kw + `" WHERE "` + kw + `" = 1`
		st, err = Parse(q)
		if err != nil {
			t.Errorf("Parse(%q): %v", q, err)
			continue
		}
		want := &SelectStmt{Table: tbl("", kw), Selectors: colSel(kw), Where: []Relation{eq(kw, num("1"))}}
		if !reflect.DeepEqual(st, want) {
			t.Errorf("Parse(%q) = %s", q, dump(st))
		}
	}
}
