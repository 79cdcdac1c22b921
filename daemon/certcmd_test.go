package daemon

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/security"
)

// runCert runs `cosmosd args...` through the application main runs and
// returns what it printed.
func runCert(t *testing.T, args ...string) (string, error) {
	t.Helper()
	app := App()
	var out bytes.Buffer
	app.Writer, app.ErrWriter = &out, &out
	err := app.Run(append([]string{"cosmosd"}, args...))
	return out.String(), err
}

func mustCert(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runCert(t, args...)
	if err != nil {
		t.Fatalf("cosmosd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != "CERTIFICATE" {
		t.Fatalf("%s: no PEM certificate", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// lifetime is a certificate's validity, rounded to days.
func lifetime(c *x509.Certificate) time.Duration {
	return c.NotAfter.Sub(c.NotBefore).Round(24 * time.Hour)
}

// TestCertCommand runs `cosmosd cert` as an operator does: a CA, a node
// certificate for the node's names, a client certificate, the listing;
// keys readable by the owner only; nothing replaced without --overwrite.
func TestCertCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs") // made by the command
	file := func(name string) string { return filepath.Join(dir, name) }

	out := mustCert(t, "cert", "create-ca", "--certs-dir", dir)
	ca := readCert(t, file(security.CAFile))
	if !strings.HasPrefix(out, "wrote ca.crt (CA, serial "+security.SerialString(ca)) {
		t.Fatalf("create-ca printed %q", out)
	}
	if !ca.IsCA || ca.Subject.CommonName == "" {
		t.Fatalf("ca.crt: IsCA %v, CN %q", ca.IsCA, ca.Subject.CommonName)
	}
	if got := mode(t, dir); got != 0o700 {
		t.Fatalf("certificates directory mode %o, want 700", got)
	}
	if got := mode(t, file(security.CAKeyFile)); got != 0o600 {
		t.Fatalf("ca.key mode %o, want 600", got)
	}

	out = mustCert(t, "cert", "create-node", "--certs-dir", dir, "db1.example.com", "10.0.0.5")
	node := readCert(t, file(security.NodeCertFile))
	if !strings.Contains(out, "wrote node.crt (node, for db1.example.com, localhost, 10.0.0.5, 127.0.0.1, ::1, serial "+security.SerialString(node)) {
		t.Fatalf("create-node printed %q", out)
	}
	if got := mode(t, file(security.NodeKeyFile)); got != 0o600 {
		t.Fatalf("node.key mode %o, want 600", got)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, name := range []string{"db1.example.com", "10.0.0.5", "localhost", "127.0.0.1"} {
		// Both uses: nodes serve and dial each other with it.
		for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := node.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
				t.Fatalf("node.crt for %s, use %v: %v", name, use, err)
			}
		}
	}
	if _, err := node.Verify(x509.VerifyOptions{Roots: roots, DNSName: "db2.example.com"}); err == nil {
		t.Fatal("node.crt verifies for a host it was not made for")
	}
	if node.Subject.CommonName != security.NodeCN {
		t.Fatalf("node.crt CN %q, want %q", node.Subject.CommonName, security.NodeCN)
	}

	out = mustCert(t, "cert", "create-client", "--certs-dir", dir, "alice")
	alice := readCert(t, file("client.alice.crt"))
	if !strings.HasPrefix(out, "wrote client.alice.crt (client alice, serial "+security.SerialString(alice)) {
		t.Fatalf("create-client printed %q", out)
	}
	if alice.Subject.CommonName != "alice" || !slices.Equal(alice.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Fatalf("client.alice.crt: CN %q, uses %v; want alice, client use only", alice.Subject.CommonName, alice.ExtKeyUsage)
	}
	if _, err := alice.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client.alice.crt: %v", err)
	}
	if got := mode(t, file("client.alice.key")); got != 0o600 {
		t.Fatalf("client.alice.key mode %o, want 600", got)
	}
	// Sensible validity: the defaults, the CA outliving what it signs.
	if lifetime(ca) < 9*365*24*time.Hour || lifetime(node) < 4*365*24*time.Hour || node.NotAfter.After(ca.NotAfter) {
		t.Fatalf("validity: CA %s..%s, node %s..%s", ca.NotBefore, ca.NotAfter, node.NotBefore, node.NotAfter)
	}
	mustCert(t, "cert", "create-client", "--certs-dir", dir, "--lifetime", "720h", "bob")
	// 720h from now, valid from an hour ago (clock skew).
	if bob := readCert(t, file("client.bob.crt")); bob.NotAfter.Sub(bob.NotBefore) != 721*time.Hour {
		t.Fatalf("--lifetime 720h gave %s..%s", bob.NotBefore, bob.NotAfter)
	}

	for _, args := range [][]string{{}, {"alice", "bob"}} {
		if _, err := runCert(t, append([]string{"cert", "create-client", "--certs-dir", dir}, args...)...); err == nil || !strings.Contains(err.Error(), "want one NAME") {
			t.Fatalf("create-client %q: %v, want a usage error", args, err)
		}
	}
	if _, err := runCert(t, "cert", "create-client", "--certs-dir", dir, "node"); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("create-client node: %v, want it refused", err)
	}

	out = mustCert(t, "cert", "list", "--certs-dir", dir)
	for _, want := range []string{
		"ca.crt", "(CA)", security.SerialString(ca),
		"node.crt", security.SerialString(node), "db1.example.com,localhost,10.0.0.5,127.0.0.1,::1",
		"client.alice.crt", security.SerialString(alice),
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("cert list lacks %q:\n%s", want, out)
		}
	}

	t.Run("overwrite", func(t *testing.T) {
		before := map[string][]byte{}
		for _, f := range []string{security.CAFile, security.CAKeyFile, security.NodeCertFile, security.NodeKeyFile, "client.alice.crt", "client.alice.key"} {
			b, err := os.ReadFile(file(f))
			if err != nil {
				t.Fatal(err)
			}
			before[f] = b
		}
		for _, args := range [][]string{
			{"create-ca"}, {"create-node", "db1.example.com"}, {"create-client", "alice"},
		} {
			full := append([]string{"cert", args[0], "--certs-dir", dir}, args[1:]...)
			_, err := runCert(t, full...)
			if !errors.Is(err, security.ErrExists) || !strings.Contains(err.Error(), "--overwrite") {
				t.Fatalf("cosmosd %s: %v, want it refused naming --overwrite", strings.Join(full, " "), err)
			}
		}
		for f, b := range before {
			if now, err := os.ReadFile(file(f)); err != nil || !bytes.Equal(now, b) {
				t.Fatalf("%s changed by a refused command (%v)", f, err)
			}
		}
		// An operator loosened the key's mode; --overwrite writes the new
		// key 0600 all the same.
		if err := os.Chmod(file(security.NodeKeyFile), 0o644); err != nil {
			t.Fatal(err)
		}
		mustCert(t, "cert", "create-node", "--certs-dir", dir, "--overwrite", "db1.example.com")
		renewed := readCert(t, file(security.NodeCertFile))
		if renewed.SerialNumber.Cmp(node.SerialNumber) == 0 {
			t.Fatal("create-node --overwrite kept the serial")
		}
		if _, err := renewed.Verify(x509.VerifyOptions{Roots: roots, DNSName: "db1.example.com"}); err != nil {
			t.Fatalf("renewed node.crt: %v", err)
		}
		if got := mode(t, file(security.NodeKeyFile)); got != 0o600 {
			t.Fatalf("node.key mode %o after --overwrite, want 600", got)
		}
		if now, _ := os.ReadFile(file(security.NodeKeyFile)); bytes.Equal(now, before[security.NodeKeyFile]) {
			t.Fatal("create-node --overwrite kept the old key")
		}
	})
}
