package placement

import (
	"context"
	"fmt"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
)

// runParent runs a rebalance, drain or decommission: it plans moves,
// submits them as child operations (scheduled like any other, within the
// snapshot limit), waits for them, and plans again until nothing is left to
// move. Children are persisted in the parent, so a new controller resumes
// waiting for them instead of planning twice.
func (c *Controller) runParent(ctx context.Context, op *Operation) error {
	draining := op.Kind == KindDrain || op.Kind == KindDecommission
	if draining {
		m := c.cfg.Meta.State().Members[op.Node]
		if m == nil {
			return fmt.Errorf("node %d is not a member of the cluster", op.Node)
		}
		// The step is recorded before the member is marked, so that a
		// controller resuming the operation tells an operator's undrain
		// (step recorded, mark gone) from a mark not yet made. A crash
		// between the two makes the resumed drain stop as undrained: safe,
		// the operator drains again.
		if op.hasStep(stepMarkDraining) {
			if marked, err := c.markedDraining(ctx, op.Node); err != nil {
				return err
			} else if !marked {
				return errUndrained(op.Node)
			}
		} else {
			if err := c.progress(ctx, op, stepMarkDraining, StateDone, "no new replicas go to the node", 0); err != nil {
				return err
			}
			if err := c.cfg.Meta.UpdateMember(ctx, op.Node, func(m *cluster.Member) bool {
				if m.Draining {
					return false
				}
				m.Draining = true
				return true
			}); err != nil {
				return err
			}
		}
	}
	planned := 0
	for round := 0; ; round++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Wait for the children of the previous round.
		done, failed := 0, 0
		for _, id := range op.Children {
			child, err := GetOperation(ctx, c.store.ops, id)
			if err != nil {
				return err
			}
			switch child.State {
			case StateDone:
				done++
			case StateFailed:
				failed++
			}
		}
		if done+failed < len(op.Children) {
			frac := 0.0
			if len(op.Children) > 0 {
				frac = 0.9 * float64(done+failed) / float64(len(op.Children))
			}
			if err := c.progress(ctx, op, "moves", StateRunning, fmt.Sprintf("%d of %d done, %d failed", done, len(op.Children), failed), frac); err != nil {
				return err
			}
			if !sleepCtx(ctx, 500*time.Millisecond) {
				return ctx.Err()
			}
			continue
		}
		if failed > 0 && round > 20 {
			return fmt.Errorf("%d moves failed", failed)
		}
		// Plan the next moves, on a state that shows the children's
		// (done in the store, maybe not yet in the watched state).
		if err := c.cfg.Meta.CatchUp(ctx); err != nil {
			return err
		}
		st := c.cfg.Meta.State()
		if m := st.Members[op.Node]; draining && (m == nil || !m.Draining) {
			// cosmosctl nodes undrain: stop; moves under way finished
			// above. The local state may lag the mark just made, so
			// etcd has the last word.
			if marked, err := c.markedDraining(ctx, op.Node); err != nil {
				return err
			} else if !marked {
				return errUndrained(op.Node)
			}
		}
		moves, next, err := planParent(c.cfg.policy(), op.Kind, op.Node, st, time.Now(), c.busyPartitions())
		if err != nil {
			return err
		}
		if next == parentWait {
			if !sleepCtx(ctx, 500*time.Millisecond) {
				return ctx.Err()
			}
			continue
		}
		if next == parentFinished {
			break
		}
		for _, m := range moves {
			child := &Operation{Kind: KindMove, State: StatePending, Table: m.Table, Partition: m.Partition, From: m.From, To: m.To, Reason: m.Reason, Parent: op.ID}
			if err := c.submit(ctx, child); err != nil {
				return err
			}
			op.Children = append(op.Children, child.ID)
			planned++
		}
		if err := c.progress(ctx, op, "plan", StateDone, plural(planned, "move")+" planned", 0); err != nil {
			return err
		}
	}
	if op.Kind == KindDecommission {
		if err := c.cfg.Meta.UpdateMember(ctx, op.Node, func(m *cluster.Member) bool {
			m.Decommissioned = true
			return true
		}); err != nil {
			return err
		}
	}
	return c.progress(ctx, op, "moves", StateDone, plural(planned, "move"), 1)
}

// stepMarkDraining is the step of a drain or decommission that marks its
// node draining.
const stepMarkDraining = "mark draining"

// markedDraining reads whether node's member record is marked draining,
// from etcd rather than the possibly lagging local state.
func (c *Controller) markedDraining(ctx context.Context, node uint64) (bool, error) {
	marked := false
	err := c.cfg.Meta.UpdateMember(ctx, node, func(m *cluster.Member) bool {
		marked = m.Draining
		return false
	})
	return marked, err
}

// errUndrained ends a drain or decommission whose node an operator
// undrained.
func errUndrained(node uint64) error {
	return fmt.Errorf("stopped: node %d was undrained (cosmosctl nodes undrain)", node)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// busyPartitions lists partitions with an operation running here.
func (c *Controller) busyPartitions() map[uint64]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[uint64]bool{}
	for p := range c.mu.busy {
		out[p] = true
	}
	return out
}
