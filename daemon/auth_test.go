package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/embedded"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/test/logbuf"
)

// authNode returns a Node with just what startAuth uses: the config, a
// logger into logs, and a Meta over a real embedded etcd at endpoints.
func authNode(t *testing.T, endpoints []string, cfg Config, logs *logbuf.Buffer) *Node {
	t.Helper()
	cli, err := metakv.DialEtcd(metakv.EtcdClientConfig{Endpoints: endpoints, Prefix: cluster.DefaultPrefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	meta, err := cluster.OpenMeta(context.Background(), cli.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(meta.Close)
	if cfg.Superuser == "" {
		cfg.Superuser = "cassandra"
	}
	cfg.Authenticator = "password"
	cfg.Knobs = &Knobs{PasswordHashCost: bcrypt.MinCost}
	return &Node{cfg: cfg, meta: meta, logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

func startEtcd(t *testing.T) []string {
	t.Helper()
	e, err := embedded.Start(embedded.Config{Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e.Endpoints()
}

func writeFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSuperuserBootstrap(t *testing.T) {
	ep := startEtcd(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, file string
		err        string
	}{
		{"no file", "", "the cluster has no role yet and superuser_password_file (--superuser-password-file) is not set"},
		{"missing file", filepath.Join(t.TempDir(), "nosuch"), "superuser_password_file: open"},
		{"empty password", writeFile(t, "\n", 0o600), "the password is empty"},
		{"too long", writeFile(t, strings.Repeat("p", 73), 0o600), "passwords are limited to 72 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logbuf.Buffer{}
			n := authNode(t, ep, Config{SuperuserPasswordFile: tc.file}, logs)
			_, authn, err := n.startAuth(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.err) || authn != nil {
				t.Fatalf("startAuth = %v, want %q", err, tc.err)
			}
			if n.meta.State().Auth.NumRoles() != 0 {
				t.Fatal("a role was created")
			}
		})
	}

	// The first start creates the superuser with the file's first line.
	logs := &logbuf.Buffer{}
	n := authNode(t, ep, Config{Superuser: "root", SuperuserPasswordFile: writeFile(t, "first-pw-3e1\r\nsecond line\n", 0o644)}, logs)
	roles, authn, err := n.startAuth(ctx)
	if err != nil || roles == nil || authn == nil {
		t.Fatalf("startAuth: %v", err)
	}
	r := n.meta.State().Auth.Role("root")
	if r == nil || !r.Superuser || !r.Login || bcrypt.CompareHashAndPassword([]byte(r.SaltedHash), []byte("first-pw-3e1")) != nil {
		t.Fatalf("superuser role %+v", r)
	}
	if role, err := authn.Login("127.0.0.1", []byte("\x00root\x00first-pw-3e1")); err != nil || role != "root" {
		t.Fatalf("login as the bootstrapped superuser: %q %v", role, err)
	}
	out := logs.String()
	if !strings.Contains(out, "created superuser role") || !strings.Contains(out, "superuser_password_file is readable by every user") {
		t.Fatalf("log:\n%s", out)
	}

	// Later starts leave the roles alone, file or not.
	for _, file := range []string{"", writeFile(t, "other-pw-77a\n", 0o600)} {
		logs := &logbuf.Buffer{}
		n := authNode(t, ep, Config{Superuser: "cassandra", SuperuserPasswordFile: file}, logs)
		if _, _, err := n.startAuth(ctx); err != nil {
			t.Fatalf("restart with file %q: %v", file, err)
		}
		st := n.meta.State().Auth
		if st.NumRoles() != 1 || st.Role("cassandra") != nil ||
			bcrypt.CompareHashAndPassword([]byte(st.Role("root").SaltedHash), []byte("first-pw-3e1")) != nil {
			t.Fatalf("a restart changed the roles: %v", st.RoleNames())
		}
		out += logs.String()
	}
	for _, pw := range []string{"first-pw-3e1", "other-pw-77a"} {
		if strings.Contains(out, pw) {
			t.Fatalf("the password is logged:\n%s", out)
		}
	}
}

// Nodes starting together on an empty cluster agree on one superuser.
func TestSuperuserBootstrapConcurrent(t *testing.T) {
	ep := startEtcd(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	nodes := make([]*Node, n)
	for i := range nodes {
		nodes[i] = authNode(t, ep, Config{SuperuserPasswordFile: writeFile(t, "pw-"+string(rune('a'+i)), 0o600)}, &logbuf.Buffer{})
	}
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = nodes[i].startAuth(context.Background())
		}()
	}
	wg.Wait()
	matches := 0
	for i := range nodes {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i, errs[i])
		}
	}
	// Every node sees the same single role; its password is one node's.
	for _, nd := range nodes {
		if err := nd.meta.WaitRevision(context.Background(), nodes[0].meta.State().Revision); err != nil {
			t.Fatal(err)
		}
	}
	hash := nodes[0].meta.State().Auth.Role("cassandra").SaltedHash
	for i, nd := range nodes {
		st := nd.meta.State().Auth
		if st.NumRoles() != 1 || st.Role("cassandra").SaltedHash != hash {
			t.Fatalf("node %d sees roles %v", i, st.RoleNames())
		}
		if bcrypt.CompareHashAndPassword([]byte(hash), []byte("pw-"+string(rune('a'+i)))) == nil {
			matches++
		}
	}
	if matches != 1 {
		t.Fatalf("the superuser's password is that of %d nodes, want 1", matches)
	}
}

// With allow-all there is no authenticator, and no password file is needed.
func TestAuthOff(t *testing.T) {
	ep := startEtcd(t)
	logs := &logbuf.Buffer{}
	n := authNode(t, ep, Config{}, logs)
	n.cfg.Authenticator = "allow-all"
	roles, authn, err := n.startAuth(context.Background())
	if err != nil || roles == nil || authn != nil {
		t.Fatalf("startAuth = %v, %v, %v", roles, authn, err)
	}
	if !strings.Contains(logs.String(), "authentication is off") {
		t.Fatalf("log:\n%s", logs.String())
	}
}
