package placement

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// This file holds the controller's round decisions as pure functions of a
// snapshot: the cluster state, what the nodes reported and the stored
// operations in; a plan out. The controller (controller.go) only gathers
// the snapshot and carries the plan out, so a decision is changed and
// tested here, on plain data, without a cluster (testdata/*.txt).

// Policy is the part of the controller's configuration its decisions read
// (ControllerConfig documents each field and its default).
type Policy struct {
	DeadAfter                 time.Duration
	MaxConcurrentMoves        int
	PhysicalPartitionMaxBytes int64
	PhysicalPartitionMaxRU    int64
	MaxPartitionsPerTable     int
	RebalanceTolerance        int
	DisableAutoRebalance      bool
	MaxLeaderTransfers        int
}

// policy returns the decision part of a configuration (defaults set).
func (c *ControllerConfig) policy() Policy {
	return Policy{
		DeadAfter: c.DeadAfter, MaxConcurrentMoves: c.MaxConcurrentMoves,
		PhysicalPartitionMaxBytes: c.PhysicalPartitionMaxBytes, PhysicalPartitionMaxRU: c.PhysicalPartitionMaxRU,
		MaxPartitionsPerTable: c.MaxPartitionsPerTable, RebalanceTolerance: c.RebalanceTolerance,
		DisableAutoRebalance: c.DisableAutoRebalance, MaxLeaderTransfers: c.MaxLeaderTransfers,
	}
}

// Report is what the nodes said about one partition.
type Report struct {
	Desc    *kvpb.Descriptor  // the most authoritative descriptor seen
	Leader  uint64            // node of the leader, 0 if unknown
	Commit  uint64            // the leader's commit index
	Applied map[uint64]uint64 // node -> applied index
	Bytes   int64             // stored bytes (asked with stats only)
	Failed  map[uint64]string // node -> why its replica stopped
}

// MergeStatus folds one node's answer into reports (partition -> report).
// The most authoritative descriptor wins: a newer generation, or the
// leader's at an equal one, since a group's leader holds every committed
// change while a follower may lag.
func MergeStatus(reports map[uint64]*Report, node uint64, resp *kvpb.ReplicaStatusResponse) {
	for _, rs := range resp.GetReplicas() {
		d := rs.GetDesc()
		r := reports[d.GetId()]
		if r == nil {
			r = &Report{Applied: map[uint64]uint64{}}
			reports[d.GetId()] = r
		}
		r.Applied[node] = rs.GetApplied()
		r.Bytes = max(r.Bytes, rs.GetBytes())
		if rs.GetFailed() != "" {
			if r.Failed == nil {
				r.Failed = map[uint64]string{}
			}
			r.Failed[node] = rs.GetFailed()
		}
		if r.Desc == nil || d.GetGeneration() > r.Desc.GetGeneration() ||
			(rs.GetLeader() && d.GetGeneration() >= r.Desc.GetGeneration()) {
			r.Desc = d
		}
		if rs.GetLeader() {
			r.Leader, r.Commit = node, rs.GetCommit()
		}
	}
}

// Snapshot is what one planning round sees.
type Snapshot struct {
	State *cluster.State
	Now   time.Time
	// Reports are the nodes' answers by partition.
	Reports map[uint64]*Report
	// Ops are the stored operations, newest first.
	Ops []*Operation
	// SizeCheck is set on the rounds that compare partition sizes with
	// the limit (only they ask the nodes for stats).
	SizeCheck bool
}

// RoundPlan is what one round decided.
type RoundPlan struct {
	// Submit are the new operations (without id yet), in the order they
	// are submitted: repairs, size splits, throughput splits, rebalance
	// moves. Each marks its partition busy for the rest of the plan.
	Submit []*Operation
	// RemoveLearners are learners no operation is moving (one per
	// partition): a move that ended without promoting its learner left it.
	RemoveLearners []LearnerRemoval
	// Transfers even out leaderships.
	Transfers []Transfer
	// Capped are the splits max_partitions_per_table stopped; BelowCap the
	// tables it was checked for and did not stop (in the order checked).
	Capped   []CapHit
	BelowCap []uint64
}

// LearnerRemoval is an orphan learner to remove.
type LearnerRemoval struct {
	Partition uint64
	Replica   *kvpb.ReplicaDescriptor
}

// CapHit is a split max_partitions_per_table stopped.
type CapHit struct {
	Table      uint64
	Name       string // keyspace.table, or the id when the table is gone
	Partitions int    // what the table has, with its splits under way
	Reason     string // why it wanted to split
}

// PlanRound decides one round: repairs of dead nodes' and failed replicas,
// splits by size (SizeCheck rounds) and by provisioned throughput within
// MaxPartitionsPerTable, rebalance moves when the cluster is calm, orphan
// learners to remove and leadership transfers. Partitions with an active
// operation (stored or planned earlier in the same round) are left alone.
func PlanRound(p Policy, s Snapshot) RoundPlan {
	st := s.State
	var plan RoundPlan
	// ops are the active operations, stored and planned.
	var ops []*Operation
	busy := map[uint64]bool{}
	moves := 0
	for _, op := range s.Ops {
		if !op.Active() {
			continue
		}
		ops = append(ops, op)
		if op.Partition != 0 {
			busy[op.Partition] = true
		}
		if op.Kind == KindMove || op.Kind == KindRepair {
			moves++
		}
	}
	add := func(op *Operation) {
		plan.Submit = append(plan.Submit, op)
		ops = append(ops, op)
		busy[op.Partition] = true
	}
	submitMoves := func(kind string, planned []Move) {
		for _, m := range planned {
			add(&Operation{Kind: kind, State: StatePending, Table: m.Table, Partition: m.Partition, From: m.From, To: m.To, Reason: m.Reason})
		}
	}
	reports := sortedKeys(s.Reports)
	view := ViewOf(st, s.Now, p.DeadAfter, busy)
	for _, id := range reports {
		for node, why := range s.Reports[id].Failed {
			if view.Failed == nil {
				view.Failed = map[uint64]map[uint64]string{}
			}
			if view.Failed[id] == nil {
				view.Failed[id] = map[uint64]string{}
			}
			view.Failed[id][node] = why
		}
	}
	// Repairs of dead nodes and failed replicas come first.
	if len(view.Dead) > 0 || len(view.Failed) > 0 {
		submitMoves(KindRepair, PlanRepairs(view, p.MaxConcurrentMoves-moves))
	}
	// splits counts each table's active splits: partitionsAfter is what
	// the table will have once they are done.
	splits := map[uint64]int{}
	for _, op := range ops {
		if op.Kind == KindSplit {
			splits[op.Table]++
		}
	}
	partitionsAfter := func(table uint64) int { return len(st.Ring(table).Partitions()) + splits[table] }
	atCap := func(table uint64, why string) bool {
		n := partitionsAfter(table)
		if n < p.MaxPartitionsPerTable {
			plan.BelowCap = append(plan.BelowCap, table)
			return false
		}
		name := strconv.FormatUint(table, 10)
		if t := st.Schema.ByID[table]; t != nil {
			name = t.QualifiedName()
		}
		plan.Capped = append(plan.Capped, CapHit{Table: table, Name: name, Partitions: n, Reason: why})
		return true
	}
	// Size-based splits.
	if s.SizeCheck {
		for _, id := range reports {
			r := s.Reports[id]
			if busy[id] || r.Desc == nil || r.Bytes <= p.PhysicalPartitionMaxBytes || st.Schema.ByID[r.Desc.GetTableId()] == nil {
				continue
			}
			table := r.Desc.GetTableId()
			if atCap(table, fmt.Sprintf("partition %d holds %d bytes, over the %d-byte limit", id, r.Bytes, p.PhysicalPartitionMaxBytes)) {
				continue
			}
			add(&Operation{Kind: KindSplit, State: StatePending, Table: table, Partition: id,
				Reason: fmt.Sprintf("partition holds %d bytes, over the %d-byte limit", r.Bytes, p.PhysicalPartitionMaxBytes)})
			splits[table]++
		}
	}
	// Throughput splits: a table needs ceil(RU/s / max per partition)
	// partitions.
	for _, id := range sortedKeys(st.Schema.ByID) {
		t := st.Schema.ByID[id]
		if t.Options.Throughput <= 0 {
			continue
		}
		parts := st.Ring(id).Partitions()
		need := (t.Options.Throughput + p.PhysicalPartitionMaxRU - 1) / p.PhysicalPartitionMaxRU
		if need > int64(len(parts)+splits[id]) && atCap(id, fmt.Sprintf("%s is provisioned %d RU/s, which needs %d partitions of %d RU/s",
			t.QualifiedName(), t.Options.Throughput, need, p.PhysicalPartitionMaxRU)) {
			continue
		}
		need = min(need, int64(p.MaxPartitionsPerTable))
		for i := 0; i < len(parts) && int64(len(parts)+splits[id]) < need; i++ {
			w := widest(parts, busy)
			if w == nil {
				break
			}
			add(&Operation{Kind: KindSplit, SplitBy: "throughput", State: StatePending, Table: id, Partition: w.GetId(),
				Reason: fmt.Sprintf("%s is provisioned %d RU/s, over %d RU/s per partition for %d partitions", t.QualifiedName(), t.Options.Throughput, p.PhysicalPartitionMaxRU, len(parts))})
			splits[id]++
		}
	}
	// Automatic rebalancing, only when the cluster is calm: every member
	// up, nothing else in flight.
	if len(ops) == 0 && !p.DisableAutoRebalance && stable(st, s.Now, p.DeadAfter) {
		submitMoves(KindMove, PlanRebalance(view, p.RebalanceTolerance, p.MaxConcurrentMoves))
	}
	// Learners left behind by a move that failed halfway (its target
	// died) hold a partition at 5 replicas: remove them.
	for _, id := range reports {
		r := s.Reports[id]
		if busy[id] || r.Desc == nil || r.Leader == 0 {
			continue
		}
		for _, rd := range r.Desc.GetReplicas() {
			if rd.GetLearner() {
				plan.RemoveLearners = append(plan.RemoveLearners, LearnerRemoval{Partition: id, Replica: rd})
				break
			}
		}
	}
	// Leadership stays even across nodes.
	plan.Transfers = planLeaderTransfers(st, s.Reports, busy, p.MaxLeaderTransfers)
	return plan
}

// planLeaderTransfers hands leaderships from nodes that lead more than
// their share to the least leading live voters whose replica runs.
func planLeaderTransfers(st *cluster.State, reports map[uint64]*Report, busy map[uint64]bool, max int) []Transfer {
	live := map[uint64]bool{}
	for _, n := range liveNodes(st) {
		live[n.ID] = true
	}
	var views []LeaderView
	for id, r := range reports {
		if r.Desc == nil || r.Leader == 0 {
			continue
		}
		lv := LeaderView{Partition: id, Leader: r.Leader}
		for _, rd := range r.Desc.GetReplicas() {
			// A replica that failed cannot lead: a transfer to it fails,
			// round after round, while it waits for its repair.
			if _, failed := r.Failed[rd.GetNodeId()]; !rd.GetLearner() && !failed {
				lv.Voters = append(lv.Voters, rd.GetNodeId())
			}
		}
		views = append(views, lv)
	}
	return PlanLeaders(views, live, busy, max)
}

// sortedKeys returns a map's keys in order, so that plans do not depend
// on map iteration.
func sortedKeys[V any](m map[uint64]V) []uint64 { return slices.Sorted(maps.Keys(m)) }

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

// GoneMembers lists the members that are neither registered nor
// decommissioned and not yet marked down: the round records when it first
// saw each gone (cluster.Member.DownSince), which starts its DeadAfter.
func GoneMembers(st *cluster.State) []uint64 {
	var out []uint64
	for _, id := range sortedKeys(st.Members) {
		m := st.Members[id]
		if _, live := st.Nodes[id]; !live && m.DownSince.IsZero() && !m.Decommissioned {
			out = append(out, id)
		}
	}
	return out
}

// ViewOf is the planning view of a cluster state at time now: the routing
// copies of existing tables, the nodes that may take replicas, and the
// members dead for at least deadAfter. busy is shared, not copied.
func ViewOf(st *cluster.State, now time.Time, deadAfter time.Duration, busy map[uint64]bool) View {
	v := View{Live: liveNodes(st), Dead: map[uint64]bool{}, Busy: busy}
	for id := range st.Members {
		if st.MemberState(id, now, deadAfter) == "dead" {
			v.Dead[id] = true
		}
	}
	for _, id := range sortedKeys(st.Rings) {
		if r := st.Rings[id]; st.Schema.ByID[r.Table()] != nil {
			v.Parts = append(v.Parts, r.Partitions()...)
		}
	}
	return v
}

// liveNodes lists registered, non-draining nodes as placement candidates.
func liveNodes(st *cluster.State) []Node {
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

// stable reports that every member is up (or decommissioned).
func stable(st *cluster.State, now time.Time, deadAfter time.Duration) bool {
	for id := range st.Members {
		switch st.MemberState(id, now, deadAfter) {
		case "up", "decommissioned":
		default:
			return false
		}
	}
	return len(st.Nodes) > 0
}

// keepFinished is how many finished operations the store keeps (newest
// first) for operators to look at.
const keepFinished = 500

// garbage splits ops (newest first) into those to keep (every active one
// and the newest keep finished ones) and the finished ones to delete.
func garbage(ops []*Operation, keep int) (kept, drop []*Operation) {
	finished := 0
	for _, op := range ops {
		if !op.Active() {
			finished++
			if finished > keep {
				drop = append(drop, op)
				continue
			}
		}
		kept = append(kept, op)
	}
	return kept, drop
}

// RingSync is a routing copy to replace by what its group reports.
type RingSync struct {
	Old, New *kvpb.Descriptor
}

// PlanRingSyncs compares the routing copies with the groups' own
// descriptors: a newer generation (a membership change or split applied)
// replaces the copy, and so does an equal one with other replicas when no
// operation works on the partition (a move announced a learner in the copy
// and failed before the group took it: the group is the truth). A
// partition the rings do not know (the right half of a split) is returned
// in missing: it is added only after the updates (which shrink its left
// half) are visible, so that the copies never overlap (AddableRanges).
func PlanRingSyncs(st *cluster.State, reports map[uint64]*Report, ops []*Operation) (updates []RingSync, missing []*kvpb.Descriptor) {
	worked := map[uint64]bool{}
	for _, op := range ops {
		if op.Active() && op.Partition != 0 {
			worked[op.Partition] = true
		}
	}
	for _, id := range sortedKeys(reports) {
		d := reports[id].Desc
		if d == nil || !hasRange(d) || st.Schema.ByID[d.GetTableId()] == nil {
			continue
		}
		old := st.TablePartition(d.GetTableId(), d.GetId())
		switch {
		case old == nil:
			missing = append(missing, d)
		case old.GetGeneration() < d.GetGeneration():
			updates = append(updates, RingSync{Old: old, New: d})
		case old.GetGeneration() == d.GetGeneration() && !sameReplicas(old, d) && !worked[d.GetId()]:
			updates = append(updates, RingSync{Old: old, New: d})
		}
	}
	return updates, missing
}

// AddableRanges returns the partitions of missing that st's rings can take
// as they are: not known yet and overlapping nothing.
func AddableRanges(st *cluster.State, missing []*kvpb.Descriptor) []*kvpb.Descriptor {
	var out []*kvpb.Descriptor
	for _, d := range missing {
		if st.TablePartition(d.GetTableId(), d.GetId()) != nil || len(st.Ring(d.GetTableId()).Overlapping(d.GetStart(), d.GetEnd())) > 0 {
			continue
		}
		out = append(out, d)
	}
	return out
}

func hasRange(d *kvpb.Descriptor) bool { return d.GetStart() <= d.GetEnd() }

// runnable picks, from ops (newest first), the ones to start now, oldest
// first: active, not running already, on a partition no other running
// operation holds, and within maxMoves replica moves running at once.
// running maps op id -> op and busy partition -> op id of what runs now.
func runnable(ops []*Operation, running map[uint64]*Operation, busy map[uint64]uint64, maxMoves int) []*Operation {
	moves := 0
	for _, op := range running {
		if op.Kind == KindMove || op.Kind == KindRepair {
			moves++
		}
	}
	claimed := map[uint64]uint64{}
	var out []*Operation
	for i := len(ops) - 1; i >= 0; i-- {
		op := ops[i]
		if !op.Active() || running[op.ID] != nil {
			continue
		}
		if op.Partition != 0 {
			if other, ok := busy[op.Partition]; ok && other != op.ID {
				continue
			}
			if other, ok := claimed[op.Partition]; ok && other != op.ID {
				continue
			}
		}
		if op.Kind == KindMove || op.Kind == KindRepair {
			if moves >= maxMoves {
				continue
			}
			moves++
		}
		if op.Partition != 0 {
			claimed[op.Partition] = op.ID
		}
		out = append(out, op)
	}
	return out
}

// parentNext is what a rebalance, drain or decommission does after
// planning.
type parentNext int

const (
	parentSubmit   parentNext = iota // submit the moves planned
	parentWait                       // other operations' moves are in flight: plan again later
	parentFinished                   // nothing is left to move
)

// planParent plans the next moves of a rebalance, drain or decommission
// of node, with busy the partitions operations run on now. An error
// says why a drain can never complete.
func planParent(p Policy, kind string, node uint64, st *cluster.State, now time.Time, busy map[uint64]bool) ([]Move, parentNext, error) {
	view := ViewOf(st, now, p.DeadAfter, busy)
	var moves []Move
	switch kind {
	case KindRebalance:
		moves = PlanRebalance(view, p.RebalanceTolerance, p.MaxConcurrentMoves)
	default:
		moves = PlanDrain(view, map[uint64]bool{node: true}, p.MaxConcurrentMoves)
		if len(moves) == 0 && holds(st, node) && len(busy) == 0 {
			if err := CheckDrain(view, node); err != nil {
				return nil, 0, fmt.Errorf("%w; the node stays draining until then, or cosmosctl nodes undrain %d ends the drain", err, node)
			}
			return nil, 0, fmt.Errorf("node %d still holds replicas but no live node can take them; add a node, or cosmosctl nodes undrain %d ends the drain", node, node)
		}
	}
	switch {
	case len(moves) > 0:
		return moves, parentSubmit, nil
	case kind != KindRebalance && holds(st, node):
		return nil, parentWait, nil
	}
	return nil, parentFinished, nil
}

// holds reports whether node holds any replica in the routing copies.
func holds(st *cluster.State, node uint64) bool {
	if node == 0 {
		return false
	}
	for _, r := range st.Rings {
		for _, p := range r.Partitions() {
			if replicaOn(p, node) != nil {
				return true
			}
		}
	}
	return false
}
