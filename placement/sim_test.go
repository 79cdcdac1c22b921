package placement

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// simNodes simulates the nodes behind NodeClient for the controller's
// tests. Each partition's group is one record (descriptor, leader, commit
// index) that a membership change, a split or a leadership transfer
// changes at once, as a committed raft entry does on a real group; a
// replica catches up the moment it is added. Like a real node, a node
// also runs an empty replica (applied 0) for a routing copy that lists it
// before its group does: that is how a move's learner starts. Safe for
// concurrent use.
type simNodes struct {
	meta MetaView // the routing copies

	mu struct {
		sync.Mutex
		groups map[uint64]*simGroup
		down   map[uint64]bool // nodes that answer nothing
		hidden map[uint64]bool // partitions no node reports (not started yet)
	}
}

// simGroup is one partition's consensus group.
type simGroup struct {
	desc    *kvpb.Descriptor
	leader  uint64
	commit  uint64
	bytes   int64
	logical int64             // logical partitions: a byte split point needs 2
	failed  map[uint64]string // node -> why its replica stopped
}

func newSimNodes(meta MetaView) *simNodes {
	s := &simNodes{meta: meta}
	s.mu.groups = map[uint64]*simGroup{}
	s.mu.down = map[uint64]bool{}
	s.mu.hidden = map[uint64]bool{}
	return s
}

// add starts a group for d, led by its first voter.
func (s *simNodes) add(d *kvpb.Descriptor, bytes, logical int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &simGroup{desc: proto.Clone(d).(*kvpb.Descriptor), commit: 10, bytes: bytes, logical: logical}
	if len(d.GetReplicas()) > 0 {
		g.leader = d.GetReplicas()[0].GetNodeId()
	}
	s.mu.groups[d.GetId()] = g
}

// group returns a copy of a group's descriptor and its leader.
func (s *simNodes) group(id uint64) (*kvpb.Descriptor, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.mu.groups[id]
	if g == nil {
		return nil, 0
	}
	return proto.Clone(g.desc).(*kvpb.Descriptor), g.leader
}

func (s *simNodes) setDown(node uint64, down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.down[node] = down
}

func (s *simNodes) setHidden(partition uint64, hidden bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.hidden[partition] = hidden
}

func (s *simNodes) setFailed(partition, node uint64, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.mu.groups[partition]
	if g.failed == nil {
		g.failed = map[uint64]string{}
	}
	g.failed[node] = why
}

// leaders counts the partitions each node leads.
func (s *simNodes) leaders() map[uint64]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint64]int{}
	for _, g := range s.mu.groups {
		out[g.leader]++
	}
	return out
}

var errSimDown = errors.New("sim: node does not answer")

// leaderLocked returns a partition's group when its leader answers.
func (s *simNodes) leaderLocked(id uint64) (*simGroup, error) {
	g := s.mu.groups[id]
	switch {
	case g == nil:
		return nil, fmt.Errorf("sim: partition %d not found", id)
	case g.leader == 0 || s.mu.down[g.leader]:
		return nil, fmt.Errorf("sim: partition %d has no leader that answers", id)
	}
	return g, nil
}

func (s *simNodes) ReplicaStatus(_ context.Context, node consensus.NodeID, req *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error) {
	st := s.meta.State()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := uint64(node)
	if s.mu.down[n] {
		return nil, errSimDown
	}
	want := map[uint64]bool{}
	for _, id := range req.GetPartitionIds() {
		want[id] = true
	}
	resp := &kvpb.ReplicaStatusResponse{NodeId: n}
	for _, id := range sortedKeys(s.mu.groups) {
		g := s.mu.groups[id]
		if (len(want) > 0 && !want[id]) || s.mu.hidden[id] {
			continue
		}
		if r := replicaOn(g.desc, n); r != nil {
			rs := &kvpb.ReplicaStatus{Desc: proto.Clone(g.desc).(*kvpb.Descriptor), ReplicaId: r.GetReplicaId(),
				Leader: g.leader == n, LeaderNode: g.leader, Applied: g.commit, Commit: g.commit, Failed: g.failed[n]}
			if req.GetStats() {
				rs.Bytes, rs.LogicalPartitions = g.bytes, g.logical
			}
			resp.Replicas = append(resp.Replicas, rs)
			continue
		}
		if c := st.Partition(id); c != nil && replicaOn(c, n) != nil {
			// Listed by the routing copy ahead of its group: an empty
			// replica waiting for its snapshot.
			resp.Replicas = append(resp.Replicas, &kvpb.ReplicaStatus{Desc: proto.Clone(c).(*kvpb.Descriptor), ReplicaId: replicaOn(c, n).GetReplicaId()})
		}
	}
	return resp, nil
}

func (s *simNodes) ChangeReplicas(_ context.Context, id uint64, changes []*kvpb.ReplicaChange) (*kvpb.Descriptor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.leaderLocked(id)
	if err != nil {
		return nil, err
	}
	d := proto.Clone(g.desc).(*kvpb.Descriptor)
	for _, ch := range changes {
		r := ch.GetReplica()
		switch ch.GetType() {
		case kvpb.ReplicaChange_ADD_LEARNER:
			if replicaOn(d, r.GetNodeId()) != nil {
				return nil, fmt.Errorf("sim: node %d already holds partition %d", r.GetNodeId(), id)
			}
			d.Replicas = append(d.Replicas, &kvpb.ReplicaDescriptor{NodeId: r.GetNodeId(), ReplicaId: r.GetReplicaId(), Learner: true})
			d.NextReplicaId = max(d.NextReplicaId, r.GetReplicaId()+1)
		case kvpb.ReplicaChange_PROMOTE_LEARNER:
			cur := replicaOn(d, r.GetNodeId())
			if cur == nil || !cur.GetLearner() {
				return nil, fmt.Errorf("sim: node %d holds no learner of partition %d", r.GetNodeId(), id)
			}
			cur.Learner = false
		case kvpb.ReplicaChange_REMOVE:
			if r.GetNodeId() == g.leader {
				return nil, fmt.Errorf("sim: the leader of partition %d cannot remove itself", id)
			}
			kept := d.Replicas[:0]
			for _, x := range d.Replicas {
				if x.GetNodeId() != r.GetNodeId() {
					kept = append(kept, x)
				}
			}
			d.Replicas = kept
		default:
			return nil, fmt.Errorf("sim: change %v not supported", ch.GetType())
		}
	}
	d.Generation++
	g.desc = d
	g.commit++
	return proto.Clone(d).(*kvpb.Descriptor), nil
}

func (s *simNodes) TransferLeader(_ context.Context, id uint64, target consensus.NodeID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.leaderLocked(id)
	if err != nil {
		return err
	}
	r := replicaOn(g.desc, uint64(target))
	if r == nil || r.GetLearner() || s.mu.down[uint64(target)] || g.failed[uint64(target)] != "" {
		return fmt.Errorf("sim: node %d cannot lead partition %d", target, id)
	}
	g.leader = uint64(target)
	return nil
}

func (s *simNodes) Split(_ context.Context, req *kvpb.SplitRequest) (*kvpb.Descriptor, *kvpb.Descriptor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.leaderLocked(req.GetPartitionId())
	if err != nil {
		return nil, nil, err
	}
	d, tok := g.desc, req.GetSplitToken()
	if tok <= d.GetStart() || tok > d.GetEnd() {
		return nil, nil, fmt.Errorf("sim: token %d does not split [%d, %d]", tok, d.GetStart(), d.GetEnd())
	}
	if s.mu.groups[req.GetRightId()] != nil {
		return nil, nil, fmt.Errorf("sim: partition %d exists", req.GetRightId())
	}
	left := proto.Clone(d).(*kvpb.Descriptor)
	left.End, left.Generation = tok-1, d.GetGeneration()+1
	right := proto.Clone(d).(*kvpb.Descriptor)
	right.Id, right.Start, right.Generation = req.GetRightId(), tok, d.GetGeneration()+1
	g.desc = left
	g.commit++
	s.mu.groups[right.Id] = &simGroup{desc: right, leader: g.leader, commit: 1, bytes: g.bytes / 2, logical: g.logical / 2}
	g.bytes, g.logical = g.bytes-g.bytes/2, g.logical-g.logical/2
	return proto.Clone(left).(*kvpb.Descriptor), proto.Clone(right).(*kvpb.Descriptor), nil
}

func (s *simNodes) PartitionDetail(_ context.Context, id uint64, _ int) (*kvpb.PartitionDetailResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.leaderLocked(id)
	if err != nil {
		return nil, err
	}
	d := g.desc
	resp := &kvpb.PartitionDetailResponse{Status: &kvpb.ReplicaStatus{Desc: proto.Clone(d).(*kvpb.Descriptor), Leader: true,
		Bytes: g.bytes, LogicalPartitions: g.logical}}
	if g.logical >= 2 {
		// The middle of the range stands for the byte median.
		resp.HasSplitToken, resp.SplitToken = true, d.GetStart()+int64((uint64(d.GetEnd())-uint64(d.GetStart()))/2)+1
	}
	return resp, nil
}

// partitions lists the groups' descriptors by start.
func (s *simNodes) partitions(table uint64) []*kvpb.Descriptor {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*kvpb.Descriptor
	for _, g := range s.mu.groups {
		if g.desc.GetTableId() == table {
			out = append(out, proto.Clone(g.desc).(*kvpb.Descriptor))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetStart() < out[j].GetStart() })
	return out
}
