package partition

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// These tests pin the rule in write.go's "Write timestamps": timestamps of
// conditional writes and read-modify-writes follow the log, whatever the
// clocks of the clients and coordinators say.

var hour = time.Hour.Microseconds()

// cell1 reads column 1 of row ck(c) of partition "a" (nil if absent).
func (h *harness) cell1(c int32) *storage.Cell {
	h.t.Helper()
	_, resp := h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true,
		Slices: []*kvpb.Slice{{Start: &kvpb.Bound{Key: ck(c), Inclusive: true}, End: &kvpb.Bound{Key: ck(c), Inclusive: true}}}})
	if len(resp.GetRows()) == 0 {
		return nil
	}
	row, err := storage.DecodeRow(resp.GetRows()[0].GetValue())
	if err != nil {
		h.t.Fatal(err)
	}
	return row.Cell(1)
}

func (h *harness) value1(c int32) string {
	h.t.Helper()
	if cell := h.cell1(c); cell != nil {
		return string(cell.Value)
	}
	return "<none>"
}

// cas applies a conditional write coordinated at nowMicros and fails the
// test unless its applied flag is want.
func (h *harness) cas(nowMicros int64, want bool, cond *kvpb.Condition, muts ...*kvpb.Mutation) {
	h.t.Helper()
	resp, err := h.write(&kvpb.WriteRequest{NowMicros: nowMicros, Conditions: []*kvpb.Condition{cond}, Mutations: muts})
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.GetApplied() != want {
		h.t.Fatalf("[applied] = %v, want %v", resp.GetApplied(), want)
	}
}

func notExists(c int32) *kvpb.Condition {
	p, tok := pk("a")
	return &kvpb.Condition{Kind: kvpb.Condition_NOT_EXISTS, Token: tok, Pk: p, Ck: ck(c)}
}

func exists(c int32) *kvpb.Condition {
	p, tok := pk("a")
	return &kvpb.Condition{Kind: kvpb.Condition_EXISTS, Token: tok, Pk: p, Ck: ck(c)}
}

func colEq(c int32, v string) *kvpb.Condition {
	p, tok := pk("a")
	return &kvpb.Condition{Kind: kvpb.Condition_COLUMNS, Token: tok, Pk: p, Ck: ck(c),
		Columns: []*kvpb.ColumnCondition{{Column: 1, Type: cqltype.Scalar(cqltype.Varchar).String(), Op: kvpb.ColumnCondition_EQ, Values: [][]byte{[]byte(v)}}}}
}

func deleteRow(c int32, ts int64) *kvpb.Mutation {
	p, tok := pk("a")
	return &kvpb.Mutation{Kind: kvpb.Mutation_DELETE_ROW, Token: tok, Pk: p, Ck: ck(c), Timestamp: ts}
}

func withSource(m *kvpb.Mutation, src kvpb.Mutation_TimestampSource) *kvpb.Mutation {
	m.TimestampSource = src
	return m
}

// The scenario: an LWT coordinated by a clock an hour ahead, then
// a conditional update from a correct clock. The update's condition holds,
// so it must be applied and visible, stamped after the first write.
func TestConditionalUpdateAfterFutureTimestampIsVisible(t *testing.T) {
	h := newHarness(t)
	future := h.now + hour
	h.cas(future, true, notExists(1), upsert("a", ck(1), future, set(1, "0")))
	h.cas(h.now, true, colEq(1, "0"), upsert("a", ck(1), h.now, set(1, "1")))
	if got := h.value1(1); got != "1" {
		t.Fatalf("after an applied IF v = '0' SET v = '1' the row reads v = %q", got)
	}
	if ts := h.cell1(1).Timestamp; ts != future+1 {
		t.Fatalf("the conditional write is stamped %d, want one above the future write (%d)", ts, future+1)
	}
	// A condition that no longer holds still does nothing.
	h.cas(h.now, false, colEq(1, "0"), upsert("a", ck(1), h.now, set(1, "2")))
	eq(t, []string{h.value1(1)}, "1")
	// The client's own timestamp in a conditional command is ignored:
	// even one far in the past is stamped after what is stored.
	h.cas(h.now, true, colEq(1, "1"), withSource(upsert("a", ck(1), 5, set(1, "3")), kvpb.Mutation_STATEMENT))
	eq(t, []string{h.value1(1)}, "3")
}

// A conditional delete and re-insert from a clock behind both apply over a
// row written by a clock ahead, as do the deletions of a conditional batch.
func TestConditionalDeletesAndInsertsFollowTheLog(t *testing.T) {
	h := newHarness(t)
	future, past := h.now+hour, h.now-hour
	h.cas(future, true, notExists(1), upsert("a", ck(1), future, set(1, "ahead")))
	h.cas(past, true, exists(1), deleteRow(1, past))
	if got := h.value1(1); got != "<none>" {
		t.Fatalf("after an applied DELETE IF EXISTS the row reads %q", got)
	}
	h.cas(past, true, notExists(1), upsert("a", ck(1), past, set(1, "behind")))
	eq(t, []string{h.value1(1)}, "behind")

	// A client-stamped plain write far ahead, then a conditional batch
	// from a correct clock that deletes the partition and writes one row:
	// the deletion covers the future row, the new row survives it.
	h.mustWrite(upsert("a", ck(2), future+hour, set(1, "far ahead")))
	p, tok := pk("a")
	h.cas(h.now, true, colEq(1, "behind"),
		&kvpb.Mutation{Kind: kvpb.Mutation_DELETE_PARTITION, Token: tok, Pk: p, Timestamp: h.now},
		upsert("a", ck(3), h.now, set(1, "new")))
	got, _ := h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	// The batch's writes share one timestamp, and a deletion wins a tie
	// over a cell, as in Cassandra: the partition is empty.
	eq(t, got)
	h.cas(h.now, true, notExists(3), upsert("a", ck(3), h.now, set(1, "again")))
	got, _ = h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true})
	eq(t, got, "again")
}

// Plain writes: a coordinator's timestamp is raised above the partition,
// a client's (default timestamp or USING TIMESTAMP) is honoured.
func TestPlainWriteTimestampSources(t *testing.T) {
	h := newHarness(t)
	future, past := h.now+hour, h.now-hour
	h.mustWrite(upsert("a", ck(1), future, set(1, "ahead")))
	for _, tc := range []struct {
		src  kvpb.Mutation_TimestampSource
		want string
	}{
		{kvpb.Mutation_CLIENT, "ahead"},
		{kvpb.Mutation_STATEMENT, "ahead"},
		{kvpb.Mutation_COORDINATOR, "coordinator behind"},
	} {
		h.mustWrite(withSource(upsert("a", ck(1), past, set(1, "coordinator behind")), tc.src))
		if got := h.value1(1); got != tc.want {
			t.Fatalf("%s write stamped behind: row reads %q, want %q", tc.src, got, tc.want)
		}
	}
	if ts := h.cell1(1).Timestamp; ts != future+1 {
		t.Fatalf("raised coordinator timestamp = %d, want %d", ts, future+1)
	}
	// A coordinator timestamp already above the partition is kept.
	h.mustWrite(withSource(upsert("a", ck(1), future+hour, set(1, "later")), kvpb.Mutation_COORDINATOR))
	if ts := h.cell1(1).Timestamp; ts != future+hour {
		t.Fatalf("coordinator timestamp above the partition became %d, want %d", ts, future+hour)
	}
	// One batch of coordinator-stamped mutations keeps one timestamp, so
	// a row deleted and written in it stays deleted, as in Cassandra.
	h.mustWrite(withSource(deleteRow(2, past), kvpb.Mutation_COORDINATOR),
		withSource(upsert("a", ck(2), past, set(1, "tie")), kvpb.Mutation_COORDINATOR))
	if got := h.value1(2); got != "<none>" {
		t.Fatalf("delete and insert of one batch: row reads %q", got)
	}
}

// Read-modify-writes from a clock behind are not shadowed by deletions
// from a clock ahead, unless the statement set USING TIMESTAMP.
func TestReadModifyWriteAboveDeletions(t *testing.T) {
	h := newHarness(t)
	p, tok := pk("a")
	future, past := h.now+hour, h.now-hour
	listType := cqltype.ListOf(cqltype.Scalar(cqltype.Varchar)).String()
	appendOp := func(c int32, ts int64, src kvpb.Mutation_TimestampSource, v string) *kvpb.Mutation {
		return &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: p, Ck: ck(c), Timestamp: ts, TimestampSource: src,
			Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kvpb.ColumnOp_LIST_APPEND, Value: cqltype.EncodeCollection([][]byte{[]byte(v)}), Type: listType}}}
	}
	list := func(vals ...string) string {
		var e [][]byte
		for _, v := range vals {
			e = append(e, []byte(v))
		}
		return string(cqltype.EncodeCollection(e))
	}
	// A column deletion from a clock ahead, then appends from one behind.
	h.mustWrite(appendOp(1, future, kvpb.Mutation_CLIENT, "x"))
	h.mustWrite(&kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: p, Ck: ck(1), Timestamp: future + 10,
		Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kvpb.ColumnOp_DELETE}}})
	h.mustWrite(appendOp(1, past, kvpb.Mutation_CLIENT, "a"))
	h.mustWrite(appendOp(1, past, kvpb.Mutation_COORDINATOR, "b"))
	if got := h.value1(1); got != list("a", "b") {
		t.Fatalf("appends after a future column deletion: %q, want [a b]", got)
	}
	// USING TIMESTAMP is the client's choice: below a row deletion, the
	// appended value is shadowed, as in Cassandra.
	h.mustWrite(deleteRow(2, future))
	h.mustWrite(appendOp(2, past, kvpb.Mutation_STATEMENT, "lost"))
	if got := h.value1(2); got != "<none>" {
		t.Fatalf("USING TIMESTAMP append below a row deletion reads %q", got)
	}

	// A counter deleted from a clock ahead restarts from zero and counts
	// every later increment.
	ctr := func(d int64) *kvpb.Mutation {
		return &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: p, Ck: ck(3), Timestamp: past,
			Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kvpb.ColumnOp_COUNTER_ADD, Value: binary.BigEndian.AppendUint64(nil, uint64(d))}}}
	}
	h.mustWrite(ctr(5))
	// (The partition already holds timestamps past future, and the
	// increment was stamped above them; a deletion ahead of all of them:)
	h.mustWrite(deleteRow(3, future+hour))
	h.mustWrite(ctr(2))
	h.mustWrite(ctr(3))
	cell := h.cell1(3)
	if cell == nil || int64(binary.BigEndian.Uint64(cell.Value)) != 5 {
		t.Fatalf("counter after a future deletion and +2, +3 = %v, want 5", cell)
	}
}

// A timestamp at the top of the range saturates instead of wrapping into
// NoTimestamp (which would make the write vanish).
func TestTimestampSaturates(t *testing.T) {
	h := newHarness(t)
	h.mustWrite(withSource(upsert("a", ck(1), math.MaxInt64, set(1, "max")), kvpb.Mutation_STATEMENT))
	h.cas(h.now, true, exists(1), upsert("a", ck(1), h.now, set(1, "zz")))
	if ts := h.cell1(1).Timestamp; ts != math.MaxInt64 {
		t.Fatalf("conditional write over MaxInt64 stamped %d", ts)
	}
	// On the tie the greater value wins.
	eq(t, []string{h.value1(1)}, "zz")
}

// A stats record written before the stats kept the highest timestamp is
// completed from the rows on the first write to the partition.
func TestStatsWithoutMaxTimestampAreRecomputed(t *testing.T) {
	h := newHarness(t)
	future := h.now + hour
	h.mustWrite(upsert("a", ck(1), h.now, set(1, "now")), upsert("a", ck(2), future, set(1, "ahead")))
	p, tok := pk("a")
	key := storage.StatsKey(table, tok, p)
	stats, err := storage.GetStats(h.eng, table, tok, p)
	if err != nil {
		t.Fatal(err)
	}
	if stats.MaxTimestamp != future || stats.MaxTimestampUnknown {
		t.Fatalf("stats = %+v, want MaxTimestamp %d", stats, future)
	}
	// Rewrite the record as the previous version did.
	stats.MaxTimestamp, stats.MaxTimestampUnknown = storage.NoTimestamp, true
	b := h.eng.NewWriteBatch()
	if err := b.Set(key, storage.AppendStats(nil, stats)); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	// A conditional write to row 1 must still land above row 2's future
	// timestamp, which only the rows tell.
	h.cas(h.now, true, colEq(1, "now"), upsert("a", ck(1), h.now, set(1, "updated")))
	if ts := h.cell1(1).Timestamp; ts != future+1 {
		t.Fatalf("conditional write stamped %d, want %d", ts, future+1)
	}
	stats, err = storage.GetStats(h.eng, table, tok, p)
	if err != nil {
		t.Fatal(err)
	}
	if stats.MaxTimestampUnknown || stats.MaxTimestamp != future+1 {
		t.Fatalf("stats after the write = %+v, want MaxTimestamp %d", stats, future+1)
	}
}
