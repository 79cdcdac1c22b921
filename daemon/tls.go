package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"

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
		ClientAuth: tls.RequireAndVerifyClientCert, NextProtos: []string{"h2"}})))}
}

// peerDialCreds are what the router and the raft transport dial peers
// with: the node certificate, and a peer must present a node certificate
// too.
func (n *Node) peerDialCreds() grpc.DialOption {
	if n.certs == nil {
		return grpc.WithTransportCredentials(insecure.NewCredentials())
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(n.certs.ClientConfig(security.ClientOptions{RequireNode: true})))
}

// etcdClientTLS is the etcd client's TLS: etcd_*_file when set, else the
// node certificate for the embedded etcd when certs_dir is set, else none.
func (n *Node) etcdClientTLS() *tls.Config {
	switch {
	case n.etcdCerts != nil:
		return n.etcdCerts.ClientConfig(security.ClientOptions{})
	case n.embedded != nil && n.certs != nil:
		return n.certs.ClientConfig(security.ClientOptions{})
	}
	return nil
}
