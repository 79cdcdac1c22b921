package ctl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every flag of every command states its default at most once (issue 17:
// the help showed a hand-written default and urfave/cli's next to it), and
// the defaults shown are the real ones.
func TestHelpStatesEachDefaultOnce(t *testing.T) {
	var out, errOut bytes.Buffer
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		args := append(append([]string{"cosmosctl"}, path...), "--help")
		if err := App(&out, &errOut).Run(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, c := range cmds {
			if c.Name != "help" {
				walk(append(append([]string{}, path...), c.Name), c.Subcommands)
			}
		}
	}
	walk(nil, App(&out, &errOut).Commands)
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "--") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 50 {
		t.Fatalf("only %d flag lines:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		if n := strings.Count(strings.ToLower(l), "default"); n > 1 {
			t.Errorf("flag line mentions a default %d times: %s", n, l)
		}
	}
	for _, want := range [][2]string{
		{"--user value", `(default: root, or the only one there)`},
		{"--timeout value", "(default: 10s)"},
		{"--dial-timeout value", "(default: 3s)"},
		{"--endpoints value", `(default: "127.0.0.1:7070")`},
	} {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, want[0]+" ") && strings.Contains(l, want[1]) {
				found = true
			}
		}
		if !found {
			t.Errorf("no help line %q ... %q", want[0], want[1])
		}
	}
}
