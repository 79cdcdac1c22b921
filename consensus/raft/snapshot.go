package raft

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
	"github.com/cosmosd/cosmosd/storage"
)

// Snapshots. Raft's snapshot carries only metadata (index, term,
// configuration); the data is the state machine's key spans, read from a
// storage snapshot and streamed on a separate gRPC stream.
//
// Sending. When a Ready holds a MsgSnap, the group (on its scheduler
// goroutine, before it applies anything more) takes a storage snapshot and
// StateMachine.SnapshotMeta together, so data, metadata and the applied
// index agree; a goroutine then streams the spans in chunks, at most
// Config.MaxSnapshotSends at once, and reports the outcome to raft
// (ReportSnapshot). Log truncation keeps the entries after a snapshot in
// flight.
//
// Receiving. The receiver checks the header, writes each span's pairs into
// an SST file under Config.SnapshotDir, and only then hands the MsgSnap to
// raft. If raft accepts it (the Ready holds the snapshot), the group
// installs it: it persists an install record (SnapshotInstall) naming the
// staged files, ingests each span with IngestAndExcise (clearing spans
// without data), then atomically clears the log and writes the hard state
// and apply state, and deletes the record; finally StateMachine.Restore.
// Each span's ingest is atomic but the set is not, so a crash in between
// leaves the record, and StartGroup finishes the installation from it
// before the group runs (files already ingested are gone; Pebble removes
// ingested files).

// snapCapture is a snapshot to send: consistent state taken on the
// group's goroutine.
type snapCapture struct {
	g      *group
	to     uint64
	node   consensus.NodeID
	header *transportpb.SnapshotHeader
	snap   *storage.Snapshot
	spans  []storage.Span
	iter   *pebble.Iterator
}

func (c *snapCapture) close() {
	if c.iter != nil {
		_ = c.iter.Close()
		c.iter = nil
	}
	if c.snap != nil {
		_ = c.snap.Close()
		c.snap = nil
	}
}

// captureSnapshot prepares the send of MsgSnap m.
func (g *group) captureSnapshot(w *groupWork, m *pb.Message) {
	to := m.GetTo()
	node := g.nodes[consensus.ReplicaID(to)]
	fail := func(err error) {
		g.log.Warn("cannot send snapshot", "to", to, "err", err)
		g.reportSnapshot(to, false)
	}
	if node == 0 {
		fail(errors.New("node unknown"))
		return
	}
	snap := g.e.cfg.Storage.NewSnapshot()
	meta, spans, err := g.sm.SnapshotMeta()
	if err != nil {
		_ = snap.Close()
		fail(err)
		return
	}
	st := g.store.state
	msg := proto.Clone(m).(*pb.Message)
	msg.Snapshot = &pb.Snapshot{Metadata: &pb.SnapshotMetadata{
		Index:     proto.Uint64(st.appliedIndex),
		Term:      proto.Uint64(st.appliedTerm),
		ConfState: proto.Clone(st.confState).(*pb.ConfState),
	}}
	raw, err := proto.Marshal(msg)
	if err != nil {
		_ = snap.Close()
		fail(err)
		return
	}
	h := &transportpb.SnapshotHeader{
		FromNode: uint64(g.e.cfg.NodeID), ToNode: uint64(node), Group: uint64(g.id),
		FromReplica: uint64(g.replicaID), ToReplica: to, Message: raw,
		StateMachineMeta: meta, Members: membersToProto(st.members),
	}
	for _, s := range spans {
		h.Spans = append(h.Spans, &transportpb.Span{Start: s.Start, End: s.End})
	}
	g.snapSending[to] = st.appliedIndex
	w.snaps = append(w.snaps, &snapCapture{g: g, to: to, node: node, header: h, snap: snap, spans: spans})
	g.log.Info("sending snapshot", "to", to, "node", uint64(node), "index", st.appliedIndex)
}

// reportSnapshot queues the outcome of a snapshot send for raft.
func (g *group) reportSnapshot(to uint64, ok bool) {
	g.mu.Lock()
	if g.mu.stopped {
		g.mu.Unlock()
		return
	}
	g.mu.inbox.snapStatus = append(g.mu.inbox.snapStatus, snapStatus{replica: to, ok: ok})
	wake := !g.mu.queued
	g.mu.queued = true
	g.mu.Unlock()
	if wake {
		g.e.sched.enqueue(g)
	}
}

func (e *Engine) startSnapshotSend(c *snapCapture) {
	e.wg.Go(func() {
		defer c.close()
		ok := false
		defer func() { c.g.reportSnapshot(c.to, ok) }()
		select {
		case e.snapSends <- struct{}{}:
			defer func() { <-e.snapSends }()
		case <-e.ctx.Done():
			return
		}
		applied, err := e.transport.SendSnapshot(e.ctx, c.node, c.chunks(e.cfg.SnapshotChunkBytes))
		if err != nil {
			c.g.log.Warn("snapshot send failed", "to", c.to, "node", uint64(c.node), "err", err)
			return
		}
		ok = true
		e.snapsSent.Add(1)
		c.g.log.Info("snapshot sent", "to", c.to, "node", uint64(c.node), "installed", applied)
	})
}

// chunks returns the stream of c: the header, then each span's pairs in
// chunks of about chunkBytes (one span per chunk), the last marked done.
func (c *snapCapture) chunks(chunkBytes int) func() (*transportpb.SnapshotChunk, error) {
	sentHeader, finished := false, false
	span := 0
	return func() (*transportpb.SnapshotChunk, error) {
		switch {
		case !sentHeader:
			sentHeader = true
			return &transportpb.SnapshotChunk{Header: c.header}, nil
		case finished:
			return nil, io.EOF
		}
		for span < len(c.spans) {
			if c.iter == nil {
				it, err := c.snap.NewIter(c.spans[span])
				if err != nil {
					return nil, err
				}
				c.iter = it
				it.First()
			}
			chunk := &transportpb.SnapshotChunk{Span: uint32(span)}
			size := 0
			for ; c.iter.Valid() && size < chunkBytes; c.iter.Next() {
				v, err := c.iter.ValueAndErr()
				if err != nil {
					return nil, err
				}
				chunk.Kvs = append(chunk.Kvs, &transportpb.KeyValue{Key: bytes.Clone(c.iter.Key()), Value: bytes.Clone(v)})
				size += len(c.iter.Key()) + len(v)
			}
			if err := c.iter.Error(); err != nil {
				return nil, err
			}
			if !c.iter.Valid() {
				_ = c.iter.Close()
				c.iter = nil
				span++
			}
			if len(chunk.Kvs) > 0 {
				return chunk, nil
			}
		}
		finished = true
		return &transportpb.SnapshotChunk{Done: true}, nil
	}
}

// incomingSnapshot is a received snapshot staged on disk, waiting for the
// group to step it into raft.
type incomingSnapshot struct {
	msg     *pb.Message
	index   uint64
	meta    []byte
	spans   []storage.Span
	files   []string // per span; "" when the span had no data
	members []consensus.Replica
	dir     string
	done    chan snapResult
	// cleanup removes the staged files; committed is set once an install
	// record names them, after which they belong to the installation.
	cleanup   func()
	committed bool
}

type snapResult struct {
	applied bool
	err     error
}

// finish reports the outcome to the receiving stream; on anything but a
// successful installation the staged files are removed here.
func (s *incomingSnapshot) finish(applied bool, err error) {
	if !applied && !s.committed && s.cleanup != nil {
		s.cleanup()
	}
	select {
	case s.done <- snapResult{applied, err}:
	default:
	}
}

// HandleSnapshot implements Handler.
func (e *Engine) HandleSnapshot(ctx context.Context, from consensus.NodeID, next func() (*transportpb.SnapshotChunk, error)) (bool, error) {
	// Close waits for receivers, which write to the store.
	e.mu.RLock()
	if e.mu.closed {
		e.mu.RUnlock()
		return false, fmt.Errorf("raft: snapshot from node %d: engine closed: %w", from, consensus.ErrStopped)
	}
	e.wg.Add(1)
	e.mu.RUnlock()
	defer e.wg.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(e.ctx, cancel)
	defer stop()
	next = func(next func() (*transportpb.SnapshotChunk, error)) func() (*transportpb.SnapshotChunk, error) {
		return func() (*transportpb.SnapshotChunk, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return next()
		}
	}(next)
	first, err := next()
	if err != nil {
		return false, fmt.Errorf("raft: snapshot from node %d: %w", from, err)
	}
	in, g, err := e.checkSnapshotHeader(first.GetHeader())
	if err != nil {
		return false, fmt.Errorf("raft: snapshot from node %d: %w", from, err)
	}
	select {
	case e.snapRecvs <- struct{}{}:
		defer func() { <-e.snapRecvs }()
	default:
		return false, fmt.Errorf("raft: group %d: snapshot from node %d: too many snapshots being received", g.id, from)
	}
	in.cleanup = func() { _ = e.removeAll(in.dir) }
	if err := e.receiveSnapshot(in, g, first, next); err != nil {
		in.cleanup()
		return false, fmt.Errorf("raft: group %d: snapshot from node %d: %w", g.id, from, err)
	}
	g.mu.Lock()
	if g.mu.stopped {
		g.mu.Unlock()
		in.cleanup()
		return false, g.stoppedErr()
	}
	g.mu.inbox.snaps = append(g.mu.inbox.snaps, in)
	wake := !g.mu.queued
	g.mu.queued = true
	g.mu.Unlock()
	if wake {
		e.sched.enqueue(g)
	}
	select {
	case r := <-in.done:
		if r.applied {
			e.snapsRecv.Add(1)
		}
		return r.applied, r.err
	case <-ctx.Done():
		// The group owns the staged files now; it cleans them up.
		return false, ctx.Err()
	}
}

// checkSnapshotHeader validates a snapshot header against the local group.
func (e *Engine) checkSnapshotHeader(h *transportpb.SnapshotHeader) (*incomingSnapshot, *group, error) {
	if h == nil {
		return nil, nil, fmt.Errorf("%w: snapshot stream without header", ErrCorrupt)
	}
	if h.GetToNode() != uint64(e.cfg.NodeID) {
		return nil, nil, fmt.Errorf("%w: snapshot for node %d reached node %d", ErrCorrupt, h.GetToNode(), e.cfg.NodeID)
	}
	g := e.lookup(consensus.GroupID(h.GetGroup()))
	if g == nil {
		return nil, nil, fmt.Errorf("group %d: %w", h.GetGroup(), consensus.ErrGroupNotFound)
	}
	if uint64(g.replicaID) != h.GetToReplica() {
		return nil, nil, fmt.Errorf("group %d: snapshot for r%d, this node hosts r%d", g.id, h.GetToReplica(), g.replicaID)
	}
	m := &pb.Message{}
	if err := proto.Unmarshal(h.GetMessage(), m); err != nil {
		return nil, nil, fmt.Errorf("%w: snapshot message: %v", ErrCorrupt, err)
	}
	if err := validateSnapMessage(m, h.GetFromReplica(), h.GetToReplica()); err != nil {
		return nil, nil, err
	}
	members, err := membersFromProto(h.GetMembers())
	if err != nil {
		return nil, nil, err
	}
	spans := make([]storage.Span, len(h.GetSpans()))
	for i, s := range h.GetSpans() {
		if bytes.Compare(s.GetStart(), s.GetEnd()) >= 0 {
			return nil, nil, fmt.Errorf("%w: empty snapshot span %d", ErrCorrupt, i)
		}
		spans[i] = storage.Span{Start: s.GetStart(), End: s.GetEnd()}
	}
	in := &incomingSnapshot{
		msg:     m,
		index:   m.GetSnapshot().GetMetadata().GetIndex(),
		meta:    h.GetStateMachineMeta(),
		spans:   spans,
		files:   make([]string, len(spans)),
		members: members,
		done:    make(chan snapResult, 1),
	}
	return in, g, nil
}

// validateSnapMessage checks the MsgSnap of a snapshot header.
func validateSnapMessage(m *pb.Message, from, to uint64) error {
	if m.GetType() != pb.MsgSnap {
		return fmt.Errorf("%w: snapshot header carries %v", ErrCorrupt, m.GetType())
	}
	if err := validateMessage(m, from, to); err != nil {
		return err
	}
	md := m.GetSnapshot().GetMetadata()
	if md.GetIndex() == 0 || md.GetTerm() == 0 || md.GetTerm() > m.GetTerm() || len(m.GetSnapshot().GetData()) != 0 {
		return fmt.Errorf("%w: snapshot metadata index %d term %d", ErrCorrupt, md.GetIndex(), md.GetTerm())
	}
	cs := md.GetConfState()
	for _, set := range [][]uint64{cs.GetVoters(), cs.GetLearners(), cs.GetVotersOutgoing(), cs.GetLearnersNext()} {
		for _, id := range set {
			if id == 0 || etcdraft.IsLocalMsgTarget(id) {
				return fmt.Errorf("%w: snapshot configuration has replica %d", ErrCorrupt, id)
			}
		}
	}
	return nil
}

// receiveSnapshot stages the stream's pairs as one SST file per span.
func (e *Engine) receiveSnapshot(in *incomingSnapshot, g *group, first *transportpb.SnapshotChunk, next func() (*transportpb.SnapshotChunk, error)) error {
	fs := e.cfg.Storage.FS()
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	in.dir = fs.PathJoin(e.cfg.SnapshotDir, fmt.Sprintf("g%d-%d-%s", g.id, in.index, hex.EncodeToString(suffix[:])))
	if err := fs.MkdirAll(in.dir, 0o755); err != nil {
		return err
	}
	// The new directory's entry must be durable before an install record
	// names files in it (see completeInstall: a missing staged file means
	// "ingested before a crash").
	if err := syncDir(e, e.cfg.SnapshotDir); err != nil {
		return err
	}
	writers := make([]*storage.SSTWriter, len(in.spans))
	defer func() {
		for _, w := range writers {
			if w != nil {
				_ = w.Finish()
			}
		}
	}()
	cur := 0
	var last []byte
	chunk := first
	for {
		if len(chunk.GetKvs()) > 0 {
			s := int(chunk.GetSpan())
			if s >= len(in.spans) || s < cur {
				return fmt.Errorf("%w: snapshot chunk for span %d", ErrCorrupt, s)
			}
			if s != cur {
				cur, last = s, nil
			}
			if writers[s] == nil {
				w, err := e.cfg.Storage.NewSSTWriter(fs.PathJoin(in.dir, fmt.Sprintf("span%d.sst", s)))
				if err != nil {
					return err
				}
				writers[s] = w
			}
			for _, kv := range chunk.GetKvs() {
				if !in.spans[s].Contains(kv.GetKey()) || (last != nil && bytes.Compare(kv.GetKey(), last) <= 0) {
					return fmt.Errorf("%w: snapshot key %x out of order or outside span %d", ErrCorrupt, kv.GetKey(), s)
				}
				if err := writers[s].Set(kv.GetKey(), kv.GetValue()); err != nil {
					return err
				}
				last = kv.GetKey()
			}
		}
		if chunk.GetDone() {
			break
		}
		var err error
		if chunk, err = next(); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: snapshot stream ended before its last chunk", ErrCorrupt)
			}
			return err
		}
		if chunk.GetHeader() != nil {
			return fmt.Errorf("%w: second snapshot header", ErrCorrupt)
		}
	}
	for i, w := range writers {
		if w == nil {
			continue
		}
		writers[i] = nil
		if err := w.Finish(); err != nil {
			return err
		}
		in.files[i] = w.Path()
	}
	// Each file was synced when finished; the directory's entries too.
	return syncDir(e, in.dir)
}

func syncDir(e *Engine, dir string) error {
	d, err := e.cfg.Storage.FS().OpenDir(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

// dropIgnoredSnapshot answers an incoming snapshot raft did not take.
func (g *group) dropIgnoredSnapshot() {
	if g.inSnap != nil {
		g.inSnap.finish(false, nil)
		g.inSnap = nil
	}
}

// installSnapshot installs the snapshot of rd, which raft accepted from
// g.inSnap, before anything else of the Ready is persisted.
func (g *group) installSnapshot(rd etcdraft.Ready) error {
	in := g.inSnap
	md := rd.Snapshot.GetMetadata()
	if in == nil || in.index != md.GetIndex() {
		return fmt.Errorf("raft produced snapshot %d that was not received", md.GetIndex())
	}
	g.inSnap = nil
	local, err := g.sm.SnapshotSpans(in.meta)
	if err != nil {
		in.finish(false, err)
		return fmt.Errorf("snapshot spans: %w", err)
	}
	m := &transportpb.SnapshotInstall{StateMachineMeta: in.meta, Members: membersToProto(in.members), ReplicaId: uint64(g.replicaID)}
	if m.Metadata, err = proto.Marshal(md); err != nil {
		return err
	}
	used := make([]bool, len(in.spans))
	for _, ls := range local {
		staged := &transportpb.StagedSpan{Span: &transportpb.Span{Start: ls.Start, End: ls.End}}
		for i, s := range in.spans {
			if bytes.Equal(s.Start, ls.Start) && bytes.Equal(s.End, ls.End) {
				staged.Path, used[i] = in.files[i], true
			}
		}
		m.Spans = append(m.Spans, staged)
	}
	for i, u := range used {
		if !u && in.files[i] != "" {
			// Data the state machine here does not cover: installing part
			// of a snapshot would lose it. Both sides must agree on spans.
			err := fmt.Errorf("snapshot span %v is not a span of the local state machine", in.spans[i])
			in.finish(false, err)
			return err
		}
	}
	raw, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	b := g.e.cfg.Storage.NewWriteBatch()
	if err := b.Set(installKey(uint64(g.id)), raw); err != nil {
		_ = b.Close()
		return err
	}
	if err := b.Commit(true); err != nil {
		_ = b.Close()
		return err
	}
	_ = b.Close()
	in.committed = true
	st, hs, err := g.e.completeInstall(uint64(g.id), m, g.sm)
	if err != nil {
		in.finish(false, err)
		return err
	}
	_ = g.e.removeAll(in.dir)
	g.store.state = st
	g.store.installed(hs)
	for _, mb := range st.members {
		g.nodes[mb.ReplicaID] = mb.NodeID
	}
	g.members = membersFromConfState(st.confState, g.nodes)
	g.commit = max(g.commit, st.appliedIndex)
	for id, r := range g.proposals {
		if r.index != 0 && r.index <= st.appliedIndex {
			delete(g.proposals, id)
			r.finish(nil, fmt.Errorf("raft: group %d: snapshot at %d covers proposal at %d: %w", g.id, st.appliedIndex, r.index, consensus.ErrAmbiguous))
		}
	}
	g.log.Info("installed snapshot", "index", st.appliedIndex, "term", st.appliedTerm, "members", fmt.Sprint(g.members))
	in.finish(true, nil)
	return nil
}

func installKey(group uint64) []byte { return storage.RaftEngineKey(group, 0x04) }

func (e *Engine) loadInstall(group uint64) (*transportpb.SnapshotInstall, error) {
	raw, ok, err := e.cfg.Storage.Get(installKey(group))
	if err != nil || !ok {
		return nil, err
	}
	var m transportpb.SnapshotInstall
	if err := proto.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("raft: group %d: %w: snapshot install record: %v", group, ErrCorrupt, err)
	}
	return &m, nil
}

// completeInstall performs (or, after a crash, finishes) the installation
// described by m: it ingests the staged spans, then commits in one batch
// the cleared log, the hard and apply states, the state machine's own
// state (sm.Restore) and the removal of the install record. It is
// idempotent until that batch commits, and a crash before it leaves the
// record for StartGroup to finish from.
func (e *Engine) completeInstall(group uint64, m *transportpb.SnapshotInstall, sm consensus.StateMachine) (*applyState, *pb.HardState, error) {
	md := &pb.SnapshotMetadata{}
	if err := proto.Unmarshal(m.GetMetadata(), md); err != nil {
		return nil, nil, fmt.Errorf("%w: snapshot install metadata: %v", ErrCorrupt, err)
	}
	members, err := membersFromProto(m.GetMembers())
	if err != nil {
		return nil, nil, err
	}
	fs := e.cfg.Storage.FS()
	for i, s := range m.GetSpans() {
		if err := e.installSpan(fs, s); err != nil {
			return nil, nil, err
		}
		if k := e.cfg.TestingKnobs; k != nil && k.AfterSnapshotSpan != nil {
			if err := k.AfterSnapshotSpan(consensus.GroupID(group), i); err != nil {
				return nil, nil, err
			}
		}
	}
	hs := &pb.HardState{}
	if raw, ok, err := e.cfg.Storage.Get(storage.RaftHardStateKey(group)); err != nil {
		return nil, nil, err
	} else if ok {
		if err := proto.Unmarshal(raw, hs); err != nil {
			return nil, nil, fmt.Errorf("%w: hard state: %v", ErrCorrupt, err)
		}
	}
	if hs.GetTerm() < md.GetTerm() {
		// Never carry a vote into a term it was not cast in.
		hs.Term, hs.Vote = proto.Uint64(md.GetTerm()), proto.Uint64(0)
	}
	hs.Commit = proto.Uint64(max(hs.GetCommit(), md.GetIndex()))
	st := &applyState{
		replicaID:      consensus.ReplicaID(m.GetReplicaId()),
		appliedIndex:   md.GetIndex(),
		appliedTerm:    md.GetTerm(),
		truncatedIndex: md.GetIndex(),
		truncatedTerm:  md.GetTerm(),
		confState:      md.GetConfState(),
		members:        members,
	}
	if st.confState == nil {
		st.confState = &pb.ConfState{}
	}
	st.members = membersFromConfState(st.confState, nodeMap(members))
	b := e.cfg.Storage.NewWriteBatch()
	defer b.Close()
	if err := b.DeleteSpan(storage.RaftLogSpan(group, 0, ^uint64(0))); err != nil {
		return nil, nil, err
	}
	for _, kv := range []struct {
		key []byte
		msg proto.Message
	}{{storage.RaftHardStateKey(group), hs}} {
		v, err := proto.Marshal(kv.msg)
		if err != nil {
			return nil, nil, err
		}
		if err := b.Set(kv.key, v); err != nil {
			return nil, nil, err
		}
	}
	v, err := encodeApplyState(st)
	if err != nil {
		return nil, nil, err
	}
	if err := b.Set(storage.RaftApplyStateKey(group), v); err != nil {
		return nil, nil, err
	}
	if err := b.Delete(installKey(group)); err != nil {
		return nil, nil, err
	}
	if err := sm.Restore(b, m.GetStateMachineMeta(), st.appliedIndex); err != nil {
		return nil, nil, fmt.Errorf("restore state machine: %w", err)
	}
	if k := e.cfg.TestingKnobs; k != nil && k.BeforeInstallCommit != nil {
		if err := k.BeforeInstallCommit(consensus.GroupID(group)); err != nil {
			return nil, nil, err
		}
	}
	if err := b.Commit(true); err != nil {
		return nil, nil, err
	}
	if k := e.cfg.TestingKnobs; k != nil && k.AfterInstallCommit != nil {
		k.AfterInstallCommit(consensus.GroupID(group))
	}
	return st, hs, nil
}

// installSpan replaces one span's data with its staged file, or clears it.
func (e *Engine) installSpan(fs vfs.FS, s *transportpb.StagedSpan) error {
	span := storage.Span{Start: s.GetSpan().GetStart(), End: s.GetSpan().GetEnd()}
	if s.GetPath() == "" {
		return e.cfg.Storage.ClearSpan(span)
	}
	if _, err := fs.Stat(s.GetPath()); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // ingested before a crash; Pebble removed the file
		}
		return err
	}
	return e.cfg.Storage.Ingest(context.Background(), span, []string{s.GetPath()})
}

func (e *Engine) removeAll(dir string) error {
	if dir == "" {
		return nil
	}
	return e.cfg.Storage.FS().RemoveAll(dir)
}

// stagedGroup parses the group of a staging directory name.
func stagedGroup(name string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, "g")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseUint(num, 10, 64)
	return g, err == nil
}

// cleanSnapshotDir removes staging directories left by a previous process
// except those an interrupted installation still needs.
func (e *Engine) cleanSnapshotDir() error {
	fs := e.cfg.Storage.FS()
	// The staging directory must exist durably before any installation
	// names a file in it: an install record that survives a crash while
	// the directory entry does not would read as "already ingested".
	if err := fs.MkdirAll(e.cfg.SnapshotDir, 0o755); err != nil {
		return fmt.Errorf("raft: create %s: %w", e.cfg.SnapshotDir, err)
	}
	if err := syncDir(e, fs.PathDir(e.cfg.SnapshotDir)); err != nil {
		return fmt.Errorf("raft: sync the parent of %s: %w", e.cfg.SnapshotDir, err)
	}
	names, err := fs.List(e.cfg.SnapshotDir)
	if err != nil {
		return fmt.Errorf("raft: list %s: %w", e.cfg.SnapshotDir, err)
	}
	for _, name := range names {
		dir := fs.PathJoin(e.cfg.SnapshotDir, name)
		if g, ok := stagedGroup(name); ok {
			m, err := e.loadInstall(g)
			if err != nil {
				return err
			}
			if m != nil && slicesContainsDir(m, dir) {
				continue
			}
		}
		if err := fs.RemoveAll(dir); err != nil {
			return fmt.Errorf("raft: remove %s: %w", dir, err)
		}
	}
	return nil
}

func slicesContainsDir(m *transportpb.SnapshotInstall, dir string) bool {
	for _, s := range m.GetSpans() {
		if s.GetPath() != "" && strings.HasPrefix(s.GetPath(), dir+"/") {
			return true
		}
	}
	return false
}

// removeStaged removes the staging directories of a group.
func (e *Engine) removeStaged(group uint64) error {
	fs := e.cfg.Storage.FS()
	names, err := fs.List(e.cfg.SnapshotDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, name := range names {
		if g, ok := stagedGroup(name); ok && g == group {
			if err := fs.RemoveAll(fs.PathJoin(e.cfg.SnapshotDir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}
