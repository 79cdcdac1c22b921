package admin

import (
	"context"
	"errors"
	"testing"

	"github.com/cosmosd/cosmosd/consensus"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// reportingNodes answers ReplicaStatus with fixed reports, for the states
// a replica of the single-replica engine cannot reach in a unit test: a
// follower's report, a replica stopped on a failure, a hot partition
// (ten seconds of load over its share). Nodes without a report fail.
type reportingNodes map[consensus.NodeID]*kvpb.ReplicaStatusResponse

func (r reportingNodes) ReplicaStatus(_ context.Context, node consensus.NodeID, _ *kvpb.ReplicaStatusRequest) (*kvpb.ReplicaStatusResponse, error) {
	if resp, ok := r[node]; ok {
		return resp, nil
	}
	return nil, errors.New("node does not answer")
}

func (r reportingNodes) PartitionDetail(context.Context, uint64, int) (*kvpb.PartitionDetailResponse, error) {
	return nil, errors.New("not used")
}

// The view of a partition combines its replicas' reports: the leader's
// load, the newest generation, the largest size; a node's failed replicas
// are counted, and a node that does not answer is suspect.
func TestReplicaReports(t *testing.T) {
	c := newCluster(t, "alpha", "bravo", "charlie")
	c.createTable("ks", "users", 10, []string{"text"}, halves(10, 100, 1, 2, 3))
	d := func(id, gen uint64) *kvpb.Descriptor { return &kvpb.Descriptor{Id: id, TableId: 10, Generation: gen} }
	nodes := reportingNodes{
		1: {NodeId: 1, Replicas: []*kvpb.ReplicaStatus{
			{Desc: d(100, 3), Leader: true, Applied: 40, RuPerSec: 42, Throttled: 7, Hot: true, Bytes: 10, Rows: 1, LogicalPartitions: 1},
			{Desc: d(101, 1), Applied: 9, Failed: "disk full", Bytes: 5, Rows: 1},
		}},
		2: {NodeId: 2, Replicas: []*kvpb.ReplicaStatus{
			{Desc: d(100, 5), Applied: 38, RuPerSec: 1, Bytes: 20, Rows: 2, LogicalPartitions: 2},
			{Desc: d(101, 1), Leader: true, Applied: 9, Bytes: 5, Rows: 1},
		}},
		// charlie does not answer
	}
	admin := serveAdmin(t, NewServer(Config{Meta: c.meta, Router: nodes}))
	resp, err := admin.ShowRing(tctx(t), &adminpb.ShowRingRequest{Table: "ks.users"})
	if err != nil {
		t.Fatal(err)
	}
	p := resp.GetPartitions()[0]
	if p.GetId() != 100 || p.GetLeaderNode() != 1 || p.GetLeaderName() != "alpha" || p.GetRuPerSec() != 42 || p.GetThrottled() != 7 || !p.GetHot() {
		t.Errorf("partition 100's load is its leader's: %v", p)
	}
	if p.GetGeneration() != 5 || p.GetBytes() != 20 || p.GetRows() != 2 || p.GetLogicalPartitions() != 2 {
		t.Errorf("partition 100: generation %d, %d bytes, %d rows, want the newest and largest report", p.GetGeneration(), p.GetBytes(), p.GetRows())
	}
	if r := p.GetReplicas(); !r[0].GetReachable() || r[0].GetApplied() != 40 || !r[1].GetReachable() || r[1].GetApplied() != 38 || r[2].GetReachable() {
		t.Errorf("partition 100's replicas: %v", r)
	}
	if p := resp.GetPartitions()[1]; p.GetLeaderName() != "bravo" || p.GetHot() || p.GetRuShare() != 0 {
		t.Errorf("partition 101: %v", p)
	}

	list, err := admin.ListNodes(tctx(t), &adminpb.ListNodesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := list.GetNodes()
	if n[0].GetReplicas() != 2 || n[0].GetLeaders() != 1 || n[0].GetFailedReplicas() != 1 || n[0].GetBytes() != 15 || n[0].GetState() != "up" {
		t.Errorf("alpha: %v", n[0])
	}
	if n[2].GetState() != "suspect" || n[2].GetReplicas() != 0 {
		t.Errorf("charlie does not answer: %v", n[2])
	}
}
