package partition

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/raft"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// TestReconcileDropsStaleReplica: a node holds the durable state of an
// earlier replica of a partition that it does not run (here: one that
// joined and was stopped; in the nemesis suite, a learner whose snapshot a
// full disk interrupted, removed from the group while the node was down).
// When the rings name the node under a newer replica id, Reconcile drops
// the old state and joins as the new replica, instead of failing to start
// it on every pass.
func TestReconcileDropsStaleReplica(t *testing.T) {
	eng, err := storage.Open(storage.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	net := raft.NewMemNetwork(1)
	defer net.Close()
	cons, err := raft.New(raft.Config{NodeID: 1, Storage: eng, TickInterval: 10 * time.Millisecond,
		TestingKnobs: &raft.TestingKnobs{Transport: net.Transport(1)}})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	old := NewStore(StoreConfig{NodeID: 1, Storage: eng, Consensus: cons})
	if _, err := old.Join(ctx, 9, 1); err != nil {
		t.Fatal(err)
	}
	old.Close() // the replica stops; its state stays

	st := NewStore(StoreConfig{NodeID: 1, Storage: eng, Consensus: cons})
	defer st.Close()
	desc := &kvpb.Descriptor{Id: 9, TableId: table, Start: math.MinInt64, End: math.MaxInt64, Generation: 3,
		Replicas: []*kvpb.ReplicaDescriptor{{NodeId: 2, ReplicaId: 2}, {NodeId: 3, ReplicaId: 3}, {NodeId: 4, ReplicaId: 4},
			{NodeId: 1, ReplicaId: 5, Learner: true}}, NextReplicaId: 6}
	if err := st.Reconcile(ctx, []*kvpb.Descriptor{desc}, map[uint64]bool{table: true}); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	r, ok := st.Replica(9)
	if !ok {
		t.Fatal("no replica of partition 9 after reconcile")
	}
	if id := r.Group().Status().ReplicaID; id != consensus.ReplicaID(5) {
		t.Fatalf("running replica r%d, want r5 (the rings' id)", id)
	}
}
