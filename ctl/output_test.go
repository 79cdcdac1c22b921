package ctl

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

func TestTableRender(t *testing.T) {
	tb := newTable([]string{"NAME", "BYTES", "NOTE"}, "BYTES")
	tb.row("node-1", "1.2 MiB", "a")
	tb.row("n2", "0 B", "tab\there")
	tb.row("node-三", 7) // runes, not bytes, set the width; missing cells are empty
	var sb strings.Builder
	if err := tb.render(&sb); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME      BYTES  NOTE\n" +
		"node-1  1.2 MiB  a\n" +
		"n2          0 B  tab?here\n" +
		"node-三        7\n"
	if sb.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", sb.String(), want)
	}
}

func TestKeyValues(t *testing.T) {
	var sb strings.Builder
	if err := keyValues(&sb, [][2]string{{"token", "-5"}, {"partition", "P1"}}); err != nil {
		t.Fatal(err)
	}
	if want := "token:      -5\npartition:  P1\n"; sb.String() != want {
		t.Fatalf("got %q, want %q", sb.String(), want)
	}
}

func TestRenderRing(t *testing.T) {
	parts := []*adminpb.Partition{
		{Id: 1, Table: "ks.a", Start: -1 << 63, End: -1, Generation: 3, LeaderNode: 2, LeaderName: "node-2", Bytes: 2048, Rows: 10,
			RuShare: 5000, Replicas: []*adminpb.Replica{
				{NodeId: 1, NodeName: "node-1"}, {NodeId: 2, NodeName: "node-2"}, {NodeId: 3, NodeName: "node-3"}, {NodeId: 9, Learner: true}}},
		{Id: 7, Table: "ks.a", Start: 0, End: 1<<63 - 1, Generation: 1, Bytes: 1024, Rows: 1, RuShare: 5000.25, RuPerSec: 6012.34, Hot: true,
			Throttled: 17, Replicas: []*adminpb.Replica{{NodeId: 1, NodeName: "node-1"}}},
		{Id: 2, Table: "ks.b", Start: -1 << 63, End: 1<<63 - 1, LeaderNode: 4, Replicas: []*adminpb.Replica{{NodeId: 4}}},
	}
	var sb strings.Builder
	if err := renderRing(&sb, parts); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ks.a: 2 partitions, 11 rows, 3.0 KiB\n" +
		"\n" +
		"PARTITION                 START                  END  REPLICAS                     LEADER  GEN    BYTES  ROWS    RU/S  RU/S SHARE  HOT\n" +
		"P1         -9223372036854775808                   -1  node-1,node-2*,node-3,n9(l)  node-2    3  2.0 KiB    10       0        5000  -\n" +
		"P7                            0  9223372036854775807  node-1                       -         1  1.0 KiB     1  6012.3      5000.3  HOT\n" +
		"\n" +
		"P1  [##############################] 2.0 KiB\n" +
		"P7  [###############               ] 1.0 KiB\n" +
		"\n" +
		"ks.b: 1 partition, 0 rows, 0 B\n" +
		"\n" +
		"PARTITION                 START                  END  REPLICAS  LEADER  GEN  BYTES  ROWS\n" +
		"P2         -9223372036854775808  9223372036854775807  n4*       n4        0    0 B     0\n" +
		"\n" +
		"P2  [                              ] 0 B\n"
	if sb.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", sb.String(), want)
	}

	sb.Reset()
	if err := renderRing(&sb, nil); err != nil || sb.String() != "no tables\n" {
		t.Fatalf("empty ring: %q, %v", sb.String(), err)
	}
}

func TestRenderNodes(t *testing.T) {
	nodes := []*adminpb.Node{
		{Id: 1, Name: "node-1", State: "up", CqlAddr: "10.0.0.1:9042", AdminAddr: "10.0.0.1:7070",
			Labels: map[string]string{"zone": "z1", "rack": "r1", "dc": "ignored"}, Replicas: 12, Leaders: 3, FailedReplicas: 1, Bytes: 5 << 30, Version: "v1.0.0"},
		{Id: 12, Name: "node-12", State: "suspect", Labels: map[string]string{"dc": "dc1"}},
	}
	var sb strings.Builder
	if err := renderNodes(&sb, nodes); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID  NAME     STATE    CQL            ADMIN          ZONE/RACK  REPLICAS  LEADERS  FAILED    BYTES  VERSION\n" +
		" 1  node-1   up       10.0.0.1:9042  10.0.0.1:7070  z1/r1            12        3       1  5.0 GiB  v1.0.0\n" +
		"12  node-12  suspect  -              -              dc1/-             0        0       0      0 B  -\n"
	if sb.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", sb.String(), want)
	}
	if got := location(nil); got != "-" {
		t.Fatalf("location(nil) = %q", got)
	}
}

func TestRenderToken(t *testing.T) {
	var sb strings.Builder
	if err := renderToken(&sb, "ks.t", []string{"a", "b"}, &adminpb.TokenResponse{Token: -42}); err != nil {
		t.Fatal(err)
	}
	want := "table:      ks.t\nkey:        a, b\ntoken:      -42\npartition:  - (no partition owns this token)\n"
	if sb.String() != want {
		t.Fatalf("got %q, want %q", sb.String(), want)
	}
}

func TestSplitEndpoints(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"127.0.0.1:7070", []string{"127.0.0.1:7070"}},
		{" a:1 , ,b:2,", []string{"a:1", "b:2"}},
		{"host", []string{"host:7070"}},
		{"::1", []string{"[::1]:7070"}},
		{"[::1]", []string{"[::1]:7070"}},
		{"[::1]:9", []string{"[::1]:9"}},
		{"", nil},
		{" , ", nil},
	} {
		if got := splitEndpoints(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("splitEndpoints(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("plain"), "plain"},
		{errors.Join(errors.New("a"), errors.New("b")), "a; b"},
		{fmt.Errorf("x:\n  detail\r\n\n"), "x:; detail"},
	} {
		if got := oneLine(tc.err); got != tc.want {
			t.Errorf("oneLine(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestMainInProcess checks flag precedence and the one-line error contract
// through Main without a cluster.
func TestMainInProcess(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdoutHas  string
		stderrWant string
	}{
		{name: "json before the command", args: []string{"-o", "json", "version"}, stdoutHas: `"version": "`},
		{name: "nearest flag wins", args: []string{"-o", "json", "version", "-o", "table"}, stdoutHas: "cosmosctl "},
		{name: "bad root flag value", args: []string{"--timeout", "0s", "version"}, code: 1, stderrWant: "cosmosctl: --timeout 0s: must be positive\n"},
		{name: "every problem at once", args: []string{"version", "-o", "x", "--endpoints", ","},
			code: 1, stderrWant: "cosmosctl: --endpoints: no endpoint given; -o \"x\": want table or json\n"},
		{name: "unknown command", args: []string{"bogus"}, code: 1, stderrWant: "cosmosctl: unknown command \"bogus\" (see cosmosctl --help)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := Main(t.Context(), append([]string{"cosmosctl"}, tc.args...), &stdout, &stderr)
			if code != tc.code || stderr.String() != tc.stderrWant || !strings.Contains(stdout.String(), tc.stdoutHas) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr %q",
					code, stdout.String(), stderr.String(), tc.code, tc.stdoutHas, tc.stderrWant)
			}
		})
	}
}
