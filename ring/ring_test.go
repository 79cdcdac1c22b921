package ring

import (
	"errors"
	"math"
	"testing"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

func desc(id uint64, start, end int64) *kvpb.Descriptor {
	return &kvpb.Descriptor{Id: id, TableId: 7, Start: start, End: end}
}

func TestEvenCoversRing(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 16, 1000} {
		ranges := Even(n)
		var descs []*kvpb.Descriptor
		for i, r := range ranges {
			descs = append(descs, desc(uint64(i+1), r[0], r[1]))
		}
		r := New(7, descs)
		if err := r.Validate(); err != nil {
			t.Fatalf("Even(%d): %v", n, err)
		}
		for _, tok := range []int64{math.MinInt64, -1, 0, 1, math.MaxInt64} {
			if r.Lookup(tok) == nil {
				t.Fatalf("Even(%d): no partition for token %d", n, tok)
			}
		}
	}
}

func TestLookupAndOverlapping(t *testing.T) {
	r := New(7, []*kvpb.Descriptor{desc(2, 0, math.MaxInt64), desc(1, math.MinInt64, -1)})
	cases := []struct {
		token int64
		want  uint64
	}{{math.MinInt64, 1}, {-1, 1}, {0, 2}, {math.MaxInt64, 2}}
	for _, c := range cases {
		if got := r.Lookup(c.token).GetId(); got != c.want {
			t.Errorf("Lookup(%d) = %d, want %d", c.token, got, c.want)
		}
	}
	if got := r.Overlapping(-5, 5); len(got) != 2 || got[0].GetId() != 1 || got[1].GetId() != 2 {
		t.Errorf("Overlapping(-5, 5) = %v", got)
	}
	if got := r.Overlapping(1, 5); len(got) != 1 || got[0].GetId() != 2 {
		t.Errorf("Overlapping(1, 5) = %v", got)
	}
	if got := r.Overlapping(5, 1); got != nil {
		t.Errorf("Overlapping(5, 1) = %v, want none", got)
	}
}

func TestValidateRejectsGapsAndOverlaps(t *testing.T) {
	cases := map[string][]*kvpb.Descriptor{
		"empty":     nil,
		"gap":       {desc(1, math.MinInt64, -2), desc(2, 0, math.MaxInt64)},
		"overlap":   {desc(1, math.MinInt64, 5), desc(2, 0, math.MaxInt64)},
		"short":     {desc(1, math.MinInt64, 5)},
		"late":      {desc(1, -3, math.MaxInt64)},
		"inverted":  {desc(1, math.MinInt64, 0), desc(2, 5, 1)},
		"duplicate": {desc(1, math.MinInt64, math.MaxInt64), desc(2, math.MinInt64, math.MaxInt64)},
	}
	for name, descs := range cases {
		t.Run(name, func(t *testing.T) {
			if err := New(7, descs).Validate(); !errors.Is(err, ErrNotCovering) {
				t.Fatalf("Validate = %v, want ErrNotCovering", err)
			}
		})
	}
}
