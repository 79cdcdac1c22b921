package fuzzcheck

import "testing"

var sink []byte

// TestAllocsCatchesLargeAllocation: the check sees a megabyte-sized
// allocation and lets a small one through.
func TestAllocsCatchesLargeAllocation(t *testing.T) {
	Allocs(t, Bound(10, 64), "small", func() { sink = make([]byte, 100) })
	ft := &fakeT{TB: t}
	Allocs(ft, Bound(10, 64), "large", func() { sink = make([]byte, 4<<20) })
	if !ft.failed {
		t.Fatal("a 4 MiB allocation for a 10-byte input passed")
	}
}

type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }
