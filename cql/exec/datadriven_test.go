package exec_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"golang.org/x/crypto/bcrypt"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cql/exec"
	"github.com/cosmosd/cosmosd/cql/exec/exectest"
	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// TestDataDriven runs the scripts under testdata/cql: CQL in, rows, errors
// (with their CQL codes) and the key-value requests the executor sent out,
// against a real Meta and Catalog on metakv.Mem and real partition
// replicas in memory (package exectest). Regenerate the expected output
// with -rewrite after a deliberate change, and review the diff.
//
// Directives:
//
//	cluster [partitions=N] [auth] [max-value-bytes=N] [max-mutation-bytes=N]
//	        [page-max-bytes=N] [max-unpaged-bytes=N] [partition-max-bytes=N]
//	        [max-pk-restrictions=N] [max-ck-restrictions=N]
//	    Configures the file's cluster and executor; only as the first
//	    directive. partitions: how many partitions every table gets
//	    (default 4; 0 honours what the executor asks for). auth:
//	    authorization on, with the superuser role "su" and the login role
//	    "alice". The others set the executor's limits of the same names.
//	exec [keyspace=ks] [consistency=CL] [serial=CL] [page-size=N]
//	     [pages=all] [paging-state=hex] [timestamp=µs] [as=role] [trace=kv]
//	    Runs the statement of the input and prints its result: "ok", the
//	    schema change, or the rows (CQL literals, one row a line, after a
//	    header of the column names); an error as "error 0xCODE Name:
//	    message". trace=kv also prints, first, the key-value requests the
//	    statement sent (exectest.Format). The session keeps the keyspace of
//	    USE; keyspace= runs this statement in another. consistency
//	    defaults to ONE, serial to SERIAL.
//	page [pages=all]
//	    Fetches the next page (or all the pages left) of the last paged
//	    exec.
//	prepare name=P [keyspace=ks]
//	    Prepares the statement of the input as P and prints its metadata:
//	    the variables, the partition-key indexes and the result columns.
//	execute name=P [names=a,b] [consistency=CL] [page-size=N] [pages=all]
//	        [trace=kv]
//	    Executes P with the values of the input: "v1 | v2 | ...", each a
//	    JSON value (cqltype.FromJSON), raw:HEX (the bytes as they are) or
//	    unset; names= names them.
//	batch [kind=logged|unlogged|counter] [trace=kv]
//	    Sends a protocol BATCH: each input line is "P: v1 | v2" (prepared
//	    statement P with its values) or a statement's text.
//	setup [as=role] [keyspace=ks]
//	    Runs each line of the input as one statement; prints "ok" or the
//	    errors.
//	node id=N cql=host:port [dc=DC] [rack=R]
//	    Registers another node, as it would on start.
//	time [set=RFC3339] [advance=duration]
//	    Sets or moves the executor's clock and prints it.
//	kv-fail code=CODE [n=N] [kind=read|write]
//	    Makes the next N (default 1) key-value requests of kind (default
//	    either) fail with the partition error CODE (kvpb.Error_Code).
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/cql", func(t *testing.T, path string) {
		h := &harness{t: t}
		datadriven.RunTest(t, path, h.run)
	})
}

type harness struct {
	t    *testing.T
	c    *exectest.Cluster
	e    *exec.Executor
	sess *exec.Session
	// last is the last paged statement, for page.
	last *lastQuery
	// prepared are the prepared statements by name.
	prepared map[string]*exec.Prepared
}

// lastQuery is a statement to run, page by page: query text, or the
// prepared statement id.
type lastQuery struct {
	sess  *exec.Session
	query string
	id    []byte
	req   exec.Request
	trace bool
}

// start builds the cluster and the executor, on the first directive.
func (h *harness) start(t *testing.T, d *datadriven.TestData) {
	partitions := 4
	if d != nil {
		d.MaybeScanArgs(t, "partitions", &partitions)
	}
	h.c = exectest.New(h.t, exectest.Config{Partitions: partitions})
	cfg := exec.Config{NodeID: exectest.NodeID, Meta: h.c.Meta, Catalog: h.c.Catalog, Router: h.c.KV,
		Placer: h.c.Placer, Roles: h.c.Roles, Now: h.c.Clock.Now, PasswordHashCost: bcrypt.MinCost,
		Local: exec.LocalNode{HostID: "8f3b9e52-7c0e-4a55-9d7a-1f2e3d4c5b6a", Datacenter: "dc1", Rack: "r1"}}
	if d != nil {
		for _, l := range []struct {
			arg  string
			dest *int
		}{{"max-value-bytes", &cfg.MaxValueBytes}, {"max-mutation-bytes", &cfg.MaxMutationBytes},
			{"page-max-bytes", &cfg.PageMaxBytes}, {"max-unpaged-bytes", &cfg.MaxUnpagedResultBytes},
			{"max-pk-restrictions", &cfg.MaxPartitionKeyRestrictions}, {"max-ck-restrictions", &cfg.MaxClusteringKeyRestrictions}} {
			d.MaybeScanArgs(t, l.arg, l.dest)
		}
		d.MaybeScanArgs(t, "partition-max-bytes", &cfg.LogicalPartitionMaxBytes)
	}
	if d != nil && d.HasArg("auth") {
		ctx := context.Background()
		if err := h.c.Roles.Update(ctx, func(m *auth.Mutable) error {
			m.PutRole(&auth.Role{Name: "su", Superuser: true, Login: true})
			m.PutRole(&auth.Role{Name: "alice", Login: true})
			return nil
		}); err != nil {
			h.t.Fatal(err)
		}
		cfg.RequireAuth = true
	}
	h.e = exec.New(cfg)
	h.sess = &exec.Session{}
	h.prepared = map[string]*exec.Prepared{}
	h.c.KV.Record(true)
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd == "cluster" {
		if h.c != nil {
			d.Fatalf(t, "cluster must be the first directive")
		}
		h.start(t, d)
		return "ok"
	}
	if h.c == nil {
		h.start(t, nil)
	}
	switch d.Cmd {
	case "exec":
		return h.exec(t, d)
	case "page":
		if h.last == nil {
			d.Fatalf(t, "page: no paged statement to continue")
		}
		return h.pages(d, h.last)
	case "setup":
		sess := h.query(t, d).sess
		var out []string
		for _, q := range strings.Split(d.Input, "\n") {
			if strings.TrimSpace(q) == "" {
				continue
			}
			if _, err := h.e.Query(context.Background(), sess, q, exec.Request{Consistency: exec.One}); err != nil {
				out = append(out, q+": "+formatError(err))
			}
		}
		h.c.KV.Take()
		if len(out) == 0 {
			return "ok"
		}
		return strings.Join(out, "\n")
	case "prepare":
		return h.prepare(t, d)
	case "execute":
		return h.execute(t, d)
	case "batch":
		return h.batch(t, d)
	case "node":
		var id uint64
		var addr, dc, rack string
		d.ScanArgs(t, "id", &id)
		d.ScanArgs(t, "cql", &addr)
		d.MaybeScanArgs(t, "dc", &dc)
		d.MaybeScanArgs(t, "rack", &rack)
		info := cluster.NodeInfo{ID: id, Name: fmt.Sprintf("node%d", id), CQLAddr: addr, Labels: map[string]string{}}
		if dc != "" {
			info.Labels["dc"] = dc
		}
		if rack != "" {
			info.Labels["rack"] = rack
		}
		if err := h.c.RegisterNode(context.Background(), info); err != nil {
			d.Fatalf(t, "register node %d: %v", id, err)
		}
		return "ok"
	case "time":
		if arg, ok := d.Arg("set"); ok {
			at, err := time.Parse(time.RFC3339Nano, arg.SingleVal(t))
			if err != nil {
				d.Fatalf(t, "time set: %v", err)
			}
			h.c.Clock.Set(at)
		}
		if arg, ok := d.Arg("advance"); ok {
			by, err := time.ParseDuration(arg.SingleVal(t))
			if err != nil {
				d.Fatalf(t, "time advance: %v", err)
			}
			h.c.Clock.Advance(by)
		}
		return h.c.Clock.Now().UTC().Format(time.RFC3339Nano)
	case "kv-fail":
		var code string
		d.ScanArgs(t, "code", &code)
		c, ok := kvpb.Error_Code_value[code]
		if !ok {
			d.Fatalf(t, "kv-fail: unknown code %q", code)
		}
		n := 1
		d.MaybeScanArgs(t, "n", &n)
		kind := exectest.AnyRequest
		if arg, ok := d.Arg("kind"); ok {
			switch arg.SingleVal(t) {
			case "read":
				kind = exectest.ReadRequest
			case "write":
				kind = exectest.WriteRequest
			default:
				d.Fatalf(t, "kv-fail: kind must be read or write")
			}
		}
		h.c.KV.FailNext(n, kind, kvpb.Error_Code(c))
		return "ok"
	}
	d.Fatalf(t, "unknown directive %q", d.Cmd)
	return ""
}

// consistencies names the consistency levels.
var consistencies = map[string]uint16{
	"ANY": exec.Any, "ONE": exec.One, "TWO": exec.Two, "THREE": exec.Three, "QUORUM": exec.Quorum,
	"ALL": exec.All, "LOCAL_QUORUM": exec.LocalQuorum, "EACH_QUORUM": exec.EachQuorum,
	"SERIAL": exec.Serial, "LOCAL_SERIAL": exec.LocalSerial, "LOCAL_ONE": exec.LocalOne,
}

func (h *harness) exec(t *testing.T, d *datadriven.TestData) string {
	q := h.query(t, d)
	q.query = d.Input
	return h.pages(d, q)
}

// query reads the options of a statement to run.
func (h *harness) query(t *testing.T, d *datadriven.TestData) *lastQuery {
	q := &lastQuery{sess: h.sess, trace: d.HasArg("trace"),
		req: exec.Request{Consistency: exec.One, SerialConsistency: exec.Serial}}
	for _, a := range []struct {
		arg  string
		dest *uint16
	}{{"consistency", &q.req.Consistency}, {"serial", &q.req.SerialConsistency}} {
		if arg, ok := d.Arg(a.arg); ok {
			cl, ok := consistencies[arg.SingleVal(t)]
			if !ok {
				d.Fatalf(t, "unknown consistency %q", arg.SingleVal(t))
			}
			*a.dest = cl
		}
	}
	if d.HasArg("keyspace") || d.HasArg("as") {
		var ks, role string
		d.MaybeScanArgs(t, "keyspace", &ks)
		d.MaybeScanArgs(t, "as", &role)
		if ks == "" {
			ks = h.sess.Keyspace()
		}
		// A session of its own, so that the harness's keeps its keyspace.
		q.sess = &exec.Session{}
		if role != "" {
			q.sess.Login(role)
		}
		if ks != "" {
			if _, err := h.e.Query(context.Background(), q.sess, "USE "+quoteIdent(ks), exec.Request{}); err != nil {
				d.Fatalf(t, "use %s: %v", ks, err)
			}
		}
	}
	var pageSize int
	if d.MaybeScanArgs(t, "page-size", &pageSize) {
		q.req.PageSize = int32(pageSize)
	}
	var state string
	if d.MaybeScanArgs(t, "paging-state", &state) {
		b, err := hex.DecodeString(state)
		if err != nil {
			d.Fatalf(t, "paging-state: %v", err)
		}
		q.req.PagingState = b
	}
	var ts int64
	if d.MaybeScanArgs(t, "timestamp", &ts) {
		q.req.Timestamp, q.req.HasTimestamp = ts, true
	}
	h.last = nil
	return q
}

// prepare prepares the input as a named statement and prints its
// metadata.
func (h *harness) prepare(t *testing.T, d *datadriven.TestData) string {
	var name string
	d.ScanArgs(t, "name", &name)
	q := h.query(t, d)
	p, err := h.e.Prepare(context.Background(), q.sess, d.Input)
	if err != nil {
		return formatError(err)
	}
	h.prepared[name] = p
	specs := func(cs []exec.ColumnSpec) string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.Name + " " + c.Type.String()
		}
		return strings.Join(out, ", ")
	}
	idx := make([]string, len(p.PKIndices))
	for i, n := range p.PKIndices {
		idx[i] = fmt.Sprint(n)
	}
	return fmt.Sprintf("variables: %s\npk-indices: %s\ncolumns: %s", specs(p.Variables), strings.Join(idx, ", "), specs(p.ResultColumns))
}

// execute runs a prepared statement with the values of the input.
func (h *harness) execute(t *testing.T, d *datadriven.TestData) string {
	var name string
	d.ScanArgs(t, "name", &name)
	p := h.prepared[name]
	if p == nil {
		d.Fatalf(t, "no prepared statement %q", name)
	}
	q := h.query(t, d)
	q.id = p.ID
	q.req.Values = h.values(t, d, p, d.Input)
	if arg, ok := d.Arg("names"); ok {
		q.req.Names = append(q.req.Names, arg.Vals...)
	}
	return h.pages(d, q)
}

// values encodes "v1 | v2 | ..." for the variables of p: each a JSON value
// of the variable's type, raw:HEX, or unset.
func (h *harness) values(t *testing.T, d *datadriven.TestData, p *exec.Prepared, text string) []exec.Value {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	var out []exec.Value
	for i, v := range strings.Split(text, " | ") {
		v = strings.TrimSpace(v)
		if v == "unset" {
			out = append(out, exec.Value{Unset: true})
			continue
		}
		if raw, ok := strings.CutPrefix(v, "raw:"); ok {
			b, err := hex.DecodeString(raw)
			if err != nil {
				d.Fatalf(t, "value %d: %v", i, err)
			}
			out = append(out, exec.Value{Bytes: b})
			continue
		}
		typ := cqltype.Scalar(cqltype.Blob)
		if i < len(p.Variables) {
			typ = p.Variables[i].Type
		}
		b, err := cqltype.FromJSON(typ, []byte(v))
		if err != nil {
			d.Fatalf(t, "value %d (%s) for %s: %v", i, v, typ, err)
		}
		out = append(out, exec.Value{Bytes: b})
	}
	return out
}

// batch sends a protocol BATCH of prepared statements and query texts.
func (h *harness) batch(t *testing.T, d *datadriven.TestData) string {
	kind := parser.BatchLogged
	if arg, ok := d.Arg("kind"); ok {
		switch arg.SingleVal(t) {
		case "logged":
		case "unlogged":
			kind = parser.BatchUnlogged
		case "counter":
			kind = parser.BatchCounter
		default:
			d.Fatalf(t, "batch: unknown kind %q", arg.SingleVal(t))
		}
	}
	q := h.query(t, d)
	var stmts []exec.BatchStatement
	for _, line := range strings.Split(d.Input, "\n") {
		name, vals, ok := strings.Cut(line, ": ")
		if p := h.prepared[name]; ok && p != nil {
			stmts = append(stmts, exec.BatchStatement{ID: p.ID, Values: h.values(t, d, p, vals)})
			continue
		}
		stmts = append(stmts, exec.BatchStatement{Query: line})
	}
	res, err := h.e.Batch(context.Background(), q.sess, kind, stmts, q.req)
	var b strings.Builder
	h.trace(&b, q)
	if err != nil {
		b.WriteString(formatError(err))
	} else {
		b.WriteString(formatResult(res))
	}
	return b.String()
}

// trace writes the key-value requests recorded since the last call, when
// q traces them, and forgets them.
func (h *harness) trace(b *strings.Builder, q *lastQuery) {
	reqs := h.c.KV.Take()
	if !q.trace {
		return
	}
	for _, r := range reqs {
		b.WriteString(exectest.Format(r))
		b.WriteByte('\n')
	}
}

// pages runs q from its paging state: one page, or all of them with
// pages=all, and keeps q for page when more are left.
func (h *harness) pages(d *datadriven.TestData, q *lastQuery) string {
	all := false
	if arg, ok := d.Arg("pages"); ok {
		all = arg.SingleVal(h.t) == "all"
	}
	var b strings.Builder
	for n := 1; ; n++ {
		if n > 1 {
			fmt.Fprintf(&b, "--- page %d ---\n", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var res *exec.Result
		var err error
		if q.id != nil {
			res, err = h.e.Execute(ctx, q.sess, q.id, q.req)
		} else {
			res, err = h.e.Query(ctx, q.sess, q.query, q.req)
		}
		cancel()
		h.trace(&b, q)
		if err != nil {
			b.WriteString(formatError(err))
			h.last = nil
			break
		}
		b.WriteString(formatResult(res))
		if res.Rows == nil || res.Rows.PagingState == nil {
			h.last = nil
			break
		}
		q.req.PagingState = res.Rows.PagingState
		h.last = q
		if !all {
			break
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// codeNames names the CQL error codes.
var codeNames = map[exec.Code]string{
	exec.CodeServer: "Server", exec.CodeProtocol: "Protocol", exec.CodeBadCreds: "BadCredentials",
	exec.CodeUnavailable: "Unavailable", exec.CodeOverloaded: "Overloaded", exec.CodeTruncate: "Truncate",
	exec.CodeWriteTimeout: "WriteTimeout", exec.CodeReadTimeout: "ReadTimeout", exec.CodeSyntax: "Syntax",
	exec.CodeUnauthorized: "Unauthorized", exec.CodeInvalid: "Invalid", exec.CodeConfig: "Config",
	exec.CodeAlreadyExists: "AlreadyExists", exec.CodeUnprepared: "Unprepared",
}

// formatError writes an error as the client sees it: its CQL code, and
// the details that code carries.
func formatError(err error) string {
	ce := exec.AsError(err)
	s := fmt.Sprintf("error 0x%04x %s: %s", int32(ce.Code), codeNames[ce.Code], ce.Message)
	switch ce.Code {
	case exec.CodeWriteTimeout:
		s += fmt.Sprintf(" [write_type=%s]", ce.WriteType)
	case exec.CodeAlreadyExists:
		s += fmt.Sprintf(" [keyspace=%s table=%s]", ce.Keyspace, ce.Table)
	}
	return s
}

// formatResult writes a result: "ok", the keyspace a USE set, a schema
// change, or the rows with a header of column names.
func formatResult(res *exec.Result) string {
	switch res.Kind {
	case exec.ResultVoid:
		return "ok"
	case exec.ResultSetKeyspace:
		return "keyspace " + res.Keyspace
	case exec.ResultSchemaChange:
		c := res.Change
		name := c.Keyspace
		if c.Name != "" {
			name += "." + c.Name
		}
		return fmt.Sprintf("%s %s %s", c.Change, c.Target, name)
	case exec.ResultRows:
	default:
		return fmt.Sprintf("result kind %d", res.Kind)
	}
	var b strings.Builder
	names := make([]string, len(res.Rows.Columns))
	for i, c := range res.Rows.Columns {
		names[i] = c.Name
	}
	b.WriteString(strings.Join(names, " | "))
	for _, row := range res.Rows.Rows {
		b.WriteByte('\n')
		for i, cell := range row {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(cqltype.Format(res.Rows.Columns[i].Type, cell))
		}
	}
	if len(res.Rows.Rows) == 0 {
		b.WriteString("\n(no rows)")
	}
	if res.Rows.PagingState != nil {
		b.WriteString("\n(more)")
	}
	return b.String()
}
