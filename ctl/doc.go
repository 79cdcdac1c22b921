// Package ctl is cosmosctl, the operator's command-line client of a cosmosd
// cluster. It is a thin client of the admin gRPC API (proto/admin): every
// node answers for the whole cluster, so cosmosctl talks to whichever
// endpoint answers first and never reads etcd itself.
//
// # Contract
//
// Operators, Ansible and tests depend on this behaviour, so changes to it are
// interface changes:
//
//   - Endpoints come from --endpoints HOST:PORT[,...], else the environment
//     variable COSMOSCTL_ENDPOINTS, else 127.0.0.1:7070. They are tried in
//     order, each for at most --dial-timeout (3s); the first that completes a
//     gRPC handshake serves every call of the command. Each call is bounded by
//     --timeout (10s).
//   - Every command takes -o table (default) or -o json. JSON keys are the
//     proto field names (snake_case), every field is present, and 64-bit
//     integers are JSON numbers (tokens need all 64 bits: parse them with a
//     decoder that keeps integers exact, e.g. Python, Go, jq >= 1.7).
//   - Success exits 0 with the result on stdout. Failure exits non-zero with
//     exactly one line "cosmosctl: <reason>" on stderr; a server error's
//     reason is the gRPC status message.
//   - The common flags may be given before or after the command
//     (cosmosctl -o json nodes list, cosmosctl nodes list -o json); the one
//     nearest the command wins, then the environment, then the default.
//     Commands with positional arguments (ops show ID, partitions show ID,
//     nodes drain NODE, throughput set N) also take their flags after the
//     arguments; "--" ends the flags.
//   - Commands that start an operation (split, move, rebalance, nodes drain,
//     nodes decommission) print it (under -o json: the Operation message)
//     and exit at once. With --wait they follow it instead: GetOperation
//     every 500ms until the state is done or failed, showing progress on
//     stdout (a redrawn bar on a terminal; otherwise one line per change,
//     "op 12 rebalance: running 40% (moves: 4 of 10 done, 0 failed)"; none
//     under -o json), then print the final operation as ops show does. A
//     failed operation exits 1 with "operation N (kind) failed: <error>".
//     Polls that fail transiently (endpoint gone, controller failover) are
//     retried on the next endpoint for 30s after the last good one.
//     --wait-timeout bounds the wait; the operation goes on regardless.
//
// # Layout
//
// One file per command group (nodes.go: list, drain, decommission; ring.go;
// partitions.go; token.go; elastic.go: split, move, rebalance; ops.go;
// throughput.go; version.go), each exporting nothing and contributing
// *cli.Commands to App. Shared parts: app.go (the application, common flags
// and their resolution, the env a command runs in), args.go (positional
// arguments, flags after them, IDs), client.go (dialing endpoints in order,
// per-call timeouts, turning gRPC errors into one-line reasons), wait.go
// (--wait: polling, failover, progress display), output.go (the -o switch,
// borderless tables, key/value records, JSON), protojson.go (proto messages
// to JSON) and chart.go (byte sizes, bar charts).
//
// A new command is a function returning a *cli.Command with
// Flags: leafFlags(own flags...) and Action: run(fn). run rejects stray
// arguments (unless the command declares ArgsUsage), resolves the common
// flags and closes the connection afterwards; fn checks its own flags,
// calls the cluster through env.call (which dials on first use, so bad
// flags fail fast without waiting for endpoints) and prints through
// env.print(jsonValue, tableFunc).
//
// Flags are parsed by urfave/cli/v2, which stops at the first positional
// argument: in "cosmosctl partitions show P17 -o json" the -o is an
// argument. A command that declares ArgsUsage gets its positional
// arguments in env.args, after run has parsed any flags among them
// (trailingFlags) and set them on the context.
//
// Operations name nodes "n<ID>" (the admin API's Operation carries node
// IDs only); the admin API accepts that form, names and bare IDs.
//
// Nothing here calls os.Exit: Main returns the exit code to cmd/cosmosctl.
package ctl
