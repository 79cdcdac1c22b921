package exec

import (
	"context"
	"time"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cql/parser"
)

// Authorization, as Cassandra's CassandraAuthorizer with ClientState's
// checks: with RequireAuth every statement needs the permission Cassandra
// asks for on the resource it touches (or on a parent of it), held by the
// session's role or a role it is a member of.
//
//	SELECT                          SELECT on the table
//	INSERT, UPDATE, DELETE          MODIFY on the table (and SELECT when conditional)
//	TRUNCATE, BATCH                 MODIFY on each table
//	CREATE KEYSPACE                 CREATE on <all keyspaces>
//	ALTER / DROP KEYSPACE           ALTER / DROP on the keyspace
//	CREATE TABLE                    CREATE on the keyspace
//	ALTER / DROP TABLE              ALTER / DROP on the table
//	role statements                 see roles.go
//
// The system and system_schema tables are readable by every role (drivers
// and cqlsh read them), as Cassandra's READABLE_SYSTEM_RESOURCES. The
// checks read the roles from the published metadata (Meta.State().Auth),
// a copy in memory kept current by the etcd watch, so they cost no round
// trip; only a refusal first catches up with etcd, so that a GRANT made on
// another node a moment ago is seen (see docs/security.md for the bound
// on staleness).

// notAnonymous is Cassandra's refusal of the role statements to an
// anonymous session, which is every session without an authenticator.
func notAnonymous() *Error {
	return newErr(CodeUnauthorized, "You have to be logged in and not anonymous to perform this request")
}

func unauthorized(user string, p auth.Permission, r auth.Resource) *Error {
	return newErr(CodeUnauthorized, "User %s has no %s permission on %s or any of its parents", user, p, r)
}

// authState returns the roles to check against.
func (e *Executor) authState() *auth.State {
	if st := e.cfg.Meta.State().Auth; st != nil {
		return st
	}
	return auth.Empty
}

// allowed reports whether user holds p on r, catching up with the
// metadata store before saying no.
func (e *Executor) allowed(user string, p auth.Permission, r auth.Resource) bool {
	// Read before the check, not after: a grant the watch publishes in
	// between would otherwise be taken for nothing new (see run).
	before := e.cfg.Meta.State().Revision
	if e.authState().Allowed(user, p, r) {
		return true
	}
	return e.caughtUpSince(before) && e.authState().Allowed(user, p, r)
}

// ensure returns Unauthorized unless user holds p on r.
func (e *Executor) ensure(user string, p auth.Permission, r auth.Resource) error {
	if e.allowed(user, p, r) {
		return nil
	}
	return unauthorized(user, p, r)
}

// authorize checks that the session may run stmt. Statements that name no
// keyspace while the session has none are let through: they fail on that
// before doing anything. The role statements check their own access.
func (e *Executor) authorize(sess *Session, stmt parser.Statement) error {
	if !e.cfg.RequireAuth {
		return nil
	}
	user := sess.User()
	if user == "" {
		return newErr(CodeUnauthorized, "You have not logged in")
	}
	tableOf := func(name parser.TableName) (auth.Resource, bool) {
		ks := name.Keyspace
		if ks == "" {
			ks = sess.Keyspace()
		}
		return auth.TableResource(ks, name.Name), ks != ""
	}
	switch s := stmt.(type) {
	case *parser.SelectStmt:
		r, ok := tableOf(s.Table)
		if !ok || readableSystemKeyspace(r.Keyspace) {
			return nil
		}
		return e.ensure(user, auth.Select, r)
	case *parser.InsertStmt, *parser.UpdateStmt, *parser.DeleteStmt:
		return e.authorizeModify(sess, user, stmt)
	case *parser.BatchStmt:
		for _, st := range s.Statements {
			if err := e.authorizeModify(sess, user, st); err != nil {
				return err
			}
		}
		return nil
	case *parser.TruncateStmt:
		if r, ok := tableOf(s.Table); ok {
			return e.ensure(user, auth.Modify, r)
		}
	case *parser.CreateKeyspaceStmt:
		if !isSystemKeyspace(s.Name) {
			return e.ensure(user, auth.Create, auth.AllKeyspaces())
		}
	case *parser.AlterKeyspaceStmt:
		if !isSystemKeyspace(s.Name) {
			return e.ensure(user, auth.Alter, auth.KeyspaceResource(s.Name))
		}
	case *parser.DropKeyspaceStmt:
		if !isSystemKeyspace(s.Name) {
			return e.ensure(user, auth.Drop, auth.KeyspaceResource(s.Name))
		}
	case *parser.CreateTableStmt:
		if r, ok := tableOf(s.Table); ok && !isSystemKeyspace(r.Keyspace) {
			return e.ensure(user, auth.Create, auth.KeyspaceResource(r.Keyspace))
		}
	case *parser.AlterTableStmt:
		if r, ok := tableOf(s.Table); ok && !isSystemKeyspace(r.Keyspace) {
			return e.ensure(user, auth.Alter, r)
		}
	case *parser.DropTableStmt:
		if r, ok := tableOf(s.Table); ok && !isSystemKeyspace(r.Keyspace) {
			return e.ensure(user, auth.Drop, r)
		}
	}
	return nil
}

// authorizeModify checks one INSERT, UPDATE or DELETE: MODIFY on its
// table, and SELECT too when it is conditional, since a condition reveals
// the row (Cassandra's ModificationStatement.checkAccess).
func (e *Executor) authorizeModify(sess *Session, user string, stmt parser.Statement) error {
	var name parser.TableName
	cond := false
	switch s := stmt.(type) {
	case *parser.InsertStmt:
		name, cond = s.Table, s.IfNotExists
	case *parser.UpdateStmt:
		name, cond = s.Table, s.IfExists || len(s.Conditions) > 0
	case *parser.DeleteStmt:
		name, cond = s.Table, s.IfExists || len(s.Conditions) > 0
	default:
		return nil // refused as not allowed in a batch
	}
	ks := name.Keyspace
	if ks == "" {
		ks = sess.Keyspace()
	}
	if ks == "" {
		return nil
	}
	r := auth.TableResource(ks, name.Name)
	if err := e.ensure(user, auth.Modify, r); err != nil {
		return err
	}
	if cond {
		return e.ensure(user, auth.Select, r)
	}
	return nil
}

// readableSystemKeyspace reports whether every role may read the tables of
// ks: the ones drivers and cqlsh read to connect and describe the schema.
// system_auth is not among them.
func readableSystemKeyspace(ks string) bool { return ks == "system" || ks == "system_schema" }

// authChangeTimeout bounds the grants and revocations that follow a schema
// change, which run after the client's request is done with.
const authChangeTimeout = 10 * time.Second

// afterSchemaChange keeps permissions in step with the schema, as Cassandra
// does: the creator of a keyspace or table gets every permission on it,
// and a dropped keyspace or table takes every permission granted on it
// along (a table created later under the same name starts with none).
// These are separate etcd transactions, after the schema change; if one
// fails it is logged and the statement still succeeds, as the schema
// change did (a superuser can grant what is missing).
func (e *Executor) afterSchemaChange(ctx context.Context, sess *Session, res *Result) {
	if e.cfg.Roles == nil || res == nil || res.Kind != ResultSchemaChange || res.Change == nil {
		return
	}
	ch := res.Change
	var r auth.Resource
	switch ch.Target {
	case "KEYSPACE":
		r = auth.KeyspaceResource(ch.Keyspace)
	case "TABLE":
		r = auth.TableResource(ch.Keyspace, ch.Name)
	default:
		return
	}
	user := sess.User()
	var change func(m *auth.Mutable) error
	switch {
	case ch.Change == "CREATED" && user != "":
		change = func(m *auth.Mutable) error {
			if m.Role(user) != nil {
				m.Grant(user, r, r.Applicable())
			}
			return nil
		}
	case ch.Change == "DROPPED":
		change = func(m *auth.Mutable) error {
			m.RevokeAllOn(r)
			return nil
		}
	default:
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), authChangeTimeout)
	defer cancel()
	if err := e.cfg.Roles.Update(ctx, change); err != nil {
		e.cfg.Logger.Warn("update permissions after a schema change", "change", ch.Change, "resource", r.String(), "err", err)
	}
}
