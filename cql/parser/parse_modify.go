package parser

// insertStmt parses INSERT INTO t (cols) VALUES (terms) | JSON value
// [DEFAULT NULL|UNSET], then [IF NOT EXISTS] [USING ...].
func (p *parser) insertStmt() (Statement, error) {
	p.pos++ // INSERT
	if err := p.expectKw("into"); err != nil {
		return nil, err
	}
	s := &InsertStmt{}
	var err error
	if s.Table, err = p.tableName(); err != nil {
		return nil, err
	}
	if p.acceptKw("json") {
		if m, ok, err := p.marker(); ok {
			if err != nil {
				return nil, err
			}
			s.Json = m
		} else {
			doc, err := p.stringLiteral()
			if err != nil {
				return nil, err
			}
			s.Json = &Literal{Kind: LitString, Text: doc}
		}
		if p.acceptKw("default") {
			switch {
			case p.acceptKw("null"):
			case p.acceptKw("unset"):
				s.DefaultUnset = true
			default:
				return nil, p.noViable()
			}
		}
	} else {
		if s.Columns, err = p.parenIdentList(); err != nil {
			return nil, err
		}
		if err := p.expectKw("values"); err != nil {
			return nil, err
		}
		if s.Values, err = p.termList("(", ")", false); err != nil {
			return nil, err
		}
	}
	if s.IfNotExists, err = p.ifNotExists(); err != nil {
		return nil, err
	}
	return s, p.usingClause(&s.Using, false)
}

// usingClause parses an optional USING TTL x AND TIMESTAMP y (in any order;
// a repeated attribute keeps the last value, as in Cassandra). With
// timestampOnly (DELETE) only USING TIMESTAMP x is allowed.
func (p *parser) usingClause(u *Using, timestampOnly bool) error {
	if !p.acceptKw("using") {
		return nil
	}
	for {
		var err error
		switch {
		case p.acceptKw("timestamp"):
			u.Timestamp, err = p.intValue()
		case !timestampOnly && p.acceptKw("ttl"):
			u.TTL, err = p.intValue()
		case timestampOnly:
			return p.mismatch("K_TIMESTAMP")
		default:
			return p.noViable()
		}
		if err != nil {
			return err
		}
		if timestampOnly || !p.acceptKw("and") {
			return nil
		}
	}
}

// updateStmt parses UPDATE t [USING ...] SET assignments WHERE relations
// [IF EXISTS | IF conditions].
func (p *parser) updateStmt() (Statement, error) {
	p.pos++ // UPDATE
	s := &UpdateStmt{}
	var err error
	if s.Table, err = p.tableName(); err != nil {
		return nil, err
	}
	if err := p.usingClause(&s.Using, false); err != nil {
		return nil, err
	}
	if err := p.expectKw("set"); err != nil {
		return nil, err
	}
	if s.Assignments, err = sepList(p.assignment, p.comma); err != nil {
		return nil, err
	}
	s.Where, s.IfExists, s.Conditions, err = p.whereAndIf()
	return s, err
}

// whereAndIf parses the end UPDATE and DELETE share: WHERE relations
// [IF EXISTS | IF conditions].
func (p *parser) whereAndIf() (where []Relation, ifExists bool, conds []Condition, err error) {
	if err := p.expectKw("where"); err != nil {
		return nil, false, nil, err
	}
	if where, err = p.whereClause(); err != nil {
		return nil, false, nil, err
	}
	ifExists, conds, err = p.ifClause()
	return where, ifExists, conds, err
}

// subSelection parses the optional [key] or .field that may follow the
// column of an assignment, a condition or a DELETE target.
func (p *parser) subSelection() (key Term, field string, err error) {
	switch {
	case p.acceptPunct("["):
		if key, err = p.term(); err != nil {
			return nil, "", err
		}
		return key, "", p.expectPunct("]")
	case p.acceptPunct("."):
		field, err = p.ident("")
		return nil, field, err
	}
	return nil, "", nil
}

// assignment parses one SET item: c = v, c = c + v, c = c - v, c = v + c,
// c += v, c -= v, c[k] = v, c.f = v.
func (p *parser) assignment() (Assignment, error) {
	col, err := p.ident("")
	if err != nil {
		return Assignment{}, err
	}
	a := Assignment{Column: col}
	switch {
	case p.acceptPunct("+="):
		a.Op = AssignAdd
		a.Value, err = p.term()
		return a, err
	case p.acceptPunct("-="):
		a.Op = AssignSub
		a.Value, err = p.term()
		return a, err
	}
	// Neither "+=" nor "-=" starts a sub-selection, so parsing it after
	// them keeps "c[k] += v" the error it is in Cassandra.
	if a.Key, a.Field, err = p.subSelection(); err != nil {
		return a, err
	}
	if err := p.expectPunct("="); err != nil {
		return a, err
	}
	if a.Key != nil || a.Field != "" {
		a.Value, err = p.term()
		return a, err
	}
	// A bare identifier here can only be a column (terms never are), so
	// this is "c = c + v" or "c = c - v".
	if p.isIdent() && !p.isFuncStart() {
		otherTok := p.advance()
		var sig string
		switch {
		case p.acceptPunct("+"):
			a.Op, sig = AssignAdd, "+"
		case p.acceptPunct("-"):
			a.Op, sig = AssignSub, "-"
		default:
			return a, p.mismatch("'+' or '-'")
		}
		if otherTok.text != col {
			return a, p.errAt(otherTok, "Only expressions of the form X = X %s<value> are supported.", sig)
		}
		a.Value, err = p.term()
		return a, err
	}
	if a.Value, err = p.term(); err != nil {
		return a, err
	}
	if p.acceptPunct("+") {
		otherTok := p.peek()
		other, err := p.ident("")
		if err != nil {
			return a, err
		}
		if other != col {
			return a, p.errAt(otherTok, "Only expressions of the form X = <value> + X are supported.")
		}
		a.Op = AssignPrepend
	}
	return a, nil
}

// ifClause parses an optional IF EXISTS or IF condition (AND condition)*.
func (p *parser) ifClause() (bool, []Condition, error) {
	if !p.acceptKw("if") {
		return false, nil, nil
	}
	// "exists" is also a valid column name: IF exists = 1 is a condition.
	if p.isKw("exists") && !p.startsConditionOp(1) {
		p.pos++
		return true, nil, nil
	}
	conds, err := sepList(p.condition, p.and)
	return false, conds, err
}

// startsConditionOp reports whether the token n ahead can follow the column
// of a condition.
func (p *parser) startsConditionOp(n int) bool {
	t := p.peekN(n)
	if t.kind == tPunct {
		_, isOp := relOps[t.text]
		return isOp || t.text == "[" || t.text == "."
	}
	return isKwTok(t, "in") || isKwTok(t, "contains")
}

// condition parses col [ [key] | .field ] (op term | IN values | CONTAINS
// [KEY] term).
func (p *parser) condition() (Condition, error) {
	col, err := p.ident("")
	if err != nil {
		return Condition{}, err
	}
	c := Condition{Column: col}
	if c.Key, c.Field, err = p.subSelection(); err != nil {
		return c, err
	}
	var ok bool
	c.Op, c.Value, ok, err = p.opAndValue(c.Key == nil && c.Field == "")
	if !ok && err == nil {
		err = p.noViable()
	}
	return c, err
}

// deleteStmt parses DELETE [targets] FROM t [USING TIMESTAMP n] WHERE
// relations [IF EXISTS | IF conditions].
func (p *parser) deleteStmt() (Statement, error) {
	p.pos++ // DELETE
	s := &DeleteStmt{}
	var err error
	if !p.isKw("from") {
		if s.Columns, err = sepList(p.deleteTarget, p.comma); err != nil {
			return nil, err
		}
	}
	if err := p.expectKw("from"); err != nil {
		return nil, err
	}
	if s.Table, err = p.tableName(); err != nil {
		return nil, err
	}
	if err := p.usingClause(&s.Using, true); err != nil {
		return nil, err
	}
	s.Where, s.IfExists, s.Conditions, err = p.whereAndIf()
	return s, err
}

// deleteTarget parses one column, element or field that DELETE removes.
func (p *parser) deleteTarget() (DeleteTarget, error) {
	col, err := p.ident("")
	if err != nil {
		return DeleteTarget{}, err
	}
	d := DeleteTarget{Column: col}
	d.Key, d.Field, err = p.subSelection()
	return d, err
}

// batchStmt parses BEGIN [UNLOGGED|COUNTER] BATCH [USING ...] (insert |
// update | delete [;])* APPLY BATCH.
func (p *parser) batchStmt() (Statement, error) {
	p.pos++ // BEGIN
	s := &BatchStmt{}
	switch {
	case p.acceptKw("unlogged"):
		s.Kind = BatchUnlogged
	case p.isKw("counter"):
		p.pos++
		s.Kind = BatchCounter
	}
	if err := p.expectKw("batch"); err != nil {
		return nil, err
	}
	if err := p.usingClause(&s.Using, false); err != nil {
		return nil, err
	}
	for !p.isKw("apply") {
		var st Statement
		var err error
		switch t := p.peek(); {
		case isKwTok(t, "insert"):
			st, err = p.insertStmt()
		case isKwTok(t, "update"):
			st, err = p.updateStmt()
		case isKwTok(t, "delete"):
			st, err = p.deleteStmt()
		default:
			return nil, p.mismatch("K_INSERT, K_UPDATE, K_DELETE or K_APPLY")
		}
		if err != nil {
			return nil, err
		}
		s.Statements = append(s.Statements, st)
		for p.acceptPunct(";") {
		}
	}
	p.pos++ // APPLY
	return s, p.expectKw("batch")
}
