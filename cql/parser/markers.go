package parser

import "sort"

// BindMarkers returns the bind markers of s ordered by Index (which is
// textual order), so the executor can describe the values of a prepared
// statement. The result holds the AST's own markers; len(result) is the
// number of values an EXECUTE must bind. It is empty for statements
// without markers (DDL never has any).
func BindMarkers(s Statement) []*BindMarker {
	var w markerWalker
	w.stmt(s)
	sort.Slice(w.out, func(i, j int) bool { return w.out[i].Index < w.out[j].Index })
	return w.out
}

type markerWalker struct{ out []*BindMarker }

func (w *markerWalker) stmt(s Statement) {
	switch s := s.(type) {
	case *SelectStmt:
		for _, sel := range s.Selectors {
			w.selector(sel.Expr)
		}
		w.relations(s.Where)
		w.terms(s.PerPartitionLimit, s.Limit)
	case *InsertStmt:
		w.terms(s.Values...)
		w.term(s.Json)
		w.using(s.Using)
	case *UpdateStmt:
		for _, a := range s.Assignments {
			w.terms(a.Key, a.Value)
		}
		w.modification(s.Using, s.Where, s.Conditions)
	case *DeleteStmt:
		for _, d := range s.Columns {
			w.term(d.Key)
		}
		w.modification(s.Using, s.Where, s.Conditions)
	case *BatchStmt:
		w.using(s.Using)
		for _, st := range s.Statements {
			w.stmt(st)
		}
	}
}

func (w *markerWalker) using(u Using) { w.terms(u.TTL, u.Timestamp) }

// modification walks the clauses UPDATE and DELETE share. The order of the
// walk does not matter: BindMarkers sorts by Index.
func (w *markerWalker) modification(u Using, where []Relation, conds []Condition) {
	w.using(u)
	w.relations(where)
	for _, c := range conds {
		w.terms(c.Key, c.Value)
	}
}

func (w *markerWalker) relations(rs []Relation) {
	for _, r := range rs {
		w.terms(r.MapKey, r.Value)
	}
}

func (w *markerWalker) selector(e SelectorExpr) {
	switch e := e.(type) {
	case *FuncSel:
		for _, a := range e.Args {
			w.selector(a)
		}
	case *CastSel:
		w.selector(e.Arg)
	case *FieldSel:
		w.selector(e.Arg)
	case *TermSel:
		w.term(e.Term)
	}
}

func (w *markerWalker) terms(ts ...Term) {
	for _, t := range ts {
		w.term(t)
	}
}

func (w *markerWalker) term(t Term) {
	switch t := t.(type) {
	case *BindMarker:
		w.out = append(w.out, t)
	case *ListLit:
		w.terms(t.Elems...)
	case *SetLit:
		w.terms(t.Elems...)
	case *MapLit:
		w.terms(t.Keys...)
		w.terms(t.Values...)
	case *TupleLit:
		w.terms(t.Elems...)
	case *UDTLit:
		w.terms(t.Values...)
	case *FuncCall:
		w.terms(t.Args...)
	case *Cast:
		w.term(t.Term)
	case *InList:
		w.terms(t.Elems...)
	}
}
