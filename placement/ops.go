package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosmosd/cosmosd/cluster"
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

// opStore persists operations under <prefix>ops/. Writes from the
// controller are fenced by its election key, so a deposed controller can
// never overwrite its successor's decisions.
type opStore struct {
	cli    *clientv3.Client
	prefix string
}

func (s *opStore) key(id uint64) string { return fmt.Sprintf("%sops/%020d", s.prefix, id) }

// fence is a comparison that holds while the writer leads.
type fence func() []clientv3.Cmp

// get reads one operation as it is now, nil if it does not exist.
func (s *opStore) get(ctx context.Context, id uint64) (*Operation, error) {
	resp, err := s.cli.Get(ctx, s.key(id))
	if err != nil {
		return nil, fmt.Errorf("read operation %d: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	op := &Operation{}
	if err := json.Unmarshal(resp.Kvs[0].Value, op); err != nil {
		return nil, fmt.Errorf("decode operation %d: %w", id, err)
	}
	return op, nil
}

func (s *opStore) save(ctx context.Context, f fence, op *Operation) error {
	op.Updated = time.Now().UTC()
	raw, err := json.Marshal(op)
	if err != nil {
		return err
	}
	var cmps []clientv3.Cmp
	if f != nil {
		cmps = f()
	}
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(clientv3.OpPut(s.key(op.ID), string(raw))).Commit()
	if err != nil {
		return fmt.Errorf("save %s: %w", op, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("save %s: %w", op, ErrNotController)
	}
	return nil
}

// Submit persists a new pending operation for the controller to run (an
// operator's request through the admin API).
func Submit(ctx context.Context, cli *clientv3.Client, prefix string, op *Operation) error {
	id, err := cluster.AllocateID(ctx, cli, prefix, "op", 1)
	if err != nil {
		return err
	}
	op.ID, op.State, op.Created = id, StatePending, time.Now().UTC()
	return (&opStore{cli: cli, prefix: prefix}).save(ctx, nil, op)
}

// List returns all operations, newest first.
func ListOperations(ctx context.Context, cli *clientv3.Client, prefix string) ([]*Operation, error) {
	resp, err := cli.Get(ctx, prefix+"ops/", clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list operations: %w", err)
	}
	var out []*Operation
	for _, kv := range resp.Kvs {
		op := &Operation{}
		if err := json.Unmarshal(kv.Value, op); err != nil {
			return nil, fmt.Errorf("operation %s: %w", strings.TrimPrefix(string(kv.Key), prefix), err)
		}
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

// GetOperation returns one operation.
func GetOperation(ctx context.Context, cli *clientv3.Client, prefix string, id uint64) (*Operation, error) {
	resp, err := cli.Get(ctx, (&opStore{prefix: prefix}).key(id))
	if err != nil {
		return nil, fmt.Errorf("get operation %d: %w", id, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("operation %d does not exist", id)
	}
	op := &Operation{}
	if err := json.Unmarshal(resp.Kvs[0].Value, op); err != nil {
		return nil, fmt.Errorf("operation %d: %w", id, err)
	}
	return op, nil
}
