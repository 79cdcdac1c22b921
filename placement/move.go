package placement

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// membershipTimeout bounds one membership change: it commits within a few
// round trips when the group has a quorum, and a group without one should
// not hold its partition (and the repairs it needs) for a whole step.
const membershipTimeout = 20 * time.Second

// catchUpLag is how far behind the leader's commit index a learner may be
// when it is promoted; the last few entries arrive in the next heartbeat.
const catchUpLag = 5

// observe asks the nodes that may hold a partition about it: those the
// routing copy lists, and extra.
func (c *Controller) observe(ctx context.Context, id uint64, extra ...uint64) (*Report, error) {
	st := c.cfg.Meta.State()
	nodes := map[uint64]bool{}
	for _, e := range extra {
		nodes[e] = true
	}
	if d := st.Partition(id); d != nil {
		for _, r := range d.GetReplicas() {
			nodes[r.GetNodeId()] = true
		}
	}
	reports := map[uint64]*Report{}
	for _, node := range sortedKeys(nodes) {
		if st.Nodes[node] == nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := c.cfg.Router.ReplicaStatus(cctx, consensus.NodeID(node), &kvpb.ReplicaStatusRequest{PartitionIds: []uint64{id}})
		cancel()
		if err != nil {
			continue
		}
		MergeStatus(reports, node, resp)
	}
	rep := reports[id]
	if rep == nil || rep.Desc == nil {
		return nil, fmt.Errorf("no replica of partition %d answered", id)
	}
	return rep, nil
}

func replicaOn(d *kvpb.Descriptor, node uint64) *kvpb.ReplicaDescriptor {
	for _, r := range d.GetReplicas() {
		if r.GetNodeId() == node {
			return r
		}
	}
	return nil
}

// runMove moves a partition's replica from op.From to op.To: add op.To as a
// learner, let it catch up by snapshot and log, then in one joint
// configuration change promote it and remove op.From, moving leadership off
// op.From first. Each iteration observes the group and does the next
// missing step, so a resumed move continues where it stopped.
func (c *Controller) runMove(ctx context.Context, op *Operation) error {
	log := c.cfg.Logger.With("op", op.ID, "partition", op.Partition)
	deadline := time.Now().Add(30 * time.Minute)
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return errors.New("move did not finish within 30 minutes")
		}
		if attempt > 0 && !sleepCtx(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
		st := c.cfg.Meta.State()
		if st.Nodes[op.To] == nil {
			// The learner (if added) is removed by the controller's
			// orphan cleanup once this operation ends; a repair is
			// planned again, towards another node.
			return fmt.Errorf("target node %d is not live", op.To)
		}
		rep, err := c.observe(ctx, op.Partition, op.To)
		if err != nil {
			log.Debug("observe", "err", err)
			continue
		}
		d := rep.Desc
		to, from := replicaOn(d, op.To), replicaOn(d, op.From)
		stepCtx, cancel := context.WithTimeout(ctx, c.cfg.StepTimeout)
		switch {
		case to != nil && !to.GetLearner() && from == nil:
			cancel()
			if err := c.syncCopy(ctx, d); err != nil {
				log.Debug("sync routing copy", "err", err)
				continue
			}
			return c.progress(ctx, op, "done", StateDone, fmt.Sprintf("replicas %s", replicaNames(d)), 1)
		case to == nil:
			err = c.addLearner(stepCtx, op, d)
		case to.GetLearner():
			err = c.promote(stepCtx, op, rep, to, from)
		default: // to is a voter, from still a member
			err = c.removeSource(stepCtx, op, rep, from)
		}
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			log.Info("move step will be retried", "err", err)
		}
	}
}

// addLearner lists the target as a learner in the routing copy (so the
// target node starts an empty replica) and adds it to the group.
func (c *Controller) addLearner(ctx context.Context, op *Operation, d *kvpb.Descriptor) error {
	if op.ReplicaID == 0 || op.ReplicaID < d.GetNextReplicaId() && replicaIDUsed(d, op.ReplicaID) {
		op.ReplicaID = d.GetNextReplicaId()
		if err := c.progress(ctx, op, "allocate replica", StateDone, fmt.Sprintf("replica %d on node %d", op.ReplicaID, op.To), 0.05); err != nil {
			return err
		}
	}
	learner := &kvpb.ReplicaDescriptor{NodeId: op.To, ReplicaId: op.ReplicaID, Learner: true}
	// Announce the learner in the routing copy first.
	old := c.cfg.Meta.State().TablePartition(d.GetTableId(), d.GetId())
	if old != nil && replicaOn(old, op.To) == nil {
		next := proto.Clone(old).(*kvpb.Descriptor)
		next.Replicas = append(next.Replicas, learner)
		if next.NextReplicaId <= op.ReplicaID {
			next.NextReplicaId = op.ReplicaID + 1
		}
		if err := c.cfg.Catalog.SyncPartition(ctx, d.GetTableId(), old, next); err != nil {
			return err
		}
	}
	// Wait until the target runs the replica.
	if err := c.waitFor(ctx, func() bool {
		resp, err := c.cfg.Router.ReplicaStatus(ctx, consensus.NodeID(op.To), &kvpb.ReplicaStatusRequest{PartitionIds: []uint64{op.Partition}})
		return err == nil && len(resp.GetReplicas()) == 1
	}); err != nil {
		return fmt.Errorf("target node %d did not start the replica: %w", op.To, err)
	}
	if err := c.progress(ctx, op, "add learner", StateRunning, fmt.Sprintf("node %d", op.To), 0.1); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	if _, err := c.cfg.Router.ChangeReplicas(cctx, op.Partition, []*kvpb.ReplicaChange{{Type: kvpb.ReplicaChange_ADD_LEARNER, Replica: learner}}); err != nil {
		return fmt.Errorf("add learner: %w", err)
	}
	return c.progress(ctx, op, "add learner", StateDone, fmt.Sprintf("node %d", op.To), 0.2)
}

func replicaIDUsed(d *kvpb.Descriptor, id uint64) bool {
	for _, r := range d.GetReplicas() {
		if r.GetReplicaId() == id {
			return true
		}
	}
	return false
}

// promote waits for the learner to catch up, moves leadership off the
// source, then promotes the learner and removes the source atomically.
func (c *Controller) promote(ctx context.Context, op *Operation, rep *Report, to, from *kvpb.ReplicaDescriptor) error {
	if err := c.progress(ctx, op, "catch up", StateRunning, "snapshot and log", 0.3); err != nil {
		return err
	}
	if err := c.waitFor(ctx, func() bool {
		r, err := c.observe(ctx, op.Partition, op.To)
		return err == nil && r.Leader != 0 && r.Applied[op.To]+catchUpLag >= r.Commit && r.Applied[op.To] > 0
	}); err != nil {
		return fmt.Errorf("learner on node %d did not catch up: %w", op.To, err)
	}
	if err := c.progress(ctx, op, "catch up", StateDone, "", 0.7); err != nil {
		return err
	}
	if from != nil {
		if err := c.moveLeadership(ctx, op, rep, from.GetNodeId()); err != nil {
			return err
		}
	}
	changes := []*kvpb.ReplicaChange{{Type: kvpb.ReplicaChange_PROMOTE_LEARNER, Replica: to}}
	detail := fmt.Sprintf("promote node %d", op.To)
	if from != nil {
		changes = append(changes, &kvpb.ReplicaChange{Type: kvpb.ReplicaChange_REMOVE, Replica: from})
		detail += fmt.Sprintf(", remove node %d", from.GetNodeId())
	}
	if err := c.progress(ctx, op, "swap", StateRunning, detail, 0.8); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	d, err := c.cfg.Router.ChangeReplicas(cctx, op.Partition, changes)
	if err != nil {
		return fmt.Errorf("promote and remove: %w", err)
	}
	if err := c.progress(ctx, op, "swap", StateDone, detail, 0.9); err != nil {
		return err
	}
	return c.syncCopy(ctx, d)
}

// removeSource removes the source once the target votes.
func (c *Controller) removeSource(ctx context.Context, op *Operation, rep *Report, from *kvpb.ReplicaDescriptor) error {
	if err := c.moveLeadership(ctx, op, rep, from.GetNodeId()); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	d, err := c.cfg.Router.ChangeReplicas(cctx, op.Partition, []*kvpb.ReplicaChange{{Type: kvpb.ReplicaChange_REMOVE, Replica: from}})
	if err != nil {
		return fmt.Errorf("remove node %d: %w", from.GetNodeId(), err)
	}
	return c.syncCopy(ctx, d)
}

// moveLeadership hands leadership away from node when it leads: a leader
// that removes itself leaves the group leaderless until an election.
func (c *Controller) moveLeadership(ctx context.Context, op *Operation, rep *Report, node uint64) error {
	if rep.Leader != node {
		return nil
	}
	// Only a voter that just answered (and is the most caught up of them)
	// can take over quickly; a registered node may still be a dead one
	// whose lease has not expired.
	var target uint64
	for _, r := range rep.Desc.GetReplicas() {
		id := r.GetNodeId()
		applied, answered := rep.Applied[id]
		if id == node || r.GetLearner() || !answered || c.cfg.Meta.State().Nodes[id] == nil {
			continue
		}
		if target == 0 || applied > rep.Applied[target] {
			target = id
		}
	}
	if target == 0 {
		return fmt.Errorf("no live voter to take leadership from node %d", node)
	}
	if err := c.progress(ctx, op, "transfer leadership", StateRunning, fmt.Sprintf("node %d -> node %d", node, target), 0.75); err != nil {
		return err
	}
	// A transfer normally completes within an election timeout; if the
	// target cannot take over, try again after observing anew.
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.cfg.Router.TransferLeader(tctx, op.Partition, consensus.NodeID(target)); err != nil {
		return fmt.Errorf("transfer leadership to node %d: %w", target, err)
	}
	return c.progress(ctx, op, "transfer leadership", StateDone, fmt.Sprintf("node %d -> node %d", node, target), 0.78)
}

// ErrTableGone reports a routing copy that cannot be written because its
// table's ring is gone (the table was dropped meanwhile).
var ErrTableGone = errors.New("placement: the table's ring is gone")

// syncCopy writes d as the partition's routing copy unless the copy is
// already at least as new.
func (c *Controller) syncCopy(ctx context.Context, d *kvpb.Descriptor) error {
	if d == nil {
		return nil
	}
	for {
		st := c.cfg.Meta.State()
		old := st.TablePartition(d.GetTableId(), d.GetId())
		if old != nil && old.GetGeneration() >= d.GetGeneration() && sameReplicas(old, d) {
			return nil
		}
		err := c.cfg.Catalog.SyncPartition(ctx, d.GetTableId(), old, d)
		if !errors.Is(err, cluster.ErrConflict) {
			return err
		}
		if err := c.afterConflict(ctx, d.GetTableId()); err != nil {
			return fmt.Errorf("sync partition %d: %w", d.GetId(), err)
		}
	}
}

// afterConflict prepares the retry of a compare-and-swap on table's ring
// that lost: the store holds something the local state does not show yet,
// so the state catches up first (retrying on the same stale copy would
// lose forever if the watch stalled). A conflict also means the ring is
// gone (SyncPartition refuses to resurrect a dropped table's ring), and
// then no retry can succeed.
func (c *Controller) afterConflict(ctx context.Context, table uint64) error {
	if !sleepCtx(ctx, 50*time.Millisecond) {
		return ctx.Err()
	}
	if err := c.cfg.Meta.CatchUp(ctx); err != nil {
		return err
	}
	if len(c.cfg.Meta.State().Ring(table).Partitions()) == 0 {
		return fmt.Errorf("table %d: %w", table, ErrTableGone)
	}
	return nil
}

func sameReplicas(a, b *kvpb.Descriptor) bool {
	if len(a.GetReplicas()) != len(b.GetReplicas()) {
		return false
	}
	for i := range a.GetReplicas() {
		if !proto.Equal(a.GetReplicas()[i], b.GetReplicas()[i]) {
			return false
		}
	}
	return true
}

// waitFor polls cond until it holds or ctx ends.
func (c *Controller) waitFor(ctx context.Context, cond func() bool) error {
	for {
		if cond() {
			return nil
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
}

func replicaNames(d *kvpb.Descriptor) string {
	s := ""
	for i, r := range d.GetReplicas() {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("n%d", r.GetNodeId())
		if r.GetLearner() {
			s += "(l)"
		}
	}
	return s
}

// runSplit splits a partition at op.SplitToken through its log and records
// both halves in the routing copy.
func (c *Controller) runSplit(ctx context.Context, op *Operation) error {
	if op.SplitToken == nil {
		det, err := c.cfg.Router.PartitionDetail(ctx, op.Partition, 0)
		if err != nil {
			return fmt.Errorf("find split point: %w", err)
		}
		d := det.GetStatus().GetDesc()
		var tok int64
		var why string
		switch {
		case det.GetHasLoadSplitToken() && (det.GetStatus().GetHot() || op.SplitBy == "throughput"):
			tok, why = det.GetLoadSplitToken(), "halves the request load of a hot partition"
		case det.GetHasSplitToken():
			tok, why = det.GetSplitToken(), fmt.Sprintf("halves %d stored bytes", det.GetStatus().GetBytes())
		case op.SplitBy == "throughput" && d.GetEnd() > d.GetStart():
			// Nothing to halve by bytes (empty, or one logical partition):
			// halve the token range, which never cuts a logical partition.
			tok, why = d.GetStart()+int64((uint64(d.GetEnd())-uint64(d.GetStart()))/2)+1, "halves the token range"
		case det.GetStatus().GetLogicalPartitions() == 0:
			return fmt.Errorf("partition %d cannot be split by size: it is empty (give a token with --at)", op.Partition)
		default:
			return fmt.Errorf("partition %d cannot be split: it holds a single logical partition (%d bytes), and a logical partition is never split", op.Partition, det.GetStatus().GetBytes())
		}
		op.SplitToken = &tok
		if err := c.progress(ctx, op, "split point", StateDone, fmt.Sprintf("token %d %s", tok, why), 0.05); err != nil {
			return err
		}
	}
	if op.RightID == 0 {
		id, err := c.cfg.Catalog.AllocateID(ctx, "partition", 1)
		if err != nil {
			return err
		}
		op.RightID = id
		if err := c.progress(ctx, op, "allocate", StateDone, fmt.Sprintf("right half is partition %d", id), 0.1); err != nil {
			return err
		}
	}
	// A resumed split may have applied already.
	rep, err := c.observe(ctx, op.Partition)
	if err != nil {
		return err
	}
	left, right := rep.Desc, (*kvpb.Descriptor)(nil)
	if rep.Desc.GetEnd() >= *op.SplitToken {
		if err := c.progress(ctx, op, "split", StateRunning, fmt.Sprintf("at token %d", *op.SplitToken), 0.3); err != nil {
			return err
		}
		left, right, err = c.cfg.Router.Split(ctx, &kvpb.SplitRequest{PartitionId: op.Partition, SplitToken: *op.SplitToken, RightId: op.RightID})
		if err != nil {
			return fmt.Errorf("split: %w", err)
		}
	} else {
		// The split applied already (a resumed run): the right half is
		// what its replicas say. When none answers it stays unknown (nil)
		// and only the left half is published here; the rounds' ring sync
		// adds the right half once it answers. (A placeholder descriptor
		// used to stand in for it, [token, -1]: for a negative token that
		// is a range, and publishing it put a replica-less partition with
		// the wrong end into the ring.)
		right = nil
		if r, err := c.observe(ctx, op.RightID, nodesOf(left)...); err == nil {
			right = r.Desc
		}
	}
	if err := c.progress(ctx, op, "split", StateDone, fmt.Sprintf("%s and %s", rangeOf(left), rangeOf(right)), 0.7); err != nil {
		return err
	}
	if err := c.publishSplit(ctx, left, right); err != nil {
		return err
	}
	return c.progress(ctx, op, "routing", StateDone, "ring updated", 0.95)
}

// publishSplit writes both halves of a split into the routing copy in one
// transaction, so routers never see a gap or an overlap.
func (c *Controller) publishSplit(ctx context.Context, left, right *kvpb.Descriptor) error {
	for {
		st := c.cfg.Meta.State()
		parent, rightCopy := st.TablePartition(left.GetTableId(), left.GetId()), st.TablePartition(left.GetTableId(), right.GetId())
		switch {
		case parent == nil:
			return fmt.Errorf("partition %d is gone from the routing copy", left.GetId())
		case rightCopy != nil || right == nil || !hasRange(right):
			return c.syncCopy(ctx, left)
		case parent.GetGeneration() >= left.GetGeneration():
			return c.syncCopy(ctx, right)
		}
		err := c.cfg.Catalog.UpdatePartitions(ctx, left.GetTableId(), []*kvpb.Descriptor{parent}, []*kvpb.Descriptor{left, right})
		if !errors.Is(err, cluster.ErrConflict) {
			return err
		}
		if err := c.afterConflict(ctx, left.GetTableId()); err != nil {
			return fmt.Errorf("publish the split of partition %d: %w", left.GetId(), err)
		}
	}
}

// rangeOf shows a partition's token range, "unknown" for nil.
func rangeOf(d *kvpb.Descriptor) string {
	if d == nil {
		return "unknown"
	}
	return fmt.Sprintf("[%d, %d]", d.GetStart(), d.GetEnd())
}

func nodesOf(d *kvpb.Descriptor) []uint64 {
	var out []uint64
	for _, r := range d.GetReplicas() {
		out = append(out, r.GetNodeId())
	}
	return out
}
