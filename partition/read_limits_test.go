package partition

import (
	"math"
	"strings"
	"testing"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// TestReadBytesAreBoundedWhateverTheRequestAsks: a read that asks for an
// unbounded response (max_bytes = 2^64-1) still gets at most
// MaxReadBytesLimit (plus the row that crosses it) per round trip, and
// resuming returns the rest.
func TestReadBytesAreBoundedWhateverTheRequestAsks(t *testing.T) {
	h := newHarness(t)
	const rows, rowBytes = 24, 1 << 20
	big := strings.Repeat("x", rowBytes)
	for i := int32(0); i < rows; i++ {
		h.mustWrite(upsert("p", ck(i), 1, set(1, big)))
	}
	var resume []byte
	seen := 0
	for round := 0; seen < rows; round++ {
		if round > rows {
			t.Fatal("reads make no progress")
		}
		_, resp := h.read(&kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{keyOf("p")}, Clustering: true,
			MaxBytes: math.MaxUint64, ResumeAfter: resume})
		size := 0
		for _, r := range resp.GetRows() {
			size += len(r.GetKey()) + len(r.GetValue())
		}
		if size > MaxReadBytesLimit+2*rowBytes {
			t.Fatalf("one response holds %d bytes, over the %d-byte bound", size, MaxReadBytesLimit)
		}
		seen += len(resp.GetRows())
		if seen < rows && !resp.GetMore() {
			t.Fatalf("response of %d rows (%d in all) does not report more", len(resp.GetRows()), seen)
		}
		if n := len(resp.GetRows()); n > 0 {
			resume = resp.GetRows()[n-1].GetKey()
		}
	}
	if seen != rows {
		t.Fatalf("read %d rows, want %d", seen, rows)
	}
}
