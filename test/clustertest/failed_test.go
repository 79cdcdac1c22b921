package clustertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/raft"
	"github.com/cosmosd/cosmosd/daemon"
	adminpb "github.com/cosmosd/cosmosd/proto/admin"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// TestFailedReplicaIsReplaced: a replica that stops on a failure it cannot
// continue past (here an injected I/O error while applying) while its node
// stays up is reported (cosmosctl nodes list counts it), serves no more
// reads, not even at ONE, and the controller replaces it on another node
// as it would the replicas of a dead node; clients see no error.
func TestFailedReplicaIsReplaced(t *testing.T) {
	const victim = 1 // node index
	var failGroup atomic.Uint64
	c := testcluster.Start(t, testcluster.Options{Nodes: 5, Consensus: "raft", Configure: func(i int, cfg *daemon.Config) {
		fastFailover(time.Hour)(i, cfg)
		if i == victim {
			cfg.Knobs = &daemon.Knobs{Raft: &raft.TestingKnobs{ApplyFilter: func(g consensus.GroupID, _ uint64) error {
				if uint64(g) == failGroup.Load() {
					return errors.New("injected I/O error")
				}
				return nil
			}}}
		}
	}})
	s := session(t, c, 0)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
	exec(t, s, "CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
	exec(t, s, "INSERT INTO ks.t (k, v) VALUES (1, 1)")
	node := c.Nodes[victim]
	var part uint64
	waitFor(t, 30*time.Second, "a replica of the table on the victim", func() (bool, string) {
		for _, r := range node.Store().Replicas() {
			if r.Descriptor().GetTableId() != 0 {
				part = r.ID()
				return true, ""
			}
		}
		return false, "none yet"
	})
	failGroup.Store(part)
	for i := 2; i < 20; i++ {
		exec(t, s, "INSERT INTO ks.t (k, v) VALUES (?, ?)", i, i)
	}
	rep, _ := node.Store().Replica(part)
	waitFor(t, 30*time.Second, "the replica to fail", func() (bool, string) {
		if rep == nil {
			return false, "no replica"
		}
		err := rep.Group().Status().Err
		return err != nil, "still running"
	})
	// The node says so on /healthz (still 200: a restart would not help)
	// and in its metrics.
	for path, want := range map[string]string{"/healthz": "1 failed replicas", "/metrics": "cosmosd_failed_replicas 1"} {
		resp, err := http.Get("http://" + node.HTTPAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %d, want 200 with %q in:\n%.2000s", path, resp.StatusCode, want, body)
		}
		if path == "/metrics" {
			// The raft engine's counters: this node has synced its log.
			for _, m := range []string{"cosmosd_raft_wal_syncs_total", "cosmosd_raft_cycles_total"} {
				if v := metricValue(string(body), m); v <= 0 {
					t.Errorf("/metrics: %s = %v, want > 0", m, v)
				}
			}
		}
	}
	// Local reads at ONE refuse the failed replica.
	if _, err := rep.Read(context.Background(), &kvpb.ReadRequest{PartitionId: part, TableId: rep.Descriptor().GetTableId()}); err == nil {
		t.Fatal("a failed replica served a read")
	}
	// Reported, until replaced.
	a := c.Admin(t, 0)
	reported := false
	for range 50 {
		resp, err := a.ListNodes(context.Background(), &adminpb.ListNodesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range resp.GetNodes() {
			if n.GetId() == node.ID() && n.GetFailedReplicas() > 0 {
				reported = true
			}
		}
		if reported {
			break
		}
		if _, ok := node.Store().Replica(part); !ok {
			break // replaced before we looked: the ring test below decides
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !reported {
		t.Fatalf("nodes list never counted the failed replica of node %d", node.ID())
	}
	// Replaced: the ring no longer lists the victim, still has four
	// voters, and the victim dropped its copy.
	waitFor(t, 60*time.Second, "the failed replica to be replaced", func() (bool, string) {
		d := c.Live().Meta().State().Partition(part)
		if d == nil {
			return false, "partition gone from the rings"
		}
		voters := 0
		for _, r := range d.GetReplicas() {
			if r.GetNodeId() == node.ID() {
				return false, fmt.Sprintf("ring still lists node %d: %v", node.ID(), d.GetReplicas())
			}
			if !r.GetLearner() {
				voters++
			}
		}
		if _, ok := node.Store().Replica(part); ok {
			return false, "victim still holds its copy"
		}
		return voters == 4, fmt.Sprintf("%d voters", voters)
	})
	// Every acknowledged row is there, read at ONE through the victim and
	// at QUORUM.
	for _, cl := range []gocql.Consistency{gocql.One, gocql.Quorum} {
		sv := session(t, c, victim)
		for i := 1; i < 20; i++ {
			var v int
			if err := sv.Query("SELECT v FROM ks.t WHERE k = ?", i).Consistency(cl).Scan(&v); err != nil || v != i {
				t.Fatalf("k=%d at %v: v=%d, %v", i, cl, v, err)
			}
		}
	}
}

// metricValue returns the value of an unlabelled metric in a Prometheus
// text exposition, -1 when absent.
func metricValue(body, name string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return -1
			}
			return f
		}
	}
	return -1
}
