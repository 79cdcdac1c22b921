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
// whose execution panics is answered with a Server error that carries only
// an incident id (the panic and its stack go to the log, at error level,
// under that id); the node and the connection go on. A panic on the
// reader goroutine (handshake) closes the connection. A malformed frame
// that was read whole gets a Protocol error on its stream and the
// connection goes on; a frame that cannot be delimited (unsupported
// version, oversized, negative length) gets a Protocol error and the
// connection closes, since nothing after it can be trusted.
//
// Limits. The server serves at most MaxConnections connections, and at
// most MaxConnectionsPerClient from one remote IP. A connection over a
// limit is handed to a goroutine of its own (the accept loop never waits
// on it) that answers its STARTUP with Overloaded naming the limit, and
// closes it; at most maxPendingRejections such connections are kept, any
// beyond are closed at once. A connection from which no frame was read for
// IdleTimeout is closed.
package cql
