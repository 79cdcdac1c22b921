package metakv

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// EtcdClientConfig configures the connection to the etcd cluster that holds
// the metadata.
type EtcdClientConfig struct {
	Endpoints []string
	// Prefix namespaces every metadata key. Required.
	Prefix string
	// DialOptions are added to the client's gRPC dial options: the
	// daemon's transport credentials (TLS) and their probes.
	DialOptions []grpc.DialOption
}

// EtcdClient is a connection to etcd and the metadata store over it. It is
// the only place outside tests where cosmosd holds an etcd client.
type EtcdClient struct {
	cli    *clientv3.Client
	kv     Store
	cancel context.CancelFunc
}

// DialEtcd connects to etcd and returns the metadata store under
// cfg.Prefix. It does not wait for an answer (Ping does).
func DialEtcd(cfg EtcdClientConfig) (*EtcdClient, error) {
	if cfg.Prefix == "" {
		return nil, errors.New("etcd client: a key prefix is required")
	}
	// The client's own context (client.Ctx()) is what etcd's client
	// library uses for calls it makes without a caller's context:
	// Election.Campaign resigns with it when its context ends, so with
	// etcd gone a campaigning controller waited for it forever
	// (reliability issue: SIGTERM hung). CancelPending cancels it.
	ctx, cancel := context.WithCancel(context.Background())
	// Keepalives find a connection to a member that vanished (host down,
	// network cut) within seconds. Without them the client keeps using
	// the silent connection until TCP gives up: a node cut off from the
	// network for a minute could not register, watch or run DDL for
	// about another minute after the network came back (test/e2e,
	// disconnect scenario). 5s is the etcd server's default minimum ping
	// interval.
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: 5 * time.Second,
		DialKeepAliveTime: 5 * time.Second, DialKeepAliveTimeout: 3 * time.Second, Logger: zap.NewNop(), Context: ctx,
		DialOptions: cfg.DialOptions})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return &EtcdClient{cli: cli, kv: NewEtcd(cli, cfg.Prefix), cancel: cancel}, nil
}

// Store returns the metadata store.
func (c *EtcdClient) Store() Store { return c.kv }

// Endpoints returns the etcd endpoints.
func (c *EtcdClient) Endpoints() []string { return c.cli.Endpoints() }

// Ping makes one serializable read: any member answers, with or without a
// leader, so it tells "etcd answers" (a connection works) apart from
// "etcd has quorum".
func (c *EtcdClient) Ping(ctx context.Context) error {
	_, err := c.cli.Get(ctx, "\x00ping", clientv3.WithSerializable(), clientv3.WithCountOnly())
	return err
}

// CancelPending ends the calls the client makes on its own context; see
// DialEtcd. The client stays usable for calls with their own context.
func (c *EtcdClient) CancelPending() { c.cancel() }

// Close closes the connection.
func (c *EtcdClient) Close() error {
	c.cancel()
	return c.cli.Close()
}

// MemberStatus is what one etcd member says of itself.
type MemberStatus struct {
	// ID is the member's id; Leader the id of the leader it follows (0
	// when it knows none).
	ID, Leader uint64
}

// MemberStatus asks the member at endpoint (host:port) for its status, for
// tools and tests that watch etcd itself (which member leads, whether one
// serves).
func (c *EtcdClient) MemberStatus(ctx context.Context, endpoint string) (MemberStatus, error) {
	st, err := c.cli.Status(ctx, endpoint)
	if err != nil {
		return MemberStatus{}, fmt.Errorf("status of etcd member %s: %w", endpoint, err)
	}
	return MemberStatus{ID: st.Header.GetMemberId(), Leader: st.Leader}, nil
}
