package ctl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/cosmosd/cosmosd/daemon"
	"github.com/cosmosd/cosmosd/security"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// copyFile copies a certificate or key file, keeping its mode.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	fi, err := os.Stat(from)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, raw, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestAgainstSecureNode drives the binary against a node with certs_dir:
// the admin API answers a client certificate of the cluster CA, given
// with --certs-dir (before or after the command) or COSMOSCTL_CERTS_DIR,
// and refuses anyone else with one line that says why.
func TestAgainstSecureNode(t *testing.T) {
	// alice is an administrator besides root; app has a certificate of
	// the cluster CA (for CQL) but is not one.
	c := testcluster.Start(t, testcluster.Options{TLS: true, Configure: func(_ int, cfg *daemon.Config) {
		cfg.AdminUsers = []string{"root", "alice"}
	}})
	ep := c.Nodes[0].AdminAddr()
	certs := c.CertsDir
	for _, name := range []string{"alice", "app"} {
		if _, err := security.CreateClient(security.CertOptions{Dir: certs}, name); err != nil {
			t.Fatal(err)
		}
	}
	listed := func(t *testing.T, out string) {
		t.Helper()
		var nodes []map[string]any
		decodeJSON(t, out, &nodes)
		if len(nodes) != 1 || nodes[0]["name"] != "node-1" {
			t.Fatalf("nodes list: %s", out)
		}
	}

	t.Run("certs-dir", func(t *testing.T) {
		listed(t, ok(t, "--endpoints", ep, "--certs-dir", certs, "nodes", "list", "-o", "json"))
		listed(t, ok(t, "nodes", "list", "--endpoints", ep, "--certs-dir", certs, "-o", "json"))
		// Several client certificates: root unless --user names another.
		listed(t, ok(t, "--endpoints", ep, "--certs-dir", certs, "--user", "alice", "nodes", "list", "-o", "json"))
	})
	t.Run("environment", func(t *testing.T) {
		r := cosmosctl(t, []string{CertsDirEnv + "=" + certs, UserEnv + "=alice"}, "--endpoints", ep, "nodes", "list", "-o", "json")
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("%s=%s: exit %d, stderr %q", CertsDirEnv, certs, r.code, r.stderr)
		}
		listed(t, r.stdout)
	})
	t.Run("no certificate", func(t *testing.T) {
		fails(t, nil, `^cosmosctl: cannot reach any endpoint \(`+ep+`\): the endpoint closed the connection during the handshake: it requires TLS \(--certs-dir, or COSMOSCTL_CERTS_DIR\)\n$`,
			"--endpoints", ep, "nodes", "list")
		// TLS, trusting the cluster CA, but no client certificate to show.
		dir := t.TempDir()
		copyFile(t, filepath.Join(certs, security.CAFile), filepath.Join(dir, security.CAFile))
		fails(t, nil, `^cosmosctl: --certs-dir \S+ has no client certificate \(client\.NAME\.crt\); make one with `+"`cosmosd cert create-client root`"+`\n$`,
			"--endpoints", ep, "--certs-dir", dir, "nodes", "list")
		fails(t, nil, `^cosmosctl: --certs-dir \S+ has no client certificate for user "bob" \(client\.bob\.crt\)`,
			"--endpoints", ep, "--certs-dir", certs, "--user", "bob", "nodes", "list")
	})
	t.Run("another CA", func(t *testing.T) {
		other := t.TempDir()
		testcluster.MakeCerts(t, other)
		// Its own CA file: the node's certificate is not trusted.
		fails(t, nil, `^cosmosctl: cannot reach any endpoint \(`+ep+`\): the endpoint's certificate is not trusted: .*certificate signed by unknown authority`,
			"--endpoints", ep, "--certs-dir", other, "nodes", "list")
		// The cluster CA file with another CA's client certificate:
		// cosmosctl sees that before it dials.
		mixed := t.TempDir()
		copyFile(t, filepath.Join(certs, security.CAFile), filepath.Join(mixed, security.CAFile))
		for _, f := range []string{security.ClientCertFile("root"), security.ClientKeyFile("root")} {
			copyFile(t, filepath.Join(other, f), filepath.Join(mixed, f))
		}
		fails(t, nil, `^cosmosctl: security: \S+client\.root\.crt is not signed by a CA in \S+ca\.crt: x509: certificate signed by unknown authority`,
			"--endpoints", ep, "--certs-dir", mixed, "nodes", "list")
		// A bundle of both CAs gets it past cosmosctl: the node refuses it.
		bundle := append(readAll(t, filepath.Join(certs, security.CAFile)), readAll(t, filepath.Join(other, security.CAFile))...)
		if err := os.WriteFile(filepath.Join(mixed, security.CAFile), bundle, 0o644); err != nil {
			t.Fatal(err)
		}
		fails(t, nil, `^cosmosctl: cannot reach any endpoint \(`+ep+`\): (the endpoint refused the client certificate: not signed by the cluster CA, or not one of the node's admin_users\? \(remote error: tls: |the endpoint closed the connection right after the TLS handshake: it refused the client certificate)`,
			"--endpoints", ep, "--certs-dir", mixed, "nodes", "list")
	})
	t.Run("not an admin user", func(t *testing.T) {
		fails(t, nil, `^cosmosctl: cannot reach any endpoint \(`+ep+`\): (the endpoint refused the client certificate: not signed by the cluster CA, or not one of the node's admin_users\? \(remote error: tls: |the endpoint closed the connection right after the TLS handshake: it refused the client certificate)`,
			"--endpoints", ep, "--certs-dir", certs, "--user", "app", "nodes", "list")
	})
	// The refusals left the node serving.
	var nodes []map[string]any
	if err := json.Unmarshal([]byte(ok(t, "--endpoints", ep, "--certs-dir", certs, "nodes", "list", "-o", "json")), &nodes); err != nil || len(nodes) != 1 {
		t.Fatalf("nodes list after the refusals: %v, %v", nodes, err)
	}
}
