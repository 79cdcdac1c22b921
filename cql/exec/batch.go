package exec

import (
	"context"

	"github.com/cosmosd/cosmosd/cql/parser"
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
	mc := modContext{req: req, inBatch: true}
	if using.TTL != nil {
		return nil, Invalid("Global TTL on the BATCH statement is not supported")
	}
	if using.Timestamp != nil && len(items) > 0 {
		ts, _, err := e.timestamp(using, &schema.Table{Name: "batch"}, items[0].b, modContext{req: req})
		if err != nil {
			return nil, err
		}
		mc.batchTS, mc.batchUsingTS = ts, true
	}
	if mc.batchTS == 0 {
		mc.batchTS = e.defaultTimestamp(mc)
	}
	var plans []*modPlan
	for _, it := range items {
		itSess := sess
		if it.sess != nil {
			itSess = it.sess
		}
		p, err := e.analyzeModify(itSess, it.stmt, it.b, mc)
		if err != nil {
			return nil, err
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
		if p.cond != nil && mc.batchUsingTS {
			return nil, Invalid("Cannot provide custom timestamp for conditional BATCH")
		}
		plans = append(plans, p)
	}
	return e.applyPlans(ctx, plans, req, true)
}
