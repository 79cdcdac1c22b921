// Package ring maps partition keys to tokens and tokens to physical
// partitions.
//
// Tokens are Cassandra's Murmur3Partitioner tokens, bit for bit (murmur3.go),
// so `token()` in CQL and the drivers' token-aware routing agree with
// Cassandra. A Ring is one table's ordered list of physical-partition
// descriptors; its invariant is that the descriptors' inclusive ranges
// [start, end] cover every token from math.MinInt64 to math.MaxInt64 with no
// gap and no overlap. Rings are immutable values: a change builds a new one.
package ring
