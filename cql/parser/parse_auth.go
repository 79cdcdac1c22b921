package parser

import "strings"

// The role and permission statements, after Cassandra's grammar
// (Parser.g: createRoleStatement, createUserStatement, grantRoleStatement,
// grantPermissionsStatement, listPermissionsStatement, ...).

// roleName parses userOrRoleName: an identifier (lower-cased unless
// quoted) or a string literal (kept as written).
func (p *parser) roleName() (string, error) {
	t := p.peek()
	switch {
	case t.kind == tString:
		p.pos++
		return t.text, nil
	case isIdentTok(t):
		p.pos++
		return t.text, nil
	case t.kind == tQMark:
		return "", p.errAt(t, "Bind variables cannot be used for role names")
	}
	return "", p.mismatch("IDENT")
}

// userName parses the legacy username: an identifier kept as written
// (Cassandra's CREATE USER does not lower-case it) or a string literal;
// a quoted name is refused as Cassandra refuses it.
func (p *parser) userName() (string, error) {
	t := p.peek()
	switch {
	case t.kind == tString:
		p.pos++
		return t.text, nil
	case t.kind == tQuoted:
		return "", p.errAt(t, "Quoted strings are are not supported for user names and USER is deprecated, please use ROLE")
	case isIdentTok(t):
		p.pos++
		return t.raw(p.src), nil
	}
	return "", p.mismatch("IDENT")
}

// boolLiteral parses true or false.
func (p *parser) boolLiteral() (bool, error) {
	t := p.peek()
	if t.kind != tBoolean {
		return false, p.mismatch("BOOLEAN")
	}
	p.pos++
	return t.text == "true", nil
}

// roleOptions parses "option (AND option)*" after WITH.
func (p *parser) roleOptions() (RoleOptions, error) {
	var o RoleOptions
	for {
		switch t := p.peek(); {
		case isKwTok(t, "password"):
			if err := p.roleOptionStart(t, o.Password != nil); err != nil {
				return o, err
			}
			pw, err := p.stringLiteral()
			if err != nil {
				return o, err
			}
			o.Password = &pw
		case isKwTok(t, "login"), isKwTok(t, "superuser"):
			dst := &o.Login
			if t.text == "superuser" {
				dst = &o.Superuser
			}
			if err := p.roleOptionStart(t, *dst != nil); err != nil {
				return o, err
			}
			b, err := p.boolLiteral()
			if err != nil {
				return o, err
			}
			*dst = &b
		case isKwTok(t, "options"):
			if err := p.roleOptionStart(t, o.Options); err != nil {
				return o, err
			}
			if !p.isPunct("{") {
				return o, p.mismatch("'{'")
			}
			if _, err := p.term(); err != nil {
				return o, err
			}
			o.Options = true
		default:
			return o, p.noViable()
		}
		if !p.acceptKw("and") {
			return o, nil
		}
	}
}

// roleOptionStart parses the "name =" of the role option named by t,
// refusing it when it was given already (seen), as Cassandra does.
func (p *parser) roleOptionStart(t token, seen bool) error {
	if seen {
		return p.errAt(t, "Multiple definition for property '%s'", strings.ToUpper(t.text))
	}
	p.pos++
	return p.expectPunct("=")
}

// userOptions parses the legacy [WITH PASSWORD '...'] [SUPERUSER |
// NOSUPERUSER] of CREATE and ALTER USER.
func (p *parser) userOptions(o *RoleOptions) error {
	if p.acceptKw("with") {
		if err := p.expectKw("password"); err != nil {
			return err
		}
		pw, err := p.stringLiteral()
		if err != nil {
			return err
		}
		o.Password = &pw
	}
	switch {
	case p.acceptKw("superuser"):
		t := true
		o.Superuser = &t
	case p.acceptKw("nosuperuser"):
		f := false
		o.Superuser = &f
	}
	return nil
}

// createRole parses CREATE ROLE and CREATE USER.
func (p *parser) createRole() (Statement, error) {
	user := p.roleOrUser()
	s := &CreateRoleStmt{User: user}
	var err error
	if s.IfNotExists, s.Name, err = guardedName(p.ifNotExists, p.roleNameParser(user)); err != nil {
		return nil, err
	}
	if user {
		login, super := true, false
		s.Options.Login = &login
		if err := p.userOptions(&s.Options); err != nil {
			return nil, err
		}
		if s.Options.Superuser == nil {
			s.Options.Superuser = &super
		}
		return s, nil
	}
	s.Options, err = p.withRoleOptions()
	return s, err
}

// alterRole parses ALTER ROLE and ALTER USER.
func (p *parser) alterRole() (Statement, error) {
	user := p.roleOrUser()
	s := &AlterRoleStmt{User: user}
	var err error
	if s.Name, err = p.roleNameParser(user)(); err != nil {
		return nil, err
	}
	if user {
		return s, p.userOptions(&s.Options)
	}
	s.Options, err = p.withRoleOptions()
	return s, err
}

// dropRole parses DROP ROLE and DROP USER.
func (p *parser) dropRole() (Statement, error) {
	user := p.roleOrUser()
	s := &DropRoleStmt{User: user}
	var err error
	s.IfExists, s.Name, err = guardedName(p.ifExists, p.roleNameParser(user))
	return s, err
}

// roleOrUser consumes the CREATE, ALTER or DROP and the ROLE or USER that
// the dispatcher saw, and reports whether it was USER (the legacy form).
func (p *parser) roleOrUser() bool {
	p.pos++
	return p.advance().text == "user"
}

// roleNameParser returns the parser of the name in a ROLE statement
// (roleName) or in its legacy USER form (userName).
func (p *parser) roleNameParser(user bool) func() (string, error) {
	if user {
		return p.userName
	}
	return p.roleName
}

// withRoleOptions parses the optional WITH roleOptions of CREATE and ALTER
// ROLE.
func (p *parser) withRoleOptions() (RoleOptions, error) {
	if !p.acceptKw("with") {
		return RoleOptions{}, nil
	}
	return p.roleOptions()
}

// permissionKeywords are the permissions of Cassandra's grammar.
var permissionKeywords = map[string]bool{
	"create": true, "alter": true, "drop": true, "select": true, "modify": true,
	"authorize": true, "describe": true, "execute": true,
}

// startsPermissions reports whether the tokens at pos start
// permissionOrAll followed by ON (GRANT/REVOKE) or by what may follow it
// in LIST.
func (p *parser) startsPermissions() bool {
	t := p.peek()
	if isKwTok(t, "all") {
		return p.isKwAt(1, "permissions") || p.isKwAt(1, "on") || p.isKwAt(1, "of") ||
			p.isKwAt(1, "norecursive") || p.peekN(1).kind == tEOF || isPunctTok(p.peekN(1), ";")
	}
	return t.kind == tIdent && permissionKeywords[t.text]
}

// permissionOrAll parses ALL [PERMISSIONS] | permission [PERMISSION].
func (p *parser) permissionOrAll() (perms []string, all bool, err error) {
	if p.acceptKw("all") {
		p.acceptKw("permissions")
		return nil, true, nil
	}
	t := p.peek()
	if t.kind != tIdent || !permissionKeywords[t.text] {
		return nil, false, p.noViable()
	}
	p.pos++
	p.acceptKw("permission")
	return []string{strings.ToUpper(t.text)}, false, nil
}

// resource parses dataResource | roleResource.
func (p *parser) resource() (ResourceName, error) {
	switch t := p.peek(); {
	case isKwTok(t, "all"):
		switch next := p.peekN(1); {
		case isKwTok(next, "keyspaces"):
			p.pos += 2
			return ResourceName{Kind: ResAllKeyspaces}, nil
		case isKwTok(next, "roles"):
			p.pos += 2
			return ResourceName{Kind: ResAllRoles}, nil
		case isKwTok(next, "functions"), isKwTok(next, "mbeans"):
			return ResourceName{}, p.errAt(next, "%s resources are not supported by cosmosd", strings.ToUpper(next.text))
		}
		p.pos++
		return ResourceName{}, p.noViable()
	case isKwTok(t, "keyspace"):
		p.pos++
		ks, err := p.keyspaceName()
		return ResourceName{Kind: ResKeyspace, Keyspace: ks}, err
	case isKwTok(t, "role"):
		p.pos++
		r, err := p.roleName()
		return ResourceName{Kind: ResRole, Role: r}, err
	case isKwTok(t, "function"), isKwTok(t, "mbean"):
		return ResourceName{}, p.errAt(t, "%s resources are not supported by cosmosd", strings.ToUpper(t.text))
	}
	p.skipTableKw()
	tn, err := p.tableName()
	return ResourceName{Kind: ResTable, Table: tn}, err
}

// grantOrRevoke parses GRANT ... TO and REVOKE ... FROM, of permissions or
// of a role.
func (p *parser) grantOrRevoke() (Statement, error) {
	revoke := p.advance().text == "revoke"
	to := "to"
	if revoke {
		to = "from"
	}
	if !p.startsPermissions() {
		role, err := p.roleName()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw(to); err != nil {
			return nil, err
		}
		grantee, err := p.roleName()
		return &GrantRoleStmt{Role: role, Grantee: grantee, Revoke: revoke}, err
	}
	s := &GrantPermissionsStmt{Revoke: revoke}
	var err error
	if s.Permissions, s.All, err = p.permissionOrAll(); err != nil {
		return nil, err
	}
	if err := p.expectKw("on"); err != nil {
		return nil, err
	}
	if s.Resource, err = p.resource(); err != nil {
		return nil, err
	}
	if err := p.expectKw(to); err != nil {
		return nil, err
	}
	s.Grantee, err = p.roleName()
	return s, err
}

// listStmt parses LIST ROLES, LIST USERS and LIST permissions.
func (p *parser) listStmt() (Statement, error) {
	p.pos++ // LIST
	switch {
	case p.acceptKw("users"):
		return &ListRolesStmt{Users: true}, nil
	case p.acceptKw("roles"):
		s := &ListRolesStmt{}
		if p.acceptKw("of") {
			var err error
			if s.Of, err = p.roleName(); err != nil {
				return nil, err
			}
		}
		s.NoRecursive = p.acceptKw("norecursive")
		return s, nil
	}
	if !p.startsPermissions() {
		return nil, p.noViable()
	}
	s := &ListPermissionsStmt{}
	var err error
	if s.Permissions, s.All, err = p.permissionOrAll(); err != nil {
		return nil, err
	}
	if p.acceptKw("on") {
		r, err := p.resource()
		if err != nil {
			return nil, err
		}
		s.Resource = &r
	}
	if p.acceptKw("of") {
		if s.Of, err = p.roleName(); err != nil {
			return nil, err
		}
	}
	s.NoRecursive = p.acceptKw("norecursive")
	return s, nil
}

// isRoleStatement reports whether toks start a statement that may carry a
// password (CREATE or ALTER ROLE or USER).
func isRoleStatement(toks []token) bool {
	return len(toks) >= 2 && (isKwTok(toks[0], "create") || isKwTok(toks[0], "alter")) &&
		isRoleKw(toks[1])
}

// redactSecrets removes the string literals of a role statement from a
// syntax error's message. "CREATE ROLE r WITH PASSWORD 's3cret'" fails on
// the literal (the '=' is missing), and the message would otherwise quote
// the password back to the client and into any log of errors.
func redactSecrets(err error, src string, toks []token) error {
	se, ok := err.(*SyntaxError)
	if !ok || !isRoleStatement(toks) {
		return err
	}
	msg := se.Msg
	for _, t := range toks {
		if t.kind == tString {
			msg = strings.ReplaceAll(msg, t.raw(src), "'***'")
		}
	}
	return &SyntaxError{Line: se.Line, Col: se.Col, Msg: msg}
}
