// Package cql serves the Cassandra native protocol v4 on top of the
// executor: it owns client connections, frame decoding and encoding
// (cql/frame), compression, per-connection limits and server-pushed events.
//
// Concurrency. Each connection has a reader goroutine and a writer
// goroutine. The reader decodes frames and runs handshake messages (OPTIONS,
// STARTUP, REGISTER) in order; QUERY, PREPARE, EXECUTE and BATCH run on
// goroutines of their own, at most MaxRequestsPerConnection at a time, and
// answer on their stream in whatever order they finish, as the protocol
// allows. The writer batches finished responses into as few writes as
// possible. A client that stops reading blocks only its own requests (their
// answers wait for room in its queue); the event broadcast never waits on
// it for long: a registered connection whose queue stays full when an event
// is due is closed, and its driver reconnects and refreshes. A request
// whose execution panics is answered with a Server error; the node and the
// connection go on. A malformed frame that was read whole gets a Protocol error on
// its stream and the connection goes on; a frame that cannot be delimited
// (unsupported version, oversized) gets a Protocol error and the
// connection closes, since nothing after it can be trusted.
package cql
