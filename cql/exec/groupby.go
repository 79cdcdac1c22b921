package exec

import (
	"bytes"
	"context"
	"sort"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/schema"
)

// GROUP BY (issue 15, item 4) follows Cassandra 3.11: groups are prefixes of
// the primary key (the whole partition key, then clustering columns in
// order; a column restricted by = may be skipped), rows of a group are
// consecutive in read order, so groups are built while rows stream by.
// Non-aggregate selectors keep the first row of each group. LIMIT counts
// groups, PER PARTITION LIMIT counts groups in each partition, and a page
// holds at most page-size groups.
//
// Paging never splits a group: a page ends only when a row of a group the
// page will not return has been read, and the paging state resumes right
// after the last row of the last group returned (lastEmitted), so the next
// page starts with the row that was read and not used. A group is read in
// full by one page, however many rows it has; what a page returns is
// bounded by PageMaxBytes as for other pages, and an unpaged result by
// MaxUnpagedResultBytes.

// groupByColumns checks a GROUP BY clause and returns the columns whose
// values identify a group: the partition key and the clustering prefix up
// to the last column named. Messages are Cassandra's
// (SelectStatement.getAggregationSpecification).
func groupByColumns(t *schema.Table, r *restrictions, groups []string, distinct bool) ([]*schema.Column, error) {
	pkCols := append(append([]*schema.Column(nil), t.PartitionKey()...), t.ClusteringColumns()...)
	const order = "Group by currently only support groups of columns following their declared order in the PRIMARY KEY"
	next := 0 // index in pkCols of the next column a group may name
	for _, name := range groups {
		c := t.Column(name)
		if c == nil {
			return nil, Invalid("Undefined column name %s", name)
		}
		if !c.IsPrimaryKey() {
			return nil, Invalid("Group by is currently only supported on the columns of the PRIMARY KEY, got %s", name)
		}
		for {
			if next >= len(pkCols) {
				return nil, Invalid(order)
			}
			pc := pkCols[next]
			next++
			if pc.Name == c.Name {
				break
			}
			// A skipped column has a single value in the result, so it
			// does not split groups.
			if !restrictedByEq(r, pc.Name) {
				return nil, Invalid(order)
			}
		}
	}
	if next < len(pkCols) && pkCols[next].Kind == schema.PartitionKey {
		return nil, Invalid("Group by is not supported on only a part of the partition key")
	}
	if distinct && next > len(t.PartitionKey()) {
		return nil, Invalid("Grouping on clustering columns is not allowed for SELECT DISTINCT queries")
	}
	return pkCols[:next], nil
}

// restrictedByEq reports whether a column is restricted by = alone or by
// a multi-column = (Cassandra's isColumnRestrictedByEq).
func restrictedByEq(r *restrictions, name string) bool {
	for _, cr := range r.byCol[name] {
		if cr.op == parser.OpEq && cr.mapKey == nil {
			return true
		}
	}
	for _, tr := range r.tuples {
		if tr.op != parser.OpEq {
			continue
		}
		for _, c := range tr.cols {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// sameGroup reports whether rows a and b belong to one group.
func (p *selectPlan) sameGroup(a, b *qrow) bool {
	for _, c := range p.groupBy {
		if !bytes.Equal(a.value(c), b.value(c)) {
			return false
		}
	}
	return true
}

// samePartition reports whether rows a and b are of one partition.
func (p *selectPlan) samePartition(a, b *qrow) bool {
	for _, c := range p.t.PartitionKey() {
		if !bytes.Equal(a.value(c), b.value(c)) {
			return false
		}
	}
	return true
}

// executeGrouped runs a SELECT with GROUP BY; see the comment at the top
// of this file.
func (e *Executor) executeGrouped(ctx context.Context, p *selectPlan, req Request) (*Result, error) {
	rows := &Rows{Columns: p.sel.specs()}
	res := &Result{Kind: ResultRows, Rows: rows}
	ps := &pagingState{from: p.lo}
	if len(req.PagingState) > 0 {
		var err error
		if ps, err = decodePagingState(req.PagingState); err != nil {
			return nil, err
		}
	}
	pageSize := int(req.PageSize)
	if p.sortInMemory {
		// Groups of several partitions sorted by ORDER BY: the whole
		// result is built and sorted, so it must fit one page.
		if pageSize > 0 && len(p.keys) > 1 && (len(req.PagingState) > 0 || countUpTo(p) > pageSize) {
			return nil, Invalid("Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query")
		}
		pageSize = 0
	}
	if p.vt != nil && p.groupPPL > 0 {
		// Virtual rows carry no partition bookkeeping across pages; the
		// tables are small, so the result is built whole.
		pageSize = 0
	}
	src := &rowSource{e: e, p: p, ps: ps, ctx: ctx, req: req,
		cur: cursor{keyIndex: ps.keyIndex, from: ps.from, key: ps.resume, partRows: ps.partRows}}
	var (
		out      [][][]byte
		firsts   []*qrow // first row of each group in out, for ORDER BY
		outBytes int
		first    *qrow // first row of the group being built; nil if none
		prev     *qrow // last row read, for virtual partition tracking
		more     bool  // a row was read that a later page returns
	)
	finish := func() error {
		row := make([][]byte, len(p.sel.sels))
		for i, sel := range p.sel.sels {
			row[i] = sel.result()
		}
		out = append(out, row)
		firsts = append(firsts, first)
		first = nil
		if outBytes += rowBytes(row); pageSize <= 0 && outBytes > e.cfg.MaxUnpagedResultBytes {
			return Invalid("Result of an unpaged query exceeds %d bytes (max_unpaged_result_bytes); page the query (set a page size) or add a LIMIT",
				e.cfg.MaxUnpagedResultBytes)
		}
		return nil
	}
	for {
		r, err := src.next(0)
		if err != nil {
			return nil, err
		}
		if r == nil {
			break
		}
		if !p.matches(r) {
			continue
		}
		if p.vt != nil && (prev == nil || !p.samePartition(prev, r)) {
			// Real rows reset partHits in rowSource.decode.
			src.partHits = 0
		}
		prev = r
		if first == nil || !p.sameGroup(first, r) {
			if p.groupPPL > 0 && src.partHits >= p.groupPPL {
				continue // a group past PER PARTITION LIMIT
			}
			if p.limit > 0 && !p.sortInMemory && ps.emitted >= p.limit {
				break // LIMIT groups are done: no next page
			}
			if first != nil && pageSize > 0 && (len(out)+1 >= pageSize || outBytes >= e.cfg.PageMaxBytes) {
				more = true
				if p.vt != nil {
					ps.offset-- // r is returned by the next page
				}
				break
			}
			if first != nil {
				if err := finish(); err != nil {
					return nil, err
				}
			}
			first = r
			for _, sel := range p.sel.sels {
				sel.reset()
			}
			ps.emitted++
			src.partHits++
		}
		for _, sel := range p.sel.sels {
			if err := sel.add(r); err != nil {
				return nil, err
			}
		}
		// The page resumes after the last row of its last group;
		// partHits counts the groups of the partition.
		src.lastEmitted, src.lastEmittedHits = src.lastKey, src.partHits
	}
	if first != nil {
		if err := finish(); err != nil {
			return nil, err
		}
	}
	if p.sortInMemory {
		idx := make([]int, len(out))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool { return p.orderLess(firsts[idx[i]], firsts[idx[j]]) })
		sorted := make([][][]byte, 0, len(out))
		for _, i := range idx {
			if p.limit > 0 && len(sorted) >= p.limit {
				break
			}
			sorted = append(sorted, out[i])
		}
		out = sorted
	}
	rows.Rows = out
	if more {
		rows.PagingState = src.pagingState().encode()
	}
	res.Charge = src.charge()
	return res, nil
}
