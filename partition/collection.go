package partition

import (
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// collectionExpiry sets the expiry of a collection cell that an element
// update merged from cur. A collection is one cell with one expiry, where
// Cassandra keeps one per element; so that no element ever expires before
// its own TTL, the merged cell lives as long as the longest-lived of its
// elements: never, if the elements kept or the ones written have no TTL,
// else the later expiry. A removal writes no element and keeps what was
// left as it was. Elements may thus outlive their TTL; they never die
// early (an append with a TTL used to expire the elements written without
// one).
func collectionExpiry(c *storage.Cell, cur *storage.Cell, kind kvpb.ColumnOp_Kind) {
	if cur == nil || cur.Tombstone {
		return
	}
	switch kind {
	case kvpb.ColumnOp_LIST_DELETE_INDEX, kvpb.ColumnOp_LIST_REMOVE, kvpb.ColumnOp_SET_REMOVE, kvpb.ColumnOp_MAP_REMOVE:
		c.TTL, c.Expiry = cur.TTL, cur.Expiry
	default:
		switch {
		case cur.Expiry == 0 || c.Expiry == 0:
			c.TTL, c.Expiry = 0, 0
		case cur.Expiry > c.Expiry:
			c.TTL, c.Expiry = cur.TTL, cur.Expiry
		}
	}
}

// mergeCollection applies a collection operation to the current value
// (nil when absent) and returns the new value, nil when empty.
func mergeCollection(t cqltype.Type, op *kvpb.ColumnOp, cur []byte) ([]byte, error) {
	bad := func(err error) error {
		return reject(kvpb.Error_INVALID, "column %d: %v", op.GetColumn(), err)
	}
	switch op.GetKind() {
	case kvpb.ColumnOp_LIST_APPEND, kvpb.ColumnOp_LIST_PREPEND, kvpb.ColumnOp_LIST_SET_INDEX,
		kvpb.ColumnOp_LIST_DELETE_INDEX, kvpb.ColumnOp_LIST_REMOVE:
		if t.Kind != cqltype.List {
			return nil, reject(kvpb.Error_INVALID, "column %d is not a list", op.GetColumn())
		}
		elems, err := decodeElems(cur)
		if err != nil {
			return nil, bad(err)
		}
		switch op.GetKind() {
		case kvpb.ColumnOp_LIST_APPEND, kvpb.ColumnOp_LIST_PREPEND:
			add, err := cqltype.DecodeCollection(op.GetValue())
			if err != nil {
				return nil, bad(err)
			}
			if op.GetKind() == kvpb.ColumnOp_LIST_APPEND {
				elems = append(elems, add...)
			} else {
				elems = append(add, elems...)
			}
		case kvpb.ColumnOp_LIST_SET_INDEX, kvpb.ColumnOp_LIST_DELETE_INDEX:
			i := int(op.GetIndex())
			if i < 0 || i >= len(elems) {
				return nil, reject(kvpb.Error_INVALID, "List index %d out of bound, list has size %d", i, len(elems))
			}
			if op.GetKind() == kvpb.ColumnOp_LIST_SET_INDEX {
				elems[i] = op.GetValue()
			} else {
				elems = append(elems[:i], elems[i+1:]...)
			}
		case kvpb.ColumnOp_LIST_REMOVE:
			rm, err := cqltype.DecodeCollection(op.GetValue())
			if err != nil {
				return nil, bad(err)
			}
			kept := elems[:0]
			for _, e := range elems {
				if !containsValue(t.Elems[0], rm, e) {
					kept = append(kept, e)
				}
			}
			elems = kept
		}
		if len(elems) == 0 {
			return nil, nil
		}
		return cqltype.EncodeCollection(elems), nil
	case kvpb.ColumnOp_SET_ADD, kvpb.ColumnOp_SET_REMOVE:
		if t.Kind != cqltype.Set {
			return nil, reject(kvpb.Error_INVALID, "column %d is not a set", op.GetColumn())
		}
		elems, err := decodeElems(cur)
		if err != nil {
			return nil, bad(err)
		}
		arg, err := cqltype.DecodeCollection(op.GetValue())
		if err != nil {
			return nil, bad(err)
		}
		if op.GetKind() == kvpb.ColumnOp_SET_ADD {
			elems = cqltype.NormalizeSet(t, append(elems, arg...))
		} else {
			kept := elems[:0]
			for _, e := range elems {
				if !containsValue(t.Elems[0], arg, e) {
					kept = append(kept, e)
				}
			}
			elems = kept
		}
		if len(elems) == 0 {
			return nil, nil
		}
		return cqltype.EncodeCollection(elems), nil
	case kvpb.ColumnOp_MAP_PUT, kvpb.ColumnOp_MAP_REMOVE:
		if t.Kind != cqltype.Map {
			return nil, reject(kvpb.Error_INVALID, "column %d is not a map", op.GetColumn())
		}
		var keys, vals [][]byte
		if len(cur) > 0 {
			var err error
			if keys, vals, err = cqltype.DecodeMap(cur); err != nil {
				return nil, bad(err)
			}
		}
		if op.GetKind() == kvpb.ColumnOp_MAP_PUT {
			k, v, err := cqltype.DecodeMap(op.GetValue())
			if err != nil {
				return nil, bad(err)
			}
			keys, vals = cqltype.NormalizeMap(t, append(keys, k...), append(vals, v...))
		} else {
			rm, err := cqltype.DecodeCollection(op.GetValue())
			if err != nil {
				return nil, bad(err)
			}
			var nk, nv [][]byte
			for i := range keys {
				if !containsValue(t.Elems[0], rm, keys[i]) {
					nk, nv = append(nk, keys[i]), append(nv, vals[i])
				}
			}
			keys, vals = nk, nv
		}
		if len(keys) == 0 {
			return nil, nil
		}
		return cqltype.EncodeMap(keys, vals), nil
	}
	return nil, reject(kvpb.Error_INVALID, "unknown column operation %d", op.GetKind())
}

func decodeElems(v []byte) ([][]byte, error) {
	if len(v) == 0 {
		return nil, nil
	}
	return cqltype.DecodeCollection(v)
}

func containsValue(t cqltype.Type, set [][]byte, v []byte) bool {
	for _, s := range set {
		if cqltype.Compare(t, s, v) == 0 {
			return true
		}
	}
	return false
}
