package exec

import (
	"math"
	"strings"
	"testing"
)

func TestProductSaturates(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		want  int64
	}{
		{nil, 1},
		{[]int{120, 120, 120}, 1_728_000},
		{[]int{5, 0, 1 << 30}, 0},
		{[]int{1 << 31, 1 << 31, 1 << 31}, math.MaxInt64},
		{[]int{math.MaxInt32, math.MaxInt32, math.MaxInt32, 2}, math.MaxInt64},
	} {
		if got := product(tc.sizes...); got != tc.want {
			t.Errorf("product(%v) = %d, want %d", tc.sizes, got, tc.want)
		}
	}
	err := checkProduct("Partition key", math.MaxInt64, 100, "max_partition_key_restrictions_per_query")
	if err == nil || !strings.Contains(err.Error(), "more than 9223372036854775807 is greater than the maximum of 100") {
		t.Fatalf("saturated product: %v", err)
	}
}

// TestPreparedCacheBoundsBytes: the prepared statement cache evicts by
// estimated memory as well as by count, and a statement too large for it
// is not cached.
func TestPreparedCacheBoundsBytes(t *testing.T) {
	const budget = 1 << 20
	c := newPreparedCache(10_000, budget)
	big := strings.Repeat("x", 4<<10) // cost 1 KiB + 128 KiB
	for i := 0; i < 100; i++ {
		c.put(&Prepared{ID: []byte{byte(i)}, Query: big + string(rune('a'+i%26))})
		if c.bytes > budget {
			t.Fatalf("after %d statements the cache holds %d bytes, over its %d", i+1, c.bytes, budget)
		}
	}
	if n := c.order.Len(); n == 0 || n > budget/(32*4<<10) {
		t.Fatalf("%d statements cached", n)
	}
	if _, ok := c.get([]byte{99}); !ok {
		t.Fatal("the newest statement was evicted")
	}
	if c.fits(&Prepared{Query: strings.Repeat("x", budget/32)}) {
		t.Fatal("a statement costing more than the whole cache fits")
	}
}
