// Package metakv is the seam between the cluster's metadata (catalog, rings,
// node registrations, member records, operations, roles) and the store that
// keeps it: a versioned, ordered key-value map with multi-key transactions,
// watches from a revision, leases and leader election. That is the part of
// etcd cosmosd uses, and nothing more, so that:
//
//   - every metadata key is built in one package (cluster), on a Store that
//     knows nothing of the layout;
//   - the code above (catalog, controller, admin, executor) runs in unit
//     tests on Mem, the in-memory twin, in milliseconds and without etcd.
//
// Two implementations: NewEtcd (production: an etcd client and a key
// prefix) and NewMem. The conformance suite in metakvtest states the
// contracts below as tests, and both implementations pass it.
//
// # Contracts
//
// Revisions. The store has one revision counter. Every transaction that
// writes (and every lease expiry or revoke that deletes keys) advances it
// by exactly one, whatever its number of operations; a transaction that
// writes nothing leaves it. Every read reports the revision it observed.
//
// Records. A key's CreateRevision is the revision that created it (since
// its last deletion) and its ModRevision the revision of its last write.
// An absent key compares as if both were 0: this is how a condition says
// "does not exist" (Absent) or "unchanged since I read it" (ModifiedAt with
// the ModRevision read, 0 if it was absent).
//
// Keys. Keys are strings relative to the store's namespace (NewEtcd adds its
// prefix; a key never contains it). They sort bytewise; List and watches
// over a prefix cover exactly the keys that start with it.
//
// Transactions. Txn evaluates all its conditions at one revision and then
// applies Then (all held) or Else, atomically: every other reader sees all
// of the branch's writes or none. A branch's operations apply in order: a
// read sees the writes of the operations before it. A branch may not write
// one key twice (a put and a delete of it included), and each branch holds
// at most 128 operations (etcd's default --max-txn-ops): both are refused
// with an error. Deleting an absent key writes nothing.
//
// Watches. Watch delivers every change to keys under a prefix made after
// fromRev, in revision order; the events of one revision are never split
// across two responses. If the store no longer holds the history after
// fromRev (compaction), the watch delivers one response whose Err is
// ErrCompacted and closes: the watcher must read everything again (List)
// and watch from there. The channel closes when ctx ends.
//
// Leases. A key put with a lease is deleted when the lease expires (its TTL
// passed without a renewal) or is revoked; all of a lease's keys go in one
// revision. Renewing, revoking or putting with an expired or revoked lease
// fails with ErrLeaseNotFound (KeepAlive returns a channel that closes).
// etcd enforces a minimum TTL (2s for the embedded etcd).
//
// Elections. Campaign blocks until the caller holds the named election: at
// most one live holder at a time, in order of arrival. Campaign's context
// bounds the wait only. The holding lasts while its session lease is
// renewed, until Resign; Done is closed when that lease is lost and Fence
// is a condition that holds exactly while this holding stands, so a writer
// fenced by it can never overwrite a successor's decisions. A candidate
// whose session is lost while it waits gets an error (ErrLeaseNotFound),
// never a holding of nothing.
package metakv

import (
	"context"
	"errors"
	"time"
)

// Store is the metadata store. Implementations are safe for concurrent use.
type Store interface {
	// Get returns key's record; ok is false when the key does not exist.
	Get(ctx context.Context, key string) (kv KeyValue, ok bool, err error)
	// List returns the records of the keys under prefix, in key order, and
	// the revision they were read at.
	List(ctx context.Context, prefix string) ([]KeyValue, int64, error)
	// Revision returns the store's current revision, read linearizably: a
	// caller that waits until its view reaches it has seen every write
	// that completed before the call.
	Revision(ctx context.Context) (int64, error)
	// Txn runs a transaction.
	Txn(ctx context.Context, t Txn) (TxnResult, error)
	// Watch follows the keys under prefix from fromRev+1 (see Watches).
	Watch(ctx context.Context, prefix string, fromRev int64) <-chan WatchResponse

	// Grant creates a lease of ttl (rounded up to a whole second, at
	// least one).
	Grant(ctx context.Context, ttl time.Duration) (LeaseID, error)
	// KeepAlive renews a lease until ctx ends. The channel receives a
	// value after each renewal and is closed when renewals stop: ctx
	// ended, or the lease is gone.
	KeepAlive(ctx context.Context, id LeaseID) (<-chan struct{}, error)
	// KeepAliveOnce renews a lease once.
	KeepAliveOnce(ctx context.Context, id LeaseID) error
	// Revoke ends a lease now, deleting its keys.
	Revoke(ctx context.Context, id LeaseID) error

	// Campaign blocks until the caller leads the election, announcing
	// value, or ctx ends. ttl is the session lease: a holder that stops
	// renewing (a crashed node) loses the election within about ttl.
	Campaign(ctx context.Context, election, value string, ttl time.Duration) (Leadership, error)
	// Leader returns the value of the election's current holder; ok is
	// false when nobody holds it.
	Leader(ctx context.Context, election string) (value string, ok bool, err error)
}

// Leadership is one holding of an election.
type Leadership interface {
	// Fence is a condition that holds while this leadership stands.
	Fence() Cond
	// Done is closed when the leadership's session is lost.
	Done() <-chan struct{}
	// Resign gives up the election and ends the session.
	Resign(ctx context.Context) error
}

// LeaseID names a lease; 0 is no lease.
type LeaseID int64

// KeyValue is a key's record.
type KeyValue struct {
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64
	Lease          LeaseID
}

// Event is one change seen by a watch.
type Event struct {
	// Delete is true for a deletion; Kv then holds only Key and
	// ModRevision (the deleting revision).
	Delete bool
	Kv     KeyValue
}

// WatchResponse is a batch of events: whole revisions, in order.
type WatchResponse struct {
	// Revision is the store's revision when the batch was sent: at least
	// that of its last event.
	Revision int64
	Events   []Event
	// Err ends the watch (ErrCompacted, or the store's failure); the
	// channel closes after it.
	Err error
}

// Errors of the contracts.
var (
	// ErrCompacted: the history a watch asked for is gone.
	ErrCompacted = errors.New("metakv: revision compacted")
	// ErrLeaseNotFound: the lease expired or was revoked.
	ErrLeaseNotFound = errors.New("metakv: lease not found")
)

// Txn is a transaction: If every condition holds, Then runs, else Else.
type Txn struct {
	If   []Cond
	Then []Op
	Else []Op
}

// TxnResult is a transaction's outcome.
type TxnResult struct {
	// Succeeded reports whether the conditions held (Then ran).
	Succeeded bool
	// Revision is the store's revision after the transaction.
	Revision int64
	// Reads holds, for each Get or GetPrefix of the branch that ran, in
	// order, the records it read.
	Reads [][]KeyValue
}

// Target is what a condition compares.
type Target uint8

// Targets of a condition.
const (
	TargetCreateRevision Target = iota + 1
	TargetModRevision
	TargetValue
)

// Comparison is a condition's relation.
type Comparison uint8

// Comparisons of a condition.
const (
	Equal Comparison = iota + 1
	Greater
	Less
)

// Cond is a condition of a transaction: Target of Key, compared by Compare
// with Rev (revisions) or Value (values). With Prefix, it holds when it holds
// for every key under Key; when there is none, a revision condition is
// compared with an absent key's 0 and a value condition does not hold.
// Build conditions with the functions below.
type Cond struct {
	Key     string
	Prefix  bool
	Target  Target
	Compare Comparison
	Rev     int64
	Value   []byte
}

// Absent holds when key does not exist.
func Absent(key string) Cond {
	return Cond{Key: key, Target: TargetCreateRevision, Compare: Equal}
}

// Exists holds when key exists.
func Exists(key string) Cond {
	return Cond{Key: key, Target: TargetCreateRevision, Compare: Greater}
}

// AnyUnder holds when some key under prefix exists.
func AnyUnder(prefix string) Cond {
	return Cond{Key: prefix, Prefix: true, Target: TargetCreateRevision, Compare: Greater}
}

// CreatedAt holds when key exists and was created at rev.
func CreatedAt(key string, rev int64) Cond {
	return Cond{Key: key, Target: TargetCreateRevision, Compare: Equal, Rev: rev}
}

// ModifiedAt holds when key's last write was at rev; ModifiedAt(key, 0)
// holds when it does not exist. With the ModRevision read (0 if absent) it
// says "unchanged since I read it": the compare-and-swap of a
// read-modify-write.
func ModifiedAt(key string, rev int64) Cond {
	return Cond{Key: key, Target: TargetModRevision, Compare: Equal, Rev: rev}
}

// UnchangedUnderSince holds when no key under prefix was written after rev.
// It does not see deletions.
func UnchangedUnderSince(prefix string, rev int64) Cond {
	return Cond{Key: prefix, Prefix: true, Target: TargetModRevision, Compare: Less, Rev: rev + 1}
}

// ValueIs holds when key exists with value v.
func ValueIs(key string, v []byte) Cond {
	return Cond{Key: key, Target: TargetValue, Compare: Equal, Value: v}
}

// OpKind is the kind of an Op.
type OpKind uint8

// Kinds of operations.
const (
	OpPut OpKind = iota + 1
	OpDelete
	OpGet
)

// Op is one operation of a transaction. Build operations with the
// functions below.
type Op struct {
	Kind   OpKind
	Key    string
	Prefix bool
	Value  []byte
	Lease  LeaseID
}

// Put writes key.
func Put(key string, value []byte) Op { return Op{Kind: OpPut, Key: key, Value: value} }

// PutLeased writes key, attached to lease: it is deleted with the lease.
func PutLeased(key string, value []byte, lease LeaseID) Op {
	return Op{Kind: OpPut, Key: key, Value: value, Lease: lease}
}

// Delete deletes key (nothing if it does not exist).
func Delete(key string) Op { return Op{Kind: OpDelete, Key: key} }

// DeleteUnder deletes every key under prefix.
func DeleteUnder(prefix string) Op { return Op{Kind: OpDelete, Key: prefix, Prefix: true} }

// Get reads key into the transaction's Reads (an empty slice if absent).
func Get(key string) Op { return Op{Kind: OpGet, Key: key} }

// GetUnder reads every key under prefix into the transaction's Reads.
func GetUnder(prefix string) Op { return Op{Kind: OpGet, Key: prefix, Prefix: true} }

// Do runs one unconditional write: a transaction of ops alone.
func Do(ctx context.Context, s Store, ops ...Op) (int64, error) {
	r, err := s.Txn(ctx, Txn{Then: ops})
	return r.Revision, err
}
