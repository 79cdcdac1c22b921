package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Panics in gRPC handlers. gRPC does not recover them: one forwarded
// request or admin call that reaches a bug would take the whole node down.
// These interceptors answer such a call with codes.Internal naming an
// incident id and log the panic with its stack under that id; the request's
// content never reaches the caller's error. A panic is still a bug: the
// node keeps serving the other requests while it is found.

func incidentID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func recoverUnary(logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				id := incidentID()
				logger.Error("panic in grpc handler", "method", info.FullMethod, "incident", id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				resp, err = nil, status.Errorf(codes.Internal, "internal error (incident %s); see the node's log", id)
			}
		}()
		return handler(ctx, req)
	}
}

func recoverStream(logger *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if p := recover(); p != nil {
				id := incidentID()
				logger.Error("panic in grpc stream handler", "method", info.FullMethod, "incident", id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				err = status.Errorf(codes.Internal, "internal error (incident %s); see the node's log", id)
			}
		}()
		return handler(srv, ss)
	}
}
