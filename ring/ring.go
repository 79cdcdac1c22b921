package ring

import (
	"errors"
	"fmt"
	"math"
	"sort"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// Ring is the physical partitions of one table in token order. Immutable.
type Ring struct {
	table uint64
	parts []*kvpb.Descriptor
}

// New builds a ring from descriptors of one table in any order. It does not
// require full coverage (a ring may be observed mid-change); Validate checks.
func New(table uint64, descs []*kvpb.Descriptor) *Ring {
	parts := append([]*kvpb.Descriptor(nil), descs...)
	sort.Slice(parts, func(i, j int) bool { return parts[i].GetStart() < parts[j].GetStart() })
	return &Ring{table: table, parts: parts}
}

// Table returns the table id.
func (r *Ring) Table() uint64 { return r.table }

// Partitions returns the descriptors in token order (do not modify).
func (r *Ring) Partitions() []*kvpb.Descriptor {
	if r == nil {
		return nil
	}
	return r.parts
}

// Lookup returns the partition holding token, or nil if none does.
func (r *Ring) Lookup(token int64) *kvpb.Descriptor {
	if r == nil {
		return nil
	}
	i := sort.Search(len(r.parts), func(i int) bool { return r.parts[i].GetEnd() >= token })
	if i < len(r.parts) && r.parts[i].GetStart() <= token {
		return r.parts[i]
	}
	return nil
}

// Overlapping returns the partitions intersecting [start, end] in order.
func (r *Ring) Overlapping(start, end int64) []*kvpb.Descriptor {
	if r == nil || start > end {
		return nil
	}
	i := sort.Search(len(r.parts), func(i int) bool { return r.parts[i].GetEnd() >= start })
	var out []*kvpb.Descriptor
	for ; i < len(r.parts) && r.parts[i].GetStart() <= end; i++ {
		out = append(out, r.parts[i])
	}
	return out
}

// ErrNotCovering reports a ring with a gap or an overlap.
var ErrNotCovering = errors.New("ring: partitions do not cover the token range exactly")

// Validate checks full coverage without gaps or overlaps, and that every
// partition belongs to the ring's table.
func (r *Ring) Validate() error {
	if len(r.parts) == 0 {
		return fmt.Errorf("%w: table %d has no partitions", ErrNotCovering, r.table)
	}
	next := int64(math.MinInt64)
	for i, p := range r.parts {
		if p.GetTableId() != r.table {
			return fmt.Errorf("ring of table %d holds partition %d of table %d", r.table, p.GetId(), p.GetTableId())
		}
		if p.GetStart() > p.GetEnd() {
			return fmt.Errorf("%w: partition %d has empty range [%d, %d]", ErrNotCovering, p.GetId(), p.GetStart(), p.GetEnd())
		}
		if p.GetStart() != next {
			return fmt.Errorf("%w: partition %d starts at %d, expected %d", ErrNotCovering, p.GetId(), p.GetStart(), next)
		}
		if p.GetEnd() == math.MaxInt64 {
			if i != len(r.parts)-1 {
				return fmt.Errorf("%w: partitions after %d", ErrNotCovering, p.GetId())
			}
			return nil
		}
		next = p.GetEnd() + 1
	}
	return fmt.Errorf("%w: last partition ends at %d", ErrNotCovering, next-1)
}

// Even splits the whole token range into n contiguous ranges of (nearly)
// equal width, as [start, end] pairs in order.
func Even(n int) [][2]int64 {
	if n < 1 {
		n = 1
	}
	out := make([][2]int64, n)
	width := math.MaxUint64 / uint64(n)
	start := int64(math.MinInt64)
	for i := 0; i < n; i++ {
		end := int64(math.MaxInt64)
		if i < n-1 {
			end = start + int64(width)
		}
		out[i] = [2]int64{start, end}
		if i < n-1 {
			start = end + 1
		}
	}
	return out
}
