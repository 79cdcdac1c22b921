// Package auth is cosmosd's model of Cassandra's authentication and
// authorization: roles (CassandraRoleManager), permissions on resources
// (CassandraAuthorizer) and password logins over SASL PLAIN
// (PasswordAuthenticator), with Cassandra's semantics and messages.
//
// Model. A State is an immutable snapshot of every role and every granted
// permission. Roles form a graph: a role is a member of the roles granted to
// it (GRANT r1 TO r2 makes r2 a member of r1), and a role holds every
// permission and the superuser status of the roles it is transitively a
// member of. A permission is granted on a resource; holding it on a
// resource's parent (a keyspace for a table, <all keyspaces> for a keyspace,
// <all roles> for a role) is holding it on the resource. A superuser holds
// every permission applicable to any resource.
//
// The package is pure: it knows neither etcd nor CQL. The cluster package
// stores States in etcd and publishes the current one with the rest of the
// cluster metadata (watched, so checks cost no round trip); cql/exec checks
// statements against it and runs the role statements as functions from one
// State to the next; the CQL server logs connections in through an
// Authenticator.
//
// Logins. An Authenticator decodes the SASL PLAIN token, then checks the
// password against the current State. Failures are rate-limited per client
// address and per role name (a token bucket: DefaultFailureBurst failures,
// then one attempt per DefaultFailureInterval); a throttled attempt is
// refused without looking at the password, so it costs no bcrypt work.
// Before refusing, the Authenticator asks for the roles to be refreshed
// once (LoginConfig.Refresh), so a role created or a password changed
// through another node a moment ago is found.
//
// Secrets. Passwords are kept only as bcrypt hashes (cost 10 by default, as
// Cassandra), and a State never holds a clear password. Nothing in this
// package logs or formats a password or a SASL token; login failures are
// logged with the client address and the role name only.
package auth
