package consensustest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/storage"
)

// Command opcodes.
const (
	opPut    byte = 'p'
	opCAS    byte = 'c'
	opGet    byte = 'g'
	opAppend byte = 'a'
)

// Deterministic rejections returned in consensus.Result.Err.
var (
	ErrCASMismatch = errors.New("consensustest: compare-and-set mismatch")
	ErrBadCommand  = errors.New("consensustest: malformed command")
)

// Put returns the command that sets key to value. Its result value is the
// log index that applied it (uint64).
func Put(key, value string) []byte { return encode(opPut, key, value) }

// Get returns the command that reads key through the log. Its result value
// is a GetResult.
func Get(key string) []byte { return encode(opGet, key) }

// CAS returns the command that sets key to value if its current value is
// old (found=false: if key is absent); otherwise the result's Err is
// ErrCASMismatch.
func CAS(key, old string, found bool, value string) []byte {
	f := "0"
	if found {
		f = "1"
	}
	return encode(opCAS, key, f, old, value)
}

// Append returns the command that appends value to the list stored at key
// (read it with KV.List). Its result value is the list length after it.
func Append(key, value string) []byte { return encode(opAppend, key, value) }

// GetResult is the result of Get.
type GetResult struct {
	Value string
	Found bool
}

func encode(op byte, fields ...string) []byte {
	b := []byte{op}
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

func decode(cmd []byte) (byte, []string, error) {
	if len(cmd) == 0 {
		return 0, nil, ErrBadCommand
	}
	op, rest := cmd[0], cmd[1:]
	var fields []string
	for len(rest) > 0 {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return 0, nil, ErrBadCommand
		}
		fields = append(fields, string(rest[k:k+int(n)]))
		rest = rest[k+int(n):]
	}
	want := map[byte]int{opPut: 2, opGet: 1, opCAS: 4, opAppend: 2}[op]
	if want == 0 || len(fields) != want {
		return 0, nil, ErrBadCommand
	}
	return op, fields, nil
}

// Applied is one entry as KV saw it.
type Applied struct {
	Index   uint64
	Type    consensus.EntryType
	Command string
	Members []consensus.Replica
}

// KV is the test state machine of one replica. Safe for concurrent use: the
// engine calls Apply/SnapshotMeta/SnapshotSpans/Restore from one goroutine
// at a time, tests read concurrently.
type KV struct {
	eng   *storage.Engine
	group consensus.GroupID

	// resumedAt is the applied index this incarnation loaded from disk.
	resumedAt uint64

	mu       sync.Mutex
	applied  uint64
	history  []Applied
	restores int
	err      error
}

var _ consensus.StateMachine = (*KV)(nil)

// NewKV returns the state machine of group on eng, resuming from the state
// a previous incarnation persisted.
func NewKV(eng *storage.Engine, group consensus.GroupID) (*KV, error) {
	kv := &KV{eng: eng, group: group}
	applied, err := kv.loadApplied()
	if err != nil {
		return nil, err
	}
	kv.applied, kv.resumedAt = applied, applied
	return kv, nil
}

// ResumedAt returns the applied index this state machine loaded from disk
// when it was created.
func (kv *KV) ResumedAt() uint64 { return kv.resumedAt }

func (kv *KV) stateKey() []byte { return storage.ReplicaStateKey(uint64(kv.group)) }

func (kv *KV) loadApplied() (uint64, error) {
	v, ok, err := kv.eng.Get(kv.stateKey())
	if err != nil || !ok {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("consensustest: group %d: corrupt state", kv.group)
	}
	return binary.BigEndian.Uint64(v), nil
}

// Key returns the storage key of a KV key of group.
func Key(group consensus.GroupID, key string) []byte {
	return storage.RowKey(uint64(group), 0, []byte(key), nil)
}

// Spans returns the spans KV of group uses.
func Spans(group consensus.GroupID) []storage.Span {
	sk := storage.ReplicaStateKey(uint64(group))
	return []storage.Span{
		storage.RowsSpan(uint64(group), math.MinInt64, math.MaxInt64),
		{Start: sk, End: storage.PrefixEnd(sk)},
	}
}

// Apply implements consensus.StateMachine.
func (kv *KV) Apply(b *storage.Batch, entries []consensus.Entry) ([]consensus.Result, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	results := make([]consensus.Result, len(entries))
	applied := kv.applied
	var hist []Applied
	for i, e := range entries {
		if e.Index != applied+1 {
			kv.err = fmt.Errorf("consensustest: group %d: entry %d applied after %d", kv.group, e.Index, applied)
			return nil, kv.err
		}
		applied = e.Index
		h := Applied{Index: e.Index, Type: e.Type}
		switch e.Type {
		case consensus.EntryMembership:
			h.Members = slices.Clone(e.Members)
		case consensus.EntryCommand:
			h.Command = string(e.Data)
			results[i] = kv.applyCommand(b, e)
		}
		hist = append(hist, h)
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], applied)
	if err := b.Set(kv.stateKey(), v[:]); err != nil {
		return nil, err
	}
	kv.applied = applied
	kv.history = append(kv.history, hist...)
	return results, nil
}

func (kv *KV) applyCommand(b *storage.Batch, e consensus.Entry) consensus.Result {
	op, f, err := decode(e.Data)
	if err != nil {
		return consensus.Result{Err: err}
	}
	key := Key(kv.group, f[0])
	if op == opPut {
		// Blind write: no read, like a CQL upsert.
		if err := b.Set(key, []byte(f[1])); err != nil {
			return consensus.Result{Err: err}
		}
		return consensus.Result{Value: e.Index}
	}
	cur, found, err := b.Get(key)
	if err != nil {
		return consensus.Result{Err: err}
	}
	switch op {
	case opGet:
		return consensus.Result{Value: GetResult{Value: string(cur), Found: found}}
	case opCAS:
		if found != (f[1] == "1") || (found && string(cur) != f[2]) {
			return consensus.Result{Err: ErrCASMismatch}
		}
		if err := b.Set(key, []byte(f[3])); err != nil {
			return consensus.Result{Err: err}
		}
		return consensus.Result{Value: e.Index}
	case opAppend:
		list := binary.AppendUvarint(cur, uint64(len(f[1])))
		list = append(list, f[1]...)
		if err := b.Set(key, list); err != nil {
			return consensus.Result{Err: err}
		}
		n, _ := decodeList(list)
		return consensus.Result{Value: len(n)}
	}
	return consensus.Result{Err: ErrBadCommand}
}

// DecodeList decodes the raw value of a key written by Append commands (as
// returned in GetResult.Value).
func DecodeList(raw string) ([]string, error) { return decodeList([]byte(raw)) }

func decodeList(b []byte) ([]string, error) {
	var out []string
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, ErrBadCommand
		}
		out = append(out, string(b[k:k+int(n)]))
		b = b[k+int(n):]
	}
	return out, nil
}

// SnapshotMeta implements consensus.StateMachine.
func (kv *KV) SnapshotMeta() ([]byte, []storage.Span, error) {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], kv.applied)
	return v[:], Spans(kv.group), nil
}

// SnapshotSpans implements consensus.StateMachine.
func (kv *KV) SnapshotSpans(meta []byte) ([]storage.Span, error) {
	if len(meta) != 8 {
		return nil, fmt.Errorf("consensustest: bad snapshot meta")
	}
	return Spans(kv.group), nil
}

// Restore implements consensus.StateMachine. The state key travels in the
// snapshot, so it must now hold index.
func (kv *KV) Restore(_ *storage.Batch, meta []byte, index uint64) error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	applied, err := kv.loadApplied()
	if err != nil {
		return err
	}
	if len(meta) != 8 || binary.BigEndian.Uint64(meta) != index || applied != index {
		kv.err = fmt.Errorf("consensustest: group %d: restore at %d: meta %x, stored applied %d", kv.group, index, meta, applied)
		return kv.err
	}
	kv.applied = index
	kv.restores++
	kv.history = append(kv.history, Applied{Index: index, Type: -1})
	return nil
}

// Read returns the committed value of key (a local read: linearizable only
// after Group.ReadIndex).
func (kv *KV) Read(key string) (string, bool, error) {
	v, ok, err := kv.eng.Get(Key(kv.group, key))
	return string(v), ok, err
}

// List returns the list stored at key by Append commands.
func (kv *KV) List(key string) ([]string, error) {
	v, _, err := kv.eng.Get(Key(kv.group, key))
	if err != nil {
		return nil, err
	}
	return decodeList(v)
}

// AppliedIndex returns the last applied index.
func (kv *KV) AppliedIndex() uint64 {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return kv.applied
}

// History returns the entries applied by this incarnation, and a marker
// entry (Type -1) for each snapshot restored.
func (kv *KV) History() []Applied {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return slices.Clone(kv.history)
}

// Restores returns how many snapshots this incarnation restored.
func (kv *KV) Restores() int {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return kv.restores
}

// Err returns the contract violation KV detected, if any.
func (kv *KV) Err() error {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return kv.err
}

// Clear deletes the state of group on eng (what a caller of
// Engine.DestroyGroup deletes besides the engine's state).
func Clear(eng *storage.Engine, group consensus.GroupID) error {
	for _, s := range Spans(group) {
		if err := eng.ClearSpan(s); err != nil {
			return err
		}
	}
	return nil
}
