package router

import (
	"context"
	"testing"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// The internal service returns a partition's refusal inside the response,
// never as a gRPC error (which the calling router would take for a
// transport failure), and serves what its store holds over unary calls.
func TestServerAnswersInResponse(t *testing.T) {
	m, n1, n2 := twoNodes(t, Config{})
	c, err := n2.router.pool.get(1, m.State().Nodes[1])
	if err != nil {
		t.Fatal(err)
	}
	ctx := writeCtx(t)
	kv := c.kv
	// Partition 42 is on no node.
	missing := []struct {
		name string
		call func() (*kvpb.Error, error)
	}{
		{"write", func() (*kvpb.Error, error) { return inResponse(kv.Write(ctx, &kvpb.WriteRequest{PartitionId: 42})) }},
		{"read", func() (*kvpb.Error, error) { return inResponse(kv.Read(ctx, &kvpb.ReadRequest{PartitionId: 42})) }},
		{"change replicas", func() (*kvpb.Error, error) {
			return inResponse(kv.ChangeReplicas(ctx, &kvpb.ChangeReplicasRequest{PartitionId: 42}))
		}},
		{"transfer leader", func() (*kvpb.Error, error) {
			return inResponse(kv.TransferLeader(ctx, &kvpb.TransferLeaderRequest{PartitionId: 42, TargetNode: 1}))
		}},
		{"split", func() (*kvpb.Error, error) { return inResponse(kv.Split(ctx, &kvpb.SplitRequest{PartitionId: 42})) }},
		{"partition detail", func() (*kvpb.Error, error) {
			return inResponse(kv.PartitionDetail(ctx, &kvpb.PartitionDetailRequest{PartitionId: 42}))
		}},
	}
	for _, tc := range missing {
		t.Run(tc.name, func(t *testing.T) {
			pe, err := tc.call()
			if err != nil || pe.GetCode() != kvpb.Error_NOT_FOUND {
				t.Fatalf("%s of a partition not here: %v (status %v), want NOT_FOUND in the response", tc.name, pe, err)
			}
		})
	}

	pk := []byte("unary")
	w := upsertReq(pk, "u")
	w.PartitionId, w.TableId = 100, table
	if resp, err := kv.Write(ctx, w); err != nil || resp.GetError() != nil {
		t.Fatalf("unary write: %v %v", resp, err)
	}
	rd := readReq(pk)
	rd.PartitionId, rd.TableId = 100, table
	resp, err := kv.Read(ctx, rd)
	if err != nil || resp.GetError() != nil || len(values(t, resp)) != 1 || values(t, resp)[0] != "u" {
		t.Fatalf("unary read: %v %v", resp, err)
	}
	// A key outside the partition's range is refused in the response too.
	n1.Bootstrap(t, desc(101, 1000, 2000, 1))
	far, _ := keyWithToken(t, func(tok int64) bool { return tok < 1000 || tok > 2000 })
	bad := readReq(far)
	bad.PartitionId, bad.TableId = 101, table
	if resp, err := kv.Read(ctx, bad); err != nil || resp.GetError().GetCode() != kvpb.Error_RANGE_MISMATCH {
		t.Fatalf("read outside the range: %v %v, want RANGE_MISMATCH in the response", resp, err)
	}
	if _, err := kv.Ping(ctx, &kvpb.PingRequest{}); err != nil {
		t.Fatalf("ping: %v", err)
	}
	st, err := kv.ReplicaStatus(ctx, &kvpb.ReplicaStatusRequest{PartitionIds: []uint64{100, 42}})
	if err != nil || len(st.GetReplicas()) != 1 || st.GetNodeId() != 1 {
		t.Fatalf("replica status: %v %v", st, err)
	}
}

// The in-process client and the server report a missing replica alike
// (NOT_FOUND naming the node), and a write refused that way as never run.
func TestLocalNodeMissingReplica(t *testing.T) {
	m := newTestMeta()
	n := startNode(t, m, 3, Config{})
	l := newLocalNode(n.Store)
	ctx := context.Background()
	if _, sent, err := l.write(ctx, &kvpb.WriteRequest{PartitionId: 42}); sent || err == nil || err.Error() != "NOT_FOUND: no replica of partition 42 on node 3" {
		t.Fatalf("write: sent %v, %v", sent, err)
	}
	if _, sent, err := l.read(ctx, &kvpb.ReadRequest{PartitionId: 42}); !sent || err == nil {
		t.Fatalf("read: sent %v, %v; want answered, NOT_FOUND", sent, err)
	}
	if l.node != consensus.NodeID(3) {
		t.Fatalf("local node %d, want the store's 3", l.node)
	}
}

// inResponse returns the partition error an internal-service response
// carries, and the call's gRPC error.
func inResponse[R interface{ GetError() *kvpb.Error }](resp R, err error) (*kvpb.Error, error) {
	return resp.GetError(), err
}
