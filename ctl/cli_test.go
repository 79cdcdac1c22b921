package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// result is one run of the cosmosctl binary.
type result struct {
	stdout, stderr string
	code           int
}

// cosmosctl runs the binary built by TestMain with args and the given
// extra environment (COSMOSCTL_ENDPOINTS is otherwise unset).
func cosmosctl(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return cosmosctlWithin(t, 30*time.Second, env, args...)
}

// cosmosctlWithin is cosmosctl for commands that may take longer (--wait).
func cosmosctlWithin(t *testing.T, limit time.Duration, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(s string) bool { return strings.HasPrefix(s, EndpointsEnv+"=") }), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("cosmosctl %q: %v", args, err)
		}
		r.code = exitErr.ExitCode()
	}
	return r
}

// ok runs cosmosctl and fails the test unless it succeeds quietly.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := cosmosctl(t, nil, args...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("cosmosctl %q: exit %d, stderr %q, stdout:\n%s", args, r.code, r.stderr, r.stdout)
	}
	return r.stdout
}

// fails runs cosmosctl, expects a failure with one stderr line matching
// want and nothing on stdout.
func fails(t *testing.T, env []string, want string, args ...string) {
	t.Helper()
	r := cosmosctl(t, env, args...)
	if r.code == 0 {
		t.Fatalf("cosmosctl %q: exit 0, want failure; stdout:\n%s", args, r.stdout)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") || !strings.HasPrefix(r.stderr, "cosmosctl: ") {
		t.Fatalf("cosmosctl %q: stderr %q, want one line starting with \"cosmosctl: \"", args, r.stderr)
	}
	if !regexp.MustCompile(want).MatchString(r.stderr) {
		t.Fatalf("cosmosctl %q: stderr %q, want a match of %q", args, r.stderr, want)
	}
	if r.stdout != "" {
		t.Fatalf("cosmosctl %q: stdout %q on failure, want nothing", args, r.stdout)
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// fieldNames lists a message's proto field names.
func fieldNames(d protoreflect.MessageDescriptor) []string {
	var out []string
	for i := 0; i < d.Fields().Len(); i++ {
		out = append(out, string(d.Fields().Get(i).Name()))
	}
	slices.Sort(out)
	return out
}

// keysOf returns the sorted keys of a JSON object.
func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// decodeJSON decodes with numbers kept exact.
func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
}

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, isNum := v.(json.Number)
	if !isNum {
		t.Fatalf("%v (%T) is not a JSON number", v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%v: %v", v, err)
	}
	return i
}

// TestAgainstNode drives the real binary against a real one-node cluster.
func TestAgainstNode(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	s := c.Session(t, 0)
	const rowsT = 5
	stmts := []string{
		"CREATE KEYSPACE ks WITH REPLICATION = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (user text, id int, message text, PRIMARY KEY (user, id))",
		"CREATE TABLE ks.comp (a text, b int, c int, v text, PRIMARY KEY ((a, b), c))",
	}
	for i := range rowsT {
		user := []string{"theo", "ana"}[i%2]
		stmts = append(stmts, fmt.Sprintf("INSERT INTO ks.t (user, id, message) VALUES ('%s', %d, 'hello %d')", user, i, i))
	}
	stmts = append(stmts,
		"INSERT INTO ks.comp (a, b, c, v) VALUES ('x, y', 7, 1, 'one')",
		"INSERT INTO ks.comp (a, b, c, v) VALUES ('x, y', 7, 2, 'two')")
	for _, q := range stmts {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ep := c.Nodes[0].AdminAddr()
	cqlAddr := c.Nodes[0].CQLAddr()

	t.Run("nodes list table", func(t *testing.T) {
		out := ok(t, "--endpoints", ep, "nodes", "list")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("want header and one node, got:\n%s", out)
		}
		if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"ID", "NAME", "STATE", "CQL", "ADMIN", "ZONE/RACK", "REPLICAS", "LEADERS", "FAILED", "BYTES", "VERSION"}) {
			t.Fatalf("header %q", lines[0])
		}
		f := strings.Fields(lines[1])
		if len(f) != 12 { // BYTES is "<n> <unit>"
			t.Fatalf("row %q: %d fields", lines[1], len(f))
		}
		want := []string{strconv.FormatUint(c.Nodes[0].ID(), 10), "node-1", "up", cqlAddr, ep, "datacenter1/rack1", "2", "2", "0"}
		if !slices.Equal(f[:9], want) {
			t.Fatalf("row %q, want it to start with %q", lines[1], want)
		}
		if !regexp.MustCompile(`^[0-9.]+ (B|KiB|MiB)$`).MatchString(f[9] + " " + f[10]) {
			t.Fatalf("bytes %q not human readable", f[9]+" "+f[10])
		}
		t.Logf("nodes list:\n%s", out)
	})

	t.Run("nodes list json", func(t *testing.T) {
		// Common flags before the command work as well as after it.
		out := ok(t, "-o", "json", "--endpoints", ep, "nodes", "list")
		var nodes []map[string]any
		decodeJSON(t, out, &nodes)
		if len(nodes) != 1 {
			t.Fatalf("%d nodes, want 1:\n%s", len(nodes), out)
		}
		n := nodes[0]
		if got, want := keysOf(n), fieldNames((&adminpb.Node{}).ProtoReflect().Descriptor()); !slices.Equal(got, want) {
			t.Fatalf("keys %q, want the proto field names %q", got, want)
		}
		if num(t, n["id"]) != int64(c.Nodes[0].ID()) || n["name"] != "node-1" || n["state"] != "up" || n["cql_addr"] != cqlAddr || n["admin_addr"] != ep {
			t.Fatalf("node %v", n)
		}
		if num(t, n["replicas"]) != 2 || num(t, n["leaders"]) != 2 || num(t, n["bytes"]) <= 0 {
			t.Fatalf("load: %v", n)
		}
		if labels, _ := n["labels"].(map[string]any); labels["rack"] != "rack1" {
			t.Fatalf("labels %v", n["labels"])
		}
		// The output also parses back as the proto messages.
		var raw []json.RawMessage
		decodeJSON(t, out, &raw)
		var back adminpb.Node
		if err := protojson.Unmarshal(raw[0], &back); err != nil || back.GetName() != "node-1" {
			t.Fatalf("protojson: %v, %v", err, &back)
		}
	})

	t.Run("ring show table", func(t *testing.T) {
		out := ok(t, "ring", "show", "--table", "ks.t", "--endpoints", ep)
		t.Logf("ring show:\n%s", out)
		lines := strings.Split(out, "\n")
		if !regexp.MustCompile(`^ks\.t: 1 partition, 5 rows, [0-9.]+ (B|KiB|MiB)$`).MatchString(lines[0]) {
			t.Fatalf("section header %q", lines[0])
		}
		// The RU/S column appears while the partition's decaying request
		// rate is non-zero, which depends on how long ago the inserts ran.
		want := []string{"PARTITION", "START", "END", "REPLICAS", "LEADER", "GEN", "BYTES", "ROWS"}
		got := strings.Fields(lines[2])
		if len(got) == len(want)+1 && got[len(want)] == "RU/S" {
			want = append(want, "RU/S")
		}
		if !slices.Equal(got, want) {
			t.Fatalf("table header %q", lines[2])
		}
		f := strings.Fields(lines[3])
		if len(f) != len(want)+1 || !regexp.MustCompile(`^P[0-9]+$`).MatchString(f[0]) ||
			f[1] != "-9223372036854775808" || f[2] != "9223372036854775807" || f[3] != "node-1*" || f[4] != "node-1" || f[8] != strconv.Itoa(rowsT) {
			t.Fatalf("partition row %q", lines[3])
		}
		chart := regexp.MustCompile(`^` + f[0] + `  \[#{30}\] ` + regexp.QuoteMeta(f[6]+" "+f[7]) + `$`)
		if lines[4] != "" || !chart.MatchString(lines[5]) {
			t.Fatalf("bar chart %q, want a full bar of %s %s", lines[5], f[6], f[7])
		}
	})

	t.Run("ring show json", func(t *testing.T) {
		out := ok(t, "ring", "show", "--table", "ks.t", "-o", "json", "--endpoints", ep)
		var resp map[string][]map[string]any
		decodeJSON(t, out, &resp)
		if len(resp) != 1 || len(resp["partitions"]) != 1 {
			t.Fatalf("want {\"partitions\": [one]}:\n%s", out)
		}
		p := resp["partitions"][0]
		if got, want := keysOf(p), fieldNames((&adminpb.Partition{}).ProtoReflect().Descriptor()); !slices.Equal(got, want) {
			t.Fatalf("keys %q, want every proto field %q", got, want)
		}
		if p["table"] != "ks.t" || num(t, p["start"]) != -1<<63 || num(t, p["end"]) != 1<<63-1 {
			t.Fatalf("partition %v", p)
		}
		if num(t, p["rows"]) != rowsT || num(t, p["bytes"]) <= 0 || num(t, p["logical_partitions"]) != 2 {
			t.Fatalf("stats: rows %v bytes %v logical %v; want %d rows", p["rows"], p["bytes"], p["logical_partitions"], rowsT)
		}
		if p["leader_name"] != "node-1" || num(t, p["leader_node"]) != int64(c.Nodes[0].ID()) {
			t.Fatalf("leader %v", p)
		}
		reps, _ := p["replicas"].([]any)
		if len(reps) != 1 {
			t.Fatalf("replicas %v", p["replicas"])
		}
		if r, _ := reps[0].(map[string]any); r["node_name"] != "node-1" || r["reachable"] != true || r["learner"] != false {
			t.Fatalf("replica %v", r)
		}
		var back adminpb.ShowRingResponse
		if err := protojson.Unmarshal([]byte(out), &back); err != nil || back.GetPartitions()[0].GetStart() != -1<<63 {
			t.Fatalf("protojson: %v", err)
		}
	})

	t.Run("ring show all tables", func(t *testing.T) {
		out := ok(t, "--endpoints", ep, "ring", "show")
		for _, want := range []string{"ks.comp: 1 partition, 2 rows, ", "ks.t: 1 partition, 5 rows, "} {
			if !strings.Contains(out, want) {
				t.Fatalf("missing section %q:\n%s", want, out)
			}
		}
	})

	gocqlToken := func(t *testing.T, q string, args ...any) int64 {
		t.Helper()
		var tok int64
		if err := s.Query(q, args...).Scan(&tok); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return tok
	}

	t.Run("token", func(t *testing.T) {
		want := gocqlToken(t, "SELECT token(user) FROM ks.t WHERE user = ?", "theo")
		out := ok(t, "--endpoints", ep, "token", "--table", "ks.t", "--key", "theo")
		m := regexp.MustCompile(`(?m)^token:\s+(-?[0-9]+)$`).FindStringSubmatch(out)
		if m == nil || m[1] != strconv.FormatInt(want, 10) {
			t.Fatalf("token output:\n%s\nwant token %d", out, want)
		}
		for _, line := range []string{`partition: +P[0-9]+`, `range: +\[-9223372036854775808, 9223372036854775807\]`, `replicas: +node-1\*`, `leader: +node-1`} {
			if !regexp.MustCompile(`(?m)^` + line + `$`).MatchString(out) {
				t.Fatalf("token output lacks %q:\n%s", line, out)
			}
		}
		var resp map[string]any
		decodeJSON(t, ok(t, "--endpoints", ep, "token", "--table", "ks.t", "--key", "theo", "-o", "json"), &resp)
		if num(t, resp["token"]) != want {
			t.Fatalf("json token %v, want %d", resp["token"], want)
		}
		if p, _ := resp["partition"].(map[string]any); p["table"] != "ks.t" || p["leader_name"] != "node-1" {
			t.Fatalf("json partition %v", resp["partition"])
		}
	})

	t.Run("token composite key", func(t *testing.T) {
		// The first component has a comma and a space: one --key is one
		// value, exactly.
		want := gocqlToken(t, "SELECT token(a, b) FROM ks.comp WHERE a = ? AND b = ?", "x, y", 7)
		var resp map[string]any
		decodeJSON(t, ok(t, "--endpoints", ep, "token", "--table", "ks.comp", "--key", "x, y", "--key", "7", "-o", "json"), &resp)
		if num(t, resp["token"]) != want {
			t.Fatalf("token %v, want %d", resp["token"], want)
		}
	})

	t.Run("endpoints", func(t *testing.T) {
		dead := closedAddr(t)
		// The first endpoint is down; the second answers.
		ok(t, "--endpoints", dead+","+ep, "nodes", "list")
		// The environment supplies the endpoints; a flag overrides it.
		if r := cosmosctl(t, []string{EndpointsEnv + "=" + ep}, "nodes", "list"); r.code != 0 {
			t.Fatalf("with %s: exit %d, %s", EndpointsEnv, r.code, r.stderr)
		}
		fails(t, []string{EndpointsEnv + "=" + ep}, "cannot reach any endpoint", "nodes", "list", "--endpoints", dead)
		fails(t, []string{EndpointsEnv + "=" + dead}, "cannot reach any endpoint", "--endpoints", dead, "nodes", "list", "--endpoints", dead)
		if r := cosmosctl(t, []string{EndpointsEnv + "=" + dead}, "--endpoints", ep, "nodes", "list"); r.code != 0 {
			t.Fatalf("flag before the command over the environment: exit %d, %s", r.code, r.stderr)
		}
	})

	t.Run("errors", func(t *testing.T) {
		dead := closedAddr(t)
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"unknown table", []string{"ring", "show", "--table", "ks.nope"}, `^cosmosctl: table ks.nope does not exist\n$`},
			{"unknown table token", []string{"token", "--table", "nope.t", "--key", "a"}, `^cosmosctl: table nope.t does not exist\n$`},
			{"table without keyspace", []string{"ring", "show", "--table", "t"}, `keyspace\.table`},
			{"too many keys", []string{"token", "--table", "ks.t", "--key", "a", "--key", "b"}, `has 1 partition key columns \(user\), got 2 values`},
			{"too few keys", []string{"token", "--table", "ks.comp", "--key", "a"}, `has 2 partition key columns \(a, b\), got 1 values`},
			{"bad key literal", []string{"token", "--table", "ks.comp", "--key", "a", "--key", "seven"}, `key b: "seven" is not a int`},
			{"no key", []string{"token", "--table", "ks.t"}, `--key is required`},
			{"no table", []string{"token"}, `--table is required; --key is required`},
			{"bad output", []string{"nodes", "list", "-o", "yaml"}, `-o "yaml": want table or json`},
			{"unknown flag", []string{"nodes", "list", "--bogus"}, `flag provided but not defined: -bogus \(see cosmosctl nodes list --help\)`},
			{"unknown command", []string{"nodes", "bogus"}, `unknown command "bogus"`},
			{"call timeout", []string{"nodes", "list", "--timeout", "1ns"}, `^cosmosctl: 127\.0\.0\.1:[0-9]+ did not answer within 1ns \(--timeout\): context deadline exceeded\n$`},
			{"stray argument", []string{"ring", "show", "ks.t"}, `unexpected argument "ks.t"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				fails(t, nil, tc.want, append([]string{"--endpoints", ep}, tc.args...)...)
			})
		}
		t.Run("unreachable", func(t *testing.T) {
			fails(t, nil, `^cosmosctl: cannot reach any endpoint \(`+regexp.QuoteMeta(dead)+`\): connection refused\n$`, "--endpoints", dead, "nodes", "list")
			fails(t, nil, `^cosmosctl: cannot reach any endpoint \(127\.0\.0\.1:1, `+regexp.QuoteMeta(dead)+`\): 127\.0\.0\.1:1: connection refused; `+regexp.QuoteMeta(dead)+`: connection refused\n$`,
				"--endpoints", "127.0.0.1:1,"+dead, "ring", "show")
		})
		t.Run("not an admin endpoint", func(t *testing.T) {
			// The CQL port accepts TCP but does not speak gRPC.
			fails(t, nil, `^cosmosctl: cannot reach any endpoint \(`+regexp.QuoteMeta(cqlAddr)+`\): `, "--endpoints", cqlAddr, "--dial-timeout", "2s", "nodes", "list")
		})
	})
}

// TestVersion checks the -ldflags variables and that version needs no
// cluster.
func TestVersion(t *testing.T) {
	out := ok(t, "--endpoints", closedAddr(t), "version")
	if want := fmt.Sprintf("cosmosctl %s (commit %s, built %s, ", testVersion, testCommit, testBuildDate); !strings.HasPrefix(out, want) {
		t.Fatalf("version %q, want prefix %q", out, want)
	}
	var v map[string]string
	decodeJSON(t, ok(t, "version", "-o", "json"), &v)
	if v["version"] != testVersion || v["commit"] != testCommit || v["build_date"] != testBuildDate || v["go_version"] == "" || v["platform"] == "" {
		t.Fatalf("version json %v", v)
	}
	if out := ok(t, "--version"); !strings.Contains(out, testVersion) {
		t.Fatalf("--version %q", out)
	}
}
