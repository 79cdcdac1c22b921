package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	"github.com/cosmosd/cosmosd/admin"
	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/embedded"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/local"
	"github.com/cosmosd/cosmosd/consensus/raft"
	"github.com/cosmosd/cosmosd/cql"
	"github.com/cosmosd/cosmosd/cql/exec"
	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/partition"
	"github.com/cosmosd/cosmosd/placement"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/security"
	"github.com/cosmosd/cosmosd/storage"
)

// Version is the build's version, set by the linker (make dist).
var (
	Version   = "dev"
	Commit    = "unknown"
	BuildDate = "unknown"
)

// Node is one running cosmosd node.
type Node struct {
	cfg    Config
	logger *slog.Logger
	id     uint64

	embedded *embedded.Server
	etcd     *metakv.EtcdClient
	// metaKV is the metadata store on etcd, under the configured prefix.
	metaKV   metakv.Store
	store    *storage.Engine
	meta     *cluster.Meta
	catalog  *cluster.Catalog
	cons     consensus.Engine
	parts    *partition.Store
	router   *router.Router
	exec     *exec.Executor
	events   *cql.EventSource
	cqlSrv   *cql.Server
	peerSrv  *grpc.Server
	adminSrv *grpc.Server
	httpSrv  *http.Server
	reg      *cluster.Registration
	ctrl     *placement.Controller
	metrics  *prometheus.Registry
	// certs and etcdCerts are the node's and the etcd client's TLS
	// material (tls.go); nil without certs_dir, etcd_*_file.
	certs, etcdCerts *security.Reloader

	cqlLn, peerLn, adminLn, httpLn net.Listener

	// fatal receives (once) a failure the node cannot serve through: its
	// store failed a write. The process closes the node and exits non-zero
	// so its supervisor restarts it from what is durable (see Fatal).
	fatal     chan error
	fatalOnce sync.Once

	ready  atomic.Bool
	killed atomic.Bool
	cancel context.CancelFunc
	// stopCtrl cancels the controller's context (a child of cancel's).
	stopCtrl  context.CancelFunc
	bg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// ID returns the node's id.
func (n *Node) ID() uint64 { return n.id }

// CQLAddr returns the address the CQL server listens on.
func (n *Node) CQLAddr() string { return n.cqlLn.Addr().String() }

// AdminAddr returns the admin gRPC address.
func (n *Node) AdminAddr() string { return n.adminLn.Addr().String() }

// PeerAddr returns the internode gRPC address.
func (n *Node) PeerAddr() string { return n.peerLn.Addr().String() }

// HTTPAddr returns the HTTP address ("" when disabled).
func (n *Node) HTTPAddr() string {
	if n.httpLn == nil {
		return ""
	}
	return n.httpLn.Addr().String()
}

// EtcdEndpoints returns the etcd endpoints the node uses.
func (n *Node) EtcdEndpoints() []string { return n.etcd.Endpoints() }

// Meta returns the node's view of the cluster metadata.
func (n *Node) Meta() *cluster.Meta { return n.meta }

// Store returns the node's partition replicas.
func (n *Node) Store() *partition.Store { return n.parts }

// Fatal delivers at most one error after which the node must not go on
// serving: its store failed a write, so what it applied in memory may not
// be on disk (Pebble cannot continue past a failed WAL write). The process
// runner closes the node and exits non-zero when it arrives; a supervisor
// (systemd's Restart=) then starts it again from what is durable, and the
// controller repairs its replicas if it stays down.
func (n *Node) Fatal() <-chan error { return n.fatal }

// watchStore reports the store's first write failure on Fatal.
func (n *Node) watchStore(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := n.store.Err(); err != nil {
			n.ready.Store(false)
			n.logger.Error("store failed a write; the node stops so that it restarts from what is durable", "err", err)
			n.fatalOnce.Do(func() { n.fatal <- fmt.Errorf("store failed: %w", err) })
			return
		}
	}
}

// Ready reports whether the node serves requests.
func (n *Node) Ready() bool { return n.ready.Load() }

// Start starts a node. On error everything started is stopped again.
func Start(ctx context.Context, cfg Config) (_ *Node, err error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.NewLogger().With("node_name", cfg.Name)
	n := &Node{cfg: cfg, logger: logger, metrics: prometheus.NewRegistry(), fatal: make(chan error, 1)}
	defer func() {
		if err != nil {
			_ = n.Close(context.Background())
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := n.loadCertificates(); err != nil {
		return nil, err
	}
	// Listen first, so port 0 resolves and advertised addresses are real.
	if n.cqlLn, err = net.Listen("tcp", cfg.CQLAddr); err != nil {
		return nil, fmt.Errorf("listen cql %s: %w", cfg.CQLAddr, err)
	}
	n.cqlLn = n.cqlListener(n.cqlLn)
	if n.peerLn, err = net.Listen("tcp", cfg.PeerAddr); err != nil {
		return nil, fmt.Errorf("listen peer %s: %w", cfg.PeerAddr, err)
	}
	if n.adminLn, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
		return nil, fmt.Errorf("listen admin %s: %w", cfg.AdminAddr, err)
	}
	if cfg.HTTPAddr != "" {
		if n.httpLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return nil, fmt.Errorf("listen http %s: %w", cfg.HTTPAddr, err)
		}
		n.httpLn = n.httpListener(n.httpLn)
	}
	endpoints := cfg.EtcdEndpoints
	if len(endpoints) == 0 {
		ecfg := embedded.Config{Dir: filepath.Join(cfg.DataDir, "etcd"), ClientAddr: cfg.EmbeddedEtcdAddr, Name: cfg.Name}
		if n.certs != nil {
			f := n.certs.Files()
			ecfg.TLS = &embedded.TLS{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA}
		}
		n.embedded, err = embedded.Start(ecfg)
		if err != nil {
			return nil, err
		}
		endpoints = n.embedded.Endpoints()
		logger.Info("started embedded etcd", "endpoints", strings.Join(endpoints, ","))
	}
	etcdOpts, etcdProbe := n.etcdDialOptions()
	n.etcd, err = metakv.DialEtcd(metakv.EtcdClientConfig{Endpoints: endpoints, Prefix: cfg.EtcdPrefix, DialOptions: etcdOpts})
	if err != nil {
		return nil, err
	}
	if err := n.checkEtcd(ctx, endpoints, etcdProbe); err != nil {
		return nil, err
	}
	n.metaKV = n.etcd.Store()
	// The store opens before the id is known: the id is bound to it
	// (nodeid.go).
	storeCfg := storage.Config{Dir: filepath.Join(cfg.DataDir, "store"), Logger: n.logger}
	if cfg.Knobs != nil && cfg.Knobs.StoreFS != nil {
		storeCfg.FS = cfg.Knobs.StoreFS(vfs.Default)
	}
	if n.store, err = storage.Open(storeCfg); err != nil {
		return nil, err
	}
	if n.id, err = n.bindNodeID(ctx); err != nil {
		return nil, err
	}
	n.logger = n.logger.With("node", n.id)
	if n.meta, err = cluster.OpenMeta(ctx, n.metaKV, n.logger); err != nil {
		return nil, err
	}
	n.catalog = cluster.NewCatalog(n.meta)
	if err := n.catalog.EnsureSchemaVersion(ctx); err != nil {
		return nil, fmt.Errorf("schema version: %w", err)
	}
	roles, authn, err := n.startAuth(ctx)
	if err != nil {
		return nil, err
	}
	if n.cons, err = n.newConsensus(); err != nil {
		return nil, err
	}
	n.parts = partition.NewStore(partition.StoreConfig{NodeID: consensus.NodeID(n.id), Storage: n.store, Consensus: n.cons,
		Throughput: n.throughput, MaxMutationBytes: cfg.MaxMutationBytes, Logger: n.logger})
	if err := n.parts.Recover(ctx); err != nil {
		return nil, err
	}
	rcfg := router.Config{NodeID: consensus.NodeID(n.id), Store: n.parts, Meta: n.meta,
		MaxMessageBytes: cfg.MaxFrameBytes + (1 << 20), Logger: n.logger, DialOptions: []grpc.DialOption{n.peerDialCreds()}}
	if re, ok := n.cons.(*raft.Engine); ok {
		// A node that leads partitions followed here heartbeats every
		// tick; its silence routes requests around it at once.
		rcfg.Liveness = re.LeaderSilence
	}
	n.router = router.New(rcfg)

	// Internal gRPC: forwarding (and the raft transport).
	n.peerSrv = grpc.NewServer(append(n.peerServerCreds(), grpc.MaxRecvMsgSize(cfg.MaxFrameBytes+(1<<20)), grpc.KeepaliveEnforcementPolicy(router.KeepaliveEnforcement),
		grpc.ChainUnaryInterceptor(recoverUnary(n.logger)), grpc.ChainStreamInterceptor(recoverStream(n.logger)))...)
	kvpb.RegisterInternalServer(n.peerSrv, router.NewServer(n.parts))
	if rs, ok := n.cons.(interface{ RegisterService(*grpc.Server) }); ok {
		rs.RegisterService(n.peerSrv)
	}
	n.serveBG("peer grpc", func() error { return n.peerSrv.Serve(n.peerLn) })

	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.runCertificateReloads(runCtx)
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		n.reconcileLoop(runCtx)
	}()
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		n.watchStore(runCtx)
	}()

	// A test hook may skew this node's clock (see TestingClockOffsetFile).
	now := time.Now
	if cfg.TestingClockOffsetFile != "" {
		oc := newOffsetClock(cfg.TestingClockOffsetFile, n.logger)
		now = oc.Now
		n.bg.Add(1)
		go func() {
			defer n.bg.Done()
			oc.run(runCtx)
		}()
	}
	reqMetrics := newRequestMetrics(n.metrics)
	// A statement's table is a label only when the schema has it, so a
	// client naming random tables cannot create series.
	knownTable := func(keyspace, table string) bool {
		st := n.meta.State()
		return st.Schema != nil && st.Schema.Table(keyspace, table) != nil
	}
	n.exec = exec.New(exec.Config{
		NodeID: n.id, Meta: n.meta, Catalog: n.catalog, Router: n.router, Now: now,
		ObserveStatement: func(stmt parser.Statement, keyspace string, d time.Duration) {
			reqMetrics.observeStatement(stmt, keyspace, d, knownTable)
		},
		Placer:        &placer{meta: n.meta, catalog: n.catalog, rf: cfg.ReplicationFactor, self: n.id},
		Local:         exec.LocalNode{HostID: exec.HostID(n.id), Datacenter: labelOr(cfg.Labels, "dc", "datacenter1"), Rack: labelOr(cfg.Labels, "rack", "rack1")},
		MaxValueBytes: cfg.MaxValueBytes, LogicalPartitionMaxBytes: cfg.LogicalPartitionMaxBytes,
		PhysicalPartitionMaxRU: cfg.PhysicalPartitionMaxRU, Logger: n.logger,
		MaxPartitionKeyRestrictions: cfg.MaxPartitionKeyRestrictionsPerQuery, MaxClusteringKeyRestrictions: cfg.MaxClusteringKeyRestrictionsPerQuery,
		MaxMutationBytes: cfg.MaxMutationBytes, PageMaxBytes: cfg.PageMaxBytes, MaxUnpagedResultBytes: cfg.MaxUnpagedResultBytes,
		MaxProvisionedThroughput: cfg.MaxProvisionedThroughput, MaxPartitionsPerTable: cfg.MaxPartitionsPerTable,
		RequireAuth: authn != nil, Roles: roles, PasswordHashCost: passwordHashCost(cfg.Knobs),
	})
	if n.exec == nil {
		return nil, errors.New("executor")
	}
	n.events = cql.NewEventSource(n.meta, n.logger)
	n.metrics.MustRegister(newPartitionCollector(n))
	n.metrics.MustRegister(newStorageCollector(n.store))
	if re, ok := n.cons.(*raft.Engine); ok {
		n.metrics.MustRegister(newRaftCollector(re))
	}
	n.cqlSrv = cql.NewServer(cql.Config{Executor: n.exec, Events: n.events, MaxFrameBytes: cfg.MaxFrameBytes, Observe: reqMetrics.observe,
		MaxRequestsPerConnection: cfg.MaxRequestsPerConnection, RequestTimeout: cfg.RequestTimeout, Logger: n.logger,
		MaxConnections: cfg.MaxConnections, MaxConnectionsPerClient: cfg.MaxConnectionsPerClient, IdleTimeout: *cfg.IdleTimeout,
		Authenticator: authn})
	n.serveBG("cql", func() error { return n.cqlSrv.Serve(n.cqlLn) })

	n.ctrl = placement.NewController(placement.ControllerConfig{
		NodeID: n.id, Meta: n.meta, Catalog: n.catalog, Router: n.router, DeadAfter: cfg.DeadAfter,
		PhysicalPartitionMaxBytes: cfg.PhysicalPartitionMaxBytes, SizeCheckEvery: cfg.SizeCheckEvery,
		PhysicalPartitionMaxRU: cfg.PhysicalPartitionMaxRU, MaxPartitionsPerTable: cfg.MaxPartitionsPerTable,
		DisableAutoRebalance: !*cfg.AutoRebalance, Knobs: controllerKnobs(cfg.Knobs),
		Logger: n.logger.With("component", "controller"),
	})
	// The controller stops first on Close (stopCtrl), so that it resigns
	// (a round trip to etcd, up to 2s when etcd is gone) while the node
	// drains rather than after, and another node takes over at once.
	ctrlCtx, stopCtrl := context.WithCancel(runCtx)
	n.stopCtrl = stopCtrl
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		n.ctrl.Run(ctrlCtx)
	}()

	n.adminSrv = grpc.NewServer(append(n.adminServerCreds(), grpc.ChainUnaryInterceptor(recoverUnary(n.logger)), grpc.ChainStreamInterceptor(recoverStream(n.logger)))...)
	adminpb.RegisterAdminServer(n.adminSrv, admin.NewServer(admin.Config{Meta: n.meta, Router: n.router, Catalog: n.catalog,
		DeadAfter: cfg.DeadAfter, PhysicalPartitionMaxRU: cfg.PhysicalPartitionMaxRU, Logger: n.logger,
		MaxProvisionedThroughput: cfg.MaxProvisionedThroughput, MaxPartitionsPerTable: cfg.MaxPartitionsPerTable}))
	n.serveBG("admin grpc", func() error { return n.adminSrv.Serve(n.adminLn) })

	if n.httpLn != nil {
		n.startHTTP()
	}
	info := cluster.NodeInfo{
		ID: n.id, Name: cfg.Name, CQLAddr: n.advertised(n.cqlLn), PeerAddr: n.advertised(n.peerLn),
		AdminAddr: n.advertised(n.adminLn), Labels: cfg.Labels, Version: Version, StartedAt: time.Now().UTC(),
	}
	if n.httpLn != nil {
		info.HTTPAddr = n.advertised(n.httpLn)
	}
	if n.reg, err = cluster.Register(ctx, n.metaKV, info, cfg.RegistrationTTL, n.logger); err != nil {
		return nil, err
	}
	n.ready.Store(true)
	n.notifyReady(runCtx)
	n.logger.Info("node started", "cql", info.CQLAddr, "peer", info.PeerAddr, "admin", info.AdminAddr, "consensus", cfg.Consensus)
	return n, nil
}

// labelOr returns a node label, or def when it is unset. system.local and
// system.peers need a data center and a rack: drivers (gocql, the DataStax
// drivers) ignore peers whose data_center or rack is empty, so a cluster
// labelled only with zone and rack would be invisible to them beyond the
// contact points. The defaults are Cassandra's SimpleSnitch names.
func labelOr(labels map[string]string, key, def string) string {
	if v := labels[key]; v != "" {
		return v
	}
	return def
}

// throughput reports a table's provisioned RU/s and how many physical
// partitions share it: the table's own throughput over its partitions, or
// its keyspace's shared throughput over the partitions of every table in
// the keyspace without throughput of its own.
func (n *Node) throughput(table uint64) (float64, int) {
	st := n.meta.State()
	t := st.Schema.ByID[table]
	if t == nil {
		return 0, 0
	}
	if t.Options.Throughput > 0 {
		return float64(t.Options.Throughput), len(st.Ring(table).Partitions())
	}
	ks := st.Schema.Keyspaces[t.Keyspace]
	if ks == nil || ks.Throughput <= 0 {
		return 0, 0
	}
	parts := 0
	for _, other := range st.Schema.Tables[t.Keyspace] {
		if other.Options.Throughput == 0 {
			parts += len(st.Ring(other.ID).Partitions())
		}
	}
	return float64(ks.Throughput), parts
}

// advertised returns the host:port others reach a listener at.
func (n *Node) advertised(ln net.Listener) string {
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return net.JoinHostPort(n.cfg.advertiseHost(), port)
}

func (n *Node) serveBG(what string, serve func() error) {
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		if err := serve(); err != nil && !errors.Is(err, grpc.ErrServerStopped) && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			n.logger.Error("server stopped", "server", what, "err", err)
		}
	}()
}

func (n *Node) newConsensus() (consensus.Engine, error) {
	switch n.cfg.Consensus {
	case "local":
		return local.New(local.Config{NodeID: consensus.NodeID(n.id), Storage: n.store, Logger: n.logger})
	case "raft":
		return newRaftEngine(n)
	}
	return nil, fmt.Errorf("unknown consensus engine %q", n.cfg.Consensus)
}

// reconcileLoop keeps the local replicas in line with the rings.
func (n *Node) reconcileLoop(ctx context.Context) {
	ch, unsub := n.meta.Subscribe()
	defer unsub()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		parts, live := n.meta.State().AllPartitions()
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := n.parts.Reconcile(rctx, parts, live); err != nil && ctx.Err() == nil {
			n.logger.Warn("reconcile replicas", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-tick.C:
		}
	}
}

func (n *Node) startHTTP() {
	n.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(n.metrics, promhttp.HandlerOpts{}))
	// /healthz fails (503) only when the node is wedged (its consensus
	// engine makes no progress): a restart helps then. Failed replicas are
	// reported in the body but keep it at 200: the controller replaces
	// them, and restarting for them could loop.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		failed, err := n.health()
		if err != nil {
			http.Error(w, healthStatus(failed, err), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n" + healthStatus(failed, nil) + "\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !n.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("/debug/pprof/", n.requireClientCert(pprof.Index))
	mux.HandleFunc("/debug/pprof/cmdline", n.requireClientCert(pprof.Cmdline))
	mux.HandleFunc("/debug/pprof/profile", n.requireClientCert(pprof.Profile))
	mux.HandleFunc("/debug/pprof/symbol", n.requireClientCert(pprof.Symbol))
	mux.HandleFunc("/debug/pprof/trace", n.requireClientCert(pprof.Trace))
	// Its own errors (failed TLS handshakes of scanners and plaintext
	// clients) go to the node's log, not to the standard logger.
	n.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(n.logger.With("component", "http").Handler(), slog.LevelWarn)}
	n.serveBG("http", func() error { return n.httpSrv.Serve(n.httpLn) })
}

func controllerKnobs(k *Knobs) *placement.ControllerKnobs {
	if k == nil {
		return nil
	}
	return &placement.ControllerKnobs{StepDelay: k.ControllerStepDelay}
}

// Controller returns the node's controller.
func (n *Node) Controller() *placement.Controller { return n.ctrl }

// ShutdownTimeout is the node's configured shutdown_timeout: Close returns
// within it plus closeMargin.
func (n *Node) ShutdownTimeout() time.Duration { return n.cfg.ShutdownTimeout }

// Kill stops the node abruptly, as a crash would: no drain, no
// deregistration (its registration expires with its lease), connections
// cut. What was acknowledged is on disk; the store is closed so the data
// directory can be reopened by RestartNode in the same process.
func (n *Node) Kill() {
	n.killed.Store(true)
	_ = n.Close(context.Background())
}

// Close shuts the node down gracefully: stop accepting CQL and drain
// in-flight requests, deregister, stop services and replicas, close the
// store. It returns within shutdown_timeout (or ctx's deadline, if sooner)
// plus closeMargin whatever etcd and the peers do: a step that cannot
// finish in time is abandoned and reported in the error (see close in
// shutdown.go). Safe to call twice.
func (n *Node) Close(ctx context.Context) error {
	n.closeOnce.Do(func() { n.closeErr = n.close(ctx) })
	return n.closeErr
}
