package cqltest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/golang/snappy"
	"github.com/pierrec/lz4/v4"

	"github.com/cosmosd/cosmosd/cql/frame"
)

func testErrors(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "errs")
	exec(t, s, "CREATE TABLE errs.t (k int PRIMARY KEY, v text)")
	for _, q := range []string{
		"SELEC * FROM errs.t",
		"SELECT * FROM",
		"SELECT * FROM errs.t WHERE",
		"SELECT * FROM errs.t WHERE k = 1 AND",
		"INSERT INTO errs.t (k, v) VALUES (1, 'unterminated)",
		"INSERT INTO errs.t (k, v) VALUES (1, 'a'",
		"CREATE TABLE errs.x (k int PRIMARY KEY",
		"UPDATE errs.t SET WHERE k = 1",
		"DELETE FROM WHERE k = 1",
		"CREATE KEYSPACE WITH replication = {}",
		"SELECT * FROM errs.t LIMIT",
		"BEGIN BATCH INSERT INTO errs.t (k) VALUES (1)",
		"DROP",
		"ALTER TABLE errs.t FROB v",
		"SELECT * FROM errs.t WHERE k = 1 ORDER",
		"INSERT INTO errs.t (k, v) VALUES (1, 'a') USING NONSENSE 5",
		"\x00\x01garbage",
		"SELECT * FROM errs.t; SELECT * FROM errs.t",
	} {
		err := s.Query(q).Exec()
		var re gocql.RequestError
		if !errors.As(err, &re) || re.Code() != codeSyntax || re.Message() == "" {
			t.Errorf("%q: %v, want a Syntax error (0x2000) with a message", q, err)
		}
	}
	for _, tc := range []struct{ q, frag string }{
		{"SELECT * FROM errs.nosuch", "unconfigured table nosuch"},
		{"SELECT * FROM nosuchks.t", "Keyspace nosuchks does not exist"},
		{"SELECT nosuch FROM errs.t", "Undefined column name nosuch"},
		{"SELECT * FROM errs.t WHERE k = 'text'", ""},
		{"SELECT * FROM errs.t WHERE k = 1.5", ""},
		{"INSERT INTO errs.t (k, v) VALUES (1, 0xff)", ""},
		{"INSERT INTO errs.t (k, v) VALUES ([1], 'a')", ""},
		{"UPDATE errs.t SET v = 'a' WHERE v = 'b'", "Non PRIMARY KEY columns found in where clause: v"},
		{"CREATE INDEX ON errs.t (v)", "Secondary indexes are not supported"},
		{"CREATE TYPE errs.addr (street text)", "User-defined types are not supported"},
	} {
		queryErr(t, s, tc.q, codeInvalid, tc.frag)
	}
	// Statements cosmosd does not implement fail cleanly with a code
	// drivers know.
	for _, q := range []string{
		"CREATE FUNCTION errs.f (a int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS 'return a;'",
		"CREATE MATERIALIZED VIEW errs.mv AS SELECT * FROM errs.t WHERE k IS NOT NULL PRIMARY KEY (k)",
		"CREATE TRIGGER tr ON errs.t USING 'x'",
	} {
		err := s.Query(q).Exec()
		var re gocql.RequestError
		if !errors.As(err, &re) || (re.Code() != codeInvalid && re.Code() != codeSyntax) {
			t.Errorf("%q: %v, want Invalid or Syntax", q, err)
		}
	}
	if e.superuser {
		// Logged in as the superuser, the role statements run.
		exec(t, s, "CREATE ROLE errs_bob", "GRANT SELECT ON ALL KEYSPACES TO errs_bob")
		var roles []string
		for _, r := range query(t, s, "LIST ROLES") {
			roles = append(roles, r["role"].(string))
		}
		eq(t, "LIST ROLES", sorted(roles), []string{"cassandra", "errs_bob"})
		exec(t, s, "DROP ROLE errs_bob")
		queryErr(t, s, "GRANT SELECT ON ALL KEYSPACES TO errs_bob", codeInvalid, "Role errs_bob doesn't exist")
	} else {
		// Role statements need a logged-in role; without
		// authentication (allow-all) every session is anonymous and
		// Cassandra refuses them with Unauthorized.
		for _, q := range []string{"CREATE ROLE bob", "GRANT SELECT ON ALL KEYSPACES TO bob", "LIST ROLES"} {
			queryErr(t, s, q, codeUnauthorized, "logged in")
		}
	}
	// The session still works after all of that.
	exec(t, s, "INSERT INTO errs.t (k, v) VALUES (1, 'ok')")
	eq(t, "after errors", strs(t, s, "SELECT v FROM errs.t WHERE k = 1"), []string{"ok"})
}

func testPrepared(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "prep")
	exec(t, s, "CREATE TABLE prep.t (k int, c int, v text, PRIMARY KEY (k, c))")
	// Preparing invalid statements fails at PREPARE with the execution's
	// error, for every statement kind.
	c := dialRaw(t, e.addr())
	c.startup("")
	for _, tc := range []struct {
		q    string
		code frame.ErrorCode
		frag string
	}{
		{"SELECT * FROM prep.nosuch WHERE k = ?", frame.CodeInvalid, "unconfigured table nosuch"},
		{"SELECT * FROM prep.t WHERE v = ?", frame.CodeInvalid, "ALLOW FILTERING"},
		{"SELECT * FROM prep.t WHERE k = ? AND c > ? AND c > ?", frame.CodeInvalid, "More than one restriction was found for the start bound on c"},
		{"UPDATE prep.t SET v = ? WHERE k = ?", frame.CodeInvalid, "Some clustering keys are missing: c"},
		{"UPDATE prep.t SET v = ? WHERE k = ? AND c > ?", frame.CodeInvalid, "Slice restrictions are not supported"},
		{"INSERT INTO prep.t (k, v) VALUES (?, ?)", frame.CodeInvalid, "Some clustering keys are missing: c"},
		{"INSERT INTO prep.t (k, c) VALUES (?, ?) IF NOT EXISTS USING TIMESTAMP ?", frame.CodeInvalid, "Cannot provide custom timestamp for conditional updates"},
		{"DELETE FROM prep.t WHERE c = ?", frame.CodeInvalid, "Some partition key parts are missing: k"},
		{"SELEC", frame.CodeSyntaxError, ""},
	} {
		rawErr(t, "PREPARE "+tc.q, c.roundTrip(&frame.Prepare{Query: tc.q}), tc.code, tc.frag)
	}
	// Every statement kind prepares and executes with bound values.
	for _, tc := range []struct {
		q    string
		args []any
	}{
		{"INSERT INTO prep.t (k, c, v) VALUES (?, ?, ?) USING TTL ?", []any{1, 1, "a", 100}},
		{"UPDATE prep.t SET v = ? WHERE k = ? AND c IN ?", []any{"b", 1, []int{1, 2}}},
		{"DELETE v FROM prep.t WHERE k = ? AND c = ?", []any{1, 2}},
		{"DELETE FROM prep.t WHERE k = ? AND c >= ? AND c < ?", []any{1, 5, 9}},
		{"SELECT * FROM prep.t WHERE k IN ? AND c >= ? ORDER BY c DESC", []any{[]int{1}, 0}},
		{"SELECT * FROM prep.t WHERE (c) IN ? AND k = ?", []any{[]any{[]any{1}}, 1}},
		{"BEGIN BATCH USING TIMESTAMP ? INSERT INTO prep.t (k, c, v) VALUES (?, ?, ?); DELETE FROM prep.t WHERE k = ? AND c = ? APPLY BATCH", []any{int64(5), 2, 1, "x", 2, 2}},
	} {
		if err := s.Query(tc.q, tc.args...).Exec(); err != nil {
			t.Fatalf("%s: %v", tc.q, err)
		}
	}
	eq(t, "after prepared statements", strs(t, s, "SELECT v FROM prep.t WHERE k IN (1, 2)"), []string{"b", "x"})

	// A schema change invalidates the statements prepared on the table:
	// their result columns changed, and drivers that skip metadata decode
	// rows with what PREPARE said. The node answers Unprepared and gocql
	// prepares again.
	exec(t, s, "CREATE TABLE prep.a (k int PRIMARY KEY, v text)", "INSERT INTO prep.a (k, v) VALUES (1, 'one')")
	star := func() map[string]any {
		t.Helper()
		rows := query(t, s, "SELECT * FROM prep.a WHERE k = ?", 1)
		if len(rows) != 1 {
			t.Fatalf("rows %v", rows)
		}
		return rows[0]
	}
	eq(t, "before ALTER", star(), map[string]any{"k": 1, "v": "one"})
	exec(t, s, "ALTER TABLE prep.a ADD w int", "UPDATE prep.a SET w = 5 WHERE k = 1")
	eq(t, "after ADD", star(), map[string]any{"k": 1, "v": "one", "w": 5})
	exec(t, s, "ALTER TABLE prep.a DROP v")
	eq(t, "after DROP", star(), map[string]any{"k": 1, "w": 5})
	exec(t, s, "DROP TABLE prep.a", "CREATE TABLE prep.a (k int PRIMARY KEY, z text)", "INSERT INTO prep.a (k, z) VALUES (1, 'new')")
	eq(t, "after re-create", star(), map[string]any{"k": 1, "z": "new"})
	// Raw: the same id is Unprepared after a change of its table.
	p1 := c.roundTrip(&frame.Prepare{Query: "SELECT * FROM prep.a WHERE k = 1"}).(*frame.PreparedResult)
	exec(t, s, "ALTER TABLE prep.a ADD y int")
	er := rawErr(t, "EXECUTE after ALTER", c.roundTrip(&frame.Execute{ID: p1.ID, Params: frame.QueryParams{Consistency: frame.One}}), frame.CodeUnprepared, "")
	eq(t, "unprepared id", er.UnpreparedID, p1.ID)
	p2 := c.roundTrip(&frame.Prepare{Query: "SELECT * FROM prep.a WHERE k = 1"}).(*frame.PreparedResult)
	eq(t, "re-prepared result columns", len(p2.ResultMetadata.Columns), 3)
	if _, ok := c.roundTrip(&frame.Execute{ID: p2.ID, Params: frame.QueryParams{Consistency: frame.One}}).(*frame.RowsResult); !ok {
		t.Fatal("EXECUTE after re-prepare")
	}
	// Unrelated schema changes keep prepared statements.
	exec(t, s, "CREATE TABLE prep.unrelated (k int PRIMARY KEY)")
	if _, ok := c.roundTrip(&frame.Execute{ID: p2.ID, Params: frame.QueryParams{Consistency: frame.One}}).(*frame.RowsResult); !ok {
		t.Fatal("EXECUTE after an unrelated change")
	}
	// A batch of statements prepared before a change of their table.
	batch := func() error {
		b := s.NewBatch(gocql.UnloggedBatch)
		b.Query("INSERT INTO prep.a (k, z) VALUES (?, ?)", 7, "b")
		return s.ExecuteBatch(b)
	}
	if err := batch(); err != nil {
		t.Fatal(err)
	}
	exec(t, s, "ALTER TABLE prep.a ADD x int")
	if err := batch(); err != nil {
		t.Fatalf("batch after ALTER: %v", err)
	}
}

// pierreLZ4 is Cassandra's lz4 body format written with pierrec/lz4
// directly, independent of cql/frame's codec. decoded counts the bodies
// it decompressed, i.e. compressed frames from the server.
type pierreLZ4 struct{ decoded *int }

func (pierreLZ4) Name() string { return "lz4" }

func (pierreLZ4) Encode(dst, src []byte) ([]byte, error) {
	buf := make([]byte, 4+lz4.CompressBlockBound(len(src)))
	binary.BigEndian.PutUint32(buf, uint32(len(src)))
	n, err := lz4.CompressBlock(src, buf[4:], nil)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		// Incompressible: a longer output makes FinishFrame send it plain.
		return append(dst, make([]byte, len(src)+1)...), nil
	}
	return append(dst, buf[:4+n]...), nil
}

func (c pierreLZ4) Decode(dst, src []byte) ([]byte, error) {
	*c.decoded++
	n := binary.BigEndian.Uint32(src)
	out := make([]byte, n)
	m, err := lz4.UncompressBlock(src[4:], out)
	if err != nil || uint32(m) != n {
		return nil, errors.New("bad lz4 body")
	}
	return append(dst, out...), nil
}

// plainSnappy is the snappy body format written with golang/snappy.
type plainSnappy struct{ decoded *int }

func (plainSnappy) Name() string { return "snappy" }
func (plainSnappy) Encode(dst, src []byte) ([]byte, error) {
	return append(dst, snappy.Encode(nil, src)...), nil
}
func (c plainSnappy) Decode(dst, src []byte) ([]byte, error) {
	*c.decoded++
	out, err := snappy.Decode(nil, src)
	return append(dst, out...), err
}

func testCompression(t *testing.T, e *env) {
	s := e.s
	keyspace(t, s, "comp")
	exec(t, s, "CREATE TABLE comp.t (k int, c int, v text, PRIMARY KEY (k, c))")
	long := ""
	for i := 0; i < 200; i++ {
		long += "compressible text "
	}
	t.Run("gocqlSnappy", func(t *testing.T) {
		cs := e.session(t, func(cc *gocql.ClusterConfig) { cc.Compressor = gocql.SnappyCompressor{} })
		for c := 0; c < 50; c++ {
			execArgs(t, cs, "INSERT INTO comp.t (k, c, v) VALUES (?, ?, ?)", 1, c, long)
		}
		got := strs(t, cs, "SELECT v FROM comp.t WHERE k = 1")
		if len(got) != 50 || got[49] != long {
			t.Fatalf("snappy session read %d rows", len(got))
		}
		km, err := cs.KeyspaceMetadata("comp")
		if err != nil || km.Tables["t"] == nil {
			t.Fatalf("metadata over snappy: %v", err)
		}
	})
	for _, tc := range []struct {
		name string
		mk   func(*int) frame.Compressor
	}{
		{"lz4", func(n *int) frame.Compressor { return pierreLZ4{decoded: n} }},
		{"snappy", func(n *int) frame.Compressor { return plainSnappy{decoded: n} }},
	} {
		t.Run("raw"+tc.name, func(t *testing.T) {
			c := dialRaw(t, e.addr())
			decoded := 0
			comp := tc.mk(&decoded)
			c.startup(tc.name)
			c.comp = comp
			c.rd.SetCompressor(comp)
			// A compressed request with a long body, and a long answer.
			q := &frame.Query{Query: "INSERT INTO comp.t (k, c, v) VALUES (?, ?, ?)", Params: frame.QueryParams{Consistency: frame.One,
				Values: []frame.Value{intValue(2), intValue(1), frame.BytesValue([]byte(long))}}}
			rawCheckVoid(t, "compressed insert", c.roundTrip(q))
			r, ok := c.query("SELECT v FROM comp.t WHERE k = 1").(*frame.RowsResult)
			if !ok || len(r.Rows) != 50 || string(r.Rows[0][0]) != long {
				t.Fatalf("compressed read: %T", r)
			}
			if decoded == 0 {
				t.Fatal("the server sent no compressed frame")
			}
			r, ok = c.query("SELECT v FROM comp.t WHERE k = 2").(*frame.RowsResult)
			if !ok || len(r.Rows) != 1 || string(r.Rows[0][0]) != long {
				t.Fatal("compressed insert not stored")
			}
			// Small frames (below the compression threshold) may be plain;
			// both directions still work.
			if _, ok := c.roundTrip(&frame.Options{}).(*frame.Supported); !ok {
				t.Fatal("OPTIONS over compression")
			}
			// A compressed frame whose body does not decompress gets a
			// protocol error, and the connection goes on.
			bad := append(rawHeader(4, frame.FlagCompression, 5, frame.OpQuery, 8), 0, 0, 0, 100, 1, 2, 3, 4)
			c.write(bad)
			_, resp, _ := c.recv()
			rawErr(t, "corrupt compressed body", resp, frame.CodeProtocolError, "")
			if _, ok := c.roundTrip(&frame.Options{}).(*frame.Supported); !ok {
				t.Fatal("connection unusable after a corrupt compressed frame")
			}
		})
	}
}

func testEvents(t *testing.T, e *env) {
	c := dialRaw(t, e.addr())
	c.startup("")
	if _, ok := c.roundTrip(&frame.Register{Events: []string{frame.EventSchemaChange, frame.EventTopologyChange, frame.EventStatusChange}}).(*frame.Ready); !ok {
		t.Fatal("REGISTER")
	}
	quiet := dialRaw(t, e.addr())
	quiet.startup("")
	// DDL from another session.
	exec(t, e.s, "CREATE KEYSPACE evks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE evks.t (k int PRIMARY KEY, v int)",
		"ALTER TABLE evks.t ADD w int",
		"DROP TABLE evks.t",
		"DROP KEYSPACE evks")
	want := []frame.SchemaChange{
		{Change: "CREATED", Target: "KEYSPACE", Keyspace: "evks"},
		{Change: "CREATED", Target: "TABLE", Keyspace: "evks", Name: "t"},
		{Change: "UPDATED", Target: "TABLE", Keyspace: "evks", Name: "t"},
		{Change: "DROPPED", Target: "TABLE", Keyspace: "evks", Name: "t"},
		{Change: "DROPPED", Target: "KEYSPACE", Keyspace: "evks"},
	}
	var got []frame.SchemaChange
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < len(want) {
		if time.Now().After(deadline) {
			t.Fatalf("events %+v, want %+v", got, want)
		}
		h, resp, _ := c.recv()
		ev, ok := resp.(*frame.Event)
		if !ok || h.Stream != -1 {
			t.Fatalf("unexpected frame on stream %d: %#v", h.Stream, resp)
		}
		if ev.Type == frame.EventSchemaChange && ev.Schema.Keyspace == "evks" {
			got = append(got, frame.SchemaChange{Change: ev.Schema.Change, Target: ev.Schema.Target, Keyspace: ev.Schema.Keyspace, Name: ev.Schema.Name})
		}
	}
	eq(t, "schema events", got, want)
	// The connection that did not register gets no events: its next
	// frame is the answer to its own request.
	quiet.sendStream(2, &frame.Options{})
	h, resp, _ := quiet.recv()
	if _, ok := resp.(*frame.Supported); !ok || h.Stream != 2 {
		t.Fatalf("unregistered connection got %#v on stream %d", resp, h.Stream)
	}
	t.Run("SlowClient", func(t *testing.T) { testSlowEventClient(t, e) })
	// gocql follows schema events: a table created elsewhere shows in
	// its metadata.
	other := e.session(t, nil)
	exec(t, other, "CREATE KEYSPACE IF NOT EXISTS evks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE evks2.t (k int PRIMARY KEY)")
	eventually(t, 10*time.Second, "gocql metadata refresh", func() bool {
		km, err := e.s.KeyspaceMetadata("evks2")
		return err == nil && km.Tables["t"] != nil
	})
	exec(t, other, "DROP KEYSPACE evks2")
}

// testSlowEventClient checks that a registered client that stops reading
// does not hold up events for the others: it is disconnected instead.
//
// The client sends requests and reads nothing. The server stops reading
// them only once MaxRequestsPerConnection requests wait for room in the
// connection's send queue, and only then does an event find that queue
// full and close the connection. The client cannot see that moment: its
// writes block as soon as the socket buffers fill, which is long before
// the server has worked through what it read when the machine is loaded
// (and over TLS a write that times out breaks the connection for good).
// So the client writes on, blocked, and schema changes are made one after
// another until the server closes it; each must reach another registered
// client without waiting on it.
func testSlowEventClient(t *testing.T, e *env) {
	// Statements go over a raw connection too: a loaded node can miss
	// its registration lease (the test cluster's is 2s), and gocql then
	// takes it for down, which is not what this test is about.
	ddl := dialRaw(t, e.addr())
	ddl.startup("")
	run := func(q string) {
		t.Helper()
		switch resp := ddl.query(q).(type) {
		case *frame.VoidResult, *frame.SchemaChangeResult:
		default:
			t.Fatalf("%.80s: %#v", q, resp)
		}
	}
	run("CREATE KEYSPACE IF NOT EXISTS slowks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	run("CREATE TABLE IF NOT EXISTS slowks.t (k int PRIMARY KEY, v text)")
	run("INSERT INTO slowks.t (k, v) VALUES (1, '" + strings.Repeat("x", 8<<10) + "')")
	stuck := dialRaw(t, e.addr())
	stuck.startup("")
	stuck.roundTrip(&frame.Register{Events: []string{frame.EventSchemaChange}})
	var chunk []byte
	for i := 0; i < 500; i++ {
		b, err := frame.AppendRequest(nil, frame.Header{Stream: int16(i)}, nil,
			&frame.Query{Query: "SELECT v FROM slowks.t WHERE k = 1", Params: frame.QueryParams{Consistency: frame.One}})
		if err != nil {
			t.Fatal(err)
		}
		chunk = append(chunk, b...)
	}
	// The writer ends when a write fails: the server closed the
	// connection (a reset, as it leaves requests unread), or the test
	// closes it. Whole chunks only, with no deadline, so that every frame
	// (and TLS record) the server may read is complete.
	const maxSent = 256 << 20
	_ = stuck.nc.SetWriteDeadline(time.Time{})
	writeErr := make(chan error, 1)
	go func() {
		for sent := 0; ; sent += len(chunk) {
			if sent > maxSent {
				writeErr <- errors.New("the server kept reading requests whose answers nobody reads")
				return
			}
			if _, err := stuck.nc.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	writerDone := false
	t.Cleanup(func() {
		if !writerDone {
			_ = stuck.nc.Close()
			<-writeErr
		}
	})
	watcher := dialRaw(t, e.addr())
	watcher.startup("")
	watcher.roundTrip(&frame.Register{Events: []string{frame.EventSchemaChange}})
	// The server needs about MaxRequestsPerConnection requests' work to
	// fill the queue; each round gives it a few more seconds.
	const rounds = 20
	for i := 2; ; i++ {
		if i > rounds+1 {
			t.Fatalf("the server did not close a client that reads nothing after %d schema changes", rounds)
		}
		name := fmt.Sprintf("t%d", i)
		// The node works through the stuck client's requests meanwhile;
		// on a loaded machine a change can time out (and may have been
		// made): it is tried again.
		for attempt := 1; ; attempt++ {
			resp := ddl.query("CREATE TABLE IF NOT EXISTS slowks." + name + " (k int PRIMARY KEY)")
			if fe, isErr := resp.(*frame.Error); isErr && attempt < 3 && strings.Contains(fe.Message, "deadline exceeded") {
				t.Logf("CREATE TABLE slowks.%s, attempt %d: %s", name, attempt, fe.Message)
				continue
			}
			switch resp.(type) {
			case *frame.SchemaChangeResult:
			case *frame.VoidResult: // made by the attempt that timed out
				if attempt == 1 {
					t.Fatalf("slowks.%s existed before", name)
				}
			default:
				t.Fatalf("CREATE TABLE slowks.%s: %#v", name, resp)
			}
			break
		}
		// From the change's answer: the event may come before it, or
		// after the broadcast waited on the stuck client.
		start := time.Now()
		for {
			h, resp, _ := watcher.recv()
			if ev, ok := resp.(*frame.Event); ok && h.Stream == -1 && ev.Schema.Name == name {
				break
			}
		}
		if d := time.Since(start); d > 8*time.Second {
			t.Fatalf("event took %v behind a client that does not read", d)
		}
		// The event waits eventQueueWait (2s) for room in the stuck
		// connection's queue, after or before the watcher got it.
		select {
		case err := <-writeErr:
			writerDone = true
			if !isReset(err) {
				t.Fatalf("stuck client's write: %v, want the connection closed by the server", err)
			}
			t.Logf("stuck client closed after %d schema changes: %v", i-1, err)
		case <-time.After(5 * time.Second):
			continue
		}
		break
	}
	// The stuck client reads what reached it, then the end: EOF (the
	// write above took the reset), the reset, or over TLS the end in the
	// middle of a record; never a wait.
	_ = stuck.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, stuck.nc); err != nil && !isReset(err) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("stuck client: %v, want the connection closed", err)
	}
	run("DROP KEYSPACE slowks")
}
