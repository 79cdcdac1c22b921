package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

// TestWriteFuzzSeeds writes the seed corpora of the package's fuzz targets
// (testdata/fuzz) from keys, rows and stats as the store writes them.
func TestWriteFuzzSeeds(t *testing.T) {
	c := fuzzcheck.NewCorpus(t, "testdata/fuzz")
	for name, k := range map[string][]byte{
		"row":           RowKey(7, -42, []byte("theo"), []byte{0x03, 0x01}),
		"row-static":    RowKey(7, -42, []byte("theo"), nil),
		"row-min":       RowKey(1, -1<<63, nil, nil),
		"stats":         StatsKey(7, 1<<62, []byte{0, 4, 'a', 'b', 'c', 'd', 0}),
		"raft-log":      RaftLogKey(3, 17),
		"hard-state":    RaftHardStateKey(3),
		"replica":       ReplicaStateKey(9),
		"node-identity": NodeIdentityKey(),
	} {
		c.Add("FuzzDecodeKey", name, k)
	}
	c.Add("FuzzDecodeRow", "cells", AppendRow(nil, &Row{MarkerTS: 1, DeletedAt: NoTimestamp, Cells: []Cell{
		{Column: 1, Timestamp: 2, Value: []byte("abc")},
		{Column: 3, Timestamp: 1_700_000_000_000_000, TTL: 60, Expiry: 1_700_000_060, Value: []byte{0, 0, 0, 4}},
		{Column: 4, Timestamp: 5, Tombstone: true, Expiry: 1_700_000_000}}}))
	c.Add("FuzzDecodeRow", "deleted", AppendRow(nil, &Row{MarkerTS: NoTimestamp, DeletedAt: 5, DeletedLocal: 6}))
	c.Add("FuzzDecodeRow", "marker-ttl", AppendRow(nil, &Row{MarkerTS: 9, MarkerTTL: 30, MarkerExpiry: 1_700_000_030, DeletedAt: NoTimestamp}))
	c.Add("FuzzDecodeStats", "current", AppendStats(nil, PartitionStats{Bytes: 10, Rows: 2, DeletedAt: 5, DeletedLocal: 6, MaxTimestamp: 7}))
	c.Add("FuzzDecodeStats", "empty", AppendStats(nil, EmptyStats()))
	c.Add("FuzzDecodeStats", "old", oldStats(PartitionStats{Bytes: 10, Rows: 2, DeletedAt: NoTimestamp}))
}

// FuzzDecodeKey feeds arbitrary keys, as a store holds after corruption or
// an iterator positioned on another key family returns them, to the key
// decoders: they must never panic, must classify every failure as
// ErrBadKey, and what they accept must be exactly the key its components
// encode to (the layout has one spelling per key, which is what keeps a
// partition's rows one contiguous span).
func FuzzDecodeKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, key []byte) {
		check := func(what string, err error) bool {
			t.Helper()
			if err != nil && !errors.Is(err, ErrBadKey) {
				t.Fatalf("%s: error does not wrap ErrBadKey: %v", what, err)
			}
			return err == nil
		}
		k, rowErr := DecodeRowKey(key)
		if check("DecodeRowKey", rowErr) {
			if re := RowKey(k.Table, k.Token, k.PK, k.CK); !bytes.Equal(re, key) {
				t.Fatalf("DecodeRowKey(%x) = %+v, which encodes to %x", key, k, re)
			}
			if !PartitionRowsSpan(k.Table, k.Token, k.PK).Contains(key) || !RowsSpan(k.Table, k.Token, k.Token).Contains(key) {
				t.Fatalf("row key %x outside its partition's and token's spans", key)
			}
		}
		// RowPartitionPrefix accepts exactly the row keys, and cuts them
		// where their partition's span starts (the static row's key).
		prefix, err := RowPartitionPrefix(key)
		if check("RowPartitionPrefix", err) != (rowErr == nil) {
			t.Fatalf("RowPartitionPrefix(%x) error %v, DecodeRowKey error %v", key, err, rowErr)
		}
		if err == nil {
			if want := PartitionRowsSpan(k.Table, k.Token, k.PK).Start; !bytes.Equal(prefix, want) || !bytes.Equal(key[len(prefix):], k.CK) {
				t.Fatalf("RowPartitionPrefix(%x) = %x, want %x followed by the clustering key %x", key, prefix, want, k.CK)
			}
		}
		if g, err := LocalKeyGroup(key); check("LocalKeyGroup", err) {
			if !GroupLocalSpan(g).Contains(key) {
				t.Fatalf("LocalKeyGroup(%x) = %d, whose span %s does not hold the key", key, g, GroupLocalSpan(g))
			}
		}
		if k, err := DecodeStatsKey(key); check("DecodeStatsKey", err) {
			if re := StatsKey(k.Table, k.Token, k.PK); !bytes.Equal(re, key) || len(k.CK) != 0 {
				t.Fatalf("DecodeStatsKey(%x) = %+v, which encodes to %x", key, k, re)
			}
			if !StatsSpan(k.Table, k.Token, k.Token).Contains(key) {
				t.Fatalf("stats key %x outside its token's span", key)
			}
		}
		if i, err := RaftLogIndex(key); check("RaftLogIndex", err) {
			if re := RaftLogKey(binary.BigEndian.Uint64(key[1:9]), i); !bytes.Equal(re, key) {
				t.Fatalf("RaftLogIndex(%x) = %d, which with its group encodes to %x", key, i, re)
			}
		}
	})
}
