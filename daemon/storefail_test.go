package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestStoreWriteFailureStopsNode: once the store fails a write (here every
// write returns EIO, as a dying disk does), what the node applied in
// memory may not be on disk. The node stops serving at once: the write
// fails for the client, /healthz answers 503, and Fatal delivers the
// cause, on which the process exits for its supervisor to restart it from
// what is durable.
func TestStoreWriteFailureStopsNode(t *testing.T) {
	e := startTestEtcd(t)
	var failing atomic.Bool
	cfg := Config{
		Name: "n1", DataDir: filepath.Join(t.TempDir(), "n1"),
		CQLAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		EtcdEndpoints: e.Endpoints(), EtcdPrefix: "/storefail/", Consensus: "local",
		LogLevel: "error", ShutdownTimeout: 3 * time.Second,
		Knobs: &Knobs{StoreFS: func(fs vfs.FS) vfs.FS {
			return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if failing.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.Contains(op.Path, "store") {
					return &os.PathError{Op: "write", Path: op.Path, Err: syscall.EIO}
				}
				return nil
			}))
		}},
	}
	n, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close(context.Background()) }()
	s := useNode(t, n.CQLAddr())
	failing.Store(true)
	if err := s.Query("INSERT INTO ks.t (k, v) VALUES ('x', 'y')").Exec(); err == nil {
		t.Fatal("a write succeeded on a store that fails every write")
	}
	select {
	case err := <-n.Fatal():
		if !strings.Contains(err.Error(), "input/output error") {
			t.Fatalf("Fatal delivered %v, want the I/O error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Fatal delivered nothing 10s after the store failed")
	}
	if failed, err := n.health(); err == nil {
		t.Fatalf("health reports no error after the store failed (failed replicas %v)", failed)
	}
	if n.Ready() {
		t.Fatal("the node still reports ready")
	}
}
