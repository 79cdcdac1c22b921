package exec

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/cql/parser"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/schema"
)

func (e *Executor) runBatchStmt(ctx context.Context, sess *Session, s *parser.BatchStmt, b *binder, req Request) (*Result, error) {
	items := make([]batchItem, len(s.Statements))
	for i, st := range s.Statements {
		items[i] = batchItem{stmt: st, b: b}
	}
	return e.runBatch(ctx, sess, s.Kind, s.Using, items, req)
}

type batchItem struct {
	stmt parser.Statement
	b    *binder
	// sess resolves unqualified table names (a prepared statement keeps
	// the keyspace it was prepared in); nil means the batch's session.
	sess *Session
}

// runBatch analyses and applies a batch.
func (e *Executor) runBatch(ctx context.Context, sess *Session, kind parser.BatchKind, using parser.Using, items []batchItem, req Request) (*Result, error) {
	plans, err := e.planBatch(sess, kind, using, items, req)
	if err != nil {
		return nil, err
	}
	return e.applyPlans(ctx, plans, req, true)
}

// planBatch analyses a batch: every check that refuses it before anything
// is sent. It has no effects (the planner's fuzz target calls it alone).
func (e *Executor) planBatch(sess *Session, kind parser.BatchKind, using parser.Using, items []batchItem, req Request) ([]*modPlan, error) {
	mc := modContext{req: req, inBatch: true}
	if using.TTL != nil {
		return nil, Invalid("Global TTL on the BATCH statement is not supported")
	}
	mc.batchTS, mc.batchSource = e.defaultTimestamp(modContext{req: req}), modContext{req: req}.defaultSource()
	if using.Timestamp != nil && len(items) > 0 {
		ts, set, err := e.timestamp(using, &schema.Table{Name: "batch"}, items[0].b, modContext{req: req})
		if err != nil {
			return nil, err
		}
		// An unset USING TIMESTAMP ? leaves the default, but the batch
		// still has the clause, which its statements may not repeat.
		mc.batchUsingTS = true
		if set {
			mc.batchTS, mc.batchSource = ts, kvpb.Mutation_STATEMENT
		}
	}
	var plans []*modPlan
	// size is the encoded size of the mutations planned so far. It is
	// bounded as the plans are built: a batch of many statements, each
	// expanding IN restrictions into many rows, must not be built whole
	// before it is found too large.
	size := 0
	for _, it := range items {
		itSess := sess
		if it.sess != nil {
			itSess = it.sess
		}
		p, err := e.analyzeModify(itSess, it.stmt, it.b, mc)
		if err != nil {
			return nil, err
		}
		// Cassandra's order of checks: the batch's timestamp first.
		if mc.batchUsingTS {
			switch {
			case p.cond != nil:
				return nil, Invalid("Cannot provide custom timestamp for conditional BATCH")
			case kind == parser.BatchCounter:
				return nil, Invalid("Cannot provide custom timestamp for counter BATCH")
			case p.counter:
				return nil, Invalid("Cannot provide custom timestamp for a BATCH containing counters")
			}
		}
		if kind == parser.BatchCounter && !p.counter {
			return nil, Invalid("Cannot include non-counter statement in a counter batch")
		}
		if kind != parser.BatchCounter && p.counter {
			if kind == parser.BatchLogged {
				return nil, Invalid("Cannot include a counter statement in a logged batch")
			}
			return nil, Invalid("Counter and non-counter mutations cannot exist in the same batch")
		}
		for _, m := range p.mutations {
			size += proto.Size(m)
		}
		if size > e.cfg.MaxMutationBytes {
			return nil, Invalid("batch of at least %d bytes of mutations exceeds the maximum of %d bytes (max_mutation_bytes)", size, e.cfg.MaxMutationBytes)
		}
		plans = append(plans, p)
	}
	return plans, nil
}
