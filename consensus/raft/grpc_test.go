package raft

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/consensustest"
	"github.com/cosmosd/cosmosd/storage"
)

// grpcNode is an engine serving its transport on its own loopback gRPC
// server (in the daemon, the server is shared with other services).
type grpcNode struct {
	*Engine
	srv *grpc.Server
}

// Close stops the server (and its handlers), then the engine.
func (n grpcNode) Close() error {
	n.srv.Stop()
	return n.Engine.Close()
}

// addrBook is the resolver of a test cluster.
type addrBook struct {
	mu    sync.Mutex
	addrs map[consensus.NodeID]string
}

func (b *addrBook) resolve(node consensus.NodeID) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a, ok := b.addrs[node]
	if !ok {
		return "", fmt.Errorf("node %d unknown", node)
	}
	return a, nil
}

// startGRPCNode starts an engine for node on st with a gRPC server on a
// fresh loopback port, registered in book.
func startGRPCNode(node consensus.NodeID, st *storage.Engine, book *addrBook, tweak func(*Config)) (grpcNode, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return grpcNode{}, err
	}
	cfg := testConfig(node, st, nil)
	cfg.Resolver = book.resolve
	if tweak != nil {
		tweak(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		_ = lis.Close()
		return grpcNode{}, err
	}
	srv := grpc.NewServer(grpc.WaitForHandlers(true), grpc.MaxRecvMsgSize(16<<20))
	e.RegisterService(srv)
	book.mu.Lock()
	book.addrs[node] = lis.Addr().String()
	book.mu.Unlock()
	go func() { _ = srv.Serve(lis) }()
	return grpcNode{Engine: e, srv: srv}, nil
}

func grpcHarness(replicas int, tweak func(*Config)) consensustest.Harness {
	return consensustest.Harness{
		Replicas: replicas,
		Timeout:  waitTimeout,
		NewCluster: func(t *testing.T) func(consensus.NodeID, *storage.Engine) (consensus.Engine, error) {
			book := &addrBook{addrs: map[consensus.NodeID]string{}}
			return func(node consensus.NodeID, st *storage.Engine) (consensus.Engine, error) {
				return startGRPCNode(node, st, book, tweak)
			}
		},
	}
}

// TestGRPCConformance runs the conformance suite over real gRPC streams on
// loopback.
func TestGRPCConformance(t *testing.T) {
	consensustest.RunEngineConformance(t, grpcHarness(4, nil))
}

// TestGRPCSnapshotAndReconnect: a follower that was down while the log was
// truncated comes back on a new port; the others reconnect to it (through
// the resolver) and stream it a snapshot in several chunks.
func TestGRPCSnapshotAndReconnect(t *testing.T) {
	c := consensustest.NewCluster(t, grpcHarness(4, func(cfg *Config) {
		cfg.LogTruncateEntries, cfg.LogRetainEntries = 20, 5
		cfg.SnapshotChunkBytes = 256 // many chunks
		cfg.ReconnectBackoff, cfg.MaxReconnectBackoff = 10*time.Millisecond, 100*time.Millisecond
	}))
	defer c.Close()
	c.StartGroup(1, c.Members())
	leader := c.Leader(1)
	follower := without([]int{1, 2, 3, 4}, leader)[0]
	c.StopNode(follower)
	rest := without([]int{1, 2, 3, 4}, follower)
	for i := range 100 {
		mustProposeAmong(t, c, 1, rest, consensustest.Put(fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%d", i)))
	}
	eventually(t, waitTimeout, func() error {
		if first := firstLogIndex(t, c.Store(leader), 1); first < 10 {
			mustProposeAmong(t, c, 1, rest, consensustest.Put("filler", "x"))
			return fmt.Errorf("leader log starts at %d", first)
		}
		return nil
	})
	c.StartNode(follower, 1)
	c.CheckConverged(1)
	for i := range 100 {
		if v, ok := readOn(t, c, follower, 1, fmt.Sprintf("k%03d", i)); !ok || v != fmt.Sprintf("value-%d", i) {
			t.Fatalf("follower: k%03d = %q %v", i, v, ok)
		}
	}
	if c.KV(follower, 1).Restores() == 0 {
		t.Fatal("follower caught up without a snapshot")
	}
}
