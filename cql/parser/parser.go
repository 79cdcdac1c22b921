package parser

import (
	"fmt"
	"strings"
)

// maxDepth bounds the nesting of collection literals, tuples, function
// calls, types and parenthesised relations, so hostile input cannot exhaust
// the stack. Real statements nest a handful of levels.
const maxDepth = 100

// reserved are Cassandra's reserved keywords (CQL docs, appendix "CQL
// Keywords"); they can only be used as identifiers when double-quoted.
// Every other keyword (key, type, ttl, count, json, ...) is also a valid
// identifier wherever that is unambiguous.
var reserved = map[string]bool{
	"add": true, "allow": true, "alter": true, "and": true, "apply": true, "asc": true,
	"authorize": true, "batch": true, "begin": true, "by": true, "columnfamily": true,
	"create": true, "delete": true, "desc": true, "describe": true, "drop": true,
	"entries": true, "execute": true, "from": true, "full": true, "grant": true, "if": true,
	"in": true, "index": true, "infinity": true, "insert": true, "into": true,
	"keyspace": true, "limit": true, "modify": true, "nan": true, "norecursive": true,
	"not": true, "null": true, "of": true, "on": true, "or": true, "order": true,
	"primary": true, "rename": true, "replace": true, "revoke": true, "schema": true,
	"select": true, "set": true, "table": true, "to": true, "token": true, "truncate": true,
	"unlogged": true, "update": true, "use": true, "using": true, "view": true,
	"where": true, "with": true,
}

// parser is a recursive-descent parser over the token slice of one query.
// Every method returns its error instead of panicking; lookahead is by
// index, and the few speculative parses restore pos and markers on failure.
type parser struct {
	src     string
	toks    []token
	pos     int
	markers int // bind markers created so far: the next marker's Index
	depth   int
	// specErr is the furthest error of a failed speculative parse. When the
	// statement fails anyway and specErr lies further on, it is the better
	// diagnosis (the user most likely meant the speculative reading).
	specErr *SyntaxError
}

// speculationFailed records the error of a failed speculative parse.
func (p *parser) speculationFailed(err error) {
	if se, ok := err.(*SyntaxError); ok && (p.specErr == nil || after(se, p.specErr)) {
		p.specErr = se
	}
}

// after reports whether a is located after b.
func after(a, b *SyntaxError) bool {
	return a.Line > b.Line || a.Line == b.Line && a.Col > b.Col
}

// Parse parses one CQL statement. A trailing ';' is allowed. Errors are
// *SyntaxError.
func Parse(query string) (Statement, error) {
	st, _, err := ParseLimited(query, MaxTokens)
	return st, err
}

// ParseLimited is Parse with a bound of maxTokens (at most MaxTokens)
// tokens; it also returns how many tokens the statement has (maxTokens
// when it has more). Callers that parse many statements for one request
// (the statements of a protocol BATCH) share one budget among them this
// way.
func ParseLimited(query string, maxTokens int) (Statement, int, error) {
	toks, err := lex(query, min(maxTokens, MaxTokens))
	if err != nil {
		return nil, len(toks), err
	}
	st, err := parseTokens(query, toks)
	return st, len(toks) - 1, err
}

func parseTokens(query string, toks []token) (Statement, error) {
	p := &parser{src: query, toks: toks}
	if p.peek().kind == tEOF || p.isPunct(";") {
		return nil, p.errAt(p.peek(), "empty statement")
	}
	st, err := p.statement()
	if err != nil {
		if se, ok := err.(*SyntaxError); ok && p.specErr != nil && after(p.specErr, se) {
			return nil, redactSecrets(p.specErr, query, toks)
		}
		return nil, redactSecrets(err, query, toks)
	}
	for p.acceptPunct(";") {
	}
	if p.peek().kind != tEOF {
		return nil, redactSecrets(p.mismatch("EOF"), query, toks)
	}
	return st, nil
}

// --- token access ---

func (p *parser) peek() token { return p.toks[p.pos] }

// peekN returns the token n positions ahead (EOF past the end).
func (p *parser) peekN(n int) token {
	if i := p.pos + n; i < len(p.toks) {
		return p.toks[i]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) advance() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func isKwTok(t token, kw string) bool { return t.kind == tIdent && t.text == kw }

func (p *parser) isKw(kw string) bool          { return isKwTok(p.peek(), kw) }
func (p *parser) isKwAt(n int, kw string) bool { return isKwTok(p.peekN(n), kw) }

func (p *parser) acceptKw(kw string) bool { return p.acceptIf(p.isKw(kw)) }

// acceptIf consumes the current token if it matched (ok) and returns ok.
func (p *parser) acceptIf(ok bool) bool {
	if ok {
		p.pos++
	}
	return ok
}

func (p *parser) expectKw(kw string) error {
	if p.acceptKw(kw) {
		return nil
	}
	return p.mismatch(kwName(kw))
}

// expectKws expects a sequence of keywords, e.g. "not", "exists".
func (p *parser) expectKws(kws ...string) error {
	for _, kw := range kws {
		if err := p.expectKw(kw); err != nil {
			return err
		}
	}
	return nil
}

// isKeyspaceKw, isTableKw and isRoleKw report whether t names an object
// kind, under any of its synonyms.
func isKeyspaceKw(t token) bool { return isKwTok(t, "keyspace") || isKwTok(t, "schema") }
func isTableKw(t token) bool    { return isKwTok(t, "table") || isKwTok(t, "columnfamily") }
func isRoleKw(t token) bool     { return isKwTok(t, "role") || isKwTok(t, "user") }

// skipTableKw consumes the optional TABLE (or COLUMNFAMILY) before a table
// name, as in TRUNCATE [TABLE] t.
func (p *parser) skipTableKw() { p.acceptIf(isTableKw(p.peek())) }

func kwName(kw string) string { return "K_" + strings.ToUpper(kw) }

func isPunctTok(t token, s string) bool { return t.kind == tPunct && t.text == s }

func (p *parser) isPunct(s string) bool { return isPunctTok(p.peek(), s) }

func (p *parser) acceptPunct(s string) bool { return p.acceptIf(p.isPunct(s)) }

func (p *parser) expectPunct(s string) error {
	if p.acceptPunct(s) {
		return nil
	}
	return p.mismatch("'" + s + "'")
}

// --- errors ---

func (p *parser) errAt(t token, format string, args ...any) *SyntaxError {
	return &SyntaxError{Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}
}

// mismatch reports that the current token is not what the grammar expects.
func (p *parser) mismatch(expecting string) error {
	t := p.peek()
	return p.errAt(t, "mismatched input '%s' expecting %s", t.raw(p.src), expecting)
}

// noViable reports that no alternative of the grammar matches the current
// token.
func (p *parser) noViable() error {
	t := p.peek()
	return p.errAt(t, "no viable alternative at input '%s'", t.raw(p.src))
}

// enter and leave bracket every recursive production.
func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errAt(p.peek(), "statement too deeply nested (more than %d levels)", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// --- identifiers and names ---

// isIdentTok reports whether t can be an identifier: quoted, or unquoted and
// not a reserved keyword.
func isIdentTok(t token) bool {
	return t.kind == tQuoted || t.kind == tIdent && !reserved[t.text]
}

func (p *parser) isIdent() bool { return isIdentTok(p.peek()) }

// ident parses an identifier. what names the kind of name for the error on
// a bind marker ("table", "keyspace", ...), or is "" for column-like names.
func (p *parser) ident(what string) (string, error) {
	t := p.peek()
	if isIdentTok(t) {
		p.pos++
		return t.text, nil
	}
	if t.kind == tQMark && what != "" {
		return "", p.errAt(t, "Bind variables cannot be used for %s names", what)
	}
	return "", p.mismatch("IDENT")
}

// sepList parses "item (separator item)*", the shape of every list in the
// grammar: it parses items for as long as more accepts a separator after
// one. On an error it returns nil and the error.
func sepList[T any](item func() (T, error), more func() bool) ([]T, error) {
	var out []T
	for {
		x, err := item()
		if err != nil {
			return nil, err
		}
		out = append(out, x)
		if !more() {
			return out, nil
		}
	}
}

// comma and and accept the separator of a comma- or AND-separated list.
func (p *parser) comma() bool { return p.acceptPunct(",") }
func (p *parser) and() bool   { return p.acceptKw("and") }

// plainIdent parses a column, field or alias name: an identifier for which
// a bind marker gets the generic mismatch error (ident with what "").
func (p *parser) plainIdent() (string, error) { return p.ident("") }

// stringLiteral parses a string literal, the only form the grammar allows
// in some places (USING 'class', PASSWORD 'pw', INSERT JSON 'doc').
func (p *parser) stringLiteral() (string, error) {
	t := p.peek()
	if t.kind != tString {
		return "", p.mismatch("STRING_LITERAL")
	}
	p.pos++
	return t.text, nil
}

// identList parses "ident (, ident)*".
func (p *parser) identList() ([]string, error) { return sepList(p.plainIdent, p.comma) }

// parenIdentList parses "( ident (, ident)* )".
func (p *parser) parenIdentList() ([]string, error) {
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	ids, err := p.identList()
	if err != nil {
		return nil, err
	}
	if err := p.expectPunct(")"); err != nil {
		return nil, err
	}
	return ids, nil
}

// qualifiedName parses "[ks.]name", what naming the object for errors.
func (p *parser) qualifiedName(what string) (TableName, error) {
	first, err := p.ident(what)
	if err != nil {
		return TableName{}, err
	}
	if !p.acceptPunct(".") {
		return TableName{Name: first}, nil
	}
	second, err := p.ident(what)
	if err != nil {
		return TableName{}, err
	}
	return TableName{Keyspace: first, Name: second}, nil
}

func (p *parser) tableName() (TableName, error) { return p.qualifiedName("table") }

func (p *parser) keyspaceName() (string, error) { return p.ident("keyspace") }

// ifNotExists parses an optional IF NOT EXISTS.
func (p *parser) ifNotExists() (bool, error) {
	if !p.acceptKw("if") {
		return false, nil
	}
	return true, p.expectKws("not", "exists")
}

// ifExists parses an optional IF EXISTS.
func (p *parser) ifExists() (bool, error) {
	if !p.acceptKw("if") {
		return false, nil
	}
	return true, p.expectKw("exists")
}

// guardedName parses what follows the object keyword of most DDL
// statements: an optional IF [NOT] EXISTS (guard, p.ifExists or
// p.ifNotExists) and the object's name.
func guardedName[N any](guard func() (bool, error), name func() (N, error)) (bool, N, error) {
	cond, err := guard()
	if err != nil {
		var zero N
		return false, zero, err
	}
	n, err := name()
	return cond, n, err
}

// --- statements ---

func (p *parser) statement() (Statement, error) {
	t := p.peek()
	if t.kind != tIdent {
		return nil, p.noViable()
	}
	switch t.text {
	case "select":
		return p.selectStmt()
	case "insert":
		return p.insertStmt()
	case "update":
		return p.updateStmt()
	case "delete":
		return p.deleteStmt()
	case "begin":
		return p.batchStmt()
	case "use":
		p.pos++
		ks, err := p.keyspaceName()
		return &UseStmt{Keyspace: ks}, err
	case "truncate":
		p.pos++
		p.skipTableKw()
		tn, err := p.tableName()
		return &TruncateStmt{Table: tn}, err
	case "create":
		return p.createStmt()
	case "alter":
		return p.alterStmt()
	case "drop":
		return p.dropStmt()
	case "grant", "revoke":
		return p.grantOrRevoke()
	case "list":
		if p.isUnsupported() {
			return p.unsupported()
		}
		return p.listStmt()
	case "describe", "desc":
		return p.unsupported()
	}
	return nil, p.noViable()
}

// unsupportedWhat maps the leading keywords of statements cosmosd does not
// implement to their display name. Keys are space-joined lower-case
// keywords; the longest matching prefix wins.
var unsupportedWhat = map[string]string{
	"create materialized view":    "CREATE MATERIALIZED VIEW",
	"alter materialized view":     "ALTER MATERIALIZED VIEW",
	"drop materialized view":      "DROP MATERIALIZED VIEW",
	"create function":             "CREATE FUNCTION",
	"create or replace function":  "CREATE FUNCTION",
	"drop function":               "DROP FUNCTION",
	"create aggregate":            "CREATE AGGREGATE",
	"create or replace aggregate": "CREATE AGGREGATE",
	"drop aggregate":              "DROP AGGREGATE",
	"create trigger":              "CREATE TRIGGER",
	"drop trigger":                "DROP TRIGGER",
	"alter type":                  "ALTER TYPE",
	"list superusers":             "LIST SUPERUSERS",
	"describe":                    "DESCRIBE",
	"desc":                        "DESCRIBE",
}

// isUnsupported reports whether the statement starts with the leading
// keywords of an unsupported statement.
func (p *parser) isUnsupported() bool {
	_, ok := p.unsupportedName()
	return ok
}

func (p *parser) unsupportedName() (string, bool) {
	key := ""
	best, found := "", false
	for n := 0; n < 4; n++ {
		t := p.peekN(n)
		if t.kind != tIdent {
			break
		}
		if key != "" {
			key += " "
		}
		key += t.text
		if w, ok := unsupportedWhat[key]; ok {
			best, found = w, true
		}
	}
	return best, found
}

// unsupported returns an UnsupportedStmt for the whole query text, without
// parsing the rest of it.
func (p *parser) unsupported() (Statement, error) {
	what, ok := p.unsupportedName()
	if !ok {
		return nil, p.noViable()
	}
	text := strings.TrimSpace(p.src)
	for strings.HasSuffix(text, ";") {
		text = strings.TrimSpace(strings.TrimSuffix(text, ";"))
	}
	p.pos = len(p.toks) - 1 // EOF
	return &UnsupportedStmt{Text: text, What: what}, nil
}
