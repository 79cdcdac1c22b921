package daemon

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A node started by cosmosd prints a banner with every address it listens
// on (CQL, peer, admin, HTTP), its data directory and where etcd is.
func TestStartupBannerListsEveryAddress(t *testing.T) {
	dir := t.TempDir()
	var node *Node
	app := newApp(func(start func(ctx context.Context) (stopper, error)) error {
		s, err := start(context.Background())
		if err != nil {
			return err
		}
		node = s.(*Node)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return s.Close(ctx)
	})
	var stdout, stderr bytes.Buffer
	app.Writer, app.ErrWriter = &stdout, &stderr
	err := app.Run([]string{"cosmosd", "--name", "banner-node", "--data-dir", dir, "--consensus", "local", "--log-level", "error",
		"--cql-addr", "127.0.0.1:0", "--peer-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--embedded-etcd-addr", "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("cosmosd: %v\n%s", err, stderr.String())
	}
	banner := stderr.String()
	lines := strings.Split(banner, "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "cosmosd ") || !strings.Contains(lines[0], "node banner-node (id ") {
		t.Fatalf("banner:\n%s", banner)
	}
	row := strings.Fields(lines[2])
	want := []string{"banner-node", node.CQLAddr(), node.PeerAddr(), node.AdminAddr(), node.HTTPAddr(), dir}
	if strings.Join(row, " ") != strings.Join(want, " ") {
		t.Errorf("node row %q, want %q", row, want)
	}
	if h := strings.Fields(lines[1]); strings.Join(h, " ") != "NODE CQL PEER ADMIN HTTP DATA DIR" {
		t.Errorf("header %q", lines[1])
	}
	etcd := "etcd: embedded, " + strings.Join(node.embedded.Endpoints(), ",") + ", data in " + filepath.Join(dir, "etcd")
	if strings.TrimSpace(lines[3]) != etcd {
		t.Errorf("etcd line %q, want %q", lines[3], etcd)
	}
	for _, addr := range want[1:5] {
		if strings.HasSuffix(addr, ":0") || addr == "" {
			t.Errorf("address %q is not the bound one", addr)
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q", stdout.String())
	}
}

// The demo's banner has a row per node, says "off" for a node without
// HTTP, and names the shared etcd and its directory.
func TestDemoBannerRows(t *testing.T) {
	var b bytes.Buffer
	err := writeBanner(&b, "cosmosd demo: 2 nodes", []bannerNode{
		{Name: "node-1", CQL: "127.0.0.1:9042", Peer: "127.0.0.1:7000", Admin: "127.0.0.1:7070", HTTP: "127.0.0.1:8080", DataDir: "d/node-1"},
		{Name: "node-2", CQL: "127.0.0.2:9042", Peer: "127.0.0.2:7000", Admin: "127.0.0.2:7070", DataDir: "d/node-2"},
	}, "http://127.0.0.1:2379", "d/etcd")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"cosmosd demo: 2 nodes",
		"NODE CQL PEER ADMIN HTTP DATA DIR",
		"node-1 127.0.0.1:9042 127.0.0.1:7000 127.0.0.1:7070 127.0.0.1:8080 d/node-1",
		"node-2 127.0.0.2:9042 127.0.0.2:7000 127.0.0.2:7070 off d/node-2",
		"etcd: embedded, http://127.0.0.1:2379, data in d/etcd",
	}
	got := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("banner:\n%s", b.String())
	}
	for i := range want {
		if strings.Join(strings.Fields(got[i]), " ") != want[i] {
			t.Errorf("line %d %q, want %q", i, got[i], want[i])
		}
	}
}

// make run passes LOG_LEVEL to the demo (issue 17: make run logged 3,700
// lines at info in two minutes, with no way to quiet it).
func TestMakeRunHonorsLogLevel(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for level, want := range map[string]string{"": "--log-level info", "LOG_LEVEL=warn": "--log-level warn"} {
		args := []string{"-n", "-C", "..", "run"}
		if level != "" {
			args = append(args, level)
		}
		out, err := exec.Command("make", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("make %v: %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), "cosmosd demo ") || !strings.Contains(string(out), want) {
			t.Errorf("make %v:\n%s\nwant %q", args, out, want)
		}
	}
}
