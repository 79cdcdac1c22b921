package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/cluster/metakv"
)

// NodeInfo is what a node registers about itself.
type NodeInfo struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
	// CQLAddr, PeerAddr, AdminAddr and HTTPAddr are reachable host:port
	// addresses (not wildcard addresses).
	CQLAddr   string `json:"cql_addr"`
	PeerAddr  string `json:"peer_addr"`
	AdminAddr string `json:"admin_addr"`
	HTTPAddr  string `json:"http_addr,omitempty"`
	// Labels place the node: "zone", "rack", "dc".
	Labels map[string]string `json:"labels,omitempty"`
	// CapacityBytes is the disk the node offers, 0 if unknown.
	CapacityBytes int64     `json:"capacity_bytes,omitempty"`
	Version       string    `json:"version"`
	StartedAt     time.Time `json:"started_at"`
	// Draining is set while the node hands off its replicas.
	Draining bool `json:"draining,omitempty"`
}

// Label returns a label or def.
func (n *NodeInfo) Label(key, def string) string {
	if v, ok := n.Labels[key]; ok && v != "" {
		return v
	}
	return def
}

// Registration keeps a node's registration alive under an etcd lease and
// re-registers after the lease is lost (etcd unreachable for longer than
// the TTL), so a node that loses etcd comes back when etcd does.
type Registration struct {
	kv     metakv.Store
	key    string
	ttl    time.Duration
	logger *slog.Logger

	life   context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu struct {
		sync.Mutex
		info  NodeInfo
		lease metakv.LeaseID
	}
}

// Register registers info and keeps it alive until Close. ttl is the lease
// time to live (default 10s): a node that stops renewing disappears from
// nodes/ after it.
func Register(ctx context.Context, kv metakv.Store, info NodeInfo, ttl time.Duration, logger *slog.Logger) (*Registration, error) {
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Registration{kv: kv, key: keys{}.node(info.ID), ttl: ttl, logger: logger, done: make(chan struct{})}
	r.mu.info = info
	// The keepalive stream lives as long as the registration: cancelling
	// runCtx stops renewals (Abandon) without revoking the lease.
	runCtx, cancel := context.WithCancel(context.Background())
	r.life = runCtx
	ka, err := r.register(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	r.cancel = cancel
	go r.run(runCtx, ka)
	return r, nil
}

func (r *Registration) register(ctx context.Context) (<-chan struct{}, error) {
	lease, err := r.kv.Grant(ctx, r.ttl)
	if err != nil {
		return nil, fmt.Errorf("register node: grant lease: %w", err)
	}
	r.mu.Lock()
	info := r.mu.info
	r.mu.lease = lease
	r.mu.Unlock()
	raw, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	if _, err := metakv.Do(ctx, r.kv, metakv.PutLeased(r.key, raw, lease)); err != nil {
		return nil, fmt.Errorf("register node: put %s: %w", r.key, err)
	}
	ka, err := r.kv.KeepAlive(r.life, lease)
	if err != nil {
		return nil, fmt.Errorf("register node: keep alive: %w", err)
	}
	// The persistent member record says the node is back.
	if err := updateMember(ctx, r.kv, info.ID, func(m *Member) bool {
		if m.FirstSeen.IsZero() {
			m.FirstSeen = time.Now().UTC()
		}
		m.Info, m.DownSince = info, time.Time{}
		return true
	}); err != nil {
		return nil, fmt.Errorf("register node: %w", err)
	}
	r.logger.Info("registered node", "lease", int64(lease))
	return ka, nil
}

func (r *Registration) run(ctx context.Context, ka <-chan struct{}) {
	defer close(r.done)
	backoff := 100 * time.Millisecond
	for {
		// The store closes ka when ctx ends or the lease is gone
		// (metakv.Store.KeepAlive).
		for range ka {
			backoff = 100 * time.Millisecond
		}
		if ctx.Err() != nil {
			return
		}
		r.logger.Warn("node registration lease lost, registering again", "key", r.key)
		for {
			regCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var err error
			ka, err = r.register(regCtx)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			r.logger.Warn("register node", "err", err)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

// Update replaces the registered info.
func (r *Registration) Update(ctx context.Context, info NodeInfo) error {
	r.mu.Lock()
	r.mu.info = info
	lease := r.mu.lease
	r.mu.Unlock()
	raw, err := json.Marshal(info)
	if err != nil {
		return err
	}
	_, err = metakv.Do(ctx, r.kv, metakv.PutLeased(r.key, raw, lease))
	return err
}

// Close stops renewing and revokes the lease so the node disappears at once.
// It returns by ctx's end whatever etcd does: with etcd gone the revoke
// fails and the registration disappears when its lease expires instead.
// Safe to call twice.
func (r *Registration) Close(ctx context.Context) error {
	if r.cancel == nil {
		return nil
	}
	defer func() { r.cancel = nil }()
	r.cancel()
	r.mu.Lock()
	lease := r.mu.lease
	r.mu.lease = 0
	r.mu.Unlock()
	var err error
	if lease != 0 {
		if rerr := r.kv.Revoke(ctx, lease); rerr != nil {
			err = fmt.Errorf("revoke registration lease: %w", rerr)
		}
	}
	select {
	case <-r.done:
		return err
	default:
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		// The renewal loop ends on its canceled context; it is only
		// not joined here.
		err = errors.Join(err, fmt.Errorf("registration loop still running: %w", ctx.Err()))
	}
	return err
}

// Abandon stops renewing the lease without revoking it, as a crashed node
// would: the registration disappears when the lease expires.
func (r *Registration) Abandon() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.cancel = nil
}

// AllocateID returns n consecutive new ids of a kind ("node", "table",
// "partition", "op"), the first of which is returned. Ids start at 1.
func (m *Meta) AllocateID(ctx context.Context, kind string, n uint64) (uint64, error) {
	return AllocateID(ctx, m.kv, kind, n)
}

// AllocateID allocates ids from kv's counter of kind; see Meta.AllocateID.
func AllocateID(ctx context.Context, kv metakv.Store, kind string, n uint64) (uint64, error) {
	if n == 0 {
		return 0, errors.New("allocate zero ids")
	}
	key := keys{}.counter(kind)
	for {
		rec, found, err := kv.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("allocate %s id: %w", kind, err)
		}
		var next uint64 = 1
		if found {
			if _, err := fmt.Sscan(string(rec.Value), &next); err != nil {
				return 0, fmt.Errorf("allocate %s id: corrupt counter %q", kind, rec.Value)
			}
		}
		txn, err := kv.Txn(ctx, metakv.Txn{
			If:   []metakv.Cond{metakv.ModifiedAt(key, rec.ModRevision)},
			Then: []metakv.Op{metakv.Put(key, []byte(fmt.Sprint(next+n)))},
		})
		if err != nil {
			return 0, fmt.Errorf("allocate %s id: %w", kind, err)
		}
		if txn.Succeeded {
			return next, nil
		}
	}
}
