package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"sort"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/storage"
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
	linearizable bool
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
	if len(s.GroupBy) > 0 {
		return nil, Invalid("GROUP BY is not supported by cosmosd")
	}
	for _, rel := range s.Where {
		if rel.Op == parser.OpNeq {
			return nil, Invalid("Unsupported \"!=\" relation: %s != ...", rel.Column)
		}
	}
	if p.r, err = analyzeWhere(t, s.Where, b); err != nil {
		return nil, err
	}
	if p.limit, err = limitValue(t, s.Limit, b, "[limit]"); err != nil {
		return nil, err
	}
	if p.ppl, err = limitValue(t, s.PerPartitionLimit, b, "[per_partition_limit]"); err != nil {
		return nil, err
	}
	if vt != nil {
		p.filter = p.r.order
		p.tuples = p.r.tuples
		return p, nil
	}
	if err := p.plan(s, b); err != nil {
		return nil, err
	}
	return p, nil
}

func limitValue(t *schema.Table, term parser.Term, b *binder, name string) (int, error) {
	if term == nil {
		return 0, nil
	}
	v, err := b.term(term, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: name, Type: cqltype.Scalar(cqltype.Int)})
	if err != nil || b.prepare {
		return 0, err
	}
	if v.null || v.unset {
		return 0, Invalid("Invalid null value of limit")
	}
	n := int32Of(v.b)
	if n <= 0 {
		return 0, Invalid("LIMIT must be strictly positive")
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
		if len(r.byCol[c.Name]) > 0 {
			continue
		}
		for _, later := range cks[i+1:] {
			if len(r.byCol[later.Name]) > 0 {
				return "PRIMARY KEY column \"" + later.Name + "\" cannot be restricted as preceding column \"" + c.Name + "\" is not restricted"
			}
		}
		return ""
	}
	for i, c := range cks {
		for _, cr := range r.byCol[c.Name] {
			if cr.op != parser.OpEq && cr.op != parser.OpIn {
				for _, later := range cks[i+1:] {
					if len(r.byCol[later.Name]) > 0 {
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

// tupleHolds compares clustering values as a tuple in clustering order.
func tupleHolds(t *schema.Table, tr *tupleRestriction, r *qrow) bool {
	if r.ck == nil {
		return false
	}
	enc := func(vals [][]byte) []byte {
		var k []byte
		for i, c := range tr.cols {
			var err error
			if k, err = cqltype.AppendKey(k, c.Type, vals[i], c.Desc); err != nil {
				return nil
			}
		}
		return k
	}
	rowVals := make([][]byte, len(tr.cols))
	for i, c := range tr.cols {
		rowVals[i] = r.ck[c.Position]
	}
	rk := enc(rowVals)
	for _, tv := range tr.tuples {
		cmp := bytes.Compare(rk, enc(tv))
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

// pagingState is where a paged query resumes. It is opaque to clients.
type pagingState struct {
	keyIndex  int    // key mode: index of the key being read
	from      int64  // scan mode: first token not yet finished
	resume    []byte // last row key returned (exclusive resume point)
	partRows  int    // rows returned in resume's partition
	emitted   int    // rows returned so far (LIMIT)
	offset    int    // virtual tables: rows already returned
	staticKey []byte // partition whose static row is pending
}

func (s *pagingState) encode() []byte {
	b := []byte{1}
	b = binary.AppendUvarint(b, uint64(s.keyIndex))
	b = binary.AppendVarint(b, s.from)
	b = binary.AppendUvarint(b, uint64(len(s.resume)))
	b = append(b, s.resume...)
	b = binary.AppendUvarint(b, uint64(s.partRows))
	b = binary.AppendUvarint(b, uint64(s.emitted))
	b = binary.AppendUvarint(b, uint64(s.offset))
	return b
}

func decodePagingState(b []byte) (*pagingState, error) {
	bad := Invalid("Invalid value for the paging state")
	if len(b) == 0 || b[0] != 1 {
		return nil, bad
	}
	b = b[1:]
	s := &pagingState{}
	u := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	s.keyIndex = int(u())
	from, n := binary.Varint(b)
	if n <= 0 {
		return nil, bad
	}
	b = b[n:]
	s.from = from
	l := u()
	if uint64(len(b)) < l {
		return nil, bad
	}
	s.resume = append([]byte(nil), b[:l]...)
	b = b[l:]
	s.partRows = int(u())
	s.emitted = int(u())
	s.offset = int(u())
	if b == nil || s.keyIndex > 1<<24 || s.emitted > 1<<40 {
		return nil, bad
	}
	return s, nil
}

func (e *Executor) runSelect(ctx context.Context, sess *Session, s *parser.SelectStmt, b *binder, req Request, text string) (*Result, error) {
	p, err := e.analyzeSelect(sess, s, b, req)
	if err != nil {
		return nil, err
	}
	return e.executeSelect(ctx, sess, p, req)
}

func (e *Executor) executeSelect(ctx context.Context, sess *Session, p *selectPlan, req Request) (*Result, error) {
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
			// whole result in memory page by page.
			if len(req.PagingState) > 0 || countUpTo(p) > pageSize {
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
		case p.sortInMemory:
			collected = append(collected, r)
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

// countUpTo is a cheap bound used to decide whether an IN + ORDER BY query
// fits one page: the number of keys times their slices.
func countUpTo(p *selectPlan) int { return len(p.keys) * max(1, len(p.slices)) * 1000 }

// sortRows orders rows of several partitions by clustering order.
func sortRows(p *selectPlan, rows []*qrow) {
	keyOf := func(r *qrow) []byte {
		k, _ := encodeClustering(p.t, r.ck)
		return k
	}
	sort.SliceStable(rows, func(i, j int) bool {
		c := bytes.Compare(keyOf(rows[i]), keyOf(rows[j]))
		if p.reverse {
			return c > 0
		}
		return c < 0
	})
}

// rowSource produces the rows of a plan in order, reading from partitions
// page by page and maintaining the paging state.
type rowSource struct {
	e   *Executor
	p   *selectPlan
	ps  *pagingState
	ctx context.Context
	req Request

	cur cursor
	// lastEmitted is the key of the last row returned to the client and
	// lastEmittedHits the rows returned in its partition.
	lastEmitted     []byte
	lastEmittedHits int

	buf      []*kvpb.Row
	done     bool
	bytes    int64
	curPart  []byte // prefix of the partition being read
	static   *storage.Row
	partHits int    // rows emitted in curPart
	lastKey  []byte // key of the last row handed out
	// pending is a partition that so far has only a static row: it becomes
	// a row of its own unless a clustering row of it follows.
	pending *qrow
	virtual []*qrow
	vloaded bool
}

// emitted records that a row was returned to the client.
func (s *rowSource) emitted(r *qrow) {
	s.ps.emitted++
	s.partHits++
	s.lastEmitted, s.lastEmittedHits = s.lastKey, s.partHits
}

func (s *rowSource) charge() float64 { return float64(s.bytes) }

// exhausted reports that no row is left.
func (s *rowSource) exhausted() bool { return s.done && len(s.buf) == 0 && s.pending == nil }

// next returns the next row, or nil when there are no more.
func (s *rowSource) next(want int) (*qrow, error) {
	if s.p.vt != nil {
		return s.nextVirtual()
	}
	for {
		if len(s.buf) > 0 {
			kv := s.buf[0]
			prefix := partitionPrefixOf(kv.GetKey())
			if s.pending != nil && !bytes.Equal(prefix, s.curPart) {
				return s.takePending(), nil
			}
			s.buf = s.buf[1:]
			if s.p.ppl > 0 && bytes.Equal(prefix, s.curPart) && s.partHits >= s.p.ppl {
				continue
			}
			r, err := s.decode(kv, prefix)
			if err != nil {
				return nil, err
			}
			if r != nil {
				return r, nil
			}
			continue
		}
		if s.done {
			if s.pending != nil {
				return s.takePending(), nil
			}
			return nil, nil
		}
		if err := s.fetch(want); err != nil {
			return nil, err
		}
	}
}

func (s *rowSource) takePending() *qrow {
	r := s.pending
	s.pending = nil
	s.lastKey = append([]byte(nil), s.curPart...)
	return r
}

// decode turns a stored row into a qrow, tracking partitions and statics;
// it returns nil for a static row.
func (s *rowSource) decode(kv *kvpb.Row, prefix []byte) (*qrow, error) {
	k, err := storage.DecodeRowKey(kv.GetKey())
	if err != nil {
		return nil, ServerError("decode row key: %v", err)
	}
	if !bytes.Equal(prefix, s.curPart) {
		s.curPart = append([]byte(nil), prefix...)
		s.static = nil
		s.partHits = 0
		if len(s.ps.resume) > 0 && bytes.Equal(partitionPrefixOf(s.ps.resume), prefix) {
			s.partHits = s.ps.partRows
		}
	}
	row, err := storage.DecodeRow(kv.GetValue())
	if err != nil {
		return nil, ServerError("decode row: %v", err)
	}
	pk, err := decodePartitionKey(s.p.t, k.PK)
	if err != nil {
		return nil, ServerError("decode partition key: %v", err)
	}
	now := s.e.cfg.Now().Unix()
	hasCK := len(s.p.t.ClusteringColumns()) > 0
	if hasCK && len(k.CK) == 0 {
		s.static = &row
		// A partition resumed after one of its clustering rows already
		// produced rows: its static row only decorates what follows.
		resumedInside := len(s.ps.resume) > len(prefix) && bytes.Equal(partitionPrefixOf(s.ps.resume), prefix)
		if s.p.staticRows && !resumedInside && s.partHits == 0 {
			s.pending = &qrow{token: k.Token, pk: pk, static: &row, now: now}
		}
		return nil, nil
	}
	s.pending = nil
	q := &qrow{token: k.Token, pk: pk, row: &row, static: s.static, now: now}
	if hasCK {
		if q.ck, err = decodeClustering(s.p.t, k.CK); err != nil {
			return nil, ServerError("%v", err)
		}
	}
	s.lastKey = append([]byte(nil), kv.GetKey()...)
	return q, nil
}

func partitionPrefixOf(key []byte) []byte {
	if len(key) < 21 {
		return key
	}
	n := binary.BigEndian.Uint32(key[17:21])
	if uint64(len(key)-21) < uint64(n) {
		return key
	}
	return key[:21+n]
}

// cursor is where the next read of a rowSource starts.
type cursor struct {
	keyIndex int
	from     int64
	key      []byte
	partRows int
}

// fetch reads the next chunk from the cluster and advances the cursor.
func (s *rowSource) fetch(want int) error {
	p, c := s.p, &s.cur
	limit := want
	if limit <= 0 || len(p.filter) > 0 || len(p.tuples) > 0 {
		limit = internalChunk
	}
	ppl := p.ppl
	if len(p.filter) > 0 || len(p.tuples) > 0 {
		ppl = 0 // applied after filtering
	}
	if p.distinct {
		ppl = 1
	}
	req := &kvpb.ReadRequest{
		Linearizable: p.linearizable, Slices: p.slices, Reverse: p.reverse, Limit: uint32(limit),
		PerPartitionLimit: uint32(ppl), Clustering: len(p.t.ClusteringColumns()) > 0, Static: p.t.HasStatic(),
		NowMicros: s.e.cfg.Now().UnixMicro(), ResumeAfter: c.key, ResumePartitionRows: uint32(c.partRows),
	}
	if !p.scan {
		if c.keyIndex >= len(p.keys) {
			s.done = true
			return nil
		}
		first := p.keys[c.keyIndex]
		d := s.e.cfg.Meta.State().Ring(p.t.ID).Lookup(first.token)
		if d == nil {
			return ServerError("table %s has no partition for token %d", p.t.QualifiedName(), first.token)
		}
		end := c.keyIndex
		for end < len(p.keys) && p.keys[end].token <= d.GetEnd() {
			req.Keys = append(req.Keys, &kvpb.PartitionKey{Token: p.keys[end].token, Pk: p.keys[end].key})
			end++
		}
		resp, err := s.e.cfg.Router.Read(s.ctx, router.Target{Table: p.t.ID, Token: first.token}, req)
		if err != nil {
			return kvError(err, s.req.Consistency, false)
		}
		s.accept(resp)
		if !resp.GetMore() {
			c.keyIndex, c.key, c.partRows = end, nil, 0
			s.done = end >= len(p.keys)
			return nil
		}
		last := resp.GetRows()[len(resp.GetRows())-1].GetKey()
		c.key, c.partRows = last, int(resp.GetLastPartitionRows())
		c.keyIndex = s.keyIndexOf(last, c.keyIndex)
		return nil
	}
	if p.lo > p.hi || c.from > p.hi {
		s.done = true
		return nil
	}
	d := s.e.cfg.Meta.State().Ring(p.t.ID).Lookup(c.from)
	if d == nil {
		return ServerError("table %s has no partition for token %d", p.t.QualifiedName(), c.from)
	}
	req.Scan, req.ScanStart, req.ScanEnd = true, max(c.from, d.GetStart()), min(p.hi, d.GetEnd())
	resp, err := s.e.cfg.Router.Read(s.ctx, router.Target{Table: p.t.ID, Token: req.ScanStart}, req)
	if err != nil {
		return kvError(err, s.req.Consistency, false)
	}
	s.accept(resp)
	if resp.GetMore() {
		last := resp.GetRows()[len(resp.GetRows())-1].GetKey()
		k, err := storage.DecodeRowKey(last)
		if err != nil {
			return ServerError("decode row key: %v", err)
		}
		c.from, c.key, c.partRows = k.Token, last, int(resp.GetLastPartitionRows())
		return nil
	}
	c.key, c.partRows = nil, 0
	if req.ScanEnd >= p.hi {
		s.done = true
	} else {
		c.from = req.ScanEnd + 1
	}
	return nil
}

// keyIndexOf finds the index of the key whose partition holds row key k.
func (s *rowSource) keyIndexOf(k []byte, from int) int {
	prefix := partitionPrefixOf(k)
	for i := from; i < len(s.p.keys); i++ {
		if bytes.Equal(storage.PartitionRowsSpan(s.p.t.ID, s.p.keys[i].token, s.p.keys[i].key).Start, prefix) {
			return i
		}
	}
	return from
}

// pagingState returns where the next page starts: right after the last row
// handed to the client.
func (s *rowSource) pagingState() *pagingState {
	ps := *s.ps
	ps.resume = s.lastEmitted
	ps.partRows = s.lastEmittedHits
	if s.p.vt != nil || len(s.lastEmitted) == 0 {
		return &ps
	}
	if s.p.scan {
		if k, err := storage.DecodeRowKey(s.lastEmitted); err == nil {
			ps.from = k.Token
		}
	} else {
		ps.keyIndex = s.keyIndexOf(s.lastEmitted, s.ps.keyIndex)
	}
	return &ps
}

// accept takes a response's rows into the buffer.
func (s *rowSource) accept(resp *kvpb.ReadResponse) {
	s.buf = append(s.buf, resp.GetRows()...)
	s.bytes += resp.GetBytesRead()
}

// nextVirtual serves rows of a virtual table.
func (s *rowSource) nextVirtual() (*qrow, error) {
	if !s.vloaded {
		rows, err := s.p.vt.rows(s.e, s.p)
		if err != nil {
			return nil, err
		}
		s.virtual = rows
		if s.ps.offset < len(rows) {
			s.virtual = rows[s.ps.offset:]
		} else {
			s.virtual = nil
		}
		s.vloaded = true
	}
	if len(s.virtual) == 0 {
		s.done = true
		return nil, nil
	}
	r := s.virtual[0]
	s.virtual = s.virtual[1:]
	s.ps.offset++
	if len(s.virtual) == 0 {
		s.done = true
	}
	return r, nil
}
