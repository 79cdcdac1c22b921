package parser

// selectStmt parses SELECT [JSON] [DISTINCT] selectors FROM t [WHERE ...]
// [GROUP BY ...] [ORDER BY ...] [PER PARTITION LIMIT n] [LIMIT n]
// [ALLOW FILTERING].
func (p *parser) selectStmt() (Statement, error) {
	p.pos++ // SELECT
	s := &SelectStmt{}
	// "json" and "distinct" are also valid column names. Like Cassandra's
	// syntactic predicates, treat them as keywords only if a select clause
	// parses after them; otherwise reparse them as selectors.
	parsed := false
	if p.isKw("json") {
		save, saveMarkers := p.pos, p.markers
		p.pos++
		var err error
		if s.Distinct, s.Star, s.Selectors, err = p.selectClause(); err == nil {
			s.Json, parsed = true, true
		} else {
			p.speculationFailed(err)
			p.pos, p.markers = save, saveMarkers
		}
	}
	if !parsed {
		var err error
		if s.Distinct, s.Star, s.Selectors, err = p.selectClause(); err != nil {
			return nil, err
		}
	}
	if err := p.expectKw("from"); err != nil {
		return nil, err
	}
	var err error
	if s.Table, err = p.tableName(); err != nil {
		return nil, err
	}
	if p.acceptKw("where") {
		if s.Where, err = p.whereClause(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("group") {
		if err := p.expectKw("by"); err != nil {
			return nil, err
		}
		if s.GroupBy, err = p.identList(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("order") {
		if err := p.expectKw("by"); err != nil {
			return nil, err
		}
		if s.OrderBy, err = p.orderings(false); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("per") {
		if err := p.expectKws("partition", "limit"); err != nil {
			return nil, err
		}
		if s.PerPartitionLimit, err = p.intValue(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("limit") {
		if s.Limit, err = p.intValue(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("allow") {
		if err := p.expectKw("filtering"); err != nil {
			return nil, err
		}
		s.AllowFiltering = true
	}
	return s, nil
}

// selectClause parses [DISTINCT] (* | selector, ...).
func (p *parser) selectClause() (distinct, star bool, sels []Selector, err error) {
	if p.isKw("distinct") {
		save, saveMarkers := p.pos, p.markers
		p.pos++
		if star, sels, err = p.selectors(); err == nil {
			return true, star, sels, nil
		}
		p.speculationFailed(err)
		p.pos, p.markers = save, saveMarkers
	}
	star, sels, err = p.selectors()
	return false, star, sels, err
}

func (p *parser) selectors() (bool, []Selector, error) {
	if p.acceptPunct("*") {
		return true, nil, nil
	}
	sels, err := sepList(p.selector, p.comma)
	return false, sels, err
}

// selector parses one selector with its optional alias.
func (p *parser) selector() (Selector, error) {
	e, err := p.selectorExpr()
	if err != nil {
		return Selector{}, err
	}
	sel := Selector{Expr: e}
	if p.acceptKw("as") {
		sel.Alias, err = p.ident("")
	}
	return sel, err
}

// selectorExpr parses one unaliased selector, with any ".field" suffixes.
func (p *parser) selectorExpr() (SelectorExpr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	e, err := p.selectorBase()
	if err != nil {
		return nil, err
	}
	for p.isPunct(".") && isIdentTok(p.peekN(1)) {
		p.pos++
		e = &FieldSel{Arg: e, Field: p.advance().text}
	}
	return e, nil
}

func (p *parser) selectorBase() (SelectorExpr, error) {
	t := p.peek()
	if isPunctTok(t, "(") {
		if c, ok := p.typeHint(); ok {
			inner, err := p.term()
			if err != nil {
				return nil, err
			}
			return &TermSel{Term: &Cast{Term: inner, Type: c}}, nil
		}
		return nil, p.noViable()
	}
	if p.isFuncStart() {
		unquoted := t.kind == tIdent
		name := p.funcName()
		switch {
		case unquoted && name == "count" && isPunctTok(p.peekN(1), "*"):
			p.pos += 2
			return &CountStar{}, p.expectPunct(")")
		case unquoted && name == "cast":
			p.pos++ // (
			arg, err := p.selectorExpr()
			if err != nil {
				return nil, err
			}
			if err := p.expectKw("as"); err != nil {
				return nil, err
			}
			typ, err := p.cqlType()
			if err != nil {
				return nil, err
			}
			return &CastSel{Arg: arg, Type: typ}, p.expectPunct(")")
		}
		p.pos++ // (
		f := &FuncSel{Name: name}
		if !p.acceptPunct(")") {
			var err error
			if f.Args, err = sepList(p.selectorExpr, p.comma); err != nil {
				return nil, err
			}
			if err := p.expectPunct(")"); err != nil {
				return nil, err
			}
		}
		if unquoted && name == "count" && len(f.Args) == 1 {
			if ts, ok := f.Args[0].(*TermSel); ok {
				if lit, ok := ts.Term.(*Literal); ok && lit.Kind == LitInteger && lit.Text == "1" {
					return &CountStar{}, nil
				}
			}
		}
		return f, nil
	}
	if isIdentTok(t) {
		p.pos++
		return &ColumnSel{Name: t.text}, nil
	}
	if !p.startsTerm(0) {
		return nil, p.noViable()
	}
	term, err := p.term()
	if err != nil {
		return nil, err
	}
	return &TermSel{Term: term}, nil
}

// orderings parses "col [ASC|DESC] (, col [ASC|DESC])*". With
// needDirection (CLUSTERING ORDER BY) the direction is mandatory.
func (p *parser) orderings(needDirection bool) ([]Ordering, error) {
	return sepList(func() (Ordering, error) {
		col, err := p.ident("")
		if err != nil {
			return Ordering{}, err
		}
		o := Ordering{Column: col}
		switch {
		case p.acceptKw("desc"):
			o.Desc = true
		case p.acceptKw("asc"):
		case needDirection:
			return Ordering{}, p.noViable()
		}
		return o, nil
	}, p.comma)
}

// whereClause parses relation (AND relation)*.
func (p *parser) whereClause() ([]Relation, error) { return sepList(p.relation, p.and) }

var relOps = map[string]Operator{"=": OpEq, "!=": OpNeq, "<": OpLt, "<=": OpLte, ">": OpGt, ">=": OpGte}

// relOp parses = != < <= > >=.
func (p *parser) relOp() (Operator, bool) {
	if t := p.peek(); t.kind == tPunct {
		if op, ok := relOps[t.text]; ok {
			p.pos++
			return op, true
		}
	}
	return 0, false
}

// relation parses one WHERE restriction.
func (p *parser) relation() (Relation, error) {
	if err := p.enter(); err != nil {
		return Relation{}, err
	}
	defer p.leave()
	t := p.peek()
	switch {
	case isKwTok(t, "token") && isPunctTok(p.peekN(1), "("):
		p.pos++
		cols, err := p.parenIdentList()
		if err != nil {
			return Relation{}, err
		}
		op, ok := p.relOp()
		if !ok {
			return Relation{}, p.noViable()
		}
		v, err := p.term()
		return Relation{Kind: RelToken, Columns: cols, Op: op, Value: v}, err
	case isPunctTok(t, "("):
		if n := p.peekN(2); isIdentTok(p.peekN(1)) && (isPunctTok(n, ",") || isPunctTok(n, ")")) {
			return p.tupleRelation()
		}
		p.pos++
		r, err := p.relation()
		if err != nil {
			return Relation{}, err
		}
		return r, p.expectPunct(")")
	}
	col, err := p.ident("")
	if err != nil {
		return Relation{}, err
	}
	r := Relation{Kind: RelColumn, Column: col}
	if p.acceptPunct("[") {
		r.Kind = RelMapEntry
		if r.MapKey, err = p.term(); err != nil {
			return r, err
		}
		if err := p.expectPunct("]"); err != nil {
			return r, err
		}
		op, ok := p.relOp()
		if !ok {
			return r, p.noViable()
		}
		r.Op = op
		r.Value, err = p.term()
		return r, err
	}
	var ok bool
	if r.Op, r.Value, ok, err = p.opAndValue(true); ok || err != nil {
		return r, err
	}
	if p.acceptKw("is") {
		r.Op = OpIsNotNull
		return r, p.expectKws("not", "null")
	}
	return r, p.noViable()
}

// opAndValue parses the operator and right-hand side that a relation and
// an IF condition share: a comparison and a term, IN and its values, or,
// with contains, CONTAINS [KEY] and a term. ok is false, and nothing is
// consumed, when none of them follows.
func (p *parser) opAndValue(contains bool) (op Operator, v Term, ok bool, err error) {
	if op, ok := p.relOp(); ok {
		v, err := p.term()
		return op, v, true, err
	}
	switch {
	case p.acceptKw("in"):
		v, err := p.inValues()
		return OpIn, v, true, err
	case contains && p.acceptKw("contains"):
		op := OpContains
		if p.isKw("key") && !isPunctTok(p.peekN(1), "(") {
			p.pos++
			op = OpContainsKey
		}
		v, err := p.term()
		return op, v, true, err
	}
	return 0, nil, false, nil
}

// tupleRelation parses (c1, c2, ...) followed by IN values or a comparison
// with a tuple literal or a marker.
func (p *parser) tupleRelation() (Relation, error) {
	cols, err := p.parenIdentList()
	if err != nil {
		return Relation{}, err
	}
	r := Relation{Kind: RelTuple, Columns: cols}
	if p.acceptKw("in") {
		r.Op = OpIn
		r.Value, err = p.inValues()
		return r, err
	}
	op, ok := p.relOp()
	if !ok {
		return r, p.noViable()
	}
	r.Op = op
	if m, ok, err := p.marker(); ok {
		r.Value = m
		return r, err
	}
	elems, err := p.termList("(", ")", false)
	r.Value = &TupleLit{Elems: elems}
	return r, err
}

// inValues parses the right side of IN: a marker, or "(term, ...)"
// (possibly empty).
func (p *parser) inValues() (Term, error) {
	if m, ok, err := p.marker(); ok {
		return m, err
	}
	elems, err := p.termList("(", ")", true)
	if err != nil {
		return nil, err
	}
	return &InList{Elems: elems}, nil
}
