package parser

import (
	"errors"
	"testing"

	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

// FuzzParse checks that Parse never panics, always answers with a statement
// or a *SyntaxError, and numbers bind markers 0..n-1. The seed corpus is in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add("SELECT * FROM system.local WHERE key='local'")
	f.Fuzz(func(t *testing.T, q string) {
		var st Statement
		var err error
		// The AST of a dense statement (a long IN list) costs a few
		// hundred bytes per byte of text, no more.
		fuzzcheck.Allocs(t, fuzzcheck.Bound(len(q), 512), "Parse", func() { st, err = Parse(q) })
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %T %v is not a *SyntaxError", q, err, err)
			}
			if se.Line < 1 || se.Col < 0 || se.Msg == "" {
				t.Fatalf("Parse(%q): bad error position or message: %+v", q, se)
			}
			if st != nil {
				t.Fatalf("Parse(%q) returned both a statement and an error", q)
			}
			return
		}
		if st == nil {
			t.Fatalf("Parse(%q) returned neither a statement nor an error", q)
		}
		for i, m := range BindMarkers(st) {
			if m.Index != i {
				t.Fatalf("Parse(%q): marker %d has Index %d", q, i, m.Index)
			}
		}
	})
}
