package raft

import (
	"fmt"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/storage"
)

// logStore implements etcdraft.Storage for one group over the node's Pebble
// store, with an in-memory cache of recent entries.
//
// Ownership: only the goroutine currently processing the group (see
// scheduler.go) touches a logStore, so it needs no locking. Its in-memory
// view changes only after the batch that persists the change has been
// committed (logStore.appended, truncated, installed), which is what raft
// expects: entries handed out in a Ready are read back from Storage only
// after Advance.
type logStore struct {
	eng   *storage.Engine
	group uint64

	hardState *pb.HardState
	// state is the persisted apply state; conf state and applied index are
	// what Snapshot reports.
	state *applyState

	// The log holds entries (truncatedIndex, lastIndex]; when it is empty
	// lastIndex == truncatedIndex.
	lastIndex uint64
	lastTerm  uint64

	// cache holds entries (cacheFirst-1, lastIndex] (a suffix of the log)
	// for the common case of followers and application reading recent
	// entries without touching Pebble.
	cache      []*pb.Entry
	cacheBytes int
	maxCache   int
	maxBytes   int

	// logBytes estimates the encoded bytes of the log for the truncation
	// policy; it starts at 0 after a restart.
	logBytes uint64
}

var _ etcdraft.Storage = (*logStore)(nil)

// loadLogStore reads a group's raft state from the engine.
func loadLogStore(eng *storage.Engine, group uint64, st *applyState, maxCache, maxBytes int) (*logStore, error) {
	s := &logStore{eng: eng, group: group, state: st, maxCache: maxCache, maxBytes: maxBytes, hardState: &pb.HardState{}}
	raw, ok, err := eng.Get(storage.RaftHardStateKey(group))
	if err != nil {
		return nil, fmt.Errorf("load hard state: %w", err)
	}
	if ok {
		if err := proto.Unmarshal(raw, s.hardState); err != nil {
			return nil, fmt.Errorf("%w: hard state: %v", ErrCorrupt, err)
		}
	}
	s.lastIndex, s.lastTerm = st.truncatedIndex, st.truncatedTerm
	it, err := eng.NewIter(storage.RaftLogSpan(group, 0, ^uint64(0)))
	if err != nil {
		return nil, err
	}
	if it.Last() {
		idx, err := storage.RaftLogIndex(it.Key())
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		var e pb.Entry
		if err := proto.Unmarshal(it.Value(), &e); err != nil || e.GetIndex() != idx {
			_ = it.Close()
			return nil, fmt.Errorf("%w: log entry %d", ErrCorrupt, idx)
		}
		if idx > st.truncatedIndex {
			s.lastIndex, s.lastTerm = idx, e.GetTerm()
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	// Raft requires commit <= last index and applied <= commit; the first
	// holds by construction (hard state and entries are written in one
	// batch, before the apply batch), the second because the apply batch
	// is committed after the batch persisting the commit index.
	if s.hardState.GetCommit() < st.appliedIndex {
		s.hardState.Commit = proto.Uint64(st.appliedIndex)
	}
	if s.hardState.GetCommit() > s.lastIndex {
		return nil, fmt.Errorf("%w: commit %d beyond last index %d", ErrCorrupt, s.hardState.GetCommit(), s.lastIndex)
	}
	return s, nil
}

// InitialState implements etcdraft.Storage.
func (s *logStore) InitialState() (*pb.HardState, *pb.ConfState, error) {
	return proto.Clone(s.hardState).(*pb.HardState), proto.Clone(s.state.confState).(*pb.ConfState), nil
}

// firstIndex is the index of the first entry in the log (possibly absent
// when the log is empty).
func (s *logStore) firstIndex() uint64 { return s.state.truncatedIndex + 1 }

// FirstIndex implements etcdraft.Storage.
func (s *logStore) FirstIndex() (uint64, error) { return s.firstIndex(), nil }

// LastIndex implements etcdraft.Storage.
func (s *logStore) LastIndex() (uint64, error) { return s.lastIndex, nil }

func (s *logStore) cacheFirst() uint64 { return s.lastIndex + 1 - uint64(len(s.cache)) }

// Term implements etcdraft.Storage.
func (s *logStore) Term(i uint64) (uint64, error) {
	switch {
	case i == s.state.truncatedIndex:
		return s.state.truncatedTerm, nil
	case i < s.state.truncatedIndex:
		return 0, etcdraft.ErrCompacted
	case i > s.lastIndex:
		return 0, etcdraft.ErrUnavailable
	case i == s.lastIndex:
		return s.lastTerm, nil
	}
	if first := s.cacheFirst(); len(s.cache) > 0 && i >= first {
		return s.cache[i-first].GetTerm(), nil
	}
	raw, ok, err := s.eng.Get(storage.RaftLogKey(s.group, i))
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%w: log entry %d missing", ErrCorrupt, i)
	}
	var e pb.Entry
	if err := proto.Unmarshal(raw, &e); err != nil {
		return 0, fmt.Errorf("%w: log entry %d: %v", ErrCorrupt, i, err)
	}
	return e.GetTerm(), nil
}

// Entries implements etcdraft.Storage.
func (s *logStore) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	if lo <= s.state.truncatedIndex {
		return nil, etcdraft.ErrCompacted
	}
	if hi > s.lastIndex+1 || lo >= hi {
		return nil, etcdraft.ErrUnavailable
	}
	var out []*pb.Entry
	var size uint64
	// add appends e and reports whether more entries fit.
	add := func(e *pb.Entry) bool {
		size += uint64(proto.Size(e))
		if len(out) > 0 && size > maxSize {
			return false
		}
		out = append(out, e)
		return size <= maxSize
	}
	if first := s.cacheFirst(); len(s.cache) > 0 && lo >= first {
		for _, e := range s.cache[lo-first : hi-first] {
			if !add(e) {
				break
			}
		}
		return out, nil
	}
	it, err := s.eng.NewIter(storage.RaftLogSpan(s.group, lo, hi))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	next := lo
	for valid := it.First(); valid; valid = it.Next() {
		e := &pb.Entry{}
		if err := proto.Unmarshal(it.Value(), e); err != nil {
			return nil, fmt.Errorf("%w: log entry: %v", ErrCorrupt, err)
		}
		if e.GetIndex() != next {
			return nil, fmt.Errorf("%w: log entry %d where %d expected", ErrCorrupt, e.GetIndex(), next)
		}
		next++
		if !add(e) {
			break
		}
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, etcdraft.ErrUnavailable
	}
	return out, nil
}

// errSnapshotUnavailable is returned while the group has no applied state
// to send (raft then retries later).
var errSnapshotUnavailable = etcdraft.ErrSnapshotTemporarilyUnavailable

// Snapshot implements etcdraft.Storage. It describes the applied state; the
// data itself is read from a storage snapshot when the MsgSnap is sent (see
// snapshot.go), taken on the group's goroutine before anything else is
// applied, so index, configuration and data agree.
func (s *logStore) Snapshot() (*pb.Snapshot, error) {
	if s.state.appliedIndex == 0 {
		return nil, errSnapshotUnavailable
	}
	return &pb.Snapshot{Metadata: &pb.SnapshotMetadata{
		Index:     proto.Uint64(s.state.appliedIndex),
		Term:      proto.Uint64(s.state.appliedTerm),
		ConfState: proto.Clone(s.state.confState).(*pb.ConfState),
	}}, nil
}

// writeEntries adds entries (and the deletion of any conflicting suffix of
// the log) to b.
func (s *logStore) writeEntries(b *storage.Batch, ents []*pb.Entry) error {
	if len(ents) == 0 {
		return nil
	}
	for _, e := range ents {
		v, err := proto.Marshal(e)
		if err != nil {
			return err
		}
		if err := b.Set(storage.RaftLogKey(s.group, e.GetIndex()), v); err != nil {
			return err
		}
	}
	if last := ents[len(ents)-1].GetIndex(); last < s.lastIndex {
		// A new leader overwrote our uncommitted tail.
		return b.DeleteSpan(storage.RaftLogSpan(s.group, last+1, s.lastIndex+1))
	}
	return nil
}

// appended updates the in-memory view after a batch with ents committed.
func (s *logStore) appended(ents []*pb.Entry) {
	if len(ents) == 0 {
		return
	}
	first := ents[0].GetIndex()
	if len(s.cache) > 0 {
		keep := 0
		if cf := s.cacheFirst(); first > cf && first <= s.lastIndex+1 {
			keep = int(first - cf)
		}
		for _, e := range s.cache[keep:] {
			s.cacheBytes -= len(e.GetData())
		}
		clear(s.cache[keep:])
		s.cache = s.cache[:keep]
	}
	for _, e := range ents {
		s.logBytes += uint64(len(e.GetData())) + 16
		s.cacheBytes += len(e.GetData())
	}
	s.cache = append(s.cache, ents...)
	last := ents[len(ents)-1]
	s.lastIndex, s.lastTerm = last.GetIndex(), last.GetTerm()
	n := 0
	for len(s.cache)-n > 1 && (len(s.cache)-n > s.maxCache || s.cacheBytes > s.maxBytes) {
		s.cacheBytes -= len(s.cache[n].GetData())
		n++
	}
	if n > 0 {
		// Copy so the dropped prefix can be collected.
		s.cache = append([]*pb.Entry(nil), s.cache[n:]...)
	}
}

// setHardState updates the in-memory hard state.
func (s *logStore) setHardState(hs *pb.HardState) { s.hardState = hs }

// truncated updates the in-memory view after a batch that removed the log
// up to and including index committed. s.state has already been updated.
func (s *logStore) truncated(oldTruncated uint64) {
	idx := s.state.truncatedIndex
	if n := s.lastIndex - oldTruncated; n > 0 {
		removed := idx - oldTruncated
		s.logBytes -= s.logBytes * removed / n
	}
	if idx >= s.lastIndex {
		s.lastIndex, s.lastTerm = idx, s.state.truncatedTerm
		s.dropCache()
		s.logBytes = 0
		return
	}
	if first := s.cacheFirst(); len(s.cache) > 0 && idx >= first {
		for _, e := range s.cache[:idx+1-first] {
			s.cacheBytes -= len(e.GetData())
		}
		s.cache = s.cache[idx+1-first:]
	}
}

func (s *logStore) dropCache() {
	clear(s.cache)
	s.cache = s.cache[:0]
	s.cacheBytes = 0
}

// installed resets the in-memory view after a snapshot at index/term was
// installed and the log cleared.
func (s *logStore) installed(hs *pb.HardState) {
	s.hardState = hs
	s.lastIndex, s.lastTerm = s.state.truncatedIndex, s.state.truncatedTerm
	s.dropCache()
	s.logBytes = 0
}
