package parser

import "github.com/cosmosd/cosmosd/cqltype"

// createStmt dispatches on the object after CREATE.
func (p *parser) createStmt() (Statement, error) {
	if p.isUnsupported() {
		return p.unsupported()
	}
	switch t := p.peekN(1); {
	case isKeyspaceKw(t):
		return p.createKeyspace()
	case isTableKw(t):
		return p.createTable()
	case isKwTok(t, "index") || isKwTok(t, "custom"):
		return p.createIndex()
	case isKwTok(t, "type"):
		return p.createType()
	case isRoleKw(t):
		return p.createRole()
	}
	p.pos++
	return nil, p.noViable()
}

// alterStmt dispatches on the object after ALTER.
func (p *parser) alterStmt() (Statement, error) {
	if p.isUnsupported() {
		return p.unsupported()
	}
	switch t := p.peekN(1); {
	case isKeyspaceKw(t):
		return p.alterKeyspace()
	case isTableKw(t):
		return p.alterTable()
	case isRoleKw(t):
		return p.alterRole()
	}
	p.pos++
	return nil, p.noViable()
}

// dropStmt parses DROP KEYSPACE|TABLE|INDEX|TYPE [IF EXISTS] name.
func (p *parser) dropStmt() (Statement, error) {
	if p.isUnsupported() {
		return p.unsupported()
	}
	if t := p.peekN(1); isRoleKw(t) {
		return p.dropRole()
	}
	p.pos++ // DROP
	kind := p.peek()
	var what string
	switch {
	case isKeyspaceKw(kind):
		what = "keyspace"
	case isTableKw(kind):
		what = "table"
	case isKwTok(kind, "index"):
		what = "index"
	case isKwTok(kind, "type"):
		what = "type"
	default:
		return nil, p.noViable()
	}
	p.pos++
	ifExists, err := p.ifExists()
	if err != nil {
		return nil, err
	}
	switch what {
	case "keyspace":
		ks, err := p.keyspaceName()
		return &DropKeyspaceStmt{Name: ks, IfExists: ifExists}, err
	case "table":
		tn, err := p.tableName()
		return &DropTableStmt{Table: tn, IfExists: ifExists}, err
	case "index":
		tn, err := p.qualifiedName("index")
		return &DropIndexStmt{Index: tn, IfExists: ifExists}, err
	default:
		tn, err := p.userTypeName()
		return &DropTypeStmt{Name: tn, IfExists: ifExists}, err
	}
}

// createKeyspace parses CREATE KEYSPACE [IF NOT EXISTS] ks WITH options.
func (p *parser) createKeyspace() (Statement, error) {
	p.pos += 2 // CREATE KEYSPACE
	ifNotExists, name, opts, err := p.keyspaceDef(p.ifNotExists)
	return &CreateKeyspaceStmt{Name: name, IfNotExists: ifNotExists, Options: opts}, err
}

// alterKeyspace parses ALTER KEYSPACE [IF EXISTS] ks WITH options.
func (p *parser) alterKeyspace() (Statement, error) {
	p.pos += 2 // ALTER KEYSPACE
	ifExists, name, opts, err := p.keyspaceDef(p.ifExists)
	return &AlterKeyspaceStmt{Name: name, IfExists: ifExists, Options: opts}, err
}

// keyspaceDef parses the part CREATE and ALTER KEYSPACE share: the guard
// (IF NOT EXISTS or IF EXISTS), the name and WITH options.
func (p *parser) keyspaceDef(guard func() (bool, error)) (bool, string, Options, error) {
	cond, name, err := guardedName(guard, p.keyspaceName)
	if err != nil {
		return false, "", nil, err
	}
	if err := p.expectKw("with"); err != nil {
		return false, "", nil, err
	}
	opts, err := p.properties(nil)
	return cond, name, opts, err
}

// createTable parses CREATE TABLE [IF NOT EXISTS] t (defs) [WITH ...].
func (p *parser) createTable() (Statement, error) {
	p.pos += 2 // CREATE TABLE
	s := &CreateTableStmt{}
	var err error
	if s.IfNotExists, s.Table, err = guardedName(p.ifNotExists, p.tableName); err != nil {
		return nil, err
	}
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	pkSeen := false
	for {
		pkTok := p.peek()
		isPK, err := p.tableElement(s)
		if err != nil {
			return nil, err
		}
		if isPK {
			if pkSeen {
				return nil, p.errAt(pkTok, "Multiple PRIMARY KEYs specified (exactly one required)")
			}
			pkSeen = true
		}
		if !p.commaNotClosing() {
			break
		}
	}
	if err := p.expectPunct(")"); err != nil {
		return nil, err
	}
	if !p.acceptKw("with") {
		return s, nil
	}
	for {
		switch {
		case p.isKw("clustering") && p.isKwAt(1, "order"):
			p.pos += 2
			if err := p.expectKw("by"); err != nil {
				return nil, err
			}
			if err := p.expectPunct("("); err != nil {
				return nil, err
			}
			order, err := p.orderings(true)
			if err != nil {
				return nil, err
			}
			s.ClusteringOrder = append(s.ClusteringOrder, order...)
			if err := p.expectPunct(")"); err != nil {
				return nil, err
			}
		case p.isKw("compact") && p.isKwAt(1, "storage"):
			p.pos += 2
			s.CompactStorage = true
		default:
			opt, err := p.property(s.Options)
			if err != nil {
				return nil, err
			}
			s.Options = append(s.Options, opt)
		}
		if !p.acceptKw("and") {
			return s, nil
		}
	}
}

// tableElement parses one element of a CREATE TABLE body: a column
// definition (possibly "PRIMARY KEY" inline) or PRIMARY KEY (...). It
// reports whether the element defined the primary key.
func (p *parser) tableElement(s *CreateTableStmt) (bool, error) {
	if p.acceptKw("primary") {
		if err := p.expectKw("key"); err != nil {
			return false, err
		}
		if err := p.expectPunct("("); err != nil {
			return false, err
		}
		var err error
		if p.isPunct("(") {
			if s.PartitionKey, err = p.parenIdentList(); err != nil {
				return false, err
			}
		} else {
			id, err := p.ident("")
			if err != nil {
				return false, err
			}
			s.PartitionKey = []string{id}
		}
		s.Clustering = nil
		if p.acceptPunct(",") {
			if s.Clustering, err = p.identList(); err != nil {
				return false, err
			}
		}
		return true, p.expectPunct(")")
	}
	def, err := p.columnDef()
	if err != nil {
		return false, err
	}
	s.Columns = append(s.Columns, def)
	if p.acceptKw("primary") {
		if err := p.expectKw("key"); err != nil {
			return false, err
		}
		s.PartitionKey, s.Clustering = []string{def.Name}, nil
		return true, nil
	}
	return false, nil
}

// columnDef parses "name type [STATIC]".
func (p *parser) columnDef() (ColumnDef, error) {
	f, err := p.fieldDef()
	if err != nil {
		return ColumnDef{}, err
	}
	return ColumnDef{Name: f.Name, Type: f.Type, Static: p.acceptKw("static")}, nil
}

// fieldDef parses "name type", a field of CREATE TYPE and the start of a
// column definition.
func (p *parser) fieldDef() (cqltype.Field, error) {
	name, err := p.ident("")
	if err != nil {
		return cqltype.Field{}, err
	}
	typ, err := p.cqlType()
	if err != nil {
		return cqltype.Field{}, err
	}
	return cqltype.Field{Name: name, Type: typ}, nil
}

// commaNotClosing accepts a comma that no ")" follows: Cassandra tolerates
// a trailing comma in CREATE TABLE and CREATE TYPE, and it ends the list.
func (p *parser) commaNotClosing() bool { return p.acceptPunct(",") && !p.isPunct(")") }

// alterTable parses ALTER TABLE [IF EXISTS] t followed by ALTER c TYPE t,
// ADD, DROP, RENAME, DROP COMPACT STORAGE or WITH.
func (p *parser) alterTable() (Statement, error) {
	p.pos += 2 // ALTER TABLE
	s := &AlterTableStmt{}
	var err error
	if s.IfExists, s.Table, err = guardedName(p.ifExists, p.tableName); err != nil {
		return nil, err
	}
	switch {
	case p.acceptKw("alter"):
		s.Kind = AlterColumnType
		if s.AlterColumn, err = p.ident(""); err != nil {
			return nil, err
		}
		if err := p.expectKw("type"); err != nil {
			return nil, err
		}
		s.AlterType, err = p.cqlType()
		return s, err
	case p.acceptKw("add"):
		s.Kind = AlterAdd
		if s.AddIfNotExists, err = p.ifNotExists(); err != nil {
			return nil, err
		}
		// Only a parenthesised ADD takes several columns.
		paren := p.acceptPunct("(")
		if s.Add, err = sepList(p.columnDef, func() bool { return paren && p.comma() }); err != nil {
			return nil, err
		}
		if paren {
			return s, p.expectPunct(")")
		}
		return s, nil
	case p.isKw("drop") && p.isKwAt(1, "compact") && p.isKwAt(2, "storage"):
		p.pos += 3
		s.Kind = AlterDropCompactStorage
		return s, nil
	case p.acceptKw("drop"):
		s.Kind = AlterDrop
		if s.DropIfExists, err = p.ifExists(); err != nil {
			return nil, err
		}
		if p.isPunct("(") {
			s.Drop, err = p.parenIdentList()
			return s, err
		}
		id, err := p.ident("")
		s.Drop = []string{id}
		return s, err
	case p.acceptKw("rename"):
		s.Kind = AlterRename
		if s.RenameIfExists, err = p.ifExists(); err != nil {
			return nil, err
		}
		s.Renames, err = sepList(p.rename, p.and)
		return s, err
	case p.acceptKw("with"):
		s.Kind = AlterWith
		s.Options, err = p.properties(nil)
		return s, err
	}
	return nil, p.noViable()
}

// rename parses "from TO to" of ALTER TABLE RENAME.
func (p *parser) rename() ([2]string, error) {
	from, err := p.ident("")
	if err != nil {
		return [2]string{}, err
	}
	if err := p.expectKw("to"); err != nil {
		return [2]string{}, err
	}
	to, err := p.ident("")
	return [2]string{from, to}, err
}

// createIndex parses CREATE [CUSTOM] INDEX [IF NOT EXISTS] [name] ON
// t (targets) [USING 'class'] [WITH options].
func (p *parser) createIndex() (Statement, error) {
	p.pos++ // CREATE
	s := &CreateIndexStmt{}
	if p.isKw("custom") {
		p.pos++
		s.Custom = true
	}
	if err := p.expectKw("index"); err != nil {
		return nil, err
	}
	var err error
	if s.IfNotExists, err = p.ifNotExists(); err != nil {
		return nil, err
	}
	if !p.isKw("on") {
		if s.Name, err = p.ident("index"); err != nil {
			return nil, err
		}
	}
	if err := p.expectKw("on"); err != nil {
		return nil, err
	}
	if s.Table, err = p.tableName(); err != nil {
		return nil, err
	}
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	if !p.isPunct(")") {
		if s.Targets, err = sepList(p.indexTarget, p.comma); err != nil {
			return nil, err
		}
	}
	if err := p.expectPunct(")"); err != nil {
		return nil, err
	}
	if p.acceptKw("using") {
		if s.Using, err = p.stringLiteral(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("with") {
		s.Options, err = p.properties(nil)
	}
	return s, err
}

var indexTargetKinds = map[string]IndexTargetKind{
	"keys": IndexKeys, "values": IndexValues, "entries": IndexEntries, "full": IndexFull,
}

// indexTarget parses c, KEYS(c), VALUES(c), ENTRIES(c) or FULL(c).
func (p *parser) indexTarget() (IndexTarget, error) {
	if t := p.peek(); t.kind == tIdent && isPunctTok(p.peekN(1), "(") {
		if kind, ok := indexTargetKinds[t.text]; ok {
			p.pos++
			cols, err := p.parenIdentList()
			if err != nil {
				return IndexTarget{}, err
			}
			if len(cols) != 1 {
				return IndexTarget{}, p.errAt(t, "%s() takes exactly one column", t.raw(p.src))
			}
			return IndexTarget{Column: cols[0], Kind: kind}, nil
		}
	}
	col, err := p.ident("")
	return IndexTarget{Column: col}, err
}

// createType parses CREATE TYPE [IF NOT EXISTS] [ks.]name (field type, ...).
func (p *parser) createType() (Statement, error) {
	p.pos += 2 // CREATE TYPE
	s := &CreateTypeStmt{}
	var err error
	if s.IfNotExists, s.Name, err = guardedName(p.ifNotExists, p.userTypeName); err != nil {
		return nil, err
	}
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	if s.Fields, err = sepList(p.fieldDef, p.commaNotClosing); err != nil {
		return nil, err
	}
	return s, p.expectPunct(")")
}

// properties parses property (AND property)*. prior are options already
// parsed in the same clause, for the duplicate check.
func (p *parser) properties(prior Options) (Options, error) {
	opts := prior
	for {
		opt, err := p.property(opts)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
		if !p.acceptKw("and") {
			return opts, nil
		}
	}
}

// property parses name = constant | identifier | {map}. It rejects a name
// already in prior, as Cassandra does.
func (p *parser) property(prior Options) (Option, error) {
	nameTok := p.peek()
	name, err := p.ident("")
	if err != nil {
		return Option{}, err
	}
	if _, dup := prior.Get(name); dup {
		return Option{}, p.errAt(nameTok, "Multiple definition for property %s", name)
	}
	if err := p.expectPunct("="); err != nil {
		return Option{}, err
	}
	if !p.acceptPunct("{") {
		v, err := p.optionConst(true)
		return Option{Name: name, Value: v}, err
	}
	v := OptionValue{Kind: OptMap, Map: []OptionEntry{}}
	if p.acceptPunct("}") {
		return Option{Name: name, Value: v}, nil
	}
	for {
		keyTok := p.peek()
		key, err := p.optionConst(false)
		if err != nil {
			return Option{}, err
		}
		if _, dup := v.Get(key.Text); dup {
			return Option{}, p.errAt(keyTok, "Multiple definition for property %s", key.Text)
		}
		if err := p.expectPunct(":"); err != nil {
			return Option{}, err
		}
		val, err := p.optionConst(false)
		if err != nil {
			return Option{}, err
		}
		v.Map = append(v.Map, OptionEntry{Key: key.Text, Value: val})
		if !p.acceptPunct(",") {
			break
		}
	}
	return Option{Name: name, Value: v}, p.expectPunct("}")
}

// optionConst parses a constant property value (string, number, boolean)
// or, with allowIdent, a bare identifier.
func (p *parser) optionConst(allowIdent bool) (OptionValue, error) {
	t := p.peek()
	if allowIdent && isIdentTok(t) {
		p.pos++
		return OptionValue{Kind: OptIdent, Text: t.text}, nil
	}
	lit, ok := p.constant()
	if ok {
		switch lit.Kind {
		case LitString:
			return OptionValue{Kind: OptString, Text: lit.Text}, nil
		case LitInteger, LitFloat:
			return OptionValue{Kind: OptNumber, Text: lit.Text}, nil
		case LitBoolean:
			return OptionValue{Kind: OptBoolean, Text: lit.Text}, nil
		}
	}
	if t.kind == tQMark {
		return OptionValue{}, p.errAt(t, "Invalid property value: ? (bind variables are not supported in DDL queries)")
	}
	return OptionValue{}, p.errAt(t, "Invalid property value: %s", t.raw(p.src))
}
