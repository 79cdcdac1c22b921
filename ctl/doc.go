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
//
// # Layout
//
// One file per command group (nodes.go, ring.go, token.go, version.go), each
// exporting nothing and contributing a *cli.Command to App. Shared parts:
// app.go (the application, common flags and their resolution, the env a
// command runs in), client.go (dialing endpoints in order, per-call
// timeouts, turning gRPC errors into one-line reasons), output.go (the -o
// switch, borderless tables, key/value records, JSON), protojson.go (proto
// messages to JSON) and chart.go (byte sizes, bar charts).
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
// argument, so commands with positional arguments should document
// "flags first" or read flags out of their arguments.
//
// Nothing here calls os.Exit: Main returns the exit code to cmd/cosmosctl.
package ctl
