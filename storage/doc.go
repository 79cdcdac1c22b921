// Package storage is the node's single Pebble store and the byte layouts
// inside it: keys (keys.go), rows of cells (row.go) and per-logical-
// partition stats (stats.go).
//
// Mapping from the reference design's paths to keys: /local/<group>/raft/...
// and /local/<group>/state are the 0x01 prefix (node-local, per consensus
// group); /data/<table>/<token>/<pk>/<ck> is 0x02; /stats/<table>/<token>/<pk>
// is 0x03. Tokens are big-endian with the sign bit flipped so that byte order
// is token order; partition keys are length-prefixed so they never run into
// the clustering key that follows; clustering keys use cqltype's
// order-preserving encoding, inverted for DESC columns, so a forward scan
// returns rows in clustering order.
//
// Cells carry write timestamps, optional TTL expiry and tombstones, and
// reconcile as Cassandra's do (row.go): the newest timestamp wins, a
// tombstone wins a tie. The package knows nothing about schemas; the state
// machine (package partition) decides what to write.
//
// Concurrency: Engine, Snapshot and Reader methods are safe for concurrent
// use; a Batch belongs to one goroutine.
package storage
