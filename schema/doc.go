// Package schema is the catalog model: keyspaces, tables and their columns,
// as stored in etcd and read by every layer that needs to know the shape of a
// table. It is pure data with validation; the cluster package persists it and
// the cql package interprets statements against it.
//
// Invariants of a Table: column ids are unique and never reused (a dropped
// and re-added column gets a new id, so old cells stay invisible); the
// partition key has at least one column; partition-key and clustering
// columns are ordered by Position; Columns is in Cassandra's canonical order
// (partition key, clustering, then the rest by name), which is the order of
// `SELECT *`.
package schema
