package daemon

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// An unknown command or a stray positional argument is refused with the
// command's usage on stderr and an error (main exits non-zero), and
// nothing starts: before, `cosmosd foo` started a node with default
// settings (issue 17).
func TestUnknownCommandsAndStrayArgsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"foo"}, `^unknown command "foo": cosmosd takes flags or one of the commands demo, etcd, cert \(see cosmosd --help\)$`},
		{[]string{"--data-dir", dir, "foo", "--cql-addr", "127.0.0.1:0"}, `^unknown command "foo"`},
		{[]string{"cert", "create-cs", "--certs-dir", dir}, `^unknown command "create-cs": cosmosd cert has the commands create-ca, create-node, create-client, list \(see cosmosd cert --help\)$`},
		{[]string{"cert", "create-ca", "--certs-dir", dir, "extra"}, `^unexpected argument "extra": cosmosd cert create-ca takes flags only \(see cosmosd cert create-ca --help\)$`},
		{[]string{"cert", "list", "--certs-dir", dir, "x"}, `^unexpected argument "x": cosmosd cert list takes flags only`},
		{[]string{"demo", "--data-dir", dir, "4"}, `^unexpected argument "4": cosmosd demo takes flags only`},
		{[]string{"etcd", "--data-dir", dir, "member"}, `^unexpected argument "member": cosmosd etcd takes flags only`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			started := false
			app := newApp(func(func(ctx context.Context) (stopper, error)) error {
				started = true
				return nil
			})
			var stdout, stderr bytes.Buffer
			app.Writer, app.ErrWriter = &stdout, &stderr
			err := app.Run(append([]string{"cosmosd"}, tc.args...))
			if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
				t.Fatalf("error %v, want match of %s", err, tc.want)
			}
			if started {
				t.Fatal("a node, demo or etcd was started despite the refusal")
			}
			if !strings.Contains(stderr.String(), "USAGE:") {
				t.Errorf("no usage on stderr: %q", stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing (the refusal goes to stderr)", stdout.String())
			}
		})
	}
	// Control: the same application with proper arguments does start.
	started := 0
	app := newApp(func(func(ctx context.Context) (stopper, error)) error {
		started++
		return nil
	})
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	for _, args := range [][]string{{"--name", "n", "--data-dir", dir}, {"demo", "--data-dir", dir}, {"etcd", "--data-dir", dir}} {
		if err := app.Run(append([]string{"cosmosd"}, args...)); err != nil {
			t.Fatalf("cosmosd %v: %v", args, err)
		}
	}
	if started != 3 {
		t.Fatalf("%d of 3 valid invocations started", started)
	}
}

// helpLines renders the help of cosmosd and of every command and
// subcommand, and returns its flag lines.
func helpLines(t *testing.T, app *cli.App) []string {
	t.Helper()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		if err := app.Run(append(append([]string{app.Name}, path...), "--help")); err != nil {
			t.Fatalf("%s %v --help: %v", app.Name, path, err)
		}
		for _, c := range cmds {
			if c.Name != "help" {
				walk(append(append([]string{}, path...), c.Name), c.Subcommands)
			}
		}
	}
	walk(nil, app.Commands)
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) < 50 {
		t.Fatalf("only %d flag lines in the help:\n%s", len(lines), out.String())
	}
	return lines
}

// Every flag states its default at most once, and the defaults in the help
// are the ones the node runs with (issue 17: "(default 5m) (default:
// 0s)").
func TestHelpStatesEachDefaultOnce(t *testing.T) {
	lines := helpLines(t, App())
	for _, l := range lines {
		if n := strings.Count(strings.ToLower(l), "default"); n > 1 {
			t.Errorf("flag line mentions a default %d times: %s", n, l)
		}
	}
	// Spot checks against the documented defaults (config.go), written
	// out rather than taken from SetDefaults so a drift shows here.
	pairs := [][2]string{
		{"--dead-after value", "(default: 5m0s)"},
		{"--request-timeout value", "(default: 10s)"},
		{"--idle-timeout value", "(default: 10m0s)"},
		{"--data-dir value", "(default: /var/lib/cosmosd)"},
		{"--cql-addr value", "(default: :9042)"},
		{"--max-connections value", "(default: 4096)"},
		{"--max-provisioned-throughput value", "(default: 1000000)"},
		{"--max-partitions-per-table value", "(default: 1024)"},
		{"--replication-factor value", "(default: 4 under raft, 1 under local)"},
		{"--nodes value", "(default: 4)"},
	}
	for _, p := range pairs {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, p[0]+" ") && strings.HasSuffix(l, p[1]) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no help line %q ... %q", p[0], p[1])
		}
	}
}
