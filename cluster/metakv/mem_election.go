package metakv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// memLeadership is a holding of an election on Mem. Its session goroutine
// renews the lease and closes done when it stops.
type memLeadership struct {
	m        *Mem
	election string
	key      string // election + "/" + lease id in hex
	rev      int64  // key's CreateRevision
	lease    LeaseID
	// sessionCtx is the session's own context, which Resign ends: like
	// etcd.go's session, the holding outlives Campaign's ctx.
	sessionCtx context.Context
	endSession context.CancelFunc
	stop       context.CancelFunc // stops the session's renewals
	done       chan struct{}

	mu       sync.Mutex
	resigned bool
}

func (l *memLeadership) Fence() Cond           { return CreatedAt(l.key, l.rev) }
func (l *memLeadership) Done() <-chan struct{} { return l.done }

// Resign deletes the candidate key if it is still this holding's, then
// ends the session as etcd's concurrency.Session.Close does: renewals stop
// and the lease is revoked with the session's context, so that revoking
// fails (and the lease, now keyless, lapses after its TTL) when
// Campaign's ctx has ended, and a second Resign, or one after the session
// was lost, reports ErrLeaseNotFound.
func (l *memLeadership) Resign(ctx context.Context) error {
	l.mu.Lock()
	first := !l.resigned
	l.resigned = true
	l.mu.Unlock()
	var errs []error
	if first {
		if _, err := l.m.Txn(ctx, Txn{If: []Cond{l.Fence()}, Then: []Op{Delete(l.key)}}); err != nil {
			errs = append(errs, fmt.Errorf("election %s: resign: %w", l.election, err))
		}
	}
	l.stop()
	<-l.done
	if err := l.m.Revoke(ctx, l.lease); err != nil {
		errs = append(errs, fmt.Errorf("election %s: resign: %w", l.election, err))
	}
	l.endSession()
	return errors.Join(errs...)
}

func (m *Mem) Campaign(ctx context.Context, election, value string, ttl time.Duration) (Leadership, error) {
	id, err := m.Grant(ctx, ttl)
	if err != nil {
		return nil, fmt.Errorf("election %s: session: %w", election, err)
	}
	l := &memLeadership{
		m:        m,
		election: election,
		key:      fmt.Sprintf("%s/%x", election, int64(id)),
		lease:    id,
		done:     make(chan struct{}),
	}
	l.sessionCtx, l.endSession = context.WithCancel(context.Background())
	var sctx context.Context
	sctx, l.stop = context.WithCancel(l.sessionCtx)
	m.mu.Lock()
	started := m.goLocked(func() {
		defer close(l.done)
		m.keepAlive(sctx, id, func() {})
	})
	m.mu.Unlock()
	if !started {
		l.stop()
		return nil, fmt.Errorf("election %s: session: %w", election, errMemClosed)
	}
	// fail ends the candidacy: the lease goes, and its key with it.
	fail := func(err error) (Leadership, error) {
		defer l.endSession()
		l.stop()
		<-l.done
		_ = m.Revoke(context.Background(), id) // a lost lease is already gone
		return nil, fmt.Errorf("election %s: campaign: %w", election, err)
	}
	res, err := m.Txn(ctx, Txn{If: []Cond{Absent(l.key)}, Then: []Op{PutLeased(l.key, []byte(value), id)}})
	if err != nil {
		return fail(err)
	}
	if !res.Succeeded {
		return fail(fmt.Errorf("candidate key %s already exists", l.key)) // a fresh lease's key cannot
	}
	l.rev = res.Revision
	// Wait, in order of arrival, until no candidate created before this
	// one remains.
	for {
		m.mu.Lock()
		own, ok := m.mu.kvs[l.key]
		ahead := false
		for _, k := range m.underLocked(election + "/") {
			if m.mu.kvs[k].CreateRevision < l.rev {
				ahead = true
				break
			}
		}
		changed := m.mu.changed
		m.mu.Unlock()
		if !ok || own.CreateRevision != l.rev {
			// etcd's Campaign would still return here, holding nothing;
			// Mem says so.
			return fail(fmt.Errorf("session lost while waiting: %w", ErrLeaseNotFound))
		}
		if !ahead {
			return l, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-m.closed:
			return fail(errMemClosed)
		}
	}
}

func (m *Mem) Leader(ctx context.Context, election string) (string, bool, error) {
	if err := m.lock(ctx); err != nil {
		return "", false, fmt.Errorf("election %s: leader: %w", election, err)
	}
	defer m.mu.Unlock()
	var first KeyValue
	for _, k := range m.underLocked(election + "/") {
		if kv := m.mu.kvs[k]; first.CreateRevision == 0 || kv.CreateRevision < first.CreateRevision {
			first = kv
		}
	}
	if first.CreateRevision == 0 {
		return "", false, nil
	}
	return string(first.Value), true, nil
}
