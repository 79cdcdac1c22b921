package partition

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ru"
	"github.com/cosmosd/cosmosd/storage"
)

// Replica is this node's copy of one physical partition: its state machine
// and its handle on the partition's consensus group. Safe for concurrent use.
type Replica struct {
	sm       *StateMachine
	group    consensus.Group
	engine   *storage.Engine
	throttle *throttle
	// throughput reports the table's provisioned RU/s and its partition
	// count; nil means unlimited.
	throughput ThroughputFunc
	// maxMutation bounds an encoded write command (StoreConfig).
	maxMutation int
}

// share is the RU/s this partition may serve (0 = unlimited).
func (r *Replica) share() float64 {
	if r.throughput == nil {
		return 0
	}
	rus, parts := r.throughput(r.Descriptor().GetTableId())
	if rus <= 0 || parts <= 0 {
		return 0
	}
	return rus / float64(parts)
}

// ID returns the partition id.
func (r *Replica) ID() uint64 { return r.sm.id }

// Descriptor returns the replica's current descriptor (do not modify).
func (r *Replica) Descriptor() *kvpb.Descriptor { return r.sm.Descriptor() }

// Group returns the consensus group.
func (r *Replica) Group() consensus.Group { return r.group }

// Write proposes a write and returns its outcome once applied here. A
// write over the partition's throughput share is refused before it is
// proposed (OVERLOADED with a retry hint): it has no effect at all.
func (r *Replica) Write(ctx context.Context, req *kvpb.WriteRequest) (*kvpb.WriteResponse, error) {
	var cost float64
	if !req.GetTruncate() {
		var size int64
		for _, m := range req.GetMutations() {
			size += int64(proto.Size(m))
		}
		cost = ru.Write(size, len(req.GetConditions()) > 0)
		now := time.Now()
		if wait, ok := r.throttle.admit(now, r.share(), cost); !ok {
			return nil, overloaded(r.ID(), r.share(), wait)
		}
	}
	cmd, err := proto.Marshal(&kvpb.Command{Cmd: &kvpb.Command_Write{Write: req}})
	if err != nil {
		return nil, fmt.Errorf("partition %d: encode write: %w", r.ID(), err)
	}
	if r.maxMutation > 0 && len(cmd) > r.maxMutation {
		// The executor refuses these before routing; this guards forwarded
		// requests: one raft entry must fit in one internode message.
		return nil, Errorf(kvpb.Error_INVALID, "mutation of %d bytes exceeds the maximum of %d bytes (max_mutation_bytes)", len(cmd), r.maxMutation)
	}
	v, err := r.group.Propose(ctx, cmd)
	if err != nil {
		return nil, r.translate(ctx, err)
	}
	resp, ok := v.(*kvpb.WriteResponse)
	if !ok {
		return nil, fmt.Errorf("partition %d: write returned %T", r.ID(), v)
	}
	resp.RequestUnits = cost
	if muts := req.GetMutations(); len(muts) > 0 {
		// Admission took the whole cost from the bucket; charging only
		// feeds the meters, spread over the logical partitions written.
		per := cost / float64(len(muts))
		now := time.Now()
		for _, m := range muts {
			r.throttle.charge(now, per, per, m.GetToken(), m.GetPk())
		}
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
	lin := req.GetLinearizable()
	st := r.group.Status()
	if st.Err != nil {
		// A replica that stopped on a failure is frozen at some index and
		// may be missing writes: not even a read at ONE may see it.
		return nil, Errorf(kvpb.Error_NOT_FOUND, "partition %d: replica failed: %v", r.ID(), st.Err)
	}
	if lin {
		if st.Leader != 0 && !st.IsLeader() {
			// A linearizable read is the leader's: a follower would ask it
			// for a read index anyway (one more hop), and would keep
			// waiting on a leader that lost its quorum while the leader
			// itself refuses at once. The router follows the hint.
			return nil, r.translate(ctx, &consensus.NotLeaderError{Group: st.ID, Leader: st.Leader, LeaderNode: st.LeaderNode})
		}
	}
	admitted := ru.Read(0, 1, lin)
	if wait, ok := r.throttle.admit(time.Now(), r.share(), admitted); !ok {
		return nil, overloaded(r.ID(), r.share(), wait)
	}
	if lin {
		if err := r.group.ReadIndex(ctx); err != nil {
			return nil, r.translate(ctx, err)
		}
	}
	snap := r.engine.NewSnapshot()
	defer snap.Close()
	resp, err := Read(snap, r.sm.Descriptor(), req)
	if err != nil {
		return nil, err
	}
	resp.RequestUnits = ru.Read(resp.GetBytesRead(), resp.GetRowsScanned(), lin)
	var token int64
	var pk []byte
	if keys := req.GetKeys(); len(keys) == 1 {
		token, pk = keys[0].GetToken(), keys[0].GetPk()
	}
	r.throttle.charge(time.Now(), admitted, resp.RequestUnits, token, pk)
	return resp, nil
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
	case errors.Is(err, consensus.ErrAmbiguous):
		// Checked before ErrStopped: a command in flight when its group
		// stopped may still commit, so it must not be retried elsewhere.
		return Errorf(kvpb.Error_TIMEOUT, "partition %d: outcome unknown: %v", r.ID(), err)
	case errors.Is(err, consensus.ErrNoQuorum):
		return Errorf(kvpb.Error_UNAVAILABLE, "partition %d lacks a quorum of replicas: %v", r.ID(), err)
	case errors.Is(err, consensus.ErrStopped), errors.Is(err, consensus.ErrGroupNotFound):
		return Errorf(kvpb.Error_NOT_FOUND, "partition %d: replica stopped: %v", r.ID(), err)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return Errorf(kvpb.Error_TIMEOUT, "partition %d: no quorum answered in time: %v", r.ID(), err)
	}
	return fmt.Errorf("partition %d: %w", r.ID(), err)
}
