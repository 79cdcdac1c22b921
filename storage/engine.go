package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Config configures the node's storage engine.
type Config struct {
	// Dir is the directory of the Pebble store. Required unless FS is an
	// in-memory filesystem, where it may be empty.
	Dir string
	// FS is the filesystem; nil means the operating system's. Tests pass
	// vfs.NewMem() or an error-injecting FS.
	FS vfs.FS
	// CacheBytes is the block cache size in bytes. Default 128 MiB.
	CacheBytes int64
	// MemTableBytes is the memtable size in bytes. Default 64 MiB.
	MemTableBytes uint64
	// Logger receives state changes; nil discards.
	Logger *slog.Logger
}

// SetDefaults fills zero fields with their documented defaults.
func (c *Config) SetDefaults() {
	if c.CacheBytes == 0 {
		c.CacheBytes = 128 << 20
	}
	if c.MemTableBytes == 0 {
		c.MemTableBytes = 64 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every problem with c at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Dir == "" && c.FS == nil {
		errs = append(errs, errors.New("storage: dir is required"))
	}
	if c.CacheBytes < 0 {
		errs = append(errs, fmt.Errorf("storage: cache bytes %d is negative", c.CacheBytes))
	}
	return errors.Join(errs...)
}

// Span is the half-open key range [Start, End).
type Span struct {
	Start, End []byte
}

// Contains reports whether key is in s.
func (s Span) Contains(key []byte) bool {
	return string(key) >= string(s.Start) && string(key) < string(s.End)
}

func (s Span) String() string { return fmt.Sprintf("[%x, %x)", s.Start, s.End) }

// Reader reads keys. *Engine, *Batch and *Snapshot implement it.
type Reader interface {
	// Get returns a copy of the value of key, or ok=false if it is absent.
	Get(key []byte) (value []byte, ok bool, err error)
	// NewIter iterates the keys in span. The caller closes the iterator.
	NewIter(span Span) (*pebble.Iterator, error)
}

// Engine is the node's single Pebble store, shared by every replica and by
// the consensus engine (see keys.go for who owns which span). Safe for
// concurrent use.
type Engine struct {
	db     *pebble.DB
	fs     vfs.FS
	dir    string
	logger *slog.Logger

	closeOnce sync.Once
	closeErr  error
	// failed is the first write error of the store (a failed commit, sync,
	// clear or ingest, or a fatal error inside Pebble): after one, Pebble's
	// state on disk may lag what it serves from memory, so the node must
	// not carry on as if healthy.
	failed *failure
	// stalls counts Pebble's write stalls (too many memtables or L0
	// sublevels: compactions fall behind and every write waits).
	stalls *writeStalls
}

// failure holds a store's first write error; the Pebble logger shares it.
type failure struct{ p atomic.Pointer[error] }

func (f *failure) note(err error) error {
	if err != nil {
		// A copy, so that err itself does not escape: the call is on
		// every commit's path and must not allocate when nothing failed.
		first := err
		f.p.CompareAndSwap(nil, &first)
	}
	return err
}

func (f *failure) err() error {
	if p := f.p.Load(); p != nil {
		return *p
	}
	return nil
}

// FatalError is the value a goroutine panics with when Pebble reports an
// error it cannot continue past (its commit pipeline cannot write the
// WAL): the store is unusable until the process restarts. Writes made
// through Engine and Batch return it as an error instead (their goroutine
// is where Pebble panics); a Pebble background goroutine that meets it
// crashes the process, which is what a disk that fails writes calls for.
type FatalError struct{ Msg string }

func (e *FatalError) Error() string { return "storage: fatal: " + e.Msg }

// noteErr records the first write error.
func (e *Engine) noteErr(err error) error { return e.failed.note(err) }

// recoverFatal turns a *FatalError panic of a write made on the calling
// goroutine into the error *errp (Pebble panics through its logger when a
// commit cannot be written); other panics go on.
func recoverFatal(errp *error) {
	if p := recover(); p != nil {
		fe, ok := p.(*FatalError)
		if !ok {
			panic(p)
		}
		*errp = fe
	}
}

// Err returns the first write error the store hit, nil if none. A store
// that failed a write cannot be trusted to have persisted what it applied
// in memory (a WAL sync that fails leaves the batch visible); the node
// reports itself unhealthy so that it is restarted from what is durable.
func (e *Engine) Err() error { return e.failed.err() }

// Open opens (creating if needed) the store described by cfg.
func Open(cfg Config) (*Engine, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	failed := &failure{}
	cache := pebble.NewCache(cfg.CacheBytes)
	defer cache.Unref()
	stalls := &writeStalls{logger: cfg.Logger}
	opts := &pebble.Options{
		FS:                 cfg.FS,
		Cache:              cache,
		MemTableSize:       cfg.MemTableBytes,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             slogPebbleLogger{cfg.Logger, failed},
		EventListener:      &pebble.EventListener{WriteStallBegin: stalls.begin, WriteStallEnd: stalls.end},
	}
	db, err := pebble.Open(cfg.Dir, opts)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", cfg.Dir, err)
	}
	fs := cfg.FS
	if fs == nil {
		fs = vfs.Default
	}
	return &Engine{db: db, fs: fs, dir: cfg.Dir, logger: cfg.Logger, failed: failed, stalls: stalls}, nil
}

// Close closes the store. Safe to call twice.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() { e.closeErr = e.db.Close() })
	return e.closeErr
}

// Get implements Reader.
func (e *Engine) Get(key []byte) ([]byte, bool, error) { return get(e.db, key) }

// NewIter implements Reader.
func (e *Engine) NewIter(span Span) (*pebble.Iterator, error) {
	return e.db.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
}

// NewBatch returns an indexed batch: reads through it see its own writes, which
// lets a state machine apply several commands that touch one row in one batch.
func (e *Engine) NewBatch() *Batch { return &Batch{b: e.db.NewIndexedBatch(), e: e} }

// NewWriteBatch returns a write-only batch, cheaper than NewBatch, for writers
// that never read back what they wrote (raft log appends).
func (e *Engine) NewWriteBatch() *Batch { return &Batch{b: e.db.NewBatch(), e: e} }

// NewSnapshot returns a consistent point-in-time view. The caller closes it.
func (e *Engine) NewSnapshot() *Snapshot { return &Snapshot{s: e.db.NewSnapshot()} }

// ClearSpan deletes every key in span durably.
func (e *Engine) ClearSpan(span Span) (err error) {
	defer recoverFatal(&err)
	return e.noteErr(e.db.DeleteRange(span.Start, span.End, pebble.Sync))
}

// Ingest atomically replaces the contents of span with the keys of the given
// SST files, which must lie inside span (see NewSSTWriter). It is how a
// replica installs a snapshot without passing the data through the memtable.
func (e *Engine) Ingest(ctx context.Context, span Span, paths []string) (err error) {
	defer recoverFatal(&err)
	_, err = e.db.IngestAndExcise(ctx, paths, nil, nil, pebble.KeyRange{Start: span.Start, End: span.End})
	if err != nil {
		return e.noteErr(fmt.Errorf("storage: ingest %d files into %s: %w", len(paths), span, err))
	}
	return nil
}

// Flush flushes memtables to disk (for tests and benchmarks).
func (e *Engine) Flush() error { return e.db.Flush() }

// DiskUsage estimates the bytes on disk of keys in span.
func (e *Engine) DiskUsage(span Span) (uint64, error) {
	return e.db.EstimateDiskUsage(span.Start, span.End)
}

// Metrics returns Pebble's metrics of the store (compactions, memtables,
// levels, disk space), for the daemon's collector. It is cheap enough to
// call at every metrics scrape: Pebble copies counters under its mutex.
func (e *Engine) Metrics() *pebble.Metrics { return e.db.Metrics() }

// WriteStalls returns how many times Pebble stalled writes since the store
// opened and for how long in all (a stall in progress counts up to now).
func (e *Engine) WriteStalls() (count int64, total time.Duration) { return e.stalls.read(time.Now()) }

// writeStalls is the EventListener half that counts write stalls. Pebble
// calls begin and end in pairs, one stall at a time, from its commit path:
// they only take a mutex and log.
type writeStalls struct {
	logger *slog.Logger
	mu     sync.Mutex
	count  int64
	total  time.Duration
	since  time.Time // zero unless a stall is in progress
}

func (w *writeStalls) begin(info pebble.WriteStallBeginInfo) {
	w.mu.Lock()
	w.count++
	w.since = time.Now()
	w.mu.Unlock()
	w.logger.Warn("storage: writes stalled: compactions fall behind", "reason", info.Reason)
}

func (w *writeStalls) end() {
	w.mu.Lock()
	var d time.Duration
	if !w.since.IsZero() {
		d = time.Since(w.since)
		w.total += d
		w.since = time.Time{}
	}
	w.mu.Unlock()
	w.logger.Info("storage: writes resumed", "stalled", d)
}

func (w *writeStalls) read(now time.Time) (int64, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	total := w.total
	if !w.since.IsZero() {
		total += now.Sub(w.since)
	}
	return w.count, total
}

// FS returns the engine's filesystem, where SST files for ingestion are written.
func (e *Engine) FS() vfs.FS { return e.fs }

// Dir returns the store's directory.
func (e *Engine) Dir() string { return e.dir }

// SSTWriter builds an SST file for Ingest. Keys must be added in increasing
// order.
type SSTWriter struct {
	w    *sstable.Writer
	path string
}

// NewSSTWriter creates an SST file at path on the engine's filesystem.
func (e *Engine) NewSSTWriter(path string) (*SSTWriter, error) {
	f, err := e.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("storage: create sst %s: %w", path, err)
	}
	opts := sstable.WriterOptions{TableFormat: e.db.TableFormat()}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), opts)
	return &SSTWriter{w: w, path: path}, nil
}

// Set adds a key.
func (w *SSTWriter) Set(key, value []byte) error { return w.w.Set(key, value) }

// Finish closes the file; it is then ready for Ingest.
func (w *SSTWriter) Finish() error {
	if err := w.w.Close(); err != nil {
		return fmt.Errorf("storage: finish sst %s: %w", w.path, err)
	}
	return nil
}

// Path returns the file's path.
func (w *SSTWriter) Path() string { return w.path }

// Batch is an atomic set of writes. Not safe for concurrent use.
type Batch struct {
	b *pebble.Batch
	e *Engine
}

// Get implements Reader; it sees the batch's own writes (indexed batches only).
func (b *Batch) Get(key []byte) ([]byte, bool, error) { return get(b.b, key) }

// NewIter implements Reader (indexed batches only).
func (b *Batch) NewIter(span Span) (*pebble.Iterator, error) {
	return b.b.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
}

// Set writes key=value.
func (b *Batch) Set(key, value []byte) error { return b.b.Set(key, value, nil) }

// Delete deletes key.
func (b *Batch) Delete(key []byte) error { return b.b.Delete(key, nil) }

// DeleteSpan deletes every key in span.
func (b *Batch) DeleteSpan(span Span) error { return b.b.DeleteRange(span.Start, span.End, nil) }

// Empty reports whether the batch has no writes.
func (b *Batch) Empty() bool { return b.b.Empty() }

// Len is the size of the batch's encoding in bytes.
func (b *Batch) Len() int { return b.b.Len() }

// Commit applies the batch; with sync it returns after the write is
// durable. An error here (including a *FatalError: Pebble could not write
// its WAL) also marks the store failed (Engine.Err).
func (b *Batch) Commit(sync bool) (err error) {
	defer recoverFatal(&err)
	opts := pebble.NoSync
	if sync {
		opts = pebble.Sync
	}
	return b.e.noteErr(b.b.Commit(opts))
}

// PendingSync is a WAL sync that has been requested and may still be in
// progress: once Wait returns nil, the batch that requested it and every
// batch committed to the engine before it are durable (Pebble's WAL is one
// ordered log, so syncing it makes all earlier writes durable, whichever
// goroutine committed them).
type PendingSync struct {
	b *pebble.Batch
	e *Engine
}

// Wait waits until the sync is done and reports its error. Call it once.
func (p *PendingSync) Wait() (err error) {
	defer recoverFatal(&err)
	if err := p.e.noteErr(p.b.SyncWait()); err != nil {
		return err
	}
	return p.b.Close()
}

// CommitNoSyncWait commits the batch and requests a WAL sync without
// waiting for it: the batch's writes are visible when it returns, and
// durable (with everything committed before) once the PendingSync's Wait
// returns nil, which another goroutine may wait for, off the committing
// goroutine's path. Pebble groups the syncs that successive and concurrent
// callers request, so one per cycle costs one fsync at most. An empty
// batch still requests a sync. The PendingSync owns the batch from then
// on: do not Close it.
func (b *Batch) CommitNoSyncWait() (ps *PendingSync, err error) {
	defer recoverFatal(&err)
	if b.b.Empty() {
		// A LogData record: nothing for readers, but a WAL write to sync
		// (Pebble skips empty batches).
		_ = b.b.LogData(nil, nil)
	}
	if err := b.e.noteErr(b.e.db.ApplyNoSyncWait(b.b, pebble.Sync)); err != nil {
		_ = b.b.Close()
		return nil, err
	}
	return &PendingSync{b: b.b, e: b.e}, nil
}

// Append adds the writes of other (a batch of this engine, indexed or
// not, left unchanged) to b, after b's own.
func (b *Batch) Append(other *Batch) error { return b.b.Apply(other.b, nil) }

// Close releases the batch. A batch that is closed without Commit is dropped.
func (b *Batch) Close() error { return b.b.Close() }

// Snapshot is a consistent read-only view of the engine.
type Snapshot struct {
	s *pebble.Snapshot
}

// Get implements Reader.
func (s *Snapshot) Get(key []byte) ([]byte, bool, error) { return get(s.s, key) }

// NewIter implements Reader.
func (s *Snapshot) NewIter(span Span) (*pebble.Iterator, error) {
	return s.s.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
}

// Close releases the snapshot.
func (s *Snapshot) Close() error { return s.s.Close() }

type getter interface {
	Get(key []byte) ([]byte, io.Closer, error)
}

func get(g getter, key []byte) ([]byte, bool, error) {
	v, closer, err := g.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := make([]byte, len(v))
	copy(out, v)
	return out, true, closer.Close()
}

// slogPebbleLogger adapts slog to Pebble's logger. Pebble logs at info what
// we consider debug detail (compactions, flushes).
type slogPebbleLogger struct {
	l      *slog.Logger
	failed *failure
}

func (l slogPebbleLogger) Infof(format string, args ...any) {
	l.l.Debug("pebble", "msg", fmt.Sprintf(format, args...))
}
func (l slogPebbleLogger) Errorf(format string, args ...any) {
	l.l.Error("pebble", "msg", fmt.Sprintf(format, args...))
}
func (l slogPebbleLogger) Fatalf(format string, args ...any) {
	// Pebble calls Fatalf when it cannot continue (a WAL write failed, a
	// corruption): the store is marked failed and the calling goroutine
	// panics with *FatalError (see its doc for who recovers it).
	msg := fmt.Sprintf(format, args...)
	l.l.Error("pebble fatal", "msg", msg)
	err := &FatalError{Msg: msg}
	_ = l.failed.note(err)
	panic(err)
}
