package raft

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	"github.com/cosmosd/cosmosd/storage"
)

// Linearizable reads right after a restart of a one-voter group (see
// readHold in requests.go). A write is acknowledged once it is committed
// and applied; the hard state recording that commit index is written
// without a sync (nothing waits for it), so a crash can leave the log with
// the entry and the hard state with an older commit index. etcd raft
// answers a singleton leader's read index with its commit index at once,
// before the new term's first entry commits (etcd-io/raft#105), which
// after such a crash misses acknowledged writes.

// TestReadAfterCrashOneVoter: writes are acknowledged on a one-voter
// group, the node crashes keeping only what it synced (the commit index
// of the last writes is lost while their entries survive), restarts, and
// a linearizable read right away sees every acknowledged write.
func TestReadAfterCrashOneVoter(t *testing.T) {
	c, _ := crashHarness(t, 1, nil)
	const id = consensus.GroupID(1)
	c.StartGroup(id, c.Members())
	acked := map[string]string{}
	behind := 0
	for round := range crashRounds(5) {
		var last uint64
		for i := range 5 {
			k, v := fmt.Sprintf("r%d-%d", round, i), fmt.Sprint(round*10+i)
			last = c.MustPropose(id, consensustest.Put(k, v)).(uint64)
			acked[k] = v
		}
		fss := c.CrashSynced(1)
		if commit := durableCommit(t, fss[0], id); commit < last {
			behind++
			t.Logf("round %d: last write at %d, the disk kept commit index %d", round, last, commit)
		}
		c.StartNode(1, id)
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		err := consensustest.ReadIndex(ctx, c.Group(1, id))
		cancel()
		if err != nil {
			t.Fatalf("round %d: read index after restart: %v", round, err)
		}
		checkReads(t, c, 1, id, acked)
	}
	if behind == 0 {
		t.Fatal("no crash lost the commit index of an acknowledged write: the test no longer exercises the restart with a stale commit index")
	}
}

// TestReadWaitsForTermCommitOneVoter holds the restarted voter's
// acknowledgement of its own entries (as a disk slow for that group would),
// so the first entry of its new term cannot commit: a linearizable read on
// the voter, or on a learner (whose read index the voter answers), must not
// complete with the stale commit index the voter restarted with. Once the
// acknowledgement goes through, the reads complete and see every
// acknowledged write.
func TestReadWaitsForTermCommitOneVoter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reader int // node that reads: 1 the voter, 2 the learner
	}{{"voter", 1}, {"learner", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			var held atomic.Bool
			release := make(chan struct{})
			hold := func(_ consensus.GroupID, msgs []*pb.Message) {
				if !held.Load() {
					return
				}
				for _, m := range msgs {
					if m.GetType() == pb.MsgAppResp && m.GetFrom() == m.GetTo() {
						<-release
						return
					}
				}
			}
			c, net := crashHarness(t, 2, func(cfg *Config) {
				if cfg.NodeID == 1 {
					cfg.TestingKnobs.BeforeLocalResponses = hold
				}
			})
			defer func() {
				if held.Swap(false) {
					close(release)
				}
			}()
			const id = consensus.GroupID(1)
			c.StartGroupOn(1, id, c.Members()[:1])
			c.StartGroupOn(2, id, nil)
			changeReplicas(t, c, id, []int{1}, consensus.ReplicaChange{Type: consensus.AddLearner, Replica: consensus.Replica{ReplicaID: 2, NodeID: 2, Learner: true}})
			c.MustPropose(id, consensustest.Put("first", "1"))
			acked := map[string]string{"first": "1"}
			eventually(t, waitTimeout, func() error {
				if v, ok, err := c.KV(2, id).Read("first"); err != nil || !ok || v != "1" {
					return fmt.Errorf("learner has not applied the first write: %q %v %v", v, ok, err)
				}
				return nil
			})
			// The learner misses the next writes, so its applied index is
			// not already past the voter's stale commit index.
			net.Isolate(2)
			var last uint64
			for i := range 5 {
				k := fmt.Sprintf("k%d", i)
				last = c.MustPropose(id, consensustest.Put(k, fmt.Sprint(i))).(uint64)
				acked[k] = fmt.Sprint(i)
			}
			fss := c.CrashSynced(1)
			if commit := durableCommit(t, fss[0], id); commit >= last {
				t.Fatalf("the disk kept commit index %d, last write at %d: the crash did not lose the commit index", commit, last)
			}
			held.Store(true)
			c.StartNode(1, id)
			net.Rejoin(2)
			eventually(t, waitTimeout, func() error {
				if st := c.Group(1, id).Status(); !st.IsLeader() || st.LastIndex <= last {
					return fmt.Errorf("voter status %+v, want it leading with its new term's entry after %d", st, last)
				}
				return nil
			})

			// Three election timeouts of testConfig (10 ticks of 10ms): a
			// learner asks again after one.
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			err := consensustest.ReadIndex(ctx, c.Group(tc.reader, id))
			cancel()
			if err == nil {
				checkReads(t, c, tc.reader, id, acked)
				t.Fatal("a read completed while the voter could not commit in its new term")
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("read index while the term's first entry cannot commit: %v, want the context's deadline", err)
			}
			if st := c.Group(1, id).Status(); st.Commit >= last {
				t.Fatalf("voter commit %d with its acknowledgements held, want below %d (the test no longer holds the new term's entry)", st.Commit, last)
			}

			held.Store(false)
			close(release)
			ctx, cancel = context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if err := consensustest.ReadIndex(ctx, c.Group(tc.reader, id)); err != nil {
				t.Fatalf("read index once the acknowledgement goes through: %v", err)
			}
			checkReads(t, c, tc.reader, id, acked)
		})
	}
}

// checkReads fails the test unless node's state machine of group id holds
// every key of want with its value.
func checkReads(t *testing.T, c *consensustest.Cluster, node int, id consensus.GroupID, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, ok, err := c.KV(node, id).Read(k)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || got != v {
			st := c.Group(node, id).Status()
			t.Fatalf("node %d: acknowledged write %s=%s not visible to a linearizable read (got %q, found %v; applied %d, commit %d, last index %d)", node, k, v, got, ok, st.Applied, st.Commit, st.LastIndex)
		}
	}
}

// durableCommit opens a crashed node's store and returns group id's commit
// index as its disk kept it (what raft restarts with).
func durableCommit(t *testing.T, fs vfs.FS, id consensus.GroupID) uint64 {
	t.Helper()
	st, err := storage.Open(storage.Config{Dir: consensustest.StoreDir, FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	raw, ok, err := st.Get(storage.RaftHardStateKey(uint64(id)))
	if err != nil || !ok {
		t.Fatalf("hard state of group %d: found=%v err=%v", id, ok, err)
	}
	var hs pb.HardState
	if err := proto.Unmarshal(raw, &hs); err != nil {
		t.Fatal(err)
	}
	return hs.GetCommit()
}
