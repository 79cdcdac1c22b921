package clustertest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/daemon"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// TestLostStoreRejoinsAsNewNode: a node whose store is lost but whose
// node-id file survived must not rejoin its raft groups under its old
// replica ids with an empty hard state (it could vote twice in a term).
// It comes back under a new node id; the old id's replicas are repaired as
// a dead node's, and the cluster keeps serving reads and writes.
func TestLostStoreRejoinsAsNewNode(t *testing.T) {
	dataDirs := map[int]string{}
	c := testcluster.Start(t, testcluster.Options{Nodes: 5, Consensus: "raft", Configure: func(i int, cfg *daemon.Config) {
		fastFailover(3*time.Second)(i, cfg)
		dataDirs[i] = cfg.DataDir
	}})
	s := session(t, c, 0)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, s, "CREATE TABLE ks.t (k text, i int, v text, PRIMARY KEY (k, i)) WITH cosmosdb_provisioned_throughput = 40000")
	waitFor(t, 30*time.Second, "initial ring with 4 replicas per partition", func() (bool, string) { return ringHealthy(c.Nodes[0].Meta().State(), nil) })
	const rows = 200
	for i := 0; i < rows; i++ {
		exec(t, s, "INSERT INTO ks.t (k, i, v) VALUES (?, ?, ?)", fmt.Sprintf("k%d", i%20), i, "before")
	}

	// The victim is the node (other than node 0, whose client we use)
	// holding the most replicas.
	st := c.Nodes[0].Meta().State()
	count := map[uint64]int{}
	for _, r := range st.Rings {
		for _, p := range r.Partitions() {
			for _, rd := range p.GetReplicas() {
				count[rd.GetNodeId()]++
			}
		}
	}
	victim := 1
	for i := 2; i < len(c.Nodes); i++ {
		if count[c.Nodes[i].ID()] > count[c.Nodes[victim].ID()] {
			victim = i
		}
	}
	victimID := c.Nodes[victim].ID()
	// old maps partition -> the replica id the victim's node held in it.
	old := map[uint64]uint64{}
	for _, r := range c.Nodes[victim].Store().Replicas() {
		old[r.ID()] = uint64(r.Group().Status().ReplicaID)
	}
	if len(old) == 0 {
		t.Fatalf("victim node %d holds no replicas", victimID)
	}
	t.Logf("victim node %d holds %d replicas (partition:replica) %v", victimID, len(old), sortedPairs(old))

	// Lose the store, keep the node-id file.
	c.StopNode(victim)
	store := filepath.Join(dataDirs[victim], "store")
	if _, err := os.Stat(filepath.Join(dataDirs[victim], "node-id")); err != nil {
		t.Fatalf("node-id file: %v", err)
	}
	if err := os.RemoveAll(store); err != nil {
		t.Fatal(err)
	}
	back := c.RestartNode(victim)
	start := time.Now()

	// Until the ring is repaired, and at every poll, the restarted node
	// runs no group under a replica id its lost store's node held.
	checkNoOldReplica := func() {
		t.Helper()
		for _, r := range back.Store().Replicas() {
			rid := uint64(r.Group().Status().ReplicaID)
			if was, ok := old[r.ID()]; ok && rid != 0 && rid <= was {
				t.Fatalf("restarted node %d runs partition %d as replica %d: the node whose store was lost (node %d) held replica %d there; "+
					"it rejoined with an empty hard state", back.ID(), r.ID(), rid, victimID, was)
			}
		}
	}
	waitFor(t, 90*time.Second, "the lost node's replicas repaired elsewhere", func() (bool, string) {
		checkNoOldReplica()
		return ringHealthy(c.Nodes[0].Meta().State(), map[uint64]bool{victimID: true})
	})
	checkNoOldReplica()
	t.Logf("ring repaired %s after the restart; restarted node runs %d replicas", time.Since(start).Round(100*time.Millisecond), len(back.Store().Replicas()))
	if back.ID() == victimID {
		t.Fatalf("node with a lost store came back under its old id %d", victimID)
	}
	t.Logf("node with a lost store came back as node %d (was %d)", back.ID(), victimID)

	// Reads and writes through node 0 and through the restarted node.
	for _, i := range []int{0, victim} {
		si := session(t, c, i)
		for j := 0; j < 20; j++ {
			if err := si.Query("INSERT INTO ks.t (k, i, v) VALUES (?, ?, ?)", fmt.Sprintf("k%d", j), 1000+100*i+j, "after").Idempotent(true).Exec(); err != nil {
				t.Fatalf("write through node %d after the repair: %v", i, err)
			}
		}
		n := 0
		for j := 0; j < 20; j++ {
			iter := si.Query("SELECT i FROM ks.t WHERE k = ?", fmt.Sprintf("k%d", j)).Consistency(gocql.Quorum).Iter()
			var x int
			for iter.Scan(&x) {
				if x < rows {
					n++
				}
			}
			if err := iter.Close(); err != nil {
				t.Fatalf("read through node %d after the repair: %v", i, err)
			}
		}
		if n != rows {
			t.Fatalf("read %d of the %d rows written before the store loss through node %d", n, rows, i)
		}
	}
}

func sortedPairs(m map[uint64]uint64) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("p%d:r%d", k, v))
	}
	sort.Strings(out)
	return out
}
