package storage

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// NoTimestamp marks an absent timestamp (no marker, no deletion).
const NoTimestamp int64 = math.MinInt64

// Cell is one column's value in a row, as Cassandra models it: a value with
// the write timestamp that orders it against other writes of the cell, and
// an optional expiry. A tombstone is a cell deleted at Timestamp.
type Cell struct {
	Column uint32
	// Timestamp of the write in microseconds since the epoch (client- or
	// coordinator-assigned, USING TIMESTAMP).
	Timestamp int64
	// TTL is the time to live in seconds the cell was written with, 0 for
	// none; Expiry is when it dies, in seconds since the epoch. For a
	// tombstone, Expiry is when it was written (Cassandra's local deletion
	// time), which is what tombstone collection measures gc grace from.
	TTL    int32
	Expiry int64
	// Tombstone reports a deleted cell; Value is then empty.
	Tombstone bool
	// Value is the CQL-serialized value.
	Value []byte
}

// Live reports whether c holds a value at time now (seconds) given that
// everything at or before deletedAt is deleted.
func (c *Cell) Live(now, deletedAt int64) bool {
	return !c.Tombstone && c.Timestamp > deletedAt && (c.Expiry == 0 || c.Expiry > now)
}

// Row is the stored form of one row (or of the static row of a partition).
//
// Invariants: Cells are sorted by Column with at most one cell per column.
// MarkerTS is NoTimestamp when the row has no primary-key liveness marker
// (rows created by UPDATE only live through their cells, as in Cassandra).
// DeletedAt is NoTimestamp unless the row was deleted as a whole.
type Row struct {
	MarkerTS     int64
	MarkerTTL    int32
	MarkerExpiry int64
	DeletedAt    int64
	// DeletedLocal is when the row deletion was applied (seconds), for gc.
	DeletedLocal int64
	Cells        []Cell
}

// NewRow returns an empty row.
func NewRow() Row { return Row{MarkerTS: NoTimestamp, DeletedAt: NoTimestamp} }

// Cell returns the cell of column col, or nil.
func (r *Row) Cell(col uint32) *Cell {
	i, ok := slices.BinarySearchFunc(r.Cells, col, func(c Cell, col uint32) int { return cmp.Compare(c.Column, col) })
	if !ok {
		return nil
	}
	return &r.Cells[i]
}

// Live reports whether the row exists at time now, given the partition
// deletion time pdel (NoTimestamp when none).
func (r *Row) Live(now, pdel int64) bool {
	del := max(r.DeletedAt, pdel)
	if r.MarkerTS != NoTimestamp && r.MarkerTS > del && (r.MarkerExpiry == 0 || r.MarkerExpiry > now) {
		return true
	}
	for i := range r.Cells {
		if r.Cells[i].Live(now, del) {
			return true
		}
	}
	return false
}

// Resolve returns the live view of r at time now under partition deletion
// pdel: dead cells dropped, deletion info cleared. ok is false when nothing
// of the row is live. The result shares value bytes with r.
func (r *Row) Resolve(now, pdel int64) (Row, bool) {
	del := max(r.DeletedAt, pdel)
	out := NewRow()
	if r.MarkerTS != NoTimestamp && r.MarkerTS > del && (r.MarkerExpiry == 0 || r.MarkerExpiry > now) {
		out.MarkerTS, out.MarkerTTL, out.MarkerExpiry = r.MarkerTS, r.MarkerTTL, r.MarkerExpiry
	}
	for i := range r.Cells {
		if r.Cells[i].Live(now, del) {
			out.Cells = append(out.Cells, r.Cells[i])
		}
	}
	return out, out.MarkerTS != NoTimestamp || len(out.Cells) > 0
}

// winner reports whether cell a supersedes cell b under Cassandra's
// reconciliation: the higher timestamp wins; on a tie a tombstone wins, then
// the later expiry, then the greater value, so every replica picks the same.
func winner(a, b *Cell) bool {
	if a.Timestamp != b.Timestamp {
		return a.Timestamp > b.Timestamp
	}
	if a.Tombstone != b.Tombstone {
		return a.Tombstone
	}
	if a.Expiry != b.Expiry {
		// A non-expiring cell (0) counts as latest.
		if a.Expiry == 0 || b.Expiry == 0 {
			return a.Expiry == 0
		}
		return a.Expiry > b.Expiry
	}
	return bytes.Compare(a.Value, b.Value) > 0
}

// Merge folds update into r as Cassandra reconciles writes: per cell the
// winner by timestamp, the newest marker and the newest deletion. Cells the
// row deletion shadows are dropped, since no later read can see them.
func (r *Row) Merge(update *Row) {
	if update.MarkerTS != NoTimestamp && (r.MarkerTS == NoTimestamp || update.MarkerTS >= r.MarkerTS) {
		r.MarkerTS, r.MarkerTTL, r.MarkerExpiry = update.MarkerTS, update.MarkerTTL, update.MarkerExpiry
	}
	if update.DeletedAt > r.DeletedAt {
		r.DeletedAt, r.DeletedLocal = update.DeletedAt, update.DeletedLocal
	}
	if len(update.Cells) == 0 {
		// A marker or a deletion alone: the cells stay, less what the
		// deletion shadows.
		r.purgeShadowed()
		return
	}
	merged := make([]Cell, 0, len(r.Cells)+len(update.Cells))
	i, j := 0, 0
	for i < len(r.Cells) || j < len(update.Cells) {
		switch {
		case j == len(update.Cells) || (i < len(r.Cells) && r.Cells[i].Column < update.Cells[j].Column):
			merged = append(merged, r.Cells[i])
			i++
		case i == len(r.Cells) || update.Cells[j].Column < r.Cells[i].Column:
			merged = append(merged, update.Cells[j])
			j++
		default:
			if winner(&update.Cells[j], &r.Cells[i]) {
				merged = append(merged, update.Cells[j])
			} else {
				merged = append(merged, r.Cells[i])
			}
			i++
			j++
		}
	}
	r.Cells = merged
	r.purgeShadowed()
}

func (r *Row) purgeShadowed() {
	if r.DeletedAt == NoTimestamp {
		return
	}
	r.Cells = slices.DeleteFunc(r.Cells, func(c Cell) bool { return c.Timestamp <= r.DeletedAt })
	if r.MarkerTS != NoTimestamp && r.MarkerTS <= r.DeletedAt {
		r.MarkerTS, r.MarkerTTL, r.MarkerExpiry = NoTimestamp, 0, 0
	}
}

// Collect drops what no reader can ever need again at time now: expired
// cells and tombstones older than gcGrace seconds, and a row deletion older
// than gcGrace. It reports whether anything is left to store.
//
// Collecting a tombstone early would let an older write (USING TIMESTAMP in
// the past) resurrect data, which is why gc grace exists; cosmosd totally
// orders the writes of a partition, so the default grace only has to cover
// clients that send old timestamps.
func (r *Row) Collect(now int64, gcGrace int64) bool {
	r.Cells = slices.DeleteFunc(r.Cells, func(c Cell) bool {
		if c.Tombstone {
			return c.Expiry+gcGrace < now
		}
		// An expired cell becomes a tombstone at its expiry.
		return c.Expiry != 0 && c.Expiry+gcGrace < now
	})
	if r.MarkerTS != NoTimestamp && r.MarkerExpiry != 0 && r.MarkerExpiry+gcGrace < now {
		r.MarkerTS, r.MarkerTTL, r.MarkerExpiry = NoTimestamp, 0, 0
	}
	if r.DeletedAt != NoTimestamp && r.DeletedLocal+gcGrace < now {
		r.DeletedAt, r.DeletedLocal = NoTimestamp, 0
	}
	return r.MarkerTS != NoTimestamp || r.DeletedAt != NoTimestamp || len(r.Cells) > 0
}

// Row encoding, version 1:
//
//	byte   version (1)
//	byte   flags: 1 marker, 2 deletion
//	[marker]   varint ts, varint ttl, varint expiry
//	[deletion] varint ts, varint local time
//	uvarint n cells, each:
//	  uvarint column, byte flags (1 tombstone, 2 ttl), varint ts,
//	  [ttl] varint ttl, varint expiry,   (tombstone: varint expiry)
//	  uvarint len, value bytes
const rowVersion = 1

const (
	rowHasMarker   = 1
	rowHasDeletion = 2
	cellTombstone  = 1
	cellHasTTL     = 2
)

// RowSize returns the length of r's encoding, len(AppendRow(nil, r)),
// without encoding it.
func RowSize(r *Row) int {
	n := 2 // version, flags
	if r.MarkerTS != NoTimestamp {
		n += varintLen(r.MarkerTS) + varintLen(int64(r.MarkerTTL)) + varintLen(r.MarkerExpiry)
	}
	if r.DeletedAt != NoTimestamp {
		n += varintLen(r.DeletedAt) + varintLen(r.DeletedLocal)
	}
	n += uvarintLen(uint64(len(r.Cells)))
	for i := range r.Cells {
		c := &r.Cells[i]
		n += uvarintLen(uint64(c.Column)) + 1 + varintLen(c.Timestamp)
		if c.TTL != 0 || c.Expiry != 0 {
			n += varintLen(int64(c.TTL)) + varintLen(c.Expiry)
		}
		n += uvarintLen(uint64(len(c.Value))) + len(c.Value)
	}
	return n
}

// uvarintLen is the length of binary.AppendUvarint's encoding of x.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// varintLen is the length of binary.AppendVarint's encoding of x (zig-zag).
func varintLen(x int64) int { return uvarintLen(uint64(x<<1) ^ uint64(x>>63)) }

// ErrCorruptRow reports stored bytes that do not decode as a row.
var ErrCorruptRow = errors.New("storage: corrupt row")

// AppendRow appends the encoding of r to dst, growing dst once.
func AppendRow(dst []byte, r *Row) []byte {
	dst = slices.Grow(dst, RowSize(r))
	var flags byte
	if r.MarkerTS != NoTimestamp {
		flags |= rowHasMarker
	}
	if r.DeletedAt != NoTimestamp {
		flags |= rowHasDeletion
	}
	dst = append(dst, rowVersion, flags)
	if flags&rowHasMarker != 0 {
		dst = binary.AppendVarint(dst, r.MarkerTS)
		dst = binary.AppendVarint(dst, int64(r.MarkerTTL))
		dst = binary.AppendVarint(dst, r.MarkerExpiry)
	}
	if flags&rowHasDeletion != 0 {
		dst = binary.AppendVarint(dst, r.DeletedAt)
		dst = binary.AppendVarint(dst, r.DeletedLocal)
	}
	dst = binary.AppendUvarint(dst, uint64(len(r.Cells)))
	for i := range r.Cells {
		c := &r.Cells[i]
		dst = binary.AppendUvarint(dst, uint64(c.Column))
		var cf byte
		if c.Tombstone {
			cf |= cellTombstone
		}
		if c.TTL != 0 || c.Expiry != 0 {
			cf |= cellHasTTL
		}
		dst = append(dst, cf)
		dst = binary.AppendVarint(dst, c.Timestamp)
		if cf&cellHasTTL != 0 {
			dst = binary.AppendVarint(dst, int64(c.TTL))
			dst = binary.AppendVarint(dst, c.Expiry)
		}
		dst = binary.AppendUvarint(dst, uint64(len(c.Value)))
		dst = append(dst, c.Value...)
	}
	return dst
}

// DecodeRow decodes a stored row. Cell values alias b.
func DecodeRow(b []byte) (Row, error) {
	d := decoder{b: b}
	r := NewRow()
	if v := d.byte(); v != rowVersion {
		return Row{}, fmt.Errorf("%w: version %d", ErrCorruptRow, v)
	}
	flags := d.byte()
	if flags&rowHasMarker != 0 {
		r.MarkerTS = d.varint()
		r.MarkerTTL = int32(d.varint())
		r.MarkerExpiry = d.varint()
	}
	if flags&rowHasDeletion != 0 {
		r.DeletedAt = d.varint()
		r.DeletedLocal = d.varint()
	}
	n := d.uvarint()
	if n > uint64(len(b)) {
		return Row{}, fmt.Errorf("%w: %d cells in %d bytes", ErrCorruptRow, n, len(b))
	}
	if n > 0 {
		r.Cells = make([]Cell, 0, n)
	}
	prev := int64(-1)
	for i := uint64(0); i < n && d.err == nil; i++ {
		var c Cell
		col := d.uvarint()
		if col > math.MaxUint32 || int64(col) <= prev {
			return Row{}, fmt.Errorf("%w: cell column %d out of order", ErrCorruptRow, col)
		}
		prev = int64(col)
		c.Column = uint32(col)
		cf := d.byte()
		c.Tombstone = cf&cellTombstone != 0
		c.Timestamp = d.varint()
		if cf&cellHasTTL != 0 {
			c.TTL = int32(d.varint())
			c.Expiry = d.varint()
		}
		c.Value = d.bytes(d.uvarint())
		r.Cells = append(r.Cells, c)
	}
	if d.err != nil {
		return Row{}, d.err
	}
	if len(d.b) != 0 {
		return Row{}, fmt.Errorf("%w: %d trailing bytes", ErrCorruptRow, len(d.b))
	}
	return r, nil
}

// decoder reads with a sticky error, so malformed input never panics.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated %s", ErrCorruptRow, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if uint64(len(d.b)) < n {
		d.fail("bytes")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
