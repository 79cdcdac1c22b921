package ctl

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// readProto parses cosmosctl's JSON output into m.
func readProto(t *testing.T, out string, m proto.Message) {
	t.Helper()
	if err := protojson.Unmarshal([]byte(out), m); err != nil {
		t.Fatalf("output is not a %T: %v\n%s", m, err, out)
	}
}

// ringOf returns a table's partitions as ring show -o json prints them.
func ringOf(t *testing.T, ep, table string) []*adminpb.Partition {
	t.Helper()
	var resp adminpb.ShowRingResponse
	readProto(t, ok(t, "--endpoints", ep, "ring", "show", "--table", table, "-o", "json"), &resp)
	return resp.GetPartitions()
}

// tokenOf returns a key's token and owning partition through cosmosctl.
func tokenOf(t *testing.T, ep, table string, key ...string) (int64, *adminpb.Partition) {
	t.Helper()
	args := []string{"--endpoints", ep, "token", "--table", table, "-o", "json"}
	for _, k := range key {
		args = append(args, "--key", k)
	}
	var resp adminpb.TokenResponse
	readProto(t, ok(t, args...), &resp)
	return resp.GetToken(), resp.GetPartition()
}

// hasLine reports whether out has a line matching the regular expression
// re (anchored at both ends).
func hasLine(out, re string) bool {
	return regexp.MustCompile(`(?m)^` + re + `$`).MatchString(out)
}

func mustHaveLines(t *testing.T, out string, res ...string) {
	t.Helper()
	for _, re := range res {
		if !hasLine(out, re) {
			t.Fatalf("output lacks a line matching %q:\n%s", re, out)
		}
	}
}

// progressLines returns the leading "op N kind: ..." lines of a --wait run.
func progressLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "op ") {
			break
		}
		lines = append(lines, l)
	}
	return lines
}

// checkFollowed checks the output of a successful --wait run under -o
// table: progress lines, one per change, ending at done 100%, then the
// operation record. It returns the operation's ID.
func checkFollowed(t *testing.T, out, kind string) uint64 {
	t.Helper()
	lines := progressLines(out)
	if len(lines) == 0 {
		t.Fatalf("no progress lines:\n%s", out)
	}
	m := regexp.MustCompile(`^op ([0-9]+) ` + regexp.QuoteMeta(kind) + `: (pending|running|done) ([0-9]+)%`).FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("first progress line %q", lines[0])
	}
	for i := 1; i < len(lines); i++ {
		if lines[i] == lines[i-1] {
			t.Fatalf("progress line repeated: %q", lines[i])
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "op "+m[1]+" "+kind+": done 100%") {
		t.Fatalf("last progress line %q, want done 100%%", last)
	}
	mustHaveLines(t, out, `id: +`+m[1], `kind: +`+regexp.QuoteMeta(kind), `state: +done`, `progress: +100%`, `Steps:`)
	id, _ := strconv.ParseUint(m[1], 10, 64)
	return id
}

// TestOperationsOnOneNode drives split, ops, partitions show, throughput
// and their errors on a one-node cluster with local consensus.
func TestOperationsOnOneNode(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	s := c.Session(t, 0)
	stmts := []string{
		"CREATE KEYSPACE ks WITH REPLICATION = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (user text, id int, message text, PRIMARY KEY (user, id))",
		"CREATE TABLE ks.one (k text, i int, PRIMARY KEY (k, i))",
	}
	// "big" holds most of the bytes; the others a row or a few.
	keys := map[string]int{"big": 20, "theo": 3, "ana": 2, "bob": 1, "cy": 1, "dee": 1}
	rows := 0
	for user, n := range keys {
		for i := range n {
			msg := "hello"
			if user == "big" {
				msg = strings.Repeat("x", 300)
			}
			stmts = append(stmts, fmt.Sprintf("INSERT INTO ks.t (user, id, message) VALUES ('%s', %d, '%s')", user, i, msg))
			rows++
		}
	}
	for i := range 3 {
		stmts = append(stmts, fmt.Sprintf("INSERT INTO ks.one (k, i) VALUES ('solo', %d)", i))
	}
	for _, q := range stmts {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ep := c.Nodes[0].AdminAddr()
	ctl := func(args ...string) string { t.Helper(); return ok(t, append([]string{"--endpoints", ep}, args...)...) }
	whole := ringOf(t, ep, "ks.t")[0]
	P := partitionName(whole.GetId())

	t.Run("partitions show", func(t *testing.T) {
		out := ctl("partitions", "show", P)
		t.Logf("partitions show %s:\n%s", P, out)
		mustHaveLines(t, out,
			`partition: +`+P, `table: +ks\.t`, `range: +\[-9223372036854775808, 9223372036854775807\]`,
			`replicas: +node-1\*`, `leader: +node-1`, `rows: +`+strconv.Itoa(rows), `logical partitions: +6`,
			`RU/s: +[0-9.]+ \(unlimited\)`, `throttled: +0 requests`, `hot: +no`,
			`Largest logical partitions:`, `KEY +TOKEN +BYTES +ROWS`, `Busiest logical partitions:`, `KEY +TOKEN +RU/S`)
		bigTok, _ := tokenOf(t, ep, "ks.t", "big")
		// The largest comes first, with the full bar.
		mustHaveLines(t, out, `'?big'? +`+strconv.FormatInt(bigTok, 10)+` +[0-9.]+ KiB +20 +\[#{20}\]`)
		sizes := out[strings.Index(out, "Largest"):strings.Index(out, "Busiest")]
		if n := strings.Count(sizes, "\n"); n != 2+defaultTop+1 {
			t.Fatalf("want %d logical partitions by size:\n%s", defaultTop, sizes)
		}

		// Flags after the argument, --top.
		var det adminpb.PartitionDetail
		readProto(t, ctl("partitions", "show", P, "-o", "json", "--top", "1"), &det)
		if det.GetPartition().GetId() != whole.GetId() || len(det.GetTopBySize()) != 1 || det.GetTopBySize()[0].GetToken() != bigTok ||
			det.GetTopBySize()[0].GetRows() != 20 || det.GetPartition().GetLogicalPartitions() != 6 {
			t.Fatalf("partitions show -o json --top 1: %v", &det)
		}
		// The bare ID works too.
		if out := ctl("partitions", "show", "--top", "1", strconv.FormatUint(whole.GetId(), 10)); !hasLine(out, `partition: +`+P) {
			t.Fatalf("by bare ID:\n%s", out)
		}
	})

	var splitID uint64
	t.Run("split halving bytes --wait", func(t *testing.T) {
		out := ctl("split", "--partition", P, "--wait")
		t.Logf("split --wait:\n%s", out)
		splitID = checkFollowed(t, out, "split")
		mustHaveLines(t, out, `partition: +`+P, `reason: +requested by an operator`,
			`split point +done +\S+ +token -?[0-9]+ halves [0-9]+ stored bytes`, `split +done .*`, `routing +done +\S+ +ring updated`)
		parts := ringOf(t, ep, "ks.t")
		if len(parts) != 2 || parts[0].GetRows()+parts[1].GetRows() != int64(rows) {
			t.Fatalf("after the split: %v", parts)
		}
	})

	t.Run("split --at", func(t *testing.T) {
		parts := ringOf(t, ep, "ks.t")
		p := parts[len(parts)-1]
		at := p.GetStart()/2 + p.GetEnd()/2 + 1
		out := ctl("split", "--partition", partitionName(p.GetId()), "--at", strconv.FormatInt(at, 10))
		mustHaveLines(t, out, `kind: +split`, `state: +(pending|running|done)`, `split at: +token `+strconv.FormatInt(at, 10),
			`follow it with: cosmosctl ops show [0-9]+ --wait`)
		id := regexp.MustCompile(`(?m)^id: +([0-9]+)$`).FindStringSubmatch(out)[1]
		// Follow it with ops show, flags after the argument.
		var op adminpb.Operation
		readProto(t, ctl("ops", "show", id, "--wait", "-o", "json"), &op)
		if op.GetState() != opDone || !op.GetHasSplitToken() || op.GetSplitToken() != at || op.GetProgress() != 1 {
			t.Fatalf("ops show --wait -o json: %v", &op)
		}
		if parts := ringOf(t, ep, "ks.t"); len(parts) != 3 || parts[2].GetStart() != at {
			t.Fatalf("after split --at %d: %v", at, parts)
		}
	})

	t.Run("split --key", func(t *testing.T) {
		starts := map[int64]bool{}
		for _, p := range ringOf(t, ep, "ks.t") {
			starts[p.GetStart()] = true
		}
		var key string
		var tok int64
		var owner *adminpb.Partition
		for _, k := range []string{"theo", "ana", "bob", "cy", "dee", "big"} {
			if tok, owner = tokenOf(t, ep, "ks.t", k); !starts[tok] {
				key = k
				break
			}
		}
		out := ctl("split", "--partition", partitionName(owner.GetId()), "--key", key, "--wait", "-o", "json")
		var op adminpb.Operation
		readProto(t, out, &op) // nothing but the final operation on stdout
		if op.GetState() != opDone || op.GetKind() != "split" || op.GetSplitToken() != tok || op.GetPartition() != owner.GetId() {
			t.Fatalf("split --key %s (token %d): %v", key, tok, &op)
		}
		if _, p := tokenOf(t, ep, "ks.t", key); p.GetStart() != tok {
			t.Fatalf("%s (token %d) is in [%d, %d] after the split", key, tok, p.GetStart(), p.GetEnd())
		}
	})

	var failedID uint64
	t.Run("split of a single logical partition fails", func(t *testing.T) {
		one := ringOf(t, ep, "ks.one")[0]
		r := cosmosctlWithin(t, 30*time.Second, nil, "--endpoints", ep, "split", "--partition", partitionName(one.GetId()), "--wait")
		t.Logf("failed split: exit %d\nstdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
		want := regexp.MustCompile(`^cosmosctl: operation ([0-9]+) \(split\) failed: partition ` + strconv.FormatUint(one.GetId(), 10) +
			` cannot be split: it holds a single logical partition \([0-9]+ bytes\), and a logical partition is never split\n$`)
		m := want.FindStringSubmatch(r.stderr)
		if r.code != 1 || m == nil {
			t.Fatalf("exit %d, stderr %q; want exit 1 and %s", r.code, r.stderr, want)
		}
		failedID, _ = strconv.ParseUint(m[1], 10, 64)
		mustHaveLines(t, r.stdout, `op `+m[1]+` split: failed [0-9]+%`, `state: +failed`, `error: +partition [0-9]+ cannot be split: .*`)
		if n := len(ringOf(t, ep, "ks.one")); n != 1 {
			t.Fatalf("ks.one has %d partitions", n)
		}
	})

	t.Run("ops list", func(t *testing.T) {
		out := ctl("ops", "list")
		t.Logf("ops list:\n%s", out)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"ID", "KIND", "STATE", "PROGRESS", "PARTITION", "NODES", "TABLE", "UPDATED", "REASON"}) {
			t.Fatalf("header %q", lines[0])
		}
		if len(lines) != 1+4 {
			t.Fatalf("want 4 operations:\n%s", out)
		}
		// Newest first: the failed split, its error as the reason.
		if !regexp.MustCompile(`^ *` + strconv.FormatUint(failedID, 10) + ` +split +failed +[0-9]+% +P[0-9]+ +- +ks\.one +[0-9]+s ago +error: partition [0-9]+ cannot be split: it holds a single logic…$`).MatchString(lines[1]) {
			t.Fatalf("failed split row %q", lines[1])
		}
		if !regexp.MustCompile(`^ *` + strconv.FormatUint(splitID, 10) + ` +split +done +100% +` + P + ` +- +ks\.t +[0-9]+s ago +requested by an operator$`).MatchString(lines[4]) {
			t.Fatalf("first split row %q", lines[4])
		}
		if out := ctl("ops", "list", "--limit", "1"); strings.Count(out, "\n") != 2 || !strings.Contains(out, "failed") {
			t.Fatalf("--limit 1:\n%s", out)
		}
		if out := ctl("ops", "list", "--active"); out != "no active operations\n" {
			t.Fatalf("--active: %q", out)
		}
		var ops []map[string]any
		decodeJSON(t, ctl("ops", "list", "-o", "json"), &ops)
		if len(ops) != 4 || num(t, ops[0]["id"]) != int64(failedID) || ops[0]["state"] != opFailed {
			t.Fatalf("ops list -o json: %v", ops)
		}
		if got, want := keysOf(ops[0]), fieldNames((&adminpb.Operation{}).ProtoReflect().Descriptor()); !slices.Equal(got, want) {
			t.Fatalf("keys %q, want every proto field %q", got, want)
		}
	})

	t.Run("ops show", func(t *testing.T) {
		out := ctl("ops", "show", strconv.FormatUint(splitID, 10))
		t.Logf("ops show:\n%s", out)
		mustHaveLines(t, out, `id: +`+strconv.FormatUint(splitID, 10), `kind: +split`, `state: +done`, `progress: +100%`,
			`table: +ks\.t`, `partition: +`+P, `reason: +requested by an operator`,
			`created: +\S+Z \([0-9]+s ago\)`, `updated: +\S+Z \([0-9]+s ago\)`,
			`STEP +STATE +AT +DETAIL`, `split point +done +\S+Z +token .*`, `routing +done +\S+Z +ring updated`)
		if strings.Contains(out, "Children") {
			t.Fatalf("a split has no children:\n%s", out)
		}
		var op adminpb.Operation
		readProto(t, ctl("ops", "show", strconv.FormatUint(failedID, 10), "-o", "json"), &op)
		if op.GetState() != opFailed || !strings.Contains(op.GetError(), "single logical partition") {
			t.Fatalf("failed op: %v", &op)
		}
	})

	t.Run("rebalance dry run", func(t *testing.T) {
		if out := ctl("rebalance", "--dry-run"); out != "nothing to move: the cluster is balanced\n" {
			t.Fatalf("rebalance --dry-run: %q", out)
		}
		var resp map[string]any
		decodeJSON(t, ctl("rebalance", "--dry-run", "-o", "json"), &resp)
		if plan, isList := resp["plan"].([]any); !isList || len(plan) != 0 || resp["operation"] != nil {
			t.Fatalf("rebalance --dry-run -o json: %v", resp)
		}
		// Without --dry-run: the operation, which finds nothing to move.
		var op adminpb.Operation
		readProto(t, ctl("rebalance", "-o", "json"), &op)
		if op.GetKind() != "rebalance" || op.GetState() != opPending || op.GetId() == 0 {
			t.Fatalf("rebalance -o json: %v", &op)
		}
		out := ctl("ops", "show", strconv.FormatUint(op.GetId(), 10), "--wait")
		checkFollowed(t, out, "rebalance")
		mustHaveLines(t, out, `moves +done +\S+ +0 moves`)
	})

	t.Run("throughput", func(t *testing.T) {
		n := len(ringOf(t, ep, "ks.t"))
		out := ctl("throughput", "set", "--table", "ks.t", "1000")
		want := fmt.Sprintf("table:       ks.t\nthroughput:  1000 RU/s\npartitions:  %d (needs %d)\n", n, n)
		if out != want {
			t.Fatalf("throughput set:\n%s\nwant\n%s", out, want)
		}
		ring := ctl("ring", "show", "--table", "ks.t")
		t.Logf("ring show with throughput:\n%s", ring)
		mustHaveLines(t, ring, `PARTITION +START +END +REPLICAS +LEADER +GEN +BYTES +ROWS +RU/S +RU/S SHARE +HOT`)
		share := formatRU(1000 / float64(n))
		if got := len(regexp.MustCompile(`(?m)^P[0-9]+ .* [0-9.]+ +`+regexp.QuoteMeta(share)+`  (-|HOT)$`).FindAllString(ring, -1)); got != n {
			t.Fatalf("want %d partition rows with RU/s, a share of %s and a hot mark:\n%s", n, share, ring)
		}
		mustHaveLines(t, ctl("partitions", "show", P), `RU/s: +[0-9.]+ of `+regexp.QuoteMeta(share)+` \([0-9]+%\)`)

		var resp adminpb.SetThroughputResponse
		readProto(t, ctl("throughput", "set", "-o", "json", "--table", "ks.t", "2000"), &resp)
		if resp.GetRuPerSec() != 2000 || int(resp.GetPartitions()) != n || resp.GetPartitionsNeeded() != resp.GetPartitions() {
			t.Fatalf("-o json: %v", &resp)
		}
		if out := ctl("throughput", "set", "--keyspace", "ks", "400"); out != "keyspace:    ks\nthroughput:  400 RU/s (shared by its tables)\n" {
			t.Fatalf("keyspace: %q", out)
		}
		if out := ctl("throughput", "set", "--table", "ks.t", "0"); !hasLine(out, `throughput: +unlimited`) {
			t.Fatalf("reset: %q", out)
		}
		if ring := ctl("ring", "show", "--table", "ks.t"); strings.Contains(ring, "SHARE") {
			t.Fatalf("unlimited table still shows a share:\n%s", ring)
		}
	})

	t.Run("errors", func(t *testing.T) {
		one := ringOf(t, ep, "ks.one")[0]
		parts := ringOf(t, ep, "ks.t")
		last := parts[len(parts)-1]
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"split unknown partition", []string{"split", "--partition", "P999999"}, `^cosmosctl: partition 999999 does not exist\n$`},
			{"split at the start", []string{"split", "--partition", partitionName(one.GetId()), "--at", "-9223372036854775808"},
				`^cosmosctl: token -9223372036854775808 does not split partition [0-9]+: it holds tokens \[-9223372036854775808, 9223372036854775807\] and the right half must start after -9223372036854775808\n$`},
			{"split outside the range", []string{"split", "--partition", partitionName(last.GetId()), "--at", strconv.FormatInt(last.GetStart()-1, 10)},
				`does not split partition ` + strconv.FormatUint(last.GetId(), 10) + `: it holds tokens`},
			{"split bad key", []string{"split", "--partition", P, "--key", "a", "--key", "b"}, `has 1 partition key columns \(user\), got 2 values`},
			{"ops show unknown", []string{"ops", "show", "999999"}, `^cosmosctl: operation 999999 does not exist\n$`},
			{"partitions show unknown", []string{"partitions", "show", "P999999"}, `^cosmosctl: partition 999999 does not exist\n$`},
			{"drain unknown node", []string{"nodes", "drain", "nope"}, `^cosmosctl: no node named "nope"\n$`},
			{"move onto a holder", []string{"move", "--partition", P, "--from", "node-1", "--to", "node-1"}, `already has a replica on node node-1`},
			{"move unknown partition", []string{"move", "--partition", "P999999", "--from", "node-1", "--to", "node-2"}, `partition 999999 does not exist`},
			{"move key unknown node", []string{"move", "--table", "ks.t", "--key", "theo", "--to", "node-9"}, `no node named "node-9"`},
			// Issue 17: a move --key onto nodes that all hold a replica
			// already reported done and moved nothing.
			{"move key onto its holders", []string{"move", "--table", "ks.t", "--key", "theo", "--to", "node-1", "--to", "node-1"},
				`^cosmosctl: nothing to move: every live node \(1\) already holds one of the key's 1 replicas \(on node-1\), so no replica can go anywhere else; move --key puts the replicas on the --to nodes, which needs more live nodes than replicas per partition \(add a node first\)\n$`},
			{"throughput unknown table", []string{"throughput", "set", "--table", "ks.nope", "5"}, `table ks.nope does not exist`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				fails(t, nil, tc.want, append([]string{"--endpoints", ep}, tc.args...)...)
			})
		}
	})
}

// TestFlagErrors checks the commands' own flag checks: they fail before
// any endpoint is dialed (the endpoint given does not answer).
func TestFlagErrors(t *testing.T) {
	t.Parallel()
	dead := closedAddr(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"split without partition", []string{"split"}, `^cosmosctl: --partition is required\n$`},
		{"split bad partition", []string{"split", "--partition", "Pxyz"}, `--partition: partition "Pxyz": want an ID such as P17 or 17`},
		{"split bad token", []string{"split", "--partition", "P1", "--at", "12x"}, `--at "12x": want a token \(a signed 64-bit integer\)`},
		{"split at and key", []string{"split", "--partition", "1", "--at", "5", "--key", "a"}, `--at and --key exclude each other`},
		{"move without target", []string{"move"}, `give --partition ID --from NODE --to NODE \(move a replica\) or --table`},
		{"move both", []string{"move", "--partition", "1", "--table", "ks.t"}, `--partition and --table exclude each other`},
		{"move partition without from/to", []string{"move", "--partition", "1"}, `--from is required with --partition; --partition takes exactly one --to node`},
		{"move partition two targets", []string{"move", "--partition", "1", "--from", "a", "--to", "b", "--to", "c"}, `--partition takes exactly one --to node`},
		{"move partition with key", []string{"move", "--partition", "1", "--from", "a", "--to", "b", "--key", "k"}, `--key goes with --table`},
		{"move key without key and to", []string{"move", "--table", "ks.t"}, `--key is required with --table .*; --to is required`},
		{"move key with from", []string{"move", "--table", "ks.t", "--key", "k", "--to", "a", "--from", "b"}, `--from goes with --partition`},
		{"rebalance dry run wait", []string{"rebalance", "--dry-run", "--wait"}, `--wait has nothing to follow with --dry-run`},
		{"drain without node", []string{"nodes", "drain"}, `^cosmosctl: missing NODE \(a node name or ID\) \(see cosmosctl nodes drain --help\)\n$`},
		{"drain two nodes", []string{"nodes", "drain", "a", "b"}, `unexpected argument "b"`},
		{"decommission bad flag after node", []string{"nodes", "decommission", "a", "--bogus"}, `flag provided but not defined: -bogus \(see cosmosctl nodes decommission --help\)`},
		{"ops show without id", []string{"ops", "show"}, `missing operation ID`},
		{"ops show bad id", []string{"ops", "show", "x1"}, `operation "x1": want a number`},
		{"ops show bad wait timeout", []string{"ops", "show", "1", "--wait-timeout", "soon"}, `invalid value "soon" for flag -wait-timeout`},
		{"partitions show without id", []string{"partitions", "show"}, `missing partition ID`},
		{"partitions show top 0", []string{"partitions", "show", "P1", "--top", "0"}, `--top 0: want 1 to 1000`},
		{"throughput without target", []string{"throughput", "set", "5"}, `give --table KEYSPACE.TABLE or --keyspace KEYSPACE`},
		{"throughput both", []string{"throughput", "set", "--table", "a.b", "--keyspace", "a", "5"}, `--table and --keyspace exclude each other`},
		{"throughput without value", []string{"throughput", "set", "--table", "a.b"}, `missing RU_PER_SEC`},
		{"throughput bad value", []string{"throughput", "set", "--table", "a.b", "lots"}, `RU_PER_SEC "lots": want a whole number`},
		{"bad output after argument", []string{"ops", "show", "1", "-o", "yaml"}, `-o "yaml": want table or json`},
		{"unknown ops command", []string{"ops", "bogus"}, `unknown command "bogus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fails(t, nil, tc.want, append([]string{"--endpoints", dead}, tc.args...)...)
		})
	}
}
