package exec

import (
	"bytes"
	"testing"

	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

func samePagingState(a, b *pagingState) bool {
	return a.keyIndex == b.keyIndex && a.from == b.from && bytes.Equal(a.resume, b.resume) &&
		a.partRows == b.partRows && a.emitted == b.emitted && a.offset == b.offset
}

func TestPagingStateRoundTrip(t *testing.T) {
	for _, ps := range []*pagingState{
		{},
		{keyIndex: 3, from: -1 << 63, resume: []byte{1, 2, 3}, partRows: 7, emitted: 100, offset: 5},
		{from: 1<<63 - 1, resume: make([]byte, 300)},
	} {
		got, err := decodePagingState(ps.encode())
		if err != nil {
			t.Fatalf("decode(encode(%+v)): %v", ps, err)
		}
		if !samePagingState(got, ps) {
			t.Fatalf("round trip: got %+v, want %+v", got, ps)
		}
	}
	negative := []byte{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0, 0, 0} // keyIndex 2^63
	negOffset := []byte{1, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}
	for _, bad := range [][]byte{nil, {}, {2}, {1}, {1, 0, 0, 5, 'x'}, negative, negOffset} {
		if _, err := decodePagingState(bad); err == nil {
			t.Fatalf("decodePagingState(%x) accepted", bad)
		}
	}
}

// FuzzDecodePagingState feeds client-supplied paging states to the
// decoder: it must never panic, and what it accepts must encode back to a
// state that decodes the same.
func FuzzDecodePagingState(f *testing.F) {
	f.Add((&pagingState{keyIndex: 1, from: 42, resume: []byte("key"), partRows: 2, emitted: 9}).encode())
	f.Add([]byte{1})
	f.Add([]byte{2, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var ps *pagingState
		var err error
		fuzzcheck.Allocs(t, fuzzcheck.Bound(len(b), 16), "decodePagingState", func() { ps, err = decodePagingState(b) })
		if err != nil {
			return
		}
		if ps.keyIndex < 0 || ps.partRows < 0 || ps.emitted < 0 || ps.offset < 0 {
			t.Fatalf("decodePagingState(%x) = %+v: negative count", b, ps)
		}
		again, err := decodePagingState(ps.encode())
		if err != nil {
			t.Fatalf("re-decode of %x: %v", b, err)
		}
		if !samePagingState(ps, again) {
			t.Fatalf("re-decode: %+v, want %+v", again, ps)
		}
	})
}
