package exectest

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/router/routertest"
)

// KV is the executor's KV port over this node's partition replicas: the
// router's path to a local replica without the network, the retries and
// the leader hints, which a single replica never needs. Safe for
// concurrent use.
type KV struct {
	meta *cluster.Meta
	node *routertest.Node // its Reconcile runs before every request

	mu struct {
		sync.Mutex
		recording bool
		log       []Request
		faults    []fault
	}
}

// Kind says which requests a fault applies to.
type Kind int

// Kinds of requests.
const (
	AnyRequest Kind = iota
	ReadRequest
	WriteRequest
)

// fault makes the next matching request fail.
type fault struct {
	kind Kind
	code kvpb.Error_Code
}

// Request is one request the port served: what it was sent and how it
// answered. Read or Write is set; the messages are copies taken when the
// request was served.
type Request struct {
	Target router.Target
	// State is the metadata the request was routed with (to name its table
	// and partition when formatting it).
	State *cluster.State
	// Desc is the partition that served it; nil when none held the target.
	Desc      *kvpb.Descriptor
	Read      *kvpb.ReadRequest
	ReadResp  *kvpb.ReadResponse
	Write     *kvpb.WriteRequest
	WriteResp *kvpb.WriteResponse
	// Injected is set when the request failed by FailNext without reaching
	// a replica.
	Injected bool
	Err      error
}

// Record starts (or stops) recording the requests served; recording
// starts empty.
func (k *KV) Record(on bool) {
	k.mu.Lock()
	k.mu.recording, k.mu.log = on, nil
	k.mu.Unlock()
}

// Take returns the requests recorded since Record or the last Take, in the
// order they were served, and forgets them.
func (k *KV) Take() []Request {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.mu.log
	k.mu.log = nil
	return out
}

// FailNext makes the next n requests of kind fail with a partition error of
// code, as if the partition's replica had answered with it; they reach no
// replica (a write has no effect).
func (k *KV) FailNext(n int, kind Kind, code kvpb.Error_Code) {
	k.mu.Lock()
	for range n {
		k.mu.faults = append(k.mu.faults, fault{kind: kind, code: code})
	}
	k.mu.Unlock()
}

// ClearFaults forgets the faults FailNext set that no request took.
func (k *KV) ClearFaults() {
	k.mu.Lock()
	k.mu.faults = nil
	k.mu.Unlock()
}

// takeFault returns the fault the next request of kind takes, if any.
func (k *KV) takeFault(kind Kind) (kvpb.Error_Code, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, f := range k.mu.faults {
		if f.kind == AnyRequest || f.kind == kind {
			k.mu.faults = append(k.mu.faults[:i], k.mu.faults[i+1:]...)
			return f.code, true
		}
	}
	return 0, false
}

func (k *KV) record(r Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.mu.recording {
		k.mu.log = append(k.mu.log, r)
	}
}

// Write implements exec.KV.
func (k *KV) Write(ctx context.Context, t router.Target, req *kvpb.WriteRequest) (*kvpb.WriteResponse, error) {
	return serve(ctx, k, t, WriteRequest, req, address{&req.PartitionId, &req.Generation, &req.TableId},
		func(rep *partition.Replica) (*kvpb.WriteResponse, error) { return rep.Write(ctx, req) },
		func(r *Request, sent *kvpb.WriteRequest, got *kvpb.WriteResponse) { r.Write, r.WriteResp = sent, got })
}

// Read implements exec.KV.
func (k *KV) Read(ctx context.Context, t router.Target, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	return serve(ctx, k, t, ReadRequest, req, address{&req.PartitionId, &req.Generation, &req.TableId},
		func(rep *partition.Replica) (*kvpb.ReadResponse, error) { return rep.Read(ctx, req) },
		func(r *Request, sent *kvpb.ReadRequest, got *kvpb.ReadResponse) { r.Read, r.ReadResp = sent, got })
}

// address points at the fields of a request that name the partition it
// is for, which the router fills in from the routing copy.
type address struct{ partition, generation, table *uint64 }

// serve serves one request of kind, as Read and Write do: it routes req
// to its partition's replica, fills in its address from the partition's
// descriptor, takes a fault FailNext set or calls the replica (call), and
// records the request with copies of what was sent (taken before the
// replica runs it) and answered, which file puts in the Request's fields
// of its kind.
func serve[Q, P proto.Message](ctx context.Context, k *KV, t router.Target, kind Kind, req Q, addr address,
	call func(*partition.Replica) (P, error), file func(rec *Request, sent Q, got P)) (P, error) {
	rec := Request{Target: t}
	var resp P
	rep, err := k.route(ctx, t, &rec)
	if err == nil {
		*addr.partition, *addr.generation, *addr.table = rec.Desc.GetId(), rec.Desc.GetGeneration(), rec.Desc.GetTableId()
	}
	sent := proto.Clone(req).(Q)
	if err == nil {
		if code, ok := k.takeFault(kind); ok {
			rec.Injected, err = true, partition.Errorf(code, "injected by exectest")
		} else {
			resp, err = call(rep)
		}
	}
	var got P // nil unless the replica answered
	if resp.ProtoReflect().IsValid() {
		got = proto.Clone(resp).(P)
	}
	file(&rec, sent, got)
	rec.Err = err
	k.record(rec)
	return resp, err
}

// route finds the partition t names, as the router does, and its replica
// on this node, starting the replicas the rings list first.
func (k *KV) route(ctx context.Context, t router.Target, rec *Request) (*partition.Replica, error) {
	st := k.meta.State()
	rec.State = st
	// The daemon's reconcile loop, run on demand: the replicas of a table
	// exist as soon as the DDL that created it is visible.
	if err := k.node.Reconcile(ctx, st); err != nil {
		return nil, err
	}
	if t.Partition != 0 {
		rec.Desc = st.Partition(t.Partition)
		if rec.Desc == nil {
			return nil, fmt.Errorf("%w: partition %d is gone", router.ErrNoPartition, t.Partition)
		}
	} else if rec.Desc = st.Ring(t.Table).Lookup(t.Token); rec.Desc == nil {
		return nil, fmt.Errorf("%w: table %d token %d", router.ErrNoPartition, t.Table, t.Token)
	}
	rep, ok := k.node.Store.Replica(rec.Desc.GetId())
	if !ok {
		return nil, partition.Errorf(kvpb.Error_NOT_FOUND, "no replica of partition %d on node %d", rec.Desc.GetId(), NodeID)
	}
	return rep, nil
}
