package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosmosd/cosmosd/security"
)

// TLS of the node's listeners and clients (issue 12, docs/security.md).
// With certs_dir set every listener serves TLS with the node certificate:
// the internode server and the admin API require a client certificate from
// the cluster CA (internode: a node certificate), CQL requires one only
// with cql_require_client_cert, and HTTP asks for one only on pprof.
// Without certs_dir everything is plaintext, as before.

// loadCertificates loads the node's certificates (certs_dir) and the etcd
// client's (etcd_*_file) before anything listens.
func (n *Node) loadCertificates() error {
	if n.cfg.CertsDir != "" {
		r, err := security.NewReloader(security.NodeFiles(n.cfg.CertsDir), n.logger.With("component", "certs"))
		if err != nil {
			return err
		}
		n.certs = r
		n.logger.Info("tls enabled", "certs_dir", n.cfg.CertsDir, "serial", security.SerialString(r.Certificate()),
			"not_after", r.Certificate().NotAfter.UTC(), "cql_require_client_cert", n.cfg.CQLRequireClientCert)
	} else {
		n.logger.Warn("running insecure: no TLS; anyone who can reach this node's ports can read, write and administer the cluster (set certs_dir)")
	}
	if n.cfg.etcdTLS() {
		r, err := security.NewReloader(security.Files{CA: n.cfg.EtcdCAFile, Cert: n.cfg.EtcdCertFile, Key: n.cfg.EtcdKeyFile},
			n.logger.With("component", "etcd-certs"))
		if err != nil {
			return err
		}
		n.etcdCerts = r
	}
	return nil
}

// runCertificateReloads re-reads the certificate files when they change.
func (n *Node) runCertificateReloads(ctx context.Context) {
	for _, r := range []*security.Reloader{n.certs, n.etcdCerts} {
		if r != nil {
			n.bg.Add(1)
			go func() {
				defer n.bg.Done()
				r.Run(ctx, security.DefaultReloadInterval)
			}()
		}
	}
}

// ReloadCertificates re-reads the certificate files now (SIGHUP). New
// connections use the new files; established ones continue. On an error
// the previous certificates stay in use.
func (n *Node) ReloadCertificates() error {
	// Said even when nothing changed (then nothing else is logged): the
	// operator sees that the request arrived.
	if n.certs == nil && n.etcdCerts == nil {
		n.logger.Info("certificate reload requested, but the node has no certificates (certs_dir and etcd_*_file unset)")
		return nil
	}
	n.logger.Info("re-reading the certificate files on request")
	var errs []error
	for _, r := range []*security.Reloader{n.certs, n.etcdCerts} {
		if r != nil {
			errs = append(errs, r.Reload())
		}
	}
	return errors.Join(errs...)
}

// Certificates returns the node's certificate reloader (nil without
// certs_dir).
func (n *Node) Certificates() *security.Reloader { return n.certs }

// cqlListener wraps the CQL listener in TLS. The handshake runs on the
// connection's first read, on its own goroutine, bounded by the idle
// timeout's read deadline: a plaintext client fails it and is closed
// without reaching the protocol.
func (n *Node) cqlListener(ln net.Listener) net.Listener {
	if n.certs == nil {
		return ln
	}
	auth := tls.VerifyClientCertIfGiven
	if n.cfg.CQLRequireClientCert {
		auth = tls.RequireAndVerifyClientCert
	}
	return tls.NewListener(ln, n.certs.ServerConfig(security.ServerOptions{ClientAuth: auth}))
}

// httpListener wraps the HTTP listener in TLS. Client certificates are
// verified when given; only pprof requires one (requireClientCert).
func (n *Node) httpListener(ln net.Listener) net.Listener {
	if n.certs == nil {
		return ln
	}
	return tls.NewListener(ln, n.certs.ServerConfig(security.ServerOptions{ClientAuth: tls.VerifyClientCertIfGiven, NextProtos: []string{"http/1.1"}}))
}

// requireClientCert guards handlers that reveal the process (pprof: heap,
// goroutines, command line) when TLS is on: they need a client
// certificate of the cluster CA. /metrics, /healthz and /readyz stay open
// to scrapers and health checks.
func (n *Node) requireClientCert(h http.HandlerFunc) http.HandlerFunc {
	if n.certs == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if !security.HasVerifiedClient(r.TLS) {
			http.Error(w, "a client certificate of the cluster CA is required", http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

// peerServerCreds are the internode server's credentials: mutual TLS that
// accepts node certificates only, so a process without one fails the
// handshake before any raft message or forwarded request is read.
func (n *Node) peerServerCreds() []grpc.ServerOption {
	if n.certs == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(n.certs.ServerConfig(security.ServerOptions{
		ClientAuth: tls.RequireAndVerifyClientCert, RequireNode: true, NextProtos: []string{"h2"}})))}
}

// adminServerCreds are the admin API's: TLS with a client certificate of
// the cluster CA required.
func (n *Node) adminServerCreds() []grpc.ServerOption {
	if n.certs == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(n.certs.ServerConfig(security.ServerOptions{
		ClientAuth: tls.RequireAndVerifyClientCert, AllowedClients: n.cfg.AdminUsers, NextProtos: []string{"h2"}})))}
}

// peerDialCreds are what the router and the raft transport dial peers
// with: the node certificate, and a peer must present a node certificate
// for the address dialed too.
func (n *Node) peerDialCreds() grpc.DialOption {
	if n.certs == nil {
		return grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	return grpc.WithTransportCredentials(n.certs.ClientCredentials(security.ClientOptions{RequireNode: true}))
}

// etcdDialOptions secure the etcd client: etcd_*_file when set, else the
// node certificate for the embedded etcd when certs_dir is set, else
// nothing (plaintext). They go in as dial options rather than
// clientv3.Config.TLS, a fixed tls.Config, so that each handshake verifies
// the member against the current CA bundle and the host of the endpoint
// (an IP address included) and presents the current certificate. The
// credentials record why connections fail while checkEtcd runs.
func (n *Node) etcdDialOptions() ([]grpc.DialOption, *connProbe) {
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	switch {
	case n.etcdCerts != nil:
		creds = n.etcdCerts.ClientCredentials(security.ClientOptions{})
	case n.embedded != nil && n.certs != nil:
		creds = n.certs.ClientCredentials(security.ClientOptions{})
	}
	probe := &connProbe{}
	return []grpc.DialOption{grpc.WithTransportCredentials(probeCreds{creds, probe})}, probe
}

// etcdSecure reports whether the etcd client talks TLS.
func (n *Node) etcdSecure() bool {
	return n.etcdCerts != nil || (n.embedded != nil && n.certs != nil)
}

// etcdAttemptTimeout bounds each attempt of the first etcd request.
const etcdAttemptTimeout = 5 * time.Second

// checkEtcd makes the first etcd request, before anything waits on etcd
// with an unbounded context (the node id, the metadata). The etcd client
// retries a connection that fails silently, forever, and a request only
// reports its deadline; but a TLS problem between the node and etcd (a
// certificate of another CA, one that does not name the endpoint, TLS to
// a plaintext member or plaintext to a TLS one) never heals by waiting.
// Such a failure ends the start within an attempt or three with the
// reason the connection failed; an etcd that does not answer (down, no
// quorum yet) is waited for until ctx ends, with a warning each attempt.
func (n *Node) checkEtcd(ctx context.Context, endpoints []string, probe *connProbe) error {
	eps := strings.Join(endpoints, ",")
	probe.active.Store(true)
	defer probe.active.Store(false)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, etcdAttemptTimeout)
		// Serializable: any member answers, with or without a leader.
		err := n.etcd.Ping(actx)
		cancel()
		if err == nil {
			return nil
		}
		connErr := probe.last()
		if reason := etcdTLSFailure(connErr, n.etcdSecure(), attempt); reason != "" {
			return fmt.Errorf("etcd at %s: %s: %w", eps, reason, connErr)
		}
		if connErr != nil {
			err = fmt.Errorf("%w (connection: %w)", err, connErr)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("etcd at %s: %w", eps, err)
		}
		n.logger.Warn("etcd does not answer; retrying", "endpoints", eps, "attempt", attempt, "err", err)
	}
}

// etcdTLSFailure explains a connection error that a TLS setup causes and
// that retrying does not fix ("" for any other error, or nil).
func etcdTLSFailure(err error, secure bool, attempt int) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &rec) || strings.Contains(msg, "first record does not look like a TLS handshake"):
		return "etcd does not speak TLS (for an external etcd without TLS leave out etcd_ca_file, etcd_cert_file and etcd_key_file)"
	case strings.Contains(msg, "security: server certificate"):
		return "etcd's certificate is not trusted (not signed by a CA in the CA file, or not valid for the endpoint's host)"
	case strings.Contains(msg, "remote error: tls: "):
		return "etcd refused this node's TLS client certificate (none, not signed by a CA etcd trusts, or not one it allows: an embedded etcd takes node certificates only)"
	case strings.Contains(msg, "tls: ") || strings.Contains(msg, "x509: ") || strings.Contains(msg, "security: "):
		return "the TLS handshake with etcd failed"
	}
	// A member closes a connection of the other kind without a word: a
	// TLS one closes a plaintext connection when it reads the HTTP/2
	// preface, a plaintext one a TLS connection when it reads the client
	// hello. Only after several attempts: a member that stops closes
	// connections too.
	if attempt < 3 || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		return ""
	}
	var he handshakeError
	switch handshake := errors.As(err, &he); {
	case secure && handshake:
		return "etcd closes TLS connections during the handshake: does it speak TLS? (for an external etcd without TLS leave out etcd_ca_file, etcd_cert_file and etcd_key_file)"
	case !secure && !handshake:
		return "etcd closes plaintext connections unanswered: does it require TLS? (etcd_ca_file, etcd_cert_file, etcd_key_file)"
	}
	return ""
}

// handshakeError marks an error of the TLS handshake (connProbe).
type handshakeError struct{ err error }

func (e handshakeError) Error() string { return "handshake: " + e.err.Error() }
func (e handshakeError) Unwrap() error { return e.err }

// connProbe keeps the last error of the etcd client's connections, during
// their handshake or their reads, while active: gRPC reports only that a
// connection failed, and with TLS 1.3 a server refuses a client
// certificate in an alert the client reads after its own handshake.
type connProbe struct {
	active atomic.Bool
	mu     sync.Mutex
	err    error
}

func (p *connProbe) record(err error) {
	if !p.active.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

func (p *connProbe) last() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// probeCreds wrap transport credentials to feed a connProbe.
type probeCreds struct {
	credentials.TransportCredentials
	p *connProbe
}

func (c probeCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		c.p.record(handshakeError{err})
		return nil, nil, err
	}
	if c.p.active.Load() {
		// Only connections made during the check are wrapped; they may
		// live on, recording nothing once the check is over.
		conn = &probeConn{Conn: conn, p: c.p}
	}
	return conn, info, nil
}

func (c probeCreds) Clone() credentials.TransportCredentials {
	return probeCreds{c.TransportCredentials.Clone(), c.p}
}

// probeConn records the read errors of a connection.
type probeConn struct {
	net.Conn
	p *connProbe
}

func (c *probeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.p.record(err)
	}
	return n, err
}
