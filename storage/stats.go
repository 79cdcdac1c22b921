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
//
// MaxTimestamp is the highest write timestamp ever applied to the partition
// (cells, markers, row, range and partition deletions; NoTimestamp when
// none), so that the state machine can stamp a conditional write or a
// read-modify-write above everything stored without reading every row.
// Invariant: every timestamp stored in the partition's rows and DeletedAt
// is <= MaxTimestamp. It is not part of IsEmpty: a partition with nothing
// stored has nothing a new write must win over, so the record may go.
// MaxTimestampUnknown is set when the record was written by a version that
// did not keep MaxTimestamp; the write path then recomputes it from the rows.
type PartitionStats struct {
	Bytes               int64
	Rows                int64
	DeletedAt           int64
	DeletedLocal        int64
	MaxTimestamp        int64
	MaxTimestampUnknown bool
}

// EmptyStats is the stats of a partition with nothing stored.
func EmptyStats() PartitionStats {
	return PartitionStats{DeletedAt: NoTimestamp, MaxTimestamp: NoTimestamp}
}

// IsEmpty reports whether nothing needs storing.
func (s PartitionStats) IsEmpty() bool {
	return s.Rows == 0 && s.Bytes == 0 && s.DeletedAt == NoTimestamp
}

// Stats encoding, version 1:
//
//	byte   version (1)
//	varint bytes, varint rows
//	byte   1 if a partition deletion follows, else 0
//	[deletion] varint ts, varint local time
//	[max timestamp] byte 1, varint ts
//
// The max timestamp is a trailing extension of the first layout rather
// than a new version: decoders that predate it stop after the deletion and
// ignore it, so a node rolled back to such a version still reads every
// record (and drops the extension when it rewrites one, which only makes
// it unknown again). A record without it decodes with MaxTimestampUnknown.
const (
	statsVersion = 1
	statsHasMax  = 1
)

// AppendStats encodes s. A stats value with MaxTimestampUnknown is encoded
// without the max timestamp.
func AppendStats(dst []byte, s PartitionStats) []byte {
	dst = append(dst, statsVersion)
	dst = binary.AppendVarint(dst, s.Bytes)
	dst = binary.AppendVarint(dst, s.Rows)
	if s.DeletedAt == NoTimestamp {
		dst = append(dst, 0)
	} else {
		dst = append(dst, 1)
		dst = binary.AppendVarint(dst, s.DeletedAt)
		dst = binary.AppendVarint(dst, s.DeletedLocal)
	}
	if s.MaxTimestampUnknown {
		return dst
	}
	dst = append(dst, statsHasMax)
	return binary.AppendVarint(dst, s.MaxTimestamp)
}

// DecodeStats decodes stats written by AppendStats, including records
// without the max timestamp (MaxTimestampUnknown).
func DecodeStats(b []byte) (PartitionStats, error) {
	d := decoder{b: b}
	s := EmptyStats()
	if v := d.byte(); v != statsVersion {
		return s, fmt.Errorf("%w: stats version %d", ErrCorruptRow, v)
	}
	s.Bytes = d.varint()
	s.Rows = d.varint()
	if d.byte() == 1 {
		s.DeletedAt = d.varint()
		s.DeletedLocal = d.varint()
	}
	switch {
	case d.err != nil:
	case len(d.b) == 0:
		s.MaxTimestampUnknown = true
	case d.byte() == statsHasMax:
		s.MaxTimestamp = d.varint()
		if d.err == nil && len(d.b) != 0 {
			return EmptyStats(), fmt.Errorf("%w: %d trailing bytes in stats", ErrCorruptRow, len(d.b))
		}
	default:
		return EmptyStats(), fmt.Errorf("%w: unknown stats extension", ErrCorruptRow)
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
