package parser

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// tokKind classifies a lexical token.
type tokKind uint8

const (
	tEOF      tokKind = iota
	tIdent            // unquoted identifier or keyword; text is lower-cased
	tQuoted           // "double-quoted" identifier; text unescaped, case kept
	tString           // 'string' or $$string$$; text unescaped
	tInteger          // 123 (never signed: '-' is its own token)
	tFloat            // 1.5, 1e10, 2.
	tBoolean          // true / false; text lower-cased
	tUUID             // 8-4-4-4-12 hex digits
	tHex              // 0xCAFE; text as written
	tDuration         // 1h30m, P1DT2H, P0001-02-03T04:05:06
	tQMark            // ?
	tPunct            // operators and punctuation; text is the symbol
)

// token is one lexical token. pos and end are byte offsets into the query,
// line (1-based) and col (0-based, in characters) locate it for messages.
type token struct {
	kind      tokKind
	text      string
	pos, end  int
	line, col int
}

// raw returns the token as written in src, for error messages.
func (t token) raw(src string) string {
	if t.kind == tEOF {
		return "<EOF>"
	}
	return src[t.pos:t.end]
}

// lexer turns a query into tokens. It works on bytes and tracks the line and
// column of the current position; every loop advances at least one byte, so
// lexing is linear in the input length.
type lexer struct {
	src       string
	i         int
	line, col int
	toks      []token
}

// MaxTokens bounds the tokens of one statement. A token takes 56 bytes and
// its AST node about as much again, for as little as one byte of query
// text ("1,1,1,..."), so without a bound a 256 MiB frame of text could make
// the parser allocate many gigabytes. 262,144 tokens is a megabyte or more
// of CQL, more than any statement needs (bulk loads send many statements,
// or a protocol BATCH of prepared ones), and caps what lexing and parsing
// one statement allocates at about 60 MiB.
const MaxTokens = 1 << 18

// lexPrealloc bounds the tokens allocated before any is found: a long
// query may be one long literal (a 4 MiB blob), not many tokens.
const lexPrealloc = 1024

// lex tokenizes src completely, refusing more than maxTokens tokens. The
// last token is always tEOF. On an error the tokens are nil, except when
// the limit was reached: then they are the first maxTokens.
func lex(src string, maxTokens int) ([]token, error) {
	l := &lexer{src: src, line: 1, toks: make([]token, 0, min(len(src)/4+2, lexPrealloc))}
	for {
		if err := l.skipSpaceAndComments(); err != nil {
			return nil, err
		}
		if l.i >= len(l.src) {
			l.toks = append(l.toks, token{kind: tEOF, pos: l.i, end: l.i, line: l.line, col: l.col})
			return l.toks, nil
		}
		if len(l.toks) >= maxTokens {
			// The tokens so far go with the error, so that callers know
			// the budget ran out.
			return l.toks, l.errAt(l.line, l.col, fmt.Sprintf("statement too long: more than %d tokens", maxTokens))
		}
		if err := l.next(); err != nil {
			return nil, err
		}
	}
}

func (l *lexer) errAt(line, col int, format string) *SyntaxError {
	return &SyntaxError{Line: line, Col: col, Msg: format}
}

// advance moves the position to byte offset j, keeping line and column.
func (l *lexer) advance(j int) {
	for ; l.i < j; l.i++ {
		c := l.src[l.i]
		switch {
		case c == '\n':
			l.line++
			l.col = 0
		case c&0xC0 != 0x80: // not a UTF-8 continuation byte
			l.col++
		}
	}
}

func (l *lexer) skipSpaceAndComments() error {
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.advance(l.i + 1)
		case (c == '-' || c == '/') && strings.HasPrefix(l.src[l.i:], string([]byte{c, c})):
			// Cassandra wants a newline after a line comment; accepting EOF too
			// is friendlier and cannot change the meaning of a valid query.
			j := strings.IndexAny(l.src[l.i:], "\n\r")
			if j < 0 {
				l.advance(len(l.src))
			} else {
				l.advance(l.i + j)
			}
		case c == '/' && strings.HasPrefix(l.src[l.i:], "/*"):
			line, col := l.line, l.col
			j := strings.Index(l.src[l.i+2:], "*/")
			if j < 0 {
				return l.errAt(line, col, "unterminated comment")
			}
			l.advance(l.i + 2 + j + 2)
		default:
			return nil
		}
	}
	return nil
}

func (l *lexer) emit(kind tokKind, text string, end int) {
	t := token{kind: kind, text: text, pos: l.i, end: end, line: l.line, col: l.col}
	if len(l.toks) == cap(l.toks) {
		// Double: append grows large slices by a quarter, which allocates
		// five times the final size along the way.
		l.toks = slices.Grow(l.toks, len(l.toks))
	}
	l.toks = append(l.toks, t)
	l.advance(end)
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isHex(c byte) bool    { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
func isIdentChar(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_'
}

// twoCharPunct are the operators lexed as one token. "+=" and "-=" are the
// shorthand collection/counter updates.
var twoCharPunct = [...]string{"!=", "<=", ">=", "+=", "-="}

func (l *lexer) next() error {
	s, i := l.src, l.i
	c := s[i]
	switch {
	case c == '\'':
		return l.quoted('\'', tString, "unterminated string literal")
	case c == '"':
		return l.quoted('"', tQuoted, "unterminated quoted identifier")
	case c == '$' && strings.HasPrefix(s[i:], "$$"):
		j := strings.Index(s[i+2:], "$$")
		if j < 0 {
			return l.errAt(l.line, l.col, "unterminated $$ string literal")
		}
		l.emit(tString, s[i+2:i+2+j], i+2+j+2)
		return nil
	case c == '?':
		l.emit(tQMark, "?", i+1)
		return nil
	case isHex(c) && uuidAt(s, i):
		l.emit(tUUID, s[i:i+36], i+36)
		return nil
	case c == '0' && i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X'):
		j := i + 2
		for j < len(s) && isHex(s[j]) {
			j++
		}
		l.emit(tHex, s[i:j], j)
		return nil
	case isDigit(c):
		l.number()
		return nil
	case isLetter(c):
		j := i + 1
		for j < len(s) && isIdentChar(s[j]) {
			j++
		}
		// An ISO 8601 duration wins over an identifier of the same length, as
		// DURATION precedes IDENT in Cassandra's lexer.
		if c == 'P' {
			if n := isoDurationLen(s, i); n > 0 && i+n >= j {
				l.emit(tDuration, s[i:i+n], i+n)
				return nil
			}
		}
		text := strings.ToLower(s[i:j])
		if text == "true" || text == "false" {
			l.emit(tBoolean, text, j)
		} else {
			l.emit(tIdent, text, j)
		}
		return nil
	}
	for _, p := range twoCharPunct {
		if strings.HasPrefix(s[i:], p) {
			l.emit(tPunct, p, i+2)
			return nil
		}
	}
	if strings.IndexByte("()[]{},;.:=<>+-*/%", c) >= 0 {
		l.emit(tPunct, s[i:i+1], i+1)
		return nil
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError {
		return l.errAt(l.line, l.col, "token recognition error: invalid UTF-8")
	}
	return l.errAt(l.line, l.col, "token recognition error at: '"+string(r)+"'")
}

// quoted lexes a string literal or quoted identifier delimited by q, where a
// doubled q stands for one q.
func (l *lexer) quoted(q byte, kind tokKind, unterminated string) error {
	s, start := l.src, l.i
	escaped := false
	j := start + 1
	for {
		k := strings.IndexByte(s[j:], q)
		if k < 0 {
			return l.errAt(l.line, l.col, unterminated)
		}
		j += k
		if j+1 < len(s) && s[j+1] == q {
			escaped = true
			j += 2
			continue
		}
		break
	}
	text := s[start+1 : j]
	if escaped {
		text = strings.ReplaceAll(text, string([]byte{q, q}), string(q))
	}
	if kind == tQuoted && text == "" {
		return l.errAt(l.line, l.col, "empty quoted identifier")
	}
	l.emit(kind, text, j+1)
	return nil
}

// uuidAt reports whether an unquoted UUID (8-4-4-4-12 hex digits) starts at i.
func uuidAt(s string, i int) bool {
	if len(s)-i < 36 {
		return false
	}
	for k := 0; k < 36; k++ {
		c := s[i+k]
		if k == 8 || k == 13 || k == 18 || k == 23 {
			if c != '-' {
				return false
			}
		} else if !isHex(c) {
			return false
		}
	}
	return true
}

// number lexes an integer, a float or a "1h30m"-style duration.
func (l *lexer) number() {
	s, i := l.src, l.i
	j := digitsEnd(s, i)
	if n := durationUnitLen(s, j); n > 0 {
		j += n
		for {
			k := digitsEnd(s, j)
			if k == j {
				break
			}
			n := durationUnitLen(s, k)
			if n == 0 {
				break // the digits start the next token
			}
			j = k + n
		}
		l.emit(tDuration, s[i:j], j)
		return
	}
	kind := tInteger
	if j < len(s) && s[j] == '.' {
		kind = tFloat
		j = digitsEnd(s, j+1)
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if e := digitsEnd(s, k); e > k {
			kind = tFloat
			j = e
		}
	}
	l.emit(kind, s[i:j], j)
}

func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// durationUnitLen returns the length of the duration unit at i (y, mo, w, d,
// h, m, s, ms, us, µs, ns; case-insensitive), preferring the longest, or 0.
func durationUnitLen(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	if strings.HasPrefix(s[i:], "µ") {
		if k := i + len("µ"); k < len(s) && (s[k] == 's' || s[k] == 'S') {
			return len("µ") + 1
		}
		return 0
	}
	lower := func(k int) byte {
		if k < len(s) && 'A' <= s[k] && s[k] <= 'Z' {
			return s[k] + 'a' - 'A'
		}
		if k < len(s) {
			return s[k]
		}
		return 0
	}
	c, d := lower(i), lower(i+1)
	switch {
	case c == 'm' && (d == 'o' || d == 's'), c == 'u' && d == 's', c == 'n' && d == 's':
		return 2
	case c == 'y' || c == 'w' || c == 'd' || c == 'h' || c == 'm' || c == 's':
		return 1
	}
	return 0
}

// isoDurationLen returns the length of the ISO 8601 duration starting with
// the 'P' at i, or 0. Forms (designators upper-case, as in Cassandra):
// P[nY][nM][nD][T[nH][nM][nS]] with at least one part, PnW, and the
// alternative PYYYY-MM-DDThh:mm:ss.
func isoDurationLen(s string, i int) int {
	j := i + 1
	if alt := "0000-00-00T00:00:00"; len(s)-j >= len(alt) {
		ok := true
		for k := 0; k < len(alt) && ok; k++ {
			if alt[k] == '0' {
				ok = isDigit(s[j+k])
			} else {
				ok = s[j+k] == alt[k]
			}
		}
		if ok {
			return 1 + len(alt)
		}
	}
	if k := digitsEnd(s, j); k > j && k < len(s) && s[k] == 'W' {
		return k + 1 - i
	}
	j, date := designators(s, j, "YMD")
	time := false
	if j < len(s) && s[j] == 'T' {
		var k int
		if k, time = designators(s, j+1, "HMS"); time {
			j = k
		}
	}
	if !date && !time {
		return 0
	}
	return j - i
}

// designators matches a sequence of digits+designator pairs whose
// designators appear in the order given by order, each at most once.
func designators(s string, j int, order string) (int, bool) {
	found := false
	for len(order) > 0 {
		k := digitsEnd(s, j)
		if k == j || k >= len(s) {
			break
		}
		idx := strings.IndexByte(order, s[k])
		if idx < 0 {
			break
		}
		order = order[idx+1:]
		j = k + 1
		found = true
	}
	return j, found
}
