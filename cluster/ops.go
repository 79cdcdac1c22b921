package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/cosmosd/cosmosd/cluster/metakv"
)

// Operations keeps the controller's operations (splits, moves, drains:
// records the placement package encodes) under ops/, and the controller's
// election. cluster stores them as opaque records; what they mean is
// placement's. Safe for concurrent use.
type Operations struct {
	kv metakv.Store
	k  keys
}

// NewOperations returns the operations kept in kv. Meta.Operations is the
// usual way to get them; this is for tools that have a store and no Meta.
func NewOperations(kv metakv.Store) *Operations { return &Operations{kv: kv} }

// Operations returns the operations kept in the metadata store.
func (m *Meta) Operations() *Operations { return NewOperations(m.kv) }

// NewID allocates an operation id.
func (o *Operations) NewID(ctx context.Context) (uint64, error) {
	return AllocateID(ctx, o.kv, "op", 1)
}

// Put writes operation id's record if every fence condition holds (none:
// unconditionally); it reports whether it wrote. A controller passes its
// election's fence, so a deposed controller can never overwrite its
// successor's decisions.
func (o *Operations) Put(ctx context.Context, id uint64, record []byte, fence ...metakv.Cond) (bool, error) {
	resp, err := o.kv.Txn(ctx, metakv.Txn{If: fence, Then: []metakv.Op{metakv.Put(o.k.op(id), record)}})
	if err != nil {
		return false, fmt.Errorf("write operation %d: %w", id, err)
	}
	return resp.Succeeded, nil
}

// Get returns operation id's record; ok is false when it does not exist.
func (o *Operations) Get(ctx context.Context, id uint64) (record []byte, ok bool, err error) {
	kv, ok, err := o.kv.Get(ctx, o.k.op(id))
	if err != nil {
		return nil, false, fmt.Errorf("read operation %d: %w", id, err)
	}
	return kv.Value, ok, nil
}

// List returns every operation's record by id. A key that does not name an
// id is reported as an error: nothing else lives under ops/.
func (o *Operations) List(ctx context.Context) (map[uint64][]byte, error) {
	kvs, _, err := o.kv.List(ctx, o.k.ops())
	if err != nil {
		return nil, fmt.Errorf("list operations: %w", err)
	}
	out := make(map[uint64][]byte, len(kvs))
	for _, kv := range kvs {
		id, err := strconv.ParseUint(kv.Key[len(o.k.ops()):], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("list operations: key %q names no operation", kv.Key)
		}
		out[id] = kv.Value
	}
	return out, nil
}

// Delete deletes operation id's record if every fence condition holds.
func (o *Operations) Delete(ctx context.Context, id uint64, fence ...metakv.Cond) error {
	if _, err := o.kv.Txn(ctx, metakv.Txn{If: fence, Then: []metakv.Op{metakv.Delete(o.k.op(id))}}); err != nil {
		return fmt.Errorf("delete operation %d: %w", id, err)
	}
	return nil
}

// Campaign blocks until node leads the controller election (or ctx ends).
// ttl is the election's session lease: a controller that dies is replaced
// within about that long.
func (o *Operations) Campaign(ctx context.Context, node uint64, ttl time.Duration) (metakv.Leadership, error) {
	return o.kv.Campaign(ctx, o.k.controllerElection(), strconv.FormatUint(node, 10), ttl)
}

// Controller returns the node that leads the controller election, 0 if
// none.
func (o *Operations) Controller(ctx context.Context) (uint64, error) {
	v, ok, err := o.kv.Leader(ctx, o.k.controllerElection())
	if err != nil || !ok {
		return 0, err
	}
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("controller election: value %q names no node", v)
	}
	return id, nil
}
