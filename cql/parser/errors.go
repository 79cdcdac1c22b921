package parser

import "fmt"

// SyntaxError reports a query that is not valid CQL, or that uses syntax
// this parser does not implement. Its text mimics Cassandra's ANTLR
// messages ("line 1:14 mismatched input 'FROMM' expecting K_FROM") so that
// clients and people see what they would see from Cassandra; the native
// protocol layer answers it with error code 0x2000 (Syntax error).
type SyntaxError struct {
	// Line is the 1-based line of the offending token.
	Line int
	// Col is the 0-based column (in characters) of the offending token
	// within its line, as in Cassandra's messages.
	Col int
	// Msg describes the problem.
	Msg string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d:%d %s", e.Line, e.Col, e.Msg)
}
