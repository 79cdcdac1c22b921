package storage

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

func row(cells ...Cell) Row {
	r := NewRow()
	r.Cells = cells
	return r
}

func TestRowCodecRoundTrip(t *testing.T) {
	cases := []Row{
		NewRow(),
		row(Cell{Column: 1, Timestamp: 5, Value: []byte("a")}),
		{MarkerTS: 10, MarkerTTL: 3, MarkerExpiry: 99, DeletedAt: 4, DeletedLocal: 7,
			Cells: []Cell{{Column: 0, Timestamp: -3, Value: []byte{}}, {Column: 2, Timestamp: 11, TTL: 5, Expiry: 100, Value: []byte("x")}, {Column: 300, Timestamp: 12, Tombstone: true, Expiry: 50}}},
	}
	for i, r := range cases {
		got, err := DecodeRow(AppendRow(nil, &r))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(r)) {
			t.Fatalf("case %d: got %+v, want %+v", i, got, r)
		}
	}
}

func normalize(r Row) Row {
	for i := range r.Cells {
		if len(r.Cells[i].Value) == 0 {
			r.Cells[i].Value = nil
		}
	}
	if len(r.Cells) == 0 {
		r.Cells = nil
	}
	return r
}

func TestDecodeRowRejectsGarbage(t *testing.T) {
	good := AppendRow(nil, &Row{MarkerTS: 1, DeletedAt: NoTimestamp, Cells: []Cell{{Column: 1, Timestamp: 2, Value: []byte("abc")}}})
	for i := 0; i < len(good); i++ {
		if _, err := DecodeRow(good[:i]); !errors.Is(err, ErrCorruptRow) {
			t.Fatalf("truncated at %d: err = %v", i, err)
		}
	}
	if _, err := DecodeRow(append(good, 0)); !errors.Is(err, ErrCorruptRow) {
		t.Fatal("trailing byte accepted")
	}
	dup := AppendRow(nil, &Row{MarkerTS: NoTimestamp, DeletedAt: NoTimestamp, Cells: []Cell{{Column: 2}, {Column: 1}}})
	if _, err := DecodeRow(dup); !errors.Is(err, ErrCorruptRow) {
		t.Fatal("out-of-order cells accepted")
	}
}

func TestMergeReconcilesLikeCassandra(t *testing.T) {
	tests := []struct {
		name      string
		old, upd  Cell
		wantValue string
		wantTomb  bool
	}{
		{"newer wins", Cell{Column: 1, Timestamp: 1, Value: []byte("old")}, Cell{Column: 1, Timestamp: 2, Value: []byte("new")}, "new", false},
		{"older loses", Cell{Column: 1, Timestamp: 3, Value: []byte("old")}, Cell{Column: 1, Timestamp: 2, Value: []byte("new")}, "old", false},
		{"tombstone wins tie", Cell{Column: 1, Timestamp: 2, Value: []byte("v")}, Cell{Column: 1, Timestamp: 2, Tombstone: true}, "", true},
		{"greater value wins tie", Cell{Column: 1, Timestamp: 2, Value: []byte("b")}, Cell{Column: 1, Timestamp: 2, Value: []byte("a")}, "b", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := row(tc.old)
			u := row(tc.upd)
			r.Merge(&u)
			c := r.Cell(1)
			if c == nil || string(c.Value) != tc.wantValue || c.Tombstone != tc.wantTomb {
				t.Fatalf("merged cell %+v", c)
			}
		})
	}
}

func TestRowDeletionShadowsOlderCells(t *testing.T) {
	r := row(Cell{Column: 1, Timestamp: 5, Value: []byte("a")}, Cell{Column: 2, Timestamp: 15, Value: []byte("b")})
	r.MarkerTS = 5
	del := NewRow()
	del.DeletedAt, del.DeletedLocal = 10, 100
	r.Merge(&del)
	if r.Cell(1) != nil || r.MarkerTS != NoTimestamp {
		t.Fatalf("cell or marker older than the deletion survived: %+v", r)
	}
	if !r.Live(0, NoTimestamp) {
		t.Fatal("row with a newer cell must stay live")
	}
	// A late write older than the deletion stays invisible.
	late := row(Cell{Column: 3, Timestamp: 8, Value: []byte("late")})
	r.Merge(&late)
	if r.Cell(3) != nil {
		t.Fatal("write older than the row deletion resurrected")
	}
}

func TestTTLAndResolve(t *testing.T) {
	r := row(Cell{Column: 1, Timestamp: 1, TTL: 10, Expiry: 110, Value: []byte("x")}, Cell{Column: 2, Timestamp: 1, Value: []byte("y")})
	if live, ok := r.Resolve(100, NoTimestamp); !ok || len(live.Cells) != 2 {
		t.Fatalf("before expiry: %+v", live)
	}
	live, ok := r.Resolve(110, NoTimestamp)
	if !ok || len(live.Cells) != 1 || live.Cells[0].Column != 2 {
		t.Fatalf("at expiry the TTL cell must be gone: %+v", live)
	}
	if _, ok := r.Resolve(200, 5); ok {
		t.Fatal("partition deletion at 5 must hide cells written at 1")
	}
}

func TestCollectDropsOldTombstones(t *testing.T) {
	r := row(Cell{Column: 1, Timestamp: 1, Tombstone: true, Expiry: 100}, Cell{Column: 2, Timestamp: 1, TTL: 5, Expiry: 50, Value: []byte("v")})
	if !r.Collect(105, 10) || len(r.Cells) != 1 || r.Cells[0].Column != 1 {
		t.Fatalf("within grace the tombstone stays, the expired cell past grace goes: %+v", r)
	}
	if r.Collect(111, 10) {
		t.Fatalf("past grace nothing is left: %+v", r)
	}
}

func TestStatsCodec(t *testing.T) {
	for _, s := range []PartitionStats{EmptyStats(), {Bytes: 10, Rows: 2, DeletedAt: NoTimestamp}, {Bytes: 1, Rows: 0, DeletedAt: 77, DeletedLocal: 3}} {
		got, err := DecodeStats(AppendStats(nil, s))
		if err != nil || got != s {
			t.Fatalf("stats %+v -> %+v, %v", s, got, err)
		}
	}
	if _, err := DecodeStats([]byte{1, 2}); err == nil {
		t.Fatal("truncated stats accepted")
	}
}

func FuzzDecodeRow(f *testing.F) {
	f.Add(AppendRow(nil, &Row{MarkerTS: 1, DeletedAt: NoTimestamp, Cells: []Cell{{Column: 1, Timestamp: 2, Value: []byte("abc")}}}))
	f.Add(AppendRow(nil, &Row{MarkerTS: NoTimestamp, DeletedAt: 5, DeletedLocal: 6}))
	f.Add([]byte{1, 3, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Row
		var err error
		// A cell costs 64 bytes in memory and at least 4 encoded: the
		// preallocation for a claimed cell count is bounded by the input.
		fuzzcheck.Allocs(t, fuzzcheck.Bound(len(b), 80), "DecodeRow", func() { r, err = DecodeRow(b) })
		if err != nil {
			if !errors.Is(err, ErrCorruptRow) {
				t.Fatalf("error does not wrap ErrCorruptRow: %v", err)
			}
			return
		}
		// Whatever decodes re-encodes to something that decodes the same,
		// and RowSize is the encoding's length.
		enc := AppendRow(nil, &r)
		if n := RowSize(&r); n != len(enc) {
			t.Fatalf("RowSize %d, encoding %d bytes", n, len(enc))
		}
		again, err := DecodeRow(enc)
		if err != nil || !reflect.DeepEqual(normalize(again), normalize(r)) {
			t.Fatalf("re-encode mismatch: %v", err)
		}
	})
}

// TestRowSize: RowSize is the length of the encoding at every varint
// boundary of every field.
func TestRowSize(t *testing.T) {
	vals := []int64{NoTimestamp, math.MinInt64 + 1, -1 << 40, -65, -64, -1, 0, 1, 63, 64, 8191, 8192, 1 << 40, math.MaxInt64}
	for _, v := range vals {
		for _, ttl := range []int32{0, 1, 64, math.MaxInt32, -1} {
			r := Row{MarkerTS: v, MarkerTTL: ttl, MarkerExpiry: v, DeletedAt: v, DeletedLocal: v}
			for _, col := range []uint32{0, 127, 128, 16384, math.MaxUint32} {
				r.Cells = append(r.Cells, Cell{Column: uint32(col), Timestamp: v, TTL: ttl, Expiry: v,
					Value: make([]byte, col%200), Tombstone: col == 0})
			}
			if n, enc := RowSize(&r), AppendRow(nil, &r); n != len(enc) {
				t.Fatalf("row %+v: RowSize %d, encoding %d bytes", r, n, len(enc))
			}
		}
	}
}
