package cqltest

import (
	"fmt"
	"math"
	"math/big"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"
)

// typeCase is one CQL type with values in ascending Cassandra order.
type typeCase struct {
	typ string
	// keys may be partition keys, clustering keys and regular values; in
	// ascending order of the type when ordered is set.
	keys    []any
	ordered bool
	// clusteringOnly values are valid clustering keys and regular values
	// but not partition keys (empty values), and sort first.
	clusteringOnly []any
}

func bigInt(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return v
}

func dec(s string) *inf.Dec {
	v, ok := new(inf.Dec).SetString(s)
	if !ok {
		panic(s)
	}
	return v
}

func uuidFromTime(t time.Time) gocql.UUID { return gocql.UUIDFromTime(t) }

func typeCases() []typeCase {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	negZero32 := float32(math.Copysign(0, -1))
	negZero64 := math.Copysign(0, -1)
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	return []typeCase{
		{typ: "ascii", ordered: true, clusteringOnly: []any{""}, keys: []any{"A", "a", "ab", "b", "~"}},
		{typ: "text", ordered: true, clusteringOnly: []any{""}, keys: []any{"Z", "a", "é", "日本"}},
		{typ: "varchar", ordered: true, keys: []any{"x", "y"}},
		{typ: "blob", ordered: true, clusteringOnly: []any{[]byte{}}, keys: []any{[]byte{0}, []byte{0, 1}, []byte{0x7f}, []byte{0x80}, []byte{0xff}}},
		{typ: "boolean", ordered: true, keys: []any{false, true}},
		{typ: "tinyint", ordered: true, keys: []any{int8(math.MinInt8), int8(-1), int8(0), int8(1), int8(math.MaxInt8)}},
		{typ: "smallint", ordered: true, keys: []any{int16(math.MinInt16), int16(-1), int16(0), int16(math.MaxInt16)}},
		{typ: "int", ordered: true, keys: []any{int32(math.MinInt32), int32(-1), int32(0), int32(1), int32(math.MaxInt32)}},
		{typ: "bigint", ordered: true, keys: []any{int64(math.MinInt64), int64(-1), int64(0), int64(1), int64(math.MaxInt64)}},
		{typ: "varint", ordered: true, keys: []any{bigInt("-1267650600228229401496703205376"), bigInt("-129"), bigInt("-128"), bigInt("-1"),
			bigInt("0"), bigInt("127"), bigInt("128"), bigInt("1267650600228229401496703205376")}},
		{typ: "decimal", ordered: true, keys: []any{dec("-12345678901234567890.5"), dec("-1.5"), dec("-0.001"), dec("0"), dec("0.001"), dec("1.5"), dec("123456789.123456789")}},
		{typ: "float", ordered: true, keys: []any{float32(math.Inf(-1)), float32(-math.MaxFloat32), float32(-1.5), negZero32, float32(0),
			float32(math.SmallestNonzeroFloat32), float32(1.5), float32(math.Inf(1)), float32(math.NaN())}},
		{typ: "double", ordered: true, keys: []any{math.Inf(-1), -math.MaxFloat64, -1.5, negZero64, 0.0,
			math.SmallestNonzeroFloat64, 1.5, math.Inf(1), math.NaN()}},
		{typ: "timestamp", ordered: true, keys: []any{time.Date(1066, 10, 14, 9, 0, 0, 0, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 999e6, time.UTC),
			time.Unix(0, 0).UTC(), time.Date(2038, 1, 19, 3, 14, 8, 123e6, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)}},
		{typ: "date", ordered: true, keys: []any{day(1000, 1, 1), day(1969, 12, 31), day(1970, 1, 1), day(2000, 2, 29), day(9999, 12, 31)}},
		{typ: "time", ordered: true, keys: []any{time.Duration(0), time.Duration(1), 12 * time.Hour, time.Duration(86399999999999)}},
		{typ: "timeuuid", ordered: true, keys: []any{uuidFromTime(t0), uuidFromTime(t0.Add(time.Millisecond)), uuidFromTime(t0.Add(time.Hour)), uuidFromTime(t0.Add(24 * 365 * time.Hour))}},
		{typ: "uuid", keys: []any{gocql.UUID{}, mustUUID("123e4567-e89b-42d3-a456-426614174000"), mustUUID("ffffffff-ffff-4fff-bfff-ffffffffffff"), uuidFromTime(t0)}},
		{typ: "inet", ordered: true, keys: []any{net.ParseIP("::1"), net.ParseIP("1.2.3.4").To4(), net.ParseIP("127.0.0.1").To4(), net.ParseIP("ffff::1"), net.ParseIP("255.255.255.255").To4()}},
	}
}

func mustUUID(s string) gocql.UUID {
	u, err := gocql.ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}

// same compares values as the type's equality does (NaN equals NaN).
func same(a, b any) bool {
	switch x := a.(type) {
	case float32:
		y := b.(float32)
		if math.IsNaN(float64(x)) {
			return math.IsNaN(float64(y))
		}
		return x == y && math.Signbit(float64(x)) == math.Signbit(float64(y))
	case float64:
		y := b.(float64)
		if math.IsNaN(x) {
			return math.IsNaN(y)
		}
		return x == y && math.Signbit(x) == math.Signbit(y)
	case *big.Int:
		return x.Cmp(b.(*big.Int)) == 0
	case *inf.Dec:
		return x.Cmp(b.(*inf.Dec)) == 0
	case time.Time:
		return x.Equal(b.(time.Time))
	case net.IP:
		return x.Equal(b.(net.IP))
	case []byte:
		// gocql scans an empty blob as nil.
		return string(x) == string(b.([]byte))
	}
	return reflect.DeepEqual(a, b)
}

// column scans the first column of every row into values of want's type.
func column(t *testing.T, s *gocql.Session, typ reflect.Type, q string, args ...any) []any {
	t.Helper()
	iter := s.Query(q, args...).Iter()
	var out []any
	for {
		p := reflect.New(typ)
		if !iter.Scan(p.Interface()) {
			break
		}
		out = append(out, p.Elem().Interface())
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func sameList(t *testing.T, what string, got, want []any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if !same(got[i], want[i]) {
			t.Fatalf("%s: [%d] = %#v, want %#v\n got  %v\n want %v", what, i, got[i], want[i], got, want)
		}
	}
}

func reversed(in []any) []any {
	out := make([]any, len(in))
	for i, v := range in {
		out[len(in)-1-i] = v
	}
	return out
}

// testTypes round-trips every primitive type as partition key, clustering
// key (ASC and DESC) and regular column, and checks clustering order and
// slices against Cassandra's ordering of the type.
func testTypes(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "types")
	for _, tc := range typeCases() {
		t.Run(tc.typ, func(t *testing.T) {
			typ := reflect.TypeOf(tc.keys[0])
			asc, desc := "types.a_"+tc.typ, "types.d_"+tc.typ
			exec(t, s, fmt.Sprintf("CREATE TABLE %s (k %s, c %s, v %s, PRIMARY KEY (k, c))", asc, tc.typ, tc.typ, tc.typ),
				fmt.Sprintf("CREATE TABLE %s (k %s, c %s, v %s, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)", desc, tc.typ, tc.typ, tc.typ))
			all := append(append([]any(nil), tc.clusteringOnly...), tc.keys...)
			anchor := tc.keys[0]
			for _, tbl := range []string{asc, desc} {
				for _, x := range tc.keys {
					execArgs(t, s, "INSERT INTO "+tbl+" (k, c, v) VALUES (?, ?, ?)", x, x, x)
				}
				for _, x := range all {
					execArgs(t, s, "INSERT INTO "+tbl+" (k, c, v) VALUES (?, ?, ?)", anchor, x, x)
				}
			}
			// Round trip of each value in every position.
			for _, x := range tc.keys {
				k, c, v := reflect.New(typ), reflect.New(typ), reflect.New(typ)
				one(t, s, "SELECT k, c, v FROM "+asc+" WHERE k = ? AND c = ?", []any{x, x}, k.Interface(), c.Interface(), v.Interface())
				for _, got := range []reflect.Value{k, c, v} {
					if !same(got.Elem().Interface(), x) {
						t.Fatalf("round trip of %#v: got %#v", x, got.Elem().Interface())
					}
				}
			}
			for _, x := range tc.clusteringOnly {
				got := column(t, s, typ, "SELECT v FROM "+asc+" WHERE k = ? AND c = ?", anchor, x)
				sameList(t, "clustering-only value", got, []any{x})
			}
			// Clustering order, both directions, and slices.
			gotAsc := column(t, s, typ, "SELECT c FROM "+asc+" WHERE k = ?", anchor)
			gotDesc := column(t, s, typ, "SELECT c FROM "+desc+" WHERE k = ?", anchor)
			if !tc.ordered {
				if len(gotAsc) != len(all) || len(gotDesc) != len(all) {
					t.Fatalf("rows = %d/%d, want %d", len(gotAsc), len(gotDesc), len(all))
				}
				sameList(t, "DESC table is the reverse", gotDesc, reversed(gotAsc))
				return
			}
			sameList(t, "ASC clustering order", gotAsc, all)
			sameList(t, "DESC clustering order", gotDesc, reversed(all))
			sameList(t, "ORDER BY DESC on ASC table", column(t, s, typ, "SELECT c FROM "+asc+" WHERE k = ? ORDER BY c DESC", anchor), reversed(all))
			sameList(t, "ORDER BY ASC on DESC table", column(t, s, typ, "SELECT c FROM "+desc+" WHERE k = ? ORDER BY c ASC", anchor), all)
			if len(all) >= 3 {
				lo, hi := all[1], all[len(all)-2]
				mid := all[2 : len(all)-2]
				for _, tbl := range []string{asc, desc} {
					got := column(t, s, typ, "SELECT c FROM "+tbl+" WHERE k = ? AND c > ? AND c < ? ORDER BY c ASC", anchor, lo, hi)
					sameList(t, tbl+" open slice", got, mid)
					got = column(t, s, typ, "SELECT c FROM "+tbl+" WHERE k = ? AND c >= ? AND c <= ? ORDER BY c DESC", anchor, lo, hi)
					sameList(t, tbl+" closed slice", got, reversed(all[1:len(all)-1]))
					got = column(t, s, typ, "SELECT c FROM "+tbl+" WHERE k = ? AND c <= ? ORDER BY c ASC", anchor, lo)
					sameList(t, tbl+" upper bound only", got, all[:2])
				}
			}
			// Null regular values and filtering on the type.
			execArgs(t, s, "UPDATE "+asc+" SET v = null WHERE k = ? AND c = ?", anchor, anchor)
			if n := count(t, s, "SELECT count(v) FROM "+asc+" WHERE k = ?", anchor); n != int64(len(all)-1) {
				t.Fatalf("count(v) after null = %d, want %d", n, len(all)-1)
			}
			last := all[len(all)-1]
			sameList(t, "filter on regular column", column(t, s, typ, "SELECT v FROM "+asc+" WHERE v = ? ALLOW FILTERING", last), []any{last, last})
			// Empty values are not partition keys.
			for _, x := range tc.clusteringOnly {
				queryErrArgs(t, s, "INSERT INTO "+asc+" (k, c) VALUES (?, ?)", []any{x, anchor}, codeInvalid, "Key may not be empty")
			}
		})
	}
	t.Run("duration", func(t *testing.T) {
		exec(t, s, "CREATE TABLE types.dur (k int PRIMARY KEY, v duration)",
			"INSERT INTO types.dur (k, v) VALUES (1, 1y2mo3w4d5h6m7s8ms9us10ns)",
			"INSERT INTO types.dur (k, v) VALUES (2, -P1DT2H)")
		for _, d := range []gocql.Duration{{Months: 1, Days: 2, Nanoseconds: 3}, {Months: -1, Days: -2, Nanoseconds: -3}, {}} {
			execArgs(t, s, "INSERT INTO types.dur (k, v) VALUES (3, ?)", d)
			var got gocql.Duration
			one(t, s, "SELECT v FROM types.dur WHERE k = 3", nil, &got)
			eq(t, "duration round trip", got, d)
		}
		var got gocql.Duration
		one(t, s, "SELECT v FROM types.dur WHERE k = 1", nil, &got)
		eq(t, "duration literal", got, gocql.Duration{Months: 14, Days: 25, Nanoseconds: ((5*60+6)*60+7)*1e9 + 8e6 + 9e3 + 10})
		one(t, s, "SELECT v FROM types.dur WHERE k = 2", nil, &got)
		eq(t, "ISO duration literal", got, gocql.Duration{Days: -1, Nanoseconds: -2 * 3600e9})
		queryErr(t, s, "INSERT INTO types.dur (k, v) VALUES (4, 'nonsense')", codeInvalid, "")
	})
	t.Run("Literals", func(t *testing.T) {
		exec(t, s, `CREATE TABLE types.lit (k int PRIMARY KEY, a ascii, b blob, bo boolean, d date, de decimal, do double, f float,
			i inet, t time, ts timestamp, u uuid, tu timeuuid, vi varint, bi bigint)`,
			`INSERT INTO types.lit (k, a, b, bo, d, de, do, f, i, t, ts, u, tu, vi, bi) VALUES (1, 'abc', 0xCAFE, true, '1969-07-20',
			-1.25e2, NaN, -Infinity, '::ffff:10.0.0.1', '13:30:54.234', '2011-02-03 04:05:00+0000', 123e4567-e89b-42d3-a456-426614174000,
			50554d6e-29bb-11e5-b345-feff819cdc9f, -170141183460469231731687303715884105728, -9223372036854775808)`)
		rows := query(t, s, "SELECT * FROM types.lit WHERE k = 1")
		if len(rows) != 1 {
			t.Fatalf("rows = %v", rows)
		}
		r := rows[0]
		checks := map[string]any{
			"a": "abc", "b": []byte{0xca, 0xfe}, "bo": true, "d": time.Date(1969, 7, 20, 0, 0, 0, 0, time.UTC), "de": dec("-125"),
			"f": float32(math.Inf(-1)), "t": 13*time.Hour + 30*time.Minute + 54*time.Second + 234*time.Millisecond,
			"ts": time.Date(2011, 2, 3, 4, 5, 0, 0, time.UTC), "u": mustUUID("123e4567-e89b-42d3-a456-426614174000"),
			"tu": mustUUID("50554d6e-29bb-11e5-b345-feff819cdc9f"), "vi": bigInt("-170141183460469231731687303715884105728"),
			"bi": int64(math.MinInt64), "i": "10.0.0.1",
		}
		for col, want := range checks {
			if !same(r[col], want) {
				t.Errorf("%s = %#v, want %#v", col, r[col], want)
			}
		}
		if f, ok := r["do"].(float64); !ok || !math.IsNaN(f) {
			t.Errorf("do = %#v, want NaN", r["do"])
		}
		for _, tc := range []struct{ q, frag string }{
			{"INSERT INTO types.lit (k, a) VALUES (2, 'é')", ""},
			{"INSERT INTO types.lit (k, b) VALUES (2, 0xZZ)", ""},
			{"INSERT INTO types.lit (k, bo) VALUES (2, 'maybe')", ""},
			{"INSERT INTO types.lit (k, d) VALUES (2, '2020-13-45')", ""},
			{"INSERT INTO types.lit (k, i) VALUES (2, '300.1.1.1')", ""},
			{"INSERT INTO types.lit (k, t) VALUES (2, '25:00:00')", ""},
			{"INSERT INTO types.lit (k, ts) VALUES (2, 'yesterday')", ""},
			{"INSERT INTO types.lit (k, u) VALUES (2, 'not-a-uuid')", ""},
			{"INSERT INTO types.lit (k, tu) VALUES (2, 123e4567-e89b-42d3-a456-426614174000)", ""},
			{"INSERT INTO types.lit (k, vi) VALUES (2, 1.5)", ""},
			{"INSERT INTO types.lit (k, bi) VALUES (2, 9223372036854775808)", ""},
		} {
			err := s.Query(tc.q).Exec()
			var re gocql.RequestError
			if err == nil {
				t.Errorf("%s: no error", tc.q)
				continue
			}
			if !asRequestError(err, &re) || (re.Code() != codeInvalid && re.Code() != codeSyntax) {
				t.Errorf("%s: %v, want Invalid or Syntax", tc.q, err)
			}
		}
		// Bound values of the wrong size are refused, not stored.
		c := dialRaw(t, e.addr())
		c.startup("")
		resp := c.query("INSERT INTO types.lit (k, bi) VALUES (?, ?)", bytesValue(0, 0, 0, 3), bytesValue(1, 2, 3))
		rawErr(t, "3-byte bigint", resp, 0x2200, "")
		resp = c.query("INSERT INTO types.lit (k, a) VALUES (?, ?)", bytesValue(0, 0, 0, 3), bytesValue(0xff))
		rawErr(t, "non-ascii bytes", resp, 0x2200, "")
		resp = c.query("INSERT INTO types.lit (k, bo) VALUES (?, ?)", bytesValue(0, 0, 0, 3), bytesValue())
		// An empty value is valid for most types; it is not null.
		rawCheckVoid(t, "empty boolean", resp)
		eq(t, "count of an empty value", count(t, s, "SELECT count(bo) FROM types.lit WHERE k = 3"), int64(1))
	})
}
