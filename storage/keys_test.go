package storage

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestTokenEncodingPreservesOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	toks := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}
	for i := 0; i < 1000; i++ {
		toks = append(toks, int64(r.Uint64()))
	}
	sort.Slice(toks, func(i, j int) bool { return toks[i] < toks[j] })
	for i := 1; i < len(toks); i++ {
		a, b := EncodeToken(toks[i-1]), EncodeToken(toks[i])
		if toks[i-1] < toks[i] && bytes.Compare(a[:], b[:]) >= 0 {
			t.Fatalf("token order broken: %d vs %d", toks[i-1], toks[i])
		}
		if DecodeToken(b[:]) != toks[i] {
			t.Fatalf("round trip of %d", toks[i])
		}
	}
}

func TestRowKeyRoundTripAndSpans(t *testing.T) {
	k := RowKey(7, -42, []byte("theo"), []byte{0x03, 0x01})
	d, err := DecodeRowKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if d.Table != 7 || d.Token != -42 || string(d.PK) != "theo" || !bytes.Equal(d.CK, []byte{0x03, 0x01}) {
		t.Fatalf("decoded %+v", d)
	}
	if !PartitionRowsSpan(7, -42, []byte("theo")).Contains(k) {
		t.Fatal("partition span misses its row")
	}
	if PartitionRowsSpan(7, -42, []byte("the")).Contains(k) {
		t.Fatal("a shorter partition key's span must not contain the row (length prefix)")
	}
	if !RowsSpan(7, -42, -42).Contains(k) || RowsSpan(7, -41, math.MaxInt64).Contains(k) || RowsSpan(8, math.MinInt64, math.MaxInt64).Contains(k) {
		t.Fatal("token spans wrong")
	}
	if !RowsSpan(7, math.MinInt64, math.MaxInt64).Contains(RowKey(7, math.MaxInt64, nil, nil)) {
		t.Fatal("full span misses the max token")
	}
	s, err := DecodeStatsKey(StatsKey(7, 5, []byte("k")))
	if err != nil || s.Token != 5 || string(s.PK) != "k" {
		t.Fatalf("stats key: %+v %v", s, err)
	}
	for _, bad := range [][]byte{nil, {0x02}, append(RowKey(1, 1, nil, nil)[:17], 0, 0, 0, 9)} {
		if _, err := DecodeRowKey(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("DecodeRowKey(%x) = %v, want ErrBadKey", bad, err)
		}
	}
}

func TestRowPartitionPrefix(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  []byte
		want []byte // nil: ErrBadKey
	}{
		{"clustering row", RowKey(7, -42, []byte("theo"), []byte{0x03, 0x01}), PartitionRowsSpan(7, -42, []byte("theo")).Start},
		{"static row", RowKey(7, -42, []byte("theo"), nil), RowKey(7, -42, []byte("theo"), nil)},
		{"empty partition key", RowKey(1, math.MinInt64, nil, []byte{0}), PartitionRowsSpan(1, math.MinInt64, nil).Start},
		// A partition key that looks like the start of a longer one must
		// still end where its length prefix says.
		{"pk prefix of another", RowKey(7, 5, []byte("the"), []byte("o")), PartitionRowsSpan(7, 5, []byte("the")).Start},
		{"empty", nil, nil},
		{"header only, truncated", RowKey(7, 5, nil, nil)[:dataKeyHeaderLen-1], nil},
		{"pk length past the end", append(RowKey(1, 1, nil, nil)[:17], 0, 0, 0, 9), nil},
		{"stats key", StatsKey(7, 5, []byte("k")), nil},
		{"raft key", RaftLogKey(7, 5), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RowPartitionPrefix(tc.key)
			if tc.want == nil {
				if !errors.Is(err, ErrBadKey) {
					t.Fatalf("RowPartitionPrefix(%x) = %x, %v; want ErrBadKey", tc.key, got, err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("RowPartitionPrefix(%x) = %x, %v; want %x", tc.key, got, err, tc.want)
			}
		})
	}
}

func TestLocalKeyGroupAndEngineSpan(t *testing.T) {
	for _, g := range []uint64{0, 9, math.MaxUint64} {
		engine := EngineLocalSpan(g)
		for _, k := range [][]byte{RaftLogKey(g, 0), RaftLogKey(g, math.MaxUint64), RaftHardStateKey(g), RaftApplyStateKey(g), RaftEngineKey(g, 0x04), RaftEngineKey(g, 0x0f)} {
			if got, err := LocalKeyGroup(k); err != nil || got != g {
				t.Errorf("LocalKeyGroup(%x) = %d, %v; want %d", k, got, err, g)
			}
			if !engine.Contains(k) {
				t.Errorf("engine span %s of group %d misses %x", engine, g, k)
			}
		}
		// The replica state is the state machine's: an engine that resets
		// its own state must not take the descriptor with it.
		if engine.Contains(ReplicaStateKey(g)) {
			t.Errorf("engine span of group %d holds the replica state", g)
		}
		if got, err := LocalKeyGroup(ReplicaStateKey(g)); err != nil || got != g {
			t.Errorf("LocalKeyGroup(replica state of %d) = %d, %v", g, got, err)
		}
	}
	if EngineLocalSpan(9).Contains(RaftHardStateKey(10)) || EngineLocalSpan(9).Contains(RaftLogKey(8, math.MaxUint64)) {
		t.Error("engine span holds a neighbour's key")
	}
	for _, bad := range [][]byte{nil, {prefixLocal}, RaftHardStateKey(3)[:localKeyLen-1], RowKey(1, 1, nil, nil), NodeIdentityKey()} {
		if _, err := LocalKeyGroup(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("LocalKeyGroup(%x) = %v, want ErrBadKey", bad, err)
		}
	}
}

func TestLocalKeys(t *testing.T) {
	span := GroupLocalSpan(9)
	for _, k := range [][]byte{RaftLogKey(9, 1), RaftLogKey(9, math.MaxUint64), RaftHardStateKey(9), RaftApplyStateKey(9), ReplicaStateKey(9), RaftEngineKey(9, 0x05)} {
		if !span.Contains(k) {
			t.Errorf("group span misses %x", k)
		}
		if GroupLocalSpan(10).Contains(k) || GroupLocalSpan(8).Contains(k) {
			t.Errorf("neighbour span contains %x", k)
		}
	}
	if idx, err := RaftLogIndex(RaftLogKey(9, 77)); err != nil || idx != 77 {
		t.Fatalf("RaftLogIndex = %d, %v", idx, err)
	}
}

func TestReplicaStateGroups(t *testing.T) {
	e, err := Open(Config{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	b := e.NewWriteBatch()
	for _, g := range []uint64{3, 1, 20} {
		for i := uint64(1); i <= 50; i++ {
			_ = b.Set(RaftLogKey(g, i), []byte("entry"))
		}
		_ = b.Set(RaftHardStateKey(g), []byte("hs"))
		_ = b.Set(ReplicaStateKey(g), []byte("desc"))
	}
	_ = b.Set(RaftHardStateKey(5), []byte("raft state but no replica state"))
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
	got, err := ReplicaStateGroups(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 20 {
		t.Fatalf("groups = %v, want [1 3 20]", got)
	}
}
