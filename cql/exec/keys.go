package exec

import (
	"errors"
	"fmt"

	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/storage"
)

// partitionKey is one logical partition addressed by a statement.
type partitionKey struct {
	values [][]byte // component values, in partition-key order
	key    []byte   // serialized routing key (what hashes to the token)
	token  int64
}

// makePartitionKey validates and serializes partition-key values.
func makePartitionKey(t *schema.Table, values [][]byte) (partitionKey, error) {
	pk := t.PartitionKey()
	for i, c := range pk {
		if values[i] == nil {
			return partitionKey{}, Invalid("Invalid null value in condition for column %s", c.Name)
		}
	}
	key, err := ring.RoutingKey(values)
	if err != nil {
		if errors.Is(err, ring.ErrKeyTooLong) {
			return partitionKey{}, Invalid("Key length of %d is longer than maximum of %d", routingKeyLen(values), ring.MaxKeyLength)
		}
		return partitionKey{}, Invalid("invalid partition key: %v", err)
	}
	if len(key) == 0 {
		return partitionKey{}, Invalid("Key may not be empty")
	}
	return partitionKey{values: values, key: key, token: ring.Token(key)}, nil
}

// routingKeyLen is the length of the routing key of values: the value
// itself for one component, [len][value][0] per component otherwise.
func routingKeyLen(values [][]byte) int {
	if len(values) == 1 {
		return len(values[0])
	}
	n := 0
	for _, v := range values {
		n += 2 + len(v) + 1
	}
	return n
}

// decodePartitionKey splits a stored routing key back into values.
func decodePartitionKey(t *schema.Table, key []byte) ([][]byte, error) {
	return ring.SplitRoutingKey(key, len(t.PartitionKey()))
}

// encodeClustering encodes clustering values (a prefix of the clustering
// columns) in byte-comparable form.
func encodeClustering(t *schema.Table, values [][]byte) ([]byte, error) {
	cks := t.ClusteringColumns()
	var out []byte
	for i, v := range values {
		c := cks[i]
		if v == nil {
			return nil, Invalid("Invalid null value in condition for column %s", c.Name)
		}
		var err error
		out, err = cqltype.AppendKey(out, c.Type, v, c.Desc)
		if err != nil {
			return nil, Invalid("clustering column %s: %v", c.Name, err)
		}
	}
	if len(out) > storage.MaxKeyComponentLen {
		return nil, Invalid("Key length of %d is longer than maximum of %d", len(out), storage.MaxKeyComponentLen)
	}
	return out, nil
}

// decodeClustering decodes a full clustering key.
func decodeClustering(t *schema.Table, ck []byte) ([][]byte, error) {
	cks := t.ClusteringColumns()
	out := make([][]byte, len(cks))
	rest := ck
	for i, c := range cks {
		var err error
		out[i], rest, err = cqltype.DecodeKey(c.Type, rest, c.Desc)
		if err != nil {
			return nil, fmt.Errorf("decode clustering column %s: %w", c.Name, err)
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("decode clustering key: %d trailing bytes", len(rest))
	}
	return out, nil
}
