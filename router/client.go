package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// Config configures a Router.
type Config struct {
	NodeID consensus.NodeID
	Store  *partition.Store
	Meta   *cluster.Meta
	// DialOptions for internal gRPC connections; default insecure (TLS is
	// a configuration option of the daemon).
	DialOptions []grpc.DialOption
	// MaxMessageBytes bounds one forwarded request or response on the wire;
	// it must match the peer server's receive limit (the daemon uses its
	// max frame size plus 1 MiB). Default 64 MiB; gRPC's own default of
	// 4 MiB would fail forwarded reads of large rows.
	MaxMessageBytes int
	// Liveness, when set, tells for how long a node that leads partitions
	// followed on this node has been silent (known=false when it leads
	// none here); the raft engine's LeaderSilence. It lets the router
	// route around a paused or cut-off leader within a fraction of an
	// election timeout instead of waiting on its open connection.
	Liveness func(node consensus.NodeID) (silence time.Duration, known bool)
	// SilentAfter is the silence after which Liveness marks a node
	// suspect. Default 500ms (five heartbeats).
	SilentAfter time.Duration
	// ProbeInterval is how often the router pings each node it has a
	// connection to; a node that answers none for three intervals is
	// suspect. Default 250ms; negative disables the probe.
	ProbeInterval time.Duration
	Logger        *slog.Logger
}

// metaView is what the router reads of the cluster metadata: the routing
// copy of the rings and the node registrations, and a signal when they
// change. *cluster.Meta is the production implementation; tests publish
// states of their own without etcd.
type metaView interface {
	State() *cluster.State
	Subscribe() (<-chan struct{}, func())
}

// Router routes requests to partitions. Safe for concurrent use.
type Router struct {
	cfg   Config
	meta  metaView
	local *localNode // this node's store, in process
	pool  *pool      // connections to the other nodes

	leaders sync.Map // partition id → consensus.NodeID hint
	// suspects maps nodes that failed to answer in time (or went silent)
	// to the time until which they are tried last (time.Time).
	suspects sync.Map

	ctx    context.Context // canceled by Close: stops the prober and the Forward streams
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a router.
func New(cfg Config) *Router { return newRouter(cfg, cfg.Meta) }

// newRouter returns a router that reads the cluster metadata from meta.
func newRouter(cfg Config, meta metaView) *Router {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.DialOptions) == 0 {
		cfg.DialOptions = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 64 << 20
	}
	if cfg.SilentAfter <= 0 {
		cfg.SilentAfter = 500 * time.Millisecond
	}
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = 250 * time.Millisecond
	}
	// Keepalives find a dead or cut-off peer within seconds instead of
	// leaving requests on a silent connection until TCP gives up.
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithKeepaliveParams(KeepaliveParams), grpc.WithConnectParams(ConnectParams),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cfg.MaxMessageBytes), grpc.MaxCallSendMsgSize(cfg.MaxMessageBytes)))
	r := &Router{cfg: cfg, meta: meta, local: &localNode{node: cfg.NodeID, store: cfg.Store}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.pool = newPool(r.ctx, cfg.DialOptions)
	if cfg.ProbeInterval > 0 {
		r.wg.Go(r.probe)
	}
	return r
}

// Close stops the prober and closes the connections; requests still
// running fail, and later ones to other nodes are not sent. Safe to call
// twice.
func (r *Router) Close() {
	r.cancel()
	r.wg.Wait()
	r.pool.close()
}

// Errors the router returns, matched with errors.Is.
var (
	// ErrNoPartition: the table has no partition for the token (the table
	// was dropped, or its ring is not yet visible).
	ErrNoPartition = errors.New("router: no partition holds the token")
)

// Target says where a request goes.
type Target struct {
	Table uint64
	Token int64
	// Partition, when non-zero, addresses a partition directly (scans);
	// Token is then ignored.
	Partition uint64
	// Leader requires the leader (writes, linearizable reads).
	Leader bool
}

// lookup finds the partition a target names in the routing copy.
func (r *Router) lookup(t Target) (*kvpb.Descriptor, error) {
	st := r.meta.State()
	if t.Partition != 0 {
		if d := st.Partition(t.Partition); d != nil {
			return d, nil
		}
		return nil, fmt.Errorf("%w: partition %d is gone", ErrNoPartition, t.Partition)
	}
	d := st.Ring(t.Table).Lookup(t.Token)
	if d == nil {
		return nil, fmt.Errorf("%w: table %d token %d", ErrNoPartition, t.Table, t.Token)
	}
	return d, nil
}

// Write sends a write to the leader of the partition holding t.Token (or
// t.Partition) and fills in the request's partition id and generation.
func (r *Router) Write(ctx context.Context, t Target, req *kvpb.WriteRequest) (*kvpb.WriteResponse, error) {
	t.Leader = true
	var resp *kvpb.WriteResponse
	err := r.do(ctx, t, false, func(ctx context.Context, node consensus.NodeID, desc *kvpb.Descriptor) (bool, error) {
		req.PartitionId, req.Generation, req.TableId = desc.GetId(), desc.GetGeneration(), desc.GetTableId()
		cl, err := r.client(node)
		if err != nil {
			return false, err
		}
		var sent bool
		resp, sent, err = cl.write(ctx, req)
		return sent, err
	})
	return resp, err
}

// Read sends a read to the partition's leader (t.Leader or a linearizable
// request) or to any replica, preferring this node.
func (r *Router) Read(ctx context.Context, t Target, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	t.Leader = t.Leader || req.GetLinearizable()
	var resp *kvpb.ReadResponse
	err := r.do(ctx, t, true, func(ctx context.Context, node consensus.NodeID, desc *kvpb.Descriptor) (bool, error) {
		req.PartitionId, req.Generation, req.TableId = desc.GetId(), desc.GetGeneration(), desc.GetTableId()
		cl, err := r.client(node)
		if err != nil {
			return false, err
		}
		var sent bool
		resp, sent, err = cl.read(ctx, req)
		return sent, err
	})
	return resp, err
}

// ReplicaStatus asks a node (this one in process) for its replicas.
func (r *Router) ReplicaStatus(ctx context.Context, node consensus.NodeID, req *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error) {
	cl, err := r.client(node)
	if err != nil {
		return nil, err
	}
	return cl.replicaStatus(ctx, req)
}

// leaderCall runs call on the node that leads partition id, following
// leadership hints; call returns the partition error of the response.
func (r *Router) leaderCall(ctx context.Context, id uint64, call func(ctx context.Context, cl nodeClient) error) error {
	return r.do(ctx, Target{Partition: id, Leader: true}, false, func(ctx context.Context, node consensus.NodeID, _ *kvpb.Descriptor) (bool, error) {
		if node != r.cfg.NodeID && r.meta.State().Nodes[uint64(node)] == nil {
			// Nothing was sent, so another replica may be asked. Without
			// this, a leader hint naming a dead node made every call fail
			// at once (the error looked "sent") and the hint was never
			// replaced: repairs of partitions the dead node led retried
			// forever.
			return false, errUnregistered(node)
		}
		cl, err := r.client(node)
		if err == nil {
			err = call(ctx, cl)
		}
		sent := true
		if err != nil && partition.ErrorCode(err) == kvpb.Error_UNKNOWN {
			sent = sentRPC(err)
		}
		return sent, err
	})
}

// ChangeReplicas asks a partition's leader to change its membership.
func (r *Router) ChangeReplicas(ctx context.Context, id uint64, changes []*kvpb.ReplicaChange) (*kvpb.Descriptor, error) {
	var out *kvpb.Descriptor
	err := r.leaderCall(ctx, id, func(ctx context.Context, cl nodeClient) error {
		var err error
		out, err = cl.changeReplicas(ctx, id, changes)
		return err
	})
	return out, err
}

// TransferLeader asks a partition's leader to hand leadership to target.
func (r *Router) TransferLeader(ctx context.Context, id uint64, target consensus.NodeID) error {
	return r.leaderCall(ctx, id, func(ctx context.Context, cl nodeClient) error {
		return cl.transferLeader(ctx, id, target)
	})
}

// Split asks a partition's leader to split it.
func (r *Router) Split(ctx context.Context, req *kvpb.SplitRequest) (*kvpb.Descriptor, *kvpb.Descriptor, error) {
	var left, right *kvpb.Descriptor
	err := r.leaderCall(ctx, req.GetPartitionId(), func(ctx context.Context, cl nodeClient) error {
		var err error
		left, right, err = cl.split(ctx, req)
		return err
	})
	return left, right, err
}

// PartitionDetail inspects a partition on one of its replicas (the leader
// when reachable, as its data is the most recent).
func (r *Router) PartitionDetail(ctx context.Context, id uint64, top int) (*kvpb.PartitionDetailResponse, error) {
	var out *kvpb.PartitionDetailResponse
	err := r.leaderCall(ctx, id, func(ctx context.Context, cl nodeClient) error {
		var err error
		out, err = cl.partitionDetail(ctx, id, top)
		return err
	})
	return out, err
}
