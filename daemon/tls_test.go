package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cluster/embedded"
	"github.com/cosmosd/cosmosd/security"
	"github.com/cosmosd/cosmosd/security/securitytest"
)

// makeCA makes a CA, a node certificate for 127.0.0.1 and the client
// certificate "app" in dir.
func makeCA(t *testing.T, dir string) {
	t.Helper()
	securitytest.PKI(t, dir, "app")
}

// startTLSEtcd starts an embedded etcd serving TLS with dir's node
// certificate, as an external etcd with client certificate authentication.
func startTLSEtcd(t *testing.T, dir string) *embedded.Server {
	t.Helper()
	f := security.NodeFiles(dir)
	e, err := embedded.Start(embedded.Config{Dir: filepath.Join(t.TempDir(), "etcd"), ClientAddr: "127.0.0.1:0",
		UnsafeNoFsync: true, TLS: &embedded.TLS{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA}})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	return e
}

func etcdNodeConfig(t *testing.T, endpoints []string, files security.Files) Config {
	return Config{
		Name: "n1", DataDir: filepath.Join(t.TempDir(), "n1"),
		CQLAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		EtcdEndpoints: endpoints, EtcdPrefix: "/etcdtls/", Consensus: "local",
		LogLevel: "error", ShutdownTimeout: 3 * time.Second,
		EtcdCAFile: files.CA, EtcdCertFile: files.Cert, EtcdKeyFile: files.Key,
	}
}

// TestExternalEtcdTLS: a node reaches an external etcd that requires TLS
// client certificates with etcd_ca_file, etcd_cert_file and etcd_key_file
// at an IP address endpoint, and a node whose etcd TLS setup cannot work
// fails to start with the reason instead of waiting for etcd forever.
func TestExternalEtcdTLS(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	makeCA(t, dirA)
	makeCA(t, dirB)
	tlsEtcd := startTLSEtcd(t, dirA)
	plainEtcd := startTestEtcd(t)

	t.Run("works", func(t *testing.T) {
		// The stand-in etcd (embedded.Start) accepts node
		// certificates only, as a cosmosd's embedded etcd does.
		n, err := Start(context.Background(), etcdNodeConfig(t, tlsEtcd.Endpoints(), security.NodeFiles(dirA)))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = n.Close(context.Background()) }()
		if n.ID() == 0 {
			t.Fatal("no node id allocated in etcd")
		}
	})

	// Trusts both CAs, presents B's certificate: etcd (A) refuses it.
	bundle := filepath.Join(t.TempDir(), "bundle.crt")
	a, err := os.ReadFile(filepath.Join(dirA, security.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dirB, security.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bundle, append(a, b...), 0o644); err != nil {
		t.Fatal(err)
	}
	bClient := security.ClientFiles(dirB, "app")
	for _, tc := range []struct {
		name      string
		endpoints []string
		files     security.Files
		want      string
	}{
		{"server of another CA", tlsEtcd.Endpoints(), security.ClientFiles(dirB, "app"), "etcd's certificate is not trusted"},
		{"client certificate of the CA, not a node's", tlsEtcd.Endpoints(), security.ClientFiles(dirA, "app"),
			"etcd refused this node's TLS client certificate"},
		{"client of another CA", tlsEtcd.Endpoints(), security.Files{CA: bundle, Cert: bClient.Cert, Key: bClient.Key},
			"etcd refused this node's TLS client certificate"},
		{"TLS to plaintext", plainEtcd.Endpoints(), security.ClientFiles(dirA, "app"), "does it speak TLS?"},
		{"plaintext to TLS", tlsEtcd.Endpoints(), security.Files{}, "does it require TLS?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bound only keeps a regression from hanging the test;
			// the start must fail on its own, with the reason.
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			n, err := Start(ctx, etcdNodeConfig(t, tc.endpoints, tc.files))
			if err == nil {
				_ = n.Close(context.Background())
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start: %v; want %q", err, tc.want)
			}
			if ctx.Err() != nil {
				t.Fatalf("start failed only when its context ended: %v", err)
			}
			t.Logf("start: %v", err)
		})
	}
}
