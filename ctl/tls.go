package ctl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosmosd/cosmosd/security"
)

// Flags and environment of a secure cluster (docs/security.md).
const (
	flagCertsDir = "certs-dir"
	flagUser     = "user"
	// CertsDirEnv names the environment variable read when --certs-dir is
	// not given.
	CertsDirEnv = "COSMOSCTL_CERTS_DIR"
	// UserEnv names the environment variable read when --user is not
	// given.
	UserEnv = "COSMOSCTL_USER"
	// DefaultUser is the client certificate used when --user is not
	// given and the directory holds client.root.crt (or several).
	DefaultUser = "root"
)

// clientTLS loads the TLS credentials of --certs-dir: ca.crt, and the
// client certificate of --user (explicit), else client.root.crt, else the
// only client certificate in the directory. The server's certificate must
// be signed by a CA of ca.crt and name the endpoint's host (a DNS name or
// an IP address).
func clientTLS(dir, user string, userSet bool) (credentials.TransportCredentials, error) {
	if _, err := os.Stat(filepath.Join(dir, security.CAFile)); err != nil {
		return nil, fmt.Errorf("--certs-dir %s: %w", dir, err)
	}
	if !userSet {
		var err error
		if user, err = pickUser(dir); err != nil {
			return nil, err
		}
	}
	files := security.ClientFiles(dir, user)
	if _, err := os.Stat(files.Cert); err != nil {
		return nil, fmt.Errorf("--certs-dir %s has no client certificate for user %q (%s); make one with `cosmosd cert create-client %s`",
			dir, user, filepath.Base(files.Cert), user)
	}
	r, err := security.NewReloader(files, nil)
	if err != nil {
		return nil, err
	}
	return r.ClientCredentials(security.ClientOptions{}), nil
}

// pickUser chooses the client certificate when --user is not given.
func pickUser(dir string) (string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "client.*.crt"))
	if err != nil {
		return "", err
	}
	var users []string
	for _, p := range paths {
		users = append(users, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "client."), ".crt"))
	}
	switch {
	case slices.Contains(users, DefaultUser):
		return DefaultUser, nil
	case len(users) == 1:
		return users[0], nil
	case len(users) == 0:
		return "", fmt.Errorf("--certs-dir %s has no client certificate (client.NAME.crt); make one with `cosmosd cert create-client %s`", dir, DefaultUser)
	}
	return "", fmt.Errorf("--certs-dir %s has client certificates for %s: say which with --user", dir, strings.Join(users, ", "))
}

// recordingCreds keep the reason a connection failed during or right
// after the TLS handshake: gRPC reports only a state (TransientFailure),
// and with TLS 1.3 a server refuses a client certificate in an alert the
// client reads after its own handshake completed.
type recordingCreds struct {
	credentials.TransportCredentials
	rec *dialRecorder
}

func newRecordingCreds(creds credentials.TransportCredentials, rec *dialRecorder) credentials.TransportCredentials {
	if creds == nil {
		return recordingCreds{insecure.NewCredentials(), rec}
	}
	return recordingCreds{creds.Clone(), rec}
}

func (c recordingCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		c.rec.setHandshake(err)
		return nil, nil, err
	}
	return &readRecorder{Conn: conn, rec: c.rec}, info, nil
}

func (c recordingCreds) Clone() credentials.TransportCredentials {
	return recordingCreds{c.TransportCredentials.Clone(), c.rec}
}

// readRecorder records the first read error of a connection.
type readRecorder struct {
	net.Conn
	rec *dialRecorder
}

func (r *readRecorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	// A read that fails because gRPC closed the connection (its write of
	// the preface failed first) says nothing about why.
	if err != nil && !errors.Is(err, net.ErrClosed) {
		r.rec.setHandshake(err)
	}
	return n, err
}

// handshakeReason explains a connection that opened but failed before
// gRPC was ready, from the error recorded (nil: none).
func handshakeReason(err error, secure bool) string {
	// With TLS 1.3 a server refuses a client certificate after the
	// client's handshake completed, in an alert; when the client's first
	// write meets the closed socket before it reads the alert, the reset
	// discards it and only the close is left.
	const refusedAfter = "the endpoint closed the connection right after the TLS handshake: it refused the client certificate " +
		"(not signed by the cluster CA, or not one of the node's admin_users?) or is not an admin endpoint"
	if err == nil {
		if secure {
			return refusedAfter
		}
		return "connected, but the gRPC handshake failed (not an admin endpoint, or it requires TLS: --certs-dir)"
	}
	var rec tls.RecordHeaderError
	msg := err.Error()
	switch {
	case strings.Contains(msg, "certificate required"):
		return "the endpoint requires a client certificate of the cluster CA (" + msg + ")"
	case strings.Contains(msg, "bad certificate") || strings.Contains(msg, "unknown certificate authority"):
		return "the endpoint refused the client certificate: not signed by the cluster CA, or not one of the node's admin_users? (" + msg + ")"
	case errors.As(err, &rec):
		return "the endpoint does not speak TLS (" + msg + "); leave out --certs-dir?"
	case strings.Contains(msg, "remote error"):
		return "TLS refused: " + msg
	case strings.Contains(msg, "security: server certificate"):
		return "the endpoint's certificate is not trusted: " + msg
	case secure && (errors.Is(err, io.EOF) || strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe")):
		return refusedAfter
	case !secure && (errors.Is(err, io.EOF) || strings.Contains(msg, "connection reset")):
		return "the endpoint closed the connection during the handshake: it requires TLS (--certs-dir, or " + CertsDirEnv + ")"
	}
	return "handshake failed: " + msg
}
