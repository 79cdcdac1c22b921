package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/storage"
	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

// Fuzz targets of what a partition replica takes from other nodes: the
// commands of its log (any process that reaches the internode port can
// have a WriteRequest proposed: router.Server hands it to Replica.Write,
// which proposes it unchanged) and ReadRequests, whose resume points,
// slices and limits come from the coordinator. Both run against one store
// per fuzz process holding realistic data of the partition under test and
// of its neighbours (the same table outside its range, the tables before
// and after it), without consensus: Apply and Read are what a replica runs.

const (
	fuzzPart  = 100
	fuzzTable = 7
)

// fuzzDesc is the partition under test: the middle half of the ring of
// table 7, so that tokens on both sides belong to others.
var fuzzDesc = &kvpb.Descriptor{Id: fuzzPart, TableId: fuzzTable, Start: -1 << 62, End: 1 << 62,
	Replicas: []*kvpb.ReplicaDescriptor{{NodeId: 1, ReplicaId: 1}}, NextReplicaId: 2}

// fuzzKey is one logical partition of the fuzz data.
type fuzzKey struct {
	pk    []byte
	token int64
}

func fuzzPK(i int) fuzzKey {
	pk := []byte(fmt.Sprintf("user%02d", i))
	return fuzzKey{pk, ring.Token(pk)}
}

func intCK(v int32) []byte {
	k, err := cqltype.AppendKey(nil, cqltype.Scalar(cqltype.Int), binary.BigEndian.AppendUint32(nil, uint32(v)), false)
	if err != nil {
		panic(err)
	}
	return k
}

const fuzzNow = 1_700_000_000_000_000 // µs

// fuzzColumns are the columns the fuzz data and seeds use, with the CQL
// types collection operations name.
var fuzzColumns = []struct {
	id  uint32
	typ string
}{{1, "text"}, {2, "list<int>"}, {3, "set<text>"}, {4, "map<text, int>"}, {5, "int"}}

func cqlInt(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

// fuzzRow returns the upsert of one row of the fuzz data.
func fuzzRow(k fuzzKey, ck []byte, ts int64, i int) *kvpb.Mutation {
	return &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: k.token, Pk: k.pk, Ck: ck, Timestamp: ts, Marker: true,
		TimestampSource: kvpb.Mutation_STATEMENT, Ops: []*kvpb.ColumnOp{
			{Column: 1, Kind: kvpb.ColumnOp_SET, Value: []byte(fmt.Sprintf("value %d", i))},
			{Column: 2, Kind: kvpb.ColumnOp_SET, Value: cqltype.EncodeCollection([][]byte{cqlInt(int32(i)), cqlInt(7)})},
			{Column: 3, Kind: kvpb.ColumnOp_SET, Value: cqltype.EncodeCollection([][]byte{[]byte("a"), []byte("b")})},
			{Column: 4, Kind: kvpb.ColumnOp_SET, Value: cqltype.EncodeMap([][]byte{[]byte("k")}, [][]byte{cqlInt(int32(i))})},
			{Column: 5, Kind: kvpb.ColumnOp_SET, Value: cqlInt(int32(i))},
		}}
}

// fuzzStore returns, once per fuzz process, an in-memory store holding
// the fuzz data; callers must not write to it (they apply into batches
// they discard). rowMax is the size of the largest stored row, total the
// size of every stored key and value.
func fuzzStore(f *testing.F) (eng *storage.Engine, keys []fuzzKey, rowMax int, total uint64) {
	f.Helper()
	eng, err := storage.Open(storage.Config{FS: vfs.NewMem(), CacheBytes: 8 << 20, MemTableBytes: 4 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = eng.Close() })
	// The partition under test and its neighbours, each applying its own
	// writes as its replica would.
	descs := []*kvpb.Descriptor{
		fuzzDesc,
		{Id: 101, TableId: fuzzTable, Start: math.MinInt64, End: fuzzDesc.Start - 1},
		{Id: 102, TableId: fuzzTable, Start: fuzzDesc.End + 1, End: math.MaxInt64},
		{Id: 103, TableId: fuzzTable - 1, Start: math.MinInt64, End: math.MaxInt64},
		{Id: 104, TableId: fuzzTable + 1, Start: math.MinInt64, End: math.MaxInt64},
	}
	b := eng.NewBatch()
	defer b.Close()
	for _, d := range descs {
		sm, err := NewStateMachine(eng, d.Id, d, nil, nil)
		if err != nil {
			f.Fatal(err)
		}
		if err := sm.setDescriptor(b, d); err != nil {
			f.Fatal(err)
		}
		var muts []*kvpb.Mutation
		for i := range 24 {
			k := fuzzPK(i)
			if k.token < d.Start || k.token > d.End {
				continue
			}
			if d.Id == fuzzPart && len(keys) < 16 {
				keys = append(keys, k)
			}
			switch i % 4 {
			case 0: // no clustering columns: one row per partition
				muts = append(muts, fuzzRow(k, nil, fuzzNow+int64(i), i))
			default: // a static row and clustering rows, some deleted or expiring
				static := fuzzRow(k, nil, fuzzNow, i)
				static.Ops = static.Ops[:1]
				static.Marker = false
				muts = append(muts, static)
				for c := range int32(i % 5 * 3) {
					m := fuzzRow(k, intCK(c-3), fuzzNow+int64(c), int(c))
					if c%4 == 1 {
						m.Ttl = 1
					}
					muts = append(muts, m)
				}
				if i%4 == 3 {
					muts = append(muts, &kvpb.Mutation{Kind: kvpb.Mutation_DELETE_ROW, Token: k.token, Pk: k.pk, Ck: intCK(1), Timestamp: fuzzNow + 100, TimestampSource: kvpb.Mutation_STATEMENT})
				}
			}
		}
		cmd, err := proto.Marshal(&kvpb.Command{Cmd: &kvpb.Command_Write{Write: &kvpb.WriteRequest{PartitionId: d.Id, TableId: d.TableId, NowMicros: fuzzNow, Mutations: muts}}})
		if err != nil {
			f.Fatal(err)
		}
		res, err := sm.Apply(b, []consensus.Entry{{Type: consensus.EntryCommand, Index: 1, Data: cmd}})
		if err != nil || res[0].Err != nil {
			f.Fatalf("partition %d: writing the fuzz data: %v %v", d.Id, err, res[0].Err)
		}
	}
	if err := b.Commit(false); err != nil {
		f.Fatal(err)
	}
	it, err := eng.NewIter(everything)
	if err != nil {
		f.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		n := len(it.Key()) + len(it.Value())
		total += uint64(n)
		if it.Key()[0] == 0x02 {
			rowMax = max(rowMax, n)
		}
	}
	return eng, keys, rowMax, total
}

// everything is a span over every key of the store.
var everything = storage.Span{Start: []byte{0x00}, End: []byte{0xff}}

// applyOnce applies one command on a fresh state machine of the partition
// into a batch it returns (the caller discards it).
func applyOnce(t *testing.T, eng *storage.Engine, cmd []byte) (*storage.Batch, consensus.Result) {
	t.Helper()
	sm, err := NewStateMachine(eng, fuzzPart, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := eng.NewBatch()
	res, err := sm.Apply(b, []consensus.Entry{{Type: consensus.EntryCommand, Index: 2, Term: 1, Data: cmd}})
	if err != nil {
		// The replica would stop itself on this committed entry, and so
		// would every other replica: one forwarded request would take
		// the partition down.
		_ = b.Close()
		t.Fatalf("the command stopped the state machine: %v", err)
	}
	if len(res) != 1 {
		_ = b.Close()
		t.Fatalf("%d results for one entry", len(res))
	}
	return b, res[0]
}

// FuzzApplyCommand applies arbitrary commands (Command protos: writes with
// conditions, collection and counter operations, deletions, truncations,
// splits) as committed log entries: the state machine must never fail on
// one (only on storage errors, of which an in-memory store has none),
// must reject bad ones with a *partition.Error, must be deterministic
// (two replicas applying the same entry to the same state write the same
// bytes and return the same result), and must only ever write rows and
// stats that decode.
func FuzzApplyCommand(f *testing.F) {
	eng, _, _, _ := fuzzStore(f)
	f.Fuzz(func(t *testing.T, cmd []byte) {
		b1, r1 := applyOnce(t, eng, cmd)
		defer b1.Close()
		b2, r2 := applyOnce(t, eng, cmd)
		defer b2.Close()
		if r1.Err != nil {
			var pe *Error
			if !errors.As(r1.Err, &pe) {
				t.Fatalf("rejection %T %v is not a *partition.Error", r1.Err, r1.Err)
			}
		}
		if fmt.Sprint(r1.Err) != fmt.Sprint(r2.Err) {
			t.Fatalf("replicas disagree on the outcome: %v and %v", r1.Err, r2.Err)
		}
		m1, ok1 := r1.Value.(proto.Message)
		m2, ok2 := r2.Value.(proto.Message)
		if ok1 != ok2 || (ok1 && !proto.Equal(m1, m2)) || (!ok1 && !reflect.DeepEqual(r1.Value, r2.Value)) {
			t.Fatalf("replicas disagree on the result: %v and %v", r1.Value, r2.Value)
		}
		i1, err := b1.NewIter(everything)
		if err != nil {
			t.Fatal(err)
		}
		defer i1.Close()
		i2, err := b2.NewIter(everything)
		if err != nil {
			t.Fatal(err)
		}
		defer i2.Close()
		ok1, ok2 = i1.First(), i2.First()
		for ; ok1 && ok2; ok1, ok2 = i1.Next(), i2.Next() {
			if !bytes.Equal(i1.Key(), i2.Key()) || !bytes.Equal(i1.Value(), i2.Value()) {
				t.Fatalf("replicas wrote different state: %x=%x and %x=%x", i1.Key(), i1.Value(), i2.Key(), i2.Value())
			}
			switch i1.Key()[0] {
			case 0x02:
				if _, err := storage.DecodeRow(i1.Value()); err != nil {
					t.Fatalf("wrote an undecodable row %x: %v", i1.Key(), err)
				}
			case 0x03:
				if _, err := storage.DecodeStats(i1.Value()); err != nil {
					t.Fatalf("wrote undecodable stats %x: %v", i1.Key(), err)
				}
			}
		}
		if ok1 != ok2 {
			t.Fatal("replicas wrote different numbers of keys")
		}
	})
}

// FuzzRead serves arbitrary ReadRequests (proto bytes, as the router's
// server decodes them) from the partition: it must never panic, must
// answer a request outside the partition with a *partition.Error, and an
// answer must hold only live, decodable rows of the partition's own table
// and range — of the requested logical partitions for key reads, of the
// requested tokens for scans — within the request's row limits and its
// byte bound (which may be passed by the row that crosses it).
func FuzzRead(f *testing.F) {
	eng, _, rowMax, storeBytes := fuzzStore(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		req := &kvpb.ReadRequest{}
		if proto.Unmarshal(raw, req) != nil {
			return // gRPC's decoding, not ours
		}
		var resp *kvpb.ReadResponse
		var err error
		// What a read allocates is bounded by the request (an iterator
		// per slice of each key) and by the data it returns.
		fuzzcheck.Allocs(t, fuzzcheck.Bound(len(raw), 1024)+16*storeBytes, "Read", func() { resp, err = Read(eng, fuzzDesc, req) })
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *partition.Error", err, err)
			}
			return
		}
		maxBytes := req.GetMaxBytes()
		if maxBytes == 0 {
			maxBytes = DefaultMaxReadBytes
		}
		maxBytes = min(maxBytes, MaxReadBytesLimit)
		var total uint64
		counted := uint32(0)
		perPart := map[string]uint32{}
		for _, r := range resp.GetRows() {
			k, err := storage.DecodeRowKey(r.GetKey())
			if err != nil {
				t.Fatalf("returned a key that is not a row key: %x", r.GetKey())
			}
			if k.Table != fuzzTable || k.Token < fuzzDesc.Start || k.Token > fuzzDesc.End {
				t.Fatalf("returned row %x of table %d token %d, outside partition [%d, %d] of table %d",
					r.GetKey(), k.Table, k.Token, fuzzDesc.Start, fuzzDesc.End, fuzzTable)
			}
			if req.GetScan() {
				if k.Token < req.GetScanStart() || k.Token > req.GetScanEnd() {
					t.Fatalf("scan of [%d, %d] returned token %d", req.GetScanStart(), req.GetScanEnd(), k.Token)
				}
			} else {
				asked := false
				for _, pk := range req.GetKeys() {
					asked = asked || (pk.GetToken() == k.Token && bytes.Equal(pk.GetPk(), k.PK))
				}
				if !asked {
					t.Fatalf("key read returned partition %q (token %d), not requested", k.PK, k.Token)
				}
			}
			row, err := storage.DecodeRow(r.GetValue())
			if err != nil {
				t.Fatalf("returned an undecodable row %x: %v", r.GetKey(), err)
			}
			if _, live := row.Resolve(floorDiv(req.GetNowMicros(), 1_000_000), storage.NoTimestamp); !live {
				t.Fatalf("returned a dead row %x", r.GetKey())
			}
			total += uint64(len(r.GetKey()) + len(r.GetValue()))
			if len(k.CK) > 0 || !req.GetClustering() {
				counted++
				perPart[string(k.PK)]++
			}
		}
		// A response ends at the first row that reaches the bound; a
		// resumed partition's static row may come on top of it.
		if total > maxBytes+2*uint64(rowMax) {
			t.Fatalf("returned %d bytes, bound %d", total, maxBytes)
		}
		if l := req.GetLimit(); l > 0 && counted > l {
			t.Fatalf("returned %d rows, limit %d", counted, l)
		}
		if l := req.GetPerPartitionLimit(); l > 0 {
			for pk, n := range perPart {
				if n > l {
					t.Fatalf("returned %d rows of partition %q, per partition limit %d", n, pk, l)
				}
			}
		}
	})
}

// TestWriteFuzzSeeds writes the seed corpora of FuzzApplyCommand and
// FuzzRead: commands and requests as the executor builds them for the
// fuzz data.
func TestWriteFuzzSeeds(t *testing.T) {
	c := fuzzcheck.NewCorpus(t, "testdata/fuzz")
	var keys []fuzzKey
	for i := range 24 {
		if k := fuzzPK(i); k.token >= fuzzDesc.Start && k.token <= fuzzDesc.End {
			keys = append(keys, k)
		}
	}
	if len(keys) < 4 {
		t.Fatalf("only %d fuzz keys in the partition's range", len(keys))
	}
	k0, k1 := keys[0], keys[1]
	write := func(name string, req *kvpb.WriteRequest) {
		req.PartitionId, req.TableId = fuzzPart, fuzzTable
		if req.NowMicros == 0 {
			req.NowMicros = fuzzNow + 1_000_000
		}
		c.Add("FuzzApplyCommand", name, mustMarshal(t, &kvpb.Command{Cmd: &kvpb.Command_Write{Write: req}}))
	}
	op := func(col uint32, kind kvpb.ColumnOp_Kind, v []byte) *kvpb.ColumnOp {
		return &kvpb.ColumnOp{Column: col, Kind: kind, Value: v, Type: fuzzColumns[col-1].typ}
	}
	upsert := func(k fuzzKey, ck []byte, ops ...*kvpb.ColumnOp) *kvpb.Mutation {
		return &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: k.token, Pk: k.pk, Ck: ck, Ops: ops, TimestampSource: kvpb.Mutation_COORDINATOR, Timestamp: fuzzNow + 5000}
	}
	write("insert", &kvpb.WriteRequest{Mutations: []*kvpb.Mutation{fuzzRow(k0, intCK(50), fuzzNow+9000, 50)}})
	write("update-ttl", &kvpb.WriteRequest{Mutations: []*kvpb.Mutation{{Kind: kvpb.Mutation_UPSERT, Token: k1.token, Pk: k1.pk, Ck: intCK(0), Ttl: 3600,
		Timestamp: fuzzNow + 1, Ops: []*kvpb.ColumnOp{op(1, kvpb.ColumnOp_SET, []byte("x")), op(5, kvpb.ColumnOp_DELETE, nil)}}}})
	write("list-ops", &kvpb.WriteRequest{Mutations: []*kvpb.Mutation{upsert(k1, intCK(0),
		op(2, kvpb.ColumnOp_LIST_APPEND, cqltype.EncodeCollection([][]byte{cqlInt(9)})),
		op(2, kvpb.ColumnOp_LIST_PREPEND, cqltype.EncodeCollection([][]byte{cqlInt(-1)})),
		&kvpb.ColumnOp{Column: 2, Kind: kvpb.ColumnOp_LIST_SET_INDEX, Index: 1, Value: cqlInt(4), Type: "list<int>"},
		&kvpb.ColumnOp{Column: 2, Kind: kvpb.ColumnOp_LIST_DELETE_INDEX, Index: 0, Type: "list<int>"},
		op(2, kvpb.ColumnOp_LIST_REMOVE, cqltype.EncodeCollection([][]byte{cqlInt(7)})))}})
	write("set-map-ops", &kvpb.WriteRequest{Mutations: []*kvpb.Mutation{upsert(k1, intCK(0),
		op(3, kvpb.ColumnOp_SET_ADD, cqltype.EncodeCollection([][]byte{[]byte("z"), []byte("c")})),
		op(3, kvpb.ColumnOp_SET_REMOVE, cqltype.EncodeCollection([][]byte{[]byte("a")})),
		op(4, kvpb.ColumnOp_MAP_PUT, cqltype.EncodeMap([][]byte{[]byte("j")}, [][]byte{cqlInt(2)})),
		op(4, kvpb.ColumnOp_MAP_REMOVE, cqltype.EncodeCollection([][]byte{[]byte("k")})))}})
	write("counter", &kvpb.WriteRequest{Mutations: []*kvpb.Mutation{upsert(keys[2], nil,
		&kvpb.ColumnOp{Column: 6, Kind: kvpb.ColumnOp_COUNTER_ADD, Value: binary.BigEndian.AppendUint64(nil, 5), Type: "counter"})}})
	write("deletes", &kvpb.WriteRequest{Mutations: []*kvpb.Mutation{
		{Kind: kvpb.Mutation_DELETE_ROW, Token: k1.token, Pk: k1.pk, Ck: intCK(2), Timestamp: fuzzNow + 10},
		{Kind: kvpb.Mutation_DELETE_RANGE, Token: k1.token, Pk: k1.pk, Timestamp: fuzzNow + 10,
			RangeStart: &kvpb.Bound{Key: intCK(3), Inclusive: true}, RangeEnd: &kvpb.Bound{Key: intCK(6)}},
		{Kind: kvpb.Mutation_DELETE_PARTITION, Token: keys[3].token, Pk: keys[3].pk, Timestamp: fuzzNow + 10}}})
	write("lwt-not-exists", &kvpb.WriteRequest{
		Conditions: []*kvpb.Condition{{Kind: kvpb.Condition_NOT_EXISTS, Token: k0.token, Pk: k0.pk, Ck: intCK(99)}},
		Mutations:  []*kvpb.Mutation{fuzzRow(k0, intCK(99), 0, 99)}})
	write("lwt-columns", &kvpb.WriteRequest{
		Conditions: []*kvpb.Condition{{Kind: kvpb.Condition_COLUMNS, Token: k1.token, Pk: k1.pk, Ck: intCK(0), Columns: []*kvpb.ColumnCondition{
			{Column: 1, Type: "text", Op: kvpb.ColumnCondition_EQ, Values: [][]byte{[]byte("value 0")}},
			{Column: 5, Type: "int", Op: kvpb.ColumnCondition_IN, Values: [][]byte{cqlInt(0), nil}, NullValues: []bool{false, true}},
			{Column: 4, Type: "map<text, int>", Op: kvpb.ColumnCondition_GT, Values: [][]byte{cqlInt(-1)}, Element: []byte("k"), HasElement: true, ElementType: "text"},
		}, StaticColumns: []*kvpb.ColumnCondition{{Column: 1, Type: "text", Op: kvpb.ColumnCondition_NE, Values: [][]byte{[]byte("nope")}}}}},
		Mutations: []*kvpb.Mutation{upsert(k1, intCK(0), op(1, kvpb.ColumnOp_SET, []byte("won")))}})
	write("too-large", &kvpb.WriteRequest{MaxLogicalPartitionBytes: 10, Mutations: []*kvpb.Mutation{fuzzRow(k0, intCK(51), 0, 51)}})
	write("out-of-range", &kvpb.WriteRequest{Mutations: []*kvpb.Mutation{fuzzRow(fuzzKey{[]byte("x"), math.MaxInt64}, nil, 0, 1)}})
	write("truncate-flag", &kvpb.WriteRequest{Truncate: true})
	c.Add("FuzzApplyCommand", "truncate", mustMarshal(t, &kvpb.Command{Cmd: &kvpb.Command_Truncate{Truncate: &kvpb.TruncateCommand{Timestamp: fuzzNow}}}))
	left := proto.Clone(fuzzDesc).(*kvpb.Descriptor)
	right := proto.Clone(fuzzDesc).(*kvpb.Descriptor)
	left.End, right.Start, right.Id = 0, 1, 200
	c.Add("FuzzApplyCommand", "split", mustMarshal(t, &kvpb.Command{Cmd: &kvpb.Command_Split{Split: &kvpb.SplitCommand{Left: left, Right: right}}}))

	read := func(name string, req *kvpb.ReadRequest) {
		req.PartitionId, req.TableId = fuzzPart, fuzzTable
		if req.NowMicros == 0 {
			req.NowMicros = fuzzNow + 1_000_000
		}
		c.Add("FuzzRead", name, mustMarshal(t, req))
	}
	pk := func(k fuzzKey) *kvpb.PartitionKey { return &kvpb.PartitionKey{Token: k.token, Pk: k.pk} }
	read("keys", &kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{pk(k0), pk(k1)}, Clustering: true, Static: true})
	read("slices-reverse", &kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{pk(k1)}, Clustering: true, Reverse: true, Limit: 3,
		Slices: []*kvpb.Slice{{Start: &kvpb.Bound{Key: intCK(-2), Inclusive: true}, End: &kvpb.Bound{Key: intCK(1)}}, {Start: &kvpb.Bound{Key: intCK(4)}}}})
	read("resume-key", &kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{pk(k0), pk(k1)}, Clustering: true, Static: true, PerPartitionLimit: 2,
		ResumeAfter: storage.RowKey(fuzzTable, k1.token, k1.pk, intCK(0)), ResumePartitionRows: 1})
	read("scan", &kvpb.ReadRequest{Scan: true, ScanStart: fuzzDesc.Start, ScanEnd: fuzzDesc.End, Clustering: true, Static: true, MaxBytes: 300})
	read("scan-resume", &kvpb.ReadRequest{Scan: true, ScanStart: fuzzDesc.Start, ScanEnd: 0, Clustering: true, Limit: 5, PerPartitionLimit: 1,
		ResumeAfter: storage.RowKey(fuzzTable, k0.token, k0.pk, intCK(-3)), ResumePartitionRows: 1})
	read("scan-outside", &kvpb.ReadRequest{Scan: true, ScanStart: math.MinInt64, ScanEnd: math.MaxInt64})
	read("no-clustering", &kvpb.ReadRequest{Keys: []*kvpb.PartitionKey{pk(keys[2])}})
	// A resume point in the table before this partition's, which Read
	// refuses (it once answered with that table's static row).
	read("resume-outside-scan", &kvpb.ReadRequest{Scan: true, Clustering: true, Static: true, ResumeAfter: storage.RowKey(fuzzTable-1, k1.token, k1.pk, intCK(0))})
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
