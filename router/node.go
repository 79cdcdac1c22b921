package router

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// nodeClient calls one node's partition replicas: this node's in process
// (localNode) or another node's over the internal service (remoteNode).
// Every request the router sends goes the same way: pick the node, get its
// client (Router.client), call. A partition's refusal comes back as a
// *partition.Error whichever side it crossed; a transport failure as a
// gRPC status, possibly wrapped. Safe for concurrent use.
type nodeClient interface {
	// write runs a write on the partition's replica. sent reports whether
	// the write may have run: false promises it did not (another replica
	// may take it); true with a transport failure means its outcome is
	// unknown (see inFlight).
	write(ctx context.Context, req *kvpb.WriteRequest) (resp *kvpb.WriteResponse, sent bool, err error)
	// read is write's twin for reads. Reads are idempotent, so sent only
	// tells a node that could not be reached (false) from one that
	// answered.
	read(ctx context.Context, req *kvpb.ReadRequest) (resp *kvpb.ReadResponse, sent bool, err error)
	replicaStatus(ctx context.Context, req *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error)
	changeReplicas(ctx context.Context, id uint64, changes []*kvpb.ReplicaChange) (*kvpb.Descriptor, error)
	transferLeader(ctx context.Context, id uint64, target consensus.NodeID) error
	split(ctx context.Context, req *kvpb.SplitRequest) (left, right *kvpb.Descriptor, err error)
	partitionDetail(ctx context.Context, id uint64, top int) (*kvpb.PartitionDetailResponse, error)
}

// client returns the client for node: the local store for this node, the
// pooled connection for another. An error means nothing was sent.
func (r *Router) client(node consensus.NodeID) (nodeClient, error) {
	if node == r.cfg.NodeID {
		return r.local, nil
	}
	c, err := r.pool.get(node, r.meta.State().Nodes[uint64(node)])
	if err != nil {
		return nil, err
	}
	return &remoteNode{r: r, node: node, c: c}, nil
}

// localNode serves requests from this node's partition store, in process:
// no encoding, no connection, no silence detection (a node does not wait
// on itself). The internal Server serves other routers' requests through
// it too, so a request runs the same code whichever router sent it.
type localNode struct {
	node  consensus.NodeID
	store *partition.Store
}

func newLocalNode(store *partition.Store) *localNode {
	var node consensus.NodeID
	if store != nil {
		node = store.NodeID()
	}
	return &localNode{node: node, store: store}
}

// replica returns the partition's replica on this node, or NOT_FOUND (it
// moved away, or has not started here yet).
func (l *localNode) replica(id uint64) (*partition.Replica, error) {
	if rep, ok := l.store.Replica(id); ok {
		return rep, nil
	}
	return nil, partition.Errorf(kvpb.Error_NOT_FOUND, "no replica of partition %d on node %d", id, l.node)
}

func (l *localNode) write(ctx context.Context, req *kvpb.WriteRequest) (*kvpb.WriteResponse, bool, error) {
	rep, err := l.replica(req.GetPartitionId())
	if err != nil {
		return nil, false, err // nothing ran
	}
	resp, err := rep.Write(ctx, req)
	return resp, true, err
}

func (l *localNode) read(ctx context.Context, req *kvpb.ReadRequest) (*kvpb.ReadResponse, bool, error) {
	rep, err := l.replica(req.GetPartitionId())
	if err != nil {
		// This node answered, as a remote one saying NOT_FOUND would: the
		// retry loop counts it among the replicas that said something
		// other than UNAVAILABLE.
		return nil, true, err
	}
	resp, err := rep.Read(ctx, req)
	return resp, true, err
}

func (l *localNode) replicaStatus(_ context.Context, req *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error) {
	return l.store.Status(req.GetPartitionIds(), req.GetStats())
}

func (l *localNode) changeReplicas(ctx context.Context, id uint64, changes []*kvpb.ReplicaChange) (*kvpb.Descriptor, error) {
	rep, err := l.replica(id)
	if err != nil {
		return nil, err
	}
	return rep.ChangeReplicas(ctx, changes)
}

func (l *localNode) transferLeader(ctx context.Context, id uint64, target consensus.NodeID) error {
	rep, err := l.replica(id)
	if err != nil {
		return err
	}
	return rep.TransferLeader(ctx, target)
}

func (l *localNode) split(ctx context.Context, req *kvpb.SplitRequest) (*kvpb.Descriptor, *kvpb.Descriptor, error) {
	rep, err := l.replica(req.GetPartitionId())
	if err != nil {
		return nil, nil, err
	}
	return rep.Split(ctx, req)
}

func (l *localNode) partitionDetail(_ context.Context, id uint64, top int) (*kvpb.PartitionDetailResponse, error) {
	rep, err := l.replica(id)
	if err != nil {
		return nil, err
	}
	return rep.Detail(top)
}

// remoteNode calls another node over the router's pooled connection to
// it: reads and writes on the Forward stream, administrative calls unary.
// The node's answer errors (kvpb.Error in a response) become
// *partition.Error, as a local replica returns them.
type remoteNode struct {
	r    *Router
	node consensus.NodeID
	c    *nodeConn
}

func (n *remoteNode) write(ctx context.Context, req *kvpb.WriteRequest) (*kvpb.WriteResponse, bool, error) {
	if !n.c.ready(ctx, ConnectWait) {
		return nil, false, errNotConnected(n.node, n.c)
	}
	if !n.r.awaitLife(ctx, n.node) {
		n.r.markSuspect(n.node)
		return nil, false, fmt.Errorf("node %d: %w", n.node, status.Error(codes.Unavailable, errStillSilent.Error()))
	}
	resp, sent, err := n.c.forwardWrite(ctx, req)
	if err != nil {
		if !sent {
			// Still queued when the stream broke or the caller gave up:
			// it never left, so another replica may take it.
			return nil, false, fmt.Errorf("node %d: %w", n.node, err)
		}
		// The write may have reached the node and be committed whatever
		// the status says: a connection that breaks mid-call also reports
		// Unavailable. Retrying it elsewhere could apply a list append or
		// counter twice, or answer an LWT that did apply with [applied] =
		// false.
		return nil, true, inFlight(req.GetPartitionId(), n.node, fmt.Errorf("node %d: %w", n.node, err))
	}
	if resp.GetError() != nil {
		return nil, true, partition.FromPB(resp.GetError())
	}
	return resp, true, nil
}

func (n *remoteNode) read(ctx context.Context, req *kvpb.ReadRequest) (*kvpb.ReadResponse, bool, error) {
	if !n.c.ready(ctx, ConnectWait) {
		return nil, false, errNotConnected(n.node, n.c)
	}
	resp, err := n.c.forwardRead(ctx, req)
	if err != nil {
		return nil, true, fmt.Errorf("node %d: %w", n.node, err)
	}
	if resp.GetError() != nil {
		return nil, true, partition.FromPB(resp.GetError())
	}
	return resp, true, nil
}

func (n *remoteNode) replicaStatus(ctx context.Context, req *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error) {
	return n.c.kv.ReplicaStatus(ctx, req)
}

func (n *remoteNode) changeReplicas(ctx context.Context, id uint64, changes []*kvpb.ReplicaChange) (*kvpb.Descriptor, error) {
	resp, err := n.c.kv.ChangeReplicas(ctx, &kvpb.ChangeReplicasRequest{PartitionId: id, Changes: changes})
	if err != nil {
		return nil, err
	}
	return resp.GetDesc(), partition.FromPB(resp.GetError())
}

func (n *remoteNode) transferLeader(ctx context.Context, id uint64, target consensus.NodeID) error {
	resp, err := n.c.kv.TransferLeader(ctx, &kvpb.TransferLeaderRequest{PartitionId: id, TargetNode: uint64(target)})
	if err != nil {
		return err
	}
	return partition.FromPB(resp.GetError())
}

func (n *remoteNode) split(ctx context.Context, req *kvpb.SplitRequest) (*kvpb.Descriptor, *kvpb.Descriptor, error) {
	resp, err := n.c.kv.Split(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	return resp.GetLeft(), resp.GetRight(), partition.FromPB(resp.GetError())
}

func (n *remoteNode) partitionDetail(ctx context.Context, id uint64, top int) (*kvpb.PartitionDetailResponse, error) {
	resp, err := n.c.kv.PartitionDetail(ctx, &kvpb.PartitionDetailRequest{PartitionId: id, Top: uint32(top)})
	if err != nil {
		return nil, err
	}
	return resp, partition.FromPB(resp.GetError())
}
