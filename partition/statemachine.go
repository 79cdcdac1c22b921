package partition

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// StateMachine applies a physical partition's log to the node's store. It
// implements consensus.StateMachine.
type StateMachine struct {
	engine *storage.Engine
	id     uint64
	logger *slog.Logger
	// hooks lets the store react to descriptor changes (splits start the
	// right-hand replica); nil in tests of the state machine alone.
	hooks Hooks

	// desc is written only by the apply goroutine and read by anyone.
	desc atomic.Pointer[kvpb.Descriptor]
	// splits are the splits of the Applies since the last PostApply whose
	// right half this replica created, started by PostApply once their
	// batches are durable (apply goroutine only).
	splits [][2]*kvpb.Descriptor
}

// Hooks are callbacks the state machine makes on the apply goroutine. A
// split has two phases (doc.go, "Splits"), as in CockroachDB
// (splitPreApply/splitPostApply): InitSplit writes the right half's local
// state into the split's own batch, and OnSplit starts it once that batch
// is durable.
type Hooks interface {
	// InitSplit writes into b, the batch that applies a split, the
	// consensus state of the right half's local replica, so that a crash
	// of every replica right after the split still leaves a right half
	// that can elect a leader. It reports false, writing nothing, when
	// the right half already has a replica here (one that joined it from
	// a snapshot before this replica applied the split): that replica's
	// state must not be touched.
	InitSplit(b *storage.Batch, right *kvpb.Descriptor) (bool, error)
	// OnSplit is called once the batch that applied a split into left
	// (this partition) and right is durable, for right halves InitSplit
	// created. It must not block on the consensus engine.
	OnSplit(left, right *kvpb.Descriptor)
}

var (
	_ consensus.StateMachine = (*StateMachine)(nil)
	_ consensus.PostApplier  = (*StateMachine)(nil)
)

// NewStateMachine returns the state machine of partition id. desc is the
// initial descriptor for a replica that bootstraps the partition; a replica
// that recovers from disk or joins by snapshot passes nil and gets its
// descriptor from storage or the snapshot.
func NewStateMachine(engine *storage.Engine, id uint64, desc *kvpb.Descriptor, hooks Hooks, logger *slog.Logger) (*StateMachine, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sm := &StateMachine{engine: engine, id: id, logger: logger, hooks: hooks}
	stored, err := LoadDescriptor(engine, id)
	if err != nil {
		return nil, err
	}
	switch {
	case stored != nil:
		sm.desc.Store(stored)
	case desc != nil:
		if desc.GetId() != id {
			return nil, fmt.Errorf("partition %d: descriptor is for partition %d", id, desc.GetId())
		}
		sm.desc.Store(proto.Clone(desc).(*kvpb.Descriptor))
	default:
		// Joining replica: an empty range until the snapshot arrives, so
		// it serves nothing.
		sm.desc.Store(&kvpb.Descriptor{Id: id, Start: 1, End: 0})
	}
	return sm, nil
}

// LoadDescriptor reads the persisted descriptor of partition id, nil if none.
func LoadDescriptor(r storage.Reader, id uint64) (*kvpb.Descriptor, error) {
	raw, ok, err := r.Get(storage.ReplicaStateKey(id))
	if err != nil || !ok {
		return nil, err
	}
	d := &kvpb.Descriptor{}
	if err := proto.Unmarshal(raw, d); err != nil {
		return nil, fmt.Errorf("partition %d: decode descriptor: %w", id, err)
	}
	return d, nil
}

// Descriptor returns the current descriptor. Callers must not modify it.
func (sm *StateMachine) Descriptor() *kvpb.Descriptor { return sm.desc.Load() }

// HasRange reports whether the descriptor covers a token range (a joining
// replica's does not until its snapshot is installed).
func HasRange(d *kvpb.Descriptor) bool { return d.GetStart() <= d.GetEnd() }

func (sm *StateMachine) setDescriptor(b *storage.Batch, d *kvpb.Descriptor) error {
	raw, err := proto.Marshal(d)
	if err != nil {
		return err
	}
	if err := b.Set(storage.ReplicaStateKey(sm.id), raw); err != nil {
		return err
	}
	sm.desc.Store(d)
	return nil
}

// Apply implements consensus.StateMachine.
func (sm *StateMachine) Apply(b *storage.Batch, entries []consensus.Entry) ([]consensus.Result, error) {
	results := make([]consensus.Result, len(entries))
	for i, e := range entries {
		switch e.Type {
		case consensus.EntryEmpty:
		case consensus.EntryMembership:
			if err := sm.applyMembership(b, e.Members); err != nil {
				return nil, fmt.Errorf("partition %d: apply membership at %d: %w", sm.id, e.Index, err)
			}
		case consensus.EntryCommand:
			cmd := &kvpb.Command{}
			if err := proto.Unmarshal(e.Data, cmd); err != nil {
				// Every replica fails to decode the same bytes: reject.
				results[i].Err = Errorf(kvpb.Error_INVALID, "undecodable command at index %d: %v", e.Index, err)
				continue
			}
			var err error
			switch c := cmd.Cmd.(type) {
			case *kvpb.Command_Write:
				results[i], err = sm.applyWrite(b, c.Write)
			case *kvpb.Command_Truncate:
				results[i], err = sm.applyTruncate(b)
			case *kvpb.Command_Split:
				results[i], err = sm.applySplit(b, c.Split)
			default:
				results[i].Err = Errorf(kvpb.Error_INVALID, "unknown command at index %d", e.Index)
			}
			if err != nil {
				return nil, fmt.Errorf("partition %d: apply index %d: %w", sm.id, e.Index, err)
			}
		}
	}
	return results, nil
}

// PostApplyPending implements consensus.PostApplier.
func (sm *StateMachine) PostApplyPending() bool { return len(sm.splits) > 0 }

// PostApply implements consensus.PostApplier: the batches of the Applies
// so far are durable, so the right halves they created may start.
func (sm *StateMachine) PostApply() {
	for _, s := range sm.splits {
		if sm.hooks != nil {
			sm.hooks.OnSplit(s[0], s[1])
		}
	}
	clear(sm.splits)
	sm.splits = sm.splits[:0]
}

// applyMembership records the group's configuration in the descriptor.
func (sm *StateMachine) applyMembership(b *storage.Batch, members []consensus.Replica) error {
	d := proto.Clone(sm.desc.Load()).(*kvpb.Descriptor)
	d.Replicas = d.Replicas[:0]
	for _, m := range members {
		d.Replicas = append(d.Replicas, &kvpb.ReplicaDescriptor{NodeId: uint64(m.NodeID), ReplicaId: uint64(m.ReplicaID), Learner: m.Learner})
		if uint64(m.ReplicaID) >= d.NextReplicaId {
			d.NextReplicaId = uint64(m.ReplicaID) + 1
		}
	}
	d.Generation++
	return sm.setDescriptor(b, d)
}

// applyTruncate deletes every row and stat of the partition's range.
func (sm *StateMachine) applyTruncate(b *storage.Batch) (consensus.Result, error) {
	d := sm.desc.Load()
	if !HasRange(d) {
		return consensus.Result{Value: &kvpb.WriteResponse{Applied: true}}, nil
	}
	if err := b.DeleteSpan(storage.RowsSpan(d.TableId, d.Start, d.End)); err != nil {
		return consensus.Result{}, err
	}
	if err := b.DeleteSpan(storage.StatsSpan(d.TableId, d.Start, d.End)); err != nil {
		return consensus.Result{}, err
	}
	return consensus.Result{Value: &kvpb.WriteResponse{Applied: true}}, nil
}

// applySplit shrinks this partition to left and creates right's local
// replica in the same batch (see Hooks).
func (sm *StateMachine) applySplit(b *storage.Batch, s *kvpb.SplitCommand) (consensus.Result, error) {
	d := sm.desc.Load()
	l, r := s.GetLeft(), s.GetRight()
	if l.GetId() != d.GetId() || l.GetStart() != d.GetStart() || r.GetEnd() != d.GetEnd() ||
		l.GetEnd()+1 != r.GetStart() || l.GetStart() > l.GetEnd() || r.GetStart() > r.GetEnd() ||
		l.GetTableId() != d.GetTableId() || r.GetTableId() != d.GetTableId() || r.GetId() == d.GetId() {
		return consensus.Result{Err: Errorf(kvpb.Error_RANGE_MISMATCH,
			"split of partition %d [%d, %d] into [%d, %d] and [%d, %d] does not match its range",
			d.GetId(), d.GetStart(), d.GetEnd(), l.GetStart(), l.GetEnd(), r.GetStart(), r.GetEnd())}, nil
	}
	left := proto.Clone(l).(*kvpb.Descriptor)
	left.Replicas, left.NextReplicaId = d.Replicas, d.NextReplicaId
	left.Generation = max(d.Generation, l.Generation) + 1
	if err := sm.setDescriptor(b, left); err != nil {
		return consensus.Result{}, err
	}
	right := proto.Clone(r).(*kvpb.Descriptor)
	right.Replicas, right.NextReplicaId = d.Replicas, d.NextReplicaId
	right.Generation = left.Generation
	s.Left, s.Right = left, right
	// The right half's descriptor and consensus state go into this batch:
	// a crash after the split recovers both halves, and the right half can
	// elect a leader even if every replica crashed at once.
	created := true
	if sm.hooks != nil {
		var err error
		if created, err = sm.hooks.InitSplit(b, right); err != nil {
			return consensus.Result{}, fmt.Errorf("init right half %d: %w", right.GetId(), err)
		}
	}
	if created {
		raw, err := proto.Marshal(right)
		if err != nil {
			return consensus.Result{}, err
		}
		if err := b.Set(storage.ReplicaStateKey(right.Id), raw); err != nil {
			return consensus.Result{}, err
		}
		sm.splits = append(sm.splits, [2]*kvpb.Descriptor{left, right})
	} else {
		sm.logger.Info("right half of split already has a replica here", "partition", right.GetId(), "parent", sm.id)
	}
	return consensus.Result{Value: s}, nil
}

// snapshotMeta is what a snapshot carries besides data: the descriptor.
// SnapshotMeta implements consensus.StateMachine.
func (sm *StateMachine) SnapshotMeta() ([]byte, []storage.Span, error) {
	d := sm.desc.Load()
	raw, err := proto.Marshal(d)
	if err != nil {
		return nil, nil, err
	}
	return raw, dataSpans(d), nil
}

func dataSpans(d *kvpb.Descriptor) []storage.Span {
	if !HasRange(d) {
		return nil
	}
	return []storage.Span{
		storage.RowsSpan(d.TableId, d.Start, d.End),
		storage.StatsSpan(d.TableId, d.Start, d.End),
	}
}

// SnapshotSpans implements consensus.StateMachine.
func (sm *StateMachine) SnapshotSpans(meta []byte) ([]storage.Span, error) {
	d := &kvpb.Descriptor{}
	if err := proto.Unmarshal(meta, d); err != nil {
		return nil, fmt.Errorf("partition %d: decode snapshot descriptor: %w", sm.id, err)
	}
	if d.Id != sm.id {
		return nil, fmt.Errorf("partition %d: snapshot is of partition %d", sm.id, d.Id)
	}
	return dataSpans(d), nil
}

// Restore implements consensus.StateMachine: the descriptor goes into the
// engine's batch that completes the installation, so a replica never has
// the snapshot's raft state without its range (it would reject every
// later write and silently diverge).
func (sm *StateMachine) Restore(b *storage.Batch, meta []byte, index uint64) error {
	d := &kvpb.Descriptor{}
	if err := proto.Unmarshal(meta, d); err != nil {
		return fmt.Errorf("partition %d: decode snapshot descriptor: %w", sm.id, err)
	}
	if d.GetId() != sm.id {
		return fmt.Errorf("partition %d: snapshot is of partition %d", sm.id, d.GetId())
	}
	if err := sm.setDescriptor(b, d); err != nil {
		return err
	}
	sm.logger.Info("restored snapshot", "partition", sm.id, "index", index, "start", d.Start, "end", d.End)
	return nil
}
