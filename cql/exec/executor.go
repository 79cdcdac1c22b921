package exec

import (
	"context"
	"crypto/md5"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/schema"
)

// Placer chooses the replicas of a new table's physical partitions.
type Placer interface {
	// PlaceTable returns n descriptors covering the whole token range of
	// table (ids allocated, replicas chosen, generation 0).
	PlaceTable(ctx context.Context, table *schema.Table, n int) ([]*kvpb.Descriptor, error)
}

// LocalNode describes this node for system.local and system.peers.
type LocalNode struct {
	HostID     string // uuid
	Datacenter string
	Rack       string
}

// Config configures an Executor.
type Config struct {
	NodeID uint64
	Local  LocalNode
	// Meta is the cluster metadata (*cluster.Meta in production).
	Meta MetaView
	// Catalog changes the schema (*cluster.Catalog in production);
	// required by DDL.
	Catalog Catalog
	// Router carries key-value requests to the partitions (*router.Router
	// in production); required by DML.
	Router KV
	// Placer places a new table's partitions; required by CREATE TABLE.
	Placer Placer
	// MaxValueBytes bounds one value (default 2 MiB).
	MaxValueBytes int
	// LogicalPartitionMaxBytes bounds one logical partition (default 20 GB).
	LogicalPartitionMaxBytes int64
	// PhysicalPartitionMaxRU sizes a new table: ceil(throughput / it)
	// partitions (default 10000).
	PhysicalPartitionMaxRU int64
	// ObserveStatement, when set, is told the time each statement took
	// from parse to result (failures included), with the keyspace of the
	// session that ran it, for the latency metrics.
	ObserveStatement func(stmt parser.Statement, keyspace string, d time.Duration)
	// PreparedCacheSize bounds the prepared statements kept (default 10000).
	PreparedCacheSize int
	// PreparedCacheBytes bounds the memory the prepared statements kept
	// hold, as estimated from their text (default 256 MiB): a few huge
	// statements must not fill the memory that 10000 ordinary ones would
	// fit in.
	PreparedCacheBytes int64
	// MaxPartitionKeyRestrictions bounds the partition keys one statement
	// may address through IN restrictions: the product of the IN list
	// sizes over the partition-key columns. Default 100
	// (DefaultMaxPartitionKeyRestrictions); negative disables the limit.
	MaxPartitionKeyRestrictions int
	// MaxClusteringKeyRestrictions likewise bounds the clustering
	// prefixes (the product over the clustering columns). Default 100
	// (DefaultMaxClusteringKeyRestrictions); negative disables the limit.
	MaxClusteringKeyRestrictions int
	// MaxMutationBytes bounds the encoded write request that one statement
	// or batch sends to one physical partition, and the whole of a batch:
	// such a request becomes one raft entry, which every follower must
	// receive in one internode message. It must therefore stay below the
	// internode gRPC message limit (the peer server accepts
	// max_frame_bytes + 1 MiB). Default partition.DefaultMaxMutationBytes
	// (16 MiB, Cassandra's default maximum mutation size).
	MaxMutationBytes int
	// PageMaxBytes ends a page early, with a paging state, once the rows
	// in it take this many bytes (protocol v4 lets a page hold fewer rows
	// than the page size). Default 8 MiB (DefaultPageMaxBytes).
	PageMaxBytes int
	// MaxUnpagedResultBytes fails an unpaged SELECT (page size <= 0) whose
	// result grows past it, before more is read. Default 64 MiB
	// (DefaultMaxUnpagedResultBytes).
	MaxUnpagedResultBytes int
	// MaxProvisionedThroughput is the most RU/s a table or keyspace may be
	// provisioned with (cosmosdb_provisioned_throughput). Default
	// 1,000,000 (DefaultMaxProvisionedThroughput), Cosmos DB's default
	// limit per container.
	MaxProvisionedThroughput int64
	// MaxPartitionsPerTable caps the physical partitions a table is
	// created with. Default 1024 (DefaultMaxPartitionsPerTable).
	MaxPartitionsPerTable int
	// ClusterName is system.local.cluster_name. Default "cosmosd".
	ClusterName string
	// ReleaseVersion is what system.local reports. Default "3.11.17", the
	// version line Cosmos DB's Cassandra API reports, which makes drivers
	// use system.peers and the system_schema tables.
	ReleaseVersion string
	// RequireAuth turns on authorization (authenticator password): a
	// session must have logged in (Session.Login), every statement is
	// checked against the roles and permissions of Meta.State().Auth, and
	// the role statements run. Without it (authenticator allow-all) every
	// session is anonymous and may do everything except the role
	// statements, which Cassandra refuses to anonymous sessions.
	RequireAuth bool
	// Roles stores the roles and permissions. Required by RequireAuth;
	// when set without it, DROP KEYSPACE and DROP TABLE still revoke the
	// permissions granted on what they drop.
	// A nil *cluster.Roles must not be passed here: it would be a
	// non-nil RoleStore.
	Roles RoleStore
	// PasswordHashCost is the bcrypt cost of the passwords CREATE and
	// ALTER ROLE set. Default auth.DefaultHashCost (10, as Cassandra).
	PasswordHashCost int
	// Now is the clock (tests); nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultPageMaxBytes             = 8 << 20
	DefaultMaxUnpagedResultBytes    = 64 << 20
	DefaultMaxProvisionedThroughput = 1_000_000
	DefaultMaxPartitionsPerTable    = 1024
)

// Executor runs statements. Safe for concurrent use.
type Executor struct {
	cfg      Config
	prepared *preparedCache
}

// New returns an executor.
func New(cfg Config) *Executor {
	// orDefault takes only the zero value as unset (a negative restriction
	// limit means "no limit"); orPositive takes any value <= 0.
	orDefault(&cfg.MaxValueBytes, 2<<20)
	orDefault(&cfg.LogicalPartitionMaxBytes, 20_000_000_000)
	orDefault(&cfg.PhysicalPartitionMaxRU, 10_000)
	orDefault(&cfg.PreparedCacheSize, 10_000)
	orPositive(&cfg.PreparedCacheBytes, 256<<20)
	orDefault(&cfg.MaxPartitionKeyRestrictions, DefaultMaxPartitionKeyRestrictions)
	orDefault(&cfg.MaxClusteringKeyRestrictions, DefaultMaxClusteringKeyRestrictions)
	orPositive(&cfg.MaxMutationBytes, partition.DefaultMaxMutationBytes)
	orPositive(&cfg.PageMaxBytes, DefaultPageMaxBytes)
	orPositive(&cfg.MaxUnpagedResultBytes, DefaultMaxUnpagedResultBytes)
	orPositive(&cfg.MaxProvisionedThroughput, DefaultMaxProvisionedThroughput)
	orPositive(&cfg.MaxPartitionsPerTable, DefaultMaxPartitionsPerTable)
	orDefault(&cfg.ClusterName, "cosmosd")
	orDefault(&cfg.ReleaseVersion, "3.11.17")
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Executor{cfg: cfg, prepared: newPreparedCache(cfg.PreparedCacheSize, cfg.PreparedCacheBytes)}
}

// orDefault sets *v to def when it is the zero value (unset).
func orDefault[T comparable](v *T, def T) {
	var unset T
	if *v == unset {
		*v = def
	}
}

// orPositive sets *v to def unless it is positive.
func orPositive[T int | int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Session is the per-connection state. Safe for concurrent use: requests
// of one connection run concurrently.
type Session struct {
	mu       sync.Mutex
	keyspace string
	// user is the role the connection logged in as; "" is anonymous.
	user string
}

// Login records the role the connection authenticated as.
func (s *Session) Login(role string) {
	s.mu.Lock()
	s.user = role
	s.mu.Unlock()
}

// User returns the role the connection logged in as ("" if none).
func (s *Session) User() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user
}

// withKeyspace returns a session of the same role in keyspace ks, for a
// prepared statement that keeps the keyspace it was prepared in.
func (s *Session) withKeyspace(ks string) *Session {
	return &Session{keyspace: ks, user: s.User()}
}

// Keyspace returns the current keyspace (USE).
func (s *Session) Keyspace() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyspace
}

func (s *Session) setKeyspace(ks string) {
	s.mu.Lock()
	s.keyspace = ks
	s.mu.Unlock()
}

// Request carries a statement's parameters.
type Request struct {
	Consistency       uint16
	SerialConsistency uint16
	Values            []Value
	Names             []string
	// PageSize <= 0 means no paging.
	PageSize    int32
	PagingState []byte
	// Timestamp is the client's default timestamp (µs) when HasTimestamp.
	Timestamp    int64
	HasTimestamp bool
}

// ResultKind is the kind of a Result.
type ResultKind int

// Result kinds.
const (
	ResultVoid ResultKind = iota
	ResultRows
	ResultSetKeyspace
	ResultPrepared
	ResultSchemaChange
)

// Rows is a rows result.
type Rows struct {
	Columns     []ColumnSpec
	Rows        [][][]byte
	PagingState []byte // non-nil: more pages
}

// SchemaChange describes a DDL effect.
type SchemaChange struct {
	Change   string // CREATED, UPDATED, DROPPED
	Target   string // KEYSPACE, TABLE
	Keyspace string
	Name     string
}

// Result is a statement's outcome.
type Result struct {
	Kind     ResultKind
	Rows     *Rows
	Keyspace string
	Change   *SchemaChange
	Prepared *Prepared
	// Charge is the request's cost in request units.
	Charge float64
	// FullMetadata: the rows' columns are not those PREPARE announced
	// (a conditional statement's result), so they are described even
	// when the client asked to skip metadata.
	FullMetadata bool
}

var voidResult = &Result{Kind: ResultVoid}

// Query parses and runs one statement.
func (e *Executor) Query(ctx context.Context, sess *Session, query string, req Request) (*Result, error) {
	stmt, err := parse(query)
	if err != nil {
		return nil, err
	}
	markers := len(parser.BindMarkers(stmt))
	b, err := e.newBinder(req.Values, req.Names, markers)
	if err != nil {
		return nil, err
	}
	return e.run(ctx, sess, stmt, b, req, query)
}

// newBinder returns a binder of a request's values with the executor's
// limits.
func (e *Executor) newBinder(values []Value, names []string, markers int) (*binder, error) {
	b, err := newBinder(values, names, markers, e.cfg.Now(), e.cfg.MaxValueBytes)
	if err != nil {
		return nil, err
	}
	b.limits = restrictionLimits{partitionKeys: e.cfg.MaxPartitionKeyRestrictions, clustering: e.cfg.MaxClusteringKeyRestrictions}
	return b, nil
}

func parse(query string) (parser.Statement, error) {
	stmt, _, err := parseLimited(query, parser.MaxTokens)
	return stmt, err
}

// parseLimited parses with a token budget (see parser.ParseLimited).
func parseLimited(query string, maxTokens int) (parser.Statement, int, error) {
	stmt, n, err := parser.ParseLimited(query, maxTokens)
	if err != nil {
		var se *parser.SyntaxError
		if errors.As(err, &se) {
			return nil, n, Syntax("%s", se.Error())
		}
		return nil, n, Syntax("%v", err)
	}
	return stmt, n, nil
}

// run dispatches a parsed statement. A DML statement refused as invalid is
// run once more if this node's metadata was behind etcd: a column or table
// that another node just added must not be reported missing here. Invalid
// statements have no effect, so running one again is safe.
func (e *Executor) run(ctx context.Context, sess *Session, stmt parser.Statement, b *binder, req Request, text string) (*Result, error) {
	if obs := e.cfg.ObserveStatement; obs != nil {
		start := time.Now()
		defer func() { obs(stmt, sess.Keyspace(), time.Since(start)) }()
	}
	// The revision is read before the statement is analysed: read after
	// it, it could already include the change the analysis missed (the
	// watch published it in between), and the catch-up would seem to
	// bring nothing new.
	before := e.cfg.Meta.State().Revision
	res, err := e.dispatch(ctx, sess, stmt, b, req, text)
	var ce *Error
	if err == nil || !errors.As(err, &ce) || ce.Code != CodeInvalid {
		return res, err
	}
	switch stmt.(type) {
	case *parser.SelectStmt, *parser.InsertStmt, *parser.UpdateStmt, *parser.DeleteStmt, *parser.BatchStmt:
	default:
		return res, err
	}
	if !e.caughtUpSince(before) {
		return res, err
	}
	return e.dispatch(ctx, sess, stmt, b, req, text)
}

// dispatch authorizes and runs a statement, then keeps the permissions in
// step with the schema change it made, if any.
func (e *Executor) dispatch(ctx context.Context, sess *Session, stmt parser.Statement, b *binder, req Request, text string) (*Result, error) {
	if err := e.authorize(sess, stmt); err != nil {
		return nil, err
	}
	res, err := e.dispatchStmt(ctx, sess, stmt, b, req, text)
	if err == nil {
		e.afterSchemaChange(ctx, sess, res)
	}
	return res, err
}

func (e *Executor) dispatchStmt(ctx context.Context, sess *Session, stmt parser.Statement, b *binder, req Request, text string) (*Result, error) {
	switch s := stmt.(type) {
	case *parser.SelectStmt:
		return e.runSelect(ctx, sess, s, b, req, text)
	case *parser.InsertStmt, *parser.UpdateStmt, *parser.DeleteStmt:
		return e.runModify(ctx, sess, s, b, req)
	case *parser.BatchStmt:
		return e.runBatchStmt(ctx, sess, s, b, req)
	case *parser.UseStmt:
		return e.use(sess, s.Keyspace)
	case *parser.CreateKeyspaceStmt:
		return e.createKeyspace(ctx, s)
	case *parser.AlterKeyspaceStmt:
		return e.alterKeyspace(ctx, s)
	case *parser.DropKeyspaceStmt:
		return e.dropKeyspace(ctx, s)
	case *parser.CreateTableStmt:
		return e.createTable(ctx, sess, s)
	case *parser.AlterTableStmt:
		return e.alterTable(ctx, sess, s)
	case *parser.DropTableStmt:
		return e.dropTable(ctx, sess, s)
	case *parser.TruncateStmt:
		return e.truncate(ctx, sess, s)
	case *parser.CreateIndexStmt, *parser.DropIndexStmt:
		return nil, Invalid("Secondary indexes are not supported by cosmosd")
	case *parser.CreateTypeStmt, *parser.DropTypeStmt:
		return nil, Invalid("User-defined types are not supported by cosmosd")
	case *parser.CreateRoleStmt:
		return e.createRole(ctx, sess, s)
	case *parser.AlterRoleStmt:
		return e.alterRole(ctx, sess, s)
	case *parser.DropRoleStmt:
		return e.dropRole(ctx, sess, s)
	case *parser.GrantRoleStmt:
		return e.grantRole(ctx, sess, s)
	case *parser.GrantPermissionsStmt:
		return e.grantPermissions(ctx, sess, s)
	case *parser.ListRolesStmt:
		return e.listRoles(sess, s)
	case *parser.ListPermissionsStmt:
		return e.listPermissions(sess, s)
	case *parser.UnsupportedStmt:
		return nil, Invalid("%s is not supported by cosmosd", s.What)
	}
	return nil, Invalid("unsupported statement %T", stmt)
}

// catchUp brings this node's metadata up to etcd's current revision, so a
// keyspace or table that another node just created is visible here: DDL
// reads its own writes across nodes. It is called only when a lookup
// misses, so the common path never waits on etcd.
func (e *Executor) catchUp() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return e.cfg.Meta.CatchUp(ctx) == nil
}

// caughtUpSince catches up with etcd and reports whether that brought
// metadata newer than revision before, so that a check that failed on the
// state of before is worth making again. before must be read ahead of the
// failed check: read after it, it could already include the change the
// check missed, and the catch-up would seem to bring nothing new.
func (e *Executor) caughtUpSince(before int64) bool {
	return e.catchUp() && e.cfg.Meta.State().Revision != before
}

// keyspaceExists reports whether a keyspace exists, catching up with etcd
// before saying it does not.
func (e *Executor) keyspaceExists(ks string) bool {
	return findCaughtUp(e, func(s *schema.Schema) *schema.Keyspace { return s.Keyspaces[ks] }) != nil
}

// lookupTable returns a table, catching up with etcd before saying it does
// not exist.
func (e *Executor) lookupTable(ks, name string) *schema.Table {
	return findCaughtUp(e, func(s *schema.Schema) *schema.Table { return s.Table(ks, name) })
}

// findCaughtUp returns what find finds in this node's schema. Before it
// answers nil it catches up with etcd and looks again: a keyspace or table
// that another node just created must not be reported missing here.
func findCaughtUp[T any](e *Executor, find func(*schema.Schema) *T) *T {
	if x := find(e.cfg.Meta.State().Schema); x != nil {
		return x
	}
	if !e.catchUp() {
		return nil
	}
	return find(e.cfg.Meta.State().Schema)
}

func (e *Executor) use(sess *Session, ks string) (*Result, error) {
	if !isSystemKeyspace(ks) && !e.keyspaceExists(ks) {
		return nil, Invalid("Keyspace '%s' does not exist", ks)
	}
	sess.setKeyspace(ks)
	return &Result{Kind: ResultSetKeyspace, Keyspace: ks}, nil
}

// resolveTable finds a table named in a statement. System tables resolve
// to their virtual definitions.
func (e *Executor) resolveTable(sess *Session, name parser.TableName) (*schema.Table, *virtualTable, error) {
	ks := name.Keyspace
	if ks == "" {
		ks = sess.Keyspace()
		if ks == "" {
			return nil, nil, Invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
		}
	}
	if vt := lookupVirtual(ks, name.Name); vt != nil {
		return vt.table, vt, nil
	}
	if isSystemKeyspace(ks) {
		return nil, nil, Invalid("unconfigured table %s", name.Name)
	}
	t := e.lookupTable(ks, name.Name)
	if t == nil {
		if !e.keyspaceExists(ks) {
			return nil, nil, Invalid("Keyspace %s does not exist", ks)
		}
		return nil, nil, Invalid("unconfigured table %s", name.Name)
	}
	return t, nil, nil
}

// timeout errors from the key-value layer become CQL errors.
func kvError(err error, cl uint16, write bool) error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	msg := err.Error()
	switch partition.ErrorCode(err) {
	case kvpb.Error_UNAVAILABLE:
		return &Error{Code: CodeUnavailable, Message: msg, Consistency: cl, Required: 3, Alive: 2}
	case kvpb.Error_TIMEOUT:
		return timeoutError(msg, cl, write)
	case kvpb.Error_OVERLOADED:
		return newErr(CodeOverloaded, "%s", msg)
	case kvpb.Error_INVALID, kvpb.Error_PARTITION_TOO_LARGE:
		return Invalid("%s", strings.TrimPrefix(msg, "INVALID: "))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return timeoutError("Operation timed out: "+msg, cl, write)
	}
	if errors.Is(err, router.ErrNoPartition) {
		return Invalid("%s", msg)
	}
	return ServerError("%s", msg)
}

// timeoutError is the Write_timeout or Read_timeout error of a request at
// consistency cl.
func timeoutError(msg string, cl uint16, write bool) *Error {
	if write {
		return &Error{Code: CodeWriteTimeout, Message: msg, Consistency: cl, Required: 3, WriteType: "SIMPLE"}
	}
	return &Error{Code: CodeReadTimeout, Message: msg, Consistency: cl, Required: 3}
}

// preparedID derives a statement id as Cassandra does: an MD5 of the query
// text and the keyspace it was prepared in.
func preparedID(keyspace, query string) []byte {
	h := md5.Sum([]byte(keyspace + "\x00" + query))
	return h[:]
}
