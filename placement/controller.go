package placement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
)

// ControllerConfig configures the controller.
type ControllerConfig struct {
	NodeID  uint64
	Meta    *cluster.Meta
	Catalog *cluster.Catalog
	Router  *router.Router
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

// ControllerNode returns the node that leads, 0 if none.
func ControllerNode(ctx context.Context, ops *cluster.Operations) (uint64, error) {
	return ops.Controller(ctx)
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

// round is one planning round.
func (c *Controller) round(ctx context.Context, wg *sync.WaitGroup) {
	log := c.cfg.Logger
	st := c.cfg.Meta.State()
	now := time.Now().UTC()
	// Members: note when a node went away.
	for id, m := range st.Members {
		if _, live := st.Nodes[id]; !live && m.DownSince.IsZero() && !m.Decommissioned {
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
	ops, err := ListOperations(ctx, c.store.ops)
	if err != nil {
		log.Warn("list operations", "err", err)
		return
	}
	ops = c.collectGarbage(ctx, ops)
	idle := map[uint64]bool{}
	for _, op := range ops {
		if op.Active() && op.Partition != 0 {
			idle[op.Partition] = false
		}
	}
	c.syncRings(ctx, st, reports, func(id uint64) bool { _, b := idle[id]; return !b })
	busy := map[uint64]bool{}
	moves, active := 0, 0
	for _, op := range ops {
		if !op.Active() {
			continue
		}
		active++
		if op.Partition != 0 {
			busy[op.Partition] = true
		}
		if op.Kind == KindMove || op.Kind == KindRepair {
			moves++
		}
	}
	view := c.view(st, now, busy)
	for id, r := range reports {
		for node, why := range r.failed {
			if view.Failed == nil {
				view.Failed = map[uint64]map[uint64]string{}
			}
			if view.Failed[id] == nil {
				view.Failed[id] = map[uint64]string{}
			}
			view.Failed[id][node] = why
		}
	}
	submitMoves := func(kind string, planned []Move) {
		for _, m := range planned {
			op := &Operation{Kind: kind, State: StatePending, Table: m.Table, Partition: m.Partition, From: m.From, To: m.To, Reason: m.Reason}
			if err := c.submit(ctx, op); err != nil {
				log.Warn("submit operation", "err", err)
				return
			}
			busy[m.Partition] = true
			ops = append(ops, op)
			active++
			log.Info("planned operation", "op", op.ID, "kind", kind, "partition", m.Partition, "from", m.From, "to", m.To, "reason", m.Reason)
		}
	}
	// Repairs of dead nodes and failed replicas come first.
	if len(view.Dead) > 0 || len(view.Failed) > 0 {
		submitMoves(KindRepair, PlanRepairs(view, c.cfg.MaxConcurrentMoves-moves))
	}
	// splits counts each table's partitions plus its active splits: what
	// it will have once they are done.
	splits := map[uint64]int{}
	for _, op := range ops {
		if op.Active() && op.Kind == KindSplit {
			splits[op.Table]++
		}
	}
	partitionsAfter := func(table uint64) int { return len(st.Ring(table).Partitions()) + splits[table] }
	if c.capped == nil {
		c.capped = map[uint64]bool{}
	}
	// atCap reports whether a table may not be split further, logging it
	// the first time.
	atCap := func(table uint64, why string) bool {
		n := partitionsAfter(table)
		if n < c.cfg.MaxPartitionsPerTable {
			delete(c.capped, table)
			return false
		}
		if !c.capped[table] {
			c.capped[table] = true
			name := strconv.FormatUint(table, 10)
			if t := st.Schema.ByID[table]; t != nil {
				name = t.QualifiedName()
			}
			log.Warn("not splitting table: at max_partitions_per_table", "table", name, "partitions", n,
				"max_partitions_per_table", c.cfg.MaxPartitionsPerTable, "reason", why)
		}
		return true
	}
	// Size-based splits.
	if sizeCheck {
		for id, r := range reports {
			if busy[id] || r.desc == nil || r.bytes <= c.cfg.PhysicalPartitionMaxBytes || st.Schema.ByID[r.desc.GetTableId()] == nil {
				continue
			}
			if atCap(r.desc.GetTableId(), fmt.Sprintf("partition %d holds %d bytes, over the %d-byte limit", id, r.bytes, c.cfg.PhysicalPartitionMaxBytes)) {
				continue
			}
			op := &Operation{Kind: KindSplit, State: StatePending, Table: r.desc.GetTableId(), Partition: id,
				Reason: fmt.Sprintf("partition holds %d bytes, over the %d-byte limit", r.bytes, c.cfg.PhysicalPartitionMaxBytes)}
			if err := c.submit(ctx, op); err != nil {
				log.Warn("submit split", "err", err)
				continue
			}
			busy[id] = true
			splits[r.desc.GetTableId()]++
			ops = append(ops, op)
			active++
			log.Info("planned split", "op", op.ID, "partition", id, "bytes", r.bytes)
		}
	}
	// Throughput splits: a table needs ceil(RU/s / max per partition)
	// partitions.
	for id, t := range st.Schema.ByID {
		if t.Options.Throughput <= 0 {
			continue
		}
		parts := st.Ring(id).Partitions()
		need := (t.Options.Throughput + c.cfg.PhysicalPartitionMaxRU - 1) / c.cfg.PhysicalPartitionMaxRU
		if need > int64(len(parts)+splits[id]) && atCap(id, fmt.Sprintf("%s is provisioned %d RU/s, which needs %d partitions of %d RU/s",
			t.QualifiedName(), t.Options.Throughput, need, c.cfg.PhysicalPartitionMaxRU)) {
			continue
		}
		need = min(need, int64(c.cfg.MaxPartitionsPerTable))
		splitting := 0
		for _, op := range ops {
			if op.Active() && op.Kind == KindSplit && op.Table == id {
				splitting++
			}
		}
		for i := 0; i < len(parts) && int64(len(parts)+splitting) < need; i++ {
			p := widest(parts, busy)
			if p == nil {
				break
			}
			op := &Operation{Kind: KindSplit, SplitBy: "throughput", State: StatePending, Table: id, Partition: p.GetId(),
				Reason: fmt.Sprintf("%s is provisioned %d RU/s, over %d RU/s per partition for %d partitions", t.QualifiedName(), t.Options.Throughput, c.cfg.PhysicalPartitionMaxRU, len(parts))}
			if err := c.submit(ctx, op); err != nil {
				log.Warn("submit throughput split", "err", err)
				break
			}
			busy[p.GetId()] = true
			splitting++
			splits[id]++
			ops = append(ops, op)
			active++
			log.Info("planned throughput split", "op", op.ID, "partition", p.GetId(), "table", t.QualifiedName())
		}
	}
	// Automatic rebalancing, only when the cluster is calm: every member
	// up, nothing else in flight.
	if active == 0 && !c.cfg.DisableAutoRebalance && c.stable(st, now) {
		submitMoves(KindMove, PlanRebalance(view, c.cfg.RebalanceTolerance, c.cfg.MaxConcurrentMoves))
	}
	// Learners left behind by a move that failed halfway (its target
	// died) hold a partition at 5 replicas: remove them.
	c.removeOrphanLearners(ctx, reports, busy)
	// Leadership stays even across nodes.
	c.balanceLeaders(ctx, st, reports, busy)
	c.schedule(ctx, wg, ops)
}

// widest returns the partition with the widest token range that is not busy.
func widest(parts []*kvpb.Descriptor, busy map[uint64]bool) *kvpb.Descriptor {
	var best *kvpb.Descriptor
	var bestW uint64
	for _, p := range parts {
		if busy[p.GetId()] || p.GetEnd() == p.GetStart() {
			continue
		}
		w := uint64(p.GetEnd() - p.GetStart())
		if best == nil || w > bestW {
			best, bestW = p, w
		}
	}
	return best
}

// view is the planning view of the cluster.
func (c *Controller) view(st *cluster.State, now time.Time, busy map[uint64]bool) View {
	v := View{Live: c.liveNodes(st), Dead: map[uint64]bool{}, Busy: busy}
	for id := range st.Members {
		if st.MemberState(id, now, c.cfg.DeadAfter) == "dead" {
			v.Dead[id] = true
		}
	}
	for _, r := range st.Rings {
		if st.Schema.ByID[r.Table()] != nil {
			v.Parts = append(v.Parts, r.Partitions()...)
		}
	}
	return v
}

// stable reports that every member is up (or decommissioned).
func (c *Controller) stable(st *cluster.State, now time.Time) bool {
	for id := range st.Members {
		switch st.MemberState(id, now, c.cfg.DeadAfter) {
		case "up", "decommissioned":
		default:
			return false
		}
	}
	return len(st.Nodes) > 0
}

// balanceLeaders transfers leaderships from nodes that lead more than their
// share.
func (c *Controller) balanceLeaders(ctx context.Context, st *cluster.State, reports map[uint64]*report, busy map[uint64]bool) {
	live := map[uint64]bool{}
	for _, n := range c.liveNodes(st) {
		live[n.ID] = true
	}
	var views []LeaderView
	for id, r := range reports {
		if r.desc == nil || r.leader == 0 {
			continue
		}
		lv := LeaderView{Partition: id, Leader: r.leader}
		for _, rd := range r.desc.GetReplicas() {
			if !rd.GetLearner() {
				lv.Voters = append(lv.Voters, rd.GetNodeId())
			}
		}
		views = append(views, lv)
	}
	for _, t := range PlanLeaders(views, live, busy, c.cfg.MaxLeaderTransfers) {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := c.cfg.Router.TransferLeader(tctx, t.Partition, consensus.NodeID(t.To)); err != nil {
			c.cfg.Logger.Debug("balance leadership", "partition", t.Partition, "to", t.To, "err", err)
		} else {
			c.cfg.Logger.Debug("moved leadership", "partition", t.Partition, "from", t.From, "to", t.To)
		}
		cancel()
	}
}

// removeOrphanLearners removes learners of partitions that no operation is
// moving: only a move adds learners, and a move that ended without
// promoting its learner leaves it behind.
func (c *Controller) removeOrphanLearners(ctx context.Context, reports map[uint64]*report, busy map[uint64]bool) {
	for id, r := range reports {
		if busy[id] || r.desc == nil || r.leader == 0 {
			continue
		}
		for _, rd := range r.desc.GetReplicas() {
			if !rd.GetLearner() {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			d, err := c.cfg.Router.ChangeReplicas(cctx, id, []*kvpb.ReplicaChange{{Type: kvpb.ReplicaChange_REMOVE, Replica: rd}})
			if err == nil {
				err = c.syncCopy(cctx, d)
			}
			cancel()
			if err != nil {
				c.cfg.Logger.Warn("remove orphan learner", "partition", id, "node", rd.GetNodeId(), "err", err)
			} else {
				c.cfg.Logger.Info("removed orphan learner", "partition", id, "node", rd.GetNodeId())
			}
			break
		}
	}
}

// collectGarbage deletes finished operations beyond the newest 500.
func (c *Controller) collectGarbage(ctx context.Context, ops []*Operation) []*Operation {
	const keep = 500
	finished := 0
	var out []*Operation
	for _, op := range ops { // newest first
		if op.Active() {
			out = append(out, op)
			continue
		}
		finished++
		if finished > keep {
			_ = c.store.ops.Delete(ctx, op.ID, c.fenceConds()...)
			continue
		}
		out = append(out, op)
	}
	return out
}

// liveNodes lists registered, non-draining nodes as placement candidates.
func (c *Controller) liveNodes(st *cluster.State) []Node {
	var out []Node
	for _, id := range st.NodeIDs() {
		n := st.Nodes[id]
		if m := st.Members[id]; n.Draining || (m != nil && (m.Draining || m.Decommissioned)) {
			continue
		}
		out = append(out, Node{ID: id, Zone: n.Label("zone", ""), Rack: n.Label("rack", "")})
	}
	return out
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
// running ones.
func (c *Controller) schedule(ctx context.Context, wg *sync.WaitGroup, ops []*Operation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	moves := 0
	for _, op := range c.mu.running {
		if op.Kind == KindMove || op.Kind == KindRepair {
			moves++
		}
	}
	// Oldest first.
	for i := len(ops) - 1; i >= 0; i-- {
		op := ops[i]
		if !op.Active() || c.mu.running[op.ID] != nil {
			continue
		}
		if op.Partition != 0 {
			if other, ok := c.mu.busy[op.Partition]; ok && other != op.ID {
				continue
			}
		}
		if op.Kind == KindMove || op.Kind == KindRepair {
			if moves >= c.cfg.MaxConcurrentMoves {
				continue
			}
			moves++
		}
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

// report is what the nodes say about one partition.
type report struct {
	desc    *kvpb.Descriptor // the most authoritative descriptor seen
	leader  uint64           // node of the leader, 0 if unknown
	commit  uint64
	applied map[uint64]uint64 // node -> applied index
	bytes   int64             // stored bytes (size checks only)
	failed  map[uint64]string // node -> why its replica stopped
}

// collect asks every live node for its replicas.
func (c *Controller) collect(ctx context.Context, st *cluster.State, stats bool) map[uint64]*report {
	out := map[uint64]*report{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range st.NodeIDs() {
		wg.Add(1)
		go func(node uint64) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			resp, err := c.cfg.Router.ReplicaStatus(cctx, consensus.NodeID(node), &kvpb.ReplicaStatusRequest{Stats: stats})
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, rs := range resp.GetReplicas() {
				d := rs.GetDesc()
				r := out[d.GetId()]
				if r == nil {
					r = &report{applied: map[uint64]uint64{}}
					out[d.GetId()] = r
				}
				r.applied[node] = rs.GetApplied()
				r.bytes = max(r.bytes, rs.GetBytes())
				if rs.GetFailed() != "" {
					if r.failed == nil {
						r.failed = map[uint64]string{}
					}
					r.failed[node] = rs.GetFailed()
				}
				better := r.desc == nil || d.GetGeneration() > r.desc.GetGeneration() ||
					(rs.GetLeader() && d.GetGeneration() >= r.desc.GetGeneration())
				if better {
					r.desc = d
				}
				if rs.GetLeader() {
					r.leader, r.commit = node, rs.GetCommit()
				}
			}
		}(id)
	}
	wg.Wait()
	return out
}

// syncRings makes the routing copies in etcd follow the groups' own
// descriptors: a newer generation (a membership change or split applied)
// replaces the copy; a partition the rings do not know yet (the right half
// of a split) is added. Every write is a compare-and-swap on the copy read.
func (c *Controller) syncRings(ctx context.Context, st *cluster.State, reports map[uint64]*report, idle func(uint64) bool) {
	copyOf := func(st *cluster.State, d *kvpb.Descriptor) *kvpb.Descriptor {
		return st.TablePartition(d.GetTableId(), d.GetId())
	}
	sync := func(old, d *kvpb.Descriptor) {
		if err := c.cfg.Catalog.SyncPartition(ctx, d.GetTableId(), old, d); err != nil {
			if !errors.Is(err, cluster.ErrConflict) {
				c.cfg.Logger.Warn("sync routing copy", "partition", d.GetId(), "err", err)
			}
			return
		}
		c.cfg.Logger.Debug("synced routing copy", "partition", d.GetId(), "generation", d.GetGeneration(), "start", d.GetStart(), "end", d.GetEnd())
	}
	// First newer versions of known partitions (a split's left half
	// shrinks here), then partitions the rings do not know (its right
	// half), so that the copies never overlap.
	var missing []*kvpb.Descriptor
	for _, r := range reports {
		d := r.desc
		if d == nil || !hasRange(d) || st.Schema.ByID[d.GetTableId()] == nil {
			continue
		}
		old := copyOf(st, d)
		switch {
		case old == nil:
			missing = append(missing, d)
		case old.GetGeneration() < d.GetGeneration():
			sync(old, d)
		case old.GetGeneration() == d.GetGeneration() && !sameReplicas(old, d) && idle(d.GetId()):
			// A move announced a learner in the copy and then failed
			// before the group took it: the group is the truth.
			sync(old, d)
		}
	}
	if len(missing) == 0 {
		return
	}
	st = c.cfg.Meta.State()
	for _, d := range missing {
		if copyOf(st, d) != nil || len(st.Ring(d.GetTableId()).Overlapping(d.GetStart(), d.GetEnd())) > 0 {
			continue
		}
		sync(nil, d)
	}
}

func hasRange(d *kvpb.Descriptor) bool { return d.GetStart() <= d.GetEnd() }
