package e2eansible

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/test/blackbox"
)

// This file checks the cluster the roles make by default: secure. The
// roles keep the cluster CA, cosmosctl's client certificate and the
// generated superuser password on the controller, next to the inventory;
// the test's clients use them as an operator's and an application's do.

// The names the roles give these files next to the inventory.
const (
	certsDirName     = "cosmosd-certs"
	passwordName     = "cosmosd-superuser-password"
	superuser        = "cassandra"
	hostCertsDir     = "/etc/cosmosd/certs"
	hostPasswordFile = "/etc/cosmosd/superuser-password"
)

// certsDir is the controller's certificates directory (ca.crt,
// client.root.crt/.key): what the host's cosmosctl is given.
func (c *Cluster) certsDir() string { return filepath.Join(c.secrets, certsDirName) }

// password returns the superuser password the roles generated.
func (c *Cluster) password(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(c.secrets, passwordName))
	if err != nil {
		t.Fatalf("the superuser password the roles generate: %v", err)
	}
	pw := strings.TrimSpace(string(raw))
	if pw == "" {
		t.Fatalf("%s is empty", passwordName)
	}
	return pw
}

// secureCQL configures a driver as an application of the cluster does:
// TLS verified against the cluster CA and the node's address, and the
// superuser's password.
func (c *Cluster) secureCQL(t *testing.T, cc *gocql.ClusterConfig) *gocql.ClusterConfig {
	cc.SslOpts = &gocql.SslOptions{CaPath: filepath.Join(c.certsDir(), "ca.crt"), EnableHostVerification: true}
	cc.Authenticator = gocql.PasswordAuthenticator{Username: superuser, Password: c.password(t)}
	return cc
}

// httpsClient trusts the cluster CA only.
func (c *Cluster) httpsClient(t *testing.T) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(c.certsDir(), "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no certificate in ca.crt")
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// checkSecure checks what the roles' defaults make: secrets kept private
// on the controller and the hosts and never printed, CQL that needs TLS
// and the password, an admin API that needs a client certificate, and
// cosmosctl working on a host through the environment file the role
// installs.
func checkSecure(t *testing.T, c *Cluster, hosts []*Host) {
	t.Helper()
	pw := c.password(t)
	for _, f := range []string{filepath.Join(c.secrets, passwordName), filepath.Join(c.certsDir(), "ca.key"), filepath.Join(c.certsDir(), "client.root.key")} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Errorf("controller: %v", err)
		} else if fi.Mode().Perm() != 0o600 {
			t.Errorf("controller: %s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	logs, _ := filepath.Glob(filepath.Join(c.logs, "*.log"))
	for _, l := range logs {
		if raw, err := os.ReadFile(l); err == nil && strings.Contains(string(raw), pw) {
			t.Errorf("the superuser password appears in the playbook output %s", l)
		}
	}
	for _, h := range hosts {
		for file, want := range map[string]string{
			hostCertsDir + "/node.key":        "600 cosmosd",
			hostCertsDir + "/client.root.key": "600 root",
			hostPasswordFile:                  "600 cosmosd",
			"/etc/etcd/certs/member.key":      "600 etcd",
		} {
			if file == "/etc/etcd/certs/member.key" && h != hosts[0] {
				continue // etcd runs on the first hosts only
			}
			if got, err := c.exec(h, "stat", "-c", "%a %U", file); err != nil || got != want {
				t.Errorf("%s: %s is %q (%v), want %q", h.Host, file, got, err, want)
			}
		}
	}

	// cosmosctl on a host, as root in a login shell: the role's
	// /etc/profile.d/cosmosctl.sh points it at the certificates.
	out, err := c.exec(hosts[0], "bash", "-lc", "cosmosctl -o json nodes list")
	if err != nil {
		t.Errorf("cosmosctl in a login shell on %s: %v", hosts[0].Host, err)
	} else {
		var nodes []blackbox.Node
		if err := json.Unmarshal([]byte(out), &nodes); err != nil || len(nodes) != len(hosts) {
			t.Errorf("cosmosctl in a login shell on %s lists %d nodes (%v), want %d:\n%s", hosts[0].Host, len(nodes), err, len(hosts), out)
		} else {
			t.Logf("cosmosctl in a login shell on %s lists %d nodes through COSMOSCTL_CERTS_DIR", hosts[0].Host, len(nodes))
		}
	}

	// The host's cosmosctl without certificates is refused.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.ctlPath, "--endpoints", hosts[0].IP+":7070", "--timeout", "5s", "--dial-timeout", "5s", "nodes", "list")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COSMOSCTL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if raw, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("cosmosctl without certificates listed the nodes, want it refused:\n%s", raw)
	} else {
		t.Logf("cosmosctl without certificates: refused: %s", strings.TrimSpace(string(raw)))
	}

	// CQL needs TLS and the password.
	try := func(what string, cc *gocql.ClusterConfig) error {
		cc.HostFilter = gocql.WhiteListHostFilter(hosts[0].IP)
		cc.ConnectTimeout, cc.Timeout = 3*time.Second, 3*time.Second
		s, err := cc.CreateSession()
		if err == nil {
			s.Close()
			t.Errorf("%s: a session on %s was opened, want it refused", what, hosts[0].Host)
			return nil
		}
		t.Logf("%s: refused: %v", what, err)
		return err
	}
	try("plaintext CQL client", blackbox.ClusterConfig(c.gocql, hosts[0].IP))
	noPassword := c.secureCQL(t, blackbox.ClusterConfig(c.gocql, hosts[0].IP))
	noPassword.Authenticator = nil
	if err := try("TLS CQL client without a password", noPassword); err != nil && !strings.Contains(err.Error(), "authentication") {
		t.Errorf("TLS CQL client without a password: refused for another reason than authentication: %v", err)
	}

	// The HTTP port serves HTTPS only.
	plainCtx, plainCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer plainCancel()
	req, _ := http.NewRequestWithContext(plainCtx, http.MethodGet, fmt.Sprintf("http://%s:8080/readyz", hosts[0].IP), nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plaintext http /readyz of %s answered 200, want TLS only", hosts[0].Host)
		}
	}
}

// rotateCerts runs site.yml with cosmosd_cert_rotate=true: every host gets
// a new certificate (cosmosd's and etcd's), the running nodes reload it
// (SIGHUP from the role's handler) without a restart, and the cluster,
// new TLS sessions and cosmosctl with the new client certificate work.
func rotateCerts(t *testing.T, c *Cluster, inv string, hosts []*Host) {
	sums := func(h *Host) string {
		files := []string{hostCertsDir + "/node.crt"}
		if h == hosts[0] {
			files = append(files, "/etc/etcd/certs/member.crt")
		}
		return c.mustExec(t, h, append([]string{"sha256sum"}, files...)...)
	}
	before := map[*Host]string{}
	for _, h := range hosts {
		before[h] = sums(h)
	}
	since := time.Now()
	res := c.playbook(t, inv, "site.yml", "-e", "cosmosd_cert_rotate=true")
	for _, h := range hosts {
		if res[h.Host].Changed == 0 {
			t.Errorf("%s: site.yml with cosmosd_cert_rotate changed nothing", h.Host)
		}
		if after := sums(h); after == before[h] {
			t.Errorf("%s: certificates unchanged after the rotation:\n%s", h.Host, after)
		}
		out, _ := c.exec(h, "journalctl", "--no-pager", "-o", "cat", "-u", "cosmosd", "--since", fmt.Sprintf("@%d", since.Unix()))
		if !strings.Contains(out, "certificates reloaded") {
			t.Errorf("%s: cosmosd logged no certificate reload after the rotation:\n%s", h.Host, blackbox.Tail(out, 20))
		}
		if strings.Contains(out, "Stopping") {
			t.Errorf("%s: cosmosd restarted for the rotation, want a reload:\n%s", h.Host, blackbox.Tail(out, 20))
		}
	}
	// New connections: TLS sessions on every node, cosmosctl with the
	// new client certificate.
	for _, h := range hosts {
		iter := c.session(t, h).Query("SELECT id FROM uprofile.user WHERE user = 'theo'").Iter()
		var id, n int
		for iter.Scan(&id) {
			n++
		}
		if err := iter.Close(); err != nil || n != 2 {
			t.Errorf("read through %s after the rotation: %d rows, %v", h.Host, n, err)
		}
	}
	took := blackbox.WaitFor(t, 2*time.Minute, "a healthy cluster after the rotation", func() (bool, string) { return c.healthy(hosts) })
	t.Logf("certificates rotated and reloaded on %d hosts without a restart; cluster healthy %s later", len(hosts), took.Round(100*time.Millisecond))
}
