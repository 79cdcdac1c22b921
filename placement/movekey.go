package placement

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// runMoveKey isolates the logical partition at op.Token in a physical
// partition of its own (splitting at token and token+1 as needed), then
// moves that partition's replicas onto op.ToNodes, one move at a time.
func (c *Controller) runMoveKey(ctx context.Context, op *Operation) error {
	if op.Token == nil || len(op.ToNodes) == 0 {
		return errors.New("move-key needs a token and target nodes")
	}
	tok := *op.Token
	for _, at := range []int64{tok, tok + 1} {
		if at == math.MinInt64 || (at == tok+1 && tok == math.MaxInt64) {
			continue // the ring's edge is already a boundary
		}
		if err := c.splitAt(ctx, op, at); err != nil {
			return err
		}
	}
	// Find the isolated partition.
	st := c.cfg.Meta.State()
	d := st.Ring(op.Table).Lookup(tok)
	if d == nil || d.GetStart() != tok || d.GetEnd() != tok {
		return fmt.Errorf("token %d is not isolated (partition %v)", tok, d)
	}
	op.Partition = d.GetId()
	if err := c.progress(ctx, op, "isolate", StateDone, fmt.Sprintf("partition %d holds only token %d", d.GetId(), tok), 0.4); err != nil {
		return err
	}
	want := map[uint64]bool{}
	for _, n := range op.ToNodes {
		want[n] = true
	}
	for moves := 0; ; moves++ {
		if moves > 2*len(op.ToNodes)+4 {
			return errors.New("replicas did not converge to the target nodes")
		}
		rep, err := c.observe(ctx, op.Partition)
		if err != nil {
			return err
		}
		var from, to uint64
		for _, r := range rep.Desc.GetReplicas() {
			if !want[r.GetNodeId()] && from == 0 {
				from = r.GetNodeId()
			}
		}
		for _, n := range op.ToNodes {
			if replicaOn(rep.Desc, n) == nil && to == 0 {
				to = n
			}
		}
		if to == 0 || from == 0 {
			if err := c.syncCopy(ctx, rep.Desc); err != nil {
				return err
			}
			return c.progress(ctx, op, "move", StateDone, fmt.Sprintf("replicas %s", replicaNames(rep.Desc)), 1)
		}
		mv := &Operation{ID: op.ID, Kind: KindMove, Partition: op.Partition, Table: op.Table, From: from, To: to, reportTo: op}
		if err := c.progress(ctx, op, "move", StateRunning, fmt.Sprintf("node %d -> node %d", from, to), 0.5); err != nil {
			return err
		}
		if err := c.runMove(ctx, mv); err != nil {
			return err
		}
	}
}

// splitAt splits the partition holding token at so that token starts a
// partition, unless it already does.
func (c *Controller) splitAt(ctx context.Context, op *Operation, at int64) error {
	for attempt := 0; ; attempt++ {
		st := c.cfg.Meta.State()
		d := st.Ring(op.Table).Lookup(at)
		if d == nil {
			if attempt > 50 {
				return fmt.Errorf("no partition holds token %d", at)
			}
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		if d.GetStart() == at {
			return nil
		}
		if err := c.progress(ctx, op, fmt.Sprintf("split at %d", at), StateRunning, fmt.Sprintf("partition %d", d.GetId()), 0.1); err != nil {
			return err
		}
		right, err := c.cfg.Catalog.AllocateID(ctx, "partition", 1)
		if err != nil {
			return err
		}
		left, r, err := c.cfg.Router.Split(ctx, &kvpb.SplitRequest{PartitionId: d.GetId(), SplitToken: at, RightId: right, ExpectedGeneration: 0})
		if err != nil {
			if attempt < 5 {
				sleepCtx(ctx, 200*time.Millisecond)
				continue
			}
			return fmt.Errorf("split partition %d at %d: %w", d.GetId(), at, err)
		}
		if err := c.publishSplit(ctx, left, r); err != nil {
			return err
		}
		return c.progress(ctx, op, fmt.Sprintf("split at %d", at), StateDone, fmt.Sprintf("partition %d", r.GetId()), 0.3)
	}
}
