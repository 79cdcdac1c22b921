package exec

import (
	"sort"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/schema"
)

// clusteringPlan is how a statement's clustering restrictions map to key
// slices of a partition.
type clusteringPlan struct {
	// prefixes are the encoded clustering prefixes fixed by EQ/IN (one
	// empty prefix when none), in key order.
	prefixes [][]byte
	// eqCols is how many leading clustering columns the prefixes fix.
	eqCols int
	// slice bounds on the next column (nil = unbounded), already mapped
	// to key order for DESC columns.
	start, end *kvpb.Bound
	// exact reports that the slices select exactly the restricted rows,
	// with no further filtering on clustering columns needed.
	exact bool
	// needsFiltering reports a restriction Cassandra only accepts with
	// ALLOW FILTERING.
	needsFiltering bool
	// fullKey: every clustering column is fixed by EQ/IN.
	fullKey bool
}

// clustering plans the clustering restrictions.
func (r *restrictions) clustering() (*clusteringPlan, error) {
	cks := r.t.ClusteringColumns()
	p := &clusteringPlan{prefixes: [][]byte{nil}, exact: true}
	// Multi-column relations: the first one drives the plan, together
	// with a second slice bounding the other end ((c1, c2) >= (1, 1) AND
	// (c1, c2) < (2, 0)); any other is only filtered.
	var tuple, tuple2 *tupleRestriction
	for _, tr := range r.tuples {
		switch {
		case tuple == nil:
			tuple = tr
		case tuple2 == nil && isSlice(tuple.op) && isSlice(tr.op) && isLower(tuple.op) != isLower(tr.op) &&
			tr.cols[0].Position == tuple.cols[0].Position:
			tuple2 = tr
		default:
			p.exact = false
		}
	}
	if err := r.checkClusteringProduct(tuple); err != nil {
		return nil, err
	}
	i := 0
	for ; i < len(cks); i++ {
		if tuple != nil && tuple.cols[0].Position == i {
			break
		}
		rs := r.byCol[cks[i].Name]
		if len(rs) != 1 || (rs[0].op != parser.OpEq && rs[0].op != parser.OpIn) || rs[0].mapKey != nil {
			break
		}
		if r.prepare {
			// Unbound values: only the shape of the plan is needed.
			p.eqCols = i + 1
			continue
		}
		var next [][]byte
		for _, pre := range p.prefixes {
			for _, v := range rs[0].values {
				k, err := encodeClustering(r.t, append(decodedPrefix(r.t, pre, i), v))
				if err != nil {
					return nil, err
				}
				next = append(next, k)
			}
		}
		p.prefixes = next
		p.eqCols = i + 1
	}
	tupleUsed := tuple != nil && tuple.cols[0].Position == i
	if tupleUsed {
		switch tuple.op {
		case parser.OpEq, parser.OpIn:
			if !r.prepare {
				var next [][]byte
				for _, pre := range p.prefixes {
					for _, tv := range tuple.tuples {
						k, err := encodeClustering(r.t, append(decodedPrefix(r.t, pre, i), tv...))
						if err != nil {
							return nil, err
						}
						next = append(next, k)
					}
				}
				sort.Slice(next, func(a, b int) bool { return string(next[a]) < string(next[b]) })
				p.prefixes = dedupeBytes(next)
			}
			i += len(tuple.cols)
			p.eqCols = i
		default:
			for _, tr := range []*tupleRestriction{tuple, tuple2} {
				switch {
				case tr == nil:
				case r.prepare:
					p.placeholderBound(tr.op)
				case len(tr.tuples) == 1:
					if err := p.tupleBound(r.t, i, tr.tuples[0], tr.op); err != nil {
						return nil, err
					}
				}
			}
			i += len(tuple.cols)
			// Columns after the tuple stay unrestricted.
		}
	} else if i < len(cks) {
		for _, cr := range r.byCol[cks[i].Name] {
			switch cr.op {
			case parser.OpLt, parser.OpLte, parser.OpGt, parser.OpGte:
				if err := p.bound(r.t, cks[i], cr.op, cr.values[0], false); err != nil {
					return nil, err
				}
			default:
				p.exact = false
				p.needsFiltering = true
			}
		}
		if len(r.byCol[cks[i].Name]) > 0 {
			i++
		}
	}
	p.fullKey = p.eqCols == len(cks)
	// Anything restricted after this point is filtered.
	for j := i; j < len(cks); j++ {
		if len(r.byCol[cks[j].Name]) > 0 {
			p.exact = false
			p.needsFiltering = true
		}
	}
	for _, tr := range r.tuples {
		if !tupleUsed || (tr != tuple && tr != tuple2) {
			p.exact = false
			p.needsFiltering = true
		}
	}
	sort.Slice(p.prefixes, func(a, b int) bool { return string(p.prefixes[a]) < string(p.prefixes[b]) })
	p.prefixes = dedupeBytes(p.prefixes)
	return p, nil
}

// checkClusteringProduct applies the clustering limit to the prefixes
// clustering() would build: one per combination of the leading EQ/IN
// columns, times the tuples of a multi-column EQ/IN right after them.
func (r *restrictions) checkClusteringProduct(tuple *tupleRestriction) error {
	if r.prepare || r.limits.clustering <= 0 {
		return nil
	}
	cks := r.t.ClusteringColumns()
	var sizes []int
	i := 0
	for ; i < len(cks); i++ {
		if tuple != nil && tuple.cols[0].Position == i {
			break
		}
		rs := r.byCol[cks[i].Name]
		if len(rs) != 1 || (rs[0].op != parser.OpEq && rs[0].op != parser.OpIn) || rs[0].mapKey != nil {
			break
		}
		sizes = append(sizes, len(rs[0].values))
	}
	if tuple != nil && tuple.cols[0].Position == i && (tuple.op == parser.OpEq || tuple.op == parser.OpIn) {
		sizes = append(sizes, len(tuple.tuples))
	}
	return checkProduct("Clustering key", product(sizes...), r.limits.clustering, "max_clustering_key_restrictions_per_query")
}

func dedupeBytes(in [][]byte) [][]byte {
	out := in[:0]
	for i, v := range in {
		if i == 0 || string(v) != string(out[len(out)-1]) {
			out = append(out, v)
		}
	}
	return out
}

// decodedPrefix decodes the first n clustering values of an encoded prefix.
func decodedPrefix(t *schema.Table, pre []byte, n int) [][]byte {
	cks := t.ClusteringColumns()
	out := make([][]byte, 0, n+1)
	rest := pre
	for i := 0; i < n; i++ {
		v, r, err := cqltype.DecodeKey(cks[i].Type, rest, cks[i].Desc)
		if err != nil {
			return out
		}
		out = append(out, v)
		rest = r
	}
	return out
}

// bound narrows the slice with `col op v`. loose marks a bound derived from
// a multi-column slice, which must be inclusive (the filter does the rest).
func (p *clusteringPlan) bound(t *schema.Table, col *schema.Column, op parser.Operator, v []byte, loose bool) error {
	if v == nil {
		// Only while preparing: the value is not bound yet.
		p.placeholderBound(op)
		return nil
	}
	k, err := cqltype.AppendKey(nil, col.Type, v, col.Desc)
	if err != nil {
		return Invalid("clustering column %s: %v", col.Name, err)
	}
	lower := op == parser.OpGt || op == parser.OpGte
	inclusive := op == parser.OpGte || op == parser.OpLte || loose
	if col.Desc {
		lower = !lower // descending columns store larger values first
	}
	b := &kvpb.Bound{Key: k, Inclusive: inclusive}
	if lower {
		if p.start != nil {
			p.exact = false // two lower bounds: keep one, filter the other
			if string(k) < string(p.start.GetKey()) {
				return nil
			}
		}
		p.start = b
	} else {
		if p.end != nil {
			p.exact = false
			if string(k) > string(p.end.GetKey()) {
				return nil
			}
		}
		p.end = b
	}
	return nil
}

// placeholderBound records that a slice bound exists without its value,
// so that PREPARE applies the same rules as execution.
func (p *clusteringPlan) placeholderBound(op parser.Operator) {
	if op == parser.OpGt || op == parser.OpGte {
		if p.start == nil {
			p.start = &kvpb.Bound{}
		}
	} else if p.end == nil {
		p.end = &kvpb.Bound{}
	}
}

func isSlice(op parser.Operator) bool {
	return op == parser.OpLt || op == parser.OpLte || op == parser.OpGt || op == parser.OpGte
}

func isLower(op parser.Operator) bool { return op == parser.OpGt || op == parser.OpGte }

// tupleBound narrows the slice with a multi-column slice on clustering
// columns starting at position first. Tuples compare by value, column by
// column. When the columns share one clustering direction that order is
// key order (reversed for DESC), so the tuple's key encoding is an exact
// bound; with mixed directions only the first column bounds the slice,
// inclusively, and the row filter does the rest.
func (p *clusteringPlan) tupleBound(t *schema.Table, first int, vals [][]byte, op parser.Operator) error {
	cks := t.ClusteringColumns()
	desc := cks[first].Desc
	for i := range vals {
		if cks[first+i].Desc != desc {
			p.exact = false
			loose := parser.OpGte
			if !isLower(op) {
				loose = parser.OpLte
			}
			return p.bound(t, cks[first], loose, vals[0], true)
		}
	}
	var k []byte
	for i, v := range vals {
		var err error
		if k, err = cqltype.AppendKey(k, cks[first+i].Type, v, cks[first+i].Desc); err != nil {
			return Invalid("clustering column %s: %v", cks[first+i].Name, err)
		}
	}
	b := &kvpb.Bound{Key: k, Inclusive: op == parser.OpGte || op == parser.OpLte}
	if isLower(op) != desc {
		p.start = b
	} else {
		p.end = b
	}
	return nil
}

// slices returns the key slices of the plan within one partition.
func (p *clusteringPlan) slices() []*kvpb.Slice {
	var out []*kvpb.Slice
	for _, pre := range p.prefixes {
		s := &kvpb.Slice{}
		if p.start != nil {
			s.Start = &kvpb.Bound{Key: append(append([]byte(nil), pre...), p.start.GetKey()...), Inclusive: p.start.GetInclusive()}
		} else if len(pre) > 0 {
			s.Start = &kvpb.Bound{Key: pre, Inclusive: true}
		}
		if p.end != nil {
			s.End = &kvpb.Bound{Key: append(append([]byte(nil), pre...), p.end.GetKey()...), Inclusive: p.end.GetInclusive()}
		} else if len(pre) > 0 {
			s.End = &kvpb.Bound{Key: pre, Inclusive: true}
		}
		out = append(out, s)
	}
	if len(out) == 1 && out[0].Start == nil && out[0].End == nil {
		return nil
	}
	return out
}
