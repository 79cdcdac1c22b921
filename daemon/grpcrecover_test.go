package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// panicky is an internal service whose Read handler panics, as a bug
// reached by a forwarded request would.
type panicky struct {
	kvpb.UnimplementedInternalServer
}

func (panicky) Read(context.Context, *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	panic("secret request content")
}

// TestHandlerPanicDoesNotKillNode: a handler panic answers Internal with an
// incident id (not the panic text) and the server keeps serving.
func TestHandlerPanicDoesNotKillNode(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(recoverUnary(logger)))
	kvpb.RegisterInternalServer(srv, panicky{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cli := kvpb.NewInternalClient(cc)
	for range 2 { // the second call proves the server survived the first
		_, err := cli.Read(context.Background(), &kvpb.ReadRequest{})
		st, _ := status.FromError(err)
		if st.Code() != codes.Internal || !strings.Contains(st.Message(), "incident") || strings.Contains(st.Message(), "secret") {
			t.Fatalf("error %v: want Internal naming an incident, without the panic text", err)
		}
	}
	if !strings.Contains(logs.String(), "secret request content") || !strings.Contains(logs.String(), "incident") {
		t.Fatalf("the panic is not logged with its incident id:\n%s", logs.String())
	}
}
