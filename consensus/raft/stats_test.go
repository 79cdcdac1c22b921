package raft

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
)

// TestStats checks the counters metrics read from Engine.Stats: leadership
// (groups led, leader changes), proposals with their time, the log size,
// and snapshots sent and received when a learner joins.
func TestStats(t *testing.T) {
	c, _ := newTestCluster(t, 3, nil)
	c.StartGroup(1, c.Members())
	c.StartGroup(2, c.Members())
	leader := waitLeader(t, c, 1, 1, 2, 3)
	waitLeader(t, c, 2, 1, 2, 3)
	// Before proposing: the leader counts nothing yet but elections.
	before := rawEngine(c, leader).Stats()
	for i := range 20 {
		mustProposeAmong(t, c, 1, []int{1, 2, 3}, consensustest.Put(fmt.Sprintf("k%d", i), "value"))
	}
	n4 := c.AddNode()
	c.StartGroupOn(n4, 1, nil)
	changeReplicas(t, c, 1, []int{1, 2, 3}, consensus.ReplicaChange{Type: consensus.AddLearner, Replica: consensus.Replica{ReplicaID: 4, NodeID: consensus.NodeID(n4), Learner: true}})
	eventually(t, waitTimeout, func() error {
		if c.KV(n4, 1).Restores() == 0 {
			return errors.New("learner has not received a snapshot")
		}
		return nil
	})

	eventually(t, waitTimeout, func() error {
		var sent, led, groups, leaderless int64
		for n := 1; n <= 3; n++ {
			st := rawEngine(c, n).Stats()
			sent += st.SnapshotsSent
			led += int64(st.Led)
			groups += int64(st.Groups)
			leaderless += int64(st.Leaderless)
			if st.LeaderChanges == 0 {
				return fmt.Errorf("node %d: no leader change counted although its groups elected leaders", n)
			}
		}
		switch {
		case sent == 0:
			return errors.New("no snapshot send counted")
		case groups != 6:
			return fmt.Errorf("%d groups counted on nodes 1-3, want 6", groups)
		case led != 2:
			return fmt.Errorf("%d groups led on nodes 1-3, want 2", led)
		case leaderless != 0:
			return fmt.Errorf("%d leaderless groups, want 0", leaderless)
		}
		if got := rawEngine(c, n4).Stats().SnapshotsReceived; got == 0 {
			return errors.New("no snapshot received counted on the learner's node")
		}
		return nil
	})
	// Proposals are counted on the replica they were submitted to,
	// whichever node that was.
	var proposals, applied, logBytes int64
	var proposeTime, queue, commit, answer time.Duration
	for n := 1; n <= 3; n++ {
		st := rawEngine(c, n).Stats()
		proposals += st.Proposals
		proposeTime += st.ProposeTime
		applied += st.ProposalsApplied
		queue, commit, answer = queue+st.ProposeQueueTime, commit+st.ProposeCommitTime, answer+st.ProposeAnswerTime
		logBytes += int64(st.LogBytes)
	}
	// The stages of applied proposals: every one of the 20 was applied
	// on the leader it was submitted to (mustProposeAmong follows the
	// leader); replication takes time; the stages never add up to more
	// than the proposals' total time.
	if got := applied - before.ProposalsApplied; got < 20 {
		t.Fatalf("%d proposals counted as applied, want >= 20", got)
	}
	if commit <= before.ProposeCommitTime || queue < 0 || answer < 0 {
		t.Fatalf("proposal stages: queue %v, commit %v, answer %v", queue, commit, answer)
	}
	if sum := queue + commit + answer; sum > proposeTime {
		t.Fatalf("proposal stages add up to %v, more than the proposals' %v", sum, proposeTime)
	}
	if got := proposals - before.Proposals; got < 20 {
		t.Fatalf("%d proposals counted, want >= 20", got)
	}
	if proposeTime <= before.ProposeTime {
		t.Fatalf("propose time did not grow: %v -> %v", before.ProposeTime, proposeTime)
	}
	if logBytes == 0 {
		t.Fatal("log bytes are 0 after 20 proposals")
	}
}
