package router

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router/routertest"
)

// dialTest opens a client connection as the router does.
func dialTest(t *testing.T, addr string) *nodeConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithKeepaliveParams(KeepaliveParams), grpc.WithConnectParams(ConnectParams))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return newNodeConn(t.Context(), addr, cc)
}

// blackHole accepts TCP connections and never answers, as a host whose
// process hangs; a vanished host (SYNs unanswered) looks the same to gRPC:
// the connection stays CONNECTING.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					_ = c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}

func TestReadyOnLiveNode(t *testing.T) {
	addr, _ := routertest.ServeGRPC(t, func(*grpc.Server) {}) // no service: the connection is all
	c := dialTest(t, addr)
	// A new connection starts idle: ready connects it.
	if !c.ready(context.Background(), 10*time.Second) {
		t.Fatalf("connection to a serving node not ready: %s", c.conn.GetState())
	}
	if st := c.conn.GetState(); st != connectivity.Ready {
		t.Fatalf("state %s after ready, want READY", st)
	}
}

// A request to a node that does not complete the connection is reported
// as not sent, so the router tries another replica instead of waiting out
// the request's deadline.
func TestNotReadyIsNotSent(t *testing.T) {
	for name, addr := range map[string]string{"silent": blackHole(t), "refused": routertest.RefusedAddr(t)} {
		t.Run(name, func(t *testing.T) {
			c := dialTest(t, addr)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if c.ready(ctx, 300*time.Millisecond) {
				t.Fatalf("connection to a %s address ready (%s)", name, c.conn.GetState())
			}
			if ctx.Err() != nil {
				t.Fatal("ready waited out the request's deadline instead of its own bound")
			}
			err := errNotConnected(7, c)
			if s, ok := status.FromError(errors.Unwrap(err)); !ok || s.Code() != codes.Unavailable {
				t.Fatalf("error %v: want an Unavailable status", err)
			}
			if !transportFailure(err) {
				t.Fatalf("%v is not a transport failure: the leader hint of the node would be kept", err)
			}
			r := &Router{}
			if got := r.classify(nil, 7, err, false); got != tryNext {
				t.Fatalf("classify(%v, not sent) = %d, want tryNext", err, got)
			}
		})
	}
}

// A node that comes back after its address refused connections is
// reachable again: the connection recovers by itself, no request has to
// find it broken first.
func TestReconnectsWhenNodeReturns(t *testing.T) {
	addr := routertest.RefusedAddr(t)
	c := dialTest(t, addr)
	if c.ready(context.Background(), 2*time.Second) {
		t.Fatal("ready while nothing listens")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	srv := grpc.NewServer()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	// ready does not wait out gRPC's reconnect backoff (a node that failed
	// its last attempt is skipped at once), so poll for the recovery.
	deadline := time.Now().Add(10 * time.Second)
	for !c.ready(context.Background(), 100*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no connection 10s after the node returned: %s", c.conn.GetState())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A write whose node failed after receiving it is a timeout (outcome
// unknown), never a plain error a client might take as "not applied";
// partition errors keep their meaning.
func TestInFlightFailureIsTimeout(t *testing.T) {
	broken := fmt.Errorf("node 3: %w", status.Error(codes.Unavailable, "error reading from server: EOF"))
	err := inFlight(17, 3, broken)
	if partition.ErrorCode(err) != kvpb.Error_TIMEOUT {
		t.Fatalf("inFlight(%v) = %v, want a TIMEOUT", broken, err)
	}
	if !strings.Contains(err.Error(), "partition 17") || !strings.Contains(err.Error(), "may or may not have been applied") {
		t.Fatalf("message does not say which partition and that the outcome is unknown: %v", err)
	}
	invalid := partition.Errorf(kvpb.Error_INVALID, "bad value")
	if got := inFlight(17, 3, invalid); got != invalid {
		t.Fatalf("inFlight changed a partition error: %v", got)
	}
	internal := fmt.Errorf("node 3: %w", status.Error(codes.Internal, "boom"))
	if got := inFlight(17, 3, internal); got != internal {
		t.Fatalf("inFlight changed a non-transport error: %v", got)
	}
}
