package partition

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// rejection is a deterministic refusal of a command (every replica refuses
// it identically); any other error from the write path is an I/O failure
// that stops the replica.
type rejection struct{ err *Error }

func (r rejection) Error() string { return r.err.Error() }

func reject(code kvpb.Error_Code, format string, args ...any) error {
	return rejection{Errorf(code, format, args...)}
}

func inRange(d *kvpb.Descriptor, token int64) bool {
	return HasRange(d) && token >= d.GetStart() && token <= d.GetEnd()
}

// applyWrite applies a write command: conditions first, then mutations
// staged in memory, then (if accepted) the batch writes.
func (sm *StateMachine) applyWrite(b *storage.Batch, req *kvpb.WriteRequest) (consensus.Result, error) {
	d := sm.desc.Load()
	if req.GetTableId() != d.GetTableId() {
		return consensus.Result{Err: rangeMismatch(d, 0)}, nil
	}
	if req.GetTruncate() {
		return sm.applyTruncate(b)
	}
	for _, m := range req.GetMutations() {
		if !inRange(d, m.GetToken()) {
			return consensus.Result{Err: rangeMismatch(d, m.GetToken())}, nil
		}
	}
	for _, c := range req.GetConditions() {
		if !inRange(d, c.GetToken()) {
			return consensus.Result{Err: rangeMismatch(d, c.GetToken())}, nil
		}
	}
	st := &stage{
		r:       b,
		table:   d.GetTableId(),
		now:     floorDiv(req.GetNowMicros(), 1_000_000),
		gcGrace: req.GetGcGraceSeconds(),
		parts:   map[string]*partStage{},
	}
	resp := &kvpb.WriteResponse{Applied: true}
	for _, c := range req.GetConditions() {
		ok, cur, err := st.evalCondition(c)
		if err != nil {
			return resultOf(err)
		}
		resp.Current = append(resp.Current, cur)
		resp.Applied = resp.Applied && ok
	}
	if !resp.Applied {
		return consensus.Result{Value: resp}, nil
	}
	if len(req.GetConditions()) > 0 {
		if err := st.stampConditional(req); err != nil {
			return resultOf(err)
		}
	}
	for _, m := range req.GetMutations() {
		if err := st.add(m); err != nil {
			return resultOf(err)
		}
	}
	writes, err := st.finish(req.GetMaxLogicalPartitionBytes())
	if err != nil {
		return resultOf(err)
	}
	for _, w := range writes {
		if w.value == nil {
			err = b.Delete(w.key)
		} else {
			err = b.Set(w.key, w.value)
		}
		if err != nil {
			return consensus.Result{}, err
		}
		resp.BytesWritten += int64(len(w.key) + len(w.value))
	}
	return consensus.Result{Value: resp}, nil
}

// resultOf turns a rejection into a Result and passes other errors up.
func resultOf(err error) (consensus.Result, error) {
	var r rejection
	if errors.As(err, &r) {
		return consensus.Result{Err: r.err}, nil
	}
	return consensus.Result{}, err
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// stage collects one write command's effects in memory.
type stage struct {
	r       storage.Reader
	table   uint64
	now     int64 // seconds
	gcGrace int64
	parts   map[string]*partStage
	order   []*partStage
	// conditional: the command has conditions, and casTS is the timestamp
	// of all its mutations (see "Write timestamps").
	conditional bool
	casTS       int64
}

// partStage is the staged change of one logical partition.
type partStage struct {
	token     int64
	pk        []byte
	deletedAt int64 // partition deletion by this command
	ranges    []rangeDeletion
	rows      map[string]*storage.Row // pending updates by clustering key
	rowOrder  []string
	// stats are the partition's stats before this command, with a known
	// MaxTimestamp once loaded.
	stats        storage.PartitionStats
	statsLoaded  bool
	storedCached map[string]*storage.Row
	// maxTS is the highest timestamp this command writes to the partition.
	maxTS int64
}

type rangeDeletion struct {
	start, end *kvpb.Bound
	ts         int64
}

type write struct {
	key, value []byte // value nil = delete
}

func (st *stage) part(token int64, pk []byte) *partStage {
	k := string(pk)
	if ps, ok := st.parts[k]; ok {
		return ps
	}
	ps := &partStage{token: token, pk: pk, deletedAt: storage.NoTimestamp, rows: map[string]*storage.Row{},
		storedCached: map[string]*storage.Row{}, maxTS: storage.NoTimestamp}
	st.parts[k] = ps
	st.order = append(st.order, ps)
	return ps
}

func (st *stage) loadStats(ps *partStage) error {
	if ps.statsLoaded {
		return nil
	}
	s, err := storage.GetStats(st.r, st.table, ps.token, ps.pk)
	if err != nil {
		return err
	}
	if s.MaxTimestampUnknown {
		// A record from before the stats kept it: recompute it once from
		// the rows (the same on every replica, since it reads only the
		// replicated state); finish stores it with the command.
		if s.MaxTimestamp, err = st.scanMaxTimestamp(ps); err != nil {
			return err
		}
		s.MaxTimestamp = max(s.MaxTimestamp, s.DeletedAt)
		s.MaxTimestampUnknown = false
	}
	ps.stats, ps.statsLoaded = s, true
	return nil
}

// scanMaxTimestamp returns the highest timestamp stored in the rows of ps.
func (st *stage) scanMaxTimestamp(ps *partStage) (int64, error) {
	it, err := st.r.NewIter(storage.PartitionRowsSpan(st.table, ps.token, ps.pk))
	if err != nil {
		return 0, err
	}
	defer it.Close()
	m := storage.NoTimestamp
	for it.First(); it.Valid(); it.Next() {
		r, err := storage.DecodeRow(it.Value())
		if err != nil {
			return 0, fmt.Errorf("row %x: %w", it.Key(), err)
		}
		m = max(m, r.MarkerTS, r.DeletedAt)
		for i := range r.Cells {
			m = max(m, r.Cells[i].Timestamp)
		}
	}
	return m, it.Error()
}

// Write timestamps.
//
// Last-write-wins by timestamp decides which of two writes of a cell
// survives, and clients and coordinators take timestamps from clocks that
// may be skewed. Where cosmosd promises the order of the log instead
// (conditions, read-modify-write), a timestamp that contradicts that order
// makes an applied write invisible: a conditional UPDATE whose condition
// held but whose timestamp was below the cell's (a client or coordinator
// clock behind the one that wrote it) answered [applied] = true and left
// the old value in place. So the state machine assigns those timestamps at
// apply time, as a pure function of the command and the state (never the
// local clock: every replica must assign the same). With floor(p) one more
// than the logical partition's MaxTimestamp before the command:
//
//   - A conditional command stamps all its mutations with one timestamp,
//     max(now_micros, floor(p)): after everything in the partition, so the
//     writes the condition allowed win, and after each other in log order.
//     Any client timestamp is ignored, as Cassandra ignores it for Paxos,
//     whose ballot (the coordinator's clock, raised above the last ballot
//     seen) is the same rule; USING TIMESTAMP is refused by the executor.
//   - COORDINATOR timestamps become max(ts, floor(p)): a server-stamped
//     write is ordered after what was applied before it, so a coordinator
//     whose clock is behind does not lose writes silently.
//   - CLIENT and STATEMENT timestamps are kept: the client chose
//     last-write-wins by its own clock, as in Cassandra.
//   - A read-modify-write operation (counter, collection update) reads the
//     current value and writes above the cell it read, and, unless the
//     statement set USING TIMESTAMP, also at floor(p) or later, so that no
//     deletion it did not see (a row or column tombstone from a clock
//     ahead) can shadow the value it computed.
//
// All mutations of one partition with one timestamp keep one timestamp
// (floor(p) is taken before the command), so a batch's statements still
// share theirs. The cost: one write stamped far in the future (a client
// clock ahead, USING TIMESTAMP) carries the partition's later conditional
// and server-stamped writes past it, and client-stamped writes from
// correct clocks lose to those until real time catches up, as they would
// lose to the future write itself.

// floor returns the lowest timestamp above everything stored in ps.
func (st *stage) floor(ps *partStage) (int64, error) {
	if err := st.loadStats(ps); err != nil {
		return 0, err
	}
	return after(ps.stats.MaxTimestamp), nil
}

// after returns ts+1 without overflowing into NoTimestamp.
func after(ts int64) int64 {
	if ts == math.MaxInt64 {
		return ts
	}
	return ts + 1
}

// stampConditional fixes the timestamp of a conditional command.
func (st *stage) stampConditional(req *kvpb.WriteRequest) error {
	ts := req.GetNowMicros()
	for _, m := range req.GetMutations() {
		f, err := st.floor(st.part(m.GetToken(), m.GetPk()))
		if err != nil {
			return err
		}
		ts = max(ts, f)
	}
	st.conditional, st.casTS = true, ts
	return nil
}

// timestamp returns the timestamp of mutation m's writes to ps.
func (st *stage) timestamp(ps *partStage, m *kvpb.Mutation) (int64, error) {
	switch {
	case st.conditional:
		return st.casTS, nil
	case m.GetTimestampSource() != kvpb.Mutation_COORDINATOR:
		return m.GetTimestamp(), nil
	}
	f, err := st.floor(ps)
	return max(m.GetTimestamp(), f), err
}

// stored returns the stored row at ck (nil if none); the result is cached
// and owned by the stage.
func (st *stage) stored(ps *partStage, ck []byte) (*storage.Row, error) {
	if r, ok := ps.storedCached[string(ck)]; ok {
		return r, nil
	}
	raw, ok, err := st.r.Get(storage.RowKey(st.table, ps.token, ps.pk, ck))
	if err != nil {
		return nil, err
	}
	var row *storage.Row
	if ok {
		r, err := storage.DecodeRow(raw)
		if err != nil {
			return nil, fmt.Errorf("row %x: %w", ck, err)
		}
		row = &r
	}
	ps.storedCached[string(ck)] = row
	return row, nil
}

// current returns the live view of the row at ck including what this
// command has staged so far, for read-modify-write operations and conditions.
func (st *stage) current(ps *partStage, ck []byte) (storage.Row, bool, error) {
	if err := st.loadStats(ps); err != nil {
		return storage.Row{}, false, err
	}
	row := storage.NewRow()
	stored, err := st.stored(ps, ck)
	if err != nil {
		return storage.Row{}, false, err
	}
	if stored != nil {
		row.Merge(stored)
	}
	if upd, ok := ps.rows[string(ck)]; ok {
		row.Merge(upd)
	}
	r, ok := row.Resolve(st.now, max(ps.stats.DeletedAt, ps.deletedAt))
	return r, ok, nil
}

// pending returns the staged update row at ck, creating it.
func (ps *partStage) pending(ck []byte) *storage.Row {
	if r, ok := ps.rows[string(ck)]; ok {
		return r
	}
	r := storage.NewRow()
	ps.rows[string(ck)] = &r
	ps.rowOrder = append(ps.rowOrder, string(ck))
	return &r
}

// add stages one mutation.
func (st *stage) add(m *kvpb.Mutation) error {
	ps := st.part(m.GetToken(), m.GetPk())
	ts, err := st.timestamp(ps, m)
	if err != nil {
		return err
	}
	ps.maxTS = max(ps.maxTS, ts)
	switch m.GetKind() {
	case kvpb.Mutation_UPSERT:
		var expiry int64
		if m.GetTtl() > 0 {
			expiry = st.now + int64(m.GetTtl())
		}
		upd := storage.NewRow()
		if m.GetMarker() {
			upd.MarkerTS, upd.MarkerTTL, upd.MarkerExpiry = ts, m.GetTtl(), expiry
		}
		ops := m.GetOps()
		if distinctColumns(ops) {
			// The usual case, one op per column: no op reads what another
			// wrote, so the cells merge in one step, sorted by column as
			// rows keep them.
			upd.Cells = make([]storage.Cell, 0, len(ops))
			for _, op := range ops {
				c, err := st.cell(ps, m, op, ts, expiry)
				if err != nil {
					return err
				}
				ps.maxTS = max(ps.maxTS, c.Timestamp)
				upd.Cells = append(upd.Cells, c)
			}
			slices.SortFunc(upd.Cells, func(a, b storage.Cell) int { return cmp.Compare(a.Column, b.Column) })
			ps.pending(m.GetCk()).Merge(&upd)
			break
		}
		for _, op := range ops {
			c, err := st.cell(ps, m, op, ts, expiry)
			if err != nil {
				return err
			}
			ps.maxTS = max(ps.maxTS, c.Timestamp)
			// Ops on one column within a mutation apply in order: a
			// read-modify-write op sees the ones before it.
			single := storage.NewRow()
			single.Cells = []storage.Cell{c}
			ps.pending(m.GetCk()).Merge(&single)
		}
		ps.pending(m.GetCk()).Merge(&upd)
	case kvpb.Mutation_DELETE_ROW:
		del := storage.NewRow()
		del.DeletedAt, del.DeletedLocal = ts, st.now
		ps.pending(m.GetCk()).Merge(&del)
	case kvpb.Mutation_DELETE_PARTITION:
		ps.deletedAt = max(ps.deletedAt, ts)
	case kvpb.Mutation_DELETE_RANGE:
		ps.ranges = append(ps.ranges, rangeDeletion{start: m.GetRangeStart(), end: m.GetRangeEnd(), ts: ts})
	default:
		return reject(kvpb.Error_INVALID, "unknown mutation kind %d", m.GetKind())
	}
	return nil
}

// distinctColumns reports whether no two of ops write the same column
// (false for long lists, which take the op-by-op path).
func distinctColumns(ops []*kvpb.ColumnOp) bool {
	if len(ops) > 64 {
		return false
	}
	for i := 1; i < len(ops); i++ {
		for j := range i {
			if ops[i].GetColumn() == ops[j].GetColumn() {
				return false
			}
		}
	}
	return true
}

// cell computes the cell an operation writes at ts. Read-modify-write
// operations (counters, collection updates) read the current value,
// including what the command staged before; the new cell's timestamp is
// raised above the current one, and above the partition's floor unless the
// statement set it (see "Write timestamps"), so the merge keeps it.
func (st *stage) cell(ps *partStage, m *kvpb.Mutation, op *kvpb.ColumnOp, ts, expiry int64) (storage.Cell, error) {
	c := storage.Cell{Column: op.GetColumn(), Timestamp: ts, TTL: m.GetTtl(), Expiry: expiry}
	switch op.GetKind() {
	case kvpb.ColumnOp_SET:
		c.Value = op.GetValue()
		if c.Value == nil {
			c.Value = []byte{}
		}
		return c, nil
	case kvpb.ColumnOp_DELETE:
		return storage.Cell{Column: op.GetColumn(), Timestamp: ts, Tombstone: true, Expiry: st.now}, nil
	}
	if st.conditional || m.GetTimestampSource() != kvpb.Mutation_STATEMENT {
		f, err := st.floor(ps)
		if err != nil {
			return c, err
		}
		c.Timestamp = max(c.Timestamp, f)
	}
	row, _, err := st.current(ps, m.GetCk())
	if err != nil {
		return c, err
	}
	cur := row.Cell(op.GetColumn())
	if cur != nil && cur.Timestamp >= c.Timestamp {
		c.Timestamp = after(cur.Timestamp)
	}
	var curVal []byte
	if cur != nil {
		curVal = cur.Value
	}
	if op.GetKind() == kvpb.ColumnOp_COUNTER_ADD {
		delta, err := int64Value(op.GetValue())
		if err != nil {
			return c, err
		}
		var base int64
		if len(curVal) > 0 {
			if base, err = int64Value(curVal); err != nil {
				return c, err
			}
		}
		c.Value = binary.BigEndian.AppendUint64(nil, uint64(base+delta))
		// Counters never expire.
		c.TTL, c.Expiry = 0, 0
		return c, nil
	}
	t, err := cqltype.Parse(op.GetType())
	if err != nil {
		return c, reject(kvpb.Error_INVALID, "column %d: bad type %q: %v", op.GetColumn(), op.GetType(), err)
	}
	v, err := mergeCollection(t, op, curVal)
	if err != nil {
		return c, err
	}
	if v == nil {
		// An empty collection is null in CQL.
		return storage.Cell{Column: op.GetColumn(), Timestamp: c.Timestamp, Tombstone: true, Expiry: st.now}, nil
	}
	c.Value = v
	collectionExpiry(&c, cur, op.GetKind())
	return c, nil
}

func int64Value(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, reject(kvpb.Error_INVALID, "expected 8-byte counter value, got %d bytes", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// finish turns the staged changes into writes and checks the logical
// partition size limit (0 = none).
func (st *stage) finish(maxPartitionBytes int64) ([]write, error) {
	var out []write
	for _, ps := range st.order {
		if err := st.loadStats(ps); err != nil {
			return nil, err
		}
		oldBytes := ps.stats.Bytes
		stats := ps.stats
		stats.MaxTimestamp = max(stats.MaxTimestamp, ps.maxTS)
		if ps.deletedAt > stats.DeletedAt {
			stats.DeletedAt, stats.DeletedLocal = ps.deletedAt, st.now
		}
		prefix := storage.PartitionRowsSpan(st.table, ps.token, ps.pk).Start
		touched := map[string]bool{}
		var touchedOrder []string
		touch := func(ck string) {
			if !touched[ck] {
				touched[ck] = true
				touchedOrder = append(touchedOrder, ck)
			}
		}
		// Deletions rewrite every stored row they cover.
		if ps.deletedAt != storage.NoTimestamp {
			if err := st.eachStored(ps, storage.PartitionRowsSpan(st.table, ps.token, ps.pk), touch); err != nil {
				return nil, err
			}
		}
		for _, rd := range ps.ranges {
			span := SliceSpan(prefix, rd.start, rd.end)
			if err := st.eachStored(ps, span, touch); err != nil {
				return nil, err
			}
			for _, ck := range ps.rowOrder {
				if span.Contains(append(append([]byte(nil), prefix...), ck...)) && ck != "" {
					touch(ck)
				}
			}
		}
		for _, ck := range ps.rowOrder {
			touch(ck)
		}
		// Deterministic write order.
		sort.Strings(touchedOrder)
		for _, ck := range touchedOrder {
			stored, err := st.stored(ps, []byte(ck))
			if err != nil {
				return nil, err
			}
			row := storage.NewRow()
			if stored != nil {
				row.Merge(stored)
			}
			if upd, ok := ps.rows[ck]; ok {
				row.Merge(upd)
			}
			key := append(append([]byte(nil), prefix...), ck...)
			for _, rd := range ps.ranges {
				if ck != "" && SliceSpan(prefix, rd.start, rd.end).Contains(key) && rd.ts > row.DeletedAt {
					del := storage.NewRow()
					del.DeletedAt, del.DeletedLocal = rd.ts, st.now
					row.Merge(&del)
				}
			}
			purgeBelow(&row, stats.DeletedAt)
			keep := row.Collect(st.now, st.gcGrace)
			if stored != nil {
				stats.Bytes -= int64(len(key) + storage.RowSize(stored))
				stats.Rows--
			}
			if keep {
				v := storage.AppendRow(nil, &row)
				stats.Bytes += int64(len(key) + len(v))
				stats.Rows++
				out = append(out, write{key: key, value: v})
			} else if stored != nil {
				out = append(out, write{key: key})
			}
		}
		if stats.DeletedAt != storage.NoTimestamp && stats.DeletedLocal+st.gcGrace < st.now {
			stats.DeletedAt, stats.DeletedLocal = storage.NoTimestamp, 0
		}
		if maxPartitionBytes > 0 && stats.Bytes > maxPartitionBytes && stats.Bytes > oldBytes {
			e := Errorf(kvpb.Error_PARTITION_TOO_LARGE,
				"logical partition would grow to %d bytes, over the limit of %d bytes", stats.Bytes, maxPartitionBytes)
			e.PB.Current = &kvpb.Descriptor{Start: ps.token, End: ps.token}
			return nil, rejection{e}
		}
		skey := storage.StatsKey(st.table, ps.token, ps.pk)
		if stats.IsEmpty() {
			if !ps.stats.IsEmpty() {
				out = append(out, write{key: skey})
			}
		} else {
			out = append(out, write{key: skey, value: storage.AppendStats(nil, stats)})
		}
	}
	return out, nil
}

// eachStored loads every stored row in span into the stage's cache and
// calls touch with its clustering key.
func (st *stage) eachStored(ps *partStage, span storage.Span, touch func(string)) error {
	it, err := st.r.NewIter(span)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k, err := storage.DecodeRowKey(it.Key())
		if err != nil {
			return err
		}
		ck := string(k.CK)
		if _, ok := ps.storedCached[ck]; !ok {
			r, err := storage.DecodeRow(append([]byte(nil), it.Value()...))
			if err != nil {
				return fmt.Errorf("row %x: %w", it.Key(), err)
			}
			ps.storedCached[ck] = &r
		}
		touch(ck)
	}
	return it.Error()
}

// purgeBelow drops what a partition deletion at ts shadows.
func purgeBelow(r *storage.Row, ts int64) {
	if ts == storage.NoTimestamp {
		return
	}
	kept := r.Cells[:0]
	for _, c := range r.Cells {
		if c.Timestamp > ts {
			kept = append(kept, c)
		}
	}
	r.Cells = kept
	if r.MarkerTS != storage.NoTimestamp && r.MarkerTS <= ts {
		r.MarkerTS, r.MarkerTTL, r.MarkerExpiry = storage.NoTimestamp, 0, 0
	}
	if r.DeletedAt != storage.NoTimestamp && r.DeletedAt <= ts {
		r.DeletedAt, r.DeletedLocal = storage.NoTimestamp, 0
	}
}

// SliceSpan converts a clustering range of one partition to a key span.
// prefix is the partition's row-key prefix (which is also the key of its
// static row). Bound keys are clustering-key prefixes: an inclusive bound
// includes every key that starts with it, an exclusive one excludes them.
// The static row is never inside a slice.
func SliceSpan(prefix []byte, start, end *kvpb.Bound) storage.Span {
	join := func(k []byte) []byte { return append(append(make([]byte, 0, len(prefix)+len(k)+1), prefix...), k...) }
	var s, e []byte
	switch {
	case start == nil || len(start.GetKey()) == 0:
		s = append(join(nil), 0x00)
	case start.GetInclusive():
		s = join(start.GetKey())
	default:
		s = storage.PrefixEnd(join(start.GetKey()))
	}
	switch {
	case end == nil || len(end.GetKey()) == 0:
		e = storage.PrefixEnd(prefix)
	case end.GetInclusive():
		e = storage.PrefixEnd(join(end.GetKey()))
	default:
		e = join(end.GetKey())
	}
	return storage.Span{Start: s, End: e}
}
