package router

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// The pool keeps one connection per node and reuses it; it redials when
// the node registers a new address, keeps the connection of a node whose
// registration lapsed, and refuses new connections once closed.
func TestPoolReuseRedialClose(t *testing.T) {
	a1, _ := servedServer(t, &Server{})
	a2, _ := servedServer(t, &Server{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := newPool(ctx, []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())})
	defer p.close()

	if _, err := p.get(5, nil); partition.ErrorCode(err) != kvpb.Error_UNKNOWN || err == nil {
		t.Fatalf("unregistered node without a connection: %v, want an UNKNOWN partition error", err)
	}
	c1, err := p.get(5, &cluster.NodeInfo{ID: 5, PeerAddr: a1})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := p.get(5, &cluster.NodeInfo{ID: 5, PeerAddr: a1}); again != c1 {
		t.Fatal("a second request to the node dialed again")
	}
	if !c1.ready(ctx, ConnectWait) {
		t.Fatalf("connection to a serving node not ready: %s", c1.conn.GetState())
	}
	if _, err := c1.kv.Ping(ctx, &kvpb.PingRequest{}); err != nil {
		t.Fatalf("ping over the pooled connection: %v", err)
	}

	c2, err := p.get(5, &cluster.NodeInfo{ID: 5, PeerAddr: a2})
	if err != nil || c2 == c1 || c2.addr != a2 {
		t.Fatalf("node moved to %s: got %v (%v), want a new connection", a2, c2, err)
	}
	if st := c1.conn.GetState(); st != connectivity.Shutdown {
		t.Fatalf("the connection to the old address is %s, want closed", st)
	}
	// A lapsed registration keeps the open connection.
	if c, err := p.get(5, nil); err != nil || c != c2 {
		t.Fatalf("lapsed registration: %v %v, want the open connection", c, err)
	}
	if p.lookup(5) != c2 || p.lookup(6) != nil || len(p.all()) != 1 {
		t.Fatalf("lookup/all disagree with the one open connection: %v", p.all())
	}

	p.close()
	if st := c2.conn.GetState(); st != connectivity.Shutdown {
		t.Fatalf("connection %s after close, want closed", st)
	}
	if _, err := p.get(5, &cluster.NodeInfo{ID: 5, PeerAddr: a2}); !errors.Is(err, errPoolClosed) {
		t.Fatalf("get after close: %v, want errPoolClosed", err)
	}
	if p.lookup(5) != nil {
		t.Fatal("a closed pool still holds a connection")
	}
	p.close() // twice is safe
}

// A closed router sends nothing to other nodes; this node's store, which
// the router does not own, still serves in process.
func TestClosedRouterSendsNothing(t *testing.T) {
	m, _, n2 := twoNodes(t, Config{})
	n2.Bootstrap(t, whole(200, 2))
	m.setRing(whole(100, 1))
	n2.router.Close()
	n2.router.Close()
	if _, err := n2.router.client(1); !errors.Is(err, errPoolClosed) {
		t.Fatalf("client for another node after Close: %v, want errPoolClosed", err)
	}
	cl, err := n2.router.client(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cl.(*localNode); !ok {
		t.Fatalf("client for this node is %T, want the local store", cl)
	}
}
