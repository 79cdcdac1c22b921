package ctl

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

var renderNow = time.Date(2025, 1, 2, 3, 10, 0, 0, time.UTC)

func sampleOps() []*adminpb.Operation {
	return []*adminpb.Operation{
		{Id: 14, Kind: "split", State: opFailed, Table: "ks.one", Partition: 2, Reason: "requested by an operator",
			Error:   "partition 2 cannot be split: it holds a single logical partition (129 bytes), and a logical partition is never split",
			Updated: "2025-01-02T03:09:55Z"},
		{Id: 13, Kind: "move", State: opRunning, Progress: 0.3, Table: "ks.t", Partition: 7, FromNode: 3, ToNode: 5, Parent: 12,
			Reason: "node 3 is draining", Updated: "2025-01-02T02:59:00Z"},
		{Id: 12, Kind: "drain", State: opRunning, Progress: 0.45, Node: 3, Reason: "requested by an operator",
			Updated: "2025-01-01T01:00:00Z"},
		{Id: 11, Kind: "move-key", State: opDone, Progress: 1, Table: "ks.t", Partition: 9, ToNodes: []uint64{1, 2, 4, 5},
			Reason: "move logical partition (k7) of ks.t", Updated: "2024-12-28T03:00:00Z"},
		{Id: 10, Kind: "rebalance", State: opPending, Updated: "bogus"},
	}
}

func TestRenderOps(t *testing.T) {
	var sb strings.Builder
	if err := renderOps(&sb, sampleOps(), renderNow); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID  KIND       STATE    PROGRESS  PARTITION  NODES         TABLE   UPDATED     REASON\n" +
		"14  split      failed         0%  P2         -             ks.one  5s ago      error: partition 2 cannot be split: it holds a single logic…\n" +
		"13  move       running       30%  P7         n3→n5         ks.t    11m0s ago   node 3 is draining\n" +
		"12  drain      running       45%  -          n3            -       26h10m ago  requested by an operator\n" +
		"11  move-key   done         100%  P9         →n1,n2,n4,n5  ks.t    5d0h ago    move logical partition (k7) of ks.t\n" +
		"10  rebalance  pending        0%  -          -             -       bogus       -\n"
	if sb.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", sb.String(), want)
	}
}

func TestRenderOperation(t *testing.T) {
	drain := &adminpb.Operation{Id: 12, Kind: "drain", State: opRunning, Progress: 0.45, Node: 3, Reason: "requested by an operator",
		Children: []uint64{13, 15}, Created: "2025-01-02T03:09:00Z", Updated: "2025-01-02T03:09:58Z",
		Steps: []*adminpb.Step{
			{Name: "plan", State: opDone, Detail: "2 moves planned", At: "2025-01-02T03:09:01Z"},
			{Name: "moves", State: opRunning, Detail: "1 of 2 done, 0 failed", At: "2025-01-02T03:09:58Z"},
		}}
	var sb strings.Builder
	if err := renderOperation(&sb, drain, sampleOps()[1:2], renderNow); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"id:        12\n" +
		"kind:      drain\n" +
		"state:     running\n" +
		"progress:  45%\n" +
		"node:      n3\n" +
		"reason:    requested by an operator\n" +
		"created:   2025-01-02T03:09:00Z (1m0s ago)\n" +
		"updated:   2025-01-02T03:09:58Z (2s ago)\n" +
		"\n" +
		"Steps:\n" +
		"STEP   STATE    AT                    DETAIL\n" +
		"plan   done     2025-01-02T03:09:01Z  2 moves planned\n" +
		"moves  running  2025-01-02T03:09:58Z  1 of 2 done, 0 failed\n" +
		"\n" +
		"Children (2):\n" +
		"ID  KIND  STATE    PROGRESS  PARTITION  NODES  TABLE  UPDATED    REASON\n" +
		"13  move  running       30%  P7         n3→n5  ks.t   11m0s ago  node 3 is draining\n" +
		"not listed (cosmosctl ops show ID): 15\n"
	if sb.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", sb.String(), want)
	}

	split := &adminpb.Operation{Id: 3, Kind: "split", State: opPending, Table: "ks.t", Partition: 1, HasSplitToken: true, SplitToken: -42,
		Reason: "requested by an operator", Created: "2025-01-02T03:10:00Z", Updated: "2025-01-02T03:10:00Z"}
	sb.Reset()
	if err := renderSubmitted(&sb, split, renderNow); err != nil {
		t.Fatal(err)
	}
	want = "" +
		"id:         3\n" +
		"kind:       split\n" +
		"state:      pending\n" +
		"progress:   0%\n" +
		"table:      ks.t\n" +
		"partition:  P1\n" +
		"split at:   token -42\n" +
		"reason:     requested by an operator\n" +
		"created:    2025-01-02T03:10:00Z (0s ago)\n" +
		"updated:    2025-01-02T03:10:00Z (0s ago)\n" +
		"\n" +
		"follow it with: cosmosctl ops show 3 --wait\n"
	if sb.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", sb.String(), want)
	}

	move := &adminpb.Operation{Id: 13, Kind: "move", State: opFailed, Partition: 7, FromNode: 3, ToNode: 5, Parent: 12, Error: "target node 5 is not live"}
	sb.Reset()
	if err := renderOperation(&sb, move, nil, renderNow); err != nil {
		t.Fatal(err)
	}
	want = "" +
		"id:         13\n" +
		"kind:       move\n" +
		"state:      failed\n" +
		"progress:   0%\n" +
		"partition:  P7\n" +
		"from:       n3\n" +
		"to:         n5\n" +
		"parent:     12\n" +
		"error:      target node 5 is not live\n" +
		"created:    -\n" +
		"updated:    -\n" +
		"\n" +
		"Steps: none yet\n"
	if sb.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", sb.String(), want)
	}
}

func TestRenderPartitionDetail(t *testing.T) {
	det := &adminpb.PartitionDetail{
		Partition: &adminpb.Partition{Id: 17, Table: "uprofile.user", Start: -100, End: 5000, Generation: 4, LeaderNode: 2, LeaderName: "node-2",
			Bytes: 3 << 20, Rows: 1200, LogicalPartitions: 40, RuPerSec: 812.5, RuShare: 1000, Throttled: 3, Hot: true,
			Replicas: []*adminpb.Replica{{NodeId: 1, NodeName: "node-1", Reachable: true}, {NodeId: 2, NodeName: "node-2", Reachable: true},
				{NodeId: 3, NodeName: "node-3"}}},
		TopBySize: []*adminpb.LogicalPartition{
			{Key: []string{"'theo'"}, Token: 12, Bytes: 2 << 20, Rows: 800},
			{Key: []string{"'ana'"}, Token: -7, Bytes: 512 << 10, Rows: 3},
		},
		TopByRu: []*adminpb.LogicalPartition{{Key: []string{"'ana'"}, Token: -7, RuPerSec: 700}, {Key: []string{"'bob'"}, Token: 4000, RuPerSec: 70.25}},
	}
	var sb strings.Builder
	if err := renderPartitionDetail(&sb, det); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"partition:           P17\n" +
		"table:               uprofile.user\n" +
		"range:               [-100, 5000]\n" +
		"generation:          4\n" +
		"replicas:            node-1,node-2*,node-3\n" +
		"leader:              node-2\n" +
		"bytes:               3.0 MiB (3145728)\n" +
		"rows:                1200\n" +
		"logical partitions:  40\n" +
		"RU/s:                812.5 of 1000 (81%)\n" +
		"throttled:           3 requests\n" +
		"hot:                 yes: over its share with requests refused in the last 10 s\n" +
		"unreachable:         node-3\n" +
		"\n" +
		"Largest logical partitions:\n" +
		"KEY     TOKEN      BYTES  ROWS\n" +
		"'theo'     12    2.0 MiB   800  [####################]\n" +
		"'ana'      -7  512.0 KiB     3  [#####               ]\n" +
		"\n" +
		"Busiest logical partitions:\n" +
		"KEY    TOKEN  RU/S\n" +
		"'ana'     -7   700  [####################]\n" +
		"'bob'   4000  70.3  [##                  ]\n"
	if sb.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", sb.String(), want)
	}

	sb.Reset()
	if err := renderPartitionDetail(&sb, &adminpb.PartitionDetail{Partition: &adminpb.Partition{Id: 1, RuPerSec: 2}}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"RU/s:                2 (unlimited)\n", "hot:                 no\n", "Largest logical partitions:\nnone\n", "Busiest logical partitions:\nnone\n"} {
		if !strings.Contains(sb.String(), line) {
			t.Fatalf("empty partition lacks %q:\n%s", line, sb.String())
		}
	}
}

func TestRenderPlan(t *testing.T) {
	var sb strings.Builder
	if err := renderPlan(&sb, nil); err != nil || sb.String() != "nothing to move: the cluster is balanced\n" {
		t.Fatalf("empty plan: %q, %v", sb.String(), err)
	}
	sb.Reset()
	plan := []*adminpb.PlannedMove{
		{Partition: 3, Table: "ks.t", FromNode: 1, FromName: "node-1", ToNode: 4, ToName: "node-4", Reason: "rebalance: node 1 holds 3 replicas, node 4 holds 1"},
		{Partition: 12, FromNode: 2, ToNode: 5},
	}
	if err := renderPlan(&sb, plan); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"PARTITION  TABLE  FROM    TO      REASON\n" +
		"P3         ks.t   node-1  node-4  rebalance: node 1 holds 3 replicas, node 4 holds 1\n" +
		"P12        -      n2      n5      -\n"
	if sb.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", sb.String(), want)
	}
}

func TestRenderThroughput(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *adminpb.SetThroughputRequest
		resp *adminpb.SetThroughputResponse
		want string
	}{
		{"table", &adminpb.SetThroughputRequest{Table: "ks.t"}, &adminpb.SetThroughputResponse{RuPerSec: 1000, Partitions: 2, PartitionsNeeded: 2},
			"table:       ks.t\nthroughput:  1000 RU/s\npartitions:  2 (needs 2)\n"},
		{"needs splits", &adminpb.SetThroughputRequest{Table: "ks.t"}, &adminpb.SetThroughputResponse{RuPerSec: 35000, Partitions: 2, PartitionsNeeded: 4},
			"table:       ks.t\nthroughput:  35000 RU/s\npartitions:  2 (needs 4); the controller splits partitions until there are enough\n"},
		{"unlimited table", &adminpb.SetThroughputRequest{Table: "ks.t"}, &adminpb.SetThroughputResponse{Partitions: 3, PartitionsNeeded: 3},
			"table:       ks.t\nthroughput:  unlimited\npartitions:  3 (needs 3)\n"},
		{"keyspace", &adminpb.SetThroughputRequest{Keyspace: "ks"}, &adminpb.SetThroughputResponse{RuPerSec: 400},
			"keyspace:    ks\nthroughput:  400 RU/s (shared by its tables)\n"},
		{"unlimited keyspace", &adminpb.SetThroughputRequest{Keyspace: "ks"}, &adminpb.SetThroughputResponse{},
			"keyspace:    ks\nthroughput:  unlimited\n"},
	} {
		var sb strings.Builder
		if err := renderThroughput(&sb, tc.req, tc.resp); err != nil || sb.String() != tc.want {
			t.Errorf("%s: got %q (%v), want %q", tc.name, sb.String(), err, tc.want)
		}
	}
}

func TestRenderRingRateOnly(t *testing.T) {
	// An unlimited table with traffic shows its rate, no share, no HOT.
	var sb strings.Builder
	if err := renderRing(&sb, []*adminpb.Partition{{Id: 1, Table: "ks.c", Start: 0, End: 1, RuPerSec: 3.25}}); err != nil {
		t.Fatal(err)
	}
	if want := "PARTITION  START  END  REPLICAS  LEADER  GEN  BYTES  ROWS  RU/S\nP1             0    1  -         -         0    0 B     0   3.3\n"; !strings.Contains(sb.String(), want) {
		t.Fatalf("got\n%s\nwant it to contain\n%s", sb.String(), want)
	}
}

// TestTrailingFlags checks flags after a command's positional argument.
func TestTrailingFlags(t *testing.T) {
	type seen struct {
		args    []string
		output  format
		wait    bool
		timeout time.Duration
	}
	for _, tc := range []struct {
		name string
		args []string
		want seen
		err  string
	}{
		{name: "flags first", args: []string{"-o", "json", "--wait", "n1"}, want: seen{args: []string{"n1"}, output: formatJSON, wait: true}},
		{name: "flags after", args: []string{"n1", "--wait", "-o", "json", "--wait-timeout", "5s"},
			want: seen{args: []string{"n1"}, output: formatJSON, wait: true, timeout: 5 * time.Second}},
		{name: "long form, equals", args: []string{"n1", "--output=json", "--wait=false"}, want: seen{args: []string{"n1"}, output: formatJSON}},
		{name: "flags between arguments", args: []string{"a", "--wait", "b"}, want: seen{args: []string{"a", "b"}, output: formatTable, wait: true}},
		{name: "double dash ends flags", args: []string{"a", "--", "-o", "json"}, want: seen{args: []string{"a", "-o", "json"}, output: formatTable}},
		{name: "nearest wins", args: []string{"-o", "json", "a", "-o", "table"}, want: seen{args: []string{"a"}, output: formatTable}},
		{name: "unknown flag", args: []string{"a", "--bogus"}, err: "flag provided but not defined: -bogus (see cosmosctl test --help)"},
		{name: "missing value", args: []string{"a", "-o"}, err: "flag needs an argument: -o (see cosmosctl test --help)"},
		{name: "bad value", args: []string{"a", "--wait-timeout", "x"}, err: `invalid value "x" for flag -wait-timeout: parse error (see cosmosctl test --help)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got seen
			app := App(io.Discard, io.Discard)
			app.Commands = append(app.Commands, &cli.Command{
				Name: "test", ArgsUsage: "ARG...", Flags: leafFlags(waitFlags()...),
				Action: run(func(_ context.Context, c *cli.Context, e *env) error {
					got = seen{args: e.args, output: e.opts.output, wait: c.Bool(flagWait), timeout: c.Duration(flagWaitTimeout)}
					return nil
				}),
			})
			setUsageError(app.Commands)
			err := app.RunContext(t.Context(), append([]string{"cosmosctl", "test"}, tc.args...))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.args, tc.want.args) || got.output != tc.want.output || got.wait != tc.want.wait || got.timeout != tc.want.timeout {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestReconnectRotatesEndpoints(t *testing.T) {
	conn, err := grpc.NewClient("passthrough:///b:1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{opts: options{endpoints: []string{"a:1", "b:1", "c:1"}}, client: &client{conn: conn, endpoint: "b:1"}}
	e.reconnect()
	if e.client != nil || !slices.Equal(e.opts.endpoints, []string{"c:1", "a:1", "b:1"}) {
		t.Fatalf("after b failed: client %v, endpoints %v", e.client, e.opts.endpoints)
	}
	e.reconnect() // no connection: nothing to do
	if !slices.Equal(e.opts.endpoints, []string{"c:1", "a:1", "b:1"}) {
		t.Fatalf("endpoints %v", e.opts.endpoints)
	}
}

func TestParseIDs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{{"P17", 17}, {"p3", 3}, {"42", 42}, {" P5 ", 5}, {"P0", 0}, {"PP1", 0}, {"-1", 0}, {"", 0}, {"P18446744073709551616", 0}} {
		got, err := parsePartitionID(tc.in)
		if got != tc.want || (err != nil) != (tc.want == 0) {
			t.Errorf("parsePartitionID(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	if id, err := parseOperationID("12"); id != 12 || err != nil {
		t.Fatalf("parseOperationID: %d, %v", id, err)
	}
	if _, err := parseOperationID("P12"); err == nil {
		t.Fatal("parseOperationID(P12) succeeded")
	}
}
