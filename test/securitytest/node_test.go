package securitytest

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/daemon"
	"github.com/cosmosd/cosmosd/security"
	"github.com/cosmosd/cosmosd/test/logbuf"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// caPool is the cluster CA of certsDir, as a client that verifies the
// node against ca.crt holds it.
func caPool(t *testing.T, certsDir string) *x509.CertPool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(certsDir, security.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(raw) {
		t.Fatal("ca.crt holds no certificate")
	}
	return p
}

// servedSerial dials addr with a fresh TLS connection, verifying the
// server against certsDir's CA and the address's IP, and returns the
// serial of the certificate the server presented.
func servedSerial(t *testing.T, certsDir, addr string, cert *tls.Certificate, alpn ...string) (string, error) {
	t.Helper()
	cfg := &tls.Config{RootCAs: caPool(t, certsDir), MinVersion: tls.VersionTLS12, NextProtos: alpn}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return security.SerialString(conn.ConnectionState().PeerCertificates[0]), nil
}

// keySecrets are the strings of the PEM key files in dir that must never
// be logged: every line of their base64 bodies.
func keySecrets(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.key"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no keys in %s: %v", dir, err)
	}
	var out []string
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := pem.Decode(raw)
		if b == nil {
			t.Fatalf("%s: not PEM", p)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "-----") {
				out = append(out, line)
			}
		}
	}
	return out
}

// checkNoSecrets fails when logs hold a PEM key marker, a line of a key,
// or one of the other secrets.
func checkNoSecrets(t *testing.T, logs string, keyLines []string, secrets ...string) {
	t.Helper()
	if strings.Contains(logs, "PRIVATE KEY") {
		t.Fatal(`the logs hold "PRIVATE KEY"`)
	}
	for _, l := range keyLines {
		if strings.Contains(logs, l) {
			t.Fatalf("the logs hold a line of a private key: %q", l)
		}
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Fatalf("the logs hold the secret %q", s)
		}
	}
}

// TestSecureNode checks one secure node's listeners as its clients see
// them: HTTPS, client certificates on CQL, and a rotation of the node
// certificate on disk that new connections see without a restart.
func TestSecureNode(t *testing.T) {
	logs := &logbuf.Buffer{}
	c := testcluster.Start(t, testcluster.Options{TLS: true, CQLRequireClientCert: true,
		Configure: func(_ int, cfg *daemon.Config) {
			cfg.LogLevel = "debug"
			cfg.Knobs = &daemon.Knobs{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		}})
	node := c.Nodes[0]
	s := c.Session(t, 0)
	exec(t, s, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
	exec(t, s, "CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
	exec(t, s, "INSERT INTO ks.t (k, v) VALUES (1, 'one')")
	root := loadPair(t, security.ClientFiles(c.CertsDir, "root"))

	t.Run("HTTP", func(t *testing.T) { testHTTPS(t, c.CertsDir, node.HTTPAddr(), root) })
	t.Run("CQLClientCert", func(t *testing.T) { testCQLClientCert(t, c) })
	t.Run("RotationOnFileChange", func(t *testing.T) {
		old := security.SerialString(node.Certificates().Certificate())
		nodeCert := loadPair(t, security.NodeFiles(c.CertsDir))
		ports := map[string]func() (string, error){
			"cql":   func() (string, error) { return servedSerial(t, c.CertsDir, node.CQLAddr(), root) },
			"peer":  func() (string, error) { return servedSerial(t, c.CertsDir, node.PeerAddr(), nodeCert, "h2") },
			"admin": func() (string, error) { return servedSerial(t, c.CertsDir, node.AdminAddr(), root, "h2") },
			"http":  func() (string, error) { return servedSerial(t, c.CertsDir, node.HTTPAddr(), nil) },
		}
		for name, serial := range ports {
			if got, err := serial(); err != nil || got != old {
				t.Fatalf("%s presents %q (%v) before the rotation, want %s", name, got, err, old)
			}
		}
		var hosts []string
		for i := 1; i <= 9; i++ {
			hosts = append(hosts, fmt.Sprintf("127.0.0.%d", i))
		}
		renewed, err := security.CreateNode(security.CertOptions{Dir: c.CertsDir, Overwrite: true}, hosts)
		if err != nil {
			t.Fatal(err)
		}
		want := security.SerialString(renewed)
		if want == old {
			t.Fatal("the new certificate has the old serial")
		}
		// The node looks at the files every second (Reloader.Run).
		deadline := time.Now().Add(30 * time.Second)
		for name, serial := range ports {
			for {
				got, err := serial()
				if err == nil && got == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s presents %q (%v) after the rotation, want %s", name, got, err, want)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		if !regexp.MustCompile(`(?m)msg="certificates reloaded".* component=certs trigger="file change" .*serial=` + want + ` `).MatchString(logs.String()) {
			t.Fatalf("no reload on file change logged:\n%s", logs.String())
		}
		// The session made before goes on, and new ones connect.
		var v string
		if err := s.Query("SELECT v FROM ks.t WHERE k = 1").Scan(&v); err != nil || v != "one" {
			t.Fatalf("old session after the rotation: %q, %v", v, err)
		}
		if err := c.Session(t, 0).Query("SELECT v FROM ks.t WHERE k = 1").Scan(&v); err != nil || v != "one" {
			t.Fatalf("new session after the rotation: %q, %v", v, err)
		}
	})
	checkNoSecrets(t, logs.String(), keySecrets(t, c.CertsDir))
	if !strings.Contains(logs.String(), "tls enabled") {
		t.Fatalf("the captured logs are not the node's:\n%.2000s", logs.String())
	}
}

// testHTTPS: /metrics and /healthz are served over HTTPS to anyone who
// trusts the cluster CA; pprof needs a client certificate of the cluster
// CA; plaintext HTTP gets nothing from the port.
func testHTTPS(t *testing.T, certsDir, addr string, root *tls.Certificate) {
	get := func(cert *tls.Certificate, path string) (int, string, error) {
		cfg := &tls.Config{RootCAs: caPool(t, certsDir), MinVersion: tls.VersionTLS12}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		defer cl.CloseIdleConnections()
		resp, err := cl.Get("https://" + addr + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	for _, tc := range []struct {
		path string
		cert *tls.Certificate
		code int
		body string
	}{
		{"/metrics", nil, http.StatusOK, "# HELP"},
		{"/healthz", nil, http.StatusOK, ""},
		{"/debug/pprof/", nil, http.StatusForbidden, "client certificate"},
		{"/debug/pprof/cmdline", nil, http.StatusForbidden, "client certificate"},
		{"/debug/pprof/", root, http.StatusOK, "goroutine"},
	} {
		code, body, err := get(tc.cert, tc.path)
		if err != nil || code != tc.code || !strings.Contains(body, tc.body) {
			t.Fatalf("GET %s (client certificate %v): %d %.200q, %v; want %d with %q", tc.path, tc.cert != nil, code, body, err, tc.code, tc.body)
		}
	}
	// The server verifies a certificate it is given: one of another CA
	// fails the handshake, even where none is needed.
	other := outsiders(t, certsDir)[1]
	if code, _, err := get(other.cert, "/metrics"); err == nil {
		t.Fatalf("a client certificate of another CA got %d", code)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + addr + "/metrics")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || strings.Contains(string(body), "# HELP") {
			t.Fatalf("plaintext HTTP served: %d %.200q", resp.StatusCode, body)
		}
		t.Logf("plaintext HTTP: %d %q", resp.StatusCode, body)
	} else {
		t.Logf("plaintext HTTP: %v", err)
	}
}

// testCQLClientCert: with cql_require_client_cert, a driver speaking TLS
// that trusts the cluster CA but presents no certificate is refused in
// the handshake, and one presenting the root client certificate works.
func testCQLClientCert(t *testing.T, c *testcluster.Cluster) {
	cc := c.NewClusterConfig(0)
	cc.ConnectTimeout, cc.Timeout = 10*time.Second, 10*time.Second
	cc.SslOpts = &gocql.SslOptions{CaPath: filepath.Join(c.CertsDir, security.CAFile), EnableHostVerification: true}
	if bad, err := cc.CreateSession(); err == nil {
		bad.Close()
		t.Fatal("gocql over TLS without a client certificate connected")
	} else {
		t.Logf("gocql without a client certificate: %v", err)
	}
	// Underneath: TLS 1.3 finishes the client's side of the handshake;
	// the server's alert comes with the first read.
	conn, err := tls.Dial("tcp", c.Nodes[0].CQLAddr(), &tls.Config{RootCAs: caPool(t, c.CertsDir), MinVersion: tls.VersionTLS12})
	if err == nil {
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err = conn.Write([]byte{0x04, 0, 0, 1, 0x05, 0, 0, 0, 0}); err == nil { // OPTIONS
			_, err = conn.Read(make([]byte, 64))
		}
		conn.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("TLS without a client certificate: %v, want the server's \"certificate required\"", err)
	}
	var release string
	if err := c.Session(t, 0).Query("SELECT release_version FROM system.local").Scan(&release); err != nil || release == "" {
		t.Fatalf("gocql with the root client certificate: %q, %v", release, err)
	}
}
