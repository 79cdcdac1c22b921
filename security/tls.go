package security

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
)

// Files names the files of one TLS identity. CA is the bundle of trusted
// CA certificates (empty: the system's roots); Cert and Key are the
// certificate presented to the other side (both empty: none).
type Files struct {
	CA, Cert, Key string
}

// NodeFiles are a node's files in a certificates directory.
func NodeFiles(dir string) Files {
	return Files{CA: filepath.Join(dir, CAFile), Cert: filepath.Join(dir, NodeCertFile), Key: filepath.Join(dir, NodeKeyFile)}
}

// ClientFiles are client name's files in a certificates directory.
func ClientFiles(dir, name string) Files {
	return Files{CA: filepath.Join(dir, CAFile), Cert: filepath.Join(dir, ClientCertFile(name)), Key: filepath.Join(dir, ClientKeyFile(name))}
}

// DefaultReloadInterval is how often Run looks at the files.
const DefaultReloadInterval = time.Second

// material is one consistent load of Files.
type material struct {
	pool *x509.CertPool      // nil: the system roots
	cert *tls.Certificate    // nil: no certificate to present
	leaf *x509.Certificate   // cert's leaf
	cas  []*x509.Certificate // the CA bundle, for tests and logs
}

// Reloader holds the current material of one set of files. Safe for
// concurrent use: handshakes read the material through an atomic pointer;
// reloads are serialised by mu.
type Reloader struct {
	files  Files
	logger *slog.Logger
	cur    atomic.Pointer[material]

	mu struct {
		sync.Mutex
		// sum is the digest of the files' contents last tried, loaded or
		// not: a content that failed is not tried (and logged) again.
		sum [sha256.Size]byte
	}
}

// NewReloader loads files, which must load. logger (nil: discard) hears
// about reloads.
func NewReloader(files Files, logger *slog.Logger) (*Reloader, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if (files.Cert == "") != (files.Key == "") {
		return nil, errors.New("security: a certificate needs its key and a key its certificate")
	}
	r := &Reloader{files: files, logger: logger}
	sum, m, err := r.load()
	if err != nil {
		return nil, err
	}
	r.mu.sum = sum
	r.cur.Store(m)
	return r, nil
}

// Files returns the files the reloader reads.
func (r *Reloader) Files() Files { return r.files }

// Certificate returns the leaf certificate presented now (nil: none).
func (r *Reloader) Certificate() *x509.Certificate { return r.cur.Load().leaf }

// CAs returns the trusted CA certificates now (nil: the system roots).
func (r *Reloader) CAs() []*x509.Certificate { return slices.Clone(r.cur.Load().cas) }

// Reload reads the files now and, when they load, uses them for new
// connections. It returns the error that keeps the previous material in
// use; unchanged files are not reloaded.
func (r *Reloader) Reload() error {
	return r.reload(triggerRequest)
}

// What made a reload, in its log lines: an operator who sent SIGHUP sees
// whether the signal or the file watch loaded the files.
const (
	triggerRequest    = "reload request"
	triggerFileChange = "file change"
)

// reload loads the files when they changed. A failure is logged once per
// content on file changes, at every request.
func (r *Reloader) reload(trigger string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	raw, err := r.read()
	sum := digest(raw)
	if err == nil && sum == r.mu.sum {
		return nil
	}
	var m *material
	if err == nil {
		m, err = r.parse(raw)
	}
	if err != nil {
		if sum != r.mu.sum || trigger == triggerRequest {
			r.logger.Warn("certificate reload failed; the previous certificates stay in use", "trigger", trigger, "err", err)
		}
		r.mu.sum = sum
		return err
	}
	r.mu.sum = sum
	r.cur.Store(m)
	attrs := []any{"trigger", trigger, "ca_certs", len(m.cas)}
	if m.leaf != nil {
		attrs = append(attrs, "serial", SerialString(m.leaf), "not_after", m.leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	r.logger.Info("certificates reloaded", attrs...)
	return nil
}

// Run reloads the files whenever their contents change, checking every
// interval (DefaultReloadInterval when 0), until ctx ends.
func (r *Reloader) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultReloadInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = r.reload(triggerFileChange)
		}
	}
}

type rawFiles struct{ ca, cert, key []byte }

func digest(raw rawFiles) [sha256.Size]byte {
	h := sha256.New()
	for _, b := range [][]byte{raw.ca, raw.cert, raw.key} {
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	var s [sha256.Size]byte
	h.Sum(s[:0])
	return s
}

func (r *Reloader) read() (rawFiles, error) {
	var raw rawFiles
	var err error
	for _, f := range []struct {
		path string
		dst  *[]byte
	}{{r.files.CA, &raw.ca}, {r.files.Cert, &raw.cert}, {r.files.Key, &raw.key}} {
		if f.path == "" {
			continue
		}
		if *f.dst, err = os.ReadFile(f.path); err != nil {
			return raw, fmt.Errorf("security: %w", err)
		}
	}
	return raw, nil
}

func (r *Reloader) load() ([sha256.Size]byte, *material, error) {
	raw, err := r.read()
	if err != nil {
		return [sha256.Size]byte{}, nil, err
	}
	m, err := r.parse(raw)
	return digest(raw), m, err
}

// parse checks and builds material. Its errors name files, never their
// contents.
func (r *Reloader) parse(raw rawFiles) (*material, error) {
	m := &material{}
	if r.files.CA != "" {
		cas, err := parseCerts(r.files.CA, raw.ca)
		if err != nil {
			return nil, fmt.Errorf("security: %w", err)
		}
		m.cas = cas
		m.pool = x509.NewCertPool()
		for _, c := range cas {
			m.pool.AddCert(c)
		}
	}
	if r.files.Cert != "" {
		cert, err := tls.X509KeyPair(raw.cert, raw.key)
		if err != nil {
			// tls.X509KeyPair's errors say what is wrong ("private key
			// does not match public key"), not what the key is.
			return nil, fmt.Errorf("security: %s and %s: %w", r.files.Cert, r.files.Key, err)
		}
		m.cert = &cert
		m.leaf = cert.Leaf
		if m.pool != nil {
			inter := x509.NewCertPool()
			for _, c := range cert.Certificate[1:] {
				if ic, err := x509.ParseCertificate(c); err == nil {
					inter.AddCert(ic)
				}
			}
			if _, err := m.leaf.Verify(x509.VerifyOptions{Roots: m.pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				// Refused: a node presenting a certificate its own CA
				// bundle does not trust would be refused by every peer.
				return nil, fmt.Errorf("security: %s is not signed by a CA in %s: %w", r.files.Cert, r.files.CA, err)
			}
		}
	}
	return m, nil
}

// ServerOptions say what a server built by ServerConfig asks of clients.
type ServerOptions struct {
	// ClientAuth is tls.NoClientCert, VerifyClientCertIfGiven or
	// RequireAndVerifyClientCert; the chain is verified against the
	// current CA bundle.
	ClientAuth tls.ClientAuthType
	// RequireNode accepts only node certificates (NodeCN, server and
	// client use) from clients: the internode server.
	RequireNode bool
	// AllowedClients, when not empty, accepts only client certificates
	// whose common name is one of them (the admin API: administrators'
	// certificates, not every application's that holds one for CQL).
	AllowedClients []string
	// NextProtos are the ALPN protocols ("h2" for gRPC).
	NextProtos []string
}

// ServerConfig returns a server configuration that presents the current
// certificate and verifies clients against the current CA bundle, both
// read at each handshake.
func (r *Reloader) ServerConfig(o ServerOptions) *tls.Config {
	build := func() *tls.Config {
		m := r.cur.Load()
		c := &tls.Config{
			MinVersion: tls.VersionTLS12,
			ClientAuth: o.ClientAuth,
			ClientCAs:  m.pool,
			NextProtos: slices.Clone(o.NextProtos),
		}
		if m.cert != nil {
			c.Certificates = []tls.Certificate{*m.cert}
		}
		if o.RequireNode || len(o.AllowedClients) > 0 {
			c.VerifyConnection = func(cs tls.ConnectionState) error { return checkClient(cs, o) }
		}
		return c
	}
	base := build()
	// The outer configuration only hands each handshake to the current
	// one; it carries the protocols too for callers (gRPC) that inspect
	// them.
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		NextProtos:         slices.Clone(o.NextProtos),
		ClientAuth:         base.ClientAuth,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return build(), nil },
	}
}

// checkClient applies o's checks beyond the chain to a client's
// certificate: a node certificate (RequireNode), one of the allowed names
// (AllowedClients).
func checkClient(cs tls.ConnectionState, o ServerOptions) error {
	if len(cs.PeerCertificates) == 0 {
		if o.RequireNode {
			return errors.New("security: a node certificate is required")
		}
		return errors.New("security: a client certificate is required")
	}
	leaf := cs.PeerCertificates[0]
	if o.RequireNode {
		if err := checkNode(leaf); err != nil {
			return err
		}
	}
	if len(o.AllowedClients) > 0 && !slices.Contains(o.AllowedClients, leaf.Subject.CommonName) {
		return fmt.Errorf("security: client certificate %q is not one of the allowed users %v", leaf.Subject.CommonName, o.AllowedClients)
	}
	return nil
}

// ClientOptions say what a client built by ClientConfig presents and
// checks.
type ClientOptions struct {
	// RequireNode accepts only a node certificate from the server (a
	// peer node).
	RequireNode bool
	// ServerName overrides the name the server's certificate must carry
	// (default: the host dialed).
	ServerName string
	// NextProtos are the ALPN protocols.
	NextProtos []string
}

// ClientConfig returns a configuration for a client that dials by itself
// (tls.Dial, a driver): it presents the current certificate (when the
// files have one), read at each handshake, and verifies the server with
// the standard verification against the CA bundle as it is now and the
// name dialed. The bundle is fixed at this call: the standard verification
// is the only place that sees the name dialed (a VerifyConnection callback
// does not when it is an IP address: no SNI is sent), so a long-lived
// client that must follow CA bundle reloads uses ClientCredentials.
func (r *Reloader) ClientConfig(o ClientOptions) *tls.Config {
	c := &tls.Config{
		MinVersion:           tls.VersionTLS12,
		ServerName:           o.ServerName,
		NextProtos:           slices.Clone(o.NextProtos),
		RootCAs:              r.cur.Load().pool,
		GetClientCertificate: r.clientCertificate,
	}
	if o.RequireNode {
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("security: the server presented no certificate")
			}
			return checkNode(cs.PeerCertificates[0])
		}
	}
	return c
}

// ClientCredentials returns gRPC transport credentials that build a fresh
// client configuration for each handshake: the current certificate, and
// the server verified against the current CA bundle and the host of the
// address dialed (o.ServerName when set). The router, the raft transport,
// the etcd client and cosmosctl dial with these.
func (r *Reloader) ClientCredentials(o ClientOptions) credentials.TransportCredentials {
	o.NextProtos = slices.Clone(o.NextProtos)
	return &clientCreds{r: r, o: o}
}

type clientCreds struct {
	r *Reloader
	o ClientOptions
}

func (c *clientCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	name := c.o.ServerName
	if name == "" {
		name = authority
		if host, _, err := net.SplitHostPort(authority); err == nil {
			name = host
		}
	}
	return credentials.NewTLS(c.r.handshakeConfig(c.o, name)).ClientHandshake(ctx, authority, raw)
}

func (c *clientCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("security: client credentials cannot accept connections")
}

func (c *clientCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (c *clientCreds) Clone() credentials.TransportCredentials {
	o := c.o
	o.NextProtos = slices.Clone(o.NextProtos)
	return &clientCreds{r: c.r, o: o}
}

// OverrideServerName is part of credentials.TransportCredentials.
func (c *clientCreds) OverrideServerName(name string) error {
	c.o.ServerName = name
	return nil
}

// handshakeConfig is the configuration of one client handshake with a
// server that must carry serverName (a DNS name or an IP address).
func (r *Reloader) handshakeConfig(o ClientOptions, serverName string) *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS12,
		ServerName:           serverName,
		NextProtos:           slices.Clone(o.NextProtos),
		GetClientCertificate: r.clientCertificate,
		// The standard verification reads a fixed RootCAs; this one reads
		// the current bundle. VerifyConnection runs on every handshake,
		// resumed ones included, so skipping the built-in check loses
		// nothing.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return r.verifyServer(cs, serverName, o.RequireNode)
		},
	}
}

// clientCertificate is a client's GetClientCertificate: the current
// certificate, or none (the server decides whether that will do).
func (r *Reloader) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if m := r.cur.Load(); m.cert != nil {
		return m.cert, nil
	}
	return &tls.Certificate{}, nil
}

// verifyServer verifies a server's chain against the current bundle and
// serverName. The name comes from the caller, not cs.ServerName: a client
// leaves that empty when it dials an IP address.
func (r *Reloader) verifyServer(cs tls.ConnectionState, serverName string, requireNode bool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("security: the server presented no certificate")
	}
	if serverName == "" {
		return errors.New("security: no server name to verify the server's certificate against")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	leaf := cs.PeerCertificates[0]
	// DNSName checks the IP SANs when serverName is an IP address.
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: r.cur.Load().pool, Intermediates: inter, DNSName: serverName,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("security: server certificate: %w", err)
	}
	if requireNode {
		return checkNode(leaf)
	}
	return nil
}

// checkNode accepts a verified certificate only when it is a node's.
func checkNode(c *x509.Certificate) error {
	if c.Subject.CommonName != NodeCN ||
		!slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return fmt.Errorf("security: certificate %q is not a node certificate (CN %q with server and client use)", c.Subject.CommonName, NodeCN)
	}
	return nil
}

// HasVerifiedClient reports whether a connection's client presented a
// certificate that verified against the CA bundle (a server with
// VerifyClientCertIfGiven).
func HasVerifiedClient(cs *tls.ConnectionState) bool {
	return cs != nil && len(cs.VerifiedChains) > 0
}
