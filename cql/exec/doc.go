// Package exec executes CQL statements: it resolves tables in the catalog,
// turns statements into key-value requests for the router, and builds the
// results drivers expect, including the virtual system tables they read at
// connect time.
//
// Every statement is handled in two steps that share one code path: analysis
// binds terms through a binder and produces a plan, execution runs the plan.
// PREPARE runs analysis with a binder that has no values and only records
// what each bind marker receives; that is how prepared metadata (variable
// types, partition-key indexes, result columns) always agrees with what
// execution accepts.
//
// The executor reaches the cluster only through the ports it declares
// (ports.go): a MetaView of the metadata, the Catalog that changes the
// schema, the KV port that carries requests to the partitions, and the
// RoleStore. Production passes *cluster.Meta, *cluster.Catalog,
// *router.Router and *cluster.Roles; tests pass a real Meta and Catalog on
// the in-memory metadata store and a KV port over in-process partitions
// (package exectest), and the scripts of testdata/cql (TestDataDriven) run
// CQL against them in milliseconds, showing the rows, the errors and the
// requests sent.
//
// Errors are *Error values carrying the CQL error code; the server encodes
// them. Bad input never panics and never reaches storage: values are
// validated against their column types, sizes against the configured
// limits, and restrictions against Cassandra's rules, with Cassandra's
// messages where drivers or users may match on them.
//
// What one request may cost is bounded before the cost is paid: the
// cartesian products of IN restrictions are computed from the list sizes
// before any key is built (MaxPartitionKeyRestrictions,
// MaxClusteringKeyRestrictions); writes are sized before they are routed
// (MaxMutationBytes, per partition and per batch, checked as a batch is
// planned); a page ends at PageMaxBytes and an unpaged result fails past
// MaxUnpagedResultBytes while it is being collected; provisioned
// throughput is capped (MaxProvisionedThroughput); the prepared statement
// cache is bounded in bytes as well as in count.
package exec
