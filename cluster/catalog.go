package cluster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/cluster/metakv"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/schema"
)

// Catalog errors, matched with errors.Is.
var (
	ErrKeyspaceExists   = errors.New("keyspace already exists")
	ErrKeyspaceNotFound = errors.New("keyspace does not exist")
	ErrTableExists      = errors.New("table already exists")
	ErrTableNotFound    = errors.New("table does not exist")
	// ErrConflict reports a compare-and-swap that lost to a concurrent
	// change; the caller re-reads and retries.
	ErrConflict = errors.New("concurrent metadata change")
)

// Catalog changes the catalog and rings in the metadata store. Each method is one
// transaction and waits until the local Meta has published its revision, so
// the caller's next read sees the change. Safe for concurrent use.
type Catalog struct {
	meta *Meta
	kv   metakv.Store
	k    keys
}

// NewCatalog returns a catalog writer over meta's store.
func NewCatalog(meta *Meta) *Catalog {
	return &Catalog{meta: meta, kv: meta.kv, k: meta.k}
}

// Meta returns the watched metadata.
func (c *Catalog) Meta() *Meta { return c.meta }

// NewUUID returns a random (version 4) UUID string.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// commit runs a transaction that, when it succeeds, also bumps the schema
// version; it waits for Meta to publish it.
func (c *Catalog) commit(ctx context.Context, cmps []metakv.Cond, ops []metakv.Op, schemaChange bool) (bool, error) {
	if schemaChange {
		ops = append(ops, metakv.Put(c.k.version(), []byte(NewUUID())))
	}
	resp, err := c.kv.Txn(ctx, metakv.Txn{If: cmps, Then: ops})
	if err != nil {
		return false, err
	}
	if !resp.Succeeded {
		return false, nil
	}
	return true, c.meta.WaitRevision(ctx, resp.Revision)
}

// EnsureSchemaVersion writes a schema version if none exists, so a new
// cluster reports one before its first DDL.
func (c *Catalog) EnsureSchemaVersion(ctx context.Context) error {
	_, err := c.commit(ctx, []metakv.Cond{metakv.Absent(c.k.version())},
		[]metakv.Op{metakv.Put(c.k.version(), []byte(NewUUID()))}, false)
	return err
}

// CreateKeyspace creates ks; it returns false (and no error) when ks exists
// and ifNotExists is set.
func (c *Catalog) CreateKeyspace(ctx context.Context, ks *schema.Keyspace, ifNotExists bool) (bool, error) {
	raw, err := json.Marshal(ks)
	if err != nil {
		return false, err
	}
	key := c.k.keyspace(ks.Name)
	ok, err := c.commit(ctx, []metakv.Cond{metakv.Absent(key)},
		[]metakv.Op{metakv.Put(key, raw)}, true)
	if err != nil {
		return false, fmt.Errorf("create keyspace %s: %w", ks.Name, err)
	}
	if !ok && !ifNotExists {
		return false, fmt.Errorf("create keyspace %s: %w", ks.Name, ErrKeyspaceExists)
	}
	return ok, nil
}

// AlterKeyspace replaces a keyspace's definition.
func (c *Catalog) AlterKeyspace(ctx context.Context, name string, mutate func(*schema.Keyspace) error) error {
	key := c.k.keyspace(name)
	for {
		kv, found, err := c.kv.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("alter keyspace %s: %w", name, err)
		}
		if !found {
			return fmt.Errorf("alter keyspace %s: %w", name, ErrKeyspaceNotFound)
		}
		ks := &schema.Keyspace{}
		if err := json.Unmarshal(kv.Value, ks); err != nil {
			return fmt.Errorf("alter keyspace %s: %w", name, err)
		}
		if err := mutate(ks); err != nil {
			return err
		}
		raw, err := json.Marshal(ks)
		if err != nil {
			return err
		}
		ok, err := c.commit(ctx, []metakv.Cond{metakv.ModifiedAt(key, kv.ModRevision)},
			[]metakv.Op{metakv.Put(key, raw)}, true)
		if err != nil {
			return fmt.Errorf("alter keyspace %s: %w", name, err)
		}
		if ok {
			return nil
		}
	}
}

// DropKeyspace drops a keyspace with its tables and their rings. It returns
// false when the keyspace is absent and ifExists is set.
func (c *Catalog) DropKeyspace(ctx context.Context, name string, ifExists bool) (bool, error) {
	key := c.k.keyspace(name)
	for {
		tables, rev, err := c.kv.List(ctx, c.k.tablesOf(name))
		if err != nil {
			return false, fmt.Errorf("drop keyspace %s: %w", name, err)
		}
		ops := []metakv.Op{metakv.Delete(key), metakv.DeleteUnder(c.k.tablesOf(name))}
		for _, kv := range tables {
			if id, ok := storedTableID(kv.Value); ok {
				ops = append(ops, metakv.DeleteUnder(c.k.ringOf(id)))
			}
		}
		cmps := []metakv.Cond{
			metakv.Exists(key),
			// No table was added or changed since we listed them.
			metakv.UnchangedUnderSince(c.k.tablesOf(name), rev),
		}
		ok, err := c.commit(ctx, cmps, ops, true)
		if err != nil {
			return false, fmt.Errorf("drop keyspace %s: %w", name, err)
		}
		if ok {
			return true, nil
		}
		_, exists, err := c.kv.Get(ctx, key)
		if err != nil {
			return false, fmt.Errorf("drop keyspace %s: %w", name, err)
		}
		if !exists {
			if ifExists {
				return false, nil
			}
			return false, fmt.Errorf("drop keyspace %s: %w", name, ErrKeyspaceNotFound)
		}
	}
}

// storedTableID reads only the id of a stored table definition, so that
// dropping a table (or its keyspace) never depends on the rest of the
// definition decoding: an entry that a node can no longer read (a column
// type it cannot parse, as the custom types older nodes accepted, issue
// 15) must still be removable by an operator. ok is false when not even
// the id can be read; the entry is then dropped without its ring, which
// stays behind unused (it is keyed by a table id no table has).
func storedTableID(raw []byte) (id uint64, ok bool) {
	var head struct {
		ID uint64 `json:"id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.ID == 0 {
		return 0, false
	}
	return head.ID, true
}

// MarshalDescriptor encodes a descriptor deterministically, so stored
// values can be compared byte for byte in transactions.
func MarshalDescriptor(d *kvpb.Descriptor) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(d)
}

// AlterTable changes a table's definition with mutate (retried on
// conflicts) and returns the new definition.
func (c *Catalog) AlterTable(ctx context.Context, keyspace, name string, mutate func(*schema.Table) error) (*schema.Table, error) {
	key := c.k.table(keyspace, name)
	for {
		kv, found, err := c.kv.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("alter table %s.%s: %w", keyspace, name, err)
		}
		if !found {
			return nil, fmt.Errorf("alter table %s.%s: %w", keyspace, name, ErrTableNotFound)
		}
		t := &schema.Table{}
		if err := json.Unmarshal(kv.Value, t); err != nil {
			return nil, fmt.Errorf("alter table %s.%s: %w", keyspace, name, err)
		}
		if err := mutate(t); err != nil {
			return nil, err
		}
		if err := t.Validate(); err != nil {
			return nil, err
		}
		raw, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		ok, err := c.commit(ctx, []metakv.Cond{metakv.ModifiedAt(key, kv.ModRevision)},
			[]metakv.Op{metakv.Put(key, raw)}, true)
		if err != nil {
			return nil, fmt.Errorf("alter table %s.%s: %w", keyspace, name, err)
		}
		if ok {
			return t, nil
		}
	}
}

// DropTable drops a table and its ring. It returns false when the table is
// absent and ifExists is set.
func (c *Catalog) DropTable(ctx context.Context, keyspace, name string, ifExists bool) (bool, error) {
	key := c.k.table(keyspace, name)
	for {
		kv, found, err := c.kv.Get(ctx, key)
		if err != nil {
			return false, fmt.Errorf("drop table %s.%s: %w", keyspace, name, err)
		}
		if !found {
			if ifExists {
				return false, nil
			}
			return false, fmt.Errorf("drop table %s.%s: %w", keyspace, name, ErrTableNotFound)
		}
		ops := []metakv.Op{metakv.Delete(key)}
		if id, ok := storedTableID(kv.Value); ok {
			ops = append(ops, metakv.DeleteUnder(c.k.ringOf(id)))
		}
		ok, err := c.commit(ctx, []metakv.Cond{metakv.ModifiedAt(key, kv.ModRevision)}, ops, true)
		if err != nil {
			return false, fmt.Errorf("drop table %s.%s: %w", keyspace, name, err)
		}
		if ok {
			return true, nil
		}
	}
}

// UpdatePartitions replaces descriptors in a table's ring atomically: each
// old descriptor must still be stored exactly as given (nil old = must not
// exist), each new one is written. It fails with
// ErrConflict when another change came first.
func (c *Catalog) UpdatePartitions(ctx context.Context, table uint64, olds, news []*kvpb.Descriptor) error {
	var cmps []metakv.Cond
	var ops []metakv.Op
	for _, o := range olds {
		raw, err := MarshalDescriptor(o)
		if err != nil {
			return err
		}
		cmps = append(cmps, metakv.ValueIs(c.k.part(table, o.GetId()), raw))
	}
	for _, n := range news {
		raw, err := MarshalDescriptor(n)
		if err != nil {
			return err
		}
		ops = append(ops, metakv.Put(c.k.part(table, n.GetId()), raw))
	}
	ok, err := c.commit(ctx, cmps, ops, false)
	if err != nil {
		return fmt.Errorf("update partitions of table %d: %w", table, err)
	}
	if !ok {
		return fmt.Errorf("update partitions of table %d: %w", table, ErrConflict)
	}
	return nil
}

// SyncPartition writes a partition's routing copy: replacing old (which
// must still be stored as given) or, when old is nil, creating it (it must
// not exist). It fails with ErrConflict when the copy changed meanwhile.
func (c *Catalog) SyncPartition(ctx context.Context, table uint64, old, d *kvpb.Descriptor) error {
	key := c.k.part(table, d.GetId())
	var cmp metakv.Cond
	if old == nil {
		cmp = metakv.Absent(key)
	} else {
		raw, err := MarshalDescriptor(old)
		if err != nil {
			return err
		}
		cmp = metakv.ValueIs(key, raw)
	}
	raw, err := MarshalDescriptor(d)
	if err != nil {
		return err
	}
	// The table must still exist: a late sync must not resurrect the ring
	// of a dropped table.
	tableExists := metakv.AnyUnder(c.k.ringOf(table))
	ok, err := c.commit(ctx, []metakv.Cond{cmp, tableExists}, []metakv.Op{metakv.Put(key, raw)}, false)
	if err != nil {
		return fmt.Errorf("sync partition %d: %w", d.GetId(), err)
	}
	if !ok {
		return fmt.Errorf("sync partition %d: %w", d.GetId(), ErrConflict)
	}
	return nil
}

// AllocateID allocates ids from a counter; see AllocateID.
func (c *Catalog) AllocateID(ctx context.Context, kind string, n uint64) (uint64, error) {
	return AllocateID(ctx, c.kv, kind, n)
}
