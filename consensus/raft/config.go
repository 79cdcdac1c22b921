package raft

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/storage"
)

// Resolver maps a node id to the address ("host:port") of its internode
// gRPC server. The daemon builds it from the nodes' etcd registrations. It
// is called from the transport's goroutines whenever a connection to the
// node is (re)established, so it must be safe for concurrent use and should
// not block for long.
type Resolver func(node consensus.NodeID) (addr string, err error)

// Config configures the raft engine. The zero value of every optional field
// means its documented default; call SetDefaults then Validate, or let New do
// both.
type Config struct {
	// NodeID is this node's id. Required, non-zero.
	NodeID consensus.NodeID
	// Storage is the node's store, shared with the state machines: raft log,
	// hard state and apply state of every group live in it under the
	// group-local keys of storage/keys.go. Required.
	Storage *storage.Engine

	// TickInterval is the duration of one raft tick. Default 100ms.
	TickInterval time.Duration
	// ElectionTicks is the election timeout in ticks: a follower that hears
	// nothing from a leader for a randomized [ElectionTicks, 2*ElectionTicks)
	// ticks campaigns, and a leader that has not heard from a quorum for
	// ElectionTicks ticks steps down (CheckQuorum). Default 10.
	ElectionTicks int
	// HeartbeatTicks is the leader's heartbeat interval in ticks. Default 1.
	HeartbeatTicks int

	// MaxSizePerMsg bounds the bytes of entries in one append message, and of
	// committed entries handed to the state machine in one batch. Default
	// 1 MiB.
	MaxSizePerMsg uint64
	// MaxInflightMsgs bounds the append messages in flight to one follower
	// while replicating optimistically. Default 256.
	MaxInflightMsgs int
	// MaxUncommittedEntriesSize bounds the bytes of entries a leader has
	// appended but not committed; proposals beyond it fail with
	// ErrProposalDropped instead of queueing without bound. Default 64 MiB.
	MaxUncommittedEntriesSize uint64

	// LeaseReads lets a leader serve linearizable reads (ReadIndex) from
	// its lease, without a heartbeat round, while a quorum has recently
	// acknowledged its leadership (lease.go: safe given CheckQuorum and
	// clock rates within 10% of each other with the default ElectionTicks;
	// void during transfers). Default false: every read batch confirms
	// leadership with a heartbeat round. The daemon's lease_reads sets it.
	LeaseReads bool

	// LogTruncateEntries triggers a log truncation once a group's log holds
	// more than this many applied entries. Default 10000.
	LogTruncateEntries uint64
	// LogTruncateBytes triggers a log truncation once a group's log holds an
	// estimated this many bytes. Default 16 MiB.
	LogTruncateBytes uint64
	// LogRetainEntries is how many applied entries a truncation keeps, so
	// that a follower a little behind catches up from the log rather than a
	// snapshot. On a leader a truncation also keeps what recently active
	// followers still need unless the log exceeds 4*LogTruncateBytes.
	// Default 1000.
	LogRetainEntries uint64
	// EntryCacheEntries and EntryCacheBytes bound the recent entries each
	// group keeps in memory for followers and for application (the cache
	// keeps at least the last entry). Defaults 256 entries and 1 MiB.
	EntryCacheEntries int
	EntryCacheBytes   int

	// SnapshotChunkBytes is the approximate size of one snapshot chunk on
	// the wire. Default 1 MiB.
	SnapshotChunkBytes int
	// MaxSnapshotSends bounds the snapshots this node streams at once;
	// further ones wait. Default 2.
	MaxSnapshotSends int
	// MaxSnapshotRecvs bounds the snapshots this node receives at once;
	// further ones are refused and the sender retries later. Default 2.
	MaxSnapshotRecvs int
	// SnapshotDir is where received snapshots are staged as SST files before
	// ingestion; it must be on the store's filesystem. Default
	// "<store dir>/raft-snapshots".
	SnapshotDir string

	// Workers is the number of goroutines that process groups in parallel
	// within one scheduling cycle. Default GOMAXPROCS.
	Workers int
	// MaxInboxMessages bounds the raft messages queued for one group between
	// two cycles; more are dropped (raft retransmits). Default 4096.
	MaxInboxMessages int
	// MaxInboxBytes bounds the encoded bytes of those messages, so a peer
	// sending large appends faster than the group runs cannot fill memory.
	// Default 64 MiB.
	MaxInboxBytes int
	// SendQueueBytes bounds the encoded bytes queued for one peer node;
	// more are dropped and reported unreachable, as with
	// SendQueueMessages. Default 64 MiB.
	SendQueueBytes int
	// SendQueueMessages bounds the messages queued for one peer node; more
	// are dropped and the peer reported unreachable to raft. Default 16384.
	SendQueueMessages int

	// StallTimeout is how long one scheduling cycle may run before Healthy
	// reports the engine stalled. Default 30s.
	StallTimeout time.Duration

	// Resolver maps node ids to internode addresses. Required unless
	// TestingKnobs.Transport replaces the gRPC transport.
	Resolver Resolver
	// DialOptions are used to dial peer nodes, for example transport
	// credentials for TLS. Default: insecure credentials.
	DialOptions []grpc.DialOption
	// ReconnectBackoff is the first delay before redialling a peer whose
	// stream failed; it doubles up to MaxReconnectBackoff. Defaults 50ms and
	// 2s.
	ReconnectBackoff    time.Duration
	MaxReconnectBackoff time.Duration

	// Logger receives state changes (leadership, membership, snapshots,
	// stopped groups); nil discards.
	Logger *slog.Logger

	// TestingKnobs are hooks for tests; nil in production.
	TestingKnobs *TestingKnobs
}

// TestingKnobs are test hooks. The zero value changes nothing.
type TestingKnobs struct {
	// ManualTicks disables the ticker; the test calls Engine.Tick.
	ManualTicks bool
	// Transport, when set, replaces the gRPC transport; it receives the
	// engine's handler for inbound traffic.
	Transport func(h Handler) Transport
	// DisableTruncation turns log truncation off.
	DisableTruncation bool
	// AfterSnapshotSpan, when set, runs after each span of a snapshot
	// installation; an error aborts the installation there, as a crash
	// would.
	AfterSnapshotSpan func(group consensus.GroupID, span int) error
	// BeforeInstallCommit, when set, runs before the batch that completes
	// a snapshot installation commits; an error aborts the installation
	// there, as a crash would.
	BeforeInstallCommit func(group consensus.GroupID) error
	// AfterInstallCommit, when set, runs once the batch that completes a
	// snapshot installation has committed (a crash point for tests).
	AfterInstallCommit func(group consensus.GroupID)
	// ApplyFilter, when set, runs before a group applies committed
	// entries up to index; an error fails the apply as an I/O error would,
	// which stops the replica (tests of failed replicas).
	ApplyFilter func(group consensus.GroupID, index uint64) error
	// DisableAdmission steps inbound messages into raft without the
	// checks of admit (inbound.go), to test the recovery from raft panics.
	DisableAdmission bool
	// BeforeLocalResponses, when set, runs on the syncer goroutine before
	// the responses of a group's durable local writes (MsgStorageAppendResp,
	// a leader's acknowledgement of its own entries, its own votes) go back
	// into its raft. A test blocks in it to hold them, as a disk that is
	// slow for that group alone would; it holds every group's later syncs
	// meanwhile.
	BeforeLocalResponses func(group consensus.GroupID, msgs []*pb.Message)
}

// SetDefaults fills zero fields with their documented defaults.
func (c *Config) SetDefaults() {
	if c.TickInterval == 0 {
		c.TickInterval = 100 * time.Millisecond
	}
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 10
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 1
	}
	if c.MaxSizePerMsg == 0 {
		c.MaxSizePerMsg = 1 << 20
	}
	if c.MaxInflightMsgs == 0 {
		c.MaxInflightMsgs = 256
	}
	if c.MaxUncommittedEntriesSize == 0 {
		c.MaxUncommittedEntriesSize = 64 << 20
	}
	if c.LogTruncateEntries == 0 {
		c.LogTruncateEntries = 10000
	}
	if c.LogTruncateBytes == 0 {
		c.LogTruncateBytes = 16 << 20
	}
	if c.LogRetainEntries == 0 {
		c.LogRetainEntries = 1000
	}
	if c.EntryCacheEntries == 0 {
		c.EntryCacheEntries = 256
	}
	if c.EntryCacheBytes == 0 {
		c.EntryCacheBytes = 1 << 20
	}
	if c.SnapshotChunkBytes == 0 {
		c.SnapshotChunkBytes = 1 << 20
	}
	if c.MaxSnapshotSends == 0 {
		c.MaxSnapshotSends = 2
	}
	if c.MaxSnapshotRecvs == 0 {
		c.MaxSnapshotRecvs = 2
	}
	if c.SnapshotDir == "" && c.Storage != nil {
		c.SnapshotDir = c.Storage.FS().PathJoin(c.Storage.Dir(), "raft-snapshots")
	}
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.MaxInboxMessages == 0 {
		c.MaxInboxMessages = 4096
	}
	if c.SendQueueMessages == 0 {
		c.SendQueueMessages = 16384
	}
	if c.StallTimeout == 0 {
		c.StallTimeout = 30 * time.Second
	}
	if c.MaxInboxBytes == 0 {
		c.MaxInboxBytes = 64 << 20
	}
	if c.SendQueueBytes == 0 {
		c.SendQueueBytes = 64 << 20
	}
	if c.DialOptions == nil {
		c.DialOptions = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	if c.ReconnectBackoff == 0 {
		c.ReconnectBackoff = 50 * time.Millisecond
	}
	if c.MaxReconnectBackoff == 0 {
		c.MaxReconnectBackoff = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every problem with c at once.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("raft: "+format, args...)) }
	if c.NodeID == 0 {
		add("node id is required")
	}
	if c.Storage == nil {
		add("storage is required")
	}
	if c.TickInterval <= 0 {
		add("tick interval %v must be positive", c.TickInterval)
	}
	if c.HeartbeatTicks <= 0 {
		add("heartbeat ticks %d must be positive", c.HeartbeatTicks)
	}
	if c.ElectionTicks <= c.HeartbeatTicks {
		add("election ticks %d must exceed heartbeat ticks %d", c.ElectionTicks, c.HeartbeatTicks)
	}
	if c.MaxInflightMsgs <= 0 {
		add("max inflight messages %d must be positive", c.MaxInflightMsgs)
	}
	if c.EntryCacheEntries < 0 || c.EntryCacheBytes < 0 {
		add("entry cache bounds %d entries, %d bytes are negative", c.EntryCacheEntries, c.EntryCacheBytes)
	}
	if c.SnapshotChunkBytes <= 0 {
		add("snapshot chunk bytes %d must be positive", c.SnapshotChunkBytes)
	}
	if c.MaxSnapshotSends <= 0 || c.MaxSnapshotRecvs <= 0 {
		add("max snapshot sends %d and receives %d must be positive", c.MaxSnapshotSends, c.MaxSnapshotRecvs)
	}
	if c.Workers <= 0 {
		add("workers %d must be positive", c.Workers)
	}
	if c.MaxInboxMessages <= 0 || c.SendQueueMessages <= 0 || c.MaxInboxBytes <= 0 || c.SendQueueBytes <= 0 {
		add("inbox (%d messages, %d bytes) and send queue (%d messages, %d bytes) bounds must be positive", c.MaxInboxMessages, c.MaxInboxBytes, c.SendQueueMessages, c.SendQueueBytes)
	}
	if c.ReconnectBackoff <= 0 || c.MaxReconnectBackoff < c.ReconnectBackoff {
		add("reconnect backoff %v..%v is invalid", c.ReconnectBackoff, c.MaxReconnectBackoff)
	}
	if c.Resolver == nil && (c.TestingKnobs == nil || c.TestingKnobs.Transport == nil) {
		add("resolver is required")
	}
	return errors.Join(errs...)
}
