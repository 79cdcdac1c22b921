package daemon

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
	"github.com/cosmosd/cosmosd/storage"
)

// TestBindNodeID walks the table of nodeid.go: every combination of store
// identity, node-id file and store data, on a real Pebble store (in memory)
// and a real etcd that allocates ids.
func TestBindNodeID(t *testing.T) {
	e := startTestEtcd(t)
	// Every case allocates from the same counter: ids 1..3 are taken
	// first, so an allocated id is above 3.
	prefix := "/bind-test/"
	cli, err := metakv.DialEtcd(metakv.EtcdClientConfig{Endpoints: e.Endpoints(), Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	const dir = "/data"
	ctx := context.Background()
	for range 3 {
		if _, err := cluster.AllocateID(ctx, cli.Store(), "node", 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		identity *nodeIdentity // nil: none
		file     string        // "": no file
		data     bool          // the store holds other keys
		wantErr  string
		want     uint64 // 0: a newly allocated id
		replaced uint64 // the identity must record this replaced id
	}{
		{name: "new node", want: 0},
		{name: "store and file agree", identity: &nodeIdentity{id: 2}, file: "2\n", data: true, want: 2},
		{name: "file missing is rewritten", identity: &nodeIdentity{id: 2}, data: true, want: 2},
		{name: "interrupted replacement is finished", identity: &nodeIdentity{id: 3, replaced: 2}, file: "2\n", want: 3, replaced: 2},
		{name: "mismatch refuses", identity: &nodeIdentity{id: 2}, file: "3\n", data: true, wantErr: "names node 3 but the store belongs to node 2"},
		{name: "store from before identities adopts the file", file: "2\n", data: true, want: 2},
		{name: "data without any id refuses", data: true, wantErr: "neither it nor a node-id file"},
		{name: "store lost: new id", file: "2\n", want: 0, replaced: 2},
		{name: "corrupt file refuses", file: "x\n", wantErr: "corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			if err := fs.MkdirAll(dir, 0o750); err != nil {
				t.Fatal(err)
			}
			st, err := storage.Open(storage.Config{FS: fs, Dir: fs.PathJoin(dir, "store")})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			b := st.NewWriteBatch()
			if tc.identity != nil {
				_ = b.Set(storage.NodeIdentityKey(), tc.identity.encode())
			}
			if tc.data {
				_ = b.Set(storage.RaftHardStateKey(7), []byte("hs"))
			}
			if err := b.Commit(true); err != nil {
				t.Fatal(err)
			}
			if tc.file != "" {
				f, err := fs.Create(fs.PathJoin(dir, nodeIDFile), vfs.WriteCategoryUnspecified)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = f.Write([]byte(tc.file))
				_ = f.Close()
			}
			n := &Node{cfg: Config{DataDir: dir, EtcdPrefix: prefix}, logger: slog.New(slog.DiscardHandler), metaKV: cli.Store(), store: st}
			id, err := n.bindNodeID(ctx)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != 0 && id != tc.want {
				t.Fatalf("id = %d, want %d", id, tc.want)
			}
			if tc.want == 0 && id <= 3 {
				t.Fatalf("id = %d, want a newly allocated id (> 3)", id)
			}
			fileID, err := readNodeIDFile(fs, dir)
			if err != nil || fileID != id {
				t.Fatalf("node-id file holds %d (%v), want %d", fileID, err, id)
			}
			raw, ok, err := st.Get(storage.NodeIdentityKey())
			if err != nil || !ok {
				t.Fatalf("store identity: %v %v", ok, err)
			}
			ni, err := decodeNodeIdentity(raw)
			if err != nil || ni.id != id || ni.replaced != tc.replaced {
				t.Fatalf("store identity = %+v (%v), want id %d replaced %d", ni, err, id, tc.replaced)
			}
			// The identity key is no group's: the engine's scans of
			// group state do not see it.
			if groups, err := storage.ReplicaStateGroups(st); err != nil || len(groups) != 0 {
				t.Fatalf("ReplicaStateGroups = %v, %v; want none", groups, err)
			}
		})
	}
}

// TestNodeIDFileSurvivesCrash writes the node-id file on a file system that
// keeps only what was synced when it crashes: the file must be there, whole,
// after the crash (it was written without fsync, so a crash could leave an
// empty or missing file behind).
func TestNodeIDFileSurvivesCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	const dir = "/data"
	if err := fs.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	// The directory itself must be durable before the test's crash, as
	// the data dir is before a node starts.
	if d, err := fs.OpenDir("/"); err != nil || d.Sync() != nil {
		t.Fatalf("sync /: %v", err)
	}
	for _, id := range []uint64{7, 12345} {
		if err := writeNodeIDFile(fs, dir, id); err != nil {
			t.Fatal(err)
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
		got, err := readNodeIDFile(crashed, dir)
		if err != nil || got != id {
			t.Fatalf("after a crash the node-id file holds %d (%v), want %d", got, err, id)
		}
	}
}
