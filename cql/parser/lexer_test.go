package parser

import (
	"testing"
)

func TestLexPositions(t *testing.T) {
	src := "SELECT a,\n  \"B\" FROM -- c\n /* x\ny */ t WHERE k = 'é''s' AND d>=1h"
	toks, err := lex(src, MaxTokens)
	if err != nil {
		t.Fatal(err)
	}
	type tk struct {
		kind      tokKind
		text      string
		line, col int
	}
	want := []tk{
		{tIdent, "select", 1, 0}, {tIdent, "a", 1, 7}, {tPunct, ",", 1, 8},
		{tQuoted, "B", 2, 2}, {tIdent, "from", 2, 6},
		{tIdent, "t", 4, 5}, {tIdent, "where", 4, 7}, {tIdent, "k", 4, 13}, {tPunct, "=", 4, 15},
		{tString, "é's", 4, 17}, {tIdent, "and", 4, 24}, {tIdent, "d", 4, 28}, {tPunct, ">=", 4, 29},
		{tDuration, "1h", 4, 31}, {tEOF, "", 4, 33},
	}
	if len(toks) != len(want) {
		t.Fatalf("got %d tokens, want %d: %+v", len(toks), len(want), toks)
	}
	for i, w := range want {
		g := toks[i]
		if g.kind != w.kind || g.text != w.text || g.line != w.line || g.col != w.col {
			t.Errorf("token %d = {%d %q %d:%d}, want {%d %q %d:%d}", i, g.kind, g.text, g.line, g.col, w.kind, w.text, w.line, w.col)
		}
	}
}

func TestLexTokens(t *testing.T) {
	for _, tc := range []struct {
		src   string
		kinds []tokKind
		texts []string
	}{
		{"a-1", []tokKind{tIdent, tPunct, tInteger}, []string{"a", "-", "1"}},
		{"c+=1", []tokKind{tIdent, tPunct, tInteger}, []string{"c", "+=", "1"}},
		{"1..2", []tokKind{tFloat, tPunct, tInteger}, []string{"1.", ".", "2"}},
		{"1e5 1e 1.5E-3", []tokKind{tFloat, tInteger, tIdent, tFloat}, []string{"1e5", "1", "e", "1.5E-3"}},
		{"P1D P1 P1DT PT P1Y2 PT1H30M", []tokKind{tDuration, tIdent, tIdent, tIdent, tIdent, tDuration},
			[]string{"P1D", "p1", "p1dt", "pt", "p1y2", "PT1H30M"}},
		{"p1d", []tokKind{tIdent}, []string{"p1d"}},
		{"1h30 1mo1ms", []tokKind{tDuration, tInteger, tDuration}, []string{"1h", "30", "1mo1ms"}},
		{"deadbeef-dead-beef-dead-beefdeadbeef x", []tokKind{tUUID, tIdent}, []string{"deadbeef-dead-beef-dead-beefdeadbeef", "x"}},
		{"deadbeef-dead", []tokKind{tIdent, tPunct, tIdent}, []string{"deadbeef", "-", "dead"}},
		{"0xff 0Xab", []tokKind{tHex, tHex}, []string{"0xff", "0Xab"}},
		{"True fAlse", []tokKind{tBoolean, tBoolean}, []string{"true", "false"}},
		{"?:n", []tokKind{tQMark, tPunct, tIdent}, []string{"?", ":", "n"}},
		{"a // x\nb -- y\rc", []tokKind{tIdent, tIdent, tIdent}, []string{"a", "b", "c"}},
		{"<=<>=!=", []tokKind{tPunct, tPunct, tPunct, tPunct}, []string{"<=", "<", ">=", "!="}},
		{"$$a$b$$", []tokKind{tString}, []string{"a$b"}},
		{`"a""b" 'c''d'`, []tokKind{tQuoted, tString}, []string{`a"b`, "c'd"}},
	} {
		toks, err := lex(tc.src, MaxTokens)
		if err != nil {
			t.Errorf("lex(%q): %v", tc.src, err)
			continue
		}
		toks = toks[:len(toks)-1] // EOF
		if len(toks) != len(tc.kinds) {
			t.Errorf("lex(%q) = %d tokens %+v, want %d", tc.src, len(toks), toks, len(tc.kinds))
			continue
		}
		for i := range toks {
			if toks[i].kind != tc.kinds[i] || toks[i].text != tc.texts[i] {
				t.Errorf("lex(%q) token %d = {%d %q}, want {%d %q}", tc.src, i, toks[i].kind, toks[i].text, tc.kinds[i], tc.texts[i])
			}
		}
	}
}
