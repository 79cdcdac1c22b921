package parser

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestTokenLimit: a statement of more than MaxTokens tokens is refused
// with a syntax error instead of costing gigabytes of tokens and AST.
func TestTokenLimit(t *testing.T) {
	q := "SELECT * FROM t WHERE k IN (" + strings.Repeat("1,", MaxTokens/2) + "1)"
	_, err := Parse(q)
	var se *SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "statement too long: more than 262144 tokens") {
		t.Fatalf("Parse(%d-byte IN list) = %v, want a token limit error", len(q), err)
	}
	// Within the limit is fine.
	q = "SELECT * FROM t WHERE k IN (" + strings.Repeat("1,", MaxTokens/4) + "1)"
	if _, err := Parse(q); err != nil {
		t.Fatalf("Parse(%d tokens): %v", MaxTokens/2, err)
	}
}

// TestLongLiteralAllocatesLittle: a statement that is long because of one
// literal (a 4 MiB blob) must not allocate memory in proportion to a
// guessed token count.
func TestLongLiteralAllocatesLittle(t *testing.T) {
	const blob = 4 << 20
	q := "INSERT INTO t (k, b) VALUES (1, 0x" + strings.Repeat("ab", blob) + ")"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := Parse(q); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// The literal's text is kept (about 8 MiB); anything near the 112 MiB
	// a token per 4 bytes would cost is a regression.
	if got := after.TotalAlloc - before.TotalAlloc; got > 3*uint64(len(q)) {
		t.Fatalf("parsing a %d-byte statement allocated %d bytes", len(q), got)
	}
}
