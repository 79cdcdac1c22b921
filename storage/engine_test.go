package storage

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestCommitNoSyncWait: writes committed without sync before a
// CommitNoSyncWait, and the batch itself, survive a crash that keeps only
// synced data once Wait returned; an empty batch still syncs what came
// before it. Append carries another batch's writes, deletions included,
// after the batch's own.
func TestCommitNoSyncWait(t *testing.T) {
	fs := vfs.NewCrashableMem()
	open := func() *Engine {
		t.Helper()
		e, err := Open(Config{Dir: "db", FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := open()
	put := func(k, v string) *Batch {
		b := e.NewWriteBatch()
		if err := b.Set([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := put("a", "1")
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	// An indexed batch (as apply batches are) with a deletion, appended.
	other := e.NewBatch()
	if err := other.Set([]byte("c"), []byte("3")); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete([]byte("gone")); err != nil {
		t.Fatal(err)
	}
	combined := put("b", "2")
	if err := combined.Append(other); err != nil {
		t.Fatal(err)
	}
	_ = other.Close()
	ps, err := combined.CommitNoSyncWait()
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Wait(); err != nil {
		t.Fatal(err)
	}
	// Unsynced, then synced by an empty batch's request.
	b = put("d", "4")
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	ps, err = e.NewWriteBatch().CommitNoSyncWait()
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Wait(); err != nil {
		t.Fatal(err)
	}
	// Unsynced and never synced: may be lost.
	b = put("e", "5")
	if err := b.Commit(false); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()

	// The crash: a copy of what was synced, nothing else.
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	_ = e.Close()
	fs = crashed
	e = open()
	defer e.Close()
	for k, want := range map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"} {
		v, ok, err := e.Get([]byte(k))
		if err != nil || !ok || string(v) != want {
			t.Errorf("after the crash %s = %q (found %v, %v), want %q", k, v, ok, err, want)
		}
	}
	if _, ok, _ := e.Get([]byte("e")); ok {
		t.Log("the never-synced write survived (allowed: the disk kept it)")
	}
}
