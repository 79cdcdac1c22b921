package admin

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/placement"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
)

// move --key is refused when it could not move anything, with the reason
// (issue 17: with 4 replicas on 4 nodes it reported done and moved
// nothing), and accepted when a target lacks a replica.
func TestCheckMoveKey(t *testing.T) {
	d := &kvpb.Descriptor{Id: 10, TableId: 1, Start: math.MinInt64, End: math.MaxInt64}
	for n := uint64(1); n <= 4; n++ {
		d.Replicas = append(d.Replicas, &kvpb.ReplicaDescriptor{NodeId: n, ReplicaId: n})
	}
	state := func(nodes int) (*cluster.State, placement.View) {
		st := &cluster.State{Rings: map[uint64]*ring.Ring{1: ring.New(1, []*kvpb.Descriptor{d})}, Nodes: map[uint64]*cluster.NodeInfo{}}
		var v placement.View
		for n := uint64(1); n <= uint64(nodes); n++ {
			st.Nodes[n] = &cluster.NodeInfo{ID: n, Name: "node-" + string(rune('0'+n))}
			v.Live = append(v.Live, placement.Node{ID: n})
		}
		return st, v
	}
	for _, tc := range []struct {
		name  string
		nodes int
		to    []uint64
		code  codes.Code
		want  string
	}{
		{"4 replicas on 4 nodes", 4, []uint64{1}, codes.FailedPrecondition,
			"nothing to move: every live node (4) already holds one of the key's 4 replicas (on node-1, node-2, node-3, node-4)"},
		{"targets already hold it", 5, []uint64{1, 2}, codes.FailedPrecondition,
			"nothing to move: node-1, node-2 already hold replicas of the key (its replicas are on node-1, node-2, node-3, node-4)"},
		{"one target lacks it", 5, []uint64{1, 5}, codes.OK, ""},
		{"more targets than replicas", 5, []uint64{1, 2, 3, 4, 5}, codes.InvalidArgument, "--to names 5 nodes, but the key's partition keeps 4 replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, v := state(tc.nodes)
			err := checkMoveKey(st, v, 1, 42, tc.to)
			if status.Code(err) != tc.code || (tc.want != "" && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %s with %q", err, tc.code, tc.want)
			}
		})
	}
}
