package metakv

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mem is the in-memory Store: the twin of NewEtcd for tests, with etcd's
// semantics where the package doc leaves them open, because code that
// passes on Mem must not fail on etcd:
//
//   - the revision starts at 1 and only a transaction that changes a key
//     advances it (deleting an absent key changes nothing);
//   - a branch may not put one key twice nor put a key it also deletes,
//     and no part of a transaction (conditions, either branch) may hold
//     more than MaxTxnOps entries (etcd's --max-txn-ops, 128): such a
//     transaction fails whole, whatever the conditions;
//   - a read inside a branch sees the writes of the operations before it
//     in that branch (etcd applies a branch's operations in order);
//   - a value condition on an absent key does not hold, even for an empty
//     value;
//   - a put with an unknown lease fails the transaction (ErrLeaseNotFound);
//   - Compact(rev) keeps the history of revisions rev and after;
//   - KeepAlive of an unknown lease returns a channel that closes at once;
//   - an election candidate is the key election+"/"+<lease id in hex>, as
//     etcd's concurrency package writes it, and Campaign's ctx bounds the
//     session as etcd.go's does: when it ends, renewals stop, Done closes
//     and the holding lapses after the session's TTL.
//
// Lease TTLs are kept in real time (rounded up to whole seconds like etcd,
// without etcd's floor of about 2 s); ExpireLease ends one at once.
//
// Concurrency: all state is under one mutex; Mem's goroutines (the lease
// expiry loop, one per watch, per KeepAlive and per election session) are
// joined by Close.
type Mem struct {
	maxTxnOps    int
	historyLimit int64

	closed    chan struct{} // closed by Close: every goroutine of Mem returns
	closeOnce sync.Once
	wg        sync.WaitGroup // Add only under mu with mu.closed false, so that Close's Wait sees every goroutine
	kick      chan struct{}  // wakes the expiry loop for a new lease (cap 1)

	mu struct {
		sync.Mutex
		closed     bool
		rev        int64
		compactRev int64               // history holds every revision >= compactRev
		keys       []string            // the keys of kvs, sorted
		kvs        map[string]KeyValue // Values are never modified in place
		history    []memRevision       // ascending revisions, all > compactRev-1
		changed    chan struct{}       // closed and replaced at each new revision
		leases     map[LeaseID]*memLease
		lastLease  LeaseID
	}
}

// memRevision is the history of one revision: its events in order.
type memRevision struct {
	rev    int64
	events []Event
}

type memLease struct {
	ttl    time.Duration
	expiry time.Time
	keys   map[string]struct{}
	gone   chan struct{} // closed when the lease is revoked or expires
}

// MemOption configures NewMem.
type MemOption func(*Mem)

// WithHistoryLimit sets how many revisions of history Mem keeps for
// watches; older ones are compacted away as etcd's revision auto-compaction
// does (the embedded etcd keeps 10000, the default). 0 keeps everything.
func WithHistoryLimit(revisions int64) MemOption {
	return func(m *Mem) { m.historyLimit = max(0, revisions) }
}

// WithMaxTxnOps sets the most conditions or operations of one branch a
// transaction may hold (etcd's --max-txn-ops). Default 128.
func WithMaxTxnOps(n int) MemOption {
	return func(m *Mem) { m.maxTxnOps = max(1, n) }
}

var _ Store = (*Mem)(nil)

// errMemClosed: the Mem was closed.
var errMemClosed = errors.New("metakv: mem store closed")

// NewMem returns an empty in-memory Store at revision 1. Close it to stop
// its goroutines.
func NewMem(opts ...MemOption) *Mem {
	m := &Mem{maxTxnOps: 128, historyLimit: 10000, closed: make(chan struct{}), kick: make(chan struct{}, 1)}
	for _, o := range opts {
		o(m)
	}
	m.mu.rev = 1
	m.mu.kvs = make(map[string]KeyValue)
	m.mu.changed = make(chan struct{})
	m.mu.leases = make(map[LeaseID]*memLease)
	m.wg.Add(1)
	go m.expiryLoop()
	return m
}

// Close stops Mem's goroutines: watches, keep-alives and sessions end (their
// channels close) and every later call fails. Safe to call twice.
func (m *Mem) Close() {
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.mu.closed = true
		m.mu.Unlock()
		close(m.closed)
	})
	m.wg.Wait()
}

// goLocked runs f on a goroutine joined by Close; false if Mem is closed.
func (m *Mem) goLocked(f func()) bool {
	if m.mu.closed {
		return false
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
	return true
}

// lock takes mu after checking ctx and that Mem is open.
func (m *Mem) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return errMemClosed
	}
	return nil
}

// Compact discards the history before rev, as etcd's Compact: a watch
// from before rev-1 then fails with ErrCompacted. rev must be above the
// last compaction and at most the current revision.
func (m *Mem) Compact(rev int64) error {
	if err := m.lock(context.Background()); err != nil {
		return fmt.Errorf("compact to %d: %w", rev, err)
	}
	defer m.mu.Unlock()
	if rev <= m.mu.compactRev {
		return fmt.Errorf("compact to %d: %w (already compacted to %d)", rev, ErrCompacted, m.mu.compactRev)
	}
	if rev > m.mu.rev {
		return fmt.Errorf("compact to %d: a future revision (current %d)", rev, m.mu.rev)
	}
	m.compactLocked(rev)
	return nil
}

func (m *Mem) compactLocked(rev int64) {
	m.mu.compactRev = rev
	i := sort.Search(len(m.mu.history), func(i int) bool { return m.mu.history[i].rev >= rev })
	// A copy, so that the dropped revisions' memory is released.
	m.mu.history = append([]memRevision(nil), m.mu.history[i:]...)
}

// ExpireLease ends lease id now, as if its TTL had passed: its keys are
// deleted in one revision, its keep-alives and sessions end. It is how a
// test makes a node lose its session.
func (m *Mem) ExpireLease(id LeaseID) error {
	if err := m.lock(context.Background()); err != nil {
		return fmt.Errorf("expire lease %x: %w", int64(id), err)
	}
	defer m.mu.Unlock()
	l := m.mu.leases[id]
	if l == nil {
		return fmt.Errorf("expire lease %x: %w", int64(id), ErrLeaseNotFound)
	}
	m.revokeLocked(id, l)
	return nil
}

func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil // etcd returns an empty value as nil
	}
	return bytes.Clone(b)
}

func cloneKV(kv KeyValue) KeyValue {
	kv.Value = cloneBytes(kv.Value)
	return kv
}

// underLocked returns the keys under prefix, in order; the caller may keep
// the slice across changes.
func (m *Mem) underLocked(prefix string) []string {
	i := sort.SearchStrings(m.mu.keys, prefix)
	j := i
	for j < len(m.mu.keys) && strings.HasPrefix(m.mu.keys[j], prefix) {
		j++
	}
	return slices.Clone(m.mu.keys[i:j])
}

func (m *Mem) readLocked(key string, prefix bool) []KeyValue {
	out := make([]KeyValue, 0)
	if !prefix {
		if kv, ok := m.mu.kvs[key]; ok {
			out = append(out, cloneKV(kv))
		}
		return out
	}
	for _, k := range m.underLocked(key) {
		out = append(out, cloneKV(m.mu.kvs[k]))
	}
	return out
}

func (m *Mem) Get(ctx context.Context, key string) (KeyValue, bool, error) {
	if err := m.lock(ctx); err != nil {
		return KeyValue{}, false, fmt.Errorf("get %s: %w", key, err)
	}
	defer m.mu.Unlock()
	kv, ok := m.mu.kvs[key]
	if !ok {
		return KeyValue{}, false, nil
	}
	return cloneKV(kv), true, nil
}

func (m *Mem) List(ctx context.Context, prefix string) ([]KeyValue, int64, error) {
	if err := m.lock(ctx); err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	defer m.mu.Unlock()
	return m.readLocked(prefix, true), m.mu.rev, nil
}

func (m *Mem) Revision(ctx context.Context) (int64, error) {
	if err := m.lock(ctx); err != nil {
		return 0, fmt.Errorf("read revision: %w", err)
	}
	defer m.mu.Unlock()
	return m.mu.rev, nil
}

// checkTxn rejects what etcd rejects before evaluating a transaction.
func (m *Mem) checkTxn(t Txn) error {
	if n := max(len(t.If), len(t.Then), len(t.Else)); n > m.maxTxnOps {
		return fmt.Errorf("metakv: txn: %d operations in one part, more than %d", n, m.maxTxnOps)
	}
	for _, c := range t.If {
		if c.Compare < Equal || c.Compare > Less {
			return fmt.Errorf("metakv: condition on %s: unknown comparison %d", c.Key, c.Compare)
		}
		if c.Target < TargetCreateRevision || c.Target > TargetValue {
			return fmt.Errorf("metakv: condition on %s: unknown target %d", c.Key, c.Target)
		}
	}
	for _, branch := range [][]Op{t.Then, t.Else} {
		puts := make(map[string]bool)
		for _, o := range branch {
			switch o.Kind {
			case OpPut:
				if o.Prefix {
					return fmt.Errorf("metakv: put %s: a put has no prefix", o.Key)
				}
				if puts[o.Key] {
					return fmt.Errorf("metakv: txn: key %s put twice in one branch", o.Key)
				}
				puts[o.Key] = true
			case OpDelete, OpGet:
			default:
				return fmt.Errorf("metakv: operation on %s: unknown kind %d", o.Key, o.Kind)
			}
		}
		for _, o := range branch {
			if o.Kind != OpDelete {
				continue
			}
			for k := range puts {
				if k == o.Key || (o.Prefix && strings.HasPrefix(k, o.Key)) {
					return fmt.Errorf("metakv: txn: key %s both put and deleted in one branch", k)
				}
			}
		}
	}
	return nil
}

// holdsLocked evaluates c as etcd does: over every key it names; with no
// key, a revision is compared with 0 and a value condition fails.
func (m *Mem) holdsLocked(c Cond) bool {
	var kvs []KeyValue
	if c.Prefix {
		for _, k := range m.underLocked(c.Key) {
			kvs = append(kvs, m.mu.kvs[k])
		}
	} else if kv, ok := m.mu.kvs[c.Key]; ok {
		kvs = append(kvs, kv)
	}
	if len(kvs) == 0 {
		if c.Target == TargetValue {
			return false
		}
		kvs = append(kvs, KeyValue{})
	}
	for _, kv := range kvs {
		var r int
		switch c.Target {
		case TargetCreateRevision:
			r = cmp.Compare(kv.CreateRevision, c.Rev)
		case TargetModRevision:
			r = cmp.Compare(kv.ModRevision, c.Rev)
		case TargetValue:
			r = bytes.Compare(kv.Value, c.Value)
		}
		if (c.Compare == Equal && r != 0) || (c.Compare == Greater && r <= 0) || (c.Compare == Less && r >= 0) {
			return false
		}
	}
	return true
}

func (m *Mem) Txn(ctx context.Context, t Txn) (TxnResult, error) {
	if err := m.checkTxn(t); err != nil {
		return TxnResult{}, err
	}
	if err := m.lock(ctx); err != nil {
		return TxnResult{}, fmt.Errorf("txn: %w", err)
	}
	defer m.mu.Unlock()
	res := TxnResult{Succeeded: true}
	for _, c := range t.If {
		if !m.holdsLocked(c) {
			res.Succeeded = false
			break
		}
	}
	branch := t.Then
	if !res.Succeeded {
		branch = t.Else
	}
	for _, o := range branch {
		if o.Kind == OpPut && o.Lease != 0 && m.mu.leases[o.Lease] == nil {
			return TxnResult{}, fmt.Errorf("txn: put %s with lease %x: %w", o.Key, int64(o.Lease), ErrLeaseNotFound)
		}
	}
	rev := m.mu.rev + 1
	var events []Event
	for _, o := range branch {
		switch o.Kind {
		case OpPut:
			events = append(events, m.putLocked(o.Key, o.Value, o.Lease, rev))
		case OpDelete:
			keys := []string{o.Key}
			if o.Prefix {
				keys = m.underLocked(o.Key)
			}
			for _, k := range keys {
				if ev, ok := m.deleteLocked(k, rev); ok {
					events = append(events, ev)
				}
			}
		case OpGet:
			res.Reads = append(res.Reads, m.readLocked(o.Key, o.Prefix))
		}
	}
	m.commitLocked(events)
	res.Revision = m.mu.rev
	return res, nil
}

// putLocked writes key at rev (not yet committed) and returns its event.
func (m *Mem) putLocked(key string, value []byte, lease LeaseID, rev int64) Event {
	kv, ok := m.mu.kvs[key]
	if ok {
		if l := m.mu.leases[kv.Lease]; l != nil {
			delete(l.keys, key)
		}
	} else {
		i, _ := slices.BinarySearch(m.mu.keys, key)
		m.mu.keys = slices.Insert(m.mu.keys, i, key)
		kv = KeyValue{Key: key, CreateRevision: rev}
	}
	kv.Value, kv.ModRevision, kv.Lease = cloneBytes(value), rev, lease
	if l := m.mu.leases[lease]; l != nil {
		l.keys[key] = struct{}{}
	}
	m.mu.kvs[key] = kv
	return Event{Kv: kv}
}

// deleteLocked deletes key at rev (not yet committed); false if absent.
func (m *Mem) deleteLocked(key string, rev int64) (Event, bool) {
	kv, ok := m.mu.kvs[key]
	if !ok {
		return Event{}, false
	}
	if l := m.mu.leases[kv.Lease]; l != nil {
		delete(l.keys, key)
	}
	delete(m.mu.kvs, key)
	if i, found := slices.BinarySearch(m.mu.keys, key); found {
		m.mu.keys = slices.Delete(m.mu.keys, i, i+1)
	}
	return Event{Delete: true, Kv: KeyValue{Key: key, ModRevision: rev}}, true
}

// commitLocked makes events, written at mu.rev+1, the next revision; no
// events, no revision.
func (m *Mem) commitLocked(events []Event) {
	if len(events) == 0 {
		return
	}
	m.mu.rev++
	m.mu.history = append(m.mu.history, memRevision{rev: m.mu.rev, events: events})
	if m.historyLimit > 0 && int64(len(m.mu.history)) > 2*m.historyLimit {
		// Compacting at twice the limit keeps the copy in compactLocked
		// amortized.
		m.compactLocked(m.mu.rev - m.historyLimit + 1)
	}
	close(m.mu.changed)
	m.mu.changed = make(chan struct{})
}

func (m *Mem) Watch(ctx context.Context, prefix string, fromRev int64) <-chan WatchResponse {
	out := make(chan WatchResponse)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.goLocked(func() { m.watch(ctx, prefix, fromRev+1, out) }) {
		close(out)
	}
	return out
}

// watch sends the events under prefix from revision next on.
func (m *Mem) watch(ctx context.Context, prefix string, next int64, out chan<- WatchResponse) {
	defer close(out)
	for {
		m.mu.Lock()
		var r WatchResponse
		if next < m.mu.compactRev {
			r.Err = fmt.Errorf("%w: history before %d is gone", ErrCompacted, m.mu.compactRev)
		} else {
			h := m.mu.history
			for i := sort.Search(len(h), func(i int) bool { return h[i].rev >= next }); i < len(h); i++ {
				for _, ev := range h[i].events {
					if strings.HasPrefix(ev.Kv.Key, prefix) {
						// Each watcher gets its own copy of the values.
						r.Events = append(r.Events, Event{Delete: ev.Delete, Kv: cloneKV(ev.Kv)})
					}
				}
			}
			r.Revision, next = m.mu.rev, m.mu.rev+1
		}
		changed := m.mu.changed
		m.mu.Unlock()
		if len(r.Events) > 0 || r.Err != nil {
			select {
			case out <- r:
			case <-ctx.Done():
				return
			case <-m.closed:
				return
			}
			if r.Err != nil {
				return
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-m.closed:
			return
		}
	}
}

func (m *Mem) Grant(ctx context.Context, ttl time.Duration) (LeaseID, error) {
	if err := m.lock(ctx); err != nil {
		return 0, fmt.Errorf("grant lease: %w", err)
	}
	defer m.mu.Unlock()
	m.mu.lastLease++
	id := m.mu.lastLease
	d := time.Duration(ttlSeconds(ttl)) * time.Second
	m.mu.leases[id] = &memLease{ttl: d, expiry: time.Now().Add(d), keys: make(map[string]struct{}), gone: make(chan struct{})}
	select {
	case m.kick <- struct{}{}:
	default:
	}
	return id, nil
}

// revokeLocked ends lease id, deleting its keys in one revision (in key
// order, as etcd's lessor does).
func (m *Mem) revokeLocked(id LeaseID, l *memLease) {
	delete(m.mu.leases, id)
	close(l.gone)
	keys := make([]string, 0, len(l.keys))
	for k := range l.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var events []Event
	for _, k := range keys {
		if ev, ok := m.deleteLocked(k, m.mu.rev+1); ok {
			events = append(events, ev)
		}
	}
	m.commitLocked(events)
}

// expiryLoop revokes leases whose TTL passed without a renewal.
func (m *Mem) expiryLoop() {
	defer m.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		m.mu.Lock()
		now := time.Now()
		var next time.Time
		for id, l := range m.mu.leases {
			if !l.expiry.After(now) {
				m.revokeLocked(id, l)
			} else if next.IsZero() || l.expiry.Before(next) {
				next = l.expiry
			}
		}
		m.mu.Unlock()
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		// A renewal only moves an expiry later: waking at the old one
		// and finding nothing due is harmless.
		timer.Reset(wait)
		select {
		case <-m.closed:
			return
		case <-m.kick:
		case <-timer.C:
		}
	}
}

// renew renews lease id now. Like etcd, renewing a lease whose TTL has
// passed but that the expiry loop has not revoked yet revokes it and fails.
func (m *Mem) renew(id LeaseID) (*memLease, error) {
	if err := m.lock(context.Background()); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	l := m.mu.leases[id]
	if l == nil {
		return nil, ErrLeaseNotFound
	}
	now := time.Now()
	if !l.expiry.After(now) {
		m.revokeLocked(id, l)
		return nil, ErrLeaseNotFound
	}
	l.expiry = now.Add(l.ttl)
	return l, nil
}

// keepAlive renews lease id at once and then every third of its TTL, as
// etcd's client does, calling renewed after each renewal, until ctx ends,
// the lease is gone or Mem closes.
func (m *Mem) keepAlive(ctx context.Context, id LeaseID, renewed func()) {
	l, err := m.renew(id)
	if err != nil {
		return
	}
	renewed()
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.closed:
			return
		case <-l.gone:
			return
		case <-tick.C:
		}
		if _, err := m.renew(id); err != nil {
			return
		}
		renewed()
	}
}

func (m *Mem) KeepAlive(ctx context.Context, id LeaseID) (<-chan struct{}, error) {
	if err := m.lock(ctx); err != nil {
		return nil, fmt.Errorf("keep lease %x alive: %w", int64(id), err)
	}
	defer m.mu.Unlock()
	out := make(chan struct{}, 1)
	// An unknown lease is not an error here but a channel that closes,
	// as with etcd's client.
	m.goLocked(func() {
		defer close(out)
		m.keepAlive(ctx, id, func() {
			select {
			case out <- struct{}{}:
			default: // renewals coalesce
			}
		})
	})
	return out, nil
}

func (m *Mem) KeepAliveOnce(ctx context.Context, id LeaseID) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("renew lease %x: %w", int64(id), err)
	}
	if _, err := m.renew(id); err != nil {
		return fmt.Errorf("renew lease %x: %w", int64(id), err)
	}
	return nil
}

func (m *Mem) Revoke(ctx context.Context, id LeaseID) error {
	if err := m.lock(ctx); err != nil {
		return fmt.Errorf("revoke lease %x: %w", int64(id), err)
	}
	defer m.mu.Unlock()
	l := m.mu.leases[id]
	if l == nil {
		return fmt.Errorf("revoke lease %x: %w", int64(id), ErrLeaseNotFound)
	}
	m.revokeLocked(id, l)
	return nil
}
