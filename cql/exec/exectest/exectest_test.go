package exectest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cql/exec"
	"github.com/cosmosd/cosmosd/cql/exec/exectest"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// withTable returns an executor on c's ports and a session, after creating
// table ks.t (k int PRIMARY KEY, v int) through it.
func withTable(t *testing.T, c *exectest.Cluster) (*exec.Executor, *exec.Session) {
	t.Helper()
	e := exec.New(exec.Config{NodeID: exectest.NodeID, Meta: c.Meta, Catalog: c.Catalog, Router: c.KV, Placer: c.Placer, Now: c.Clock.Now})
	sess := &exec.Session{}
	for _, q := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
	} {
		if _, err := e.Query(context.Background(), sess, q, exec.Request{}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return e, sess
}

// The KV port routes as the router does (by token, by partition id, and
// ErrNoPartition for neither), records what it served, and fails exactly
// the requests FailNext names, before they reach a replica.
func TestKVPort(t *testing.T) {
	ctx := context.Background()
	c := exectest.New(t, exectest.Config{Partitions: 3})
	e, sess := withTable(t, c)
	tb := c.Meta.State().Schema.Table("ks", "t")
	parts := c.Meta.State().Ring(tb.ID).Partitions()
	if len(parts) != 3 {
		t.Fatalf("table has %d partitions, want the 3 the placer was told", len(parts))
	}

	c.KV.Record(true)
	c.KV.FailNext(1, exectest.WriteRequest, kvpb.Error_UNAVAILABLE)
	// A read does not take a write's fault.
	if _, err := e.Query(ctx, sess, "SELECT * FROM ks.t WHERE k = 1", exec.Request{}); err != nil {
		t.Fatalf("read took the write's fault: %v", err)
	}
	_, err := e.Query(ctx, sess, "INSERT INTO ks.t (k, v) VALUES (1, 1)", exec.Request{})
	if ce := exec.AsError(err); ce.Code != exec.CodeUnavailable {
		t.Fatalf("faulted write: %v, want Unavailable", err)
	}
	res, err := e.Query(ctx, sess, "SELECT * FROM ks.t WHERE k = 1", exec.Request{})
	if err != nil || len(res.Rows.Rows) != 0 {
		t.Fatalf("a faulted write was applied: %v %v", res, err)
	}
	reqs := c.KV.Take()
	if len(reqs) != 3 || reqs[0].Read == nil || reqs[1].Write == nil || !reqs[1].Injected || reqs[2].Read == nil {
		t.Fatalf("recorded %d requests %+v, want read, injected write, read", len(reqs), reqs)
	}
	if got := exectest.Format(reqs[1]); !strings.HasPrefix(got, "write ks.t p") || !strings.Contains(got, "upsert (k=1) marker: v = 1") ||
		!strings.HasSuffix(got, "→ UNAVAILABLE (injected)") {
		t.Fatalf("formatted write:\n%s", got)
	}
	if len(c.KV.Take()) != 0 {
		t.Fatal("Take did not forget what it returned")
	}

	// By partition id, with the request's ids filled in.
	req := &kvpb.ReadRequest{Scan: true, ScanStart: parts[2].GetStart(), ScanEnd: parts[2].GetEnd()}
	if _, err := c.KV.Read(ctx, router.Target{Table: tb.ID, Partition: parts[2].GetId()}, req); err != nil {
		t.Fatal(err)
	}
	if req.GetPartitionId() != parts[2].GetId() || req.GetTableId() != tb.ID {
		t.Fatalf("request sent to partition %d of table %d, want %d of %d", req.GetPartitionId(), req.GetTableId(), parts[2].GetId(), tb.ID)
	}
	// A partition's own refusal comes back as a partition error.
	_, err = c.KV.Read(ctx, router.Target{Table: tb.ID, Partition: parts[2].GetId()},
		&kvpb.ReadRequest{Scan: true, ScanStart: parts[0].GetStart(), ScanEnd: parts[0].GetEnd()})
	if partition.ErrorCode(err) == kvpb.Error_UNKNOWN {
		t.Fatalf("scan outside the partition: %v, want a partition error", err)
	}
	for _, target := range []router.Target{{Table: tb.ID + 100, Token: 1}, {Table: tb.ID, Partition: 1 << 40}} {
		if _, err := c.KV.Write(ctx, target, &kvpb.WriteRequest{}); !errors.Is(err, router.ErrNoPartition) {
			t.Fatalf("write to %+v: %v, want ErrNoPartition", target, err)
		}
	}
}

// The clock moves only when told.
func TestClock(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := exectest.NewClock(start)
	first := c.Now()
	if !first.Equal(start) || !c.Now().Equal(first) {
		t.Fatal("the clock moved by itself")
	}
	if got := c.Advance(-time.Hour); !got.Equal(start.Add(-time.Hour)) || !c.Now().Equal(got) {
		t.Fatalf("Advance(-1h) = %v", got)
	}
	c.Set(start)
	if !c.Now().Equal(start) {
		t.Fatal("Set did not set")
	}
}

// A write the replica served is recorded with its response (a conditional
// write's outcome shows in Format), and ClearFaults forgets the faults no
// request took.
func TestKVPortRecordsResponses(t *testing.T) {
	ctx := context.Background()
	c := exectest.New(t, exectest.Config{})
	e, sess := withTable(t, c)
	c.KV.FailNext(2, exectest.AnyRequest, kvpb.Error_UNAVAILABLE)
	c.KV.ClearFaults()
	c.KV.Record(true)
	for _, want := range []string{"→ applied=true", "→ applied=false current=1"} {
		if _, err := e.Query(ctx, sess, "INSERT INTO ks.t (k, v) VALUES (1, 1) IF NOT EXISTS", exec.Request{}); err != nil {
			t.Fatalf("conditional insert (faults cleared): %v", err)
		}
		reqs := c.KV.Take()
		if len(reqs) != 1 || reqs[0].Write == nil || reqs[0].WriteResp == nil || reqs[0].Injected || reqs[0].Err != nil {
			t.Fatalf("recorded %+v, want one served write with its response", reqs)
		}
		if got := exectest.Format(reqs[0]); !strings.Contains(got, "if (k=1) not exists") || !strings.HasSuffix(strings.TrimSpace(got), want) {
			t.Fatalf("formatted conditional write:\n%s\nwant it to end %q", got, want)
		}
	}
}

// NewMeta is the metadata half alone; RegisterNode shows another node in
// it once it returns.
func TestNewMetaAndRegisterNode(t *testing.T) {
	kv, meta := exectest.NewMeta(t)
	if rev, err := kv.Revision(t.Context()); err != nil || meta.State() == nil {
		t.Fatalf("new meta: revision %d %v, state %v", rev, err, meta.State())
	}
	c := exectest.New(t, exectest.Config{})
	if err := c.RegisterNode(t.Context(), cluster.NodeInfo{ID: 2, Name: "n2", CQLAddr: "127.0.0.2:9042"}); err != nil {
		t.Fatal(err)
	}
	if n := c.Meta.State().Nodes[2]; n == nil || n.Name != "n2" {
		t.Fatalf("node 2 after RegisterNode: %+v", n)
	}
}
