package partition

import (
	"context"
	"fmt"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// ChangeReplicas changes the partition's membership and returns the
// descriptor once the change has applied here.
func (r *Replica) ChangeReplicas(ctx context.Context, changes []*kvpb.ReplicaChange) (*kvpb.Descriptor, error) {
	var cc []consensus.ReplicaChange
	for _, c := range changes {
		rd := c.GetReplica()
		rep := consensus.Replica{ReplicaID: consensus.ReplicaID(rd.GetReplicaId()), NodeID: consensus.NodeID(rd.GetNodeId()), Learner: rd.GetLearner()}
		var t consensus.ChangeType
		switch c.GetType() {
		case kvpb.ReplicaChange_ADD_LEARNER:
			t, rep.Learner = consensus.AddLearner, true
		case kvpb.ReplicaChange_PROMOTE_LEARNER:
			t, rep.Learner = consensus.PromoteLearner, false
		case kvpb.ReplicaChange_ADD_VOTER:
			t, rep.Learner = consensus.AddVoter, false
		case kvpb.ReplicaChange_REMOVE:
			t = consensus.RemoveReplica
		default:
			return nil, Errorf(kvpb.Error_INVALID, "unknown replica change %v", c.GetType())
		}
		cc = append(cc, consensus.ReplicaChange{Type: t, Replica: rep})
	}
	if err := r.group.ChangeReplicas(ctx, cc); err != nil {
		return nil, r.translate(ctx, err)
	}
	return r.Descriptor(), nil
}

// TransferLeader moves leadership to the replica on node target.
func (r *Replica) TransferLeader(ctx context.Context, target consensus.NodeID) error {
	for _, rd := range r.Descriptor().GetReplicas() {
		if consensus.NodeID(rd.GetNodeId()) == target {
			if rd.GetLearner() {
				return Errorf(kvpb.Error_INVALID, "partition %d: replica on node %d is a learner", r.ID(), target)
			}
			if err := r.group.TransferLeadership(ctx, consensus.ReplicaID(rd.GetReplicaId())); err != nil {
				return r.translate(ctx, err)
			}
			return nil
		}
	}
	return Errorf(kvpb.Error_INVALID, "partition %d has no replica on node %d", r.ID(), target)
}

// Split splits the partition at token (the right half's first token)
// through the log and returns both halves as applied.
func (r *Replica) Split(ctx context.Context, req *kvpb.SplitRequest) (*kvpb.Descriptor, *kvpb.Descriptor, error) {
	d := r.Descriptor()
	if req.GetExpectedGeneration() != 0 && req.GetExpectedGeneration() != d.GetGeneration() {
		return nil, nil, Errorf(kvpb.Error_RANGE_MISMATCH, "partition %d is at generation %d, not %d", d.GetId(), d.GetGeneration(), req.GetExpectedGeneration())
	}
	tok := req.GetSplitToken()
	if !HasRange(d) || tok <= d.GetStart() || tok > d.GetEnd() {
		return nil, nil, Errorf(kvpb.Error_INVALID, "split token %d is not inside partition %d (%d, %d]", tok, d.GetId(), d.GetStart(), d.GetEnd())
	}
	if req.GetRightId() == 0 || req.GetRightId() == d.GetId() {
		return nil, nil, Errorf(kvpb.Error_INVALID, "split of partition %d needs a new partition id", d.GetId())
	}
	cmd := &kvpb.SplitCommand{
		Left:  &kvpb.Descriptor{Id: d.GetId(), TableId: d.GetTableId(), Start: d.GetStart(), End: tok - 1, Generation: d.GetGeneration()},
		Right: &kvpb.Descriptor{Id: req.GetRightId(), TableId: d.GetTableId(), Start: tok, End: d.GetEnd(), Generation: d.GetGeneration()},
	}
	v, err := r.Propose(ctx, &kvpb.Command{Cmd: &kvpb.Command_Split{Split: cmd}})
	if err != nil {
		return nil, nil, err
	}
	res, ok := v.(*kvpb.SplitCommand)
	if !ok {
		return nil, nil, fmt.Errorf("partition %d: split returned %T", d.GetId(), v)
	}
	return res.GetLeft(), res.GetRight(), nil
}
