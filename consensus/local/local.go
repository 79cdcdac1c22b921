// Package local is a consensus engine with exactly one replica per group and
// no network: a command is "committed" when its batch is durable on this
// node. It serves development (`cosmosd --consensus local`) and unit tests,
// and implements the same interfaces as consensus/raft so everything above
// it runs unchanged on either.
//
// Each group has one apply goroutine that drains pending proposals in
// batches: one storage batch and one fsync cover every proposal that queued
// while the previous batch was being written (group commit). Because a
// proposal is acknowledged only after it is applied, local state always
// reflects every acknowledged command and ReadIndex needs no wait.
package local

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/storage"
)

// Config configures the local engine.
type Config struct {
	// NodeID is this node's id; groups may only have this node as member.
	NodeID consensus.NodeID
	// Storage is the node's store, shared with the state machines.
	Storage *storage.Engine
	// MaxBatch bounds the number of proposals applied in one batch.
	// Default 256.
	MaxBatch int
	// Logger receives state changes; nil discards.
	Logger *slog.Logger
}

// Engine is the local consensus engine.
type Engine struct {
	cfg Config

	mu struct {
		sync.Mutex
		groups map[consensus.GroupID]*group
		closed bool
	}
}

var _ consensus.Engine = (*Engine)(nil)

// New returns an engine.
func New(cfg Config) (*Engine, error) {
	if cfg.Storage == nil {
		return nil, errors.New("local: storage is required")
	}
	if cfg.NodeID == 0 {
		return nil, errors.New("local: node id is required")
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 256
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{cfg: cfg}
	e.mu.groups = make(map[consensus.GroupID]*group)
	return e, nil
}

// applyState is what the engine persists per group, atomically with the
// state machine's writes: the last applied index and the membership.
type applyState struct {
	applied uint64
	members []consensus.Replica
}

func encodeApplyState(s applyState) []byte {
	b := binary.AppendUvarint(nil, s.applied)
	b = binary.AppendUvarint(b, uint64(len(s.members)))
	for _, m := range s.members {
		b = binary.AppendUvarint(b, uint64(m.ReplicaID))
		b = binary.AppendUvarint(b, uint64(m.NodeID))
	}
	return b
}

func decodeApplyState(b []byte) (applyState, error) {
	var s applyState
	var n uint64
	var k int
	if s.applied, k = binary.Uvarint(b); k <= 0 {
		return s, errors.New("local: corrupt apply state")
	}
	b = b[k:]
	if n, k = binary.Uvarint(b); k <= 0 || n > 64 {
		return s, errors.New("local: corrupt apply state")
	}
	b = b[k:]
	for i := uint64(0); i < n; i++ {
		r, k1 := binary.Uvarint(b)
		if k1 <= 0 {
			return s, errors.New("local: corrupt apply state")
		}
		nd, k2 := binary.Uvarint(b[k1:])
		if k2 <= 0 {
			return s, errors.New("local: corrupt apply state")
		}
		b = b[k1+k2:]
		s.members = append(s.members, consensus.Replica{ReplicaID: consensus.ReplicaID(r), NodeID: consensus.NodeID(nd)})
	}
	return s, nil
}

// StartGroup implements consensus.Engine.
func (e *Engine) StartGroup(ctx context.Context, cfg consensus.GroupConfig) (consensus.Group, error) {
	if cfg.StateMachine == nil {
		return nil, fmt.Errorf("local: group %d: no state machine", cfg.ID)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mu.closed {
		return nil, consensus.ErrStopped
	}
	if _, ok := e.mu.groups[cfg.ID]; ok {
		return nil, fmt.Errorf("local: group %d: %w", cfg.ID, consensus.ErrGroupExists)
	}
	raw, ok, err := e.cfg.Storage.Get(storage.RaftApplyStateKey(uint64(cfg.ID)))
	if err != nil {
		return nil, fmt.Errorf("local: group %d: load apply state: %w", cfg.ID, err)
	}
	g := &group{
		id:        cfg.ID,
		replicaID: cfg.ReplicaID,
		engine:    e,
		sm:        cfg.StateMachine,
		proposals: make(chan *proposal, 1024),
		done:      make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	var st applyState
	if ok {
		if st, err = decodeApplyState(raw); err != nil {
			return nil, fmt.Errorf("local: group %d: %w", cfg.ID, err)
		}
	} else {
		// Bootstrap: the single member must be this node.
		if len(cfg.Members) != 1 || cfg.Members[0].NodeID != e.cfg.NodeID || cfg.Members[0].ReplicaID != cfg.ReplicaID {
			return nil, fmt.Errorf("local: group %d: the local engine runs exactly one replica on this node, got members %v", cfg.ID, cfg.Members)
		}
		st.members = cfg.Members
		// Deliver the bootstrap membership as entry 1, as a raft engine would.
		b := e.cfg.Storage.NewBatch()
		defer b.Close()
		if _, err := g.sm.Apply(b, []consensus.Entry{{Index: 1, Term: 1, Type: consensus.EntryMembership, Members: st.members}}); err != nil {
			return nil, fmt.Errorf("local: group %d: bootstrap: %w", cfg.ID, err)
		}
		st.applied = 1
		if err := b.Set(storage.RaftApplyStateKey(uint64(cfg.ID)), encodeApplyState(st)); err != nil {
			return nil, err
		}
		if err := b.Commit(true); err != nil {
			return nil, fmt.Errorf("local: group %d: bootstrap commit: %w", cfg.ID, err)
		}
	}
	g.applied = st.applied
	g.members = st.members
	e.mu.groups[cfg.ID] = g
	go g.run()
	return g, nil
}

// WriteInitialState implements consensus.Engine.
func (e *Engine) WriteInitialState(b *storage.Batch, id consensus.GroupID, self consensus.ReplicaID, members []consensus.Replica) (bool, error) {
	if _, ok, err := b.Get(storage.RaftApplyStateKey(uint64(id))); err != nil || ok {
		return false, err
	}
	if len(members) != 1 || members[0].NodeID != e.cfg.NodeID || members[0].ReplicaID != self {
		return false, fmt.Errorf("local: group %d: the local engine runs exactly one replica on this node, got members %v", id, members)
	}
	return true, b.Set(storage.RaftApplyStateKey(uint64(id)), encodeApplyState(applyState{applied: 1, members: members}))
}

// Group implements consensus.Engine.
func (e *Engine) Group(id consensus.GroupID) (consensus.Group, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.mu.groups[id]
	return g, ok
}

// StopGroup implements consensus.Engine.
func (e *Engine) StopGroup(id consensus.GroupID) error {
	e.mu.Lock()
	g, ok := e.mu.groups[id]
	delete(e.mu.groups, id)
	e.mu.Unlock()
	if !ok {
		return fmt.Errorf("local: group %d: %w", id, consensus.ErrGroupNotFound)
	}
	g.stop()
	return nil
}

// DestroyGroup implements consensus.Engine.
func (e *Engine) DestroyGroup(id consensus.GroupID) error {
	if err := e.StopGroup(id); err != nil && !errors.Is(err, consensus.ErrGroupNotFound) {
		return err
	}
	b := e.cfg.Storage.NewWriteBatch()
	defer b.Close()
	if err := b.Delete(storage.RaftApplyStateKey(uint64(id))); err != nil {
		return err
	}
	return b.Commit(true)
}

// Close implements consensus.Engine.
func (e *Engine) Close() error {
	e.mu.Lock()
	groups := e.mu.groups
	e.mu.groups = map[consensus.GroupID]*group{}
	e.mu.closed = true
	e.mu.Unlock()
	for _, g := range groups {
		g.stop()
	}
	return nil
}

type proposal struct {
	cmd    []byte
	result chan consensus.Result
}

type group struct {
	id        consensus.GroupID
	replicaID consensus.ReplicaID
	engine    *Engine
	sm        consensus.StateMachine
	proposals chan *proposal
	done      chan struct{} // closed by stop
	stopped   chan struct{} // closed when run returns
	stopOnce  sync.Once

	// applied and members are owned by run after start.
	applied uint64
	members []consensus.Replica

	mu struct {
		sync.Mutex
		applied uint64
		err     error // set when the group stopped on an apply failure
	}
}

func (g *group) ID() consensus.GroupID { return g.id }

func (g *group) stop() {
	g.stopOnce.Do(func() { close(g.done) })
	<-g.stopped
}

func (g *group) Propose(ctx context.Context, cmd []byte) (any, error) {
	// Check done first: a select with both cases ready picks at random, and
	// a proposal queued on a stopped group would never be answered.
	select {
	case <-g.done:
		return nil, g.stoppedErr()
	default:
	}
	p := &proposal{cmd: cmd, result: make(chan consensus.Result, 1)}
	select {
	case g.proposals <- p:
	case <-g.done:
		return nil, g.stoppedErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-p.result:
		return r.Value, r.Err
	case <-g.stopped:
		// run has returned; it answered everything it drained, but a
		// proposal queued after its last drain is answered here.
		select {
		case r := <-p.result:
			return r.Value, r.Err
		default:
			return nil, g.stoppedErr()
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (g *group) stoppedErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.err != nil {
		return fmt.Errorf("local: group %d: %w: %v", g.id, consensus.ErrStopped, g.mu.err)
	}
	return fmt.Errorf("local: group %d: %w", g.id, consensus.ErrStopped)
}

// ReadIndex implements consensus.Group. Every acknowledged proposal is
// already applied, so only a stopped group fails.
func (g *group) ReadIndex(ctx context.Context) error {
	select {
	case <-g.done:
		return g.stoppedErr()
	default:
		return ctx.Err()
	}
}

func (g *group) ChangeReplicas(ctx context.Context, changes []consensus.ReplicaChange) error {
	return fmt.Errorf("local: group %d: membership changes need the raft engine", g.id)
}

func (g *group) TransferLeadership(ctx context.Context, target consensus.ReplicaID) error {
	if target == g.replicaID {
		return nil
	}
	return fmt.Errorf("local: group %d: no replica %d to transfer leadership to", g.id, target)
}

func (g *group) Status() consensus.Status {
	g.mu.Lock()
	applied, err := g.mu.applied, g.mu.err
	g.mu.Unlock()
	return consensus.Status{
		ID: g.id, ReplicaID: g.replicaID, Leader: g.replicaID, LeaderNode: g.engine.cfg.NodeID,
		Term: 1, Commit: applied, Applied: applied, Members: append([]consensus.Replica(nil), g.members...),
		Progress: map[consensus.ReplicaID]uint64{g.replicaID: applied}, Err: err,
	}
}

func (g *group) run() {
	defer close(g.stopped)
	g.mu.Lock()
	g.mu.applied = g.applied
	g.mu.Unlock()
	batch := make([]*proposal, 0, g.engine.cfg.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case p := <-g.proposals:
			batch = append(batch, p)
		case <-g.done:
			g.failPending(nil)
			return
		}
	drain:
		for len(batch) < g.engine.cfg.MaxBatch {
			select {
			case p := <-g.proposals:
				batch = append(batch, p)
			default:
				break drain
			}
		}
		if err := g.applyBatch(batch); err != nil {
			g.engine.cfg.Logger.Error("group stopped: apply failed", "group", uint64(g.id), "err", err)
			g.mu.Lock()
			g.mu.err = err
			g.mu.Unlock()
			g.stopOnce.Do(func() { close(g.done) })
			// The batch may have reached the WAL before the failure: its
			// outcome is unknown, unlike the queued proposals below.
			for _, p := range batch {
				p.result <- consensus.Result{Err: fmt.Errorf("local: group %d stopped (%v) with the command in flight: %w", g.id, err, consensus.ErrAmbiguous)}
			}
			g.failPending(err)
			return
		}
	}
}

func (g *group) failPending(cause error) {
	for {
		select {
		case p := <-g.proposals:
			err := fmt.Errorf("local: group %d: %w", g.id, consensus.ErrStopped)
			if cause != nil {
				err = fmt.Errorf("%w: %v", err, cause)
			}
			p.result <- consensus.Result{Err: err}
		default:
			return
		}
	}
}

func (g *group) applyBatch(batch []*proposal) error {
	entries := make([]consensus.Entry, len(batch))
	for i, p := range batch {
		entries[i] = consensus.Entry{Index: g.applied + 1 + uint64(i), Term: 1, Type: consensus.EntryCommand, Data: p.cmd}
	}
	b := g.engine.cfg.Storage.NewBatch()
	defer b.Close()
	results, err := g.sm.Apply(b, entries)
	if err != nil {
		return err
	}
	if len(results) != len(entries) {
		return fmt.Errorf("state machine returned %d results for %d entries", len(results), len(entries))
	}
	applied := g.applied + uint64(len(entries))
	if err := b.Set(storage.RaftApplyStateKey(uint64(g.id)), encodeApplyState(applyState{applied: applied, members: g.members})); err != nil {
		return err
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	g.applied = applied
	g.mu.Lock()
	g.mu.applied = applied
	g.mu.Unlock()
	if pa, ok := g.sm.(consensus.PostApplier); ok && pa.PostApplyPending() {
		pa.PostApply()
	}
	for i, p := range batch {
		p.result <- results[i]
	}
	return nil
}
