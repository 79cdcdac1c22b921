package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// StoreConfig configures a Store.
type StoreConfig struct {
	NodeID    consensus.NodeID
	Storage   *storage.Engine
	Consensus consensus.Engine
	// Throughput reports provisioned throughput per table; nil = unlimited.
	Throughput ThroughputFunc
	// MaxMutationBytes bounds one encoded write command; larger ones are
	// refused before they are proposed (they would be raft entries no
	// follower can receive). Default DefaultMaxMutationBytes.
	MaxMutationBytes int
	// TestingKnobs are test hooks; nil in production.
	TestingKnobs *StoreKnobs
	Logger       *slog.Logger
}

// StoreKnobs are a Store's test hooks.
type StoreKnobs struct {
	// BeforeSplitStart runs after the batch that applied a split is
	// durable and before the right half's replica starts.
	BeforeSplitStart func(left, right uint64)
}

// Store is the set of partition replicas on this node. Safe for concurrent
// use.
type Store struct {
	cfg StoreConfig
	// bg runs replica starts triggered on apply goroutines (splits), which
	// must not call into the consensus engine synchronously.
	bg sync.WaitGroup

	mu struct {
		sync.RWMutex
		replicas map[uint64]*Replica
		closed   bool
	}
}

// NewStore returns an empty store; call Recover to start persisted replicas.
func NewStore(cfg StoreConfig) *Store {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxMutationBytes <= 0 {
		cfg.MaxMutationBytes = DefaultMaxMutationBytes
	}
	s := &Store{cfg: cfg}
	s.mu.replicas = map[uint64]*Replica{}
	return s
}

// NodeID returns the node this store belongs to.
func (s *Store) NodeID() consensus.NodeID { return s.cfg.NodeID }

// Storage returns the node's storage engine.
func (s *Store) Storage() *storage.Engine { return s.cfg.Storage }

// Recover starts every replica persisted on this node.
func (s *Store) Recover(ctx context.Context) error {
	ids, err := storage.ReplicaStateGroups(s.cfg.Storage)
	if err != nil {
		return fmt.Errorf("recover replicas: %w", err)
	}
	for _, id := range ids {
		if _, err := s.start(ctx, id, nil, campaignNever); err != nil {
			return fmt.Errorf("recover partition %d: %w", id, err)
		}
	}
	s.cfg.Logger.Info("recovered replicas", "count", len(ids))
	return nil
}

// Bootstrap starts this node's replica of a new partition with the
// descriptor's replicas as its initial members.
func (s *Store) Bootstrap(ctx context.Context, desc *kvpb.Descriptor) (*Replica, error) {
	return s.start(ctx, desc.GetId(), desc, campaignIfFirst)
}

// Join starts an empty replica of an existing partition that waits for the
// group's leader to send it a snapshot (the target of a move).
func (s *Store) Join(ctx context.Context, id uint64, replicaID consensus.ReplicaID) (*Replica, error) {
	s.mu.Lock()
	if r, ok := s.mu.replicas[id]; ok {
		s.mu.Unlock()
		return r, nil
	}
	s.mu.Unlock()
	sm, err := NewStateMachine(s.cfg.Storage, id, nil, s, s.cfg.Logger)
	if err != nil {
		return nil, err
	}
	return s.startGroup(ctx, sm, replicaID, nil, false)
}

func (s *Store) start(ctx context.Context, id uint64, desc *kvpb.Descriptor, how campaignPolicy) (*Replica, error) {
	s.mu.RLock()
	r, ok := s.mu.replicas[id]
	s.mu.RUnlock()
	if ok {
		return r, nil
	}
	sm, err := NewStateMachine(s.cfg.Storage, id, desc, s, s.cfg.Logger)
	if err != nil {
		return nil, err
	}
	d := sm.Descriptor()
	var self consensus.ReplicaID
	var members []consensus.Replica
	for _, rd := range d.GetReplicas() {
		m := consensus.Replica{ReplicaID: consensus.ReplicaID(rd.GetReplicaId()), NodeID: consensus.NodeID(rd.GetNodeId()), Learner: rd.GetLearner()}
		members = append(members, m)
		if m.NodeID == s.cfg.NodeID {
			self = m.ReplicaID
		}
	}
	if self == 0 {
		return nil, fmt.Errorf("partition %d: node %d is not among its replicas %v", id, s.cfg.NodeID, members)
	}
	if desc == nil {
		members = nil // recovering: the engine has the membership
	}
	campaign := false
	switch how {
	case campaignIfFirst:
		// The first replica of a new partition is its preferred leader.
		campaign = desc != nil && len(d.GetReplicas()) > 0 && consensus.NodeID(d.GetReplicas()[0].GetNodeId()) == s.cfg.NodeID
	case campaignNow:
		campaign = true
	}
	return s.startGroup(ctx, sm, self, members, campaign)
}

// campaignPolicy says whether a starting replica stands for election at
// once instead of waiting an election timeout.
type campaignPolicy int

const (
	campaignIfFirst campaignPolicy = iota // a new partition's first replica does
	campaignNow
	campaignNever
)

func (s *Store) startGroup(ctx context.Context, sm *StateMachine, self consensus.ReplicaID, members []consensus.Replica, campaign bool) (*Replica, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, errors.New("partition store closed")
	}
	if r, ok := s.mu.replicas[sm.id]; ok {
		return r, nil
	}
	g, err := s.cfg.Consensus.StartGroup(ctx, consensus.GroupConfig{
		ID: consensus.GroupID(sm.id), ReplicaID: self, Members: members, StateMachine: sm, Campaign: campaign,
	})
	if err != nil {
		return nil, fmt.Errorf("partition %d: start group: %w", sm.id, err)
	}
	r := &Replica{sm: sm, group: g, engine: s.cfg.Storage, throttle: newThrottle(), throughput: s.cfg.Throughput, maxMutation: s.cfg.MaxMutationBytes}
	s.mu.replicas[sm.id] = r
	s.cfg.Logger.Debug("started replica", "partition", sm.id, "replica", uint64(self), "table", sm.Descriptor().GetTableId())
	return r, nil
}

// Replica returns the local replica of a partition.
func (s *Store) Replica(id uint64) (*Replica, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.mu.replicas[id]
	return r, ok
}

// Replicas returns every local replica, ordered by partition id.
func (s *Store) Replicas() []*Replica {
	s.mu.RLock()
	out := make([]*Replica, 0, len(s.mu.replicas))
	for _, r := range s.mu.replicas {
		out = append(out, r)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// Remove stops and forgets the local replica of a partition. With
// clearData it also deletes the partition's rows on this node (a replica
// moved away); without it the rows stay (a table drop clears them whole).
func (s *Store) Remove(id uint64, clearData bool) error {
	s.mu.Lock()
	r, ok := s.mu.replicas[id]
	delete(s.mu.replicas, id)
	s.mu.Unlock()
	var spans []storage.Span
	if ok {
		spans = dataSpans(r.Descriptor())
	} else if d, err := LoadDescriptor(s.cfg.Storage, id); err == nil && d != nil {
		spans = dataSpans(d)
	}
	if err := s.cfg.Consensus.DestroyGroup(consensus.GroupID(id)); err != nil && !errors.Is(err, consensus.ErrGroupNotFound) {
		return fmt.Errorf("partition %d: destroy group: %w", id, err)
	}
	if err := s.cfg.Storage.ClearSpan(storage.GroupLocalSpan(id)); err != nil {
		return fmt.Errorf("partition %d: clear local state: %w", id, err)
	}
	if clearData {
		for _, sp := range spans {
			if err := s.cfg.Storage.ClearSpan(sp); err != nil {
				return fmt.Errorf("partition %d: clear data: %w", id, err)
			}
		}
	}
	s.cfg.Logger.Info("removed replica", "partition", id, "cleared", clearData)
	return nil
}

// InitSplit implements Hooks: the right half's replica on this node gets
// the parent's members as its initial configuration, written in the
// split's batch.
func (s *Store) InitSplit(b *storage.Batch, right *kvpb.Descriptor) (bool, error) {
	var self consensus.ReplicaID
	members := make([]consensus.Replica, 0, len(right.GetReplicas()))
	for _, rd := range right.GetReplicas() {
		m := consensus.Replica{ReplicaID: consensus.ReplicaID(rd.GetReplicaId()), NodeID: consensus.NodeID(rd.GetNodeId()), Learner: rd.GetLearner()}
		members = append(members, m)
		if m.NodeID == s.cfg.NodeID {
			self = m.ReplicaID
		}
	}
	if self == 0 {
		return false, fmt.Errorf("node %d is not among the replicas %v of the right half %d", s.cfg.NodeID, members, right.GetId())
	}
	if _, ok, err := b.Get(storage.ReplicaStateKey(right.GetId())); err != nil {
		return false, err
	} else if ok {
		return false, nil
	}
	return s.cfg.Consensus.WriteInitialState(b, consensus.GroupID(right.GetId()), self, members)
}

// OnSplit implements Hooks: the right half of a split, whose state the
// split's batch made durable, starts on this node. It runs in the
// background because the apply goroutine that calls it must not wait on
// the consensus engine.
func (s *Store) OnSplit(left, right *kvpb.Descriptor) {
	// The replica that led the parent leads the right half at once: the
	// clients of the parent's range find a leader without an election.
	how := campaignNever
	if parent, ok := s.Replica(left.GetId()); ok && parent.Group().Status().IsLeader() {
		how = campaignNow
	}
	s.mu.RLock()
	closed := s.mu.closed
	if !closed {
		s.bg.Add(1)
	}
	s.mu.RUnlock()
	if closed {
		return // Recover starts it with the store's next incarnation
	}
	go func() {
		defer s.bg.Done()
		if k := s.cfg.TestingKnobs; k != nil && k.BeforeSplitStart != nil {
			k.BeforeSplitStart(left.GetId(), right.GetId())
		}
		if _, err := s.start(context.Background(), right.GetId(), nil, how); err != nil {
			s.cfg.Logger.Error("start right half of split", "partition", right.GetId(), "parent", left.GetId(), "err", err)
		}
	}()
}

// overlapping returns a local replica of another partition whose range
// overlaps d's, 0 if none.
func (s *Store) overlapping(d *kvpb.Descriptor) uint64 {
	if !HasRange(d) {
		return 0
	}
	for _, r := range s.Replicas() {
		o := r.Descriptor()
		if r.ID() != d.GetId() && HasRange(o) && o.GetTableId() == d.GetTableId() && o.GetStart() <= d.GetEnd() && d.GetStart() <= o.GetEnd() {
			return r.ID()
		}
	}
	return 0
}

// Close stops every replica (their state stays on disk). Safe to call twice.
func (s *Store) Close() {
	s.mu.Lock()
	s.mu.closed = true
	ids := make([]uint64, 0, len(s.mu.replicas))
	for id := range s.mu.replicas {
		ids = append(ids, id)
	}
	s.mu.replicas = map[uint64]*Replica{}
	s.mu.Unlock()
	s.bg.Wait()
	for _, id := range ids {
		if err := s.cfg.Consensus.StopGroup(consensus.GroupID(id)); err != nil && !errors.Is(err, consensus.ErrGroupNotFound) {
			s.cfg.Logger.Warn("stop group", "partition", id, "err", err)
		}
	}
}

// reconcileStart starts this node's replica me of partition d.
func (s *Store) reconcileStart(ctx context.Context, d *kvpb.Descriptor, me *kvpb.ReplicaDescriptor) error {
	var err error
	switch {
	case me.GetLearner():
		_, err = s.Join(ctx, d.GetId(), consensus.ReplicaID(me.GetReplicaId()))
	case d.GetGeneration() == 0:
		_, err = s.Bootstrap(ctx, d)
	default:
		// A voter we do not run and that is not new: our copy was lost
		// or removed. Join and let the leader catch us up.
		_, err = s.Join(ctx, d.GetId(), consensus.ReplicaID(me.GetReplicaId()))
	}
	return err
}

// Reconcile makes this node's replicas follow the routing copy of the
// rings: it starts replicas of partitions that list this node and that it
// does not run, and removes (with their data) replicas of partitions that
// the rings list without this node or whose table is gone.
//
// A partition absent from the rings of a live table is left alone: it is
// the right half of a split whose routing entry is not written yet.
// New partitions (generation 0, never started) bootstrap; a node listed as
// a learner joins and waits for a snapshot.
func (s *Store) Reconcile(ctx context.Context, parts []*kvpb.Descriptor, liveTables map[uint64]bool) error {
	listed := map[uint64]*kvpb.Descriptor{}
	var errs []error
	for _, d := range parts {
		listed[d.GetId()] = d
		var me *kvpb.ReplicaDescriptor
		for _, rd := range d.GetReplicas() {
			if consensus.NodeID(rd.GetNodeId()) == s.cfg.NodeID {
				me = rd
			}
		}
		if me == nil {
			continue
		}
		if r, ok := s.Replica(d.GetId()); ok {
			self := r.Group().Status().ReplicaID
			if self == 0 || self >= consensus.ReplicaID(me.GetReplicaId()) {
				continue
			}
			// The ring names this node under a newer replica id: the local
			// copy is one that was replaced while the node was away (dead,
			// partitioned) and the node has since been added back as a new
			// replica. The old copy can never catch up under its old id,
			// so the new one would stay a learner forever: drop the old
			// copy and join as the new replica.
			if err := s.Remove(d.GetId(), true); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if other := s.overlapping(d); other != 0 {
			// A local replica of another partition still holds part of
			// this range: this node's copy of the parent has not applied
			// the split yet. Joining now would let a snapshot of the right
			// half and the parent's late writes share keys; the split
			// creates the right half here when it applies (or, if the
			// parent catches up from a snapshot taken after the split, the
			// overlap ends and a later pass joins).
			s.cfg.Logger.Debug("not joining partition while a local replica overlaps it", "partition", d.GetId(), "overlaps", other)
			continue
		}
		err := s.reconcileStart(ctx, d, me)
		var stale *consensus.StaleReplicaError
		if errors.As(err, &stale) && stale.Persisted < stale.Asked {
			// The engine holds an earlier incarnation of this node's
			// replica that does not run (its snapshot was interrupted by
			// a crash, or it failed): the same case as above, found at
			// start. Drop it and join as the new replica.
			s.cfg.Logger.Info("dropping a stale local replica", "partition", d.GetId(),
				"persisted", uint64(stale.Persisted), "ring", uint64(stale.Asked))
			if err = s.Remove(d.GetId(), true); err == nil {
				err = s.reconcileStart(ctx, d, me)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range s.Replicas() {
		d := r.Descriptor()
		id := r.ID()
		if l, ok := listed[id]; ok {
			member := false
			for _, rd := range l.GetReplicas() {
				member = member || consensus.NodeID(rd.GetNodeId()) == s.cfg.NodeID
			}
			if member || l.GetGeneration() < d.GetGeneration() {
				continue
			}
		} else if !HasRange(d) || liveTables[d.GetTableId()] {
			continue
		}
		if err := s.Remove(id, true); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
