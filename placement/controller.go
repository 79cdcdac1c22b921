package placement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// ControllerConfig configures the controller.
type ControllerConfig struct {
	NodeID uint64
	// Meta is the metadata (a *cluster.Meta).
	Meta MetaView
	// Catalog writes the routing copies (a *cluster.Catalog).
	Catalog CatalogWriter
	// Router reaches the nodes (a *router.Router).
	Router NodeClient
	// DeadAfter is how long a node may be gone before its replicas are
	// replaced. Default 5m.
	DeadAfter time.Duration
	// Interval between planning rounds. Default 1s.
	Interval time.Duration
	// SessionTTL is the election lease in seconds: a controller that dies
	// is replaced within about this long. Default 3.
	SessionTTL int
	// MaxConcurrentMoves bounds replica moves (snapshots) in flight across
	// the cluster. Default 2.
	MaxConcurrentMoves int
	// StepTimeout bounds one step of an operation (one membership change,
	// one catch-up wait) before it is retried. Default 2m.
	StepTimeout time.Duration
	// PhysicalPartitionMaxBytes splits partitions that grow past it.
	// Default 50 GB.
	PhysicalPartitionMaxBytes int64
	// PhysicalPartitionMaxRU is the most provisioned RU/s one partition
	// may serve: a table provisioned above it times its partition count
	// gets split. Default 10000.
	PhysicalPartitionMaxRU int64
	// SizeCheckEvery is how many rounds pass between size checks (which
	// scan every partition's stats). Default 10.
	SizeCheckEvery int
	// MaxPartitionsPerTable caps the physical partitions of one table:
	// neither size nor throughput splits go beyond it, so a huge
	// provisioned throughput cannot make the controller create millions of
	// raft groups. Default 1024.
	MaxPartitionsPerTable int
	// RebalanceTolerance is the replica-count difference between the most
	// and least loaded nodes that automatic rebalancing accepts. Default 1.
	RebalanceTolerance int
	// DisableAutoRebalance turns off automatic rebalancing (tests that
	// want a fixed placement).
	DisableAutoRebalance bool
	// MaxLeaderTransfers bounds leadership transfers per round. Default 2.
	MaxLeaderTransfers int
	Logger             *slog.Logger
	// Knobs are test hooks; nil in production.
	Knobs *ControllerKnobs
}

// ControllerKnobs are test hooks of the controller.
type ControllerKnobs struct {
	// StepDelay pauses before every recorded step of an operation, so a
	// test can stop the controller in the middle of one.
	StepDelay time.Duration
}

func (c *ControllerConfig) setDefaults() {
	if c.DeadAfter == 0 {
		c.DeadAfter = 5 * time.Minute
	}
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = 3
	}
	if c.MaxConcurrentMoves == 0 {
		c.MaxConcurrentMoves = 2
	}
	if c.StepTimeout == 0 {
		c.StepTimeout = 2 * time.Minute
	}
	if c.PhysicalPartitionMaxBytes == 0 {
		c.PhysicalPartitionMaxBytes = 50_000_000_000
	}
	if c.PhysicalPartitionMaxRU == 0 {
		c.PhysicalPartitionMaxRU = 10_000
	}
	if c.SizeCheckEvery == 0 {
		c.SizeCheckEvery = 10
	}
	if c.MaxPartitionsPerTable == 0 {
		c.MaxPartitionsPerTable = 1024
	}
	if c.RebalanceTolerance == 0 {
		c.RebalanceTolerance = 1
	}
	if c.MaxLeaderTransfers == 0 {
		c.MaxLeaderTransfers = 2
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Controller is the cluster's single decision maker: every node runs one,
// one at a time leads (etcd election). The leader keeps member records,
// syncs the routing copies of the rings with the groups' own descriptors,
// plans repairs and runs operations. Safe for concurrent use.
type Controller struct {
	cfg   ControllerConfig
	store *opStore

	rounds int // owned by lead
	// capped holds the tables whose splits max_partitions_per_table
	// stopped, so that it is logged once and not every round. Owned by
	// lead.
	capped map[uint64]bool
	// corrupt holds the messages of operation records that do not
	// decode, logged once each (warnCorrupt). Owned by lead.
	corrupt map[string]bool

	mu struct {
		sync.Mutex
		leading bool
		fence   fence
		running map[uint64]*Operation // op id -> op
		busy    map[uint64]uint64     // partition -> op id
	}
}

// NewController returns a controller; Run makes it campaign.
func NewController(cfg ControllerConfig) *Controller {
	cfg.setDefaults()
	c := &Controller{cfg: cfg, store: &opStore{ops: cfg.Meta.Operations()}}
	c.mu.running = map[uint64]*Operation{}
	c.mu.busy = map[uint64]uint64{}
	return c
}

// Leading reports whether this node is the controller now.
func (c *Controller) Leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.leading
}

// Run campaigns and, while elected, leads. It returns when ctx ends.
func (c *Controller) Run(ctx context.Context) {
	log := c.cfg.Logger
	for ctx.Err() == nil {
		lead, err := c.store.ops.Campaign(ctx, c.cfg.NodeID, time.Duration(c.cfg.SessionTTL)*time.Second)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("controller campaign", "err", err)
				sleepCtx(ctx, time.Second)
			}
			continue
		}
		leadCtx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-lead.Done():
			case <-leadCtx.Done():
			}
			cancel()
		}()
		fenceCond := lead.Fence()
		c.mu.Lock()
		c.mu.leading = true
		c.mu.fence = func() []metakv.Cond { return []metakv.Cond{fenceCond} }
		c.mu.Unlock()
		log.Info("became controller")
		c.lead(leadCtx)
		cancel()
		c.mu.Lock()
		c.mu.leading = false
		c.mu.Unlock()
		log.Info("stopped being controller")
		resign, stop := context.WithTimeout(context.Background(), 2*time.Second)
		_ = lead.Resign(resign)
		stop()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// lead runs planning rounds until leadership ends.
func (c *Controller) lead(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(c.cfg.Interval)
	defer tick.Stop()
	for {
		c.round(ctx, &wg)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// orphanRingsEvery is how many rounds pass between collections of orphan
// rings: a partial ring stays hidden for its pending record's lease (30s)
// anyway, so a minute's delay costs nothing.
const orphanRingsEvery = 60

// warnCorrupt logs the operation records that do not decode, each once
// per controller term rather than every round. Called by lead only.
func (c *Controller) warnCorrupt(err error) {
	if c.corrupt == nil {
		c.corrupt = map[string]bool{}
	}
	if msg := err.Error(); !c.corrupt[msg] {
		c.corrupt[msg] = true
		c.cfg.Logger.Warn("operation records that do not decode are skipped", "err", err)
	}
}

// round is one planning round: gather a snapshot (metadata, the nodes'
// reports, the stored operations), let PlanRound decide, carry the plan
// out and start what can run.
func (c *Controller) round(ctx context.Context, wg *sync.WaitGroup) {
	log := c.cfg.Logger
	// The operations first, then the state caught up with the store: a
	// round that saw an operation done with a state from before its last
	// writes (a split's two halves, a move's new replicas; the state
	// follows the store through a watch) planned it again.
	ops, err := ListOperations(ctx, c.store.ops)
	if errors.Is(err, ErrCorruptOperation) {
		// The others still run; the bad record stays for an operator.
		c.warnCorrupt(err)
	} else if err != nil {
		log.Warn("list operations", "err", err)
		return
	}
	if err := c.cfg.Meta.CatchUp(ctx); err != nil {
		log.Warn("catch up with the metadata", "err", err)
		return
	}
	st := c.cfg.Meta.State()
	now := time.Now().UTC()
	// Members: note when a node went away.
	for _, id := range GoneMembers(st) {
		if err := c.cfg.Meta.UpdateMember(ctx, id, func(m *cluster.Member) bool {
			if !m.DownSince.IsZero() {
				return false
			}
			m.DownSince = now
			return true
		}); err != nil {
			log.Warn("mark node down", "node", id, "err", err)
		} else {
			log.Info("node is down", "node", id)
		}
	}
	c.rounds++
	sizeCheck := c.rounds%c.cfg.SizeCheckEvery == 0
	if c.rounds%orphanRingsEvery == 0 {
		// A CREATE TABLE whose coordinator died midway leaves a partial
		// ring (cluster.Catalog.CreateTable); collect it.
		if n, err := c.cfg.Catalog.CollectOrphanRings(ctx); err != nil {
			log.Warn("collect orphan rings", "err", err)
		} else if n > 0 {
			log.Info("deleted rings of tables never created", "rings", n)
		}
	}
	reports := c.collect(ctx, st, sizeCheck)
	ops = c.collectGarbage(ctx, ops)
	c.syncRings(ctx, st, reports, ops)
	plan := PlanRound(c.cfg.policy(), Snapshot{State: st, Now: now, Reports: reports, Ops: ops, SizeCheck: sizeCheck})
	c.noteCaps(plan)
	// Submitted operations are the newest: they go first in ops (newest
	// first), so that schedule still starts the oldest first.
	var submitted []*Operation
	for _, op := range plan.Submit {
		if err := c.submit(ctx, op); err != nil {
			// The rest of the plan assumed this one stored; the next
			// round plans again from what is.
			log.Warn("submit operation", "kind", op.Kind, "partition", op.Partition, "err", err)
			break
		}
		submitted = append(submitted, op)
		log.Info("planned operation", "op", op.ID, "kind", op.Kind, "partition", op.Partition, "from", op.From, "to", op.To, "reason", op.Reason)
	}
	slices.Reverse(submitted)
	ops = append(submitted, ops...)
	for _, l := range plan.RemoveLearners {
		c.removeLearner(ctx, l)
	}
	for _, t := range plan.Transfers {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := c.cfg.Router.TransferLeader(tctx, t.Partition, consensus.NodeID(t.To)); err != nil {
			log.Debug("balance leadership", "partition", t.Partition, "to", t.To, "err", err)
		} else {
			log.Debug("moved leadership", "partition", t.Partition, "from", t.From, "to", t.To)
		}
		cancel()
	}
	c.schedule(ctx, wg, ops)
}

// noteCaps logs the tables whose splits max_partitions_per_table stopped,
// once per table until it is below the cap again.
func (c *Controller) noteCaps(plan RoundPlan) {
	if c.capped == nil {
		c.capped = map[uint64]bool{}
	}
	for _, t := range plan.BelowCap {
		delete(c.capped, t)
	}
	for _, h := range plan.Capped {
		if c.capped[h.Table] {
			continue
		}
		c.capped[h.Table] = true
		c.cfg.Logger.Warn("not splitting table: at max_partitions_per_table", "table", h.Name, "partitions", h.Partitions,
			"max_partitions_per_table", c.cfg.MaxPartitionsPerTable, "reason", h.Reason)
	}
}

// removeLearner removes an orphan learner: only a move adds learners, and
// a move that ended without promoting its learner leaves it behind.
func (c *Controller) removeLearner(ctx context.Context, l LearnerRemoval) {
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	d, err := c.cfg.Router.ChangeReplicas(cctx, l.Partition, []*kvpb.ReplicaChange{{Type: kvpb.ReplicaChange_REMOVE, Replica: l.Replica}})
	if err == nil {
		err = c.syncCopy(cctx, d)
	}
	if err != nil {
		c.cfg.Logger.Warn("remove orphan learner", "partition", l.Partition, "node", l.Replica.GetNodeId(), "err", err)
	} else {
		c.cfg.Logger.Info("removed orphan learner", "partition", l.Partition, "node", l.Replica.GetNodeId())
	}
}

// collectGarbage deletes finished operations beyond the newest
// keepFinished and returns the others.
func (c *Controller) collectGarbage(ctx context.Context, ops []*Operation) []*Operation {
	kept, drop := garbage(ops, keepFinished)
	for _, op := range drop {
		if err := c.store.ops.Delete(ctx, op.ID, c.fenceConds()...); err != nil {
			c.cfg.Logger.Debug("delete finished operation", "op", op.ID, "err", err)
		}
	}
	return kept
}

// submit persists a new operation.
func (c *Controller) submit(ctx context.Context, op *Operation) error {
	id, err := c.cfg.Catalog.AllocateID(ctx, "op", 1)
	if err != nil {
		return err
	}
	op.ID, op.Created = id, time.Now().UTC()
	return c.store.save(ctx, c.fence(), op)
}

func (c *Controller) fence() fence {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.fence
}

// fenceConds returns the conditions of the current fence (none when not
// leading).
func (c *Controller) fenceConds() []metakv.Cond {
	if f := c.fence(); f != nil {
		return f()
	}
	return nil
}

// schedule starts pending and resumed operations that do not conflict with
// running ones (runnable).
func (c *Controller) schedule(ctx context.Context, wg *sync.WaitGroup, ops []*Operation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, op := range runnable(ops, c.mu.running, c.mu.busy, c.cfg.MaxConcurrentMoves) {
		c.mu.running[op.ID] = op
		if op.Partition != 0 {
			c.mu.busy[op.Partition] = op.ID
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The round listed operations before it scheduled them, and a
			// run of this one may have ended meanwhile: the listed copy can
			// be stale (still active, without the split token or right
			// half id a finished run chose). Run from what is stored now,
			// or not at all: running a split twice splits twice.
			fresh, err := c.store.get(ctx, op.ID)
			switch {
			case err != nil:
				c.cfg.Logger.Warn("read operation before running it", "op", op.ID, "err", err)
			case fresh != nil && fresh.Active():
				c.execute(ctx, fresh)
			}
			c.mu.Lock()
			delete(c.mu.running, op.ID)
			if c.mu.busy[op.Partition] == op.ID {
				delete(c.mu.busy, op.Partition)
			}
			c.mu.Unlock()
		}()
	}
}

// execute runs one operation to completion or failure, persisting progress.
func (c *Controller) execute(ctx context.Context, op *Operation) {
	log := c.cfg.Logger.With("op", op.ID, "kind", op.Kind)
	if op.State == StatePending {
		op.State = StateRunning
		if err := c.store.save(ctx, c.fence(), op); err != nil {
			log.Warn("start operation", "err", err)
			return
		}
	}
	var err error
	switch op.Kind {
	case KindMove, KindRepair:
		err = c.runMove(ctx, op)
	case KindSplit:
		err = c.runSplit(ctx, op)
	case KindRebalance, KindDrain, KindDecommission:
		err = c.runParent(ctx, op)
	case KindMoveKey:
		err = c.runMoveKey(ctx, op)
	default:
		err = fmt.Errorf("unknown operation kind %q", op.Kind)
	}
	if ctx.Err() != nil {
		return // deposed: the next controller resumes it
	}
	if err != nil {
		op.State, op.Error = StateFailed, err.Error()
		log.Warn("operation failed", "err", err)
	} else {
		op.State, op.Progress = StateDone, 1
		log.Info("operation done")
	}
	if err := c.store.save(ctx, c.fence(), op); err != nil && ctx.Err() == nil {
		log.Warn("save operation", "err", err)
	}
}

// progress persists an operation's step.
func (c *Controller) progress(ctx context.Context, op *Operation, step, state, detail string, frac float64) error {
	if op.reportTo != nil {
		// An inline move reports into its parent, scaled into the
		// parent's remaining progress.
		return c.progress(ctx, op.reportTo, op.Kind+": "+step, state, detail, op.reportTo.Progress)
	}
	if k := c.cfg.Knobs; k != nil && k.StepDelay > 0 {
		sleepCtx(ctx, k.StepDelay)
	}
	op.step(step, state, detail)
	if frac > op.Progress {
		op.Progress = frac
	}
	return c.store.save(ctx, c.fence(), op)
}

// collect asks every live node for its replicas.
func (c *Controller) collect(ctx context.Context, st *cluster.State, stats bool) map[uint64]*Report {
	ids := st.NodeIDs()
	resps := make([]*kvpb.ReplicaStatusResponse, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			// A node that does not answer is left out: its partitions'
			// other replicas report them.
			resps[i], _ = c.cfg.Router.ReplicaStatus(cctx, consensus.NodeID(id), &kvpb.ReplicaStatusRequest{Stats: stats})
		}()
	}
	wg.Wait()
	out := map[uint64]*Report{}
	for i, id := range ids {
		if resps[i] != nil {
			MergeStatus(out, id, resps[i])
		}
	}
	return out
}

// syncRings makes the routing copies follow the groups' own descriptors
// (PlanRingSyncs). Every write is a compare-and-swap on the copy read; a
// conflict means someone else wrote it first, and the next round looks
// again.
func (c *Controller) syncRings(ctx context.Context, st *cluster.State, reports map[uint64]*Report, ops []*Operation) {
	sync := func(old, d *kvpb.Descriptor) {
		if err := c.cfg.Catalog.SyncPartition(ctx, d.GetTableId(), old, d); err != nil {
			if !errors.Is(err, cluster.ErrConflict) {
				c.cfg.Logger.Warn("sync routing copy", "partition", d.GetId(), "err", err)
			}
			return
		}
		c.cfg.Logger.Debug("synced routing copy", "partition", d.GetId(), "generation", d.GetGeneration(), "start", d.GetStart(), "end", d.GetEnd())
	}
	updates, missing := PlanRingSyncs(st, reports, ops)
	for _, u := range updates {
		sync(u.Old, u.New)
	}
	if len(missing) == 0 {
		return
	}
	for _, d := range AddableRanges(c.cfg.Meta.State(), missing) {
		sync(nil, d)
	}
}
