package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cosmosd/cosmosd/cluster/metakv"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/schema"
)

// Every transaction stays within etcd's limit on the operations of one
// transaction (--max-txn-ops, 128 by default): CREATE TABLE of a table of
// 200 partitions or more (2,000,000 RU/s) failed with "etcdserver: too many
// operations in txn request" when the table and its whole ring were one
// transaction (issue 17).
const (
	// maxPartitionsPerTxn is how many partition descriptors one
	// transaction writes; the rest of the 128 leaves room for the table,
	// the schema version and the pending record.
	maxPartitionsPerTxn = 100
	// pendingTableTTL is the lease of a pending-table record: how long the
	// hidden partial ring of a creator that died stays before
	// CollectOrphanRings may delete it. The creator renews the lease after
	// every batch, so only a stall this long between two batches fails a
	// creation.
	pendingTableTTL = 30 * time.Second
	// abandonTimeout bounds the clean-up of a failed creation, which runs
	// after the caller's context may have ended.
	abandonTimeout = 10 * time.Second
)

// ErrCreationExpired reports that a table's creation stalled longer than
// pendingTableTTL between two of its transactions; nothing of it was
// published, and the caller may retry.
var ErrCreationExpired = errors.New("table creation stalled and expired; retry")

// CreateTable creates t with its initial ring. It returns false (and no
// error) when the table exists and ifNotExists is set.
//
// A ring that fits in one transaction is written in the table's. A larger
// one (a table provisioned with more than 1,000,000 RU/s) is written first,
// in batches, under a pending-table record that hides it from Meta
// (buildRings), and the table is then published by one small transaction
// that also deletes the pending record: every reader sees the table with
// its whole ring appear in one revision, or nothing. A creator that dies
// midway leaves a hidden partial ring: its pending record expires with its
// lease and CollectOrphanRings deletes the ring.
//
// The ids of t and of parts come from the counters "table" and
// "partition" (the caller allocated them just before). When the table is
// not created and nothing was written under them (the table exists, the
// keyspace does not), they are given back if no other allocation came
// since, so that drivers retrying a failing CREATE TABLE on every host do
// not burn ids. Ids a partial ring used are never given back: replicas of
// its partitions may have started under them.
func (c *Catalog) CreateTable(ctx context.Context, t *schema.Table, parts []*kvpb.Descriptor, ifNotExists bool) (bool, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return false, err
	}
	descs := make([]string, len(parts))
	for i, p := range parts {
		pr, err := MarshalDescriptor(p)
		if err != nil {
			return false, err
		}
		descs[i] = string(pr)
	}
	if len(parts) <= maxPartitionsPerTxn {
		return c.createTableOneTxn(ctx, t, string(raw), parts, descs, ifNotExists)
	}
	// Refuse before writing anything when the outcome is already known,
	// so the ids go back.
	if created, done, err := c.createOutcome(ctx, t, parts, ifNotExists, false); done {
		return created, err
	}
	lease, err := c.stageRing(ctx, t.ID, parts, descs)
	if err != nil {
		c.abandonRing(t.ID, lease)
		return false, fmt.Errorf("create table %s: %w", t.QualifiedName(), err)
	}
	key, pending := c.k.table(t.Keyspace, t.Name), c.k.pendingTable(t.ID)
	ok, err := c.commit(ctx, []metakv.Cond{
		metakv.Exists(c.k.keyspace(t.Keyspace)),
		metakv.Absent(key),
		metakv.Exists(pending),
	}, []metakv.Op{metakv.Put(key, raw), metakv.Delete(pending)}, true)
	// Whatever happened, the ring must not stay hidden-but-alive: either
	// it was published (the pending record is gone and abandonRing does
	// nothing) or it is deleted. An error here may hide a publish that
	// happened; abandonRing's compare on the pending record tells.
	c.abandonRing(t.ID, lease)
	if err != nil {
		return false, fmt.Errorf("create table %s: %w", t.QualifiedName(), err)
	}
	if ok {
		return true, nil
	}
	if created, done, err := c.createOutcome(ctx, t, nil, ifNotExists, true); done {
		return created, err
	}
	return false, fmt.Errorf("create table %s: %w", t.QualifiedName(), ErrCreationExpired)
}

// createTableOneTxn writes the table and its ring in one transaction.
func (c *Catalog) createTableOneTxn(ctx context.Context, t *schema.Table, raw string, parts []*kvpb.Descriptor, descs []string, ifNotExists bool) (bool, error) {
	key := c.k.table(t.Keyspace, t.Name)
	ops := []metakv.Op{metakv.Put(key, []byte(raw))}
	for i, p := range parts {
		ops = append(ops, metakv.Put(c.k.part(t.ID, p.GetId()), []byte(descs[i])))
	}
	for {
		ok, err := c.commit(ctx, []metakv.Cond{
			metakv.Exists(c.k.keyspace(t.Keyspace)),
			metakv.Absent(key),
		}, ops, true)
		if err != nil {
			return false, fmt.Errorf("create table %s: %w", t.QualifiedName(), err)
		}
		if ok {
			return true, nil
		}
		if created, done, err := c.createOutcome(ctx, t, parts, ifNotExists, false); done {
			return created, err
		}
		// Neither missing keyspace nor existing table: both changed
		// between the transaction and the check. Try again.
	}
}

// createOutcome checks whether t can be created: done is true when it
// cannot (the keyspace is missing, or the table exists), with the result
// and error to return. Unless written is set (a partial ring used the ids), the ids of t
// and parts are given back then.
func (c *Catalog) createOutcome(ctx context.Context, t *schema.Table, parts []*kvpb.Descriptor, ifNotExists, written bool) (created, done bool, err error) {
	resp, err := c.kv.Txn(ctx, metakv.Txn{Then: []metakv.Op{
		metakv.Get(c.k.keyspace(t.Keyspace)),
		metakv.Get(c.k.table(t.Keyspace, t.Name))}})
	if err != nil {
		return false, true, fmt.Errorf("create table %s: %w", t.QualifiedName(), err)
	}
	switch {
	case len(resp.Reads[0]) == 0:
		err = fmt.Errorf("create table %s: %w", t.QualifiedName(), ErrKeyspaceNotFound)
	case len(resp.Reads[1]) > 0:
		if !ifNotExists {
			err = fmt.Errorf("create table %s: %w", t.QualifiedName(), ErrTableExists)
		}
	default:
		return false, false, nil
	}
	if !written {
		c.giveBackIDs(ctx, t, parts)
	}
	return false, true, err
}

// giveBackIDs returns the ids of a table that was not created to their
// counters, when they were the last allocated (best effort: an id lost to a
// concurrent allocation is merely skipped).
func (c *Catalog) giveBackIDs(ctx context.Context, t *schema.Table, parts []*kvpb.Descriptor) {
	c.giveBack(ctx, "table", t.ID, 1)
	if len(parts) == 0 {
		return
	}
	first := parts[0].GetId()
	for i, p := range parts {
		if p.GetId() != first+uint64(i) {
			return // not one allocation; leave them
		}
	}
	c.giveBack(ctx, "partition", first, uint64(len(parts)))
}

// giveBack sets counter kind back from first+n to first if it still stands
// at first+n, that is if ids first..first+n-1 were the last allocated.
func (c *Catalog) giveBack(ctx context.Context, kind string, first, n uint64) {
	if first == 0 || n == 0 {
		return
	}
	key := c.k.counter(kind)
	_, _ = c.kv.Txn(ctx, metakv.Txn{
		If:   []metakv.Cond{metakv.ValueIs(key, []byte(strconv.FormatUint(first+n, 10)))},
		Then: []metakv.Op{metakv.Put(key, []byte(strconv.FormatUint(first, 10)))},
	})
}

// stageRing writes a table's ring in batches under a pending-table record
// held by a lease, which it returns (also on error, for abandonRing; 0 if
// none was granted). The first batch creates the record; every later one
// requires it, so a creator whose lease expired (stalled, or taken for dead
// by CollectOrphanRings) stops instead of writing into a ring being
// collected.
func (c *Catalog) stageRing(ctx context.Context, table uint64, parts []*kvpb.Descriptor, descs []string) (metakv.LeaseID, error) {
	grant, err := c.kv.Grant(ctx, pendingTableTTL)
	if err != nil {
		return 0, fmt.Errorf("pending record lease: %w", err)
	}
	pending := c.k.pendingTable(table)
	for start := 0; start < len(parts); start += maxPartitionsPerTxn {
		end := min(start+maxPartitionsPerTxn, len(parts))
		var ops []metakv.Op
		cmp := metakv.Exists(pending)
		if start == 0 {
			cmp = metakv.Absent(pending)
			ops = append(ops, metakv.PutLeased(pending, []byte(strconv.Itoa(len(parts))), grant))
		}
		for i := start; i < end; i++ {
			ops = append(ops, metakv.Put(c.k.part(table, parts[i].GetId()), []byte(descs[i])))
		}
		resp, err := c.kv.Txn(ctx, metakv.Txn{If: []metakv.Cond{cmp}, Then: ops})
		if err != nil {
			return grant, fmt.Errorf("write partitions %d..%d of %d: %w", start+1, end, len(parts), err)
		}
		if !resp.Succeeded {
			if start == 0 {
				return grant, fmt.Errorf("table id %d is already being created", table)
			}
			return grant, ErrCreationExpired
		}
		if err := c.kv.KeepAliveOnce(ctx, grant); err != nil {
			return grant, fmt.Errorf("renew pending record lease: %w", err)
		}
	}
	return grant, nil
}

// abandonRing deletes the partial ring of a table whose creation failed,
// with its pending record, unless the record is gone (the table was
// published, or the lease expired and CollectOrphanRings owns the ring),
// and releases the lease. It runs on its own context: the caller's may be
// what ended the creation.
func (c *Catalog) abandonRing(table uint64, lease metakv.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), abandonTimeout)
	defer cancel()
	pending := c.k.pendingTable(table)
	_, _ = c.kv.Txn(ctx, metakv.Txn{
		If:   []metakv.Cond{metakv.Exists(pending)},
		Then: []metakv.Op{metakv.Delete(pending), metakv.DeleteUnder(c.k.ringOf(table))},
	})
	if lease != 0 {
		_ = c.kv.Revoke(ctx, lease)
	}
}

// CollectOrphanRings deletes the rings that belong to no table and to no
// creation in progress: the partial rings of creators that died
// (CreateTable), and rings left behind by dropping a table whose stored
// definition had no readable id. It returns how many rings it deleted. The
// controller calls it now and then.
//
// A ring is an orphan when, at one revision, no table record holds its id
// and no pending record exists for it. It cannot be published later: a
// large table is published only while its pending record exists, and a
// small one's ring is written with its table. While any table record has
// no readable id, nothing is collected: its ring cannot be told apart.
func (c *Catalog) CollectOrphanRings(ctx context.Context) (int, error) {
	resp, err := c.kv.Txn(ctx, metakv.Txn{Then: []metakv.Op{
		metakv.GetUnder(c.k.tables()),
		metakv.GetUnder(c.k.rings()),
		metakv.GetUnder(c.k.pendingTables())}})
	if err != nil {
		return 0, fmt.Errorf("collect orphan rings: %w", err)
	}
	live := map[uint64]bool{}
	for _, kv := range resp.Reads[0] {
		id, ok := storedTableID(kv.Value)
		if !ok {
			return 0, nil
		}
		live[id] = true
	}
	for _, kv := range resp.Reads[2] {
		if id, ok := c.k.pendingTableID(kv.Key); ok {
			live[id] = true
		}
	}
	orphans := map[uint64]bool{}
	for _, kv := range resp.Reads[1] {
		rest := strings.TrimPrefix(kv.Key, c.k.rings())
		head, _, _ := strings.Cut(rest, "/")
		id, err := strconv.ParseUint(head, 10, 64)
		if err == nil && !live[id] {
			orphans[id] = true
		}
	}
	deleted := 0
	for id := range orphans {
		// The pending record must still be absent: a creation that
		// started since the read owns the ring (it cannot, with a fresh
		// id, but the compare makes that not matter).
		txn, err := c.kv.Txn(ctx, metakv.Txn{
			If:   []metakv.Cond{metakv.Absent(c.k.pendingTable(id))},
			Then: []metakv.Op{metakv.DeleteUnder(c.k.ringOf(id))},
		})
		if err != nil {
			return deleted, fmt.Errorf("collect orphan ring of table %d: %w", id, err)
		}
		if txn.Succeeded {
			deleted++
		}
	}
	return deleted, nil
}
