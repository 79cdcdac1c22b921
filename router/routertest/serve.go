package routertest

import (
	"net"
	"testing"

	"google.golang.org/grpc"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// ServeGRPC serves a gRPC server with the services register registers on
// a loopback port until tb ends, and returns its address and the server
// (a test may Stop it early: the node dies).
func ServeGRPC(tb testing.TB, register func(*grpc.Server)) (addr string, srv *grpc.Server) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv = grpc.NewServer()
	register(srv)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln) // returns nil after Stop; an early failure shows as refused calls
	}()
	tb.Cleanup(func() {
		srv.Stop()
		<-served
	})
	return ln.Addr().String(), srv
}

// ServeInternal serves impl as the internal key-value service (kv.Internal)
// on a loopback port until tb ends; see ServeGRPC.
func ServeInternal(tb testing.TB, impl kvpb.InternalServer) (addr string, srv *grpc.Server) {
	tb.Helper()
	return ServeGRPC(tb, func(s *grpc.Server) { kvpb.RegisterInternalServer(s, impl) })
}

// RefusedAddr returns a loopback address nothing listens on: a node that
// registered and then stopped. (The port was free a moment ago; another
// test process could take it, which a caller sees as a node that answers
// wrongly, never as a hang.)
func RefusedAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		tb.Fatal(err)
	}
	return addr
}
