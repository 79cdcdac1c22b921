package ctl

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

// trailingFlags returns a command's positional arguments after taking in
// the flags that follow them. urfave/cli stops parsing flags at the first
// positional argument, so in "cosmosctl ops show 12 -o json" it leaves
// "-o json" as arguments; this parses them with the command's own flags
// and sets them on c, as if they had come before the argument. "--" ends
// the flags: everything after it is positional.
func trailingFlags(c *cli.Context) ([]string, error) {
	rest := c.Args().Slice()
	if len(rest) == 0 {
		return nil, nil
	}
	var sets []flagSetting
	fs := flag.NewFlagSet(helpName(c), flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, f := range c.Command.Flags {
		names := f.Names()
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range names {
			fs.Var(&flagRecorder{name: names[0], isBool: isBool, sets: &sets}, n, "")
		}
	}
	var args []string
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return nil, fmt.Errorf("%w (see %s --help)", err, helpName(c))
		}
		consumed := rest[:len(rest)-len(fs.Args())]
		rest = fs.Args()
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			args = append(args, rest...)
			break
		}
		if len(rest) > 0 {
			args = append(args, rest[0])
			rest = rest[1:]
		}
	}
	for _, s := range sets {
		if err := c.Set(s.name, s.value); err != nil {
			return nil, fmt.Errorf("invalid value %q for flag -%s: %v (see %s --help)", s.value, s.name, err, helpName(c))
		}
	}
	return args, nil
}

// flagSetting is one flag met after a positional argument, by its
// canonical name.
type flagSetting struct{ name, value string }

// flagRecorder is a flag.Value that records settings in order instead of
// parsing them; the command's real flag parses them through cli.Context.Set.
type flagRecorder struct {
	name   string
	isBool bool
	sets   *[]flagSetting
}

func (r *flagRecorder) String() string { return "" }

func (r *flagRecorder) Set(v string) error {
	*r.sets = append(*r.sets, flagSetting{name: r.name, value: v})
	return nil
}

// IsBoolFlag lets "--wait" stand without a value, as the flag package
// does for boolean flags.
func (r *flagRecorder) IsBoolFlag() bool { return r.isBool }

// oneArg returns the single positional argument of a command, named what
// in errors.
func oneArg(c *cli.Context, args []string, what string) (string, error) {
	switch len(args) {
	case 0:
		return "", fmt.Errorf("missing %s (see %s --help)", what, helpName(c))
	case 1:
		if args[0] == "" {
			return "", fmt.Errorf("empty %s (see %s --help)", what, helpName(c))
		}
		return args[0], nil
	}
	return "", fmt.Errorf("unexpected argument %q (see %s --help)", args[1], helpName(c))
}

// parsePartitionID reads a physical partition's ID as tables print it
// ("P17") or bare ("17").
func parsePartitionID(s string) (uint64, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "P"), "p")
	id, err := strconv.ParseUint(t, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("partition %q: want an ID such as P17 or 17", s)
	}
	return id, nil
}

// parseOperationID reads an operation's ID.
func parseOperationID(s string) (uint64, error) {
	id, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("operation %q: want a number, as ops list shows", s)
	}
	return id, nil
}
