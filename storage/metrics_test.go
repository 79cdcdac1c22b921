package storage

import (
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestMetrics: the accessor reflects the store's state: writes fill the
// memtable, a flush turns them into an L0 file that takes disk space.
func TestMetrics(t *testing.T) {
	e, err := Open(Config{Dir: "db", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	b := e.NewWriteBatch()
	for i := range 100 {
		if err := b.Set(fmt.Appendf(nil, "key%03d", i), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if m := e.Metrics(); m.MemTable.Size == 0 || m.MemTable.Count == 0 {
		t.Fatalf("memtable after writes: size %d, count %d; want both > 0", m.MemTable.Size, m.MemTable.Count)
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	m := e.Metrics()
	if m.Flush.Count == 0 {
		t.Fatal("flush not counted")
	}
	if got := m.Levels[0].TablesCount; got == 0 {
		t.Fatal("no L0 table after a flush")
	}
	if m.DiskSpaceUsage() == 0 {
		t.Fatal("disk space usage is 0 after a flush")
	}
}

// TestWriteStalls: the store's Pebble event listener counts write stalls
// and their time, a stall in progress included. (A real stall needs
// compactions to fall behind, which a test cannot arrange reliably, so the
// listener's callbacks are driven as Pebble drives them: begin, then end.)
func TestWriteStalls(t *testing.T) {
	e, err := Open(Config{Dir: "db", FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	if n, d := e.WriteStalls(); n != 0 || d != 0 {
		t.Fatalf("a new store reports %d stalls (%v)", n, d)
	}
	e.stalls.begin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	time.Sleep(20 * time.Millisecond)
	if n, d := e.WriteStalls(); n != 1 || d < 20*time.Millisecond {
		t.Fatalf("during a stall: %d stalls, %v; want 1 and >= 20ms", n, d)
	}
	e.stalls.end()
	n, d := e.WriteStalls()
	time.Sleep(5 * time.Millisecond)
	if n2, d2 := e.WriteStalls(); n != 1 || d < 20*time.Millisecond || n2 != n || d2 != d {
		t.Fatalf("after the stall: %d stalls, %v, then %d, %v; want 1, >= 20ms, unchanged", n, d, n2, d2)
	}
}
