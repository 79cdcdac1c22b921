package router

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// Server serves the internal service: the requests other nodes' routers
// send to this node's replicas. It runs them through the same localNode a
// router on this node uses in process, and returns a partition's refusal
// inside the response (kvpb.Error), not as a gRPC status: a status means
// the transport failed, and the calling router treats the two
// differently (see the package documentation). The Forward stream is in
// forward.go.
type Server struct {
	kvpb.UnimplementedInternalServer
	local *localNode
}

// NewServer returns the internal service over a node's store.
func NewServer(store *partition.Store) *Server { return &Server{local: newLocalNode(store)} }

// Ping implements kvpb.InternalServer.
func (s *Server) Ping(context.Context, *kvpb.PingRequest) (*kvpb.PingResponse, error) {
	return &kvpb.PingResponse{}, nil
}

// Write implements kvpb.InternalServer.
func (s *Server) Write(ctx context.Context, req *kvpb.WriteRequest) (*kvpb.WriteResponse, error) {
	resp, _, err := s.local.write(ctx, req)
	if err != nil {
		return &kvpb.WriteResponse{Error: partition.AsPB(err)}, nil
	}
	return resp, nil
}

// Read implements kvpb.InternalServer.
func (s *Server) Read(ctx context.Context, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	resp, _, err := s.local.read(ctx, req)
	if err != nil {
		return &kvpb.ReadResponse{Error: partition.AsPB(err)}, nil
	}
	return resp, nil
}

// ReplicaStatus implements kvpb.InternalServer.
func (s *Server) ReplicaStatus(ctx context.Context, req *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error) {
	resp, err := s.local.replicaStatus(ctx, req)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "replica status: %v", err)
	}
	return resp, nil
}

// ChangeReplicas implements kvpb.InternalServer.
func (s *Server) ChangeReplicas(ctx context.Context, req *kvpb.ChangeReplicasRequest) (*kvpb.ChangeReplicasResponse, error) {
	d, err := s.local.changeReplicas(ctx, req.GetPartitionId(), req.GetChanges())
	if err != nil {
		return &kvpb.ChangeReplicasResponse{Error: partition.AsPB(err)}, nil
	}
	return &kvpb.ChangeReplicasResponse{Desc: d}, nil
}

// TransferLeader implements kvpb.InternalServer.
func (s *Server) TransferLeader(ctx context.Context, req *kvpb.TransferLeaderRequest) (*kvpb.TransferLeaderResponse, error) {
	if err := s.local.transferLeader(ctx, req.GetPartitionId(), consensus.NodeID(req.GetTargetNode())); err != nil {
		return &kvpb.TransferLeaderResponse{Error: partition.AsPB(err)}, nil
	}
	return &kvpb.TransferLeaderResponse{}, nil
}

// Split implements kvpb.InternalServer.
func (s *Server) Split(ctx context.Context, req *kvpb.SplitRequest) (*kvpb.SplitResponse, error) {
	l, r, err := s.local.split(ctx, req)
	if err != nil {
		return &kvpb.SplitResponse{Error: partition.AsPB(err)}, nil
	}
	return &kvpb.SplitResponse{Left: l, Right: r}, nil
}

// PartitionDetail implements kvpb.InternalServer.
func (s *Server) PartitionDetail(ctx context.Context, req *kvpb.PartitionDetailRequest) (*kvpb.PartitionDetailResponse, error) {
	resp, err := s.local.partitionDetail(ctx, req.GetPartitionId(), int(req.GetTop()))
	if err != nil {
		return &kvpb.PartitionDetailResponse{Error: partition.AsPB(err)}, nil
	}
	return resp, nil
}
