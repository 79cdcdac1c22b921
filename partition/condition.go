package partition

import (
	"encoding/binary"

	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// evalCondition evaluates one condition against the current state.
func (st *stage) evalCondition(c *kvpb.Condition) (bool, *kvpb.CurrentRow, error) {
	ps := st.part(c.GetToken(), c.GetPk())
	row, exists, err := st.current(ps, c.GetCk())
	if err != nil {
		return false, nil, err
	}
	cur := &kvpb.CurrentRow{Exists: exists}
	if exists {
		cur.Row = storage.AppendRow(nil, &row)
	}
	var static storage.Row
	// A failed IF NOT EXISTS reports the whole row, statics included.
	if len(c.GetStaticColumns()) > 0 || (c.GetKind() == kvpb.Condition_NOT_EXISTS && len(c.GetCk()) > 0) {
		var sok bool
		if static, sok, err = st.current(ps, nil); err != nil {
			return false, nil, err
		}
		if sok {
			cur.StaticRow = storage.AppendRow(nil, &static)
		}
	}
	switch c.GetKind() {
	case kvpb.Condition_NOT_EXISTS:
		return !exists, cur, nil
	case kvpb.Condition_EXISTS:
		return exists, cur, nil
	}
	ok := true
	for _, cc := range c.GetColumns() {
		r, err := columnHolds(&row, cc)
		if err != nil {
			return false, nil, err
		}
		ok = ok && r
	}
	for _, cc := range c.GetStaticColumns() {
		r, err := columnHolds(&static, cc)
		if err != nil {
			return false, nil, err
		}
		ok = ok && r
	}
	return ok, cur, nil
}

// columnHolds evaluates `IF column[element] op value` against a live row.
func columnHolds(row *storage.Row, cc *kvpb.ColumnCondition) (bool, error) {
	t, err := cqltype.Parse(cc.GetType())
	if err != nil {
		return false, reject(kvpb.Error_INVALID, "condition on column %d: bad type %q", cc.GetColumn(), cc.GetType())
	}
	var v []byte // nil = null
	if c := row.Cell(cc.GetColumn()); c != nil {
		v = c.Value
	}
	if cc.GetHasElement() {
		if v, err = element(t, v, cc.GetElement()); err != nil {
			return false, err
		}
		if t, err = cqltype.Parse(cc.GetElementType()); err != nil {
			return false, reject(kvpb.Error_INVALID, "condition on column %d: bad element type %q", cc.GetColumn(), cc.GetElementType())
		}
	}
	vals, nulls := cc.GetValues(), cc.GetNullValues()
	isNull := func(i int) bool { return i < len(nulls) && nulls[i] }
	switch cc.GetOp() {
	case kvpb.ColumnCondition_IN:
		for i, w := range vals {
			if (isNull(i) && v == nil) || (!isNull(i) && v != nil && cqltype.Compare(t, v, w) == 0) {
				return true, nil
			}
		}
		return false, nil
	}
	if len(vals) != 1 {
		return false, reject(kvpb.Error_INVALID, "condition on column %d needs one value", cc.GetColumn())
	}
	if isNull(0) || v == nil {
		both := isNull(0) && v == nil
		switch cc.GetOp() {
		case kvpb.ColumnCondition_EQ:
			return both, nil
		case kvpb.ColumnCondition_NE:
			return !both, nil
		}
		return false, nil
	}
	cmp := cqltype.Compare(t, v, vals[0])
	switch cc.GetOp() {
	case kvpb.ColumnCondition_EQ:
		return cmp == 0, nil
	case kvpb.ColumnCondition_NE:
		return cmp != 0, nil
	case kvpb.ColumnCondition_LT:
		return cmp < 0, nil
	case kvpb.ColumnCondition_LE:
		return cmp <= 0, nil
	case kvpb.ColumnCondition_GT:
		return cmp > 0, nil
	case kvpb.ColumnCondition_GE:
		return cmp >= 0, nil
	}
	return false, reject(kvpb.Error_INVALID, "unknown condition operator %d", cc.GetOp())
}

// element extracts a map value by serialized key or a list element by
// serialized int index; nil when absent.
func element(t cqltype.Type, v, key []byte) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	switch t.Kind {
	case cqltype.Map:
		keys, vals, err := cqltype.DecodeMap(v)
		if err != nil {
			return nil, reject(kvpb.Error_INVALID, "stored map: %v", err)
		}
		for i := range keys {
			if cqltype.Compare(t.Elems[0], keys[i], key) == 0 {
				return vals[i], nil
			}
		}
		return nil, nil
	case cqltype.List:
		if len(key) != 4 {
			return nil, reject(kvpb.Error_INVALID, "list index must be an int")
		}
		i := int32(binary.BigEndian.Uint32(key))
		elems, err := cqltype.DecodeCollection(v)
		if err != nil {
			return nil, reject(kvpb.Error_INVALID, "stored list: %v", err)
		}
		if i < 0 || int(i) >= len(elems) {
			return nil, nil
		}
		return elems[i], nil
	}
	return nil, reject(kvpb.Error_INVALID, "element access on a %s column", t)
}
