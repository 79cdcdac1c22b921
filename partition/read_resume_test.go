package partition

import (
	"bytes"
	"context"
	"math"
	"testing"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// TestReadRefusesForeignResumePoints: resume_after comes from outside (the
// coordinator echoes a key, a client's paging state carries it), so Read
// refuses one that is not a row key of the request's rows. A scan resumed
// after another table's static row used to answer with that row.
func TestReadRefusesForeignResumePoints(t *testing.T) {
	h := newHarness(t)
	for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
		h.mustWrite(upsert(k, ck(1), 1, set(1, "v"+k)), upsert(k, ck(2), 1, set(1, "w"+k)))
	}
	// Another table's static row in the same store.
	p, tok := pk("a")
	secret := storage.RowKey(table-1, tok, p, nil)
	b := h.eng.NewWriteBatch()
	if err := b.Set(secret, storage.AppendRow(nil, &storage.Row{MarkerTS: 1, DeletedAt: storage.NoTimestamp,
		Cells: []storage.Cell{{Column: 1, Timestamp: 1, Value: []byte("secret")}}})); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	scan := func(start, end int64, resume []byte) *kvpb.ReadRequest {
		return &kvpb.ReadRequest{PartitionId: 100, TableId: table, NowMicros: h.now, Scan: true, ScanStart: start, ScanEnd: end,
			Clustering: true, Static: true, ResumeAfter: resume}
	}
	inTable := storage.RowKey(table, tok, p, ck(1))
	for _, tc := range []struct {
		name string
		req  *kvpb.ReadRequest
	}{
		{"scan resumed in another table", scan(math.MinInt64, math.MaxInt64, secret)},
		{"scan resumed outside its tokens", scan(tok+1, math.MaxInt64, inTable)},
		{"scan resumed at a truncated key", scan(math.MinInt64, math.MaxInt64, inTable[:len(p)+10])},
		{"key read resumed at a truncated key", &kvpb.ReadRequest{PartitionId: 100, TableId: table, NowMicros: h.now,
			Keys: []*kvpb.PartitionKey{keyOf("a")}, Clustering: true, ResumeAfter: inTable[:5]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := h.rep.Read(context.Background(), tc.req)
			if ErrorCode(err) != kvpb.Error_INVALID {
				t.Fatalf("Read = %v rows, %v; want INVALID", len(resp.GetRows()), err)
			}
		})
	}
	// A scan paged with the resume points it hands out sees every row once.
	var seen [][]byte
	var resume []byte
	for page := 0; ; page++ {
		req := scan(math.MinInt64, math.MaxInt64, resume)
		req.Limit = 3
		resp, err := h.rep.Read(context.Background(), req)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		for _, r := range resp.GetRows() {
			if k, err := storage.DecodeRowKey(r.GetKey()); err != nil || k.Table != table {
				t.Fatalf("page %d returned row %x, not of table %d (%v)", page, r.GetKey(), table, err)
			}
			seen = append(seen, r.GetKey())
		}
		if !resp.GetMore() {
			break
		}
		resume = resp.GetRows()[len(resp.GetRows())-1].GetKey()
		if page > 10 {
			t.Fatal("the scan does not end")
		}
	}
	if len(seen) != 12 {
		t.Fatalf("paged scan returned %d rows, want 12", len(seen))
	}
	for i := 1; i < len(seen); i++ {
		if bytes.Compare(seen[i-1], seen[i]) >= 0 {
			t.Fatalf("paged scan returned %x after %x", seen[i], seen[i-1])
		}
	}
}
