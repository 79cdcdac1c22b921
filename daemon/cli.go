package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cosmosd/cosmosd/cluster/embedded"
	"github.com/cosmosd/cosmosd/security"
)

// flags are cosmosd's command-line flags; each mirrors a Config field and
// overrides the YAML file when given. Their help states each default once,
// as "(default: X)", taken from Config.SetDefaults so that help and
// behaviour cannot disagree. The defaults travel in DefaultText, never in
// Value: configFrom reads only the flags that were set, so a file's value is
// not overridden by a flag's default (issue 17: help showed "(default 5m)
// (default: 0s)").
func flags() []cli.Flag {
	var d Config
	d.SetDefaults()
	num := func(n int64) string { return strconv.FormatInt(n, 10) }
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "YAML configuration file (flags override it)"},
		&cli.StringFlag{Name: "name", Usage: "node name", DefaultText: "the host name"},
		&cli.StringFlag{Name: "data-dir", Usage: "data directory", DefaultText: d.DataDir},
		&cli.StringFlag{Name: "cql-addr", Usage: "CQL native protocol listen address", DefaultText: d.CQLAddr},
		&cli.StringFlag{Name: "peer-addr", Usage: "internode gRPC listen address", DefaultText: d.PeerAddr},
		&cli.StringFlag{Name: "admin-addr", Usage: "admin gRPC listen address", DefaultText: d.AdminAddr},
		&cli.StringFlag{Name: "http-addr", Usage: "HTTP address for /metrics, /healthz, /readyz, pprof; empty disables", DefaultText: defaultHTTPAddr + ", or none with --config"},
		&cli.StringFlag{Name: "advertise-host", Usage: "address other nodes and clients reach this node at", DefaultText: "derived from cql-addr or the host's first address"},
		&cli.StringFlag{Name: "etcd-endpoints", Usage: "comma-separated etcd endpoints; empty runs an embedded etcd in this process"},
		&cli.StringFlag{Name: "embedded-etcd-addr", Usage: "client address of the embedded etcd", DefaultText: d.EmbeddedEtcdAddr},
		&cli.StringFlag{Name: "etcd-prefix", Usage: "etcd key prefix", DefaultText: d.EtcdPrefix},
		&cli.StringFlag{Name: "consensus", Usage: "replication engine: raft (4 replicas) or local (1 replica, development)", DefaultText: d.Consensus},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error", DefaultText: d.LogLevel},
		&cli.StringFlag{Name: "log-format", Usage: "text or json", DefaultText: d.LogFormat},
		&cli.StringSliceFlag{Name: "label", Usage: "node label key=value (zone, rack, dc); repeatable"},
		&cli.DurationFlag{Name: "dead-after", Usage: "how long a node may be unreachable before its replicas are replaced", DefaultText: d.DeadAfter.String()},
		&cli.DurationFlag{Name: "request-timeout", Usage: "timeout of one request inside the cluster", DefaultText: d.RequestTimeout.String()},
		&cli.IntFlag{Name: "replication-factor", Usage: "replicas per physical partition", DefaultText: num(int64(d.ReplicationFactor)) + " under raft, 1 under local"},
		&cli.Int64Flag{Name: "logical-partition-max-bytes", Usage: "largest logical partition", DefaultText: num(d.LogicalPartitionMaxBytes)},
		&cli.Int64Flag{Name: "physical-partition-max-bytes", Usage: "split physical partitions above this size", DefaultText: num(d.PhysicalPartitionMaxBytes)},
		&cli.Int64Flag{Name: "physical-partition-max-ru", Usage: "split physical partitions whose RU/s share exceeds this", DefaultText: num(d.PhysicalPartitionMaxRU)},
		&cli.IntFlag{Name: "max-connections", Usage: "CQL client connections of the node", DefaultText: num(int64(d.MaxConnections))},
		&cli.IntFlag{Name: "max-connections-per-client", Usage: "CQL connections from one client IP address", DefaultText: num(int64(d.MaxConnectionsPerClient))},
		&cli.DurationFlag{Name: "idle-timeout", Usage: "close CQL connections idle this long; 0 disables", DefaultText: d.IdleTimeout.String()},
		&cli.IntFlag{Name: "max-partition-key-restrictions-per-query", Usage: "partition keys one statement's IN restrictions may address", DefaultText: num(int64(d.MaxPartitionKeyRestrictionsPerQuery))},
		&cli.IntFlag{Name: "max-clustering-key-restrictions-per-query", Usage: "clustering keys one statement's IN restrictions may address", DefaultText: num(int64(d.MaxClusteringKeyRestrictionsPerQuery))},
		&cli.IntFlag{Name: "max-mutation-bytes", Usage: "largest write of one statement or batch to one partition, at most max_frame_bytes", DefaultText: num(int64(d.MaxMutationBytes))},
		&cli.IntFlag{Name: "page-max-bytes", Usage: "end a page of a SELECT once its rows take this many bytes", DefaultText: num(int64(d.PageMaxBytes))},
		&cli.IntFlag{Name: "max-unpaged-result-bytes", Usage: "largest result of an unpaged SELECT", DefaultText: num(int64(d.MaxUnpagedResultBytes))},
		&cli.Int64Flag{Name: "max-provisioned-throughput", Usage: "most RU/s a table or keyspace may be provisioned with", DefaultText: num(d.MaxProvisionedThroughput)},
		&cli.IntFlag{Name: "max-partitions-per-table", Usage: "most physical partitions of one table", DefaultText: num(int64(d.MaxPartitionsPerTable))},
		&cli.StringFlag{Name: "authenticator", Usage: "CQL authentication: allow-all or password (roles and permissions, docs/security.md)", DefaultText: d.Authenticator},
		&cli.StringFlag{Name: "superuser", Usage: "superuser role created on the first start with --authenticator password", DefaultText: d.Superuser},
		&cli.StringFlag{Name: "superuser-password-file", Usage: "file holding the superuser's password, read when no role exists yet (required then)"},
		&cli.StringFlag{Name: "certs-dir", Usage: "directory with ca.crt, node.crt and node.key (made by cosmosd cert): TLS on every listener, mutual TLS between nodes", DefaultText: "none: insecure"},
		&cli.StringFlag{Name: "admin-users", Usage: "comma-separated client certificate names the admin API accepts with --certs-dir", DefaultText: strings.Join(d.AdminUsers, ",")},
		&cli.BoolFlag{Name: "cql-require-client-cert", Usage: "CQL clients must present a certificate of the cluster CA (needs --certs-dir)"},
		&cli.StringFlag{Name: "etcd-ca-file", Usage: "CA bundle of an external etcd's server certificate (turns etcd TLS on)"},
		&cli.StringFlag{Name: "etcd-cert-file", Usage: "client certificate presented to an external etcd"},
		&cli.StringFlag{Name: "etcd-key-file", Usage: "key of --etcd-cert-file"},
	}
}

// configFrom builds the configuration: defaults, then the YAML file, then
// the flags that were set.
func configFrom(c *cli.Context) (Config, error) {
	var cfg Config
	if path := c.String("config"); path != "" {
		if err := cfg.LoadFile(path); err != nil {
			return cfg, err
		}
	}
	str := map[string]*string{
		"name": &cfg.Name, "data-dir": &cfg.DataDir, "cql-addr": &cfg.CQLAddr, "peer-addr": &cfg.PeerAddr,
		"admin-addr": &cfg.AdminAddr, "http-addr": &cfg.HTTPAddr, "advertise-host": &cfg.AdvertiseHost,
		"embedded-etcd-addr": &cfg.EmbeddedEtcdAddr, "etcd-prefix": &cfg.EtcdPrefix, "consensus": &cfg.Consensus,
		"log-level": &cfg.LogLevel, "log-format": &cfg.LogFormat,
		"authenticator": &cfg.Authenticator, "superuser": &cfg.Superuser, "superuser-password-file": &cfg.SuperuserPasswordFile,
		"certs-dir": &cfg.CertsDir, "etcd-ca-file": &cfg.EtcdCAFile, "etcd-cert-file": &cfg.EtcdCertFile, "etcd-key-file": &cfg.EtcdKeyFile,
	}
	for name, p := range str {
		if c.IsSet(name) {
			*p = c.String(name)
		}
	}
	if !c.IsSet("http-addr") && cfg.HTTPAddr == "" && c.String("config") == "" {
		cfg.HTTPAddr = defaultHTTPAddr
	}
	if c.IsSet("admin-users") {
		cfg.AdminUsers = nil
		for _, u := range strings.Split(c.String("admin-users"), ",") {
			if u = strings.TrimSpace(u); u != "" {
				cfg.AdminUsers = append(cfg.AdminUsers, u)
			}
		}
	}
	if c.IsSet("etcd-endpoints") {
		cfg.EtcdEndpoints = nil
		for _, e := range strings.Split(c.String("etcd-endpoints"), ",") {
			if e = strings.TrimSpace(e); e != "" {
				cfg.EtcdEndpoints = append(cfg.EtcdEndpoints, e)
			}
		}
	}
	for _, l := range c.StringSlice("label") {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return cfg, fmt.Errorf("label %q: want key=value", l)
		}
		if cfg.Labels == nil {
			cfg.Labels = map[string]string{}
		}
		cfg.Labels[k] = v
	}
	if c.IsSet("dead-after") {
		cfg.DeadAfter = c.Duration("dead-after")
	}
	if c.IsSet("request-timeout") {
		cfg.RequestTimeout = c.Duration("request-timeout")
	}
	if c.IsSet("replication-factor") {
		cfg.ReplicationFactor = c.Int("replication-factor")
	}
	for name, p := range map[string]*int64{"logical-partition-max-bytes": &cfg.LogicalPartitionMaxBytes,
		"physical-partition-max-bytes": &cfg.PhysicalPartitionMaxBytes, "physical-partition-max-ru": &cfg.PhysicalPartitionMaxRU,
		"max-provisioned-throughput": &cfg.MaxProvisionedThroughput} {
		if c.IsSet(name) {
			*p = c.Int64(name)
		}
	}
	for name, p := range map[string]*int{
		"max-connections":                           &cfg.MaxConnections,
		"max-connections-per-client":                &cfg.MaxConnectionsPerClient,
		"max-partition-key-restrictions-per-query":  &cfg.MaxPartitionKeyRestrictionsPerQuery,
		"max-clustering-key-restrictions-per-query": &cfg.MaxClusteringKeyRestrictionsPerQuery,
		"max-mutation-bytes":                        &cfg.MaxMutationBytes,
		"page-max-bytes":                            &cfg.PageMaxBytes,
		"max-unpaged-result-bytes":                  &cfg.MaxUnpagedResultBytes,
		"max-partitions-per-table":                  &cfg.MaxPartitionsPerTable,
	} {
		if c.IsSet(name) {
			*p = c.Int(name)
		}
	}
	if c.IsSet("idle-timeout") {
		d := c.Duration("idle-timeout")
		cfg.IdleTimeout = &d
	}
	if c.IsSet("cql-require-client-cert") {
		cfg.CQLRequireClientCert = c.Bool("cql-require-client-cert")
	}
	cfg.SetDefaults()
	return cfg, cfg.Validate()
}

// defaultHTTPAddr is the HTTP address of a node started without --config
// (a configuration file enables HTTP with http_addr).
const defaultHTTPAddr = ":8080"

// App returns the cosmosd command.
func App() *cli.App { return newApp(runUntilSignal) }

// newApp builds the cosmosd command around run, which starts what a
// command starts and waits for a signal to stop it (runUntilSignal; tests
// pass one that records instead of starting).
func newApp(run func(start func(ctx context.Context) (stopper, error)) error) *cli.App {
	app := &cli.App{
		Name:    "cosmosd",
		Usage:   "a Cassandra-compatible database that partitions and replicates like Azure Cosmos DB",
		Version: fmt.Sprintf("%s (commit %s, built %s)", Version, Commit, BuildDate),
		Flags:   flags(),
		// Only main exits the process: urfave/cli's own handler exits on
		// some errors (help for an unknown topic), which would skip main's
		// message and any caller's cleanup.
		ExitErrHandler: func(*cli.Context, error) {},
		Action: func(c *cli.Context) error {
			if err := refuseArgs(c); err != nil {
				return err
			}
			cfg, err := configFrom(c)
			if err != nil {
				return err
			}
			return run(func(ctx context.Context) (stopper, error) {
				n, err := Start(ctx, cfg)
				if err != nil {
					return nil, err
				}
				if err := nodeBanner(c.App.ErrWriter, n); err != nil {
					n.logger.Warn("cannot print the startup banner", "err", err)
				}
				return n, nil
			})
		},
		Commands: []*cli.Command{demoCommand(run), etcdCommand(run), certCommand()},
	}
	return app
}

// refuseArgs answers positional arguments where a command takes none with
// its usage on stderr and an error. Without it, `cosmosd foo` or a
// mistyped subcommand (`cosmosd cert create-cs ...`) started a node with
// default settings: data in /var/lib/cosmosd, listening on every interface
// (issue 17).
func refuseArgs(c *cli.Context) error {
	if !c.Args().Present() {
		return nil
	}
	showUsage(c)
	arg := c.Args().First()
	switch cmds := commandNames(c); {
	case isRoot(c):
		return fmt.Errorf("unknown command %q: %s takes flags or one of the commands %s (see %s --help)", arg, c.App.Name, strings.Join(cmds, ", "), c.App.Name)
	case len(cmds) > 0:
		return fmt.Errorf("unknown command %q: %s has the commands %s (see %s --help)", arg, c.Command.HelpName, strings.Join(cmds, ", "), c.Command.HelpName)
	default:
		return fmt.Errorf("unexpected argument %q: %s takes flags only (see %s --help)", arg, c.Command.HelpName, c.Command.HelpName)
	}
}

// isRoot reports whether c is the context of cosmosd itself, not of one of
// its commands.
func isRoot(c *cli.Context) bool {
	return c.Command == nil || c.Command.HelpName == "" || c.Command.HelpName == c.App.Name
}

// commandNames lists the commands of c's command, without urfave/cli's
// help command (which it adds to every command).
func commandNames(c *cli.Context) []string {
	cmds := c.App.Commands
	if !isRoot(c) {
		cmds = c.Command.Subcommands
	}
	var names []string
	for _, sub := range cmds {
		if sub.Name != "help" && !sub.Hidden {
			names = append(names, sub.Name)
		}
	}
	return names
}

// showUsage prints the help of c's command to stderr, where a refusal's
// reason goes, leaving stdout empty for scripts.
func showUsage(c *cli.Context) {
	w := c.App.Writer
	c.App.Writer = c.App.ErrWriter
	if c.App.Writer == nil {
		c.App.Writer = os.Stderr
	}
	defer func() { c.App.Writer = w }()
	if isRoot(c) {
		_ = cli.ShowAppHelp(c)
		return
	}
	if len(commandNames(c)) > 0 {
		_ = cli.ShowSubcommandHelp(c)
		return
	}
	_ = cli.ShowCommandHelp(c.Lineage()[1], c.Command.Name)
}

// groupAction is the action of a command that only groups subcommands
// (cert): alone it shows its help; an unknown subcommand is refused.
func groupAction(c *cli.Context) error {
	if err := refuseArgs(c); err != nil {
		return err
	}
	return cli.ShowSubcommandHelp(c)
}

type stopper interface{ Close(context.Context) error }

// stopOverrun is how long a stop may run past its shutdown timeout before
// runUntilSignal gives up on it: Node.Close bounds itself to the timeout
// plus closeMargin, so this is only reached if that bound fails.
const stopOverrun = 5 * time.Second

// defaultStopTimeout is the shutdown timeout of stoppers that do not say
// theirs (the etcd command); it is Config.ShutdownTimeout's default.
const defaultStopTimeout = 30 * time.Second

// runUntilSignal starts something, waits for SIGINT or SIGTERM and stops it.
// If the stop runs longer than its shutdown timeout plus stopOverrun, it
// returns an error without waiting further, so the process exits non-zero
// instead of hanging (reliability issue: SIGTERM hung for 24 minutes). A
// second signal during the stop kills the process at once.
func runUntilSignal(start func(ctx context.Context) (stopper, error)) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	// SIGHUP re-reads the certificate files (docs/security.md). It is
	// caught before the start, which takes seconds: a SIGHUP then (a
	// deployment that rotates certificates as it starts nodes) must not
	// kill the process, SIGHUP's default action; it is acted on once
	// started.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	s, err := start(ctx)
	if err != nil {
		return err
	}
	var fatal <-chan error
	if f, ok := s.(interface{ Fatal() <-chan error }); ok {
		fatal = f.Fatal()
	}
	reloader, canReload := s.(interface{ ReloadCertificates() error })
	if !canReload {
		// Nothing to reload (cosmosd etcd): SIGHUP's default again.
		signal.Stop(hup)
		hup = nil
	}
	var cause error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-hup:
			if err := reloader.ReloadCertificates(); err != nil {
				fmt.Fprintf(os.Stderr, "cosmosd: SIGHUP: %v; the previous certificates stay in use\n", oneLineErr(err))
			}
		case cause = <-fatal:
			fmt.Fprintf(os.Stderr, "cosmosd: %v; stopping so the node restarts from what is durable\n", cause)
			break wait
		}
	}
	cancel() // restore the default action: a second signal kills
	limit := defaultStopTimeout
	if t, ok := s.(interface{ ShutdownTimeout() time.Duration }); ok {
		limit = t.ShutdownTimeout()
	}
	limit += stopOverrun
	fmt.Fprintln(os.Stderr, "cosmosd: shutting down")
	stopCtx, stop := context.WithTimeout(context.Background(), limit)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.Close(stopCtx) }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		if cause != nil {
			return errors.Join(cause, err)
		}
		return err
	case <-t.C:
		return errors.Join(cause, fmt.Errorf("shutdown did not finish within %s (shutdown_timeout + %s); exiting anyway", limit, stopOverrun))
	}
}

// Demo is a local cluster of several nodes in one process sharing one
// embedded etcd: node i listens on 127.0.0.i, so every node has the
// standard ports and drivers discover them all.
type Demo struct {
	Etcd  *embedded.Server
	Nodes []*Node
}

// ShutdownTimeout is the longest shutdown timeout of the demo's nodes,
// which stop concurrently.
func (d *Demo) ShutdownTimeout() time.Duration {
	var t time.Duration
	for _, n := range d.Nodes {
		t = max(t, n.ShutdownTimeout())
	}
	return t
}

// Close stops every node (concurrently), then etcd.
func (d *Demo) Close(ctx context.Context) error {
	errs := make([]error, len(d.Nodes))
	var wg sync.WaitGroup
	for i, n := range d.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.Close(ctx)
		}()
	}
	wg.Wait()
	d.Etcd.Close()
	return errors.Join(errs...)
}

// StartDemo starts n nodes under dataDir.
func StartDemo(ctx context.Context, dataDir string, n int, consensus string, base Config) (*Demo, error) {
	if n < 1 || n > 9 {
		return nil, fmt.Errorf("demo: --nodes %d: want 1..9", n)
	}
	d := &Demo{}
	var err error
	d.Etcd, err = embedded.Start(embedded.Config{Dir: filepath.Join(dataDir, "etcd"), ClientAddr: "127.0.0.1:2379"})
	if err != nil {
		return nil, err
	}
	for i := 1; i <= n; i++ {
		host := fmt.Sprintf("127.0.0.%d", i)
		cfg := base
		cfg.Name = fmt.Sprintf("node-%d", i)
		cfg.DataDir = filepath.Join(dataDir, cfg.Name)
		cfg.CQLAddr = net.JoinHostPort(host, "9042")
		cfg.PeerAddr = net.JoinHostPort(host, "7000")
		cfg.AdminAddr = net.JoinHostPort(host, "7070")
		cfg.HTTPAddr = net.JoinHostPort(host, "8080")
		cfg.EtcdEndpoints = d.Etcd.Endpoints()
		cfg.Consensus = consensus
		if cfg.Labels == nil {
			cfg.Labels = map[string]string{"dc": "datacenter1", "rack": fmt.Sprintf("rack%d", i)}
		}
		node, err := Start(ctx, cfg)
		if err != nil {
			_ = d.Close(context.Background())
			return nil, fmt.Errorf("demo node %d: %w", i, err)
		}
		d.Nodes = append(d.Nodes, node)
	}
	return d, nil
}

func demoCommand(run func(start func(ctx context.Context) (stopper, error)) error) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "run a local cluster of several nodes in this process with an embedded etcd (CQL on 127.0.0.1:9042, admin on 127.0.0.1:7070)",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Value: 4, Usage: "number of nodes (node i listens on 127.0.0.i)"},
			&cli.StringFlag{Name: "data-dir", Value: "./cosmosd-data", Usage: "data directory of the demo cluster"},
			&cli.StringFlag{Name: "consensus", Value: "raft", Usage: "raft or local (local needs --nodes 1)"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		},
		Action: func(c *cli.Context) error {
			if err := refuseArgs(c); err != nil {
				return err
			}
			base := Config{LogLevel: c.String("log-level")}
			return run(func(ctx context.Context) (stopper, error) {
				// The demo is the one-command local cluster: plaintext on
				// loopback, and it says so (docs/security.md).
				base.NewLogger().Warn("running insecure: no TLS, no authentication", "demo", true)
				d, err := StartDemo(ctx, c.String("data-dir"), c.Int("nodes"), c.String("consensus"), base)
				if err != nil {
					return nil, err
				}
				if err := demoBanner(c.App.ErrWriter, d, c.String("data-dir")); err != nil {
					base.NewLogger().Warn("cannot print the startup banner", "err", err)
				}
				return d, nil
			})
		},
	}
}

// etcdCommand runs a standalone etcd member from the cosmosd binary, so a
// host (or a test container) needs no other software to form an etcd
// cluster for cosmosd.
func etcdCommand(run func(start func(ctx context.Context) (stopper, error)) error) *cli.Command {
	return &cli.Command{
		Name:  "etcd",
		Usage: "run an etcd member (for hosts that have no etcd of their own)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Value: "etcd", Usage: "member name"},
			&cli.StringFlag{Name: "data-dir", Value: "/var/lib/cosmosd-etcd", Usage: "data directory"},
			&cli.StringFlag{Name: "listen-client", Value: "0.0.0.0:2379", Usage: "client listen address"},
			&cli.StringFlag{Name: "listen-peer", Value: "0.0.0.0:2380", Usage: "peer listen address"},
			&cli.StringFlag{Name: "advertise-client", Usage: "client address others use (host:port)"},
			&cli.StringFlag{Name: "advertise-peer", Usage: "peer address others use (host:port)"},
			&cli.StringFlag{Name: "initial-cluster", Usage: "members as name=http://host:2380,... (empty: single member)"},
			&cli.StringFlag{Name: "cluster-state", Value: "new", Usage: "new or existing"},
			&cli.StringFlag{Name: "certs-dir", Usage: "serve clients and peers over TLS with node.crt/node.key, requiring certificates of ca.crt (--initial-cluster then names https:// URLs)"},
		},
		Action: func(c *cli.Context) error {
			if err := refuseArgs(c); err != nil {
				return err
			}
			ecfg := embedded.Config{
				Dir: c.String("data-dir"), Name: c.String("name"),
				ClientAddr: c.String("listen-client"), PeerAddr: c.String("listen-peer"),
				AdvertiseClientAddr: c.String("advertise-client"), AdvertisePeerAddr: c.String("advertise-peer"),
				InitialCluster: c.String("initial-cluster"), ClusterState: c.String("cluster-state"),
				Wait: 10 * time.Minute,
			}
			if dir := c.String("certs-dir"); dir != "" {
				f := security.NodeFiles(dir)
				ecfg.TLS = &embedded.TLS{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA}
			}
			return run(func(ctx context.Context) (stopper, error) {
				e, err := embedded.Start(ecfg)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(os.Stderr, "cosmosd etcd: member %s serving clients on %s\n", c.String("name"), strings.Join(e.Endpoints(), ","))
				return embeddedStopper{e}, nil
			})
		},
	}
}

type embeddedStopper struct{ e *embedded.Server }

func (s embeddedStopper) Close(context.Context) error { s.e.Close(); return nil }
