package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Key layout of the node's single Pebble store. The first byte says who owns
// a key; see doc.go for the map from the reference design's paths.
//
//	0x00 0x01                     node identity (node id…)             daemon
//	0x01 group(8) 0x01 index(8)   raft log entry                       consensus engine
//	0x01 group(8) 0x02            raft hard state                      consensus engine
//	0x01 group(8) 0x03            engine apply state (applied index…)  consensus engine
//	0x01 group(8) 0x04…0x0f       reserved for the consensus engine
//	0x01 group(8) 0x10            replica state (partition descriptor) state machine
//	0x02 table(8) token(8) pk ck  one row (encoded cells)              replicated data
//	0x03 table(8) token(8) pk     one logical partition's stats        replicated data
//
// The node identity binds the store to the node id it was written under
// (<data_dir>/node-id holds the same id): a node whose store was lost must
// not come back under its old id with empty raft state, or it could vote
// twice in a term. The daemon owns its value.
//
// Integers are big-endian; tokens have their sign bit flipped, so byte order
// equals token order and one physical partition (a token range of a table)
// is one contiguous span of row keys and one of stats keys.
//
// This file is the only code that knows the offsets: elsewhere keys are
// built with the constructors below and taken apart with DecodeRowKey,
// DecodeStatsKey, RowPartitionPrefix, RaftLogIndex and LocalKeyGroup, so a
// change of layout is a change of this file alone.
const (
	prefixNode  byte = 0x00
	prefixLocal byte = 0x01
	prefixData  byte = 0x02
	prefixStats byte = 0x03

	nodeIdentity byte = 0x01

	localRaftLog       byte = 0x01
	localRaftHardState byte = 0x02
	localRaftApply     byte = 0x03
	localReplicaState  byte = 0x10
)

// MaxKeyComponentLen bounds one partition-key component, as in Cassandra.
const MaxKeyComponentLen = math.MaxUint16

// ErrBadKey reports a key that does not decode under this layout.
var ErrBadKey = errors.New("storage: malformed key")

// EncodeToken returns the token in byte-comparable form.
func EncodeToken(t int64) [8]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t)^(1<<63))
	return b
}

// DecodeToken is the inverse of EncodeToken.
func DecodeToken(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
}

func groupPrefix(group uint64, kind byte) []byte {
	k := make([]byte, 0, localKeyLen+8) // room for a raft log index
	k = append(k, prefixLocal)
	k = binary.BigEndian.AppendUint64(k, group)
	return append(k, kind)
}

// localKeyLen is the length of prefix|group|kind, the shortest group-local
// key (and the whole of every key but a raft log entry's).
const localKeyLen = 1 + 8 + 1

// LocalKeyGroup decodes the group of a group-local key (any key inside
// some GroupLocalSpan), for scans that walk the node's groups.
func LocalKeyGroup(key []byte) (uint64, error) {
	if len(key) < localKeyLen || key[0] != prefixLocal {
		return 0, fmt.Errorf("%w: not a group-local key: %x", ErrBadKey, key)
	}
	return binary.BigEndian.Uint64(key[1:9]), nil
}

// EngineLocalSpan covers every key the consensus engine owns for a group
// (raft log, hard state, apply state and the reserved kinds up to 0x0f) and
// none of the state machine's: deleting it resets the group's consensus
// state and keeps its replica state.
func EngineLocalSpan(group uint64) Span {
	return Span{Start: groupPrefix(group, localRaftLog), End: groupPrefix(group, localReplicaState)}
}

// GroupLocalSpan holds every node-local key of a group (raft state and
// replica state); deleting it forgets the group on this node.
func GroupLocalSpan(group uint64) Span {
	start := []byte{prefixLocal}
	start = binary.BigEndian.AppendUint64(start, group)
	end := []byte{prefixLocal}
	if group == math.MaxUint64 {
		end = []byte{prefixLocal + 1}
	} else {
		end = binary.BigEndian.AppendUint64(end, group+1)
	}
	return Span{Start: start, End: end}
}

// NodeIdentityKey holds the identity of the node the store belongs to.
func NodeIdentityKey() []byte { return []byte{prefixNode, nodeIdentity} }

// RaftLogKey is the key of the raft log entry at index.
func RaftLogKey(group, index uint64) []byte {
	return binary.BigEndian.AppendUint64(groupPrefix(group, localRaftLog), index)
}

// RaftLogSpan covers log entries with indexes in [lo, hi).
func RaftLogSpan(group, lo, hi uint64) Span {
	return Span{Start: RaftLogKey(group, lo), End: RaftLogKey(group, hi)}
}

// RaftLogIndex decodes the index from a RaftLogKey.
func RaftLogIndex(key []byte) (uint64, error) {
	if len(key) != localKeyLen+8 || key[0] != prefixLocal || key[localKeyLen-1] != localRaftLog {
		return 0, fmt.Errorf("%w: not a raft log key: %x", ErrBadKey, key)
	}
	return binary.BigEndian.Uint64(key[localKeyLen:]), nil
}

// RaftHardStateKey holds the group's raft hard state (term, vote, commit).
func RaftHardStateKey(group uint64) []byte { return groupPrefix(group, localRaftHardState) }

// RaftApplyStateKey holds the engine's apply state (applied index and what
// else the engine must persist atomically with applied data).
func RaftApplyStateKey(group uint64) []byte { return groupPrefix(group, localRaftApply) }

// RaftEngineKey returns a further engine-owned key of the group; kind must be
// in [0x04, 0x0f].
func RaftEngineKey(group uint64, kind byte) []byte {
	if kind < 0x04 || kind > 0x0f {
		panic(fmt.Sprintf("storage: engine key kind %#x outside the reserved range", kind))
	}
	return groupPrefix(group, kind)
}

// ReplicaStateKey holds the state machine's own state of a group (the
// partition descriptor), written in the same batch as applied data.
func ReplicaStateKey(group uint64) []byte { return groupPrefix(group, localReplicaState) }

// tablePrefix returns prefix|table.
func tablePrefix(prefix byte, table uint64) []byte {
	k := make([]byte, 0, 64)
	k = append(k, prefix)
	return binary.BigEndian.AppendUint64(k, table)
}

// appendTokenPK appends token and the length-prefixed partition key. The
// length prefix keeps partition keys prefix-free, so the clustering key that
// follows is unambiguous.
func appendTokenPK(k []byte, token int64, pk []byte) []byte {
	t := EncodeToken(token)
	k = append(k, t[:]...)
	k = binary.BigEndian.AppendUint32(k, uint32(len(pk)))
	return append(k, pk...)
}

// RowKey is the key of one row: pk is the serialized partition key (the
// bytes that hash to token), ck the order-preserving clustering key (empty
// for the static row and for tables without clustering columns).
func RowKey(table uint64, token int64, pk, ck []byte) []byte {
	k := appendTokenPK(tablePrefix(prefixData, table), token, pk)
	return append(k, ck...)
}

// PartitionRowsSpan covers every row of one logical partition.
func PartitionRowsSpan(table uint64, token int64, pk []byte) Span {
	start := appendTokenPK(tablePrefix(prefixData, table), token, pk)
	return Span{Start: start, End: PrefixEnd(start)}
}

// StatsKey is the key of a logical partition's stats.
func StatsKey(table uint64, token int64, pk []byte) []byte {
	return appendTokenPK(tablePrefix(prefixStats, table), token, pk)
}

// tokenSpan covers tokens [start, end] (inclusive) of table under prefix.
func tokenSpan(prefix byte, table uint64, start, end int64) Span {
	s := tablePrefix(prefix, table)
	st := EncodeToken(start)
	s = append(s, st[:]...)
	var e []byte
	if end == math.MaxInt64 {
		e = tablePrefix(prefix, table)
		e = PrefixEnd(e)
	} else {
		e = tablePrefix(prefix, table)
		et := EncodeToken(end + 1)
		e = append(e, et[:]...)
	}
	return Span{Start: s, End: e}
}

// RowsSpan covers the rows of tokens [start, end] (inclusive) of a table.
func RowsSpan(table uint64, start, end int64) Span { return tokenSpan(prefixData, table, start, end) }

// StatsSpan covers the stats of tokens [start, end] (inclusive) of a table.
func StatsSpan(table uint64, start, end int64) Span { return tokenSpan(prefixStats, table, start, end) }

// TableSpans returns every replicated key span of a table.
func TableSpans(table uint64) []Span {
	return []Span{
		RowsSpan(table, math.MinInt64, math.MaxInt64),
		StatsSpan(table, math.MinInt64, math.MaxInt64),
	}
}

// RowPartitionPrefix returns the part of a row key that names its logical
// partition, prefix|table|token|len(pk)|pk: the key of the partition's
// static row, and the Start of its PartitionRowsSpan. The rest of the key is
// the clustering key. The result aliases key. Readers that step from one
// logical partition to the next compare these prefixes, without knowing
// where in the key the partition key ends.
func RowPartitionPrefix(key []byte) ([]byte, error) {
	k, err := decodeDataKey(prefixData, key)
	if err != nil {
		return nil, err
	}
	return key[:len(key)-len(k.CK)], nil
}

// DataKey is a decoded row or stats key.
type DataKey struct {
	Table uint64
	Token int64
	PK    []byte
	CK    []byte // rows only
}

// DecodeRowKey splits a RowKey. The returned slices alias key.
func DecodeRowKey(key []byte) (DataKey, error) { return decodeDataKey(prefixData, key) }

// DecodeStatsKey splits a StatsKey. The returned slices alias key.
func DecodeStatsKey(key []byte) (DataKey, error) { return decodeDataKey(prefixStats, key) }

// dataKeyHeaderLen is the length of prefix|table|token|len(pk), the fixed
// part of a row or stats key before the partition key.
const dataKeyHeaderLen = 1 + 8 + 8 + 4

func decodeDataKey(prefix byte, key []byte) (DataKey, error) {
	if len(key) < dataKeyHeaderLen || key[0] != prefix {
		return DataKey{}, fmt.Errorf("%w: %x", ErrBadKey, key)
	}
	var k DataKey
	k.Table = binary.BigEndian.Uint64(key[1:9])
	k.Token = DecodeToken(key[9:17])
	n := binary.BigEndian.Uint32(key[17:dataKeyHeaderLen])
	rest := key[dataKeyHeaderLen:]
	if uint64(len(rest)) < uint64(n) {
		return DataKey{}, fmt.Errorf("%w: partition key length %d exceeds key %x", ErrBadKey, n, key)
	}
	k.PK = rest[:n]
	k.CK = rest[n:]
	if prefix == prefixStats && len(k.CK) != 0 {
		return DataKey{}, fmt.Errorf("%w: trailing bytes in stats key %x", ErrBadKey, key)
	}
	return k, nil
}

// PrefixEnd returns the smallest key greater than every key with prefix p.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
}

// ReplicaStateGroups lists the groups that have a replica state on this
// node, in id order. It seeks from group to group, so its cost does not
// depend on the size of their raft logs.
func ReplicaStateGroups(r Reader) ([]uint64, error) {
	it, err := r.NewIter(Span{Start: []byte{prefixLocal}, End: []byte{prefixLocal + 1}})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []uint64
	for valid := it.SeekGE(ReplicaStateKey(0)); valid; {
		k := it.Key()
		g, err := LocalKeyGroup(k)
		if err != nil {
			return nil, err
		}
		kind := k[localKeyLen-1]
		if kind < localReplicaState {
			// A key of g before its state key: jump to where it would be.
			valid = it.SeekGE(ReplicaStateKey(g))
			continue
		}
		if kind == localReplicaState && len(k) == localKeyLen {
			out = append(out, g)
		}
		if g == math.MaxUint64 {
			break
		}
		valid = it.SeekGE(ReplicaStateKey(g + 1))
	}
	return out, it.Error()
}
