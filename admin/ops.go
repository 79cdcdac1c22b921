package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/placement"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
)

// toPB converts an operation for the API.
func toPB(st *cluster.State, op *placement.Operation) *adminpb.Operation {
	out := &adminpb.Operation{
		Id: op.ID, Kind: op.Kind, State: op.State, Partition: op.Partition, FromNode: op.From, ToNode: op.To,
		Node: op.Node, Reason: op.Reason, Progress: op.Progress, Error: op.Error, Children: op.Children,
		Parent: op.Parent, ToNodes: op.ToNodes,
		Created: op.Created.Format(time.RFC3339), Updated: op.Updated.Format(time.RFC3339),
	}
	if t := st.Schema.ByID[op.Table]; t != nil {
		out.Table = t.QualifiedName()
	}
	if op.SplitToken != nil {
		out.HasSplitToken, out.SplitToken = true, *op.SplitToken
	}
	for _, s := range op.Steps {
		out.Steps = append(out.Steps, &adminpb.Step{Name: s.Name, State: s.State, Detail: s.Detail, At: s.At.Format(time.RFC3339)})
	}
	return out
}

func (s *Server) submit(ctx context.Context, op *placement.Operation) (*adminpb.Operation, error) {
	if err := placement.Submit(ctx, s.cfg.Meta.Operations(), op); err != nil {
		return nil, status.Errorf(codes.Unavailable, "submit operation: %v", err)
	}
	return toPB(s.cfg.Meta.State(), op), nil
}

// resolveNode accepts a node name or id.
func resolveNode(st *cluster.State, ref string) (uint64, error) {
	if id, err := strconv.ParseUint(strings.TrimPrefix(ref, "n"), 10, 64); err == nil {
		if st.Members[id] != nil || st.Nodes[id] != nil {
			return id, nil
		}
	}
	for id, n := range st.Nodes {
		if n.Name == ref {
			return id, nil
		}
	}
	for id, m := range st.Members {
		if m.Info.Name == ref {
			return id, nil
		}
	}
	return 0, status.Errorf(codes.NotFound, "no node named %q", ref)
}

// partitionOf finds a partition and its table.
func partitionOf(st *cluster.State, id uint64) (*schema.Table, error) {
	d := st.Partition(id)
	if d == nil {
		return nil, status.Errorf(codes.NotFound, "partition %d does not exist", id)
	}
	t := st.Schema.ByID[d.GetTableId()]
	if t == nil {
		return nil, status.Errorf(codes.NotFound, "partition %d belongs to a dropped table", id)
	}
	return t, nil
}

// keyToken computes the token of partition-key literals.
func keyToken(t *schema.Table, key []string) (int64, error) {
	pk := t.PartitionKey()
	if len(key) != len(pk) {
		return 0, status.Errorf(codes.InvalidArgument, "table %s has %d partition key columns (%s), got %d values", t.QualifiedName(), len(pk), names(pk), len(key))
	}
	vals := make([][]byte, len(pk))
	for i, c := range pk {
		v, err := literal(c.Type, key[i])
		if err != nil {
			return 0, status.Errorf(codes.InvalidArgument, "key %s: %v", c.Name, err)
		}
		vals[i] = v
	}
	rk, err := ring.RoutingKey(vals)
	if err != nil {
		return 0, status.Errorf(codes.InvalidArgument, "%v", err)
	}
	return ring.Token(rk), nil
}

// Split implements adminpb.AdminServer.
func (s *Server) Split(ctx context.Context, req *adminpb.SplitRequest) (*adminpb.Operation, error) {
	st := s.cfg.Meta.State()
	t, err := partitionOf(st, req.GetPartition())
	if err != nil {
		return nil, err
	}
	d := st.Partition(req.GetPartition())
	if m := s.cfg.MaxPartitionsPerTable; m > 0 && len(st.Ring(t.ID).Partitions()) >= m {
		return nil, status.Errorf(codes.FailedPrecondition, "table %s has %d physical partitions, the maximum (max_partitions_per_table)", t.QualifiedName(), len(st.Ring(t.ID).Partitions()))
	}
	op := &placement.Operation{Kind: placement.KindSplit, Table: t.ID, Partition: d.GetId(), Reason: "requested by an operator"}
	switch {
	case req.GetHasAt() && len(req.GetKey()) > 0:
		return nil, status.Error(codes.InvalidArgument, "give a split token or a key, not both")
	case req.GetHasAt():
		at := req.GetAt()
		op.SplitToken = &at
	case len(req.GetKey()) > 0:
		tok, err := keyToken(t, req.GetKey())
		if err != nil {
			return nil, err
		}
		op.SplitToken = &tok
	}
	if op.SplitToken != nil && (*op.SplitToken <= d.GetStart() || *op.SplitToken > d.GetEnd()) {
		return nil, status.Errorf(codes.InvalidArgument, "token %d does not split partition %d: it holds tokens [%d, %d] and the right half must start after %d",
			*op.SplitToken, d.GetId(), d.GetStart(), d.GetEnd(), d.GetStart())
	}
	return s.submit(ctx, op)
}

// Move implements adminpb.AdminServer.
func (s *Server) Move(ctx context.Context, req *adminpb.MoveRequest) (*adminpb.Operation, error) {
	st := s.cfg.Meta.State()
	t, err := partitionOf(st, req.GetPartition())
	if err != nil {
		return nil, err
	}
	from, err := resolveNode(st, req.GetFrom())
	if err != nil {
		return nil, err
	}
	to, err := resolveNode(st, req.GetTo())
	if err != nil {
		return nil, err
	}
	d := st.Partition(req.GetPartition())
	has := func(n uint64) bool {
		for _, r := range d.GetReplicas() {
			if r.GetNodeId() == n {
				return true
			}
		}
		return false
	}
	if !has(from) {
		return nil, status.Errorf(codes.FailedPrecondition, "partition %d has no replica on node %s", d.GetId(), req.GetFrom())
	}
	if has(to) {
		return nil, status.Errorf(codes.FailedPrecondition, "partition %d already has a replica on node %s", d.GetId(), req.GetTo())
	}
	if st.Nodes[to] == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "node %s is not live", req.GetTo())
	}
	// A draining or decommissioned node takes no replicas: the controller
	// would move this one away again at once.
	if n, m := st.Nodes[to], st.Members[to]; n.Draining || (m != nil && (m.Draining || m.Decommissioned)) {
		return nil, status.Errorf(codes.FailedPrecondition, "node %s is draining or decommissioned and takes no replicas (cosmosctl nodes undrain to take it back)", req.GetTo())
	}
	return s.submit(ctx, &placement.Operation{Kind: placement.KindMove, Table: t.ID, Partition: d.GetId(), From: from, To: to, Reason: "requested by an operator"})
}

// MoveKey implements adminpb.AdminServer.
func (s *Server) MoveKey(ctx context.Context, req *adminpb.MoveKeyRequest) (*adminpb.Operation, error) {
	st := s.cfg.Meta.State()
	t, err := findTable(st, req.GetTable())
	if err != nil {
		return nil, err
	}
	tok, err := keyToken(t, req.GetKey())
	if err != nil {
		return nil, err
	}
	if len(req.GetTo()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "give at least one target node")
	}
	var to []uint64
	for _, ref := range req.GetTo() {
		id, err := resolveNode(st, ref)
		if err != nil {
			return nil, err
		}
		if st.Nodes[id] == nil {
			return nil, status.Errorf(codes.FailedPrecondition, "node %s is not live", ref)
		}
		if !slices.Contains(to, id) {
			to = append(to, id)
		}
	}
	if err := checkMoveKey(st, s.placementView(st), t.ID, tok, to); err != nil {
		return nil, err
	}
	return s.submit(ctx, &placement.Operation{Kind: placement.KindMoveKey, Table: t.ID, Token: &tok, ToNodes: to,
		Reason: fmt.Sprintf("move logical partition (%s) of %s", strings.Join(req.GetKey(), ", "), t.QualifiedName())})
}

// checkMoveKey refuses a move --key that could not do what it says: the
// operation puts replicas of the key's partition on the --to nodes, taking
// them from the others. With every target already holding a replica there
// is nothing to move, and the operation used to report "done" while the
// replicas stayed where they were (issue 17, 4 replicas on 4 nodes).
func checkMoveKey(st *cluster.State, view placement.View, table uint64, tok int64, to []uint64) error {
	d := st.Ring(table).Lookup(tok)
	if d == nil {
		return status.Errorf(codes.Unavailable, "no partition holds token %d yet; retry", tok)
	}
	var holders []string
	held := map[uint64]bool{}
	for _, r := range d.GetReplicas() {
		if !r.GetLearner() {
			held[r.GetNodeId()] = true
			holders = append(holders, nodeName(st, r.GetNodeId()))
		}
	}
	if len(to) > len(held) {
		return status.Errorf(codes.InvalidArgument, "--to names %d nodes, but the key's partition keeps %d replicas: name at most %d", len(to), len(held), len(held))
	}
	for _, id := range to {
		if !held[id] {
			return nil // at least one replica moves
		}
	}
	names := make([]string, len(to))
	for i, id := range to {
		names[i] = nodeName(st, id)
	}
	if len(view.Live) <= len(held) {
		return status.Errorf(codes.FailedPrecondition,
			"nothing to move: every live node (%d) already holds one of the key's %d replicas (on %s), so no replica can go anywhere else; move --key puts the replicas on the --to nodes, which needs more live nodes than replicas per partition (add a node first)",
			len(view.Live), len(held), strings.Join(holders, ", "))
	}
	holds := "already hold replicas"
	if len(names) == 1 {
		holds = "already holds a replica"
	}
	return status.Errorf(codes.FailedPrecondition,
		"nothing to move: %s %s of the key (its replicas are on %s); --to names the nodes that should hold them, so name nodes that do not yet",
		strings.Join(names, ", "), holds, strings.Join(holders, ", "))
}

// Rebalance implements adminpb.AdminServer.
func (s *Server) Rebalance(ctx context.Context, req *adminpb.RebalanceRequest) (*adminpb.RebalanceResponse, error) {
	st := s.cfg.Meta.State()
	resp := &adminpb.RebalanceResponse{}
	if req.GetDryRun() {
		view := s.placementView(st)
		// Partitions with an operation are left out of the plan, as the
		// controller leaves them: without the list the plan would show
		// moves that will not happen, so a store failure fails the call.
		ops, err := s.listOperations(ctx)
		if err != nil {
			return nil, status.Errorf(codes.Unavailable, "rebalance plan: %v", err)
		}
		for _, op := range ops {
			if op.Active() && op.Partition != 0 {
				view.Busy[op.Partition] = true
			}
		}
		// Plan the whole rebalance, not one round of it.
		for _, m := range placement.PlanRebalance(view, 1, 1<<20) {
			pm := &adminpb.PlannedMove{Partition: m.Partition, FromNode: m.From, ToNode: m.To, Reason: m.Reason}
			if t := st.Schema.ByID[m.Table]; t != nil {
				pm.Table = t.QualifiedName()
			}
			pm.FromName, pm.ToName = nodeName(st, m.From), nodeName(st, m.To)
			resp.Plan = append(resp.Plan, pm)
		}
		return resp, nil
	}
	op, err := s.submit(ctx, &placement.Operation{Kind: placement.KindRebalance, Reason: "requested by an operator"})
	if err != nil {
		return nil, err
	}
	resp.Operation = op
	return resp, nil
}

func nodeName(st *cluster.State, id uint64) string {
	if n := st.Nodes[id]; n != nil {
		return n.Name
	}
	if m := st.Members[id]; m != nil {
		return m.Info.Name
	}
	return fmt.Sprintf("n%d", id)
}

// DrainNode implements adminpb.AdminServer.
func (s *Server) DrainNode(ctx context.Context, req *adminpb.NodeRequest) (*adminpb.Operation, error) {
	return s.drainOp(ctx, req.GetNode(), placement.KindDrain)
}

// DecommissionNode implements adminpb.AdminServer.
func (s *Server) DecommissionNode(ctx context.Context, req *adminpb.NodeRequest) (*adminpb.Operation, error) {
	return s.drainOp(ctx, req.GetNode(), placement.KindDecommission)
}

// drainOp submits a drain or decommission after checking that it can
// complete: one that cannot would leave the node draining indefinitely
// (issue 17), so it is refused with the reason and the remedy instead.
func (s *Server) drainOp(ctx context.Context, ref, kind string) (*adminpb.Operation, error) {
	st := s.cfg.Meta.State()
	id, err := resolveNode(st, ref)
	if err != nil {
		return nil, err
	}
	if m := st.Members[id]; m != nil && m.Decommissioned {
		return nil, status.Errorf(codes.FailedPrecondition, "node %s is decommissioned", nodeLabel(st, id))
	}
	if err := placement.CheckDrain(s.placementView(st), id); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "%s %s: %v", kind, nodeLabel(st, id), err)
	}
	return s.submit(ctx, &placement.Operation{Kind: kind, Node: id, Reason: "requested by an operator"})
}

// placementView is the cluster as the controller plans on it
// (placement.ViewOf): live nodes that take replicas (registered, neither
// draining nor decommissioned), dead members and the partitions of
// existing tables.
func (s *Server) placementView(st *cluster.State) placement.View {
	return placement.ViewOf(st, time.Now(), s.cfg.DeadAfter, map[uint64]bool{})
}

// nodeLabel names a node in messages: "name (id N)".
func nodeLabel(st *cluster.State, id uint64) string {
	if n := st.Nodes[id]; n != nil && n.Name != "" {
		return fmt.Sprintf("%s (id %d)", n.Name, id)
	}
	if m := st.Members[id]; m != nil && m.Info.Name != "" {
		return fmt.Sprintf("%s (id %d)", m.Info.Name, id)
	}
	return fmt.Sprintf("n%d", id)
}

// UndrainNode implements adminpb.AdminServer: it clears the node's
// draining mark; a drain or decommission running on it sees that and stops
// (placement's runParent).
func (s *Server) UndrainNode(ctx context.Context, req *adminpb.NodeRequest) (*adminpb.UndrainNodeResponse, error) {
	st := s.cfg.Meta.State()
	id, err := resolveNode(st, req.GetNode())
	if err != nil {
		return nil, err
	}
	resp := &adminpb.UndrainNodeResponse{Node: id}
	if n := st.Nodes[id]; n != nil {
		resp.Name = n.Name
	} else if m := st.Members[id]; m != nil {
		resp.Name = m.Info.Name
	}
	var decommissioned bool
	err = s.cfg.Meta.UpdateMember(ctx, id, func(m *cluster.Member) bool {
		decommissioned, resp.WasDraining = m.Decommissioned, m.Draining
		if decommissioned || !m.Draining {
			return false
		}
		m.Draining = false
		return true
	})
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "undrain %s: %v", nodeLabel(st, id), err)
	}
	if decommissioned {
		return nil, status.Errorf(codes.FailedPrecondition, "node %s is decommissioned; a decommissioned node does not come back (start it with an empty data directory to join as a new node)", nodeLabel(st, id))
	}
	ops, err := s.listOperations(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "%v", err)
	}
	for _, op := range ops {
		if op.Active() && op.Node == id && (op.Kind == placement.KindDrain || op.Kind == placement.KindDecommission) {
			resp.StoppedOperations = append(resp.StoppedOperations, op.ID)
		}
	}
	if resp.WasDraining {
		s.cfg.Logger.Info("node undrained", "node", id, "stopped_operations", fmt.Sprint(resp.StoppedOperations))
	}
	return resp, nil
}

// listOperations lists the operations, newest first. A record that does
// not decode is logged for an operator and left out, so that one bad
// record does not hide every other operation; an error means the store
// could not be read.
func (s *Server) listOperations(ctx context.Context) ([]*placement.Operation, error) {
	ops, err := placement.ListOperations(ctx, s.cfg.Meta.Operations())
	if errors.Is(err, placement.ErrCorruptOperation) {
		s.cfg.Logger.Warn("list operations: skipping a record that does not decode", "err", err)
		err = nil
	}
	return ops, err
}

// ListOperations implements adminpb.AdminServer.
func (s *Server) ListOperations(ctx context.Context, req *adminpb.ListOperationsRequest) (*adminpb.ListOperationsResponse, error) {
	ops, err := s.listOperations(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "%v", err)
	}
	st := s.cfg.Meta.State()
	resp := &adminpb.ListOperationsResponse{}
	for _, op := range ops {
		if req.GetActive() && !op.Active() {
			continue
		}
		resp.Operations = append(resp.Operations, toPB(st, op))
		if req.GetLimit() > 0 && len(resp.Operations) >= int(req.GetLimit()) {
			break
		}
	}
	return resp, nil
}

// GetOperation implements adminpb.AdminServer.
func (s *Server) GetOperation(ctx context.Context, req *adminpb.GetOperationRequest) (*adminpb.Operation, error) {
	op, err := placement.GetOperation(ctx, s.cfg.Meta.Operations(), req.GetId())
	switch {
	case errors.Is(err, placement.ErrNoOperation):
		return nil, status.Errorf(codes.NotFound, "operation %d does not exist", req.GetId())
	case errors.Is(err, placement.ErrCorruptOperation):
		return nil, status.Errorf(codes.Internal, "%v", err)
	case err != nil:
		// A store that cannot be reached is not a missing operation,
		// which cosmosctl would show as final.
		return nil, status.Errorf(codes.Unavailable, "operation %d: %v", req.GetId(), err)
	}
	return toPB(s.cfg.Meta.State(), op), nil
}

// ShowPartition implements adminpb.AdminServer.
func (s *Server) ShowPartition(ctx context.Context, req *adminpb.ShowPartitionRequest) (*adminpb.PartitionDetail, error) {
	st := s.cfg.Meta.State()
	t, err := partitionOf(st, req.GetId())
	if err != nil {
		return nil, err
	}
	top := int(req.GetTop())
	switch {
	case top == 0:
		top = defaultTop
	case top > maxTop:
		// The replica lists that many logical partitions in one message:
		// an unbounded top would list the whole partition.
		return nil, status.Errorf(codes.InvalidArgument, "top %d: want at most %d", top, maxTop)
	}
	d := st.Partition(req.GetId())
	out := &adminpb.PartitionDetail{Partition: s.partition(st, t, d, len(st.Ring(t.ID).Partitions()), s.nodeStatus(ctx, st, true))}
	// The router retries until its context ends, following leaders: a
	// partition without a reachable replica would hold a call without a
	// deadline forever. A caller's deadline is kept (inspecting a large
	// partition scans all its logical partitions' stats).
	dctx, cancel := ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		dctx, cancel = context.WithTimeout(ctx, s.cfg.NodeTimeout)
	}
	defer cancel()
	det, err := s.cfg.Router.PartitionDetail(dctx, req.GetId(), top)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "inspect partition %d: %v", req.GetId(), err)
	}
	for _, lp := range det.GetTopBySize() {
		out.TopBySize = append(out.TopBySize, logicalPB(t, lp.GetPk(), lp.GetToken(), lp.GetBytes(), lp.GetRows(), lp.GetRuPerSec()))
	}
	for _, lp := range det.GetTopByRu() {
		out.TopByRu = append(out.TopByRu, logicalPB(t, lp.GetPk(), lp.GetToken(), lp.GetBytes(), lp.GetRows(), lp.GetRuPerSec()))
	}
	return out, nil
}

// ShowPartition's top: the default, and the most logical partitions a
// replica lists in one answer (cosmosctl's --top accepts 1 to 1000).
const (
	defaultTop = 3
	maxTop     = 1000
)

func logicalPB(t *schema.Table, pk []byte, token, bytes, rows int64, ru float64) *adminpb.LogicalPartition {
	lp := &adminpb.LogicalPartition{Token: token, Bytes: bytes, Rows: rows, RuPerSec: ru}
	vals, err := ring.SplitRoutingKey(pk, len(t.PartitionKey()))
	if err != nil {
		lp.Key = []string{fmt.Sprintf("0x%x", pk)}
		return lp
	}
	for i, c := range t.PartitionKey() {
		lp.Key = append(lp.Key, cqltype.Format(c.Type, vals[i]))
	}
	return lp
}

// SetThroughput implements adminpb.AdminServer.
func (s *Server) SetThroughput(ctx context.Context, req *adminpb.SetThroughputRequest) (*adminpb.SetThroughputResponse, error) {
	if req.GetRuPerSec() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "throughput %d must not be negative", req.GetRuPerSec())
	}
	if m := s.cfg.MaxProvisionedThroughput; m > 0 && req.GetRuPerSec() > m {
		return nil, status.Errorf(codes.InvalidArgument, "throughput %d RU/s exceeds the maximum of %d RU/s (max_provisioned_throughput)", req.GetRuPerSec(), m)
	}
	if s.cfg.Catalog == nil {
		return nil, status.Error(codes.Unimplemented, "this node cannot change the catalog")
	}
	st := s.cfg.Meta.State()
	resp := &adminpb.SetThroughputResponse{RuPerSec: req.GetRuPerSec()}
	switch {
	case req.GetTable() != "" && req.GetKeyspace() != "":
		return nil, status.Error(codes.InvalidArgument, "give a table or a keyspace, not both")
	case req.GetKeyspace() != "":
		err := s.cfg.Catalog.AlterKeyspace(ctx, req.GetKeyspace(), func(ks *schema.Keyspace) error {
			ks.Throughput = req.GetRuPerSec()
			return nil
		})
		if err != nil {
			return nil, catalogErr(err)
		}
		return resp, nil
	}
	t, err := findTable(st, req.GetTable())
	if err != nil {
		return nil, err
	}
	if _, err := s.cfg.Catalog.AlterTable(ctx, t.Keyspace, t.Name, func(t *schema.Table) error {
		t.Options.Throughput = req.GetRuPerSec()
		return nil
	}); err != nil {
		return nil, catalogErr(err)
	}
	resp.Partitions = uint32(len(st.Ring(t.ID).Partitions()))
	resp.PartitionsNeeded = max(resp.Partitions, partitionsFor(req.GetRuPerSec(), s.cfg.PhysicalPartitionMaxRU))
	return resp, nil
}

// partitionsFor is how many partitions of at most maxRU RU/s each carry
// ru RU/s: ru/maxRU rounded up, without the overflow of (ru+maxRU-1)/maxRU
// near MaxInt64 (which made a huge throughput need no partitions), and at
// most MaxUint32 (the field's range). 0 when either is not positive.
func partitionsFor(ru, maxRU int64) uint32 {
	if ru <= 0 || maxRU <= 0 {
		return 0
	}
	n := ru / maxRU
	if ru%maxRU != 0 {
		n++
	}
	return uint32(min(n, math.MaxUint32))
}

// catalogErr is the status of a failed catalog change: NotFound when the
// keyspace or table does not exist (it may have been dropped since the
// request was checked), Unavailable when the store failed.
func catalogErr(err error) error {
	if errors.Is(err, cluster.ErrKeyspaceNotFound) || errors.Is(err, cluster.ErrTableNotFound) {
		return status.Errorf(codes.NotFound, "%v", err)
	}
	return status.Errorf(codes.Unavailable, "%v", err)
}
