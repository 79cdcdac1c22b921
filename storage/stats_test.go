package storage

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// oldStats is AppendStats as it was before the max timestamp existed; the
// records it wrote are still on disk and must keep decoding.
func oldStats(s PartitionStats) []byte {
	dst := []byte{1}
	dst = appendVarints(dst, s.Bytes, s.Rows)
	if s.DeletedAt == NoTimestamp {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	return appendVarints(dst, s.DeletedAt, s.DeletedLocal)
}

func appendVarints(dst []byte, vs ...int64) []byte {
	for _, v := range vs {
		dst = binary.AppendVarint(dst, v)
	}
	return dst
}

func TestStatsMaxTimestamp(t *testing.T) {
	for _, s := range []PartitionStats{
		{Bytes: 10, Rows: 2, DeletedAt: NoTimestamp, MaxTimestamp: 1_700_000_000_000_000},
		{Bytes: 1, DeletedAt: 77, DeletedLocal: 3, MaxTimestamp: 77},
		{DeletedAt: NoTimestamp, MaxTimestamp: math.MaxInt64},
		{DeletedAt: NoTimestamp, MaxTimestamp: NoTimestamp},
		{Bytes: 5, Rows: 1, DeletedAt: NoTimestamp, MaxTimestamp: NoTimestamp, MaxTimestampUnknown: true},
	} {
		got, err := DecodeStats(AppendStats(nil, s))
		if err != nil || got != s {
			t.Fatalf("stats %+v -> %+v, %v", s, got, err)
		}
	}
}

func TestStatsDecodesRecordsWithoutMaxTimestamp(t *testing.T) {
	for _, s := range []PartitionStats{
		{Bytes: 10, Rows: 2, DeletedAt: NoTimestamp},
		{Bytes: 1, DeletedAt: 77, DeletedLocal: 3},
	} {
		got, err := DecodeStats(oldStats(s))
		if err != nil {
			t.Fatalf("old record %+v: %v", s, err)
		}
		want := s
		want.MaxTimestamp, want.MaxTimestampUnknown = NoTimestamp, true
		if got != want {
			t.Fatalf("old record %+v decodes as %+v, want %+v", s, got, want)
		}
	}
	// What an older decoder reads of a new record: the same prefix, so a
	// rolled-back node still reads bytes, rows and the deletion.
	s := PartitionStats{Bytes: 9, Rows: 1, DeletedAt: 5, DeletedLocal: 6, MaxTimestamp: 99}
	enc := AppendStats(nil, s)
	old := oldStats(s)
	if string(enc[:len(old)]) != string(old) {
		t.Fatalf("new record %x does not start with the old encoding %x", enc, old)
	}
}

func TestStatsRejectsCorruptExtension(t *testing.T) {
	base := oldStats(PartitionStats{Bytes: 1, Rows: 1, DeletedAt: NoTimestamp})
	for name, b := range map[string][]byte{
		"unknown extension": append(append([]byte(nil), base...), 7, 1),
		"truncated max":     append(append([]byte(nil), base...), statsHasMax),
		"trailing bytes":    append(append([]byte(nil), base...), statsHasMax, 2, 0),
		"other version":     {2, 0, 0, 0},
	} {
		if s, err := DecodeStats(b); err == nil {
			t.Errorf("%s: %x decoded as %+v", name, b, s)
		}
	}
}

func FuzzDecodeStats(f *testing.F) {
	f.Add(AppendStats(nil, PartitionStats{Bytes: 10, Rows: 2, DeletedAt: 5, DeletedLocal: 6, MaxTimestamp: 7}))
	f.Add(oldStats(PartitionStats{Bytes: 10, Rows: 2, DeletedAt: NoTimestamp}))
	f.Add([]byte{1, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeStats(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptRow) {
				t.Fatalf("error does not wrap ErrCorruptRow: %v", err)
			}
			return
		}
		again, err := DecodeStats(AppendStats(nil, s))
		if err != nil || again != s {
			t.Fatalf("re-encode of %+v gave %+v, %v", s, again, err)
		}
	})
}
