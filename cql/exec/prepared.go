package exec

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/schema"
)

// Prepared is a prepared statement.
type Prepared struct {
	ID       []byte
	Query    string
	Keyspace string // the session keyspace it was prepared in
	Stmt     parser.Statement
	// Variables describes the bind markers in order.
	Variables []ColumnSpec
	// PKIndices maps partition-key columns to variable indexes; empty when
	// some partition-key column is not bound by a marker.
	PKIndices []uint16
	// ResultColumns describes the rows of a SELECT (nil otherwise).
	ResultColumns []ColumnSpec
	markers       int
	// tables are the tables the statement was analysed against, with
	// their shape then: when one changes, the metadata above may be
	// wrong, so the statement must be prepared again.
	tables []*tableShape
}

// tableShape identifies a table definition as far as prepared metadata
// depends on it: the table's id (a re-created table has a new one) and its
// columns.
type tableShape struct {
	keyspace, name string
	shape          string
	// seen is the last definition found to have this shape, so that
	// executions only compare shapes after a schema change.
	seen atomic.Pointer[schema.Table]
}

func shape(t *schema.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", t.ID)
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "|%s %s %s %d %v", c.Name, c.Type, c.Kind, c.Position, c.Desc)
	}
	return b.String()
}

func shapeOf(t *schema.Table) *tableShape {
	ts := &tableShape{keyspace: t.Keyspace, name: t.Name, shape: shape(t)}
	ts.seen.Store(t)
	return ts
}

// stale reports whether a table the statement was prepared against has
// changed or gone.
func (e *Executor) stale(p *Prepared) bool {
	st := e.cfg.Meta.State().Schema
	for _, ts := range p.tables {
		if isSystemKeyspace(ts.keyspace) {
			continue // virtual tables never change
		}
		t := st.Table(ts.keyspace, ts.name)
		switch {
		case t == nil:
			return true
		case t == ts.seen.Load():
		case shape(t) != ts.shape:
			return true
		default:
			ts.seen.Store(t)
		}
	}
	return false
}

func (c *preparedCache) remove(id []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[string(id)]; ok {
		c.order.Remove(el)
		delete(c.byID, string(id))
		c.bytes -= cost(el.Value.(*Prepared))
	}
}

// lookup returns a prepared statement that is still valid, evicting one
// whose tables changed (Cassandra drops those on schema changes, and
// drivers prepare again on Unprepared).
func (e *Executor) lookup(id []byte) (*Prepared, error) {
	p, ok := e.prepared.get(id)
	if ok && e.stale(p) {
		e.prepared.remove(id)
		return nil, &Error{Code: CodeUnprepared, Message: "Prepared query with ID " + hexID(id) + " is no longer valid: the schema of its table changed; prepare it again", PreparedID: id}
	}
	if !ok {
		return nil, &Error{Code: CodeUnprepared, Message: "Prepared query with ID " + hexID(id) + " not found (either the query was not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries and it has been evicted from the internal cache)", PreparedID: id}
	}
	return p, nil
}

// preparedCache is an LRU of prepared statements bounded in count and in
// (estimated) bytes. Safe for concurrent use.
type preparedCache struct {
	mu       sync.Mutex
	max      int
	maxBytes int64
	bytes    int64 // sum of cost() over the cache
	order    *list.List
	byID     map[string]*list.Element
}

func newPreparedCache(max int, maxBytes int64) *preparedCache {
	return &preparedCache{max: max, maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}}
}

// cost estimates the memory a prepared statement holds: its text and its
// AST, which takes up to about 20 bytes per byte of dense text (a long IN
// list), plus a constant for the metadata.
func cost(p *Prepared) int64 { return 1024 + 32*int64(len(p.Query)) }

// fits reports whether a statement can be cached at all.
func (c *preparedCache) fits(p *Prepared) bool { return cost(p) <= c.maxBytes }

func (c *preparedCache) get(id []byte) (*Prepared, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[string(id)]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*Prepared), true
}

func (c *preparedCache) put(p *Prepared) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[string(p.ID)]; ok {
		c.bytes += cost(p) - cost(el.Value.(*Prepared))
		el.Value = p
		c.order.MoveToFront(el)
	} else {
		c.byID[string(p.ID)] = c.order.PushFront(p)
		c.bytes += cost(p)
	}
	for c.order.Len() > c.max || (c.bytes > c.maxBytes && c.order.Len() > 1) {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byID, string(last.Value.(*Prepared).ID))
		c.bytes -= cost(last.Value.(*Prepared))
	}
}

// Prepare parses and analyses a statement and caches it.
func (e *Executor) Prepare(ctx context.Context, sess *Session, query string) (*Prepared, error) {
	stmt, err := parse(query)
	if err != nil {
		return nil, err
	}
	markers := parser.BindMarkers(stmt)
	b := newPrepareBinder(len(markers))
	p := &Prepared{ID: preparedID(sess.Keyspace(), query), Query: query, Keyspace: sess.Keyspace(), Stmt: stmt, markers: len(markers)}
	var table *schema.Table
	switch s := stmt.(type) {
	case *parser.SelectStmt:
		sp, err := e.analyzeSelect(sess, s, b, Request{Consistency: One})
		if err != nil {
			return nil, err
		}
		p.ResultColumns = sp.sel.specs()
		table = sp.t
		p.tables = append(p.tables, shapeOf(sp.t))
	case *parser.InsertStmt, *parser.UpdateStmt, *parser.DeleteStmt:
		mp, err := e.analyzeModify(sess, stmt, b, modContext{})
		if err != nil {
			return nil, err
		}
		// A conditional statement's rows vary ([applied] alone, or with
		// the current values), so like Cassandra 3.x it announces no
		// result metadata and its results always carry their own.
		table = mp.table
		p.tables = append(p.tables, shapeOf(mp.table))
	case *parser.BatchStmt:
		mc := modContext{inBatch: true}
		if s.Using.TTL != nil {
			return nil, Invalid("Global TTL on the BATCH statement is not supported")
		}
		if s.Using.Timestamp != nil {
			// Records the marker's type, as execution binds it first.
			if _, _, err := e.timestamp(s.Using, &schema.Table{Name: "batch"}, b, modContext{}); err != nil {
				return nil, err
			}
			mc.batchUsingTS = true
		}
		for _, st := range s.Statements {
			mp, err := e.analyzeModify(sess, st, b, mc)
			if err != nil {
				return nil, err
			}
			p.tables = append(p.tables, shapeOf(mp.table))
		}
	}
	p.Variables = b.specs
	for i := range p.Variables {
		if p.Variables[i].Name == "" {
			// A marker analysis never reached (e.g. in a clause the
			// statement kind ignores) still needs a type for drivers.
			p.Variables[i].Name = "[unknown]"
			p.Variables[i].Type = blobType
		}
	}
	if table != nil {
		p.PKIndices = pkIndices(table, stmt, markers)
	}
	if !e.prepared.fits(p) {
		// As Cassandra: a statement that would fill the cache alone is
		// refused; it can still run unprepared.
		return nil, Invalid("Prepared statement of %d bytes is too large for the prepared statement cache (at most about %d bytes); run it as a plain query",
			len(query), e.cfg.PreparedCacheBytes/32)
	}
	e.prepared.put(p)
	return p, nil
}

// pkIndices maps each partition-key column to the marker that binds it by
// equality (WHERE pk = ? or INSERT ... VALUES (?)).
func pkIndices(t *schema.Table, stmt parser.Statement, markers []*parser.BindMarker) []uint16 {
	bound := map[string]int{}
	eq := func(col string, term parser.Term) {
		if m, ok := term.(*parser.BindMarker); ok {
			bound[col] = m.Index
		}
	}
	var where []parser.Relation
	switch s := stmt.(type) {
	case *parser.InsertStmt:
		for i, c := range s.Columns {
			if i < len(s.Values) {
				eq(c, s.Values[i])
			}
		}
	case *parser.SelectStmt:
		where = s.Where
	case *parser.UpdateStmt:
		where = s.Where
	case *parser.DeleteStmt:
		where = s.Where
	}
	for _, r := range where {
		if r.Kind == parser.RelColumn && r.Op == parser.OpEq {
			eq(r.Column, r.Value)
		}
	}
	var out []uint16
	for _, c := range t.PartitionKey() {
		i, ok := bound[c.Name]
		if !ok {
			return nil
		}
		out = append(out, uint16(i))
	}
	return out
}

// Execute runs a prepared statement. ErrUnprepared (an *Error with code
// Unprepared) asks the client to prepare it again.
func (e *Executor) Execute(ctx context.Context, sess *Session, id []byte, req Request) (*Result, error) {
	p, err := e.lookup(id)
	if err != nil {
		return nil, err
	}
	b, err := e.newBinder(req.Values, req.Names, p.markers)
	if err != nil {
		return nil, err
	}
	ps := sess
	if p.Keyspace != "" {
		ps = sess.withKeyspace(p.Keyspace)
	}
	return e.run(ctx, ps, p.Stmt, b, req, p.Query)
}

func hexID(id []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(id))
	for _, b := range id {
		out = append(out, digits[b>>4], digits[b&15])
	}
	return string(out)
}

// BatchStatement is one statement of a protocol BATCH message: query text
// or a prepared id, with its values.
type BatchStatement struct {
	Query  string
	ID     []byte
	Values []Value
}

// Batch runs a protocol BATCH message.
func (e *Executor) Batch(ctx context.Context, sess *Session, kind parser.BatchKind, stmts []BatchStatement, req Request) (*Result, error) {
	items := make([]batchItem, 0, len(stmts))
	if obs := e.cfg.ObserveStatement; obs != nil {
		start := time.Now()
		defer func() {
			// Observed as the BATCH statement it amounts to.
			bs := &parser.BatchStmt{Kind: kind}
			for _, it := range items {
				bs.Statements = append(bs.Statements, it.stmt)
			}
			obs(bs, sess.Keyspace(), time.Since(start))
		}()
	}
	// tokens is what the batch's query strings may still have: their
	// ASTs are all kept until the batch is applied, so they share the
	// bound one statement has.
	tokens := parser.MaxTokens
	for _, bs := range stmts {
		var stmt parser.Statement
		ksSess := sess
		if bs.ID != nil {
			p, err := e.lookup(bs.ID)
			if err != nil {
				return nil, err
			}
			stmt = p.Stmt
			if p.Keyspace != "" {
				ksSess = sess.withKeyspace(p.Keyspace)
			}
		} else {
			stmt2, n, err := parseLimited(bs.Query, tokens)
			if err != nil {
				if n >= tokens && tokens < parser.MaxTokens {
					return nil, Invalid("BATCH too large: its statements have more than %d tokens in all; send fewer statements per batch, or prepare them", parser.MaxTokens)
				}
				return nil, err
			}
			stmt, tokens = stmt2, tokens-n
		}
		switch stmt.(type) {
		case *parser.InsertStmt, *parser.UpdateStmt, *parser.DeleteStmt:
		default:
			return nil, Invalid("Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.")
		}
		if err := e.authorize(ksSess, stmt); err != nil {
			return nil, err
		}
		b, err := e.newBinder(bs.Values, nil, len(parser.BindMarkers(stmt)))
		if err != nil {
			return nil, err
		}
		_ = ksSess
		items = append(items, batchItem{stmt: stmt, b: b, sess: ksSess})
	}
	return e.runBatch(ctx, sess, kind, parser.Using{}, items, req)
}
