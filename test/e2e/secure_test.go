package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/security"
)

// This file makes the cluster secure, as a production cluster is: every
// container gets the cluster CA and a certificate of its own, the etcd
// members serve TLS to clients and peers, the nodes serve TLS on every
// port (mutual TLS between them and to etcd) and authenticate CQL clients
// by password; the test's clients present what an operator's do.

// Credentials of the cluster's superuser role, created on the first start.
const (
	superuser = "cassandra"
	// The password is the test's own, so a failure report may show it.
	superuserPassword = "e2e-Secret-Pw"
	// ctlUser is the client certificate the host's cosmosctl presents.
	ctlUser = "root"
)

// certs are the certificates of one cluster on the host: dir holds ca.crt,
// ca.key and the client certificate; each container's directory (copied
// to /certs in the container) holds ca.crt, node.crt and node.key.
type certs struct {
	dir string
}

// makeCerts makes the CA and cosmosctl's client certificate.
func makeCerts(dir string) (*certs, error) {
	o := security.CertOptions{Dir: dir}
	if _, err := security.CreateCA(o); err != nil {
		return nil, err
	}
	if _, err := security.CreateClient(o, ctlUser); err != nil {
		return nil, err
	}
	// The test reads and writes etcd directly, as the nodes do; etcd
	// accepts only node certificates (a client certificate of the CA is
	// refused), so the test has one of its own.
	nd := filepath.Join(dir, "test-node")
	ca, err := os.ReadFile(filepath.Join(dir, security.CAFile))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(nd, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(nd, security.CAFile), ca, 0o644); err != nil {
		return nil, err
	}
	if _, err := security.CreateNode(security.CertOptions{Dir: nd, CAKey: filepath.Join(dir, security.CAKeyFile)}, []string{"localhost"}); err != nil {
		return nil, err
	}
	return &certs{dir: dir}, nil
}

// forHost makes the directory of one container: the CA certificate and a
// node certificate for its name and address (and localhost).
func (cs *certs) forHost(x *Container) (string, error) {
	d := filepath.Join(cs.dir, "hosts", x.Host)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", err
	}
	ca, err := os.ReadFile(filepath.Join(cs.dir, security.CAFile))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(d, security.CAFile), ca, 0o644); err != nil {
		return "", err
	}
	if _, err := security.CreateNode(security.CertOptions{Dir: d, CAKey: filepath.Join(cs.dir, security.CAKeyFile)}, []string{x.Host, x.IP}); err != nil {
		return "", err
	}
	return d, nil
}

// clientTLS is the TLS of the test's own etcd client: the cluster CA,
// and the test's node certificate (etcd requires one).
func (cs *certs) clientTLS() (*tls.Config, error) {
	ca, err := os.ReadFile(filepath.Join(cs.dir, security.CAFile))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("no CA certificate in " + cs.dir)
	}
	node := security.NodeFiles(filepath.Join(cs.dir, "test-node"))
	cert, err := tls.LoadX509KeyPair(node.Cert, node.Key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// secureCQL configures a driver the way an application of the secure
// cluster does: TLS verified against the cluster CA and the node's
// address, and the superuser's password.
func (cs *certs) secureCQL(cc *gocql.ClusterConfig) *gocql.ClusterConfig {
	cc.SslOpts = &gocql.SslOptions{CaPath: filepath.Join(cs.dir, security.CAFile), EnableHostVerification: true}
	cc.Authenticator = gocql.PasswordAuthenticator{Username: superuser, Password: superuserPassword}
	return cc
}

// scenarioRefusesInsecure checks that the secure cluster turns away
// clients without its credentials: a plaintext CQL client, a TLS client
// without a password or with a wrong one, a cosmosctl without certificates
// and a plaintext etcd client.
func scenarioRefusesInsecure(t *testing.T, c *Cluster) {
	n := c.Nodes[0]
	try := func(what string, cc *gocql.ClusterConfig) error {
		cc.HostFilter = gocql.WhiteListHostFilter(n.IP)
		cc.ConnectTimeout = 3 * time.Second
		cc.Timeout = 3 * time.Second
		s, err := cc.CreateSession()
		if err == nil {
			s.Close()
			t.Errorf("%s: a session on %s was opened, want it refused", what, n.Host)
			return nil
		}
		t.Logf("%s: refused: %v", what, err)
		return err
	}
	plain := c.clusterConfig(n)
	plain.SslOpts, plain.Authenticator = nil, nil
	try("plaintext CQL client", plain)

	noPassword := c.clusterConfig(n)
	noPassword.Authenticator = nil
	if err := try("TLS CQL client without a password", noPassword); err != nil && !strings.Contains(err.Error(), "authentication") {
		t.Errorf("TLS CQL client without a password: refused for another reason than authentication: %v", err)
	}

	wrong := c.clusterConfig(n)
	wrong.Authenticator = gocql.PasswordAuthenticator{Username: superuser, Password: superuserPassword + "x"}
	try("TLS CQL client with a wrong password", wrong)

	// cosmosctl without --certs-dir (and without COSMOSCTL_CERTS_DIR).
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.art.Ctl, "--endpoints", n.IP+":7070", "--timeout", "5s", "--dial-timeout", "5s", "nodes", "list")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COSMOSCTL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Errorf("cosmosctl without certificates listed the nodes of %s, want it refused:\n%s", n.Host, out)
	} else {
		t.Logf("cosmosctl without certificates: refused: %v: %s", err, strings.TrimSpace(string(out)))
	}

	// etcd without TLS.
	cli, err := metakv.DialEtcd(metakv.EtcdClientConfig{Endpoints: []string{c.Etcd[0].IP + ":2379"}, Prefix: etcdPrefix})
	if err != nil {
		t.Logf("plaintext etcd client: refused at dial: %v", err)
		return
	}
	defer cli.Close()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if _, _, err := cli.Store().List(sctx, ""); err == nil {
		t.Errorf("a plaintext etcd client read %s from %s, want it refused", etcdPrefix, c.Etcd[0].Host)
	} else {
		t.Logf("plaintext etcd client: refused: %v", fmt.Sprint(err))
	}
}
