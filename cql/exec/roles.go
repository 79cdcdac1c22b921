package exec

import (
	"context"
	"errors"
	"slices"
	"sort"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
)

// The role and permission statements, with the checks, messages and
// results of Cassandra's CassandraRoleManager and CassandraAuthorizer (and
// of their statements in org.apache.cassandra.cql3.statements). Each is
// checked as Cassandra checks it, access first, then validity, against the
// roles in memory; its change then runs as one etcd transaction
// (cluster.Roles.Update), which checks again what must still hold (the
// role exists, the grant makes no cycle) against the roles as stored.
//
// Passwords are hashed before the transaction and appear in no error and
// no log line.

// roleCaller returns the role running a role statement. Without an
// authenticator every session is anonymous, and Cassandra refuses these
// statements to anonymous sessions.
//
// It also brings the roles in memory up to etcd's current revision: the
// statement's checks and listings read them, and a client that created a
// role through one node and grants it through another (drivers spread
// requests over the nodes) must find it. Role statements are rare and
// write to etcd anyway; the round trip does not touch the data path.
func (e *Executor) roleCaller(sess *Session) (string, error) {
	if !e.cfg.RequireAuth || e.cfg.Roles == nil {
		return "", notAnonymous()
	}
	user := sess.User()
	if user == "" {
		return "", newErr(CodeUnauthorized, "You have not logged in")
	}
	// On failure the checks run on the roles as they are; the change
	// itself is checked again against the stored roles.
	e.catchUp()
	return user, nil
}

// ensureRolePermission is Cassandra's AuthenticationStatement
// checkPermission: the refusal does not say what was missing.
func (e *Executor) ensureRolePermission(user string, p auth.Permission, r auth.Resource) error {
	if e.allowed(user, p, r) {
		return nil
	}
	return newErr(CodeUnauthorized, "User %s does not have sufficient privileges to perform the requested operation", user)
}

// roleError passes CQL errors from a role change through and reports the
// rest (etcd failing) as server errors.
func roleError(err error) error {
	var ce *Error
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return ServerError("%v", err)
}

// validateRoleOptions is RoleOptions.validate with Cassandra's role
// manager, which supports PASSWORD, LOGIN and SUPERUSER.
func validateRoleOptions(o parser.RoleOptions) error {
	if o.Options {
		return Invalid("org.apache.cassandra.auth.CassandraRoleManager doesn't support OPTIONS")
	}
	if o.Password != nil && len(*o.Password) > auth.MaxPasswordBytes {
		return Invalid("Password must be at most %d bytes long (bcrypt reads no more)", auth.MaxPasswordBytes)
	}
	return nil
}

// hashOption hashes the PASSWORD option, if given.
func (e *Executor) hashOption(o parser.RoleOptions) (string, error) {
	if o.Password == nil {
		return "", nil
	}
	h, err := auth.HashPassword(*o.Password, e.cfg.PasswordHashCost)
	if err != nil {
		return "", ServerError("%v", err)
	}
	return h, nil
}

func (e *Executor) createRole(ctx context.Context, sess *Session, s *parser.CreateRoleStmt) (*Result, error) {
	user, err := e.roleCaller(sess)
	if err != nil {
		return nil, err
	}
	if err := e.ensureRolePermission(user, auth.Create, auth.AllRoles()); err != nil {
		return nil, err
	}
	if s.Options.Superuser != nil && *s.Options.Superuser && !e.authState().IsSuper(user) {
		return nil, newErr(CodeUnauthorized, "Only superusers can create a role with superuser status")
	}
	if err := validateRoleOptions(s.Options); err != nil {
		return nil, err
	}
	if s.Name == "" {
		return nil, Invalid("Role name can't be an empty string")
	}
	if !s.IfNotExists && e.authState().Role(s.Name) != nil {
		return nil, Invalid("%s already exists", s.Name)
	}
	hash, err := e.hashOption(s.Options)
	if err != nil {
		return nil, err
	}
	err = e.cfg.Roles.Update(ctx, func(m *auth.Mutable) error {
		if m.Role(s.Name) != nil {
			if s.IfNotExists {
				return nil
			}
			return Invalid("%s already exists", s.Name)
		}
		r := &auth.Role{Name: s.Name, SaltedHash: hash}
		if s.Options.Login != nil {
			r.Login = *s.Options.Login
		}
		if s.Options.Superuser != nil {
			r.Superuser = *s.Options.Superuser
		}
		m.PutRole(r)
		// The creator may alter, drop and grant the new role.
		if m.Role(user) != nil {
			res := auth.RoleResource(s.Name)
			m.Grant(user, res, res.Applicable())
		}
		return nil
	})
	if err != nil {
		return nil, roleError(err)
	}
	return voidResult, nil
}

func (e *Executor) alterRole(ctx context.Context, sess *Session, s *parser.AlterRoleStmt) (*Result, error) {
	user, err := e.roleCaller(sess)
	if err != nil {
		return nil, err
	}
	st := e.authState()
	isSuper := st.IsSuper(user)
	if s.Options.Superuser != nil && slices.Contains(st.RolesOf(user, true), s.Name) {
		return nil, newErr(CodeUnauthorized, "You aren't allowed to alter your own superuser status or that of a role granted to you")
	}
	if s.Options.Superuser != nil && !isSuper {
		return nil, newErr(CodeUnauthorized, "Only superusers are allowed to alter superuser status")
	}
	switch {
	case isSuper:
	case user == s.Name:
		// A role may change its own password, nothing else.
		switch {
		case s.Options.Login != nil:
			return nil, newErr(CodeUnauthorized, "You aren't allowed to alter LOGIN")
		case s.Options.Options:
			return nil, newErr(CodeUnauthorized, "You aren't allowed to alter OPTIONS")
		}
	default:
		if err := e.ensureRolePermission(user, auth.Alter, auth.RoleResource(s.Name)); err != nil {
			return nil, err
		}
	}
	if err := validateRoleOptions(s.Options); err != nil {
		return nil, err
	}
	if s.Options.Empty() {
		return nil, Invalid("ALTER [ROLE|USER] can't be empty")
	}
	hash, err := e.hashOption(s.Options)
	if err != nil {
		return nil, err
	}
	err = e.cfg.Roles.Update(ctx, func(m *auth.Mutable) error {
		r := m.Role(s.Name)
		if r == nil {
			return Invalid("%s doesn't exist", s.Name)
		}
		if s.Options.Password != nil {
			r.SaltedHash = hash
		}
		if s.Options.Login != nil {
			r.Login = *s.Options.Login
		}
		if s.Options.Superuser != nil {
			r.Superuser = *s.Options.Superuser
		}
		return nil
	})
	if err != nil {
		return nil, roleError(err)
	}
	return voidResult, nil
}

func (e *Executor) dropRole(ctx context.Context, sess *Session, s *parser.DropRoleStmt) (*Result, error) {
	user, err := e.roleCaller(sess)
	if err != nil {
		return nil, err
	}
	if err := e.ensureRolePermission(user, auth.Drop, auth.RoleResource(s.Name)); err != nil {
		return nil, err
	}
	st := e.authState()
	if st.Role(s.Name) != nil && st.IsSuper(s.Name) && !st.IsSuper(user) {
		return nil, newErr(CodeUnauthorized, "Only superusers can drop a role with superuser status")
	}
	if !s.IfExists && st.Role(s.Name) == nil {
		return nil, Invalid("%s doesn't exist", s.Name)
	}
	if user == s.Name {
		return nil, Invalid("Cannot DROP primary role for current login")
	}
	err = e.cfg.Roles.Update(ctx, func(m *auth.Mutable) error {
		if m.Role(s.Name) == nil {
			if s.IfExists {
				return nil
			}
			return Invalid("%s doesn't exist", s.Name)
		}
		m.DropRole(s.Name)
		return nil
	})
	if err != nil {
		return nil, roleError(err)
	}
	return voidResult, nil
}

// grantRole runs GRANT r TO grantee and REVOKE r FROM grantee.
func (e *Executor) grantRole(ctx context.Context, sess *Session, s *parser.GrantRoleStmt) (*Result, error) {
	user, err := e.roleCaller(sess)
	if err != nil {
		return nil, err
	}
	if err := e.ensureRolePermission(user, auth.Authorize, auth.RoleResource(s.Role)); err != nil {
		return nil, err
	}
	err = e.cfg.Roles.Update(ctx, func(m *auth.Mutable) error {
		for _, name := range []string{s.Role, s.Grantee} {
			if m.Role(name) == nil {
				return Invalid("%s doesn't exist", name)
			}
		}
		st := m.State()
		if s.Revoke {
			if !slices.Contains(st.RolesOf(s.Grantee, false), s.Role) {
				return Invalid("%s is not a member of %s", s.Grantee, s.Role)
			}
			m.RevokeRole(s.Role, s.Grantee)
			return nil
		}
		// Memberships form no cycle.
		if slices.Contains(st.RolesOf(s.Grantee, true), s.Role) {
			return Invalid("%s is a member of %s", s.Grantee, s.Role)
		}
		if slices.Contains(st.RolesOf(s.Role, true), s.Grantee) {
			return Invalid("%s is a member of %s", s.Role, s.Grantee)
		}
		m.GrantRole(s.Role, s.Grantee)
		return nil
	})
	if err != nil {
		return nil, roleError(err)
	}
	return voidResult, nil
}

// resolveResource turns a statement's resource into an auth.Resource; an
// unqualified table is in the session's keyspace.
func resolveResource(sess *Session, r parser.ResourceName) (auth.Resource, error) {
	switch r.Kind {
	case parser.ResAllKeyspaces:
		return auth.AllKeyspaces(), nil
	case parser.ResKeyspace:
		return auth.KeyspaceResource(r.Keyspace), nil
	case parser.ResTable:
		ks := r.Table.Keyspace
		if ks == "" {
			ks = sess.Keyspace()
		}
		if ks == "" {
			return auth.Resource{}, Invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
		}
		return auth.TableResource(ks, r.Table.Name), nil
	case parser.ResAllRoles:
		return auth.AllRoles(), nil
	case parser.ResRole:
		return auth.RoleResource(r.Role), nil
	}
	return auth.Resource{}, Invalid("unknown resource")
}

// resourceExists is Cassandra's IResource.exists.
func (e *Executor) resourceExists(r auth.Resource, st *auth.State) bool {
	switch r.Kind {
	case auth.KeyspaceKind:
		return isSystemKeyspace(r.Keyspace) || e.keyspaceExists(r.Keyspace)
	case auth.TableKind:
		return lookupVirtual(r.Keyspace, r.Table) != nil || !isSystemKeyspace(r.Keyspace) && e.lookupTable(r.Keyspace, r.Table) != nil
	case auth.RoleKind:
		return st.Role(r.Role) != nil
	}
	return true
}

// permissionSet returns the permissions a statement names.
func permissionSet(all bool, names []string) (auth.Set, error) {
	if all {
		return auth.AllPermissions, nil
	}
	set, err := auth.ParseSet(names)
	if err != nil {
		return 0, Syntax("%v", err)
	}
	return set, nil
}

// grantPermissions runs GRANT and REVOKE of permissions.
func (e *Executor) grantPermissions(ctx context.Context, sess *Session, s *parser.GrantPermissionsStmt) (*Result, error) {
	user, err := e.roleCaller(sess)
	if err != nil {
		return nil, err
	}
	res, err := resolveResource(sess, s.Resource)
	if err != nil {
		return nil, err
	}
	perms, err := permissionSet(s.All, s.Permissions)
	if err != nil {
		return nil, err
	}
	// As Cassandra's parser: ALL means what applies to the resource, and
	// naming only permissions that do not apply is an error.
	if perms &= res.Applicable(); perms == 0 {
		return nil, Syntax("Resource type %s does not support any of the requested permissions", res.TypeName())
	}
	// One may grant only what one holds, with AUTHORIZE.
	if err := e.ensure(user, auth.Authorize, res); err != nil {
		return nil, err
	}
	for _, p := range perms.List() {
		if err := e.ensure(user, p, res); err != nil {
			return nil, err
		}
	}
	st := e.authState()
	if st.Role(s.Grantee) == nil {
		return nil, Invalid("Role %s doesn't exist", s.Grantee)
	}
	if !e.resourceExists(res, st) {
		return nil, Invalid("Resource %s doesn't exist", res)
	}
	err = e.cfg.Roles.Update(ctx, func(m *auth.Mutable) error {
		if m.Role(s.Grantee) == nil {
			return Invalid("Role %s doesn't exist", s.Grantee)
		}
		if res.Kind == auth.RoleKind && m.Role(res.Role) == nil {
			return Invalid("Resource %s doesn't exist", res)
		}
		if s.Revoke {
			m.Revoke(s.Grantee, res, perms)
		} else {
			m.Grant(s.Grantee, res, perms)
		}
		return nil
	})
	if err != nil {
		return nil, roleError(err)
	}
	return voidResult, nil
}

var (
	textType = cqltype.Scalar(cqltype.Varchar)
	boolType = cqltype.Scalar(cqltype.Boolean)
	textMap  = mustType("map<text, text>")
)

// authRows builds a rows result of system_auth's pseudo-table table.
func authRows(table string, cols []string, types []cqltype.Type, rows [][]any) (*Result, error) {
	if len(rows) == 0 {
		// Cassandra answers an empty listing with a void result.
		return voidResult, nil
	}
	out := &Rows{}
	for i, c := range cols {
		out.Columns = append(out.Columns, ColumnSpec{Keyspace: "system_auth", Table: table, Name: c, Type: types[i]})
	}
	for _, r := range rows {
		enc := make([][]byte, len(r))
		for i, v := range r {
			b, err := cqltype.Marshal(types[i], v)
			if err != nil {
				return nil, ServerError("%s.%s: %v", table, cols[i], err)
			}
			enc[i] = b
		}
		out.Rows = append(out.Rows, enc)
	}
	return &Result{Kind: ResultRows, Rows: out}, nil
}

// listRoles runs LIST ROLES and LIST USERS.
func (e *Executor) listRoles(sess *Session, s *parser.ListRolesStmt) (*Result, error) {
	user, err := e.roleCaller(sess)
	if err != nil {
		return nil, err
	}
	st := e.authState()
	if s.Of != "" && st.Role(s.Of) == nil {
		return nil, Invalid("%s doesn't exist", auth.RoleResource(s.Of))
	}
	// LIST USERS is LIST ROLES NORECURSIVE of no one.
	recursive := !s.NoRecursive && !s.Users
	var names []string
	switch {
	case st.Allowed(user, auth.Describe, auth.AllRoles()):
		if s.Of == "" {
			names = st.RoleNames()
		} else {
			names = st.RolesOf(s.Of, recursive)
		}
	case s.Of == "":
		names = st.RolesOf(user, recursive)
	case slices.Contains(st.RolesOf(user, true), s.Of):
		names = st.RolesOf(s.Of, recursive)
	default:
		return nil, newErr(CodeUnauthorized, "You are not authorized to view roles granted to %s ", s.Of)
	}
	var rows [][]any
	if s.Users {
		for _, n := range names {
			if r := st.Role(n); r != nil && r.Login {
				rows = append(rows, []any{n, st.IsSuper(n)})
			}
		}
		return authRows("users", []string{"name", "super"}, []cqltype.Type{textType, boolType}, rows)
	}
	for _, n := range names {
		r := st.Role(n)
		if r == nil {
			continue
		}
		rows = append(rows, []any{n, r.Superuser, r.Login, map[string]string{}})
	}
	return authRows("roles", []string{"role", "super", "login", "options"}, []cqltype.Type{textType, boolType, boolType, textMap}, rows)
}

// listPermissions runs LIST permissions [ON resource] [OF role]
// [NORECURSIVE].
func (e *Executor) listPermissions(sess *Session, s *parser.ListPermissionsStmt) (*Result, error) {
	user, err := e.roleCaller(sess)
	if err != nil {
		return nil, err
	}
	st := e.authState()
	var resources []auth.Resource
	if s.Resource != nil {
		res, err := resolveResource(sess, *s.Resource)
		if err != nil {
			return nil, err
		}
		if !e.resourceExists(res, st) {
			return nil, Invalid("%s doesn't exist", res)
		}
		resources = []auth.Resource{res}
		if !s.NoRecursive {
			resources = res.Chain()
		}
	} else {
		resources = []auth.Resource{{}} // every resource
	}
	if s.Of != "" && st.Role(s.Of) == nil {
		return nil, Invalid("%s doesn't exist", auth.RoleResource(s.Of))
	}
	if !st.IsSuper(user) && (s.Of == "" || !slices.Contains(st.RolesOf(user, true), s.Of)) {
		who := s.Of
		if who == "" {
			who = "everyone"
		}
		return nil, newErr(CodeUnauthorized, "You are not authorized to view %s's permissions", who)
	}
	perms, err := permissionSet(s.All, s.Permissions)
	if err != nil {
		return nil, err
	}
	// Whose grants: everyone's, or those of the role and of the roles it
	// is a member of (Cassandra lists inherited grants under the role
	// that holds them).
	grantees := []string{""}
	if s.Of != "" {
		grantees = st.RolesOf(s.Of, true)
	}
	type detail struct {
		role     string
		resource auth.Resource
		perm     auth.Permission
	}
	seen := map[detail]bool{}
	var details []detail
	for _, res := range resources {
		for _, g := range grantees {
			for _, gr := range st.Grants(g, res) {
				for _, p := range (gr.Permissions & perms).List() {
					d := detail{gr.Role, gr.Resource, p}
					if !seen[d] {
						seen[d] = true
						details = append(details, d)
					}
				}
			}
		}
	}
	// Cassandra's PermissionDetails order: role, resource name, permission.
	sort.Slice(details, func(i, j int) bool {
		a, b := details[i], details[j]
		if a.role != b.role {
			return a.role < b.role
		}
		if an, bn := a.resource.Name(), b.resource.Name(); an != bn {
			return an < bn
		}
		return a.perm < b.perm
	})
	rows := make([][]any, len(details))
	for i, d := range details {
		rows[i] = []any{d.role, d.role, d.resource.String(), d.perm.String()}
	}
	return authRows("permissions", []string{"role", "username", "resource", "permission"},
		[]cqltype.Type{textType, textType, textType, textType}, rows)
}
