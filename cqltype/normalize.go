package cqltype

// Normalize returns v, serialized data of type t that passed Validate, in
// the form Cassandra keeps and returns: every set sorted by Compare of its
// element type without duplicates, and every map sorted by Compare of its
// key type with the last of equal keys kept (NormalizeSet, NormalizeMap),
// at any depth: inside lists, sets, maps, tuples and UDTs. A client may send
// a set or map in any order and with duplicates; values are compared (keys,
// conditions, set elements) and returned as normalized, so every value that
// enters must be normalized first (issue 15).
//
// A value whose type holds no set or map, null and the empty value are
// returned as they are. Otherwise the result is a new slice; v is not
// modified. Errors (malformed input, which Validate would have reported)
// match ErrInvalidValue.
func Normalize(t Type, v []byte) ([]byte, error) {
	if len(v) == 0 || !hasSetOrMap(t, 0) {
		return v, nil
	}
	return normalize(t, v, 0)
}

// hasSetOrMap reports whether values of t may hold a set or a map.
func hasSetOrMap(t Type, depth int) bool {
	if t.Kind == Set || t.Kind == Map {
		return true
	}
	if depth > maxTypeDepth {
		return false
	}
	for _, e := range t.Elems {
		if hasSetOrMap(e, depth+1) {
			return true
		}
	}
	for _, f := range t.Fields {
		if hasSetOrMap(f.Type, depth+1) {
			return true
		}
	}
	return false
}

func normalize(t Type, v []byte, depth int) ([]byte, error) {
	if len(v) == 0 || depth > maxTypeDepth || !hasSetOrMap(t, depth) {
		return v, nil
	}
	switch t.Kind {
	case List, Set:
		elems, err := DecodeCollection(v)
		if err != nil {
			return nil, err
		}
		et := elemType(t, 0)
		for i, e := range elems {
			if elems[i], err = normalize(et, e, depth+1); err != nil {
				return nil, err
			}
		}
		if t.Kind == Set {
			elems = NormalizeSet(t, elems)
		}
		return EncodeCollection(elems), nil
	case Map:
		keys, vals, err := DecodeMap(v)
		if err != nil {
			return nil, err
		}
		kt, vt := elemType(t, 0), elemType(t, 1)
		for i := range keys {
			if keys[i], err = normalize(kt, keys[i], depth+1); err != nil {
				return nil, err
			}
			if vals[i], err = normalize(vt, vals[i], depth+1); err != nil {
				return nil, err
			}
		}
		keys, vals = NormalizeMap(t, keys, vals)
		return EncodeMap(keys, vals), nil
	case Tuple, UDT:
		types := componentTypes(t)
		// Only the elements present are written back: trailing elements
		// that are missing stay missing rather than becoming nulls.
		var elems [][]byte
		for pos := 0; pos < len(v); {
			i := len(elems)
			if i >= len(types) {
				return nil, valueErrorf("Invalid remaining data after end of tuple value")
			}
			e, next, err := readElem(v, pos, i, "component")
			if err != nil {
				return nil, err
			}
			if e != nil {
				if e, err = normalize(types[i], e, depth+1); err != nil {
					return nil, err
				}
			}
			elems, pos = append(elems, e), next
		}
		return EncodeTuple(elems), nil
	}
	return v, nil
}
