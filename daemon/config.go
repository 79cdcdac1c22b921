package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"gopkg.in/yaml.v3"

	"github.com/cosmosd/cosmosd/consensus/raft"
	"github.com/cosmosd/cosmosd/security"
)

// Config is the whole configuration of one cosmosd node. It is filled from
// defaults, then the YAML file (--config), then command-line flags, in that
// order; see Load. Every field documents its default.
type Config struct {
	// Name is the node's human-readable name. Default: the host name.
	Name string `yaml:"name"`
	// DataDir holds the node's store, its id and (when embedded) etcd's
	// data. Default /var/lib/cosmosd.
	DataDir string `yaml:"data_dir"`
	// CQLAddr is the CQL native protocol listen address. Default :9042.
	CQLAddr string `yaml:"cql_addr"`
	// PeerAddr is the internode gRPC listen address (raft, forwarding,
	// snapshots). Default :7000.
	PeerAddr string `yaml:"peer_addr"`
	// AdminAddr is the admin gRPC listen address. Default :7070.
	AdminAddr string `yaml:"admin_addr"`
	// HTTPAddr serves /metrics, /healthz, /readyz and pprof. Default :8080;
	// empty disables it.
	HTTPAddr string `yaml:"http_addr"`
	// AdvertiseHost is the address other nodes and clients use to reach
	// this node. Default: the host part of CQLAddr when it is not a
	// wildcard, else the first non-loopback address of the host.
	AdvertiseHost string `yaml:"advertise_host"`
	// EtcdEndpoints lists etcd client endpoints (host:port). Empty (the
	// default) runs an embedded single-member etcd in this process.
	EtcdEndpoints []string `yaml:"etcd_endpoints"`
	// EmbeddedEtcdAddr is the client address of the embedded etcd.
	// Default 127.0.0.1:2379.
	EmbeddedEtcdAddr string `yaml:"embedded_etcd_addr"`
	// EtcdPrefix is where cosmosd keeps its metadata. Default /cosmosd/.
	EtcdPrefix string `yaml:"etcd_prefix"`
	// CertsDir turns on TLS for every listener and mutual TLS between
	// nodes (docs/security.md): it holds ca.crt, node.crt and node.key as
	// `cosmosd cert` writes them. The internode and admin APIs then
	// require a client certificate of the cluster CA (internode: a node
	// certificate), HTTP serves HTTPS (pprof needs a client certificate),
	// and the embedded etcd serves TLS with the node certificate. The
	// files are re-read when they change and on SIGHUP. Default empty:
	// no TLS (insecure).
	CertsDir string `yaml:"certs_dir"`
	// CQLRequireClientCert makes CQL clients present a certificate of the
	// cluster CA (drivers' SSL options with a client certificate). Needs
	// certs_dir. Default false: a certificate is verified when given.
	CQLRequireClientCert bool `yaml:"cql_require_client_cert"`
	// AdminUsers are the client certificates (their names: `cosmosd cert
	// create-client NAME`) the admin API accepts when certs_dir is set.
	// Other certificates of the cluster CA (an application's, for CQL)
	// are refused: holding one must not make its holder an
	// administrator. Default [root].
	AdminUsers []string `yaml:"admin_users"`
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile secure the connection to
	// an external etcd (etcd_endpoints): the CA bundle that signed etcd's
	// server certificate (empty: the system's roots) and the client
	// certificate and key to present (both or neither). Any of them set
	// turns TLS on. Re-read when they change. Default empty: plaintext.
	EtcdCAFile   string `yaml:"etcd_ca_file"`
	EtcdCertFile string `yaml:"etcd_cert_file"`
	EtcdKeyFile  string `yaml:"etcd_key_file"`
	// Consensus selects the replication engine: "raft" (default; 4
	// replicas per partition) or "local" (one replica, development only).
	Consensus string `yaml:"consensus"`
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string `yaml:"log_level"`
	// LogFormat is text or json. Default text.
	LogFormat string `yaml:"log_format"`
	// Labels place the node for replica placement: zone, rack, dc.
	Labels map[string]string `yaml:"labels"`
	// RequestTimeout bounds one CQL request inside the cluster. Default 10s.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// MaxFrameBytes is the largest CQL frame body accepted. Default 256 MiB
	// (the protocol's limit).
	MaxFrameBytes int `yaml:"max_frame_bytes"`
	// MaxRequestsPerConnection bounds in-flight requests on one CQL
	// connection; further requests get an Overloaded error. Default 2048.
	MaxRequestsPerConnection int `yaml:"max_requests_per_connection"`
	// MaxValueBytes is the largest value of one cell. Default 2 MiB (the
	// Cosmos DB row limit).
	MaxValueBytes int `yaml:"max_value_bytes"`
	// MaxConnections bounds the CQL client connections of the node; a
	// connection over it gets an Overloaded error on its first request
	// and is closed. Default 4096.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerClient bounds the CQL connections from one remote
	// IP address, likewise. Default 512.
	MaxConnectionsPerClient int `yaml:"max_connections_per_client"`
	// IdleTimeout closes a CQL connection from which nothing was read for
	// this long. Drivers send a heartbeat (OPTIONS) on idle connections
	// (gocql every 5s, the DataStax drivers every 30s), so only
	// connections of vanished clients are closed. Default 10m; 0 disables
	// it.
	IdleTimeout *time.Duration `yaml:"idle_timeout"`
	// MaxPartitionKeyRestrictionsPerQuery bounds the partition keys one
	// statement may address with IN restrictions (the product of the IN
	// list sizes over the partition-key columns). Default 100, as
	// ScyllaDB's option of the same name.
	MaxPartitionKeyRestrictionsPerQuery int `yaml:"max_partition_key_restrictions_per_query"`
	// MaxClusteringKeyRestrictionsPerQuery bounds the clustering-key
	// combinations of IN restrictions likewise. Default 100.
	MaxClusteringKeyRestrictionsPerQuery int `yaml:"max_clustering_key_restrictions_per_query"`
	// MaxMutationBytes is the largest encoded write of one statement or
	// batch to one physical partition, and the largest batch. Default
	// 16 MiB (Cassandra's maximum mutation size), at most
	// max_frame_bytes: a write is one raft entry, which followers receive
	// in one internode message of at most max_frame_bytes + 1 MiB.
	MaxMutationBytes int `yaml:"max_mutation_bytes"`
	// PageMaxBytes ends a page of a paged SELECT early (with a paging
	// state) once its rows take this many bytes. Default 8 MiB.
	PageMaxBytes int `yaml:"page_max_bytes"`
	// MaxUnpagedResultBytes fails an unpaged SELECT whose result would be
	// larger, telling the client to page or add a LIMIT. Default 64 MiB.
	MaxUnpagedResultBytes int `yaml:"max_unpaged_result_bytes"`
	// MaxProvisionedThroughput is the most RU/s a table or keyspace may be
	// provisioned with (CQL cosmosdb_provisioned_throughput, cosmosctl
	// throughput set). Default 1000000, Cosmos DB's default limit per
	// container.
	MaxProvisionedThroughput int64 `yaml:"max_provisioned_throughput"`
	// MaxPartitionsPerTable caps the physical partitions of one table: the
	// controller splits no further, by size or by throughput. Default
	// 1024.
	MaxPartitionsPerTable int `yaml:"max_partitions_per_table"`
	// LogicalPartitionMaxBytes is the most one logical partition may hold.
	// Default 20 GB.
	LogicalPartitionMaxBytes int64 `yaml:"logical_partition_max_bytes"`
	// PhysicalPartitionMaxBytes splits a physical partition above it.
	// Default 50 GB.
	PhysicalPartitionMaxBytes int64 `yaml:"physical_partition_max_bytes"`
	// PhysicalPartitionMaxRU splits a physical partition whose share of
	// provisioned throughput would exceed it. Default 10000 RU/s.
	PhysicalPartitionMaxRU int64 `yaml:"physical_partition_max_ru"`
	// DeadAfter is how long a node may be unreachable before its replicas
	// are re-created elsewhere. Default 5m.
	DeadAfter time.Duration `yaml:"dead_after"`
	// ReplicationFactor is the number of replicas per physical partition.
	// Default 4 under raft (quorum 3), 1 under local.
	ReplicationFactor int `yaml:"replication_factor"`
	// ShutdownTimeout bounds a graceful stop (SIGTERM, Node.Close):
	// leadership hand-off, drain of in-flight requests, deregistration,
	// stopping services and replicas. Steps still running then are
	// abandoned and logged; Close returns within it plus 2s, and the
	// process exits non-zero if stopping takes it plus 5s. Default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// SizeCheckEvery is how many controller rounds (of 1s) pass between
	// checks of partition sizes against physical_partition_max_bytes.
	// Default 10.
	SizeCheckEvery int `yaml:"size_check_every"`
	// AutoRebalance lets the controller move replicas by itself to even
	// out load (after nodes join). Default true; set false to rebalance
	// only on request (cosmosctl rebalance).
	AutoRebalance *bool `yaml:"auto_rebalance"`
	// LeaseReads lets a partition's raft leader answer QUORUM reads from
	// its lease instead of confirming its leadership with a heartbeat
	// round per batch of reads (consensus/raft/lease.go has the safety
	// argument: it assumes the nodes' clocks run at rates within 10% of
	// each other, never their offsets). About half the CPU of a read.
	// Default false: the engine's lease-read linearizability test failed
	// twice under heavy load this release (two holes closed since, see
	// docs/reliability.md); lease reads stay opt-in until it has run clean
	// long enough.
	LeaseReads *bool `yaml:"lease_reads"`
	// Knobs are test hooks, never set from configuration files.
	Knobs *Knobs `yaml:"-"`
	// RegistrationTTL is the lease of the node's registration in etcd: a
	// node that stops renewing it (crash, partition from etcd) is seen as
	// down after it. Default 15s: the etcd client needs up to 8s to notice
	// a silent etcd member and move on (5s keepalive ping + 3s timeout),
	// and a lease must outlive that to survive an etcd failover.
	RegistrationTTL time.Duration `yaml:"registration_ttl"`
	// TestingClockOffsetFile is a test hook, never set in production: a
	// file holding a Go duration ("1h", "-1h") that this node adds to the
	// wall clock it stamps coordinator timestamps and computes TTL expiry
	// with. It is re-read every second; a missing file means no offset,
	// an empty or unparsable one keeps the last ("0s" heals the skew).
	// The nemesis suite (test/nemesis) skews one host's clock with it: Go
	// reads the time without libc, so libfaketime cannot. YAML only, no
	// flag. Default empty: the real clock.
	TestingClockOffsetFile string `yaml:"testing_clock_offset_file"`
	// Authenticator is "allow-all" (default: every CQL client may do
	// everything, as Cassandra's AllowAllAuthenticator) or "password":
	// clients log in with a role and its password (Cassandra's
	// PasswordAuthenticator over SASL PLAIN: gocql's PasswordAuthenticator,
	// the DataStax drivers' PlainTextAuthProvider, cqlsh -u/-p) and every
	// statement is checked against the role's permissions (Cassandra's
	// CassandraAuthorizer). See docs/security.md.
	Authenticator string `yaml:"authenticator"`
	// Superuser names the superuser role created on a cluster's first
	// start with authenticator password, when no role exists yet. Default
	// cassandra.
	Superuser string `yaml:"superuser"`
	// SuperuserPasswordFile holds the password of that role (the first
	// line; a trailing newline is ignored). It is read only when no role
	// exists, and is then required: there is never a built-in default
	// password. Default empty.
	SuperuserPasswordFile string `yaml:"superuser_password_file"`
}

// Knobs are hooks for tests that run nodes in process.
type Knobs struct {
	// ControllerStepDelay slows every step of the controller's operations.
	ControllerStepDelay time.Duration
	// Raft are the raft engine's test hooks.
	Raft *raft.TestingKnobs
	// StoreFS wraps the filesystem the store opens on (tests inject I/O
	// errors with Pebble's errorfs).
	StoreFS func(vfs.FS) vfs.FS
	// PasswordHashCost is the bcrypt cost of the passwords this node sets
	// (the superuser's, CREATE/ALTER ROLE); 0 means auth.DefaultHashCost.
	// Tests lower it: logins under the race detector are slow at cost 10.
	PasswordHashCost int
	// Logger, when set, replaces the process logger built from log_level
	// and log_format (tests capture what a node logs, e.g. to check that
	// no password is ever logged).
	Logger *slog.Logger
}

// SetDefaults fills zero fields with their documented defaults.
func (c *Config) SetDefaults() {
	if c.Name == "" {
		c.Name, _ = os.Hostname()
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.DataDir, "/var/lib/cosmosd")
	def(&c.CQLAddr, ":9042")
	def(&c.PeerAddr, ":7000")
	def(&c.AdminAddr, ":7070")
	def(&c.EmbeddedEtcdAddr, "127.0.0.1:2379")
	def(&c.EtcdPrefix, "/cosmosd/")
	def(&c.Consensus, "raft")
	def(&c.LogLevel, "info")
	def(&c.LogFormat, "text")
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = 256 << 20
	}
	if c.MaxRequestsPerConnection == 0 {
		c.MaxRequestsPerConnection = 2048
	}
	if c.MaxValueBytes == 0 {
		c.MaxValueBytes = 2 << 20
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = 4096
	}
	if c.MaxConnectionsPerClient == 0 {
		c.MaxConnectionsPerClient = 512
	}
	if c.IdleTimeout == nil {
		d := 10 * time.Minute
		c.IdleTimeout = &d
	}
	if c.MaxPartitionKeyRestrictionsPerQuery == 0 {
		c.MaxPartitionKeyRestrictionsPerQuery = 100
	}
	if c.MaxClusteringKeyRestrictionsPerQuery == 0 {
		c.MaxClusteringKeyRestrictionsPerQuery = 100
	}
	if c.MaxMutationBytes == 0 {
		c.MaxMutationBytes = min(16<<20, c.MaxFrameBytes)
	}
	if c.PageMaxBytes == 0 {
		c.PageMaxBytes = 8 << 20
	}
	if c.MaxUnpagedResultBytes == 0 {
		c.MaxUnpagedResultBytes = 64 << 20
	}
	if c.MaxProvisionedThroughput == 0 {
		c.MaxProvisionedThroughput = 1_000_000
	}
	if c.MaxPartitionsPerTable == 0 {
		c.MaxPartitionsPerTable = 1024
	}
	if c.LogicalPartitionMaxBytes == 0 {
		c.LogicalPartitionMaxBytes = 20_000_000_000
	}
	if c.PhysicalPartitionMaxBytes == 0 {
		c.PhysicalPartitionMaxBytes = 50_000_000_000
	}
	if c.PhysicalPartitionMaxRU == 0 {
		c.PhysicalPartitionMaxRU = 10_000
	}
	if c.DeadAfter == 0 {
		c.DeadAfter = 5 * time.Minute
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = 4
		if c.Consensus == "local" {
			c.ReplicationFactor = 1
		}
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.AutoRebalance == nil {
		t := true
		c.AutoRebalance = &t
	}
	if c.LeaseReads == nil {
		f := false
		c.LeaseReads = &f
	}
	if c.RegistrationTTL == 0 {
		c.RegistrationTTL = 15 * time.Second
	}
	if len(c.AdminUsers) == 0 {
		c.AdminUsers = []string{"root"}
	}
	def(&c.Authenticator, "allow-all")
	def(&c.Superuser, "cassandra")
}

// Validate reports every problem at once.
func (c *Config) Validate() error {
	var errs []error
	for name, addr := range map[string]string{"cql_addr": c.CQLAddr, "peer_addr": c.PeerAddr, "admin_addr": c.AdminAddr, "embedded_etcd_addr": c.EmbeddedEtcdAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", name, addr, err))
		}
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			errs = append(errs, fmt.Errorf("http_addr %q: %w", c.HTTPAddr, err))
		}
	}
	for _, u := range c.AdminUsers {
		if u == "" || u == security.NodeCN {
			errs = append(errs, fmt.Errorf("admin_users: %q is not a client certificate name", u))
		}
	}
	if c.CQLRequireClientCert && c.CertsDir == "" {
		errs = append(errs, errors.New("cql_require_client_cert needs certs_dir"))
	}
	if (c.EtcdCertFile == "") != (c.EtcdKeyFile == "") {
		errs = append(errs, errors.New("etcd_cert_file and etcd_key_file go together"))
	}
	if c.etcdTLS() && len(c.EtcdEndpoints) == 0 {
		errs = append(errs, errors.New("etcd_ca_file, etcd_cert_file and etcd_key_file are for an external etcd (etcd_endpoints); the embedded one uses certs_dir"))
	}
	if c.Name == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data_dir is required"))
	}
	switch c.Consensus {
	case "raft", "local":
	default:
		errs = append(errs, fmt.Errorf("consensus %q: want raft or local", c.Consensus))
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log_format %q: want text or json", c.LogFormat))
	}
	if c.Consensus == "local" && c.ReplicationFactor != 1 {
		errs = append(errs, fmt.Errorf("replication_factor %d: the local engine keeps exactly 1 replica", c.ReplicationFactor))
	}
	if c.ReplicationFactor < 1 {
		errs = append(errs, fmt.Errorf("replication_factor %d must be at least 1", c.ReplicationFactor))
	}
	if c.RegistrationTTL != 0 && c.RegistrationTTL < time.Second {
		errs = append(errs, fmt.Errorf("registration_ttl %s: want at least 1s", c.RegistrationTTL))
	}
	if c.RequestTimeout < 0 || c.DeadAfter < 0 || c.ShutdownTimeout < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if c.MaxFrameBytes < 1024 || c.MaxFrameBytes > 256<<20 {
		errs = append(errs, fmt.Errorf("max_frame_bytes %d: want 1 KiB..256 MiB", c.MaxFrameBytes))
	}
	if c.MaxRequestsPerConnection < 1 || c.MaxRequestsPerConnection > 32768 {
		errs = append(errs, fmt.Errorf("max_requests_per_connection %d: want 1..32768", c.MaxRequestsPerConnection))
	}
	if c.MaxValueBytes < 1 {
		errs = append(errs, fmt.Errorf("max_value_bytes %d must be positive", c.MaxValueBytes))
	}
	if c.LogicalPartitionMaxBytes < 1 || c.PhysicalPartitionMaxBytes < 1 || c.PhysicalPartitionMaxRU < 1 {
		errs = append(errs, errors.New("partition limits must be positive"))
	}
	if c.MaxConnections < 1 {
		errs = append(errs, fmt.Errorf("max_connections %d must be positive", c.MaxConnections))
	}
	if c.MaxConnectionsPerClient < 1 {
		errs = append(errs, fmt.Errorf("max_connections_per_client %d must be positive", c.MaxConnectionsPerClient))
	}
	if c.IdleTimeout != nil && *c.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("idle_timeout %s must not be negative (0 disables it)", *c.IdleTimeout))
	}
	if c.MaxPartitionKeyRestrictionsPerQuery < 1 || c.MaxClusteringKeyRestrictionsPerQuery < 1 {
		errs = append(errs, errors.New("max_partition_key_restrictions_per_query and max_clustering_key_restrictions_per_query must be positive"))
	}
	if c.MaxMutationBytes < 1 || c.MaxMutationBytes > c.MaxFrameBytes {
		errs = append(errs, fmt.Errorf("max_mutation_bytes %d: want 1..max_frame_bytes (%d), below the internode message limit", c.MaxMutationBytes, c.MaxFrameBytes))
	}
	if c.PageMaxBytes < 1 || c.MaxUnpagedResultBytes < 1 {
		errs = append(errs, errors.New("page_max_bytes and max_unpaged_result_bytes must be positive"))
	}
	if c.MaxProvisionedThroughput < 1 {
		errs = append(errs, fmt.Errorf("max_provisioned_throughput %d must be positive", c.MaxProvisionedThroughput))
	}
	if c.MaxPartitionsPerTable < 1 {
		errs = append(errs, fmt.Errorf("max_partitions_per_table %d must be positive", c.MaxPartitionsPerTable))
	}
	switch c.Authenticator {
	case "allow-all", "password":
	default:
		errs = append(errs, fmt.Errorf("authenticator %q: want allow-all or password", c.Authenticator))
	}
	if c.Superuser == "" {
		errs = append(errs, errors.New("superuser must not be empty"))
	}
	return errors.Join(errs...)
}

// etcdTLS reports whether the etcd client uses etcd_*_file.
func (c *Config) etcdTLS() bool {
	return c.EtcdCAFile != "" || c.EtcdCertFile != "" || c.EtcdKeyFile != ""
}

// LoadFile reads a YAML config file over c; unknown keys are errors, so a
// typo does not silently fall back to a default.
func (c *Config) LoadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(s))); err != nil {
		return 0, fmt.Errorf("log_level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// NewLogger builds the process logger from the config.
func (c *Config) NewLogger() *slog.Logger {
	if c.Knobs != nil && c.Knobs.Logger != nil {
		return c.Knobs.Logger
	}
	lvl, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(os.Stderr, opts)
	}
	return slog.New(h)
}

// advertiseHost picks the address others reach this node at.
func (c *Config) advertiseHost() string {
	if c.AdvertiseHost != "" {
		return c.AdvertiseHost
	}
	host, _, _ := net.SplitHostPort(c.CQLAddr)
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return host
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
