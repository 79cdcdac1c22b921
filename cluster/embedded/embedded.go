package embedded

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/cosmosd/cosmosd/security"
)

// Config configures an etcd server run inside the cosmosd process,
// for single-host clusters and tests that need no external service.
type Config struct {
	// Dir holds etcd's data. Required.
	Dir string
	// ClientAddr is the host:port clients connect to. Default
	// 127.0.0.1:2379; port 0 picks a free port.
	ClientAddr string
	// PeerAddr is etcd's peer address. Default 127.0.0.1:0 (a free port;
	// an embedded etcd is a single member).
	PeerAddr string
	// Name is the member name. Default "cosmosd".
	Name string
	// UnsafeNoFsync disables fsync; only for tests.
	UnsafeNoFsync bool
	// AdvertiseClientAddr and AdvertisePeerAddr are the host:port others
	// use when the listen addresses are wildcards. Default: the listen
	// addresses.
	AdvertiseClientAddr string
	AdvertisePeerAddr   string
	// InitialCluster lists the members of a multi-member cluster as
	// "name=http://host:port,..." (peer URLs); empty means a single member.
	InitialCluster string
	// ClusterState is "new" (default) or "existing" (a member joining a
	// running cluster).
	ClusterState string
	// Wait bounds the wait for the server to serve. Default 60s; members
	// of a new multi-member cluster wait for a quorum to start.
	Wait time.Duration
	// TLS, when set, makes the member serve clients and peers over TLS
	// and require a client certificate of the CA from both (URLs are
	// https, InitialCluster must name https peer URLs). etcd re-reads the
	// certificate and key at each handshake. Default nil: plaintext.
	TLS *TLS
}

// TLS names the PEM files an embedded etcd serves TLS with: a
// certificate valid for its addresses (a cosmosd node certificate), its
// key, and the CA bundle clients and peers must be signed by.
type TLS struct {
	CertFile, KeyFile, CAFile string
}

// Server is a running embedded etcd server.
type Server struct {
	etcd      *embed.Etcd
	endpoints []string
	closeOnce sync.Once
}

// ForbidEnv, when set in the environment, makes Start fail:
// make cover sets it to prove that the unit tests it measures (go test
// -short) run without etcd.
const ForbidEnv = "COSMOSD_FORBID_ETCD"

// Start starts an embedded single-member etcd and waits until it
// serves.
func Start(cfg Config) (*Server, error) {
	if os.Getenv(ForbidEnv) != "" {
		return nil, fmt.Errorf("embedded etcd: refused: %s is set (a unit test that needs etcd must skip under -short)", ForbidEnv)
	}
	if cfg.Dir == "" {
		return nil, errors.New("embedded etcd: dir is required")
	}
	if cfg.ClientAddr == "" {
		cfg.ClientAddr = "127.0.0.1:2379"
	}
	if cfg.PeerAddr == "" {
		cfg.PeerAddr = "127.0.0.1:0"
	}
	if cfg.Name == "" {
		cfg.Name = "cosmosd"
	}
	scheme := "http"
	if cfg.TLS != nil {
		scheme = "https"
	}
	// etcd needs concrete URLs to advertise, so resolve port 0 now.
	clientURL, err := freeURL(scheme, cfg.ClientAddr)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd client address: %w", err)
	}
	peerURL, err := freeURL(scheme, cfg.PeerAddr)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd peer address: %w", err)
	}
	advClient, advPeer := clientURL, peerURL
	if cfg.AdvertiseClientAddr != "" {
		if advClient, err = url.Parse(scheme + "://" + cfg.AdvertiseClientAddr); err != nil {
			return nil, fmt.Errorf("embedded etcd advertise client address: %w", err)
		}
	}
	if cfg.AdvertisePeerAddr != "" {
		if advPeer, err = url.Parse(scheme + "://" + cfg.AdvertisePeerAddr); err != nil {
			return nil, fmt.Errorf("embedded etcd advertise peer address: %w", err)
		}
	}
	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.Dir
	ec.ListenClientUrls = []url.URL{*clientURL}
	ec.AdvertiseClientUrls = []url.URL{*advClient}
	ec.ListenPeerUrls = []url.URL{*peerURL}
	ec.AdvertisePeerUrls = []url.URL{*advPeer}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	if cfg.InitialCluster != "" {
		ec.InitialCluster = cfg.InitialCluster
	}
	if cfg.ClusterState == "existing" {
		ec.ClusterState = embed.ClusterStateFlagExisting
	}
	wait := cfg.Wait
	if wait == 0 {
		wait = 60 * time.Second
	}
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	if t := cfg.TLS; t != nil {
		// Only node certificates (CN "node", security.NodeCN): a client
		// certificate of the same CA (an operator's, an application's)
		// must not read or write the metadata, which holds the roles'
		// password hashes and the whole placement.
		info := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.CAFile, ClientCertAuth: true,
			AllowedCNs: []string{security.NodeCN}}
		ec.ClientTLSInfo = info
		ec.PeerTLSInfo = info
	}
	ec.AutoCompactionMode = embed.CompactorModeRevision
	ec.AutoCompactionRetention = "10000"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(wait):
		e.Server.Stop()
		e.Close()
		return nil, fmt.Errorf("embedded etcd did not become ready within %s", wait)
	}
	return &Server{etcd: e, endpoints: []string{advClient.Host}}, nil
}

// freeURL turns host:port into a URL, choosing a free port for 0.
func freeURL(scheme, addr string) (*url.URL, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if port == "0" {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, err
		}
		addr = l.Addr().String()
		if err := l.Close(); err != nil {
			return nil, err
		}
	}
	return url.Parse(scheme + "://" + addr)
}

// Endpoints returns the client endpoints (host:port).
func (e *Server) Endpoints() []string { return e.endpoints }

// Err reports a fatal error of the running server.
func (e *Server) Err() <-chan error { return e.etcd.Err() }

// Close stops the server. Safe to call twice (embed.Etcd.Close is not: it
// panics closing a closed channel).
func (e *Server) Close() {
	if e != nil && e.etcd != nil {
		e.closeOnce.Do(e.etcd.Close)
	}
}
