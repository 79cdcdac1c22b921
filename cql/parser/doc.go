// Package parser turns the text of one CQL statement into a typed AST.
//
// Model. Parse lexes the whole query into tokens (keeping line and column
// for messages) and runs a hand-written recursive-descent parser over them,
// following Cassandra's grammar (src/antlr/Parser.g, 3.11 with a few later
// additions) for the statements cosmosd supports: SELECT, INSERT, UPDATE,
// DELETE, BATCH, USE, TRUNCATE, CREATE/ALTER/DROP KEYSPACE, CREATE/ALTER/DROP
// TABLE, CREATE/DROP INDEX, CREATE/DROP TYPE, and the role and permission
// statements (CREATE/ALTER/DROP ROLE and USER, LIST ROLES and USERS,
// GRANT/REVOKE of permissions and of roles, LIST PERMISSIONS). Statements
// cosmosd does not implement (materialized views, functions, aggregates,
// triggers, LIST SUPERUSERS, ALTER TYPE, DESCRIBE) are recognised by their
// leading keywords and returned as *UnsupportedStmt, so the executor can
// answer "not supported" instead of a syntax error.
//
// Secrets. A syntax error in CREATE or ALTER ROLE/USER never quotes a
// string literal of the statement (it may be a password): they are shown
// as '***'.
//
// The parser is pure: it knows no schema. Whether columns exist, whether a
// term fits a column's type, primary-key restrictions and every other
// semantic rule belong to the executor, which works on this AST. The parser
// only rejects what Cassandra rejects while parsing (its SyntaxException),
// e.g. "Only expressions of the form X = <value> + X are supported.",
// duplicate properties, or two PRIMARY KEY definitions.
//
// Identifiers. Unquoted identifiers are lower-cased; "quoted" ones keep their
// case. Cassandra's reserved keywords can only be identifiers when quoted;
// all other keywords (key, type, ttl, count, json, distinct, exists, ...)
// are accepted as identifiers wherever that is unambiguous, resolving the
// ambiguous spots the way Cassandra's syntactic predicates do.
//
// Bind markers. Every '?' and ':name' gets an Index: its position among the
// statement's markers in textual order, across the whole text of a BATCH.
// BindMarkers lists them for PREPARE metadata.
//
// Invariants. Parse never panics and does not use panic/recover; nesting of
// literals, types, function calls and parenthesised relations is bounded
// (maxDepth), and the work is linear in the query length apart from the
// bounded re-parse of "SELECT JSON/DISTINCT", so hostile input neither
// exhausts the stack nor takes long. The AST holds no references to the
// query string's lexer state and may be kept and shared read-only.
package parser
