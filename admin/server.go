package admin

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/cqltype"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
)

// Config configures the admin service.
type Config struct {
	// Meta is the cluster metadata (*cluster.Meta). Required.
	Meta MetaView
	// Router reaches the nodes' replicas (*router.Router). Required.
	Router NodeClient
	// DeadAfter is how long an unregistered member stays suspect before
	// it is shown dead. Default 0: dead as soon as it is seen down.
	DeadAfter time.Duration
	// Catalog changes table and keyspace options (throughput)
	// (*cluster.Catalog); nil makes SetThroughput answer Unimplemented.
	Catalog CatalogWriter
	// PhysicalPartitionMaxRU is the most RU/s one partition may be given;
	// SetThroughput reports how many partitions a table needs for its new
	// throughput from it. 0: no limit (no extra partitions needed).
	PhysicalPartitionMaxRU int64
	// MaxProvisionedThroughput is the most RU/s SetThroughput accepts for
	// a table or keyspace; 0 means no limit.
	MaxProvisionedThroughput int64
	// MaxPartitionsPerTable refuses operator splits of a table that has
	// this many physical partitions already; 0 means no limit.
	MaxPartitionsPerTable int
	// NodeTimeout bounds the wait for one node's replica status, and for
	// a partition's details when the caller set no deadline. Default 3s.
	NodeTimeout time.Duration
	// Logger receives state changes (a node undrained); nil discards.
	Logger *slog.Logger
}

// Server implements adminpb.AdminServer.
type Server struct {
	adminpb.UnimplementedAdminServer
	cfg Config
}

// NewServer returns the admin service.
func NewServer(cfg Config) *Server {
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg}
}

// nodeStatus asks every live node for its replicas concurrently; nodes that
// fail are absent from the result.
func (s *Server) nodeStatus(ctx context.Context, st *cluster.State, stats bool) map[uint64]*kvpb.ReplicaStatusResponse {
	out := map[uint64]*kvpb.ReplicaStatusResponse{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range st.NodeIDs() {
		wg.Add(1)
		go func(id uint64) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, s.cfg.NodeTimeout)
			defer cancel()
			resp, err := s.cfg.Router.ReplicaStatus(cctx, consensus.NodeID(id), &kvpb.ReplicaStatusRequest{Stats: stats})
			if err != nil {
				s.cfg.Logger.Debug("replica status", "node", id, "err", err)
				return
			}
			mu.Lock()
			out[id] = resp
			mu.Unlock()
		}(id)
	}
	wg.Wait()
	return out
}

// ListNodes implements adminpb.AdminServer. It lists every member of the
// cluster, live or not, with its state: up, suspect (unreachable, or gone
// for less than dead_after), dead, draining or decommissioned.
func (s *Server) ListNodes(ctx context.Context, _ *adminpb.ListNodesRequest) (*adminpb.ListNodesResponse, error) {
	st := s.cfg.Meta.State()
	statuses := s.nodeStatus(ctx, st, true)
	ids := map[uint64]bool{}
	for id := range st.Members {
		ids[id] = true
	}
	for id := range st.Nodes {
		ids[id] = true
	}
	var sorted []uint64
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	now := time.Now()
	resp := &adminpb.ListNodesResponse{}
	for _, id := range sorted {
		info := st.Nodes[id]
		if info == nil {
			info = &st.Members[id].Info
		}
		n := &adminpb.Node{Id: id, Name: info.Name, CqlAddr: info.CQLAddr, PeerAddr: info.PeerAddr, AdminAddr: info.AdminAddr,
			Labels: info.Labels, State: st.MemberState(id, now, s.cfg.DeadAfter), Version: info.Version, StartedAt: info.StartedAt.Format(time.RFC3339)}
		if rs, ok := statuses[id]; ok {
			for _, r := range rs.GetReplicas() {
				n.Replicas++
				if r.GetLeader() {
					n.Leaders++
				}
				if r.GetFailed() != "" {
					n.FailedReplicas++
				}
				n.Bytes += r.GetBytes()
			}
		} else if n.State == "up" {
			n.State = "suspect"
		}
		resp.Nodes = append(resp.Nodes, n)
	}
	return resp, nil
}

// ShowRing implements adminpb.AdminServer.
func (s *Server) ShowRing(ctx context.Context, req *adminpb.ShowRingRequest) (*adminpb.ShowRingResponse, error) {
	st := s.cfg.Meta.State()
	var tables []*schema.Table
	if req.GetTable() != "" {
		t, err := findTable(st, req.GetTable())
		if err != nil {
			return nil, err
		}
		tables = []*schema.Table{t}
	} else {
		for _, ks := range st.Schema.KeyspaceNames() {
			for _, name := range st.Schema.TableNames(ks) {
				tables = append(tables, st.Schema.Table(ks, name))
			}
		}
	}
	statuses := s.nodeStatus(ctx, st, true)
	resp := &adminpb.ShowRingResponse{}
	for _, t := range tables {
		parts := st.Ring(t.ID).Partitions()
		for _, d := range parts {
			resp.Partitions = append(resp.Partitions, s.partition(st, t, d, len(parts), statuses))
		}
	}
	return resp, nil
}

// partition assembles one partition's view from the ring and the replicas'
// reports.
func (s *Server) partition(st *cluster.State, t *schema.Table, d *kvpb.Descriptor, nparts int, statuses map[uint64]*kvpb.ReplicaStatusResponse) *adminpb.Partition {
	p := &adminpb.Partition{Id: d.GetId(), Table: t.QualifiedName(), TableId: t.ID, Start: d.GetStart(), End: d.GetEnd(), Generation: d.GetGeneration()}
	if t.Options.Throughput > 0 && nparts > 0 {
		p.RuShare = float64(t.Options.Throughput) / float64(nparts)
	}
	for _, rd := range d.GetReplicas() {
		r := &adminpb.Replica{NodeId: rd.GetNodeId(), ReplicaId: rd.GetReplicaId(), Learner: rd.GetLearner()}
		if info := st.Nodes[rd.GetNodeId()]; info != nil {
			r.NodeName = info.Name
		}
		if rs, ok := statuses[rd.GetNodeId()]; ok {
			for _, x := range rs.GetReplicas() {
				if x.GetDesc().GetId() != d.GetId() {
					continue
				}
				r.Reachable, r.Applied = true, x.GetApplied()
				if x.GetLeader() {
					p.LeaderNode = rd.GetNodeId()
					p.RuPerSec, p.Throttled, p.Hot = x.GetRuPerSec(), x.GetThrottled(), x.GetHot()
				}
				if x.GetDesc().GetGeneration() > p.Generation {
					p.Generation = x.GetDesc().GetGeneration()
				}
				// Any up-to-date replica's size will do; take the largest.
				if x.GetBytes() > p.Bytes || p.Rows == 0 {
					p.Bytes, p.Rows, p.LogicalPartitions = x.GetBytes(), x.GetRows(), x.GetLogicalPartitions()
				}
			}
		}
		p.Replicas = append(p.Replicas, r)
	}
	if info := st.Nodes[p.LeaderNode]; info != nil {
		p.LeaderName = info.Name
	}
	return p
}

func findTable(st *cluster.State, name string) (*schema.Table, error) {
	ks, tn, ok := strings.Cut(name, ".")
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "table %q: want keyspace.table", name)
	}
	t := st.Schema.Table(ks, tn)
	if t == nil {
		return nil, status.Errorf(codes.NotFound, "table %s does not exist", name)
	}
	return t, nil
}

// Token implements adminpb.AdminServer.
func (s *Server) Token(ctx context.Context, req *adminpb.TokenRequest) (*adminpb.TokenResponse, error) {
	st := s.cfg.Meta.State()
	t, err := findTable(st, req.GetTable())
	if err != nil {
		return nil, err
	}
	pk := t.PartitionKey()
	if len(req.GetKey()) != len(pk) {
		return nil, status.Errorf(codes.InvalidArgument, "table %s has %d partition key columns (%s), got %d values", t.QualifiedName(), len(pk), names(pk), len(req.GetKey()))
	}
	vals := make([][]byte, len(pk))
	for i, c := range pk {
		v, err := literal(c.Type, req.GetKey()[i])
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "key %s: %v", c.Name, err)
		}
		vals[i] = v
	}
	key, err := ring.RoutingKey(vals)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%v", err)
	}
	tok := ring.Token(key)
	resp := &adminpb.TokenResponse{Token: tok}
	parts := st.Ring(t.ID).Partitions()
	if d := st.Ring(t.ID).Lookup(tok); d != nil {
		resp.Partition = s.partition(st, t, d, len(parts), s.nodeStatus(ctx, st, false))
	}
	return resp, nil
}

func names(cols []*schema.Column) string {
	var out []string
	for _, c := range cols {
		out = append(out, c.Name)
	}
	return strings.Join(out, ", ")
}

// literal converts a command-line value to a column value: text types take
// it as is, other types as the CQL literal it spells.
func literal(t cqltype.Type, s string) ([]byte, error) {
	switch t.Kind {
	case cqltype.Varchar, cqltype.Ascii:
		return []byte(s), nil
	case cqltype.Blob:
		return cqltype.ParseLiteral(t, cqltype.LitBlob, s)
	case cqltype.UUID, cqltype.Timeuuid:
		return cqltype.ParseLiteral(t, cqltype.LitUUID, s)
	case cqltype.Boolean:
		return cqltype.ParseLiteral(t, cqltype.LitBoolean, strings.ToLower(s))
	case cqltype.Float, cqltype.Double, cqltype.Decimal:
		return cqltype.ParseLiteral(t, cqltype.LitFloat, s)
	case cqltype.Timestamp, cqltype.Date, cqltype.Time, cqltype.Inet:
		if v, err := cqltype.ParseLiteral(t, cqltype.LitInteger, s); err == nil {
			return v, nil
		}
		return cqltype.ParseLiteral(t, cqltype.LitString, s)
	}
	v, err := cqltype.ParseLiteral(t, cqltype.LitInteger, s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a %s: %v", s, t, err)
	}
	return v, nil
}
