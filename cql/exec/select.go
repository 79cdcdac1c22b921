package exec

import (
	"context"
	"sort"
	"strings"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/schema"
)

// DefaultPageSize applies when a client asks for no paging on a query that
// must page internally (aggregates, filtering).
const internalChunk = 5000

// selectPlan is an analysed SELECT.
type selectPlan struct {
	t  *schema.Table
	vt *virtualTable
	r  *restrictions
	cp *clusteringPlan

	sel      *selection
	keys     []partitionKey // key mode; nil for scans
	scan     bool
	lo, hi   int64 // scan token range
	slices   []*kvpb.Slice
	reverse  bool
	limit    int // 0 = none
	ppl      int // per partition limit, 0 = none
	distinct bool
	// filter holds restrictions evaluated on every row.
	filter []*colRestriction
	tuples []*tupleRestriction
	// staticOnly rows (partitions without rows) are returned only when
	// nothing restricts clustering columns.
	staticRows bool
	// sortInMemory: IN on the partition key with ORDER BY.
	sortInMemory bool
	// orderBy lists the ORDER BY columns; rows sorted in memory compare
	// on these only (ties keep their read order), as in Cassandra.
	orderBy      []orderCol
	linearizable bool
	// groupBy lists the columns whose values identify a group of GROUP
	// BY (partition key, then a clustering prefix); nil without GROUP BY.
	groupBy []*schema.Column
	// groupPPL is PER PARTITION LIMIT in groups under GROUP BY (ppl is
	// then 0); 0 = none.
	groupPPL int
}

func (e *Executor) analyzeSelect(sess *Session, s *parser.SelectStmt, b *binder, req Request) (*selectPlan, error) {
	t, vt, err := e.resolveTable(sess, s.Table)
	if err != nil {
		return nil, err
	}
	p := &selectPlan{t: t, vt: vt, distinct: s.Distinct, linearizable: linearizable(req.Consistency)}
	if p.sel, err = buildSelection(t, s, s.Distinct); err != nil {
		return nil, err
	}
	for _, rel := range s.Where {
		if rel.Op == parser.OpNeq {
			return nil, Invalid("Unsupported \"!=\" relation: %s != ...", rel.Column)
		}
	}
	if p.r, err = analyzeWhere(t, s.Where, b); err != nil {
		return nil, err
	}
	if p.limit, err = limitValue(t, s.Limit, b, "[limit]", "LIMIT"); err != nil {
		return nil, err
	}
	if p.ppl, err = limitValue(t, s.PerPartitionLimit, b, "[per_partition_limit]", "PER PARTITION LIMIT"); err != nil {
		return nil, err
	}
	if len(s.GroupBy) > 0 {
		if p.groupBy, err = groupByColumns(t, p.r, s.GroupBy, s.Distinct); err != nil {
			return nil, err
		}
		// PER PARTITION LIMIT counts groups: the reads must not cut
		// partitions by rows.
		p.groupPPL, p.ppl = p.ppl, 0
	}
	if vt != nil {
		p.filter = p.r.order
		p.tuples = p.r.tuples
		return p, nil
	}
	if err := p.plan(s, b); err != nil {
		return nil, err
	}
	if p.distinct && p.scan {
		// Cassandra: a key range DISTINCT returns whole partition keys.
		if missing := p.sel.missingPartitionKey(t); missing != "" {
			return nil, Invalid("SELECT DISTINCT queries must request all the partition key columns (missing %s)", missing)
		}
	}
	return p, nil
}

func limitValue(t *schema.Table, term parser.Term, b *binder, name, clause string) (int, error) {
	if term == nil {
		return 0, nil
	}
	v, err := b.term(term, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: name, Type: cqltype.Scalar(cqltype.Int)})
	if err != nil || b.prepare {
		return 0, err
	}
	if v.null || v.unset || len(v.b) != 4 {
		return 0, Invalid("Invalid null value of %s", strings.ToLower(clause))
	}
	n := int32Of(v.b)
	if n <= 0 {
		return 0, Invalid("%s must be strictly positive", clause)
	}
	return int(n), nil
}

const filteringMessage = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING"

// plan decides how to read the rows of a SELECT on a real table and checks
// Cassandra's restriction rules.
func (p *selectPlan) plan(s *parser.SelectStmt, b *binder) error {
	t, r := p.t, p.r
	needsFiltering := len(r.nonKeyColumns()) > 0
	var keys []partitionKey
	var fullPK bool
	var err error
	if !b.prepare {
		if keys, fullPK, err = r.partitionKeys(); err != nil {
			return err
		}
	} else {
		fullPK = true
		for _, c := range t.PartitionKey() {
			rs := r.byCol[c.Name]
			fullPK = fullPK && len(rs) == 1 && (rs[0].op == parser.OpEq || rs[0].op == parser.OpIn)
		}
	}
	if fullPK && r.hasToken {
		return Invalid("Columns \"%s\" cannot be restricted by both a normal relation and a token relation", partitionKeyNames(t))
	}
	cp, err := r.clustering()
	if err != nil {
		return err
	}
	p.cp = cp
	if fullPK {
		p.keys = keys
	} else {
		p.scan = true
		p.lo, p.hi = r.tokLo, r.tokHi
		if r.restrictsPartitionKey() {
			// Partial partition key: Cassandra filters.
			needsFiltering = true
			for _, c := range t.PartitionKey() {
				for _, cr := range r.byCol[c.Name] {
					if cr.op == parser.OpIn {
						return Invalid("IN restrictions are not supported when the query involves filtering")
					}
				}
			}
		}
		if len(r.tuples) > 0 || clusteringRestricted(r) {
			needsFiltering = true
		}
	}
	if cp.needsFiltering {
		needsFiltering = true
	}
	for _, cr := range r.order {
		if cr.op == parser.OpContains || cr.op == parser.OpContainsKey || cr.mapKey != nil {
			needsFiltering = true
		}
	}
	if needsFiltering && !s.AllowFiltering {
		if !p.scan && !cp.needsFiltering && len(r.nonKeyColumns()) == 0 {
			// key queries with exact clustering slices never filter
		} else {
			// Cassandra names the first skipped clustering column when
			// the partition key is given.
			if !p.scan {
				if msg := skippedClustering(r); msg != "" {
					return Invalid("%s", msg)
				}
			}
			return Invalid(filteringMessage)
		}
	}
	// Rows are narrowed by slices; everything else is filtered per row.
	p.slices = cp.slices()
	for _, cr := range r.order {
		if cr.col.Kind == schema.PartitionKey && !p.scan {
			continue
		}
		p.filter = append(p.filter, cr)
	}
	p.tuples = r.tuples
	p.staticRows = !clusteringRestricted(r) && len(r.tuples) == 0
	// ORDER BY.
	if len(s.OrderBy) > 0 {
		if p.scan {
			return Invalid("ORDER BY is only supported when the partition key is restricted by an EQ or an IN.")
		}
		cks := t.ClusteringColumns()
		reverse := false
		for i, o := range s.OrderBy {
			c := t.Column(o.Column)
			if c == nil {
				return Invalid("Undefined column name %s", o.Column)
			}
			if c.Kind != schema.Clustering {
				return Invalid("Order by is currently only supported on the clustered columns of the PRIMARY KEY, got %s", o.Column)
			}
			if c.Position != i || i >= len(cks) {
				return Invalid("Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY")
			}
			rev := o.Desc != c.Desc
			if i > 0 && rev != reverse {
				return Invalid("Unsupported order by relation")
			}
			reverse = rev
			p.orderBy = append(p.orderBy, orderCol{col: c, desc: o.Desc})
		}
		p.reverse = reverse
		if len(p.keys) > 1 || (b.prepare && hasIn(r, t)) {
			p.sortInMemory = true
		}
	}
	return nil
}

func hasIn(r *restrictions, t *schema.Table) bool {
	for _, c := range t.PartitionKey() {
		for _, cr := range r.byCol[c.Name] {
			if cr.op == parser.OpIn {
				return true
			}
		}
	}
	return false
}

func clusteringRestricted(r *restrictions) bool {
	for _, c := range r.t.ClusteringColumns() {
		if len(r.byCol[c.Name]) > 0 {
			return true
		}
	}
	return len(r.tuples) > 0
}

// skippedClustering returns Cassandra's message for a clustering column
// restricted after an unrestricted or slice-restricted one.
func skippedClustering(r *restrictions) string {
	cks := r.t.ClusteringColumns()
	for i, c := range cks {
		if r.restricts(c.Name) {
			continue
		}
		for _, later := range cks[i+1:] {
			if r.restricts(later.Name) {
				return "PRIMARY KEY column \"" + later.Name + "\" cannot be restricted as preceding column \"" + c.Name + "\" is not restricted"
			}
		}
		break
	}
	for i, c := range cks {
		for _, cr := range r.byCol[c.Name] {
			if cr.op != parser.OpEq && cr.op != parser.OpIn {
				for _, later := range cks[i+1:] {
					if r.restricts(later.Name) {
						return "Clustering column \"" + later.Name + "\" cannot be restricted (preceding column \"" + c.Name + "\" is restricted by a non-EQ relation)"
					}
				}
			}
		}
	}
	return ""
}

// matches evaluates the row filter.
func (p *selectPlan) matches(r *qrow) bool {
	for _, cr := range p.filter {
		if !restrictionHolds(cr, r) {
			return false
		}
	}
	for _, tr := range p.tuples {
		if !tupleHolds(p.t, tr, r) {
			return false
		}
	}
	if p.scan && p.vt == nil && (r.token < p.lo || r.token > p.hi) {
		return false
	}
	return true
}

func restrictionHolds(cr *colRestriction, r *qrow) bool {
	v := r.value(cr.col)
	t := cr.col.Type
	if cr.mapKey != nil {
		if v == nil {
			return false
		}
		keys, vals, err := cqltype.DecodeMap(v)
		if err != nil {
			return false
		}
		v = nil
		for i, k := range keys {
			if cqltype.Compare(t.Elems[0], k, cr.mapKey) == 0 {
				v = vals[i]
			}
		}
		t = t.Elems[1]
	}
	if v == nil {
		return false
	}
	switch cr.op {
	case parser.OpEq:
		return cqltype.Compare(t, v, cr.values[0]) == 0
	case parser.OpIn:
		for _, w := range cr.values {
			if cqltype.Compare(t, v, w) == 0 {
				return true
			}
		}
		return false
	case parser.OpLt:
		return cqltype.Compare(t, v, cr.values[0]) < 0
	case parser.OpLte:
		return cqltype.Compare(t, v, cr.values[0]) <= 0
	case parser.OpGt:
		return cqltype.Compare(t, v, cr.values[0]) > 0
	case parser.OpGte:
		return cqltype.Compare(t, v, cr.values[0]) >= 0
	case parser.OpContains, parser.OpContainsKey:
		var elems [][]byte
		et := t.Elems[0]
		if t.Kind == cqltype.Map {
			keys, vals, err := cqltype.DecodeMap(v)
			if err != nil {
				return false
			}
			elems = keys
			if cr.op == parser.OpContains {
				elems, et = vals, t.Elems[1]
			}
		} else {
			var err error
			if elems, err = cqltype.DecodeCollection(v); err != nil {
				return false
			}
		}
		for _, el := range elems {
			if cqltype.Compare(et, el, cr.values[0]) == 0 {
				return true
			}
		}
		return false
	}
	return false
}

// tupleHolds compares clustering values as a tuple: by value, column by
// column, whatever each column's clustering order (Cassandra's semantics
// since CASSANDRA-7281).
func tupleHolds(t *schema.Table, tr *tupleRestriction, r *qrow) bool {
	if r.ck == nil {
		return false
	}
	compare := func(tv [][]byte) int {
		for i, c := range tr.cols {
			if cmp := cqltype.Compare(c.Type, r.ck[c.Position], tv[i]); cmp != 0 {
				return cmp
			}
		}
		return 0
	}
	for _, tv := range tr.tuples {
		cmp := compare(tv)
		switch tr.op {
		case parser.OpEq, parser.OpIn:
			if cmp == 0 {
				return true
			}
		case parser.OpLt:
			return cmp < 0
		case parser.OpLte:
			return cmp <= 0
		case parser.OpGt:
			return cmp > 0
		case parser.OpGte:
			return cmp >= 0
		}
	}
	return false
}

func (e *Executor) runSelect(ctx context.Context, sess *Session, s *parser.SelectStmt, b *binder, req Request, text string) (*Result, error) {
	p, err := e.analyzeSelect(sess, s, b, req)
	if err != nil {
		return nil, err
	}
	return e.executeSelect(ctx, sess, p, req)
}

func (e *Executor) executeSelect(ctx context.Context, sess *Session, p *selectPlan, req Request) (*Result, error) {
	if p.groupBy != nil {
		return e.executeGrouped(ctx, p, req)
	}
	rows := &Rows{Columns: p.sel.specs()}
	res := &Result{Kind: ResultRows, Rows: rows}
	var ps *pagingState
	if len(req.PagingState) > 0 {
		var err error
		if ps, err = decodePagingState(req.PagingState); err != nil {
			return nil, err
		}
	} else {
		ps = &pagingState{from: p.lo}
	}
	pageSize := int(req.PageSize)
	if p.sel.aggregate || p.sortInMemory {
		if p.sortInMemory && pageSize > 0 && len(p.keys) > 1 {
			// Cassandra refuses this combination rather than sort a
			// whole result in memory page by page; a LIMIT within the
			// page size makes it one page. Results estimated to fit
			// one page are sorted and returned whole.
			onePage := p.limit > 0 && p.limit <= pageSize
			if len(req.PagingState) > 0 || (!onePage && countUpTo(p) > pageSize) {
				return nil, Invalid("Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query")
			}
		}
		pageSize = 0
	}
	// budget is how many rows this page may hold; -1 is unbounded.
	budget := -1
	if pageSize > 0 {
		budget = pageSize
	}
	if p.limit > 0 && !p.sel.aggregate && !p.sortInMemory {
		left := max(0, p.limit-ps.emitted)
		if budget < 0 || left < budget {
			budget = left
		}
	}
	src := &rowSource{e: e, p: p, ps: ps, ctx: ctx, req: req,
		cur: cursor{keyIndex: ps.keyIndex, from: ps.from, key: ps.resume, partRows: ps.partRows}}
	var out [][][]byte
	var collected []*qrow
	// outBytes is the encoded size of the rows in out (or collected):
	// a page ends once it reaches PageMaxBytes, and an unpaged result
	// fails once it passes MaxUnpagedResultBytes, so no SELECT holds more
	// than about that much, whatever its page size.
	outBytes := 0
	for budget != 0 {
		r, err := src.next(budget - len(out))
		if err != nil {
			return nil, err
		}
		if r == nil {
			break
		}
		if !p.matches(r) {
			continue
		}
		switch {
		case p.sel.aggregate:
			for _, sel := range p.sel.sels {
				if err := sel.add(r); err != nil {
					return nil, err
				}
			}
			// Counted as returned, so PER PARTITION LIMIT applies to
			// what is aggregated (the budget is unbounded here).
			src.emitted(r)
		case p.sortInMemory:
			// The whole result is sorted in memory, page or not.
			if outBytes += r.size; outBytes > e.cfg.MaxUnpagedResultBytes {
				return nil, Invalid("Result of a query with ORDER BY and an IN restriction on the partition key, sorted in memory, exceeds %d bytes (max_unpaged_result_bytes); add a LIMIT, use fewer partition keys, or remove the ORDER BY and sort client side",
					e.cfg.MaxUnpagedResultBytes)
			}
			collected = append(collected, r)
			src.emitted(r)
		default:
			row, err := p.sel.project(r)
			if err != nil {
				return nil, err
			}
			out = append(out, row)
			src.emitted(r)
			if budget > 0 && len(out) >= budget {
				budget = 0
			}
			outBytes += rowBytes(row)
			switch {
			case pageSize > 0 && outBytes >= e.cfg.PageMaxBytes:
				// Protocol v4 lets a page hold fewer rows than the page
				// size; the paging state says where to go on.
				budget = 0
			case pageSize <= 0 && outBytes > e.cfg.MaxUnpagedResultBytes:
				return nil, Invalid("Result of an unpaged query exceeds %d bytes (max_unpaged_result_bytes); page the query (set a page size) or add a LIMIT",
					e.cfg.MaxUnpagedResultBytes)
			}
		}
	}
	if p.sel.aggregate {
		agg := make([][]byte, len(p.sel.sels))
		for i, sel := range p.sel.sels {
			agg[i] = sel.result()
		}
		rows.Rows = [][][]byte{agg}
		res.Charge = src.charge()
		return res, nil
	}
	if p.sortInMemory {
		sortRows(p, collected)
		for _, r := range collected {
			if p.limit > 0 && len(out) >= p.limit {
				break
			}
			row, err := p.sel.project(r)
			if err != nil {
				return nil, err
			}
			out = append(out, row)
		}
	}
	rows.Rows = out
	if !src.exhausted() && pageSize > 0 && (p.limit == 0 || ps.emitted < p.limit) {
		rows.PagingState = src.pagingState().encode()
	}
	res.Charge = src.charge()
	return res, nil
}

// rowBytes is the encoded size of a result row: each cell is a [bytes].
func rowBytes(row [][]byte) int {
	n := 0
	for _, c := range row {
		n += 4 + len(c)
	}
	return n
}

// countUpTo is a cheap bound used to decide whether an IN + ORDER BY query
// fits one page: the number of keys times their slices.
func countUpTo(p *selectPlan) int { return len(p.keys) * max(1, len(p.slices)) * 1000 }

// orderCol is one column of ORDER BY.
type orderCol struct {
	col  *schema.Column
	desc bool
}

// sortRows orders rows of several partitions by the ORDER BY columns.
// The sort is stable, so rows equal on those columns keep the order they
// were read in (partition by partition), as Cassandra's does.
func sortRows(p *selectPlan, rows []*qrow) {
	sort.SliceStable(rows, func(i, j int) bool { return p.orderLess(rows[i], rows[j]) })
}

// orderLess reports whether row a sorts before row b by ORDER BY.
func (p *selectPlan) orderLess(a, b *qrow) bool {
	for _, o := range p.orderBy {
		c := cqltype.Compare(o.col.Type, a.value(o.col), b.value(o.col))
		if c == 0 {
			continue
		}
		if o.desc {
			return c > 0
		}
		return c < 0
	}
	return false
}
