package admin

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/cluster"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/router/routertest"
	"github.com/cosmosd/cosmosd/schema"
)

// ringCluster is three nodes with stores (alpha, bravo, charlie) and two
// tables: ks.users (text key, partitions 100 and 101 led by alpha, listed
// on alpha, bravo and charlie) and ks.events (int key, partition 200 led
// by bravo).
func ringCluster(t *testing.T) (*testCluster, *schema.Table, *schema.Table) {
	c := newCluster(t, "alpha", "bravo", "charlie")
	users := c.createTable("ks", "users", 10, []string{"text"}, halves(10, 100, 1, 2, 3))
	events := c.createTable("ks", "events", 20, []string{"int"}, []*kvpb.Descriptor{routertest.Whole(20, 200, 2, 1, 3)})
	return c, users, events
}

// ListNodes shows every member, live or not, in id order, with its state
// and what its replicas report.
func TestListNodes(t *testing.T) {
	c, users, events := ringCluster(t)
	c.registerUnreachable(4, "delta")
	hourAgo := time.Now().Add(-time.Hour)
	c.member(5, func(m *cluster.Member) { m.Info.Name, m.DownSince = "echo", hourAgo })
	c.member(6, func(m *cluster.Member) { m.Info.Name, m.DownSince = "foxtrot", time.Now() })
	c.member(7, func(m *cluster.Member) { m.Info.Name, m.DownSince, m.Decommissioned = "golf", hourAgo, true })
	c.member(2, func(m *cluster.Member) { m.Draining = true })
	for _, k := range []string{"ada", "bob", "cy"} {
		if err := c.write(users, "v", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.write(events, "v", "7"); err != nil {
		t.Fatal(err)
	}
	admin := c.serve(Config{DeadAfter: 10 * time.Minute, NodeTimeout: time.Second}, false)
	resp, err := admin.ListNodes(tctx(t), &adminpb.ListNodesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id                uint64
		name, state       string
		replicas, leaders uint32
		hasBytes          bool
	}
	want := []row{
		{1, "alpha", "up", 2, 2, true},
		{2, "bravo", "draining", 1, 1, true},
		{3, "charlie", "up", 0, 0, false},
		{4, "delta", "suspect", 0, 0, false}, // registered, does not answer
		{5, "echo", "dead", 0, 0, false},     // down for longer than dead_after
		{6, "foxtrot", "suspect", 0, 0, false},
		{7, "golf", "decommissioned", 0, 0, false},
	}
	if len(resp.GetNodes()) != len(want) {
		t.Fatalf("nodes %v, want %d", resp.GetNodes(), len(want))
	}
	for i, n := range resp.GetNodes() {
		w := want[i]
		got := row{n.GetId(), n.GetName(), n.GetState(), n.GetReplicas(), n.GetLeaders(), n.GetBytes() > 0}
		if got != w {
			t.Errorf("node %d: %+v, want %+v", i, got, w)
		}
		if n.GetFailedReplicas() != 0 {
			t.Errorf("node %d: %d failed replicas", n.GetId(), n.GetFailedReplicas())
		}
	}
	alpha := resp.GetNodes()[0]
	if alpha.GetPeerAddr() != c.nodes[1].Addr || alpha.GetCqlAddr() != "127.0.0.1:9042" || alpha.GetAdminAddr() != "127.0.0.1:7000" ||
		alpha.GetVersion() != "test" || alpha.GetStartedAt() != "2023-11-14T22:13:20Z" {
		t.Errorf("alpha's registration: %v", alpha)
	}
}

// A node's labels are shown as it registered them.
func TestListNodesLabels(t *testing.T) {
	c := newCluster(t, "alpha")
	c.startNode(2, "bravo", map[string]string{"zone": "z2", "rack": "r1"})
	admin := c.serve(Config{}, false)
	resp, err := admin.ListNodes(tctx(t), &adminpb.ListNodesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := resp.GetNodes(); len(n) != 2 || n[1].GetLabels()["zone"] != "z2" || n[1].GetLabels()["rack"] != "r1" || len(n[0].GetLabels()) != 0 {
		t.Fatalf("nodes %v", n)
	}
}

// ShowRing lists the partitions of every table (keyspace and table name
// order) or of one, with what their replicas report.
func TestShowRing(t *testing.T) {
	c, users, _ := ringCluster(t)
	c.registerUnreachable(4, "delta")
	for _, k := range []string{"ada", "bob", "cy", "dee", "eve"} {
		if err := c.write(users, strings.Repeat(k, 10), k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.catalog.AlterTable(tctx(t), "ks", "users", func(t *schema.Table) error {
		t.Options.Throughput = 1000
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.catchUp()
	admin := c.serve(Config{NodeTimeout: time.Second}, false)

	all, err := admin.ShowRing(tctx(t), &adminpb.ShowRingRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, p := range all.GetPartitions() {
		ids = append(ids, p.GetId())
	}
	if len(ids) != 3 || ids[0] != 200 || ids[1] != 100 || ids[2] != 101 {
		t.Fatalf("partitions %v, want ks.events' 200 then ks.users' 100, 101", ids)
	}

	// The load of a second shows once it is over: ask until it does.
	var resp *adminpb.ShowRingResponse
	routertest.WaitUntil(t, "RU/s of the writes", func() bool {
		resp, err = admin.ShowRing(tctx(t), &adminpb.ShowRingRequest{Table: "ks.users"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetPartitions()[0].GetRuPerSec() > 0 && resp.GetPartitions()[1].GetRuPerSec() > 0
	})
	if len(resp.GetPartitions()) != 2 {
		t.Fatalf("ks.users: %v", resp.GetPartitions())
	}
	var rows int64
	for _, p := range resp.GetPartitions() {
		if p.GetTable() != "ks.users" || p.GetTableId() != 10 || p.GetLeaderNode() != 1 || p.GetLeaderName() != "alpha" {
			t.Errorf("partition %d: table %q (%d) leader %d %q", p.GetId(), p.GetTable(), p.GetTableId(), p.GetLeaderNode(), p.GetLeaderName())
		}
		if p.GetRuShare() != 500 {
			t.Errorf("partition %d: RU share %v, want 1000 RU/s over 2 partitions", p.GetId(), p.GetRuShare())
		}
		if len(p.GetReplicas()) != 3 {
			t.Fatalf("partition %d: replicas %v", p.GetId(), p.GetReplicas())
		}
		// Only alpha runs a replica; bravo and charlie answer without it.
		for i, r := range p.GetReplicas() {
			wantName := []string{"alpha", "bravo", "charlie"}[i]
			if r.GetNodeId() != uint64(i+1) || r.GetNodeName() != wantName || r.GetReplicaId() != uint64(i+1) || r.GetReachable() != (i == 0) {
				t.Errorf("partition %d replica %d: %v", p.GetId(), i, r)
			}
			if i == 0 && r.GetApplied() == 0 {
				t.Errorf("partition %d: alpha's replica reports nothing applied", p.GetId())
			}
		}
		rows += p.GetRows()
		if p.GetRows() > 0 && (p.GetBytes() <= 0 || p.GetLogicalPartitions() != p.GetRows()) {
			t.Errorf("partition %d: %d rows, %d bytes, %d logical partitions", p.GetId(), p.GetRows(), p.GetBytes(), p.GetLogicalPartitions())
		}
	}
	if rows != 5 {
		t.Errorf("ks.users holds %d rows, want 5", rows)
	}

	// Split partition 100 on its replica only: the routing copy is not
	// updated (no controller runs), so the replica's generation is newer
	// than the ring's, as while a split is being published.
	left, _, err := c.router.Split(tctx(t), &kvpb.SplitRequest{PartitionId: 100, SplitToken: math.MinInt64 / 2, RightId: 150})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = admin.ShowRing(tctx(t), &adminpb.ShowRingRequest{Table: "ks.users"})
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.GetPartitions()[0]; p.GetGeneration() != left.GetGeneration() || p.GetGeneration() == 0 {
		t.Errorf("partition 100: generation %d, want the replica's %d after its split", p.GetGeneration(), left.GetGeneration())
	}

	// A table that does not exist, or is not named keyspace.table.
	_, err = admin.ShowRing(tctx(t), &adminpb.ShowRingRequest{Table: "ks.nope"})
	wantCode(t, err, codes.NotFound, "table ks.nope does not exist")
	_, err = admin.ShowRing(tctx(t), &adminpb.ShowRingRequest{Table: "users"})
	wantCode(t, err, codes.InvalidArgument, "want keyspace.table")
}

// A partition over its share of the table's throughput shows the requests
// it refused and its share. (Hot needs ten seconds of load over the share:
// TestReplicaReports covers it.)
func TestShowRingThrottled(t *testing.T) {
	c := newCluster(t, "alpha")
	tab := c.createTable("ks", "hot", 30, []string{"text"}, []*kvpb.Descriptor{routertest.Whole(30, 300, 1)})
	if _, err := c.catalog.AlterTable(tctx(t), "ks", "hot", func(t *schema.Table) error {
		t.Options.Throughput = 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.catchUp()
	refused := 0
	for i := 0; refused < 3 && i < 1000; i++ {
		if err := c.write(tab, strings.Repeat("x", 100), "k"); err != nil {
			refused++
		}
	}
	if refused < 3 {
		t.Fatal("a partition with 1 RU/s accepted 1000 writes")
	}
	admin := c.serve(Config{}, false)
	resp, err := admin.ShowRing(tctx(t), &adminpb.ShowRingRequest{Table: "ks.hot"})
	if err != nil {
		t.Fatal(err)
	}
	p := resp.GetPartitions()[0]
	if p.GetThrottled() < 3 || p.GetRuShare() != 1 {
		t.Fatalf("partition %d: throttled %d, RU share %v", p.GetId(), p.GetThrottled(), p.GetRuShare())
	}
}

// Token computes a key's token from its values as typed on the command
// line, and names the partition holding it.
func TestToken(t *testing.T) {
	c, _, _ := ringCluster(t)
	c.createTable("ks", "composite", 40, []string{"uuid", "timestamp"}, []*kvpb.Descriptor{routertest.Whole(40, 400, 3)})
	admin := c.serve(Config{}, false)
	resp, err := admin.Token(tctx(t), &adminpb.TokenRequest{Table: "ks.users", Key: []string{"theo"}})
	if err != nil {
		t.Fatal(err)
	}
	tok := ring.Token([]byte("theo"))
	wantPart := uint64(100)
	if tok >= 0 {
		wantPart = 101
	}
	if resp.GetToken() != tok || resp.GetPartition().GetId() != wantPart || resp.GetPartition().GetLeaderName() != "alpha" {
		t.Fatalf("token %d in %v, want %d in partition %d led by alpha", resp.GetToken(), resp.GetPartition(), tok, wantPart)
	}

	resp, err = admin.Token(tctx(t), &adminpb.TokenRequest{Table: "ks.composite", Key: []string{"123e4567-e89b-12d3-a456-426614174000", "1700000000000"}})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := literal(c.meta.State().Schema.Table("ks", "composite").PartitionKey()[0].Type, "123e4567-e89b-12d3-a456-426614174000")
	ts, _ := literal(c.meta.State().Schema.Table("ks", "composite").PartitionKey()[1].Type, "1700000000000")
	rk, err := ring.RoutingKey([][]byte{u, ts})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetToken() != ring.Token(rk) || resp.GetPartition().GetId() != 400 {
		t.Fatalf("composite key: token %d in %v, want %d in 400", resp.GetToken(), resp.GetPartition(), ring.Token(rk))
	}

	for _, tc := range []struct {
		name     string
		req      *adminpb.TokenRequest
		code     codes.Code
		contains string
	}{
		{"unknown table", &adminpb.TokenRequest{Table: "ks.nope", Key: []string{"x"}}, codes.NotFound, "does not exist"},
		{"no keyspace", &adminpb.TokenRequest{Table: "users", Key: []string{"x"}}, codes.InvalidArgument, "want keyspace.table"},
		{"too many values", &adminpb.TokenRequest{Table: "ks.users", Key: []string{"a", "b"}}, codes.InvalidArgument, "has 1 partition key columns (k0), got 2 values"},
		{"too few values", &adminpb.TokenRequest{Table: "ks.composite", Key: []string{"123e4567-e89b-12d3-a456-426614174000"}}, codes.InvalidArgument, "(k0, k1), got 1 values"},
		{"not an int", &adminpb.TokenRequest{Table: "ks.events", Key: []string{"seven"}}, codes.InvalidArgument, "key k0"},
		{"not a uuid", &adminpb.TokenRequest{Table: "ks.composite", Key: []string{"nope", "1"}}, codes.InvalidArgument, "key k0"},
		{"key too long", &adminpb.TokenRequest{Table: "ks.users", Key: []string{strings.Repeat("k", ring.MaxKeyLength+1)}}, codes.InvalidArgument, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := admin.Token(tctx(t), tc.req)
			wantCode(t, err, tc.code, tc.contains)
		})
	}
}

// ShowPartition lists a partition's largest and busiest logical
// partitions, keys shown as values.
func TestShowPartition(t *testing.T) {
	c, users, events := ringCluster(t)
	// Keys of growing size in partition 101 (tokens >= 0).
	var keys []string
	for i := 0; len(keys) < 5; i++ {
		k := "key" + strings.Repeat("x", i)
		if ring.Token([]byte(k)) >= 0 {
			keys = append(keys, k)
		}
	}
	for i, k := range keys {
		if err := c.write(users, strings.Repeat("v", 100*(i+1)), k); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.write(events, "v", "-42"); err != nil {
		t.Fatal(err)
	}
	admin := c.serve(Config{NodeTimeout: time.Second}, false)

	det, err := admin.ShowPartition(tctx(t), &adminpb.ShowPartitionRequest{Id: 101})
	if err != nil {
		t.Fatal(err)
	}
	if p := det.GetPartition(); p.GetId() != 101 || p.GetTable() != "ks.users" || p.GetRows() != 5 || p.GetLeaderName() != "alpha" {
		t.Fatalf("partition %v", p)
	}
	if n := len(det.GetTopBySize()); n != 3 {
		t.Fatalf("%d logical partitions by size, want the default 3", n)
	}
	// Keys are shown as CQL literals, as cqlsh shows them.
	for i, lp := range det.GetTopBySize() {
		want := keys[len(keys)-1-i]
		if len(lp.GetKey()) != 1 || lp.GetKey()[0] != "'"+want+"'" || lp.GetToken() != ring.Token([]byte(want)) || lp.GetRows() != 1 || lp.GetBytes() <= 0 {
			t.Errorf("by size %d: %v, want key %q", i, lp, want)
		}
	}
	if len(det.GetTopByRu()) != 3 || det.GetTopByRu()[0].GetRuPerSec() <= 0 || len(det.GetTopByRu()[0].GetKey()) != 1 {
		t.Errorf("by RU: %v", det.GetTopByRu())
	}

	// A bigger top; a key of another type shown as a value.
	det, err = admin.ShowPartition(tctx(t), &adminpb.ShowPartitionRequest{Id: 101, Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(det.GetTopBySize()) != 5 {
		t.Errorf("top 10 of 5 logical partitions: %v", det.GetTopBySize())
	}
	det, err = admin.ShowPartition(tctx(t), &adminpb.ShowPartitionRequest{Id: 200, Top: 1})
	if err != nil {
		t.Fatal(err)
	}
	if lp := det.GetTopBySize(); len(lp) != 1 || len(lp[0].GetKey()) != 1 || lp[0].GetKey()[0] != "-42" || det.GetPartition().GetLeaderName() != "bravo" {
		t.Errorf("partition 200 (led by bravo): %v", det)
	}

	_, err = admin.ShowPartition(tctx(t), &adminpb.ShowPartitionRequest{Id: 999})
	wantCode(t, err, codes.NotFound, "partition 999 does not exist")
	_, err = admin.ShowPartition(tctx(t), &adminpb.ShowPartitionRequest{Id: 101, Top: maxTop + 1})
	wantCode(t, err, codes.InvalidArgument, "want at most 1000")
}

// A partition none of whose replicas answers is reported unavailable
// within the node timeout, even to a caller without a deadline.
func TestShowPartitionUnreachable(t *testing.T) {
	c := newCluster(t, "alpha")
	c.registerUnreachable(2, "bravo")
	c.createTable("ks", "far", 50, []string{"text"}, []*kvpb.Descriptor{routertest.Whole(50, 500, 2)})
	admin := c.serve(Config{NodeTimeout: 200 * time.Millisecond}, false)
	start := time.Now()
	_, err := admin.ShowPartition(t.Context(), &adminpb.ShowPartitionRequest{Id: 500})
	wantCode(t, err, codes.Unavailable, "inspect partition 500")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answered after %v", d)
	}
	// A caller's own deadline is kept.
	dctx, cancel := context.WithTimeout(t.Context(), 600*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = admin.ShowPartition(dctx, &adminpb.ShowPartitionRequest{Id: 500})
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("gave up after %v (%v), before the caller's deadline of 600ms", d, err)
	}
	if code := status.Code(err); code != codes.Unavailable && code != codes.DeadlineExceeded {
		t.Fatalf("error %v", err)
	}
}

// A partition whose table is gone (a ring outlives its table only between
// revisions) is refused as not found rather than shown without a table.
func TestPartitionOfDroppedTable(t *testing.T) {
	st := fuzzState(t)
	st.Rings[99] = ring.New(99, []*kvpb.Descriptor{{Id: 990, TableId: 99, Start: math.MinInt64, End: math.MaxInt64}})
	_, err := partitionOf(st, 990)
	wantCode(t, err, codes.NotFound, "belongs to a dropped table")
	if tab, err := partitionOf(st, 11); err != nil || tab.ID != 1 {
		t.Fatalf("partitionOf(11) = %v, %v", tab, err)
	}
}
