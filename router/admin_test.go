package router

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// The administrative calls reach the partition's leader the same way from
// the node that holds it (in process) and from another node (unary gRPC),
// and return the leader's answer, refusals included.
func TestAdminCallsLocalAndRemote(t *testing.T) {
	m, n1, n2 := twoNodes(t, Config{})
	m.setRing(whole(100, 1))
	for _, tc := range []struct {
		name string
		r    *Router
	}{{"local", n1.router}, {"remote", n2.router}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := writeCtx(t)
			det, err := tc.r.PartitionDetail(ctx, 100, 3)
			if err != nil || det.GetStatus().GetDesc().GetId() != 100 {
				t.Fatalf("partition detail: %v %v", det, err)
			}
			if err := tc.r.TransferLeader(ctx, 100, 1); err != nil {
				t.Fatalf("transfer to the leader itself: %v", err)
			}
			// A learner that does not exist cannot be transferred to: the
			// leader's refusal comes back as such, at once.
			if err := tc.r.TransferLeader(ctx, 100, 9); partition.ErrorCode(err) != kvpb.Error_INVALID || ctx.Err() != nil {
				t.Fatalf("transfer to a node without a replica: %v, want INVALID", err)
			}
			// The single-replica engine cannot change membership: the
			// error reached the leader, so it is returned, not retried
			// until the deadline.
			d, err := tc.r.ChangeReplicas(ctx, 100, []*kvpb.ReplicaChange{{Type: kvpb.ReplicaChange_ADD_LEARNER,
				Replica: &kvpb.ReplicaDescriptor{NodeId: 2, ReplicaId: 2, Learner: true}}})
			if err == nil || d != nil || !strings.Contains(err.Error(), "membership changes need the raft engine") || ctx.Err() != nil {
				t.Fatalf("change replicas: %v %v, want the engine's refusal", d, err)
			}
			_, err = tc.r.ChangeReplicas(ctx, 100, []*kvpb.ReplicaChange{{Type: kvpb.ReplicaChange_Type(99)}})
			if partition.ErrorCode(err) != kvpb.Error_INVALID {
				t.Fatalf("unknown change: %v, want INVALID", err)
			}
			_, _, err = tc.r.Split(ctx, &kvpb.SplitRequest{PartitionId: 100, SplitToken: 0})
			if partition.ErrorCode(err) != kvpb.Error_INVALID {
				t.Fatalf("split without a right id: %v, want INVALID", err)
			}
		})
	}
}

// An administrative call whose leader hint names a node that is not
// registered asks the other replicas instead of failing (repairs of the
// partitions a dead node led must not retry forever); one whose hint
// names a node that answers NOT_FOUND does the same.
func TestAdminCallSkipsUnregisteredLeader(t *testing.T) {
	m, _, n2 := twoNodes(t, Config{})
	startNode(t, m, 3, Config{})
	m.setRing(whole(100, 4, 3, 1))
	for _, hint := range []consensus.NodeID{4, 3} {
		n2.router.leaders.Store(uint64(100), hint)
		det, err := n2.router.PartitionDetail(writeCtx(t), 100, 0)
		if err != nil || det.GetStatus().GetDesc().GetId() != 100 {
			t.Fatalf("detail with leader hint %d: %v %v", hint, det, err)
		}
		if h := n2.router.hint(100); h != 1 {
			t.Fatalf("leader hint %d after node 1 answered, want 1", h)
		}
	}
}

// ReplicaStatus asks one node for its replicas: this node in process,
// another over gRPC; a node that is not registered is not asked.
func TestReplicaStatus(t *testing.T) {
	m, n1, n2 := twoNodes(t, Config{})
	m.setRing(whole(100, 1))
	ctx := writeCtx(t)
	for _, tc := range []struct {
		r    *Router
		node consensus.NodeID
		want int
	}{{n1.router, 1, 1}, {n2.router, 1, 1}, {n1.router, 2, 0}, {n2.router, 2, 0}} {
		resp, err := tc.r.ReplicaStatus(ctx, tc.node, &kvpb.ReplicaStatusRequest{Stats: true})
		if err != nil || resp.GetNodeId() != uint64(tc.node) || len(resp.GetReplicas()) != tc.want {
			t.Fatalf("router %d asking node %d: %v %v, want %d replicas", tc.r.cfg.NodeID, tc.node, resp, err, tc.want)
		}
	}
	if _, err := n1.router.ReplicaStatus(ctx, 9, &kvpb.ReplicaStatusRequest{}); err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("status of an unregistered node: %v", err)
	}
}

// sentRPC takes an admin call that failed with Unavailable as never sent
// (the controller checks the descriptor again), anything else as sent.
func TestSentRPC(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{status.Error(codes.Unavailable, "connection refused"), false},
		{status.Error(codes.DeadlineExceeded, "slow"), true},
		{status.Error(codes.Internal, "boom"), true},
		{partition.Errorf(kvpb.Error_UNKNOWN, "engine says no"), true},
	} {
		if got := sentRPC(tc.err); got != tc.want {
			t.Errorf("sentRPC(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
