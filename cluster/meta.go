package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
)

// State is an immutable snapshot of the cluster metadata at one etcd
// revision. Never modify one.
type State struct {
	Revision int64
	Schema   *schema.Schema
	// Rings by table id; a table being created or dropped may briefly have
	// a ring without a table or the reverse only across revisions, never
	// within one.
	Rings map[uint64]*ring.Ring
	// Nodes are the registered (live) nodes by id.
	Nodes map[uint64]*NodeInfo
	// Members are every node that ever joined, live or not.
	Members map[uint64]*Member
	// Auth holds the roles and permissions (never nil). Every node checks
	// CQL permissions against it, so a check costs no etcd round trip;
	// it is replaced by the watch like the rest of the state.
	Auth *auth.State
}

// Ring returns a table's ring (nil if none).
func (s *State) Ring(table uint64) *ring.Ring { return s.Rings[table] }

// NodeIDs returns the live node ids in order.
func (s *State) NodeIDs() []uint64 {
	out := make([]uint64, 0, len(s.Nodes))
	for id := range s.Nodes {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TablePartition returns the routing copy of partition id of a table, nil
// when the table's ring does not hold it.
func (s *State) TablePartition(table, id uint64) *kvpb.Descriptor {
	for _, p := range s.Ring(table).Partitions() {
		if p.GetId() == id {
			return p
		}
	}
	return nil
}

// AllPartitions returns the routing copy of every partition of every ring,
// and the ids of the tables that exist: what a node reconciles its local
// replicas with (partition.Store.Reconcile). A ring whose table is not
// live is a dropped table's, whose replicas go.
func (s *State) AllPartitions() (parts []*kvpb.Descriptor, liveTables map[uint64]bool) {
	for _, r := range s.Rings {
		parts = append(parts, r.Partitions()...)
	}
	liveTables = map[uint64]bool{}
	if s.Schema != nil {
		for id := range s.Schema.ByID {
			liveTables[id] = true
		}
	}
	return parts, liveTables
}

// Partition finds a partition by id across all rings.
func (s *State) Partition(id uint64) *kvpb.Descriptor {
	for _, r := range s.Rings {
		for _, p := range r.Partitions() {
			if p.GetId() == id {
				return p
			}
		}
	}
	return nil
}

// Meta follows the metadata in etcd and publishes State snapshots. Safe for
// concurrent use.
type Meta struct {
	kv     metakv.Store
	k      keys
	logger *slog.Logger

	state atomic.Pointer[State]

	// raw is owned by the watch goroutine.
	raw struct {
		catalog map[string][]byte
		rings   map[string][]byte
		nodes   map[string][]byte
		members map[string][]byte
		auth    map[string][]byte
		// pending holds the records of tables being created in
		// several transactions (Catalog.CreateTable): their rings are
		// hidden until the table is published.
		pending map[string][]byte
		// undecodable holds the catalog records that failed to decode, by
		// key, with the value that failed: each is logged once per value
		// rather than on every rebuild of the schema, which happens on
		// every catalog change of any table (issue 15: a busy cluster
		// logged one bad record tens of times per second).
		undecodable map[string]string
	}

	subsMu sync.Mutex
	subs   map[int]chan struct{}
	nextID int

	cancel context.CancelFunc
	done   chan struct{}
}

// OpenMeta loads the current metadata and follows changes until Close.
func OpenMeta(ctx context.Context, kv metakv.Store, logger *slog.Logger) (*Meta, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Meta{kv: kv, logger: logger, subs: map[int]chan struct{}{}, done: make(chan struct{})}
	rev, err := m.load(ctx)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.run(runCtx, rev)
	return m, nil
}

// CatchUp brings the published state up to the store's current revision:
// afterwards it shows every change that completed before the call, such
// as a keyspace another node just created (DDL reads its own writes across
// nodes) or a role just granted. Callers use it when a lookup misses, so
// the common path never waits on the store.
func (m *Meta) CatchUp(ctx context.Context) error {
	rev, err := m.kv.Revision(ctx)
	if err != nil {
		return fmt.Errorf("catch up with the metadata: %w", err)
	}
	return m.WaitRevision(ctx, rev)
}

// State returns the latest snapshot.
func (m *Meta) State() *State { return m.state.Load() }

// load reads everything and publishes it; it returns the revision read.
func (m *Meta) load(ctx context.Context) (int64, error) {
	kvs, rev, err := m.kv.List(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("load cluster metadata: %w", err)
	}
	m.raw.catalog = map[string][]byte{}
	m.raw.rings = map[string][]byte{}
	m.raw.nodes = map[string][]byte{}
	m.raw.members = map[string][]byte{}
	m.raw.auth = map[string][]byte{}
	m.raw.pending = map[string][]byte{}
	for _, kv := range kvs {
		m.put(kv.Key, kv.Value)
	}
	if err := m.publish(rev, true, true, true, true); err != nil {
		return 0, err
	}
	return rev, nil
}

// put records a key; it reports which category changed.
func (m *Meta) put(key string, value []byte) (catalog, rings, nodes, authChanged bool) {
	switch {
	case hasPrefix(key, m.k.auth()):
		m.raw.auth[key] = value
		return false, false, false, true
	case hasPrefix(key, m.k.catalog()):
		m.raw.catalog[key] = value
		return true, false, false, false
	case hasPrefix(key, m.k.rings()):
		m.raw.rings[key] = value
		return false, true, false, false
	case hasPrefix(key, m.k.pendingTables()):
		m.raw.pending[key] = value
		return false, true, false, false
	case hasPrefix(key, m.k.nodes()):
		m.raw.nodes[key] = value
		return false, false, true, false
	case hasPrefix(key, m.k.members()):
		m.raw.members[key] = value
		return false, false, true, false
	}
	return false, false, false, false
}

func (m *Meta) del(key string) (catalog, rings, nodes, authChanged bool) {
	switch {
	case hasPrefix(key, m.k.auth()):
		delete(m.raw.auth, key)
		return false, false, false, true
	case hasPrefix(key, m.k.catalog()):
		delete(m.raw.catalog, key)
		return true, false, false, false
	case hasPrefix(key, m.k.rings()):
		delete(m.raw.rings, key)
		return false, true, false, false
	case hasPrefix(key, m.k.pendingTables()):
		delete(m.raw.pending, key)
		return false, true, false, false
	case hasPrefix(key, m.k.nodes()):
		delete(m.raw.nodes, key)
		return false, false, true, false
	case hasPrefix(key, m.k.members()):
		delete(m.raw.members, key)
		return false, false, true, false
	}
	return false, false, false, false
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// publish rebuilds the changed parts of the state from raw and publishes
// it. A record that does not decode is logged and skipped rather than
// stopping the node: the rest of the metadata stays usable.
func (m *Meta) publish(rev int64, catalog, rings, nodes, authChanged bool) error {
	prev := m.state.Load()
	next := &State{Revision: rev}
	if prev != nil {
		next.Schema, next.Rings, next.Nodes, next.Members, next.Auth = prev.Schema, prev.Rings, prev.Nodes, prev.Members, prev.Auth
	}
	if authChanged || prev == nil {
		next.Auth = decodeAuth(m.k, m.raw.auth, m.logger).Freeze()
	}
	if catalog || prev == nil {
		next.Schema = m.buildSchema()
	}
	if rings || prev == nil {
		next.Rings = m.buildRings()
	}
	if nodes || prev == nil {
		next.Nodes = m.buildNodes()
		next.Members = m.buildMembers()
	}
	m.state.Store(next)
	m.notify()
	return nil
}

// buildSchema decodes the catalog. A record that does not decode is left
// out of the schema (its table answers "unconfigured table") and logged
// once for each value it has; DROP TABLE and DROP KEYSPACE still remove it,
// since the catalog drops by key (Catalog.DropTable).
func (m *Meta) buildSchema() *schema.Schema {
	s := schema.Empty()
	undecodable := map[string]string{}
	skip := func(msg, key string, v []byte, err error) {
		if prev, ok := m.raw.undecodable[key]; !ok || prev != string(v) {
			m.logger.Error(msg, "key", key, "err", err)
		}
		undecodable[key] = string(v)
	}
	defer func() { m.raw.undecodable = undecodable }()
	for key, v := range m.raw.catalog {
		switch {
		case key == m.k.version():
			s.Version = string(v)
		case hasPrefix(key, m.k.keyspaces()):
			ks := &schema.Keyspace{}
			if err := json.Unmarshal(v, ks); err != nil {
				skip("skip undecodable keyspace", key, v, err)
				continue
			}
			s.Keyspaces[ks.Name] = ks
		case hasPrefix(key, m.k.tables()):
			t := &schema.Table{}
			if err := json.Unmarshal(v, t); err != nil {
				skip("skip undecodable table", key, v, err)
				continue
			}
			if s.Tables[t.Keyspace] == nil {
				s.Tables[t.Keyspace] = map[string]*schema.Table{}
			}
			s.Tables[t.Keyspace][t.Name] = t
			s.ByID[t.ID] = t
		}
	}
	return s
}

// buildRings decodes the rings. The ring of a table still being created
// (a pending record exists, Catalog.CreateTable) is left out: its
// descriptors are written over several transactions, and nothing (nodes
// starting replicas, the controller, routing) may act on a partial ring or
// on a table that may never be published. The transaction that publishes
// the table deletes the pending record, so table and whole ring appear in
// the same revision.
func (m *Meta) buildRings() map[uint64]*ring.Ring {
	pending := map[uint64]bool{}
	for key := range m.raw.pending {
		if id, ok := m.k.pendingTableID(key); ok {
			pending[id] = true
		}
	}
	byTable := map[uint64][]*kvpb.Descriptor{}
	for key, v := range m.raw.rings {
		d := &kvpb.Descriptor{}
		if err := proto.Unmarshal(v, d); err != nil {
			m.logger.Error("skip undecodable partition descriptor", "key", key, "err", err)
			continue
		}
		if pending[d.GetTableId()] {
			continue
		}
		byTable[d.GetTableId()] = append(byTable[d.GetTableId()], d)
	}
	out := make(map[uint64]*ring.Ring, len(byTable))
	for t, descs := range byTable {
		out[t] = ring.New(t, descs)
	}
	return out
}

func (m *Meta) buildNodes() map[uint64]*NodeInfo {
	out := map[uint64]*NodeInfo{}
	for key, v := range m.raw.nodes {
		n := &NodeInfo{}
		if err := json.Unmarshal(v, n); err != nil {
			m.logger.Error("skip undecodable node", "key", key, "err", err)
			continue
		}
		out[n.ID] = n
	}
	return out
}

func (m *Meta) buildMembers() map[uint64]*Member {
	out := map[uint64]*Member{}
	for key, v := range m.raw.members {
		mem := &Member{}
		if err := json.Unmarshal(v, mem); err != nil {
			m.logger.Error("skip undecodable member", "key", key, "err", err)
			continue
		}
		out[mem.Info.ID] = mem
	}
	return out
}

// run follows etcd until ctx ends. Every wait in it also waits for ctx, so
// it returns promptly on Close whatever etcd does: Node.Close joins it, and a
// loop that outlived its context (etcd gone, a watch channel that never
// closes) would hold the node's shutdown forever.
func (m *Meta) run(ctx context.Context, rev int64) {
	defer close(m.done)
	for ctx.Err() == nil {
		rev = m.follow(ctx, rev)
		if ctx.Err() != nil {
			return
		}
		// The watch ended (compaction, or etcd lost): reload everything so
		// no change is missed, then follow again.
		for ctx.Err() == nil {
			loadCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			newRev, err := m.load(loadCtx)
			cancel()
			if err == nil {
				rev = newRev
				break
			}
			m.logger.Warn("reload metadata", "err", err)
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// follow watches the metadata from rev+1 and publishes what it sees until
// the watch ends or ctx does; it returns the last revision published. The
// watch ends on an error (compaction, the store lost): run then reloads
// everything, so no change is missed.
func (m *Meta) follow(ctx context.Context, rev int64) int64 {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range m.kv.Watch(wctx, "", rev) {
		if resp.Err != nil {
			m.logger.Warn("metadata watch failed", "err", resp.Err, "revision", rev)
			return rev
		}
		var c, r, n, a bool
		for _, ev := range resp.Events {
			var c1, r1, n1, a1 bool
			if ev.Delete {
				c1, r1, n1, a1 = m.del(ev.Kv.Key)
			} else {
				c1, r1, n1, a1 = m.put(ev.Kv.Key, ev.Kv.Value)
			}
			c, r, n, a = c || c1, r || r1, n || n1, a || a1
		}
		// Events of one revision never span responses, so each
		// response publishes whole transactions.
		if resp.Revision > rev {
			rev = resp.Revision
		}
		if err := m.publish(rev, c, r, n, a); err != nil {
			m.logger.Error("publish metadata", "err", err)
		}
	}
	return rev
}

// Subscribe returns a channel that receives a value (coalesced) after every
// published change, and a function that unsubscribes.
func (m *Meta) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	m.subsMu.Lock()
	id := m.nextID
	m.nextID++
	m.subs[id] = ch
	m.subsMu.Unlock()
	return ch, func() {
		m.subsMu.Lock()
		delete(m.subs, id)
		m.subsMu.Unlock()
	}
}

func (m *Meta) notify() {
	m.subsMu.Lock()
	defer m.subsMu.Unlock()
	for _, ch := range m.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// WaitRevision returns once the published state is at least rev, so a node
// that just committed a change serves it (read your own writes).
func (m *Meta) WaitRevision(ctx context.Context, rev int64) error {
	ch, unsub := m.Subscribe()
	defer unsub()
	for {
		if m.State().Revision >= rev {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for metadata revision %d (at %d): %w", rev, m.State().Revision, ctx.Err())
		case <-m.done:
			// Closed: the revision can never arrive. Returning here keeps
			// a caller without a deadline (a catalog change on the
			// shutdown path) from waiting forever.
			if m.State().Revision >= rev {
				return nil
			}
			return fmt.Errorf("wait for metadata revision %d (at %d): %w", rev, m.State().Revision, ErrMetaClosed)
		case <-ch:
		}
	}
}

// ErrMetaClosed reports a wait on a Meta that was closed.
var ErrMetaClosed = errors.New("cluster: metadata view closed")

// Close stops following. Safe to call twice.
func (m *Meta) Close() {
	if m.cancel != nil {
		m.cancel()
		<-m.done
		m.cancel = nil
	}
}
