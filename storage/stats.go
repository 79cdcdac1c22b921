package storage

import (
	"encoding/binary"
	"fmt"
)

// PartitionStats is what the store keeps per logical partition under its
// stats key, maintained in the same batch as every write to the partition.
//
// Bytes counts the stored key and value bytes of the partition's rows, Rows
// the stored row keys (including rows kept only as tombstones until gc).
// DeletedAt is the partition deletion timestamp (NoTimestamp when none):
// every cell written at or before it is deleted. DeletedLocal is when that
// deletion was applied, in seconds, for gc.
type PartitionStats struct {
	Bytes        int64
	Rows         int64
	DeletedAt    int64
	DeletedLocal int64
}

// EmptyStats is the stats of a partition with nothing stored.
func EmptyStats() PartitionStats { return PartitionStats{DeletedAt: NoTimestamp} }

// IsEmpty reports whether nothing needs storing.
func (s PartitionStats) IsEmpty() bool {
	return s.Rows == 0 && s.Bytes == 0 && s.DeletedAt == NoTimestamp
}

// AppendStats encodes s.
func AppendStats(dst []byte, s PartitionStats) []byte {
	dst = append(dst, 1) // version
	dst = binary.AppendVarint(dst, s.Bytes)
	dst = binary.AppendVarint(dst, s.Rows)
	if s.DeletedAt == NoTimestamp {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	dst = binary.AppendVarint(dst, s.DeletedAt)
	return binary.AppendVarint(dst, s.DeletedLocal)
}

// DecodeStats decodes stats written by AppendStats.
func DecodeStats(b []byte) (PartitionStats, error) {
	d := decoder{b: b}
	s := EmptyStats()
	if v := d.byte(); v != 1 {
		return s, fmt.Errorf("%w: stats version %d", ErrCorruptRow, v)
	}
	s.Bytes = d.varint()
	s.Rows = d.varint()
	if d.byte() == 1 {
		s.DeletedAt = d.varint()
		s.DeletedLocal = d.varint()
	}
	if d.err != nil {
		return EmptyStats(), d.err
	}
	return s, nil
}

// GetStats reads the stats of a logical partition (EmptyStats if none).
func GetStats(r Reader, table uint64, token int64, pk []byte) (PartitionStats, error) {
	v, ok, err := r.Get(StatsKey(table, token, pk))
	if err != nil || !ok {
		return EmptyStats(), err
	}
	return DecodeStats(v)
}
