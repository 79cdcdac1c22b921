package raft

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
	"github.com/cosmosd/cosmosd/storage"
)

// Engine is the multi-raft engine of one node. See the package doc for the
// model. All methods are safe for concurrent use.
type Engine struct {
	cfg       Config
	transport Transport
	sched     *scheduler
	syncer    *syncer
	ids       atomic.Uint64

	// start is the origin of monoNow.
	start time.Time

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // ticker, scheduler, snapshot sends

	snapSends chan struct{} // semaphore of Config.MaxSnapshotSends
	snapRecvs chan struct{} // semaphore of Config.MaxSnapshotRecvs

	// leaderBeat maps a node to the time (UnixNano, *atomic.Int64) this
	// node last received leader traffic (heartbeats, appends) from it: a
	// node that leads groups followed here sends some every tick, so its
	// silence is a fast failure detector (see LeaderSilence).
	leaderBeat sync.Map
	// followed counts, per node, the local replicas that follow a leader
	// on that node: only those nodes owe this one heartbeats.
	followedMu sync.Mutex
	followed   map[consensus.NodeID]int

	// Counters for Stats, written outside the cycle's logic (or with one
	// Add in it) so that metrics never take the scheduler's locks.
	leaderChanges atomic.Int64 // a group's known leader changed
	proposals     atomic.Int64 // Propose calls that reached the scheduler
	proposeNanos  atomic.Int64 // their total time until they returned
	// stages splits the time of proposals applied here (proposalStages).
	stages    proposalStages
	snapsSent atomic.Int64 // snapshots streamed to a follower
	snapsRecv atomic.Int64 // snapshots received and installed

	mu struct {
		sync.RWMutex
		groups   map[consensus.GroupID]*group
		starting map[consensus.GroupID]bool
		closed   bool
	}
	closeOnce sync.Once
}

var (
	_ consensus.Engine = (*Engine)(nil)
	_ Handler          = (*Engine)(nil)
)

// New starts an engine: its scheduler, its ticker (unless
// TestingKnobs.ManualTicks) and its transport. Groups are started with
// StartGroup; the daemon restarts the persisted ones (PersistedGroups).
func New(cfg Config) (*Engine, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:       cfg,
		start:     time.Now(),
		snapSends: make(chan struct{}, cfg.MaxSnapshotSends),
		snapRecvs: make(chan struct{}, cfg.MaxSnapshotRecvs),
	}
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	// Proposal ids start at a random point so that ids of this process never
	// meet those a previous incarnation left in the log.
	e.ids.Store(binary.BigEndian.Uint64(seed[:]) >> 1)
	e.mu.groups = map[consensus.GroupID]*group{}
	e.mu.starting = map[consensus.GroupID]bool{}
	if err := e.cleanSnapshotDir(); err != nil {
		return nil, err
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	if cfg.TestingKnobs != nil && cfg.TestingKnobs.Transport != nil {
		e.transport = cfg.TestingKnobs.Transport(e)
	} else {
		e.transport = newGRPCTransport(&e.cfg, e)
	}
	e.sched = newScheduler(e)
	e.syncer = newSyncer(e)
	go e.sched.run()
	go e.syncer.run()
	if cfg.TestingKnobs == nil || !cfg.TestingKnobs.ManualTicks {
		e.wg.Go(e.ticker)
	}
	return e, nil
}

// RegisterService registers the engine's internode transport service on s,
// a server the daemon owns and shares with other internal services. The
// server should allow messages of at least 16 MiB (grpc.MaxRecvMsgSize).
func (e *Engine) RegisterService(s *grpc.Server) {
	transportpb.RegisterRaftTransportServer(s, &grpcService{h: e, node: e.cfg.NodeID})
}

// monoNow is the engine's monotonic clock in nanoseconds, always positive
// (lease stamps, lease.go).
func (e *Engine) monoNow() int64 { return int64(time.Since(e.start)) + 1 }

func (e *Engine) nextID() uint64 {
	for {
		if id := e.ids.Add(1); id != 0 {
			return id
		}
	}
}

func (e *Engine) ticker() {
	t := time.NewTicker(e.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case at := <-t.C:
			// The time the tick fired, not when this goroutine got to
			// it: a tick delayed by a busy machine must still be stepped
			// before the messages that arrived after it fired (prepare).
			e.tick(int64(at.Sub(e.start)) + 1)
		}
	}
}

// Tick advances every group's raft clock by one tick, now. The engine's
// ticker ticks every Config.TickInterval; tests with
// TestingKnobs.ManualTicks call Tick themselves.
func (e *Engine) Tick() { e.tick(e.monoNow()) }

// maxTickTimes bounds the tick times an inbox keeps; older ticks of a
// group whose cycles fell that far behind are stepped first, as if they
// fired before every message.
const maxTickTimes = 16

// tick adds a tick that fired at at (monoNow's clock) to every group.
func (e *Engine) tick(at int64) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, g := range e.mu.groups {
		g.mu.Lock()
		if g.mu.stopped {
			g.mu.Unlock()
			continue
		}
		in := &g.mu.inbox
		in.ticks++
		if len(in.tickAt) == maxTickTimes {
			in.tickAt = append(in.tickAt[:0], in.tickAt[1:]...)
		}
		in.tickAt = append(in.tickAt, at)
		wake := !g.mu.queued
		g.mu.queued = true
		g.mu.Unlock()
		if wake {
			e.sched.enqueue(g)
		}
	}
}

// Healthy reports whether the engine makes progress: it fails when the
// store failed a write (a commit or sync error), or when one scheduling
// cycle (which every group's writes go through) or one WAL sync (which
// every acknowledgement waits for) has taken longer than
// Config.StallTimeout. The daemon stops its systemd watchdog
// pings then, so a node whose disk fails or wedges is restarted from what
// is durable.
func (e *Engine) Healthy() error {
	if err := e.cfg.Storage.Err(); err != nil {
		return fmt.Errorf("raft: the store failed a write, so what it applied may not be durable: %w", err)
	}
	if err := e.sched.stalled(e.cfg.StallTimeout); err != nil {
		return err
	}
	return e.syncer.stalled(e.cfg.StallTimeout)
}

// Stats are cumulative counters of the engine's work since it started,
// for metrics: a rising SyncTime per sync is a slow disk, a rising
// CycleTime per cycle a busy scheduler.
type Stats struct {
	Cycles    int64
	CycleTime time.Duration
	// Syncs are the WAL syncs acknowledgements waited for; SyncTime is
	// their total time from request to completion.
	Syncs    int64
	SyncTime time.Duration
	// LeaderChanges counts the times a local replica saw its group's
	// leader change (to another replica or to none): a steady rise is
	// flapping leadership.
	LeaderChanges int64
	// Proposals are the commands proposed through this node's replicas
	// (on the leader); ProposeTime is their total time from submission to
	// applied (or failed), so its rate over Proposals' is the mean commit
	// and apply latency.
	Proposals   int64
	ProposeTime time.Duration
	// ProposalsApplied counts the proposals that returned the result of
	// their apply on the leader; the three times split their time:
	// ProposeQueueTime from submission until raft took the command (the
	// wait for a scheduling cycle), ProposeCommitTime from then until it
	// was applied (appending, replicating, the quorum's syncs, the commit),
	// ProposeAnswerTime from then until the caller resumed (the rest of the
	// cycle, its batch commit, and the caller's wake-up).
	ProposalsApplied                                       int64
	ProposeQueueTime, ProposeCommitTime, ProposeAnswerTime time.Duration
	// SnapshotsSent and SnapshotsReceived count snapshots streamed to
	// followers and those received and installed here.
	SnapshotsSent     int64
	SnapshotsReceived int64
	// Groups are the local replicas running; Led those that lead their
	// group; Leaderless those that know no live leader (see
	// consensus.Status.Leader). Read from the published status at call
	// time.
	Groups, Led, Leaderless int
	// LogBytes estimates the bytes of the raft logs of the local replicas
	// as of their last cycle; it restarts from 0 after a restart (see
	// logStore.logBytes).
	LogBytes uint64
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	st := Stats{
		Cycles: e.sched.cycles.Load(), CycleTime: time.Duration(e.sched.cycleNanos.Load()),
		Syncs: e.syncer.syncs.Load(), SyncTime: time.Duration(e.syncer.syncNanos.Load()),
		LeaderChanges: e.leaderChanges.Load(),
		Proposals:     e.proposals.Load(), ProposeTime: time.Duration(e.proposeNanos.Load()),
		ProposalsApplied:  e.stages.n.Load(),
		ProposeQueueTime:  time.Duration(e.stages.queue.Load()),
		ProposeCommitTime: time.Duration(e.stages.commit.Load()),
		ProposeAnswerTime: time.Duration(e.stages.answer.Load()),
		SnapshotsSent:     e.snapsSent.Load(), SnapshotsReceived: e.snapsRecv.Load(),
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, g := range e.mu.groups {
		g.mu.Lock()
		stopped, status := g.mu.stopped, g.mu.status
		g.mu.Unlock()
		if stopped {
			continue
		}
		st.Groups++
		switch {
		case status.IsLeader():
			st.Led++
		case status.Leader == 0:
			st.Leaderless++
		}
		st.LogBytes += g.logBytesPub.Load()
	}
	return st
}

// failAll stops every group after a failure of the store. Scheduler
// goroutine only, between the phases of a cycle.
func (e *Engine) failAll(err error) {
	e.mu.RLock()
	groups := make([]*group, 0, len(e.mu.groups))
	for _, g := range e.mu.groups {
		groups = append(groups, g)
	}
	e.mu.RUnlock()
	for _, g := range groups {
		g.fail(fmt.Errorf("store failed: %w", err))
	}
}

// PersistedGroup is a group with raft state on this node.
type PersistedGroup struct {
	ID        consensus.GroupID
	ReplicaID consensus.ReplicaID
}

// PersistedGroups lists the groups with raft state in the store, for the
// daemon to restart with StartGroup (empty Members) after a restart.
func (e *Engine) PersistedGroups() ([]PersistedGroup, error) {
	it, err := e.cfg.Storage.NewIter(storage.Span{Start: storage.GroupLocalSpan(0).Start, End: storage.GroupLocalSpan(^uint64(0)).End})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []PersistedGroup
	for valid := it.First(); valid; {
		g, err := storage.LocalKeyGroup(it.Key())
		if err != nil {
			return nil, fmt.Errorf("raft: %w: %w", ErrCorrupt, err)
		}
		if st, err := e.loadApplyState(g); err != nil {
			return nil, err
		} else if st != nil {
			out = append(out, PersistedGroup{ID: consensus.GroupID(g), ReplicaID: st.replicaID})
		} else if m, err := e.loadInstall(g); err != nil {
			return nil, err
		} else if m != nil {
			out = append(out, PersistedGroup{ID: consensus.GroupID(g), ReplicaID: consensus.ReplicaID(m.GetReplicaId())})
		}
		if g == ^uint64(0) {
			break
		}
		valid = it.SeekGE(storage.GroupLocalSpan(g + 1).Start)
	}
	return out, it.Error()
}

func (e *Engine) loadApplyState(g uint64) (*applyState, error) {
	raw, ok, err := e.cfg.Storage.Get(storage.RaftApplyStateKey(g))
	if err != nil || !ok {
		return nil, err
	}
	st, err := decodeApplyState(raw)
	if err != nil {
		return nil, fmt.Errorf("raft: group %d: %w", g, err)
	}
	return st, nil
}

// StartGroup implements consensus.Engine. A group with persisted state
// resumes from it (cfg.Members is ignored; cfg.ReplicaID may be 0 or must
// match). Otherwise non-empty Members bootstrap the group: every initial
// replica starts from the same configuration at log index 1, which the
// state machine receives as an EntryMembership. Empty Members start a
// replica that joins an existing group: it persists its replica id and
// waits for the leader's snapshot; the daemon starts it before proposing
// AddLearner for it. Messages for groups not started on this node are
// dropped (no lazy creation).
func (e *Engine) StartGroup(ctx context.Context, cfg consensus.GroupConfig) (consensus.Group, error) {
	if cfg.StateMachine == nil {
		return nil, fmt.Errorf("raft: group %d: no state machine", cfg.ID)
	}
	e.mu.Lock()
	switch {
	case e.mu.closed:
		e.mu.Unlock()
		return nil, fmt.Errorf("raft: group %d: engine closed: %w", cfg.ID, consensus.ErrStopped)
	case e.mu.groups[cfg.ID] != nil || e.mu.starting[cfg.ID]:
		e.mu.Unlock()
		return nil, fmt.Errorf("raft: group %d: %w", cfg.ID, consensus.ErrGroupExists)
	}
	e.mu.starting[cfg.ID] = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.mu.starting, cfg.ID)
		e.mu.Unlock()
	}()

	g, err := e.openGroup(cfg)
	if err != nil {
		return nil, fmt.Errorf("raft: group %d: %w", cfg.ID, err)
	}
	e.mu.Lock()
	if e.mu.closed {
		e.mu.Unlock()
		return nil, fmt.Errorf("raft: group %d: engine closed: %w", cfg.ID, consensus.ErrStopped)
	}
	e.mu.groups[cfg.ID] = g
	e.mu.Unlock()
	g.requeue()
	return g, nil
}

func (e *Engine) openGroup(cfg consensus.GroupConfig) (g *group, err error) {
	id := uint64(cfg.ID)
	if m, err := e.loadInstall(id); err != nil {
		return nil, err
	} else if m != nil {
		// A snapshot installation was interrupted: finish it first, so the
		// state machine's spans and the raft state agree again.
		if cfg.ReplicaID != 0 && consensus.ReplicaID(m.GetReplicaId()) != cfg.ReplicaID {
			return nil, &consensus.StaleReplicaError{Group: cfg.ID, Persisted: consensus.ReplicaID(m.GetReplicaId()), Asked: cfg.ReplicaID}
		}
		if _, _, err := e.completeInstall(id, m, cfg.StateMachine); err != nil {
			return nil, err
		}
	}
	st, err := e.loadApplyState(id)
	if err != nil {
		return nil, err
	}
	// A replica with state from before this start may have acknowledged a
	// leader's lease (lease.go).
	restarted := st != nil
	if st == nil {
		if st, err = e.bootstrap(cfg); err != nil {
			return nil, err
		}
	}
	if cfg.ReplicaID != 0 && st.replicaID != cfg.ReplicaID {
		return nil, &consensus.StaleReplicaError{Group: cfg.ID, Persisted: st.replicaID, Asked: cfg.ReplicaID}
	}
	store, err := loadLogStore(e.cfg.Storage, id, st, e.cfg.EntryCacheEntries, e.cfg.EntryCacheBytes)
	if err != nil {
		return nil, err
	}
	g = &group{
		id:          cfg.ID,
		replicaID:   st.replicaID,
		e:           e,
		sm:          cfg.StateMachine,
		log:         e.cfg.Logger.With("group", id, "replica", uint64(st.replicaID)),
		stopped:     make(chan struct{}),
		store:       store,
		nodes:       map[consensus.ReplicaID]consensus.NodeID{},
		members:     st.members,
		lastHeard:   map[uint64]uint64{},
		proposals:   map[uint64]*request{},
		readBatches: map[uint64]*readBatch{},
		snapSending: map[uint64]uint64{},
	}
	g.lease.acks = map[uint64]int64{}
	if restarted {
		g.abstainUntil = uint64(e.cfg.ElectionTicks)
	}
	g.mu.changed = make(chan struct{})
	g.mu.quorumOK = true
	g.mu.status.ID, g.mu.status.ReplicaID = cfg.ID, st.replicaID
	for _, m := range st.members {
		g.nodes[m.ReplicaID] = m.NodeID
	}
	g.nodes[st.replicaID] = e.cfg.NodeID
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("start raft: %v", p)
		}
	}()
	g.rn, err = etcdraft.NewRawNode(g.raftConfig(st.appliedIndex))
	if err != nil {
		return nil, err
	}
	bs := g.rn.BasicStatus()
	g.term, g.commit, g.lead, g.raftState = bs.GetTerm(), bs.GetCommit(), bs.Lead, bs.RaftState
	g.publishStatus(true)
	single := func(cs *pb.ConfState) bool {
		return len(cs.GetVoters()) == 1 && cs.GetVoters()[0] == uint64(st.replicaID) && len(cs.GetVotersOutgoing()) == 0
	}
	if single(st.confState) || (cfg.Campaign && isVoter(st.confState, uint64(st.replicaID))) {
		// A group of one voter, or the designated first leader of a new
		// group, need not wait an election timeout.
		if err := g.rn.Campaign(); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// raftConfig is the configuration of g's RawNode, recovering from the log
// store with entries up to applied already applied.
func (g *group) raftConfig(applied uint64) *etcdraft.Config {
	cfg := &g.e.cfg
	return &etcdraft.Config{
		ID:                        uint64(g.replicaID),
		ElectionTick:              cfg.ElectionTicks,
		HeartbeatTick:             cfg.HeartbeatTicks,
		Storage:                   g.store,
		Applied:                   applied,
		MaxSizePerMsg:             cfg.MaxSizePerMsg,
		MaxCommittedSizePerReady:  cfg.MaxSizePerMsg,
		MaxUncommittedEntriesSize: cfg.MaxUncommittedEntriesSize,
		MaxInflightMsgs:           cfg.MaxInflightMsgs,
		CheckQuorum:               true,
		PreVote:                   true,
		// Leases are the engine's own (lease.go); raft's ReadIndex always
		// confirms leadership with a heartbeat round.
		ReadOnlyOption: etcdraft.ReadOnlySafe,
		// Log writes are synced off the scheduler's path (syncer.go) and
		// committed entries are applied without waiting for a sync.
		AsyncStorageWrites: true,
		Logger:             raftLogger{g.log},
		// Only the leader proposes (see Propose); followers answer
		// NotLeaderError so the router forwards. This also makes the term
		// of a proposal's entry known to the proposer.
		DisableProposalForwarding: true,
		StepDownOnRemoval:         true,
	}
}

func isVoter(cs *pb.ConfState, id uint64) bool {
	for _, v := range cs.GetVoters() {
		if v == id {
			return true
		}
	}
	return false
}

// bootstrap persists the initial state of a group new to this node.
func (e *Engine) bootstrap(cfg consensus.GroupConfig) (*applyState, error) {
	if cfg.ReplicaID == 0 {
		return nil, errors.New("no persisted state and no replica id")
	}
	b := e.cfg.Storage.NewBatch()
	defer b.Close()
	var st *applyState
	if len(cfg.Members) > 0 {
		var err error
		if st, err = writeInitialState(b, uint64(cfg.ID), cfg.ReplicaID, cfg.Members); err != nil {
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
		if _, err := cfg.StateMachine.Apply(b, []consensus.Entry{{Index: 1, Term: 1, Type: consensus.EntryMembership, Members: st.members}}); err != nil {
			return nil, fmt.Errorf("bootstrap: apply membership: %w", err)
		}
	} else {
		// A replica that joins an existing group: it persists only its id
		// and waits for the leader's snapshot.
		st = &applyState{replicaID: cfg.ReplicaID, confState: &pb.ConfState{}}
		v, err := encodeApplyState(st)
		if err != nil {
			return nil, err
		}
		if err := b.Set(storage.RaftApplyStateKey(uint64(cfg.ID)), v); err != nil {
			return nil, err
		}
	}
	if err := b.Commit(true); err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	return st, nil
}

// writeInitialState writes the raft state of a replica that starts a group
// with members. Every initial replica starts with the same virtual entry 1
// (term 1) holding the configuration, already applied and truncated;
// replicas added later receive a snapshot first, as index 1 is never in a
// log.
func writeInitialState(b *storage.Batch, id uint64, self consensus.ReplicaID, ms []consensus.Replica) (*applyState, error) {
	if err := validateMembers(ms, self); err != nil {
		return nil, err
	}
	cs := confStateFromMembers(ms)
	st := &applyState{
		replicaID:    self,
		appliedIndex: 1, appliedTerm: 1, truncatedIndex: 1, truncatedTerm: 1,
		confState: cs,
		members:   membersFromConfState(cs, nodeMap(ms)),
	}
	hs, err := proto.Marshal(&pb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(1)})
	if err != nil {
		return nil, err
	}
	if err := b.Set(storage.RaftHardStateKey(id), hs); err != nil {
		return nil, err
	}
	v, err := encodeApplyState(st)
	if err != nil {
		return nil, err
	}
	if err := b.Set(storage.RaftApplyStateKey(id), v); err != nil {
		return nil, err
	}
	return st, nil
}

// WriteInitialState implements consensus.Engine.
func (e *Engine) WriteInitialState(b *storage.Batch, id consensus.GroupID, self consensus.ReplicaID, members []consensus.Replica) (bool, error) {
	for _, k := range [][]byte{storage.RaftApplyStateKey(uint64(id)), storage.RaftHardStateKey(uint64(id)), installKey(uint64(id))} {
		if _, ok, err := b.Get(k); err != nil {
			return false, fmt.Errorf("raft: group %d: %w", id, err)
		} else if ok {
			return false, nil
		}
	}
	if _, err := writeInitialState(b, uint64(id), self, members); err != nil {
		return false, fmt.Errorf("raft: group %d: initial state: %w", id, err)
	}
	return true, nil
}

func nodeMap(ms []consensus.Replica) map[consensus.ReplicaID]consensus.NodeID {
	out := make(map[consensus.ReplicaID]consensus.NodeID, len(ms))
	for _, m := range ms {
		out[m.ReplicaID] = m.NodeID
	}
	return out
}

// Group implements consensus.Engine.
func (e *Engine) Group(id consensus.GroupID) (consensus.Group, bool) {
	g := e.lookup(id)
	if g == nil {
		return nil, false
	}
	return g, true
}

func (e *Engine) lookup(id consensus.GroupID) *group {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.mu.groups[id]
}

// StopGroup implements consensus.Engine.
func (e *Engine) StopGroup(id consensus.GroupID) error {
	e.mu.Lock()
	g := e.mu.groups[id]
	delete(e.mu.groups, id)
	e.mu.Unlock()
	if g == nil {
		return fmt.Errorf("raft: group %d: %w", id, consensus.ErrGroupNotFound)
	}
	g.stop()
	return nil
}

// stop asks the scheduler to stop g and waits until it has.
func (g *group) stop() {
	g.mu.Lock()
	wake := false
	if !g.mu.stopped {
		g.mu.inbox.stop = true
		wake = !g.mu.queued
		g.mu.queued = true
	}
	g.mu.Unlock()
	if wake {
		g.e.sched.enqueue(g)
	}
	<-g.stopped
}

// DestroyGroup implements consensus.Engine: it deletes the group's raft
// log, hard state, apply state and any staged snapshot, not the state
// machine's keys.
func (e *Engine) DestroyGroup(id consensus.GroupID) error {
	if err := e.StopGroup(id); err != nil && !errors.Is(err, consensus.ErrGroupNotFound) {
		return err
	}
	if err := e.removeStaged(uint64(id)); err != nil {
		return fmt.Errorf("raft: group %d: %w", id, err)
	}
	b := e.cfg.Storage.NewWriteBatch()
	defer b.Close()
	if err := b.DeleteSpan(storage.EngineLocalSpan(uint64(id))); err != nil {
		return err
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("raft: group %d: destroy: %w", id, err)
	}
	return nil
}

// Close implements consensus.Engine: it stops every group (failing their
// pending requests with consensus.ErrStopped), then the transport and the
// scheduler. It does not close the storage engine. Safe to call twice.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.mu.closed = true
		groups := e.mu.groups
		e.mu.groups = map[consensus.GroupID]*group{}
		e.mu.Unlock()
		for _, g := range groups {
			g.stop()
		}
		e.cancel()
		_ = e.transport.Close()
		e.wg.Wait()
		e.sched.close()
		e.syncer.close()
	})
	return nil
}
