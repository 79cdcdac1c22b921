package securitytest

import (
	"context"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/security"
	"github.com/cosmosd/cosmosd/test/logbuf"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// buildCosmosd builds cmd/cosmosd into a temporary directory.
func buildCosmosd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cosmosd")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	build := osexec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/cosmosd")
	build.Dir = "../.." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build cosmosd: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestSIGHUPRotation runs the cosmosd binary with certs_dir and password
// authentication, rotates its node certificate on disk and sends SIGHUP:
// fresh connections to the CQL and peer ports present the new
// certificate, and the reload is the signal's, not the file watch's. A
// SIGHUP with a half-written key keeps the previous certificate and says
// so on stderr. The process's output never holds a private key or the
// superuser's password.
func TestSIGHUPRotation(t *testing.T) {
	bin := buildCosmosd(t)
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	testcluster.MakeCerts(t, certs)
	const password = "Sup3r-s3cret-pw-8815"
	pwFile := filepath.Join(dir, "superuser-password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cqlAddr, peerAddr, adminAddr, httpAddr := freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	cfgFile := filepath.Join(dir, "cosmosd.yaml")
	yaml := fmt.Sprintf(`name: sighup
data_dir: %s
cql_addr: %s
peer_addr: %s
admin_addr: %s
http_addr: %s
embedded_etcd_addr: 127.0.0.1:0
consensus: local
log_level: debug
shutdown_timeout: 10s
certs_dir: %s
authenticator: password
superuser_password_file: %s
`, filepath.Join(dir, "data"), cqlAddr, peerAddr, adminAddr, httpAddr, certs, pwFile)
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}

	output := &logbuf.Buffer{}
	cmd := osexec.Command(bin, "--config", cfgFile)
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("cosmosd exited: %v", err)
			}
		case <-time.After(40 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Error("cosmosd did not stop within 40s of SIGTERM")
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("cosmosd output:\n%s", output.String())
		}
	})

	nodeCert := loadPair(t, security.NodeFiles(certs))
	serials := func() (cql, peer string, err error) {
		if cql, err = servedSerial(t, certs, cqlAddr, nil); err != nil {
			return "", "", err
		}
		peer, err = servedSerial(t, certs, peerAddr, nodeCert, "h2")
		return cql, peer, err
	}
	// Ready once CQL answers a logged-in query over TLS.
	cc := gocql.NewCluster(cqlAddr)
	cc.ProtoVersion, cc.Timeout, cc.ConnectTimeout = 4, 15*time.Second, 10*time.Second
	cc.DisableInitialHostLookup = true
	cc.SslOpts = &gocql.SslOptions{CaPath: filepath.Join(certs, security.CAFile), EnableHostVerification: true}
	cc.Authenticator = gocql.PasswordAuthenticator{Username: testcluster.Superuser, Password: password}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-exited:
			t.Fatalf("cosmosd exited while starting: %v\n%s", err, output.String())
		default:
		}
		s, err := cc.CreateSession()
		if err == nil {
			var release string
			err = s.Query("SELECT release_version FROM system.local").Scan(&release)
			s.Close()
			if err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("cosmosd not serving CQL: %v\n%s", err, output.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Every key the process has had: checked against its output at the end.
	keyLines := keySecrets(t, certs)

	first := security.SerialString(nodeCert.Leaf)
	if cql, peer, err := serials(); err != nil || cql != first || peer != first {
		t.Fatalf("before: CQL %q, peer %q (%v); want %s", cql, peer, err, first)
	}

	var hosts []string
	for i := 1; i <= 9; i++ {
		hosts = append(hosts, fmt.Sprintf("127.0.0.%d", i))
	}
	// The node also watches the files (every second); a rotation the
	// watch loads before the signal arrives proves nothing about SIGHUP,
	// so such a one is done again.
	var current string
	for attempt := 1; ; attempt++ {
		renewed, err := security.CreateNode(security.CertOptions{Dir: certs, Overwrite: true}, hosts)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		keyLines = append(keyLines, keySecrets(t, certs)...)
		current = security.SerialString(renewed)
		deadline := time.Now().Add(30 * time.Second)
		for {
			cql, peer, err := serials()
			if err == nil && cql == current && peer == current {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after SIGHUP: CQL %q, peer %q (%v); want %s", cql, peer, err, current)
			}
			time.Sleep(100 * time.Millisecond)
		}
		logs := output.String()
		if regexp.MustCompile(`msg="certificates reloaded" .*component=certs trigger="reload request" .*serial=` + current + ` `).MatchString(logs) {
			break
		}
		if !regexp.MustCompile(`msg="certificates reloaded" .*component=certs trigger="file change" .*serial=` + current + ` `).MatchString(logs) {
			t.Fatalf("serial %s served, but no reload logged:\n%s", current, logs)
		}
		if attempt == 5 {
			t.Fatalf("the file watch won the race with SIGHUP %d times", attempt)
		}
		t.Logf("attempt %d: the file watch loaded %s before the signal", attempt, current)
	}
	if !strings.Contains(output.String(), "re-reading the certificate files on request") {
		t.Fatal("SIGHUP not acknowledged in the log")
	}

	// A half-written key: SIGHUP reports it on stderr and the node keeps
	// serving the certificate it has.
	key := filepath.Join(certs, security.NodeKeyFile)
	raw, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, raw[:len(raw)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^cosmosd: SIGHUP: security: \S+node\.crt and \S+node\.key: .*; the previous certificates stay in use$`)
	for deadline := time.Now().Add(30 * time.Second); !want.MatchString(output.String()); {
		if time.Now().After(deadline) {
			t.Fatalf("no SIGHUP failure on stderr:\n%s", output.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if cql, peer, err := serials(); err != nil || cql != current || peer != current {
		t.Fatalf("after a broken key: CQL %q, peer %q (%v); want %s still", cql, peer, err, current)
	}

	stop()
	logs := output.String()
	checkNoSecrets(t, logs, keyLines, password)
	if !strings.Contains(logs, "tls enabled") || !strings.Contains(logs, "created superuser role") {
		t.Fatalf("the output is not the node's log:\n%.3000s", logs)
	}
	t.Logf("checked %d bytes of output for %d key lines and the password", len(logs), len(keyLines))
}
