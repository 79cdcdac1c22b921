package partition

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus/local"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/storage"
)

const table = 7

type harness struct {
	t     *testing.T
	store *Store
	eng   *storage.Engine
	rep   *Replica
	now   int64 // micros
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	eng, err := storage.Open(storage.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := local.New(local.Config{NodeID: 1, Storage: eng})
	if err != nil {
		t.Fatal(err)
	}
	st := NewStore(StoreConfig{NodeID: 1, Storage: eng, Consensus: cons})
	t.Cleanup(func() {
		st.Close()
		_ = cons.Close()
		_ = eng.Close()
	})
	desc := &kvpb.Descriptor{Id: 100, TableId: table, Start: math.MinInt64, End: math.MaxInt64,
		Replicas: []*kvpb.ReplicaDescriptor{{NodeId: 1, ReplicaId: 1}}, NextReplicaId: 2}
	rep, err := st.Bootstrap(context.Background(), desc)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, store: st, eng: eng, rep: rep, now: 1_700_000_000_000_000}
}

func pk(s string) ([]byte, int64) {
	k := []byte(s)
	return k, ring.Token(k)
}

func ck(v int32) []byte {
	k, err := cqltype.AppendKey(nil, cqltype.Scalar(cqltype.Int), binary.BigEndian.AppendUint32(nil, uint32(v)), false)
	if err != nil {
		panic(err)
	}
	return k
}

func (h *harness) write(req *kvpb.WriteRequest) (*kvpb.WriteResponse, error) {
	h.t.Helper()
	req.PartitionId, req.TableId = 100, table
	if req.NowMicros == 0 {
		req.NowMicros = h.now
	}
	return h.rep.Write(context.Background(), req)
}

func (h *harness) mustWrite(muts ...*kvpb.Mutation) {
	h.t.Helper()
	if _, err := h.write(&kvpb.WriteRequest{Mutations: muts}); err != nil {
		h.t.Fatal(err)
	}
}

func upsert(key string, c []byte, ts int64, ops ...*kvpb.ColumnOp) *kvpb.Mutation {
	p, tok := pk(key)
	return &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: p, Ck: c, Timestamp: ts, Marker: true, Ops: ops}
}

func set(col uint32, v string) *kvpb.ColumnOp {
	return &kvpb.ColumnOp{Column: col, Kind: kvpb.ColumnOp_SET, Value: []byte(v)}
}

// read returns the clustering keys and column-1 values of a read.
func (h *harness) read(req *kvpb.ReadRequest) ([]string, *kvpb.ReadResponse) {
	h.t.Helper()
	req.PartitionId, req.TableId = 100, table
	if req.NowMicros == 0 {
		req.NowMicros = h.now
	}
	resp, err := h.rep.Read(context.Background(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, r := range resp.GetRows() {
		row, err := storage.DecodeRow(r.GetValue())
		if err != nil {
			h.t.Fatal(err)
		}
		v := "<none>"
		if c := row.Cell(1); c != nil {
			v = string(c.Value)
		}
		out = append(out, v)
	}
	return out, resp
}

func keyOf(s string) *kvpb.PartitionKey {
	p, tok := pk(s)
	return &kvpb.PartitionKey{Token: tok, Pk: p}
}

func eq(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

func TestWriteReadClusteringOrderSlicesReverseLimits(t *testing.T) {
	h := newHarness(t)
	for i := int32(1); i <= 5; i++ {
		h.mustWrite(upsert("a", ck(i), 1, set(1, string(rune('0'+i)))))
	}
	base := &kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true}
	all, _ := h.read(base)
	eq(t, all, "1", "2", "3", "4", "5")
	rev, _ := h.read(&kvpb.ReadRequest{Keys: base.Keys, Clustering: true, Reverse: true})
	eq(t, rev, "5", "4", "3", "2", "1")
	slice := &kvpb.Slice{Start: &kvpb.Bound{Key: ck(2), Inclusive: false}, End: &kvpb.Bound{Key: ck(4), Inclusive: true}}
	got, _ := h.read(&kvpb.ReadRequest{Keys: base.Keys, Clustering: true, Slices: []*kvpb.Slice{slice}})
	eq(t, got, "3", "4")
	lim, resp := h.read(&kvpb.ReadRequest{Keys: base.Keys, Clustering: true, Limit: 2})
	eq(t, lim, "1", "2")
	if !resp.GetMore() {
		t.Fatal("limit reached with rows left must report more")
	}
	rest, resp := h.read(&kvpb.ReadRequest{Keys: base.Keys, Clustering: true, ResumeAfter: resp.GetRows()[1].GetKey(), ResumePartitionRows: 2})
	eq(t, rest, "3", "4", "5")
	if resp.GetMore() {
		t.Fatal("exhausted read reports more")
	}
	exact, resp := h.read(&kvpb.ReadRequest{Keys: base.Keys, Clustering: true, Limit: 5})
	if len(exact) != 5 || resp.GetMore() {
		t.Fatalf("limit equal to the row count must not report more (%d rows, more=%v)", len(exact), resp.GetMore())
	}
}

func TestScanPerPartitionLimitAndStatic(t *testing.T) {
	h := newHarness(t)
	for _, k := range []string{"a", "b", "c"} {
		for i := int32(1); i <= 3; i++ {
			h.mustWrite(upsert(k, ck(i), 1, set(1, k+string(rune('0'+i)))))
		}
		h.mustWrite(upsert(k, nil, 1, set(2, "static-"+k)))
	}
	got, resp := h.read(&kvpb.ReadRequest{Scan: true, ScanStart: math.MinInt64, ScanEnd: math.MaxInt64, Clustering: true, PerPartitionLimit: 2})
	if len(got) != 6 {
		t.Fatalf("3 partitions x 2 rows, got %q", got)
	}
	if resp.GetRowsScanned() < 6 {
		t.Fatalf("rows scanned %d", resp.GetRowsScanned())
	}
	withStatic, _ := h.read(&kvpb.ReadRequest{Scan: true, ScanStart: math.MinInt64, ScanEnd: math.MaxInt64, Clustering: true, Static: true, Limit: 4})
	// Static rows come first in each partition and do not count.
	if len(withStatic) < 5 || withStatic[0] != "<none>" {
		t.Fatalf("static rows first and uncounted: %q", withStatic)
	}
}

func TestDeletesAndTombstones(t *testing.T) {
	h := newHarness(t)
	for i := int32(1); i <= 5; i++ {
		h.mustWrite(upsert("a", ck(i), 10, set(1, string(rune('0'+i)))))
	}
	p, tok := pk("a")
	// Row delete, then an older write to it stays invisible.
	h.mustWrite(&kvpb.Mutation{Kind: kvpb.Mutation_DELETE_ROW, Token: tok, Pk: p, Ck: ck(1), Timestamp: 20})
	h.mustWrite(upsert("a", ck(1), 15, set(1, "late")))
	// Range delete (2, 4].
	h.mustWrite(&kvpb.Mutation{Kind: kvpb.Mutation_DELETE_RANGE, Token: tok, Pk: p, Timestamp: 20,
		RangeStart: &kvpb.Bound{Key: ck(2), Inclusive: false}, RangeEnd: &kvpb.Bound{Key: ck(4), Inclusive: true}})
	got, _ := h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	eq(t, got, "2", "5")
	// Column delete leaves the row (marker) alive.
	h.mustWrite(&kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: p, Ck: ck(5), Timestamp: 30, Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kvpb.ColumnOp_DELETE}}})
	got, _ = h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	eq(t, got, "2", "<none>")
	// Partition delete removes everything at or before its timestamp.
	h.mustWrite(&kvpb.Mutation{Kind: kvpb.Mutation_DELETE_PARTITION, Token: tok, Pk: p, Timestamp: 40})
	got, _ = h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	eq(t, got)
	h.mustWrite(upsert("a", ck(9), 35, set(1, "older than the partition delete")))
	got, _ = h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	eq(t, got)
	h.mustWrite(upsert("a", ck(9), 50, set(1, "newer")))
	got, _ = h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	eq(t, got, "newer")
}

func TestTTLExpiresAtReadTime(t *testing.T) {
	h := newHarness(t)
	m := upsert("a", ck(1), 1, set(1, "v"))
	m.Ttl = 10
	h.mustWrite(m)
	got, _ := h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	eq(t, got, "v")
	got, _ = h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true, NowMicros: h.now + 11_000_000})
	eq(t, got)
}

func TestConditionsEvaluateAtApply(t *testing.T) {
	h := newHarness(t)
	p, tok := pk("a")
	cond := &kvpb.Condition{Kind: kvpb.Condition_NOT_EXISTS, Token: tok, Pk: p, Ck: ck(1)}
	resp, err := h.write(&kvpb.WriteRequest{Conditions: []*kvpb.Condition{cond}, Mutations: []*kvpb.Mutation{upsert("a", ck(1), 1, set(1, "first"))}})
	if err != nil || !resp.GetApplied() {
		t.Fatalf("first IF NOT EXISTS: %v %v", resp, err)
	}
	resp, err = h.write(&kvpb.WriteRequest{Conditions: []*kvpb.Condition{cond}, Mutations: []*kvpb.Mutation{upsert("a", ck(1), 2, set(1, "second"))}})
	if err != nil || resp.GetApplied() || !resp.GetCurrent()[0].GetExists() {
		t.Fatalf("second IF NOT EXISTS must fail and return the row: %v %v", resp, err)
	}
	text := cqltype.Scalar(cqltype.Varchar).String()
	colCond := func(v string) *kvpb.Condition {
		return &kvpb.Condition{Kind: kvpb.Condition_COLUMNS, Token: tok, Pk: p, Ck: ck(1),
			Columns: []*kvpb.ColumnCondition{{Column: 1, Type: text, Op: kvpb.ColumnCondition_EQ, Values: [][]byte{[]byte(v)}}}}
	}
	resp, _ = h.write(&kvpb.WriteRequest{Conditions: []*kvpb.Condition{colCond("nope")}, Mutations: []*kvpb.Mutation{upsert("a", ck(1), 3, set(1, "x"))}})
	if resp.GetApplied() {
		t.Fatal("IF col = 'nope' applied")
	}
	resp, _ = h.write(&kvpb.WriteRequest{Conditions: []*kvpb.Condition{colCond("first")}, Mutations: []*kvpb.Mutation{upsert("a", ck(1), 3, set(1, "third"))}})
	if !resp.GetApplied() {
		t.Fatal("IF col = 'first' not applied")
	}
	got, _ := h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	eq(t, got, "third")
}

func TestCollectionsAndCounters(t *testing.T) {
	h := newHarness(t)
	p, tok := pk("a")
	listType := cqltype.ListOf(cqltype.Scalar(cqltype.Varchar)).String()
	enc := func(vals ...string) []byte {
		var e [][]byte
		for _, v := range vals {
			e = append(e, []byte(v))
		}
		return cqltype.EncodeCollection(e)
	}
	op := func(kind kvpb.ColumnOp_Kind, v []byte, idx int32) *kvpb.Mutation {
		return &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: p, Ck: ck(1), Timestamp: 1,
			Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kind, Value: v, Type: listType, Index: idx}}}
	}
	h.mustWrite(op(kvpb.ColumnOp_LIST_APPEND, enc("b", "c"), 0), op(kvpb.ColumnOp_LIST_PREPEND, enc("a"), 0))
	h.mustWrite(op(kvpb.ColumnOp_LIST_SET_INDEX, []byte("B"), 1))
	h.mustWrite(op(kvpb.ColumnOp_LIST_REMOVE, enc("c"), 0))
	got, _ := h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	if len(got) != 1 || got[0] != string(enc("a", "B")) {
		t.Fatalf("list = %q, want [a B]", got)
	}
	// Out-of-bounds index is a deterministic rejection with no effect.
	_, err := h.write(&kvpb.WriteRequest{Mutations: []*kvpb.Mutation{op(kvpb.ColumnOp_LIST_APPEND, enc("zz"), 0), op(kvpb.ColumnOp_LIST_SET_INDEX, []byte("x"), 7)}})
	if ErrorCode(err) != kvpb.Error_INVALID {
		t.Fatalf("out of bounds: %v", err)
	}
	got, _ = h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	if got[0] != string(enc("a", "B")) {
		t.Fatalf("rejected write left effects: %q", got)
	}
	ctr := func(d int64) *kvpb.Mutation {
		return &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: p, Ck: ck(2), Timestamp: 1,
			Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kvpb.ColumnOp_COUNTER_ADD, Value: binary.BigEndian.AppendUint64(nil, uint64(d))}}}
	}
	h.mustWrite(ctr(5))
	h.mustWrite(ctr(-2), ctr(10))
	got, _ = h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true, Slices: []*kvpb.Slice{{Start: &kvpb.Bound{Key: ck(2), Inclusive: true}}}})
	if len(got) != 1 || int64(binary.BigEndian.Uint64([]byte(got[0]))) != 13 {
		t.Fatalf("counter = %x, want 13", got)
	}
}

func TestLogicalPartitionLimitRejectsWhole(t *testing.T) {
	h := newHarness(t)
	big := make([]byte, 600)
	h.mustWrite(upsert("a", ck(1), 1, set(1, string(big))))
	_, err := h.write(&kvpb.WriteRequest{MaxLogicalPartitionBytes: 1000, Mutations: []*kvpb.Mutation{
		upsert("b", ck(1), 1, set(1, "other partition in the same write")),
		upsert("a", ck(2), 1, set(1, string(big))),
	}})
	if ErrorCode(err) != kvpb.Error_PARTITION_TOO_LARGE {
		t.Fatalf("err = %v, want PARTITION_TOO_LARGE", err)
	}
	got, _ := h.read(&kvpb.ReadRequest{Scan: true, ScanStart: math.MinInt64, ScanEnd: math.MaxInt64, Clustering: true})
	if len(got) != 1 {
		t.Fatalf("the refused write must leave nothing behind, rows = %d", len(got))
	}
	// Other keys still write; shrinking writes are always allowed.
	if _, err := h.write(&kvpb.WriteRequest{MaxLogicalPartitionBytes: 1000, Mutations: []*kvpb.Mutation{upsert("b", ck(1), 1, set(1, "ok"))}}); err != nil {
		t.Fatal(err)
	}
}

func TestStatsTrackBytesAndRows(t *testing.T) {
	h := newHarness(t)
	for i := int32(1); i <= 4; i++ {
		h.mustWrite(upsert("a", ck(i), 1, set(1, "value")))
	}
	h.mustWrite(upsert("b", ck(1), 1, set(1, "value")))
	tot, err := SumStats(h.eng, h.rep.Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	if tot.Rows != 5 || tot.LogicalPartitions != 2 || tot.Bytes <= 0 {
		t.Fatalf("totals %+v", tot)
	}
	p, tok := pk("a")
	h.mustWrite(&kvpb.Mutation{Kind: kvpb.Mutation_DELETE_PARTITION, Token: tok, Pk: p, Timestamp: 5})
	tot2, _ := SumStats(h.eng, h.rep.Descriptor())
	if tot2.Rows != 1 || tot2.Bytes >= tot.Bytes {
		t.Fatalf("after partition delete %+v", tot2)
	}
}

func TestRangeMismatchAndRestart(t *testing.T) {
	h := newHarness(t)
	// Split the partition at 0 through the log.
	left := &kvpb.Descriptor{Id: 100, TableId: table, Start: math.MinInt64, End: -1}
	right := &kvpb.Descriptor{Id: 101, TableId: table, Start: 0, End: math.MaxInt64}
	if _, err := h.rep.Propose(context.Background(), &kvpb.Command{Cmd: &kvpb.Command_Split{Split: &kvpb.SplitCommand{Left: left, Right: right}}}); err != nil {
		t.Fatal(err)
	}
	var key string
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		if _, tok := pk(k); tok >= 0 {
			key = k
			break
		}
	}
	_, err := h.write(&kvpb.WriteRequest{Mutations: []*kvpb.Mutation{upsert(key, ck(1), 1, set(1, "v"))}})
	var pe *Error
	if !errors.As(err, &pe) || pe.PB.GetCode() != kvpb.Error_RANGE_MISMATCH || pe.PB.GetCurrent().GetEnd() != -1 {
		t.Fatalf("write outside the shrunk range: %v", err)
	}
	// The right half starts on the same node (asynchronously).
	var right2 *Replica
	for deadline := time.Now().Add(10 * time.Second); right2 == nil && time.Now().Before(deadline); {
		right2, _ = h.store.Replica(101)
		if right2 == nil {
			waitBriefly()
		}
	}
	if right2 == nil {
		t.Fatal("right half did not start")
	}
	p, tok := pk(key)
	if _, err := right2.Write(context.Background(), &kvpb.WriteRequest{PartitionId: 101, TableId: table, NowMicros: h.now,
		Mutations: []*kvpb.Mutation{{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: p, Ck: ck(1), Timestamp: 1, Marker: true}}}); err != nil {
		t.Fatalf("write to the right half: %v", err)
	}
	if d := right2.Descriptor(); d.GetStart() != 0 || d.GetGeneration() == 0 {
		t.Fatalf("right descriptor %v", d)
	}
}

func TestInspectSplitPointAndTop(t *testing.T) {
	h := newHarness(t)
	// One key alone cannot be split.
	h.mustWrite(upsert("only", ck(1), 1, set(1, "x")))
	det, err := Inspect(h.eng, h.rep.Descriptor(), 3)
	if err != nil || det.HasSplit {
		t.Fatalf("single logical partition: %+v %v", det, err)
	}
	// Many keys of similar size: the split point halves the bytes.
	for i := 0; i < 100; i++ {
		h.mustWrite(upsert(string(rune('A'+i%26))+string(rune('a'+i/26)), ck(1), 1, set(1, "some value")))
	}
	big := make([]byte, 5000)
	h.mustWrite(upsert("huge", ck(1), 1, set(1, string(big))))
	det, err = Inspect(h.eng, h.rep.Descriptor(), 3)
	if err != nil || !det.HasSplit {
		t.Fatalf("split point missing: %+v %v", det, err)
	}
	if string(det.TopBySize[0].GetPk()) != "huge" || len(det.TopBySize) != 3 {
		t.Fatalf("top by size %+v", det.TopBySize)
	}
	var left, right int64
	it, _ := h.eng.NewIter(storage.StatsSpan(table, math.MinInt64, math.MaxInt64))
	for valid := it.First(); valid; valid = it.Next() {
		k, _ := storage.DecodeStatsKey(it.Key())
		s, _ := storage.DecodeStats(it.Value())
		if k.Token < det.SplitToken {
			left += s.Bytes
		} else {
			right += s.Bytes
		}
	}
	_ = it.Close()
	if left == 0 || right == 0 || left > 2*right+6000 || right > 2*left+6000 {
		t.Fatalf("split at %d gives %d / %d bytes", det.SplitToken, left, right)
	}
}
