package embedded

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cosmosd/cosmosd/security"
	"github.com/cosmosd/cosmosd/security/securitytest"
)

// tlsEtcd starts an embedded etcd serving TLS with a node certificate of a
// fresh CA made in dir.
func tlsEtcd(t *testing.T, dir string) *Server {
	t.Helper()
	securitytest.PKI(t, dir, "app")
	f := security.NodeFiles(dir)
	e, err := Start(Config{Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", UnsafeNoFsync: true,
		TLS: &TLS{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// tlsClient is an etcd client that dials with files' credentials, as the
// daemon does (the endpoint is an IP address: the member's certificate
// must name it).
func tlsClient(t *testing.T, e *Server, files security.Files) *clientv3.Client {
	t.Helper()
	r, err := security.NewReloader(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithTransportCredentials(r.ClientCredentials(security.ClientOptions{}))}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// TestEmbeddedTLS: a TLS embedded etcd serves a client with a certificate
// of its CA, at an IP address endpoint, and refuses clients without a
// certificate, with one of another CA, and in plaintext; none of them
// writes.
func TestEmbeddedTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd; -short runs without it")
	}
	dir := t.TempDir()
	e := tlsEtcd(t, dir)
	if ep := e.Endpoints()[0]; !strings.HasPrefix(ep, "127.0.0.1:") {
		t.Fatalf("endpoint %q: want the IP address the certificate names", ep)
	}
	good := tlsClient(t, e, security.NodeFiles(dir))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := good.Put(ctx, "k", "node"); err != nil {
		t.Fatalf("node certificate: %v", err)
	}
	// A client certificate of the cluster CA is refused: only nodes read
	// and write the metadata (AllowedCNs).
	{
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if _, err := tlsClient(t, e, security.ClientFiles(dir, "app")).Get(ctx, "k"); err == nil {
			t.Fatal("a client (not node) certificate of the CA read the metadata")
		}
		cancel()
	}

	other := t.TempDir()
	oo := security.CertOptions{Dir: other}
	if _, err := security.CreateCA(oo); err != nil {
		t.Fatal(err)
	}
	if _, err := security.CreateClient(oo, "app"); err != nil {
		t.Fatal(err)
	}
	// Trusts etcd's CA (so the failure is the member refusing the client)
	// but presents a certificate of another CA.
	ca, err := security.NewReloader(security.Files{CA: security.NodeFiles(dir).CA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	for _, c := range ca.CAs() {
		pool.AddCert(c)
	}
	of := security.ClientFiles(other, "app")
	cert, err := tls.LoadX509KeyPair(of.Cert, of.Key)
	if err != nil {
		t.Fatal(err)
	}
	foreign := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	noCert := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	for _, tc := range []struct {
		name string
		cfg  *tls.Config // nil: plaintext
		want string      // what a raw connection reads
	}{
		{"no certificate", noCert, "certificate required"},
		{"another CA", foreign, "unknown certificate authority"},
		{"plaintext", nil, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if _, err := configClient(t, e, tc.cfg).Put(ctx, "k", tc.name); err == nil {
				t.Fatal("refused client wrote")
			}
			// Why: the member refuses the connection itself (with TLS
			// 1.3 the client reads the alert after its handshake).
			if err := rawExchange(e.Endpoints()[0], tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("raw connection: %v; want %q", err, tc.want)
			}
		})
	}
	resp, err := good.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "node" {
		t.Fatalf("k = %v after refused writes; want node", resp.Kvs)
	}
}

// rawExchange connects to addr (TLS with cfg, or plaintext), sends the
// HTTP/2 preface and reads, returning the read's error.
func rawExchange(addr string, cfg *tls.Config) error {
	d := &net.Dialer{Timeout: 5 * time.Second}
	var c net.Conn
	var err error
	if cfg != nil {
		c, err = tls.DialWithDialer(d, "tcp", addr, cfg)
	} else {
		c, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
		return err
	}
	_, err = c.Read(make([]byte, 1))
	if err == nil {
		return errors.New("the member answered")
	}
	return err
}

// configClient is an etcd client with a fixed TLS configuration (nil:
// plaintext).
func configClient(t *testing.T, e *Server, cfg *tls.Config) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(), TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
