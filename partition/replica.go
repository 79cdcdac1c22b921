package partition

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// Replica is this node's copy of one physical partition: its state machine
// and its handle on the partition's consensus group. Safe for concurrent use.
type Replica struct {
	sm     *StateMachine
	group  consensus.Group
	engine *storage.Engine
}

// ID returns the partition id.
func (r *Replica) ID() uint64 { return r.sm.id }

// Descriptor returns the replica's current descriptor (do not modify).
func (r *Replica) Descriptor() *kvpb.Descriptor { return r.sm.Descriptor() }

// Group returns the consensus group.
func (r *Replica) Group() consensus.Group { return r.group }

// Write proposes a write and returns its outcome once applied here.
func (r *Replica) Write(ctx context.Context, req *kvpb.WriteRequest) (*kvpb.WriteResponse, error) {
	cmd, err := proto.Marshal(&kvpb.Command{Cmd: &kvpb.Command_Write{Write: req}})
	if err != nil {
		return nil, fmt.Errorf("partition %d: encode write: %w", r.ID(), err)
	}
	v, err := r.group.Propose(ctx, cmd)
	if err != nil {
		return nil, r.translate(ctx, err)
	}
	resp, ok := v.(*kvpb.WriteResponse)
	if !ok {
		return nil, fmt.Errorf("partition %d: write returned %T", r.ID(), v)
	}
	return resp, nil
}

// Propose proposes an arbitrary command (split, truncate) and returns the
// state machine's result value.
func (r *Replica) Propose(ctx context.Context, cmd *kvpb.Command) (any, error) {
	raw, err := proto.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("partition %d: encode command: %w", r.ID(), err)
	}
	v, err := r.group.Propose(ctx, raw)
	if err != nil {
		return nil, r.translate(ctx, err)
	}
	return v, nil
}

// Read serves a read from this replica; linearizable reads first wait for a
// read index.
func (r *Replica) Read(ctx context.Context, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	if req.GetLinearizable() {
		if err := r.group.ReadIndex(ctx); err != nil {
			return nil, r.translate(ctx, err)
		}
	}
	snap := r.engine.NewSnapshot()
	defer snap.Close()
	return Read(snap, r.sm.Descriptor(), req)
}

// translate maps consensus failures to the partition error codes the router
// acts on; deterministic rejections pass through.
func (r *Replica) translate(ctx context.Context, err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return err
	}
	var nl *consensus.NotLeaderError
	switch {
	case errors.As(err, &nl):
		e := Errorf(kvpb.Error_NOT_LEADER, "partition %d: %v", r.ID(), err)
		e.PB.LeaderNode = uint64(nl.LeaderNode)
		return e
	case errors.Is(err, consensus.ErrNoQuorum):
		return Errorf(kvpb.Error_UNAVAILABLE, "partition %d lacks a quorum of replicas: %v", r.ID(), err)
	case errors.Is(err, consensus.ErrStopped), errors.Is(err, consensus.ErrGroupNotFound):
		return Errorf(kvpb.Error_NOT_FOUND, "partition %d: replica stopped: %v", r.ID(), err)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return Errorf(kvpb.Error_TIMEOUT, "partition %d: no quorum answered in time: %v", r.ID(), err)
	}
	return fmt.Errorf("partition %d: %w", r.ID(), err)
}
