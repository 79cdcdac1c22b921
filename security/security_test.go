package security

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// makeDir makes a CA, a node certificate for hosts and the client
// certificate "app" in a new directory.
func makeDir(t *testing.T, hosts ...string) string {
	t.Helper()
	dir := t.TempDir()
	o := CertOptions{Dir: dir}
	if _, err := CreateCA(o); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateNode(o, append(hosts, "127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateClient(o, "app"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func reloader(t *testing.T, f Files) *Reloader {
	t.Helper()
	r, err := NewReloader(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCreatedCertificates(t *testing.T) {
	dir := makeDir(t, "db1.example", "10.0.0.5")
	ca := reloader(t, Files{CA: filepath.Join(dir, CAFile)}).CAs()
	if len(ca) != 1 || !ca[0].IsCA {
		t.Fatalf("ca.crt holds %v; want one CA", ca)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca[0])
	node := reloader(t, NodeFiles(dir)).Certificate()
	for _, name := range []string{"db1.example", "10.0.0.5", "localhost", "127.0.0.1", "::1"} {
		for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := node.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
				t.Errorf("node certificate for %s, use %v: %v", name, use, err)
			}
		}
	}
	if node.Subject.CommonName != NodeCN || checkNode(node) != nil {
		t.Errorf("node certificate CN %q: not a node certificate", node.Subject.CommonName)
	}
	if _, err := node.Verify(x509.VerifyOptions{Roots: pool, DNSName: "db2.example"}); err == nil {
		t.Error("node certificate valid for a host it does not name")
	}
	client := reloader(t, ClientFiles(dir, "app")).Certificate()
	if client.Subject.CommonName != "app" || !slices.Equal(client.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("client certificate CN %q uses %v; want app, client use only", client.Subject.CommonName, client.ExtKeyUsage)
	}
	if checkNode(client) == nil {
		t.Error("a client certificate passes for a node's")
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	for _, f := range []string{CAKeyFile, NodeKeyFile, ClientKeyFile("app")} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v; want 0600", f, fi.Mode().Perm())
		}
	}
	// Nothing is overwritten unless asked; a client may not be "node".
	o := CertOptions{Dir: dir}
	if _, err := CreateNode(o, []string{"db1.example"}); !errors.Is(err, ErrExists) {
		t.Errorf("create-node over an existing one: %v; want ErrExists", err)
	}
	if _, err := CreateClient(o, "app"); !errors.Is(err, ErrExists) {
		t.Errorf("create-client over an existing one: %v; want ErrExists", err)
	}
	if _, err := CreateClient(o, NodeCN); err == nil {
		t.Error("a client certificate named node was made")
	}
	o.Overwrite = true
	again, err := CreateNode(o, []string{"db1.example"})
	if err != nil {
		t.Fatal(err)
	}
	if again.SerialNumber.Cmp(node.SerialNumber) == 0 {
		t.Error("a new node certificate has the old serial")
	}
}

// server serves TLS on loopback with cfg: each connection that completes
// its handshake gets "ok" and is closed.
func server(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := tls.Server(c, cfg)
				_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
				if tc.Handshake() == nil {
					_, _ = tc.Write([]byte("ok"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// exchange dials addr with cfg and reads the server's answer; with TLS
// 1.3 a refused client certificate shows only there.
func exchange(addr string, cfg *tls.Config) (*x509.Certificate, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	if string(b) != "ok" {
		return nil, errors.New("no answer")
	}
	return c.ConnectionState().PeerCertificates[0], nil
}

// TestRequireNode: the internode server (RequireNode) takes a node
// certificate of its CA only; a client certificate of the same CA, a node
// certificate of another CA and no certificate are refused. Clients dial
// by IP address: the server's certificate is checked against it.
func TestRequireNode(t *testing.T) {
	dir, other := makeDir(t), makeDir(t)
	srv := reloader(t, NodeFiles(dir))
	addr := server(t, srv.ServerConfig(ServerOptions{ClientAuth: tls.RequireAndVerifyClientCert, RequireNode: true}))
	if _, err := exchange(addr, srv.ClientConfig(ClientOptions{RequireNode: true})); err != nil {
		t.Fatalf("node certificate refused: %v", err)
	}
	caOnly := Files{CA: filepath.Join(dir, CAFile)}
	for name, f := range map[string]Files{
		"client certificate":             {CA: caOnly.CA, Cert: ClientFiles(dir, "app").Cert, Key: ClientFiles(dir, "app").Key},
		"no certificate":                 caOnly,
		"node certificate of another CA": {CA: caOnly.CA, Cert: NodeFiles(other).Cert, Key: NodeFiles(other).Key},
	} {
		cfg := &tls.Config{RootCAs: pool(reloader(t, caOnly)), MinVersion: tls.VersionTLS12}
		if f.Cert != "" {
			cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		if _, err := exchange(addr, cfg); err == nil || !strings.Contains(err.Error(), "tls: ") {
			t.Errorf("%s: %v; want refused", name, err)
		}
	}
	// The client side: a server of another CA, or one whose certificate
	// does not name the host dialed, is refused.
	if _, err := exchange(addr, reloader(t, NodeFiles(other)).ClientConfig(ClientOptions{})); err == nil {
		t.Error("a server of another CA was trusted")
	}
	if _, err := exchange(addr, srv.ClientConfig(ClientOptions{ServerName: "db9.example"})); err == nil {
		t.Error("a server certificate for another host was trusted")
	}
}

func pool(r *Reloader) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range r.CAs() {
		p.AddCert(c)
	}
	return p
}

// credsExchange runs ClientCredentials' handshake to addr, dialed as
// authority (host:port, as gRPC passes it).
func credsExchange(t *testing.T, r *Reloader, o ClientOptions, addr, authority string) error {
	t.Helper()
	raw, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := r.ClientCredentials(o).ClientHandshake(ctx, authority, raw)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if err == nil && string(b) != "ok" {
		err = errors.New("no answer")
	}
	return err
}

// TestClientCredentials: the gRPC client credentials verify the server
// against the host of the authority dialed, an IP address included (the
// etcd client and the peers dial IP addresses: a verifier reading the
// connection's SNI name saw none and refused every server).
func TestClientCredentials(t *testing.T) {
	dir, other := makeDir(t, "db1.example"), makeDir(t)
	r := reloader(t, NodeFiles(dir))
	addr := server(t, r.ServerConfig(ServerOptions{ClientAuth: tls.RequireAndVerifyClientCert, NextProtos: []string{"h2"}}))
	_, port, _ := net.SplitHostPort(addr)
	if err := credsExchange(t, r, ClientOptions{RequireNode: true}, addr, addr); err != nil {
		t.Fatalf("by IP address: %v", err)
	}
	if err := credsExchange(t, r, ClientOptions{}, addr, net.JoinHostPort("db1.example", port)); err != nil {
		t.Fatalf("by name: %v", err)
	}
	if err := credsExchange(t, r, ClientOptions{}, addr, net.JoinHostPort("db2.example", port)); err == nil ||
		!strings.Contains(err.Error(), "security: server certificate") {
		t.Fatalf("a name the certificate does not carry: %v; want refused", err)
	}
	if err := credsExchange(t, reloader(t, NodeFiles(other)), ClientOptions{}, addr, addr); err == nil ||
		!strings.Contains(err.Error(), "security: server certificate") {
		t.Fatalf("a server of another CA: %v; want refused", err)
	}
	// A client certificate may not pose as a server to a peer.
	cr := reloader(t, ClientFiles(dir, "app"))
	caddr := server(t, cr.ServerConfig(ServerOptions{}))
	if err := credsExchange(t, r, ClientOptions{}, caddr, caddr); err == nil {
		t.Fatal("a client certificate served as a server")
	}
}

// rotate makes a new node certificate of the same CA in dir.
func rotate(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	c, err := CreateNode(CertOptions{Dir: dir, Overwrite: true}, []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReloader: a rotated certificate is presented to new connections
// after Reload and after Run sees the files change; files that do not
// load (a half-written key) are refused and the previous certificate
// stays in use.
func TestReloader(t *testing.T) {
	dir := makeDir(t)
	r := reloader(t, NodeFiles(dir))
	addr := server(t, r.ServerConfig(ServerOptions{ClientAuth: tls.VerifyClientCertIfGiven}))
	client := reloader(t, ClientFiles(dir, "app")).ClientConfig(ClientOptions{})
	presented := func() *x509.Certificate {
		t.Helper()
		c, err := exchange(addr, client)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := presented()
	if first.SerialNumber.Cmp(r.Certificate().SerialNumber) != 0 {
		t.Fatal("the server presents another certificate than the reloader's")
	}

	second := rotate(t, dir)
	if presented().SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatal("the new certificate was used before a reload")
	}
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := presented(); got.SerialNumber.Cmp(second.SerialNumber) != 0 {
		t.Fatalf("after Reload the server presents serial %s; want %s", got.SerialNumber, second.SerialNumber)
	}

	// A key cut in half while being copied: refused, the old one stays.
	key := NodeFiles(dir).Key
	raw, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	rotate(t, dir)
	if err := os.WriteFile(key, raw[:len(raw)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err == nil {
		t.Fatal("a half-written key loaded")
	} else if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), string(raw[40:60])) {
		t.Fatalf("the error shows the key: %v", err)
	}
	if got := presented(); got.SerialNumber.Cmp(second.SerialNumber) != 0 {
		t.Fatalf("after a failed reload the server presents serial %s; want the previous %s", got.SerialNumber, second.SerialNumber)
	}

	// Run reloads when the files change.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx, 10*time.Millisecond)
	}()
	defer func() { cancel(); <-done }()
	third := rotate(t, dir)
	deadline := time.Now().Add(30 * time.Second)
	for r.Certificate().SerialNumber.Cmp(third.SerialNumber) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not pick up the changed files within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := presented(); got.SerialNumber.Cmp(third.SerialNumber) != 0 {
		t.Fatalf("after the files changed the server presents serial %s; want %s", got.SerialNumber, third.SerialNumber)
	}
}
