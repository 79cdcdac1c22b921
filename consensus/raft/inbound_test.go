package raft

import (
	"context"
	"errors"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
	"github.com/cosmosd/cosmosd/storage"
)

// forgeCluster starts 4 engines on real gRPC and returns the cluster and
// its address book, so a test can reach the peer ports as an outsider.
func forgeCluster(t *testing.T, tweak func(*Config)) (*consensustest.Cluster, *addrBook) {
	t.Helper()
	book := &addrBook{addrs: map[consensus.NodeID]string{}}
	c := consensustest.NewCluster(t, consensustest.Harness{
		Replicas: 4,
		Timeout:  waitTimeout,
		NewCluster: func(t *testing.T) func(consensus.NodeID, *storage.Engine) (consensus.Engine, error) {
			return func(node consensus.NodeID, st *storage.Engine) (consensus.Engine, error) {
				return startGRPCNode(node, st, book, tweak)
			}
		},
	})
	t.Cleanup(c.Close)
	return c, book
}

// sendForged sends one batch to node's peer port, claiming to come from
// fromNode, as any process that reaches the port can.
func sendForged(t *testing.T, book *addrBook, node, fromNode consensus.NodeID, group consensus.GroupID, msgs ...*pb.Message) {
	t.Helper()
	addr, err := book.resolve(node)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	stream, err := transportpb.NewRaftTransportClient(cc).Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	batch := &transportpb.MessageBatch{FromNode: uint64(fromNode), ToNode: uint64(node)}
	for _, m := range msgs {
		raw, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		batch.Messages = append(batch.Messages, &transportpb.RaftMessage{Group: uint64(group), FromReplica: m.GetFrom(), ToReplica: m.GetTo(), Message: raw})
	}
	if err := stream.Send(batch); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		t.Fatal(err)
	}
}

func heartbeat(from, to, term, commit uint64) *pb.Message {
	return &pb.Message{Type: pb.MsgHeartbeat.Enum(), From: proto.Uint64(from), To: proto.Uint64(to), Term: proto.Uint64(term), Commit: proto.Uint64(commit)}
}

// checkAlive fails the test unless every replica of group 1 still runs:
// each answers a read index, and the group commits a write.
func checkAlive(t *testing.T, c *consensustest.Cluster) {
	t.Helper()
	c.MustPropose(1, consensustest.Put("after", "forged"))
	for n := 1; n <= 4; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		err := consensustest.ReadIndex(ctx, c.Group(n, 1))
		cancel()
		if errors.Is(err, consensus.ErrStopped) {
			t.Fatalf("node %d: the group stopped after forged messages: %v", n, err)
		}
		if err != nil {
			t.Fatalf("node %d: read index: %v", n, err)
		}
	}
	c.CheckConverged(1)
	for n := 1; n <= 4; n++ {
		if v, ok, err := c.KV(n, 1).Read("after"); err != nil || !ok || v != "forged" {
			t.Fatalf("node %d: after = %q %v %v", n, v, ok, err)
		}
	}
}

// TestForgedMessagesDoNotStopGroups: messages any process can send to the
// peer port, each of which used to stop a group (raft panics on a
// heartbeat committing past the log, and a panic stopped the group until
// the process restarted) or to mislead it, leave every replica running.
func TestForgedMessagesDoNotStopGroups(t *testing.T) {
	c, book := forgeCluster(t, nil)
	c.StartGroup(1, c.Members())
	c.MustPropose(1, consensustest.Put("k", "0"))
	leader := c.Leader(1)
	st := c.Group(leader, 1).Status()
	lr, term := uint64(st.ReplicaID), st.Term
	const huge = 1 << 40
	for n := 1; n <= 4; n++ {
		to := uint64(c.Group(n, 1).Status().ReplicaID)
		from := consensus.NodeID(99)
		if to == lr {
			// The leader ignores a same-term heartbeat; a follower's
			// identity is what a forger would claim towards it.
			continue
		}
		// The message: claimed node 99, the leader's replica,
		// commit 2^40.
		sendForged(t, book, consensus.NodeID(n), from, 1, heartbeat(lr, to, term, huge))
		// The leader's real node and replica: admitted, commit clamped.
		sendForged(t, book, consensus.NodeID(n), consensus.NodeID(leader), 1, heartbeat(lr, to, term, huge))
		// A replica that is not a member.
		sendForged(t, book, consensus.NodeID(n), from, 1, heartbeat(99, to, term, huge))
		// A member that does not lead asks for an election now, or
		// answers a read index that was never asked.
		other := uint64(0)
		for _, m := range st.Members {
			if uint64(m.ReplicaID) != lr && uint64(m.ReplicaID) != to {
				other = uint64(m.ReplicaID)
				break
			}
		}
		sendForged(t, book, consensus.NodeID(n), consensus.NodeID(other), 1,
			&pb.Message{Type: pb.MsgTimeoutNow.Enum(), From: proto.Uint64(other), To: proto.Uint64(to), Term: proto.Uint64(term)},
			&pb.Message{Type: pb.MsgReadIndexResp.Enum(), From: proto.Uint64(other), To: proto.Uint64(to), Term: proto.Uint64(term), Index: proto.Uint64(huge), Entries: []*pb.Entry{{Data: []byte("12345678")}}})
	}
	// Towards the leader: a follower acknowledging entries that do not
	// exist (it would make the leader count them as replicated).
	for _, m := range st.Members {
		if uint64(m.ReplicaID) == lr {
			continue
		}
		sendForged(t, book, consensus.NodeID(leader), m.NodeID, 1,
			&pb.Message{Type: pb.MsgAppResp.Enum(), From: proto.Uint64(uint64(m.ReplicaID)), To: proto.Uint64(lr), Term: proto.Uint64(term), Index: proto.Uint64(huge)})
	}
	checkAlive(t, c)
	if now := c.Group(c.Leader(1), 1).Status().Leader; now != consensus.ReplicaID(lr) {
		t.Logf("leadership moved from r%d to r%d", lr, now)
	}
}

// TestRaftPanicRestartsReplica: with admission off, the forged heartbeat
// reaches raft and makes it panic; the replica rebuilds its RawNode from
// its durable state and keeps serving instead of stopping.
func TestRaftPanicRestartsReplica(t *testing.T) {
	c, book := forgeCluster(t, func(cfg *Config) {
		cfg.TestingKnobs = &TestingKnobs{DisableAdmission: true}
	})
	c.StartGroup(1, c.Members())
	c.MustPropose(1, consensustest.Put("k", "0"))
	leader := c.Leader(1)
	st := c.Group(leader, 1).Status()
	follower := without([]int{1, 2, 3, 4}, leader)[0]
	to := uint64(c.Group(follower, 1).Status().ReplicaID)
	sendForged(t, book, consensus.NodeID(follower), consensus.NodeID(leader), 1, heartbeat(uint64(st.ReplicaID), to, st.Term, 1<<40))
	eventually(t, waitTimeout, func() error {
		if n := resetsOf(c.Engine(follower).(grpcNode).Engine, 1); n == 0 {
			return errors.New("raft has not panicked on the forged heartbeat yet")
		}
		return nil
	})
	checkAlive(t, c)
}

// resetsOf reads a group's reset count between passes.
func resetsOf(e *Engine, id consensus.GroupID) int {
	g := e.lookup(id)
	if g == nil {
		return -1
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.resets
}
