package partition

import (
	"bytes"
	"testing"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// TestOversizedWriteRefused: a write command larger than a raft entry may
// be (it must reach every follower in one internode message) is refused
// with INVALID before it is proposed, whoever sent it; nothing is applied.
func TestOversizedWriteRefused(t *testing.T) {
	h := newHarness(t)
	k, tok := pk("big")
	val := bytes.Repeat([]byte("x"), DefaultMaxMutationBytes+1)
	_, err := h.write(&kvpb.WriteRequest{Mutations: []*kvpb.Mutation{{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: k, Ck: ck(1), Timestamp: 1,
		Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kvpb.ColumnOp_SET, Value: val}}}}})
	if ErrorCode(err) != kvpb.Error_INVALID {
		t.Fatalf("write of %d bytes: %v, want INVALID", len(val), err)
	}
	if st := h.rep.Group().Status(); st.Applied > 1 {
		t.Fatalf("applied index %d: the refused write reached the log", st.Applied)
	}
}
