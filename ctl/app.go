package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"google.golang.org/grpc/credentials"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// Version, Commit and BuildDate describe the build; the linker sets them
// (-ldflags "-X github.com/cosmosd/cosmosd/ctl.Version=...").
var (
	Version   = "dev"
	Commit    = "unknown"
	BuildDate = "unknown"
)

// Defaults of the common flags.
const (
	DefaultEndpoint    = "127.0.0.1:7070"
	DefaultTimeout     = 10 * time.Second
	DefaultDialTimeout = 3 * time.Second
	// EndpointsEnv names the environment variable read when --endpoints is
	// not given.
	EndpointsEnv = "COSMOSCTL_ENDPOINTS"
)

// Main runs cosmosctl with args (args[0] is the program name), writing
// results to stdout and at most one line of error to stderr, and returns
// the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if err := App(stdout, stderr).RunContext(ctx, args); err != nil {
		fmt.Fprintf(stderr, "cosmosctl: %s\n", oneLine(err))
		return 1
	}
	return 0
}

// oneLine flattens an error message so the contract of one line on stderr
// holds even for joined or multi-line errors.
func oneLine(err error) string {
	lines := strings.FieldsFunc(err.Error(), func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(slices.DeleteFunc(lines, func(s string) bool { return s == "" }), "; ")
}

// App returns the cosmosctl application. Every call builds fresh flags,
// because urfave/cli flags remember whether they were set.
func App(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:                      "cosmosctl",
		Usage:                     "look at and steer a cosmosd cluster",
		Version:                   fmt.Sprintf("%s (commit %s, built %s)", Version, Commit, BuildDate),
		Writer:                    stdout,
		ErrWriter:                 stderr,
		Flags:                     commonFlags(true),
		DisableSliceFlagSeparator: true, // a --key value may contain commas
		// Only main exits the process; errors travel back to Main.
		ExitErrHandler: func(*cli.Context, error) {},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return groupAction(c)
			}
			return cli.ShowAppHelp(c)
		},
		Commands: []*cli.Command{
			nodesCommand(),
			ringCommand(),
			partitionsCommand(),
			tokenCommand(),
			splitCommand(),
			moveCommand(),
			rebalanceCommand(),
			opsCommand(),
			throughputCommand(),
			versionCommand(),
		},
	}
	app.OnUsageError = usageError
	setUsageError(app.Commands)
	return app
}

// usageError keeps a usage error to one line instead of printing the help
// text, so scripts see the reason on stderr and nothing on stdout.
func usageError(c *cli.Context, err error, _ bool) error {
	return fmt.Errorf("%w (see %s --help)", err, helpName(c))
}

func helpName(c *cli.Context) string {
	if c.Command != nil && c.Command.HelpName != "" {
		return c.Command.HelpName
	}
	return "cosmosctl"
}

func setUsageError(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = usageError
		setUsageError(c.Subcommands)
	}
}

// groupAction is the action of the application and of command groups
// (nodes, ring): without arguments it shows help; an unknown subcommand is
// an error rather than urfave/cli's help lookup, which exits 3 and prints
// to stdout.
func groupAction(c *cli.Context) error {
	if c.Args().Present() {
		return fmt.Errorf("unknown command %q (see %s --help)", c.Args().First(), helpName(c))
	}
	return cli.ShowSubcommandHelp(c)
}

// Common flag names.
const (
	flagEndpoints   = "endpoints"
	flagOutput      = "output"
	flagTimeout     = "timeout"
	flagDialTimeout = "dial-timeout"
)

// commonFlags are the flags every command takes. The application carries
// them with their environment variables; each leaf command carries them
// again without, so they may follow the command; resolveOptions picks
// which one applies.
func commonFlags(withEnv bool) []cli.Flag {
	env := func(name string) []string {
		if withEnv {
			return []string{name}
		}
		return nil
	}
	endpointsUsage := "admin endpoints HOST:PORT[,...], tried in order until one answers"
	if !withEnv {
		endpointsUsage += " (else $" + EndpointsEnv + ")"
	}
	return []cli.Flag{
		&cli.StringFlag{Name: flagEndpoints, Value: DefaultEndpoint, EnvVars: env(EndpointsEnv), Usage: endpointsUsage},
		&cli.StringFlag{Name: flagOutput, Aliases: []string{"o"}, Value: string(formatTable),
			Usage: "output format: table or json"},
		&cli.DurationFlag{Name: flagTimeout, Value: DefaultTimeout, Usage: "timeout of each call to the cluster"},
		&cli.DurationFlag{Name: flagDialTimeout, Value: DefaultDialTimeout, Usage: "how long to wait for each endpoint to answer"},
		&cli.StringFlag{Name: flagCertsDir, EnvVars: env(CertsDirEnv),
			Usage: "directory with ca.crt and client.USER.crt/.key: talk TLS to a secure cluster", DefaultText: "none: plaintext"},
		&cli.StringFlag{Name: flagUser, Value: DefaultUser, EnvVars: env(UserEnv),
			Usage: "whose client certificate of --certs-dir to present", DefaultText: DefaultUser + ", or the only one there"},
	}
}

// leafFlags returns a leaf command's own flags followed by the common ones.
func leafFlags(own ...cli.Flag) []cli.Flag {
	return append(own, commonFlags(false)...)
}

// options are the resolved common flags.
type options struct {
	endpoints   []string
	output      format
	timeout     time.Duration
	dialTimeout time.Duration
	// tls is the admin connection's TLS (--certs-dir); nil: plaintext.
	tls credentials.TransportCredentials
}

// flagContext returns the context whose value of the common flag name
// applies: the nearest one where it was set explicitly, else the outermost
// one that defines it (where the environment and the default live).
func flagContext(c *cli.Context, name string) *cli.Context {
	var outer *cli.Context
	for _, x := range c.Lineage() {
		if x.Command == nil || !slices.ContainsFunc(x.Command.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) }) {
			continue
		}
		if slices.Contains(x.LocalFlagNames(), name) {
			return x
		}
		outer = x
	}
	if outer == nil {
		return c
	}
	return outer
}

// resolveOptions reads and checks the common flags, reporting every problem
// at once.
func resolveOptions(c *cli.Context) (options, error) {
	var o options
	var errs []error
	o.endpoints = splitEndpoints(flagContext(c, flagEndpoints).String(flagEndpoints))
	if len(o.endpoints) == 0 {
		errs = append(errs, errors.New("--endpoints: no endpoint given"))
	}
	o.output = format(flagContext(c, flagOutput).String(flagOutput))
	if o.output != formatTable && o.output != formatJSON {
		errs = append(errs, fmt.Errorf("-o %q: want table or json", string(o.output)))
	}
	o.timeout = flagContext(c, flagTimeout).Duration(flagTimeout)
	if o.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s: must be positive", o.timeout))
	}
	o.dialTimeout = flagContext(c, flagDialTimeout).Duration(flagDialTimeout)
	if o.dialTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--dial-timeout %s: must be positive", o.dialTimeout))
	}
	if dir := flagContext(c, flagCertsDir).String(flagCertsDir); dir != "" {
		uc := flagContext(c, flagUser)
		var err error
		if o.tls, err = clientTLS(dir, uc.String(flagUser), uc.IsSet(flagUser)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return o, errors.Join(errs...)
	}
	return o, nil
}

// env is what a command runs with: resolved options, positional
// arguments, where to print, and the connection to the cluster, dialed on
// first use so that a command checks its own flags before it waits for
// endpoints. Owned by one command.
type env struct {
	opts   options
	args   []string // positional arguments (commands with ArgsUsage)
	out    io.Writer
	client *client // nil until the first call
	// pollEvery is the interval of GetOperation polls under --wait.
	pollEvery time.Duration
	// retryFor is how long --wait retries failed polls (controller or
	// endpoint failover) before it gives up.
	retryFor time.Duration
}

// call runs one admin RPC: it connects on first use, bounds the call by
// --timeout and turns a failure into a one-line reason.
func (e *env) call(ctx context.Context, rpc func(ctx context.Context, admin adminpb.AdminClient) error) error {
	if e.client == nil {
		cl, err := dial(ctx, e.opts.endpoints, e.opts.dialTimeout, e.opts.timeout, e.opts.tls)
		if err != nil {
			return err
		}
		e.client = cl
	}
	return e.client.call(ctx, func(ctx context.Context) error { return rpc(ctx, e.client.admin) })
}

func (e *env) close() {
	if e.client != nil {
		_ = e.client.Close()
		e.client = nil
	}
}

// run builds a command's action: it rejects unexpected arguments (or, for
// commands that declare ArgsUsage, takes in flags that follow them),
// resolves the common flags, runs fn and closes the connection fn may have
// opened through env.call.
func run(fn func(ctx context.Context, c *cli.Context, e *env) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		var args []string
		if c.Command != nil && c.Command.ArgsUsage != "" {
			var err error
			if args, err = trailingFlags(c); err != nil {
				return err
			}
		} else if err := checkNoArgs(c); err != nil {
			return err
		}
		opts, err := resolveOptions(c)
		if err != nil {
			return err
		}
		e := &env{opts: opts, args: args, out: c.App.Writer, pollEvery: defaultPollEvery, retryFor: defaultRetryFor}
		defer e.close()
		return fn(c.Context, c, e)
	}
}

// checkNoArgs rejects positional arguments for commands that declare none
// (no ArgsUsage): a stray word is more likely a typo than something to
// ignore.
func checkNoArgs(c *cli.Context) error {
	if c.Args().Present() && (c.Command == nil || c.Command.ArgsUsage == "") {
		return fmt.Errorf("unexpected argument %q (see %s --help)", c.Args().First(), helpName(c))
	}
	return nil
}
