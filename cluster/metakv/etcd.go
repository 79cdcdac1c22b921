package metakv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// etcdStore is the Store on an etcd cluster, namespaced under a prefix.
type etcdStore struct {
	cli    *clientv3.Client
	prefix string
}

// NewEtcd returns the Store of the keys under prefix in the etcd cluster
// cli talks to. The caller keeps cli and closes it after the store's last
// use.
func NewEtcd(cli *clientv3.Client, prefix string) Store {
	return &etcdStore{cli: cli, prefix: prefix}
}

func (s *etcdStore) key(k string) string { return s.prefix + k }

func (s *etcdStore) kv(kv *mvccpb.KeyValue) KeyValue {
	return KeyValue{
		Key:            strings.TrimPrefix(string(kv.Key), s.prefix),
		Value:          kv.Value,
		CreateRevision: kv.CreateRevision,
		ModRevision:    kv.ModRevision,
		Lease:          LeaseID(kv.Lease),
	}
}

func (s *etcdStore) kvs(in []*mvccpb.KeyValue) []KeyValue {
	out := make([]KeyValue, len(in))
	for i, kv := range in {
		out[i] = s.kv(kv)
	}
	return out
}

func (s *etcdStore) Get(ctx context.Context, key string) (KeyValue, bool, error) {
	resp, err := s.cli.Get(ctx, s.key(key))
	if err != nil {
		return KeyValue{}, false, fmt.Errorf("get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return KeyValue{}, false, nil
	}
	return s.kv(resp.Kvs[0]), true, nil
}

func (s *etcdStore) List(ctx context.Context, prefix string) ([]KeyValue, int64, error) {
	resp, err := s.cli.Get(ctx, s.key(prefix), clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", prefix, err)
	}
	return s.kvs(resp.Kvs), resp.Header.Revision, nil
}

func (s *etcdStore) Revision(ctx context.Context) (int64, error) {
	// Any linearizable read reports the revision; counting the keys of
	// one that never exists transfers nothing.
	resp, err := s.cli.Get(ctx, s.prefix+"\x00revision", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("read revision: %w", err)
	}
	return resp.Header.Revision, nil
}

func (s *etcdStore) cmp(c Cond) (clientv3.Cmp, error) {
	var cmp clientv3.Cmp
	rel := map[Comparison]string{Equal: "=", Greater: ">", Less: "<"}[c.Compare]
	if rel == "" {
		return cmp, fmt.Errorf("metakv: condition on %s: unknown comparison %d", c.Key, c.Compare)
	}
	k := s.key(c.Key)
	switch c.Target {
	case TargetCreateRevision:
		cmp = clientv3.Compare(clientv3.CreateRevision(k), rel, c.Rev)
	case TargetModRevision:
		cmp = clientv3.Compare(clientv3.ModRevision(k), rel, c.Rev)
	case TargetValue:
		cmp = clientv3.Compare(clientv3.Value(k), rel, string(c.Value))
	default:
		return cmp, fmt.Errorf("metakv: condition on %s: unknown target %d", c.Key, c.Target)
	}
	if c.Prefix {
		cmp = cmp.WithPrefix()
	}
	return cmp, nil
}

func (s *etcdStore) op(o Op) (clientv3.Op, error) {
	k := s.key(o.Key)
	var opts []clientv3.OpOption
	if o.Prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	switch o.Kind {
	case OpPut:
		if o.Prefix {
			return clientv3.Op{}, fmt.Errorf("metakv: put %s: a put has no prefix", o.Key)
		}
		if o.Lease != 0 {
			opts = append(opts, clientv3.WithLease(clientv3.LeaseID(o.Lease)))
		}
		return clientv3.OpPut(k, string(o.Value), opts...), nil
	case OpDelete:
		return clientv3.OpDelete(k, opts...), nil
	case OpGet:
		return clientv3.OpGet(k, opts...), nil
	}
	return clientv3.Op{}, fmt.Errorf("metakv: operation on %s: unknown kind %d", o.Key, o.Kind)
}

func (s *etcdStore) ops(in []Op) ([]clientv3.Op, error) {
	out := make([]clientv3.Op, len(in))
	for i, o := range in {
		var err error
		if out[i], err = s.op(o); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *etcdStore) Txn(ctx context.Context, t Txn) (TxnResult, error) {
	cmps := make([]clientv3.Cmp, len(t.If))
	for i, c := range t.If {
		var err error
		if cmps[i], err = s.cmp(c); err != nil {
			return TxnResult{}, err
		}
	}
	then, err := s.ops(t.Then)
	if err != nil {
		return TxnResult{}, err
	}
	els, err := s.ops(t.Else)
	if err != nil {
		return TxnResult{}, err
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
	if err != nil {
		return TxnResult{}, leaseErr(err) // a put with a gone lease
	}
	res := TxnResult{Succeeded: resp.Succeeded, Revision: resp.Header.Revision}
	branch := t.Then
	if !resp.Succeeded {
		branch = t.Else
	}
	for i, o := range branch {
		if o.Kind == OpGet && i < len(resp.Responses) {
			res.Reads = append(res.Reads, s.kvs(resp.Responses[i].GetResponseRange().GetKvs()))
		}
	}
	return res, nil
}

func (s *etcdStore) Watch(ctx context.Context, prefix string, fromRev int64) <-chan WatchResponse {
	out := make(chan WatchResponse)
	go func() {
		defer close(out)
		// The watch has a context of its own, canceled on return, so
		// that a watch ended here (an error) is released in the client
		// too. RequireLeader: a member cut off from its cluster ends the
		// watch rather than serving a stale view silently.
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		defer cancel()
		wch := s.cli.Watch(wctx, s.key(prefix), clientv3.WithPrefix(), clientv3.WithRev(fromRev+1))
		for {
			var resp clientv3.WatchResponse
			var ok bool
			select {
			case <-ctx.Done():
				return
			case resp, ok = <-wch:
			}
			if !ok {
				return
			}
			var r WatchResponse
			if err := resp.Err(); err != nil {
				r.Err = err
				if resp.CompactRevision != 0 {
					r.Err = fmt.Errorf("%w: history before %d is gone: %w", ErrCompacted, resp.CompactRevision, err)
				}
			} else {
				r.Revision = resp.Header.Revision
				r.Events = make([]Event, len(resp.Events))
				for i, ev := range resp.Events {
					r.Events[i] = Event{Delete: ev.Type == mvccpb.DELETE, Kv: s.kv(ev.Kv)}
				}
			}
			select {
			case <-ctx.Done():
				return
			case out <- r:
			}
			if r.Err != nil {
				return
			}
		}
	}()
	return out
}

// ttlSeconds is a lease's TTL in etcd's whole seconds, rounded up.
func ttlSeconds(ttl time.Duration) int64 {
	return max(1, int64((ttl+time.Second-1)/time.Second))
}

func (s *etcdStore) Grant(ctx context.Context, ttl time.Duration) (LeaseID, error) {
	resp, err := s.cli.Grant(ctx, ttlSeconds(ttl))
	if err != nil {
		return 0, fmt.Errorf("grant lease: %w", err)
	}
	return LeaseID(resp.ID), nil
}

func leaseErr(err error) error {
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("%w: %w", ErrLeaseNotFound, err)
	}
	return err
}

func (s *etcdStore) KeepAlive(ctx context.Context, id LeaseID) (<-chan struct{}, error) {
	ka, err := s.cli.KeepAlive(ctx, clientv3.LeaseID(id))
	if err != nil {
		return nil, fmt.Errorf("keep lease %x alive: %w", int64(id), leaseErr(err))
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		for {
			// The client closes ka when ctx ends; selecting on ctx too
			// keeps this loop from depending on that.
			select {
			case <-ctx.Done():
				return
			case _, ok := <-ka:
				if !ok {
					return
				}
				select {
				case out <- struct{}{}:
				default: // renewals coalesce
				}
			}
		}
	}()
	return out, nil
}

func (s *etcdStore) KeepAliveOnce(ctx context.Context, id LeaseID) error {
	if _, err := s.cli.KeepAliveOnce(ctx, clientv3.LeaseID(id)); err != nil {
		return fmt.Errorf("renew lease %x: %w", int64(id), leaseErr(err))
	}
	return nil
}

func (s *etcdStore) Revoke(ctx context.Context, id LeaseID) error {
	if _, err := s.cli.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
		return fmt.Errorf("revoke lease %x: %w", int64(id), leaseErr(err))
	}
	return nil
}

func (s *etcdStore) Campaign(ctx context.Context, election, value string, ttl time.Duration) (Leadership, error) {
	// The lease is granted with the caller's context, so a campaign
	// against an unreachable etcd ends with ctx. The session then lives
	// on a context of its own, which only Resign (or a failed campaign)
	// ends: ctx bounds the wait, not the holding.
	lease, err := s.cli.Grant(ctx, ttlSeconds(ttl))
	if err != nil {
		return nil, fmt.Errorf("election %s: session: %w", election, err)
	}
	sctx, stop := context.WithCancel(context.Background())
	sess, err := concurrency.NewSession(s.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(ttlSeconds(ttl))), concurrency.WithContext(sctx))
	if err != nil {
		stop()
		revokeCtx, cancel := context.WithTimeout(context.Background(), ttl)
		_, _ = s.cli.Revoke(revokeCtx, lease.ID)
		cancel()
		return nil, fmt.Errorf("election %s: session: %w", election, err)
	}
	// fail ends the candidacy. The session's renewals stop first, and
	// the lease is revoked only while the caller's context lives: with
	// etcd gone (a node shutting down) the revoke must not hold the
	// caller, and the lease lapses after its TTL instead.
	fail := func(err error) (Leadership, error) {
		stop()
		if ctx.Err() == nil {
			_, _ = s.cli.Revoke(ctx, lease.ID)
		}
		return nil, fmt.Errorf("election %s: campaign: %w", election, err)
	}
	el := concurrency.NewElection(sess, s.key(election))
	if err := el.Campaign(ctx, value); err != nil {
		return fail(err)
	}
	// etcd's Campaign waits only for the candidates ahead of this one
	// to go; it never checks that this one's own key survived the wait.
	// A session lost meanwhile (its lease expired) would return a
	// holding of nothing.
	own, err := s.cli.Get(ctx, el.Key())
	if err != nil {
		return fail(err)
	}
	if len(own.Kvs) == 0 || own.Kvs[0].CreateRevision != el.Rev() {
		return fail(fmt.Errorf("session lost while waiting: %w", ErrLeaseNotFound))
	}
	return &etcdLeadership{
		cli:   s.cli,
		sess:  sess,
		el:    el,
		stop:  stop,
		fence: CreatedAt(strings.TrimPrefix(el.Key(), s.prefix), el.Rev()),
	}, nil
}

type etcdLeadership struct {
	cli   *clientv3.Client
	sess  *concurrency.Session
	el    *concurrency.Election
	stop  context.CancelFunc // ends the session's context
	fence Cond

	resigned atomic.Bool
}

func (l *etcdLeadership) Fence() Cond           { return l.fence }
func (l *etcdLeadership) Done() <-chan struct{} { return l.sess.Done() }

func (l *etcdLeadership) Resign(ctx context.Context) error {
	if l.resigned.Swap(true) {
		return fmt.Errorf("resign: session already closed: %w", ErrLeaseNotFound)
	}
	err := l.el.Resign(ctx)
	// Ending the session's context stops the renewals; the lease is then
	// revoked under the caller's context, so that Resign returns by ctx's
	// end whatever etcd does (with etcd gone, the lease lapses after its
	// TTL instead).
	l.stop()
	if _, rerr := l.cli.Revoke(ctx, l.sess.Lease()); rerr != nil {
		err = errors.Join(err, fmt.Errorf("revoke session lease: %w", leaseErr(rerr)))
	}
	return err
}

func (s *etcdStore) Leader(ctx context.Context, election string) (string, bool, error) {
	// concurrency.Election keys its candidates under election + "/",
	// and the first created holds it.
	resp, err := s.cli.Get(ctx, s.key(election)+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", false, fmt.Errorf("election %s: leader: %w", election, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	return string(resp.Kvs[0].Value), true, nil
}
