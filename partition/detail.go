package partition

import (
	"container/heap"
	"fmt"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// Detail is what PartitionDetail learns from one scan of a partition's
// stats span.
type Detail struct {
	Totals Totals
	// TopBySize are the largest logical partitions, largest first.
	TopBySize []*kvpb.LogicalPartition
	// SplitToken is the first token of a right half holding about half of
	// the bytes; HasSplit is false when there are fewer than two tokens.
	SplitToken int64
	HasSplit   bool
}

// ErrSingleLogicalPartition refuses to split a partition that holds one
// logical partition: logical partitions are never split.
var ErrSingleLogicalPartition = fmt.Errorf("partition holds a single logical partition, which is never split")

// Inspect scans the stats of d in r twice: once for totals and the top n
// logical partitions by size, once to find the token that halves the bytes.
// Split points are token boundaries, so a logical partition is never cut.
func Inspect(r storage.Reader, d *kvpb.Descriptor, n int) (Detail, error) {
	var det Detail
	if !HasRange(d) {
		return det, nil
	}
	span := storage.StatsSpan(d.GetTableId(), d.GetStart(), d.GetEnd())
	it, err := r.NewIter(span)
	if err != nil {
		return det, err
	}
	top := &lpHeap{}
	tokens := 0
	var lastToken int64
	for valid := it.First(); valid; valid = it.Next() {
		s, err := storage.DecodeStats(it.Value())
		if err != nil {
			it.Close()
			return det, err
		}
		k, err := storage.DecodeStatsKey(it.Key())
		if err != nil {
			it.Close()
			return det, err
		}
		det.Totals.Bytes += s.Bytes
		det.Totals.Rows += s.Rows
		if s.Rows > 0 {
			det.Totals.LogicalPartitions++
		}
		if tokens == 0 || k.Token != lastToken {
			tokens++
			lastToken = k.Token
		}
		if n > 0 && s.Rows > 0 {
			heap.Push(top, &kvpb.LogicalPartition{Token: k.Token, Pk: append([]byte(nil), k.PK...), Bytes: s.Bytes, Rows: s.Rows})
			if top.Len() > n {
				heap.Pop(top)
			}
		}
	}
	if err := it.Close(); err != nil {
		return det, err
	}
	for top.Len() > 0 {
		det.TopBySize = append([]*kvpb.LogicalPartition{heap.Pop(top).(*kvpb.LogicalPartition)}, det.TopBySize...)
	}
	if tokens < 2 {
		return det, nil
	}
	// Second pass: choose the token boundary (the start of a token other
	// than the first) whose left side is closest to half the bytes.
	it, err = r.NewIter(span)
	if err != nil {
		return det, err
	}
	defer it.Close()
	var acc int64
	var cur int64
	started := false
	bestDiff := int64(-1)
	for valid := it.First(); valid; valid = it.Next() {
		s, err := storage.DecodeStats(it.Value())
		if err != nil {
			return det, err
		}
		k, err := storage.DecodeStatsKey(it.Key())
		if err != nil {
			return det, err
		}
		if started && k.Token != cur {
			diff := abs64(2*acc - det.Totals.Bytes)
			if bestDiff < 0 || diff < bestDiff {
				bestDiff, det.SplitToken, det.HasSplit = diff, k.Token, true
			}
		}
		cur, started = k.Token, true
		acc += s.Bytes
	}
	return det, it.Error()
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// lpHeap is a min-heap of logical partitions by bytes.
type lpHeap []*kvpb.LogicalPartition

func (h lpHeap) Len() int           { return len(h) }
func (h lpHeap) Less(i, j int) bool { return h[i].GetBytes() < h[j].GetBytes() }
func (h lpHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *lpHeap) Push(x any)        { *h = append(*h, x.(*kvpb.LogicalPartition)) }
func (h *lpHeap) Pop() any          { old := *h; x := old[len(old)-1]; *h = old[:len(old)-1]; return x }

// Detail inspects the replica's data.
func (r *Replica) Detail(top int) (*kvpb.PartitionDetailResponse, error) {
	st, err := r.Status(false)
	if err != nil {
		return nil, err
	}
	snap := r.engine.NewSnapshot()
	defer snap.Close()
	det, err := Inspect(snap, st.GetDesc(), top)
	if err != nil {
		return nil, err
	}
	st.Bytes, st.Rows, st.LogicalPartitions = det.Totals.Bytes, det.Totals.Rows, det.Totals.LogicalPartitions
	resp := &kvpb.PartitionDetailResponse{Status: st, TopBySize: det.TopBySize, HasSplitToken: det.HasSplit, SplitToken: det.SplitToken,
		TopByRu: r.throttle.topKeys(max(top, 3))}
	if tok, ok := r.throttle.loadSplit(); ok && tok > st.GetDesc().GetStart() && tok <= st.GetDesc().GetEnd() {
		resp.HasLoadSplitToken, resp.LoadSplitToken = true, tok
	}
	return resp, nil
}
