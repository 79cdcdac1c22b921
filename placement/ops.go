package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cluster/metakv"
)

// Operation kinds.
const (
	KindMove      = "move"      // move one replica from a node to another
	KindRepair    = "repair"    // replace a dead node's replica
	KindSplit     = "split"     // split a partition
	KindRebalance = "rebalance" // a set of moves that evens out load
	KindDrain     = "drain"     // move every replica off a node
	// KindDecommission drains a node and records it as decommissioned.
	KindDecommission = "decommission"
	// KindMoveKey isolates one logical partition and moves it.
	KindMoveKey = "move-key"
)

// Operation states.
const (
	StatePending = "pending"
	StateRunning = "running"
	StateDone    = "done"
	StateFailed  = "failed"
)

// Step is one step of an operation, for progress display.
type Step struct {
	Name   string    `json:"name"`
	State  string    `json:"state"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at,omitzero"`
}

// Operation is a long action, persisted in etcd before it runs and after
// every step, so a new controller resumes it where the old one stopped.
// Execution is idempotent: each run observes the partition's actual state
// and does only what is still missing, so resuming after a crash at any
// point is safe.
type Operation struct {
	ID        uint64 `json:"id"`
	Kind      string `json:"kind"`
	State     string `json:"state"`
	Table     uint64 `json:"table,omitempty"`
	Partition uint64 `json:"partition,omitempty"`
	// Move and repair.
	From      uint64 `json:"from,omitempty"`
	To        uint64 `json:"to,omitempty"`
	ReplicaID uint64 `json:"replica_id,omitempty"`
	// Split. SplitBy says how to choose the token when none is given:
	// "bytes" (default: halve stored bytes; refused for a single logical
	// partition) or "throughput" (halve the load if known, else the bytes,
	// else the token range).
	SplitBy    string `json:"split_by,omitempty"`
	SplitToken *int64 `json:"split_token,omitempty"`
	RightID    uint64 `json:"right_id,omitempty"`
	// MoveKey: the token to isolate and the nodes that should hold it.
	Token   *int64   `json:"token,omitempty"`
	ToNodes []uint64 `json:"to_nodes,omitempty"`
	// Drain and rebalance: the node drained, and the moves they created.
	Node     uint64   `json:"node,omitempty"`
	Children []uint64 `json:"children,omitempty"`
	Parent   uint64   `json:"parent,omitempty"`

	Reason   string    `json:"reason,omitempty"`
	Steps    []Step    `json:"steps,omitempty"`
	Progress float64   `json:"progress"`
	Error    string    `json:"error,omitempty"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`

	// reportTo, when set, receives this operation's progress instead of
	// it: a move run inline by a parent operation is not persisted itself.
	reportTo *Operation
}

// Active reports whether the operation still has work to do.
func (o *Operation) Active() bool { return o.State == StatePending || o.State == StateRunning }

// step records a step's state (adding it when new).
func (o *Operation) step(name, state, detail string) {
	now := time.Now().UTC()
	for i := range o.Steps {
		if o.Steps[i].Name == name {
			o.Steps[i].State, o.Steps[i].Detail, o.Steps[i].At = state, detail, now
			return
		}
	}
	o.Steps = append(o.Steps, Step{Name: name, State: state, Detail: detail, At: now})
}

// hasStep reports whether the operation recorded a step of that name.
func (o *Operation) hasStep(name string) bool {
	for _, st := range o.Steps {
		if st.Name == name {
			return true
		}
	}
	return false
}

func (o *Operation) String() string {
	switch o.Kind {
	case KindMove, KindRepair:
		return fmt.Sprintf("%s %d: partition %d node %d -> node %d", o.Kind, o.ID, o.Partition, o.From, o.To)
	case KindSplit:
		return fmt.Sprintf("split %d: partition %d", o.ID, o.Partition)
	}
	return fmt.Sprintf("%s %d", o.Kind, o.ID)
}

// ErrNotController reports a write by a node that is no longer the
// controller (its election key is gone).
var ErrNotController = errors.New("placement: not the controller")

// opStore persists operations (cluster.Operations) as JSON. Writes from
// the controller are fenced by its election, so a deposed controller can
// never overwrite its successor's decisions.
type opStore struct {
	ops *cluster.Operations
}

// fence returns the conditions that hold while the writer leads.
type fence func() []metakv.Cond

// Errors of the operation store, matched with errors.Is.
var (
	// ErrNoOperation: no operation has the id.
	ErrNoOperation = errors.New("no such operation")
	// ErrCorruptOperation: a stored record does not decode.
	ErrCorruptOperation = errors.New("stored operation does not decode")
)

func decodeOperation(id uint64, raw []byte) (*Operation, error) {
	op := &Operation{}
	if err := json.Unmarshal(raw, op); err != nil {
		return nil, fmt.Errorf("operation %d: %w: %w", id, ErrCorruptOperation, err)
	}
	return op, nil
}

// get reads one operation as it is now, nil if it does not exist.
func (s *opStore) get(ctx context.Context, id uint64) (*Operation, error) {
	raw, ok, err := s.ops.Get(ctx, id)
	if err != nil || !ok {
		return nil, err
	}
	return decodeOperation(id, raw)
}

func (s *opStore) save(ctx context.Context, f fence, op *Operation) error {
	op.Updated = time.Now().UTC()
	raw, err := json.Marshal(op)
	if err != nil {
		return err
	}
	var cmps []metakv.Cond
	if f != nil {
		cmps = f()
	}
	ok, err := s.ops.Put(ctx, op.ID, raw, cmps...)
	if err != nil {
		return fmt.Errorf("save %s: %w", op, err)
	}
	if !ok {
		return fmt.Errorf("save %s: %w", op, ErrNotController)
	}
	return nil
}

// Submit persists a new pending operation for the controller to run (an
// operator's request through the admin API).
func Submit(ctx context.Context, ops *cluster.Operations, op *Operation) error {
	id, err := ops.NewID(ctx)
	if err != nil {
		return err
	}
	op.ID, op.State, op.Created = id, StatePending, time.Now().UTC()
	return (&opStore{ops: ops}).save(ctx, nil, op)
}

// ListOperations returns all operations, newest first. A record that does
// not decode does not hide the others: they are returned with an error
// that matches ErrCorruptOperation and names it, so the controller keeps
// working and an operator sees the rest. Any other error means nothing
// was read.
func ListOperations(ctx context.Context, ops *cluster.Operations) ([]*Operation, error) {
	raws, err := ops.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*Operation, 0, len(raws))
	var corrupt []error
	for id, raw := range raws {
		op, err := decodeOperation(id, raw)
		if err != nil {
			corrupt = append(corrupt, err)
			continue
		}
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, errors.Join(corrupt...)
}

// GetOperation returns one operation.
func GetOperation(ctx context.Context, ops *cluster.Operations, id uint64) (*Operation, error) {
	op, err := (&opStore{ops: ops}).get(ctx, id)
	if err != nil {
		return nil, err
	}
	if op == nil {
		return nil, fmt.Errorf("operation %d: %w", id, ErrNoOperation)
	}
	return op, nil
}
