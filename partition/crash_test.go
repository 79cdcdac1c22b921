package partition

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/consensus/local"
	"github.com/cosmosd/cosmosd/consensus/raft"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// Crash and I/O-error tests of the partition layer: a node's storage,
// consensus engine and partition store on Pebble's crashable in-memory
// filesystem. A crash is vfs.MemFS.CrashClone: the disk as a power cut at
// that instant leaves it (everything synced, and with UnsyncedDataPercent
// some of what was not); the node restarts from the clone, recovering its
// replicas as the daemon does (Store.Recover). Each test runs on both
// engines: the local one (the batch that applies a command is the only
// write) and a one-replica raft group (the log is synced before the apply
// batch, so a crash between the two re-applies entries on restart).

// crashEngines are the consensus engines the crash tests run on.
var crashEngines = []string{"local", "raft"}

// crashTimeout bounds every wait of these tests (elections, restarts).
const crashTimeout = 10 * time.Second

// crashPart is the partition the tests bootstrap: all of table 7.
func crashPart() *kvpb.Descriptor {
	return &kvpb.Descriptor{Id: 100, TableId: table, Start: math.MinInt64, End: math.MaxInt64,
		Replicas: []*kvpb.ReplicaDescriptor{{NodeId: 1, ReplicaId: 1}}, NextReplicaId: 2}
}

// crashNode is one node's partition layer on a crashable disk.
type crashNode struct {
	t      *testing.T
	engine string     // "local" or "raft"
	disk   *vfs.MemFS // what the node runs on; a crash replaces it
	// The hooks below apply to the node's current incarnation only: a
	// restart clears them.
	wrap        func(vfs.FS) vfs.FS           // error injection
	onInitSplit func(right consensus.GroupID) // inside a split's apply, before its batch commits
	knobs       *StoreKnobs

	eng   *storage.Engine
	cons  consensus.Engine
	net   *raft.MemNetwork
	store *Store
}

func newCrashNode(t *testing.T, engine string) *crashNode {
	n := &crashNode{t: t, engine: engine, disk: vfs.NewCrashableMem()}
	t.Cleanup(n.stop)
	return n
}

// splitHookEngine calls a hook when a split writes the right half's
// initial consensus state into its apply batch, the instant between the
// split's apply and its batch's commit.
type splitHookEngine struct {
	consensus.Engine
	hook func(consensus.GroupID)
}

func (e splitHookEngine) WriteInitialState(b *storage.Batch, id consensus.GroupID, self consensus.ReplicaID, members []consensus.Replica) (bool, error) {
	e.hook(id)
	return e.Engine.WriteInitialState(b, id, self, members)
}

// start opens the node's store on its disk and recovers its replicas.
func (n *crashNode) start() {
	n.t.Helper()
	fs := vfs.FS(n.disk)
	if n.wrap != nil {
		fs = n.wrap(fs)
	}
	eng, err := storage.Open(storage.Config{Dir: "store", FS: fs})
	if err != nil {
		n.t.Fatalf("open store: %v", err)
	}
	var cons consensus.Engine
	switch n.engine {
	case "local":
		cons, err = local.New(local.Config{NodeID: 1, Storage: eng})
	case "raft":
		n.net = raft.NewMemNetwork(1)
		cons, err = raft.New(raft.Config{NodeID: 1, Storage: eng, TickInterval: 10 * time.Millisecond,
			TestingKnobs: &raft.TestingKnobs{Transport: n.net.Transport(1)}})
	default:
		err = fmt.Errorf("unknown engine %q", n.engine)
	}
	if err != nil {
		_ = eng.Close()
		n.t.Fatalf("start %s engine: %v", n.engine, err)
	}
	if n.onInitSplit != nil {
		cons = splitHookEngine{Engine: cons, hook: n.onInitSplit}
	}
	n.eng, n.cons = eng, cons
	n.store = NewStore(StoreConfig{NodeID: 1, Storage: eng, Consensus: cons, TestingKnobs: n.knobs})
	if err := n.store.Recover(context.Background()); err != nil {
		n.t.Fatalf("recover: %v", err)
	}
}

// stop closes the node. Close errors are ignored: after a crash point or
// an injected fault the old incarnation's disk may refuse its last writes.
func (n *crashNode) stop() {
	if n.store == nil {
		return
	}
	n.store.Close()
	_ = n.cons.Close()
	_ = n.eng.Close()
	if n.net != nil {
		n.net.Close()
	}
	n.store, n.cons, n.eng, n.net = nil, nil, nil, nil
}

// crashClone returns the disk a crash now would leave, keeping the given
// percentage of what was not synced (chosen by rng, or by a fixed seed
// when rng is nil).
func (n *crashNode) crashClone(keep int, rng *rand.Rand) *vfs.MemFS {
	seed := uint64(1)
	if rng != nil {
		seed = rng.Uint64()
	}
	return n.disk.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keep, RNG: rand.New(rand.NewPCG(seed, 0))})
}

// restart stops the node's current incarnation (which ran on past the
// crash point, on the old disk) and starts it on disk, without hooks.
func (n *crashNode) restart(disk *vfs.MemFS) {
	n.t.Helper()
	n.stop()
	n.disk, n.wrap, n.onInitSplit, n.knobs = disk, nil, nil, nil
	n.start()
}

// replica waits until the node runs partition id.
func (n *crashNode) replica(id uint64) *Replica {
	n.t.Helper()
	for deadline := time.Now().Add(crashTimeout); ; waitBriefly() {
		if r, ok := n.store.Replica(id); ok {
			return r
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("partition %d did not start", id)
		}
	}
}

// untilLeader retries op while the replica has no leader yet (after a
// bootstrap or a restart the group elects one), which is safe: such a
// request was not proposed.
func untilLeader[T any](op func() (T, error)) (T, error) {
	for deadline := time.Now().Add(crashTimeout); ; waitBriefly() {
		v, err := op()
		if ErrorCode(err) != kvpb.Error_NOT_LEADER || time.Now().After(deadline) {
			return v, err
		}
	}
}

// write writes muts to partition id.
func (n *crashNode) write(id uint64, muts ...*kvpb.Mutation) error {
	n.t.Helper()
	return writeTo(n.replica(id), muts...)
}

// writeTo writes muts to r; safe on any goroutine.
func writeTo(r *Replica, muts ...*kvpb.Mutation) error {
	_, err := untilLeader(func() (*kvpb.WriteResponse, error) {
		return r.Write(context.Background(), &kvpb.WriteRequest{PartitionId: r.ID(), TableId: table, NowMicros: 1_700_000_000_000_000, Mutations: muts})
	})
	return err
}

// settle waits until partition id's replica leads and has committed
// everything in its log, so that what the replica's descriptor says
// includes a split its restarted raft log replays. (A linearizable read
// needs no such wait: the raft engine holds reads until its term has
// committed an entry, consensus/raft requests.go readHold.)
func (n *crashNode) settle(id uint64) *Replica {
	n.t.Helper()
	r := n.replica(id)
	for deadline := time.Now().Add(crashTimeout); ; waitBriefly() {
		st := r.Group().Status()
		if st.Err != nil {
			n.t.Fatalf("partition %d failed: %v", id, st.Err)
		}
		if st.IsLeader() && st.Commit >= st.LastIndex {
			return r
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("partition %d did not settle: %+v", id, st)
		}
	}
}

// rows reads every live row of partition id linearizably (which also
// waits for a restarted replica to apply what its log committed), keyed
// by partition key, with the value of column 1.
func (n *crashNode) rows(id uint64) map[string]string {
	n.t.Helper()
	r := n.replica(id)
	d := r.Descriptor()
	resp, err := untilLeader(func() (*kvpb.ReadResponse, error) {
		return r.Read(context.Background(), &kvpb.ReadRequest{PartitionId: id, TableId: table, Linearizable: true,
			Scan: true, ScanStart: d.GetStart(), ScanEnd: d.GetEnd(), Clustering: true, NowMicros: 1_700_000_000_000_000})
	})
	if err != nil {
		n.t.Fatalf("read partition %d: %v", id, err)
	}
	if resp.GetMore() {
		n.t.Fatalf("read of partition %d did not fit one response", id)
	}
	out := map[string]string{}
	for _, row := range resp.GetRows() {
		k, err := storage.DecodeRowKey(row.GetKey())
		if err != nil {
			n.t.Fatalf("partition %d returned key %x: %v", id, row.GetKey(), err)
		}
		if _, dup := out[string(k.PK)]; dup {
			n.t.Fatalf("partition %d returned partition key %q twice", id, k.PK)
		}
		v, err := storage.DecodeRow(row.GetValue())
		if err != nil {
			n.t.Fatal(err)
		}
		out[string(k.PK)] = ""
		if c := v.Cell(1); c != nil {
			out[string(k.PK)] = string(c.Value)
		}
	}
	return out
}

func counterAdd(key string, d int64) *kvpb.Mutation {
	p, tok := pk(key)
	return &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: tok, Pk: p, Ck: ck(1), Timestamp: 1,
		Ops: []*kvpb.ColumnOp{{Column: 1, Kind: kvpb.ColumnOp_COUNTER_ADD, Value: binary.BigEndian.AppendUint64(nil, uint64(d))}}}
}

// TestAcknowledgedWritesSurviveCrash: writers add rows while the node
// crashes at random instants, keeping a random part of what it had not
// synced. Each write adds one row and increments a counter in the same
// command. After each restart every write acknowledged before the crash
// is there, nothing that was never attempted is, and the counter equals
// the number of rows: no command was applied twice (a raft replica
// re-applies its log tail after a crash, so the apply state must have been
// written atomically with the data) or half.
func TestAcknowledgedWritesSurviveCrash(t *testing.T) {
	for _, engine := range crashEngines {
		t.Run(engine, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 11))
			n := newCrashNode(t, engine)
			n.start()
			if _, err := n.store.Bootstrap(context.Background(), crashPart()); err != nil {
				t.Fatal(err)
			}
			var next atomic.Int64         // row indexes handed out
			required := map[string]bool{} // rows every later restart must show
			for round := range 4 {
				var mu sync.Mutex
				acked := map[string]bool{} // in this round
				stop := make(chan struct{})
				var wg sync.WaitGroup
				rep := n.replica(100)
				for range 4 {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							row := fmt.Sprintf("r%d", next.Add(1)-1)
							err := writeTo(rep, upsert(row, ck(1), 1, set(1, "v")), counterAdd("ctr", 1))
							select {
							case <-stop:
								return // the node is being stopped: no verdict
							default:
							}
							if err != nil {
								t.Errorf("write %s: %v", row, err)
								return
							}
							mu.Lock()
							acked[row] = true
							mu.Unlock()
						}
					})
				}
				// Let this round's writers get some writes through.
				for deadline := time.Now().Add(crashTimeout); ; waitBriefly() {
					mu.Lock()
					k := len(acked)
					mu.Unlock()
					if k >= 30 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("round %d: only %d writes acknowledged", round, k)
					}
				}
				// The crash instant: what was acknowledged before it must
				// survive; what comes after goes to a disk that is gone.
				mu.Lock()
				for row := range acked {
					required[row] = true
				}
				mu.Unlock()
				keep := 0 // the strictest disk first
				if round > 0 {
					keep = rng.IntN(101)
				}
				disk := n.crashClone(keep, rng)
				close(stop)
				wg.Wait()
				n.restart(disk)
				rows := n.rows(100)
				ctr, ok := rows["ctr"]
				delete(rows, "ctr")
				if !ok || len(ctr) != 8 {
					t.Fatalf("round %d (kept %d%% of unsynced data): counter %x", round, keep, ctr)
				}
				if c := int64(binary.BigEndian.Uint64([]byte(ctr))); c != int64(len(rows)) {
					t.Fatalf("round %d (kept %d%%): counter %d but %d rows: a command was applied twice or in part", round, keep, c, len(rows))
				}
				for k := range required {
					if _, ok := rows[k]; !ok {
						t.Fatalf("round %d (kept %d%%): acknowledged row %s lost", round, keep, k)
					}
				}
				for k := range rows {
					var i int64
					if _, err := fmt.Sscanf(k, "r%d", &i); err != nil || i >= next.Load() {
						t.Fatalf("round %d: row %q was never written", round, k)
					}
					// A linearizable read saw it: it is committed and must
					// survive the next crashes too.
					required[k] = true
				}
				t.Logf("round %d: kept %d%% of unsynced data; %d rows, %d writes attempted", round, keep, len(rows), next.Load())
			}
		})
	}
}

// TestStorageErrorsFailWrites: the disk starts failing the WAL's writes or
// syncs (EIO, ENOSPC) under a partition. The write in flight fails with an
// error instead of being acknowledged, and nothing panics; the store
// reports itself failed and the replica stops, so later writes and even
// reads fail rather than serve state the disk may not hold. Restarted on
// what the disk had synced (the disk replaced or space freed), the node
// has every acknowledged row and none of the failed writes, its stats
// agree with its rows, and it takes writes again.
func TestStorageErrorsFailWrites(t *testing.T) {
	writeOp := func(k errorfs.OpKind) bool { return k == errorfs.OpFileWrite || k == errorfs.OpFileWriteAt }
	syncOp := func(k errorfs.OpKind) bool {
		return k == errorfs.OpFileSync || k == errorfs.OpFileSyncData || k == errorfs.OpFileSyncTo
	}
	for _, engine := range crashEngines {
		for _, fault := range []struct {
			name  string
			op    func(errorfs.OpKind) bool
			errno syscall.Errno
		}{
			{"write-EIO", writeOp, syscall.EIO},
			{"write-ENOSPC", writeOp, syscall.ENOSPC},
			{"sync-EIO", syncOp, syscall.EIO},
		} {
			t.Run(engine+"/"+fault.name, func(t *testing.T) {
				var failing atomic.Bool
				n := newCrashNode(t, engine)
				// Only the WAL fails: it is where a write becomes durable,
				// and a failing MANIFEST or flush would stop Pebble's
				// background goroutines, which crash the process by design.
				n.wrap = func(fs vfs.FS) vfs.FS {
					return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
						if failing.Load() && fault.op(op.Kind) && strings.HasSuffix(op.Path, ".log") {
							return &os.PathError{Op: "inject", Path: op.Path, Err: fault.errno}
						}
						return nil
					}))
				}
				n.start()
				if _, err := n.store.Bootstrap(context.Background(), crashPart()); err != nil {
					t.Fatal(err)
				}
				row := func(i int) *kvpb.Mutation { return upsert(fmt.Sprintf("r%d", i), ck(1), 1, set(1, "v")) }
				for i := range 10 {
					if err := n.write(100, row(i)); err != nil {
						t.Fatalf("write r%d: %v", i, err)
					}
				}
				rep := n.replica(100)
				failing.Store(true)
				if err := n.write(100, row(10)); err == nil {
					t.Fatal("a write was acknowledged on a disk that fails it")
				}
				if n.eng.Err() == nil {
					t.Fatal("the store does not report the failed write (Engine.Err)")
				}
				for deadline := time.Now().Add(crashTimeout); rep.Group().Status().Err == nil; waitBriefly() {
					if time.Now().After(deadline) {
						t.Fatal("the replica still runs on a store that failed a write")
					}
				}
				if err := n.write(100, row(11)); err == nil {
					t.Fatal("a write was acknowledged by a replica stopped on a disk failure")
				}
				if _, err := rep.Read(context.Background(), &kvpb.ReadRequest{PartitionId: 100, TableId: table, Scan: true,
					ScanStart: math.MinInt64, ScanEnd: math.MaxInt64, Clustering: true}); err == nil {
					t.Fatal("a replica stopped on a disk failure served a read")
				}
				disk := n.crashClone(0, nil)
				failing.Store(false)
				n.restart(disk)
				rows := n.rows(100)
				for i := range 10 {
					if _, ok := rows[fmt.Sprintf("r%d", i)]; !ok {
						t.Errorf("acknowledged row r%d lost", i)
					}
				}
				// Their WAL records never reached the disk's synced state.
				for _, k := range []string{"r10", "r11"} {
					if _, ok := rows[k]; ok {
						t.Errorf("failed write %s is on the disk", k)
					}
				}
				if tot, err := SumStats(n.eng, n.replica(100).Descriptor()); err != nil || tot.Rows != int64(len(rows)) {
					t.Errorf("stats count %d rows (err %v), the partition holds %d", tot.Rows, err, len(rows))
				}
				if err := n.write(100, row(12)); err != nil {
					t.Fatalf("write after restart: %v", err)
				}
				if _, ok := n.rows(100)["r12"]; !ok {
					t.Fatal("write after restart not read back")
				}
				if err := n.eng.Err(); err != nil {
					t.Fatalf("restarted store reports %v", err)
				}
			})
		}
	}
}
