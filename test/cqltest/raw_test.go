package cqltest

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cql/frame"
)

// rawHeader builds a request header by hand: version, flags, stream,
// opcode and body length.
func rawHeader(version, flags byte, stream int16, op frame.Opcode, length uint32) []byte {
	b := []byte{version, flags, 0, 0, byte(op), 0, 0, 0, 0}
	binary.BigEndian.PutUint16(b[2:], uint16(stream))
	binary.BigEndian.PutUint32(b[5:], length)
	return b
}

// expectClosed checks that the server closed the connection.
func (c *rawConn) expectClosed(what string) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	_, err := c.nc.Read(b[:])
	if !errors.Is(err, io.EOF) && !isReset(err) {
		c.t.Fatalf("%s: connection still open (read: %v)", what, err)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

func testRaw(t *testing.T, e *env) {
	keyspace(t, e.s, "raw")
	exec(t, e.s, "CREATE TABLE raw.t (k int, c int, v text, PRIMARY KEY (k, c))",
		"CREATE TABLE raw.tup (k int PRIMARY KEY, tp tuple<int, text>)")
	for c := 0; c < 10; c++ {
		execArgs(t, e.s, "INSERT INTO raw.t (k, c, v) VALUES (1, ?, 'v')", c)
	}
	t.Run("UnsupportedVersion", func(t *testing.T) {
		// Drivers that start with v5 or DSE versions must get a protocol
		// error that names the version, then fall back to v4.
		for _, version := range []byte{0x05, 0x42, 0x41, 0x03} {
			c := dialRaw(t, e.addr())
			body := []byte{0, 1, 0, 11}
			body = append(body, "CQL_VERSION"...)
			body = append(body, 0, 5)
			body = append(body, "3.0.0"...)
			c.write(append(rawHeader(version, 0, 0, frame.OpStartup, uint32(len(body))), body...))
			h, resp, _ := c.recv()
			er := rawErr(t, "version", resp, frame.CodeProtocolError, "Invalid or unsupported protocol version ("+itoa(int(version))+")")
			if h.Stream != 0 || !contains(er.Message, "unsupported protocol version") {
				t.Fatalf("version %d: stream %d message %q", version, h.Stream, er.Message)
			}
			c.expectClosed("after an unsupported version")
		}
	})
	t.Run("Handshake", func(t *testing.T) {
		c := dialRaw(t, e.addr())
		// OPTIONS works before STARTUP, and SUPPORTED has what drivers need.
		sup, ok := c.roundTrip(&frame.Options{}).(*frame.Supported)
		if !ok {
			t.Fatal("no SUPPORTED")
		}
		for _, key := range []string{"CQL_VERSION", "COMPRESSION", "PROTOCOL_VERSIONS"} {
			if _, ok := sup.Options[key]; !ok {
				t.Fatalf("SUPPORTED lacks %s: %v", key, sup.Options)
			}
		}
		eq(t, "compressions", sup.Options["COMPRESSION"], []string{"lz4", "snappy"})
		rawErr(t, "QUERY before STARTUP", c.query("SELECT * FROM system.local"), frame.CodeProtocolError, "expecting STARTUP or OPTIONS")
		rawErr(t, "STARTUP without CQL_VERSION", c.roundTrip(&frame.Startup{Options: map[string]string{}}), frame.CodeProtocolError, "CQL_VERSION")
		rawErr(t, "unknown compression", c.roundTrip(&frame.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0", "COMPRESSION": "zstd"}}), frame.CodeProtocolError, "Unknown compression algorithm: zstd")
		c.startup("")
		rawErr(t, "second STARTUP", c.roundTrip(&frame.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}), frame.CodeProtocolError, "already initialized")
		rawErr(t, "unknown event", c.roundTrip(&frame.Register{Events: []string{"NOPE"}}), frame.CodeProtocolError, "NOPE")
		if _, ok := c.roundTrip(&frame.Register{Events: []string{frame.EventSchemaChange}}).(*frame.Ready); !ok {
			t.Fatal("REGISTER: no READY")
		}
		rawErr(t, "AUTH_RESPONSE without auth", c.roundTrip(&frame.AuthResponse{Token: []byte("x")}), frame.CodeProtocolError, "")
		if _, ok := c.query("SELECT key FROM system.local").(*frame.RowsResult); !ok {
			t.Fatal("query after handshake errors failed")
		}
	})
	t.Run("MalformedKeepsConnection", func(t *testing.T) {
		c := dialRaw(t, e.addr())
		c.startup("")
		for _, tc := range []struct {
			op   frame.Opcode
			body []byte
		}{
			{frame.OpQuery, []byte{0, 0, 0, 50, 'S'}},                       // long string longer than the body
			{frame.OpQuery, nil},                                            // empty body
			{frame.OpExecute, []byte{0, 2, 1}},                              // truncated id
			{frame.OpBatch, []byte{0, 0, 1, 0, 0, 0, 0, 5}},                 // truncated statement
			{frame.OpQuery, append([]byte{0, 0, 0, 1, 'x', 0, 1, 0x01}, 0)}, // values flag, no count
			{0x04, nil},                          // no such opcode
			{0x20, []byte{1, 2, 3}},              // no such opcode
			{frame.OpResult, []byte{0, 0, 0, 1}}, // a response opcode
			{frame.OpRegister, []byte{0, 1, 0}},  // truncated list
		} {
			c.write(append(rawHeader(4, 0, 7, tc.op, uint32(len(tc.body))), tc.body...))
			h, resp, _ := c.recv()
			if h.Stream != 7 {
				t.Fatalf("opcode %s: answer on stream %d", tc.op, h.Stream)
			}
			rawErr(t, "malformed "+tc.op.String(), resp, frame.CodeProtocolError, "")
			if _, ok := c.roundTrip(&frame.Options{}).(*frame.Supported); !ok {
				t.Fatalf("connection unusable after malformed %s", tc.op)
			}
		}
		if _, ok := c.query("SELECT v FROM raw.t WHERE k = 1").(*frame.RowsResult); !ok {
			t.Fatal("query after malformed frames failed")
		}
	})
	t.Run("OversizedFrame", func(t *testing.T) {
		c := dialRaw(t, e.addr())
		c.startup("")
		c.write(rawHeader(4, 0, 3, frame.OpQuery, 300<<20))
		h, resp, _ := c.recv()
		rawErr(t, "oversized frame", resp, frame.CodeProtocolError, "Request is too big")
		eq(t, "stream", h.Stream, int16(3))
		c.expectClosed("after an oversized frame")
	})
	t.Run("Unprepared", func(t *testing.T) {
		c := dialRaw(t, e.addr())
		c.startup("")
		id := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
		er := rawErr(t, "EXECUTE unknown id", c.roundTrip(&frame.Execute{ID: id, Params: frame.QueryParams{Consistency: frame.One}}), frame.CodeUnprepared, "")
		eq(t, "unprepared id", er.UnpreparedID, id)
		er = rawErr(t, "BATCH unknown id", c.roundTrip(&frame.Batch{Type: frame.BatchLogged, Consistency: frame.One,
			Statements: []frame.BatchStatement{{Prepared: true, ID: id}}}), frame.CodeUnprepared, "")
		eq(t, "unprepared batch id", er.UnpreparedID, id)
		// Preparing then executing works, and the id is stable.
		p1 := c.roundTrip(&frame.Prepare{Query: "SELECT v FROM raw.t WHERE k = ?"}).(*frame.PreparedResult)
		p2 := c.roundTrip(&frame.Prepare{Query: "SELECT v FROM raw.t WHERE k = ?"}).(*frame.PreparedResult)
		eq(t, "stable prepared id", p1.ID, p2.ID)
		rows := c.roundTrip(&frame.Execute{ID: p1.ID, Params: frame.QueryParams{Consistency: frame.One, Values: []frame.Value{intValue(1)}}})
		if r, ok := rows.(*frame.RowsResult); !ok || len(r.Rows) != 10 {
			t.Fatalf("EXECUTE: %#v", rows)
		}
	})
	t.Run("Values", func(t *testing.T) {
		c := dialRaw(t, e.addr())
		c.startup("")
		rawErr(t, "too few values", c.query("SELECT v FROM raw.t WHERE k = ? AND c = ?", intValue(1)), frame.CodeInvalid, "There were 2 markers(?) in CQL but 1 bound variables")
		rawErr(t, "too many values", c.query("SELECT v FROM raw.t WHERE k = ?", intValue(1), intValue(2)), frame.CodeInvalid, "")
		rawErr(t, "wrong size", c.query("SELECT v FROM raw.t WHERE k = ?", bytesValue(1, 2)), frame.CodeInvalid, "")
		rawErr(t, "unset key", c.query("INSERT INTO raw.t (k, c, v) VALUES (?, ?, ?)", frame.UnsetValue, intValue(1), frame.NullValue), frame.CodeInvalid, "")
		rawErr(t, "null clustering key", c.query("INSERT INTO raw.t (k, c) VALUES (?, ?)", intValue(1), frame.NullValue), frame.CodeInvalid, "")
		// Named values in any order (flag 0x40).
		q := &frame.Query{Query: "INSERT INTO raw.t (k, c, v) VALUES (:k, :c, :v)", Params: frame.QueryParams{Consistency: frame.One,
			Names: []string{"v", "c", "k"}, Values: []frame.Value{frame.BytesValue([]byte("named")), intValue(50), intValue(2)}}}
		rawCheckVoid(t, "named values", c.roundTrip(q))
		p := c.roundTrip(&frame.Prepare{Query: "SELECT v FROM raw.t WHERE k = :k AND c = :c"}).(*frame.PreparedResult)
		eq(t, "named marker metadata", []string{p.Metadata.Columns[0].Name, p.Metadata.Columns[1].Name}, []string{"k", "c"})
		r := c.roundTrip(&frame.Execute{ID: p.ID, Params: frame.QueryParams{Consistency: frame.One, Names: []string{"c", "k"},
			Values: []frame.Value{intValue(50), intValue(2)}}})
		if rr, ok := r.(*frame.RowsResult); !ok || len(rr.Rows) != 1 || string(rr.Rows[0][0]) != "named" {
			t.Fatalf("named EXECUTE: %#v", r)
		}
		rawErr(t, "missing name", c.roundTrip(&frame.Execute{ID: p.ID, Params: frame.QueryParams{Consistency: frame.One, Names: []string{"k", "x"},
			Values: []frame.Value{intValue(50), intValue(2)}}}), frame.CodeInvalid, "c")
		// Bound tuples (gocql cannot bind them positionally).
		tuple := append(append(binary.BigEndian.AppendUint32(nil, 4), 0, 0, 0, 7), append(binary.BigEndian.AppendUint32(nil, 2), 'h', 'i')...)
		rawCheckVoid(t, "bound tuple", c.query("INSERT INTO raw.tup (k, tp) VALUES (?, ?)", intValue(1), frame.BytesValue(tuple)))
		r = c.query("SELECT tp FROM raw.tup WHERE k = 1")
		if rr, ok := r.(*frame.RowsResult); !ok || len(rr.Rows) != 1 || string(rr.Rows[0][0]) != string(tuple) {
			t.Fatalf("tuple round trip: %#v", r)
		}
	})
	t.Run("EmptyValues", func(t *testing.T) {
		// An empty value is valid on the wire for most types but holds
		// no number: where one is needed it is refused, never a crash.
		exec(t, e.s, "CREATE TABLE raw.cnt (k int PRIMARY KEY, n counter)",
			"CREATE TABLE raw.coll (k int PRIMARY KEY, l list<text>, m map<text, int>, ts timestamp, i int)",
			"INSERT INTO raw.coll (k, l, m) VALUES (1, ['a'], {'a': 1})")
		c := dialRaw(t, e.addr())
		c.startup("")
		empty := bytesValue()
		for _, tc := range []struct {
			q      string
			values []frame.Value
		}{
			{"SELECT v FROM raw.t WHERE k = 1 LIMIT ?", []frame.Value{empty}},
			{"SELECT v FROM raw.t PER PARTITION LIMIT ?", []frame.Value{empty}},
			{"INSERT INTO raw.t (k, c, v) VALUES (1, 1, 'x') USING TTL ?", []frame.Value{empty}},
			{"INSERT INTO raw.t (k, c, v) VALUES (1, 1, 'x') USING TIMESTAMP ?", []frame.Value{empty}},
			{"UPDATE raw.cnt SET n = n + ? WHERE k = 1", []frame.Value{empty}},
			{"UPDATE raw.coll SET l[?] = 'x' WHERE k = 1", []frame.Value{empty}},
			{"DELETE l[?] FROM raw.coll WHERE k = 1", []frame.Value{empty}},
			{"DELETE m[?] FROM raw.coll WHERE k = 1", []frame.Value{frame.NullValue}},
			{"SELECT v FROM raw.t WHERE token(k) > ?", []frame.Value{empty}},
			{"INSERT INTO raw.t (k, c, v) VALUES (?, 1, 'x')", []frame.Value{empty}},
		} {
			rawErr(t, tc.q, c.query(tc.q, tc.values...), frame.CodeInvalid, "")
		}
		// An empty clustering value is a value (it sorts first).
		rawCheckVoid(t, "empty clustering value", c.query("INSERT INTO raw.t (k, c, v) VALUES (5, ?, 'e')", empty))
		rawCheckVoid(t, "clustering value", c.query("INSERT INTO raw.t (k, c, v) VALUES (5, -1, 'm')"))
		r, ok := c.query("SELECT c, v FROM raw.t WHERE k = 5").(*frame.RowsResult)
		if !ok || len(r.Rows) != 2 || len(r.Rows[0][0]) != 0 || r.Rows[0][0] == nil || string(r.Rows[0][1]) != "e" {
			t.Fatalf("empty clustering value: %#v", r)
		}
		r, ok = c.query("SELECT v FROM raw.t WHERE k = 5 AND c < -1").(*frame.RowsResult)
		if !ok || len(r.Rows) != 1 || string(r.Rows[0][0]) != "e" {
			t.Fatalf("slice below every int: %#v", r)
		}
		// Stored empty values read as no value in functions and sums.
		rawCheckVoid(t, "empty timestamp and int", c.query("INSERT INTO raw.coll (k, ts, i) VALUES (2, ?, ?)", empty, empty))
		rawCheckVoid(t, "int", c.query("INSERT INTO raw.coll (k, i) VALUES (3, 5)"))
		r, ok = c.query("SELECT toDate(ts), toUnixTimestamp(ts) FROM raw.coll WHERE k = 2").(*frame.RowsResult)
		if !ok || len(r.Rows) != 1 || r.Rows[0][0] != nil || r.Rows[0][1] != nil {
			t.Fatalf("functions of an empty timestamp: %#v", r)
		}
		r, ok = c.query("SELECT sum(i), count(i) FROM raw.coll WHERE k IN (2, 3)").(*frame.RowsResult)
		if !ok || len(r.Rows) != 1 || binary.BigEndian.Uint32(r.Rows[0][0]) != 5 || binary.BigEndian.Uint64(r.Rows[0][1]) != 2 {
			t.Fatalf("sum over an empty int: %#v", r)
		}
	})
	t.Run("KeyspaceAndPrepared", func(t *testing.T) {
		c := dialRaw(t, e.addr())
		c.startup("")
		rawErr(t, "unqualified without USE", c.query("SELECT v FROM t WHERE k = 1"), frame.CodeInvalid, "No keyspace has been specified")
		rawErr(t, "USE missing keyspace", c.query("USE nosuchks"), frame.CodeInvalid, "Keyspace 'nosuchks' does not exist")
		if r, ok := c.query(`USE "raw"`).(*frame.SetKeyspaceResult); !ok || r.Keyspace != "raw" {
			t.Fatalf("USE: %#v", r)
		}
		if r, ok := c.query("SELECT v FROM t WHERE k = 1").(*frame.RowsResult); !ok || len(r.Rows) != 10 {
			t.Fatalf("unqualified after USE: %#v", r)
		}
		// A statement prepared under USE keeps its keyspace on another
		// connection that has none.
		p := c.roundTrip(&frame.Prepare{Query: "SELECT v FROM t WHERE k = ?"}).(*frame.PreparedResult)
		c2 := dialRaw(t, e.addr())
		c2.startup("")
		r := c2.roundTrip(&frame.Execute{ID: p.ID, Params: frame.QueryParams{Consistency: frame.One, Values: []frame.Value{intValue(1)}}})
		if rr, ok := r.(*frame.RowsResult); !ok || len(rr.Rows) != 10 {
			t.Fatalf("EXECUTE of a statement prepared under USE: %#v", r)
		}
		// The same text prepared without a keyspace is another statement.
		rawErr(t, "prepare unqualified without USE", c2.roundTrip(&frame.Prepare{Query: "SELECT v FROM t WHERE k = ?"}), frame.CodeInvalid, "No keyspace has been specified")
	})
	t.Run("Results", func(t *testing.T) {
		c := dialRaw(t, e.addr())
		c.startup("")
		c.sendStream(9, &frame.Query{Query: "SELECT k, c, v FROM raw.t WHERE k = 1", Params: frame.QueryParams{Consistency: frame.One}})
		h, resp, env := c.recv()
		rows, ok := resp.(*frame.RowsResult)
		if !ok || h.Stream != 9 || len(rows.Rows) != 10 {
			t.Fatalf("rows: %#v", resp)
		}
		// Cosmos DB's request charge rides in the custom payload.
		charge := env.CustomPayload["RequestCharge"]
		if len(charge) != 8 || math.Float64frombits(binary.BigEndian.Uint64(charge)) <= 0 {
			t.Fatalf("RequestCharge payload %x", charge)
		}
		md := rows.Metadata
		if len(md.Columns) != 3 || md.Columns[2].Name != "v" || md.Columns[2].Keyspace != "raw" || md.Columns[2].Table != "t" || md.Columns[2].Type.String() != "text" {
			t.Fatalf("rows metadata %+v", md)
		}
		// Skip_metadata on EXECUTE: rows without column specs.
		p := c.roundTrip(&frame.Prepare{Query: "SELECT k, v FROM raw.t WHERE k = 1"}).(*frame.PreparedResult)
		eq(t, "prepared result columns", len(p.ResultMetadata.Columns), 2)
		r := c.roundTrip(&frame.Execute{ID: p.ID, Params: frame.QueryParams{Consistency: frame.One, SkipMetadata: true}}).(*frame.RowsResult)
		if !r.Metadata.NoMetadata || r.Metadata.ColumnCount != 2 || len(r.Rows) != 10 {
			t.Fatalf("skip metadata: %+v", r.Metadata)
		}
		// Paging state round trip.
		var all int
		var state []byte
		for pages := 0; ; pages++ {
			q := &frame.Query{Query: "SELECT c FROM raw.t WHERE k = 1", Params: frame.QueryParams{Consistency: frame.One, PageSize: 4, PagingState: state}}
			r := c.roundTrip(q).(*frame.RowsResult)
			all += len(r.Rows)
			state = r.Metadata.PagingState
			if state == nil {
				if pages != 2 || all != 10 {
					t.Fatalf("paging: %d pages, %d rows", pages+1, all)
				}
				break
			}
			if len(r.Rows) != 4 {
				t.Fatalf("page %d has %d rows", pages, len(r.Rows))
			}
		}
		// A prepared conditional statement announces no result columns
		// (they vary), and its results describe themselves even when the
		// client asks to skip metadata.
		p = c.roundTrip(&frame.Prepare{Query: "INSERT INTO raw.t (k, c, v) VALUES (?, ?, 'new') IF NOT EXISTS"}).(*frame.PreparedResult)
		if len(p.ResultMetadata.Columns) != 0 {
			t.Fatalf("LWT result metadata %+v", p.ResultMetadata)
		}
		for _, applied := range []bool{true, false} {
			r := c.roundTrip(&frame.Execute{ID: p.ID, Params: frame.QueryParams{Consistency: frame.One, SkipMetadata: true,
				Values: []frame.Value{intValue(4), intValue(1)}}}).(*frame.RowsResult)
			cols := r.Metadata.Columns
			if r.Metadata.NoMetadata || len(cols) == 0 || cols[0].Name != "[applied]" || (string(r.Rows[0][0]) == "\x01") != applied {
				t.Fatalf("LWT result (applied %v): %+v %v", applied, r.Metadata, r.Rows)
			}
			if !applied && (len(cols) != 4 || cols[3].Name != "v" || string(r.Rows[0][3]) != "new") {
				t.Fatalf("failed LWT columns %+v rows %q", cols, r.Rows)
			}
		}
		// Bind-marker metadata names.
		p = c.roundTrip(&frame.Prepare{Query: "UPDATE raw.t USING TTL ? AND TIMESTAMP ? SET v = ? WHERE k = ? AND c IN ?"}).(*frame.PreparedResult)
		var names []string
		for _, col := range p.Metadata.Columns {
			names = append(names, col.Name+" "+col.Type.String())
		}
		eq(t, "marker names", names, []string{"[ttl] int", "[timestamp] bigint", "v text", "k int", "in(c) list<int>"})
		p = c.roundTrip(&frame.Prepare{Query: "SELECT v FROM raw.t WHERE token(k) > ? LIMIT ?"}).(*frame.PreparedResult)
		names = nil
		for _, col := range p.Metadata.Columns {
			names = append(names, col.Name+" "+col.Type.String())
		}
		eq(t, "select marker names", names, []string{"partition key token bigint", "[limit] int"})
	})
	t.Run("Pipelining", func(t *testing.T) {
		c := dialRaw(t, e.addr())
		c.startup("")
		const n = 300
		var buf []byte
		for i := 0; i < n; i++ {
			b, err := frame.AppendRequest(nil, frame.Header{Stream: int16(i)}, nil,
				&frame.Query{Query: "SELECT c FROM raw.t WHERE k = 1 AND c = ?", Params: frame.QueryParams{Consistency: frame.One, Values: []frame.Value{intValue(int32(i % 10))}}})
			if err != nil {
				t.Fatal(err)
			}
			buf = append(buf, b...)
		}
		c.write(buf)
		seen := map[int16]bool{}
		for len(seen) < n {
			h, resp, _ := c.recv()
			r, ok := resp.(*frame.RowsResult)
			if !ok || seen[h.Stream] || len(r.Rows) != 1 || int32(binary.BigEndian.Uint32(r.Rows[0][0])) != int32(h.Stream%10) {
				t.Fatalf("stream %d: %#v (seen %v)", h.Stream, resp, seen[h.Stream])
			}
			seen[h.Stream] = true
		}
	})
	t.Run("Batch", func(t *testing.T) {
		c := dialRaw(t, e.addr())
		c.startup("")
		rawErr(t, "SELECT in BATCH", c.roundTrip(&frame.Batch{Type: frame.BatchLogged, Consistency: frame.One,
			Statements: []frame.BatchStatement{{Query: "SELECT * FROM raw.t"}}}), frame.CodeInvalid, "only UPDATE, INSERT and DELETE statements are allowed")
		p := c.roundTrip(&frame.Prepare{Query: "INSERT INTO raw.t (k, c, v) VALUES (?, ?, ?)"}).(*frame.PreparedResult)
		r := c.roundTrip(&frame.Batch{Type: frame.BatchUnlogged, Consistency: frame.One, HasTimestamp: true, Timestamp: 99,
			Statements: []frame.BatchStatement{
				{Prepared: true, ID: p.ID, Values: []frame.Value{intValue(3), intValue(1), frame.BytesValue([]byte("p"))}},
				{Query: "INSERT INTO raw.t (k, c, v) VALUES (?, 2, 'q')", Values: []frame.Value{intValue(3)}},
			}})
		rawCheckVoid(t, "batch", r)
		rr := c.query("SELECT v, writetime(v) FROM raw.t WHERE k = 3").(*frame.RowsResult)
		if len(rr.Rows) != 2 || string(rr.Rows[0][0]) != "p" || binary.BigEndian.Uint64(rr.Rows[1][1]) != 99 {
			t.Fatalf("batch rows %v", rr.Rows)
		}
		rawErr(t, "batch value count", c.roundTrip(&frame.Batch{Type: frame.BatchLogged, Consistency: frame.One,
			Statements: []frame.BatchStatement{{Prepared: true, ID: p.ID, Values: []frame.Value{intValue(3)}}}}), frame.CodeInvalid, "")
	})
}

func intValue(v int32) frame.Value {
	return frame.BytesValue(binary.BigEndian.AppendUint32(nil, uint32(v)))
}

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}
