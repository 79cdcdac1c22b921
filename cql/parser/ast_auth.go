package parser

// RoleOptions are the options of CREATE/ALTER ROLE (WITH PASSWORD = '...'
// AND LOGIN = true AND SUPERUSER = false AND OPTIONS = {...}) and of the
// legacy USER statements. A nil field was not given.
type RoleOptions struct {
	// Password is secret: it must never be logged or echoed.
	Password  *string
	Login     *bool
	Superuser *bool
	// Options is true when OPTIONS = {...} was given (custom options,
	// which Cassandra's role manager does not support either).
	Options bool
}

// Empty reports whether no option was given.
func (o RoleOptions) Empty() bool {
	return o.Password == nil && o.Login == nil && o.Superuser == nil && !o.Options
}

// CreateRoleStmt is CREATE ROLE [IF NOT EXISTS] r [WITH options], or
// CREATE USER [IF NOT EXISTS] u [WITH PASSWORD '...'] [SUPERUSER |
// NOSUPERUSER] (User set; LOGIN is then true and SUPERUSER given, false
// by default, as in Cassandra).
type CreateRoleStmt struct {
	Name        string
	IfNotExists bool
	Options     RoleOptions
	User        bool
}

// AlterRoleStmt is ALTER ROLE r [WITH options], or ALTER USER u [WITH
// PASSWORD '...'] [SUPERUSER | NOSUPERUSER] (User set).
type AlterRoleStmt struct {
	Name    string
	Options RoleOptions
	User    bool
}

// DropRoleStmt is DROP ROLE|USER [IF EXISTS] r.
type DropRoleStmt struct {
	Name     string
	IfExists bool
	User     bool
}

// ListRolesStmt is LIST ROLES [OF r] [NORECURSIVE], or LIST USERS (Users
// set).
type ListRolesStmt struct {
	// Of is the role whose roles are listed; "" lists every role the
	// caller may see.
	Of          string
	NoRecursive bool
	Users       bool
}

// GrantRoleStmt is GRANT r TO grantee, or REVOKE r FROM grantee (Revoke
// set).
type GrantRoleStmt struct {
	Role    string
	Grantee string
	Revoke  bool
}

// ResourceKind is the kind of a ResourceName.
type ResourceKind uint8

// Kinds of resources.
const (
	ResAllKeyspaces ResourceKind = iota + 1 // ALL KEYSPACES
	ResKeyspace                             // KEYSPACE ks
	ResTable                                // [TABLE] [ks.]t
	ResAllRoles                             // ALL ROLES
	ResRole                                 // ROLE r
)

// ResourceName names what permissions are granted on. Table.Keyspace is ""
// when the statement did not qualify the table (the session's keyspace
// applies).
type ResourceName struct {
	Kind     ResourceKind
	Keyspace string
	Table    TableName
	Role     string
}

// GrantPermissionsStmt is GRANT perms ON resource TO role, or REVOKE perms
// ON resource FROM role (Revoke set).
type GrantPermissionsStmt struct {
	// Permissions are upper-case permission names (CREATE, ALTER, DROP,
	// SELECT, MODIFY, AUTHORIZE, DESCRIBE, EXECUTE); nil with All.
	Permissions []string
	All         bool
	Resource    ResourceName
	Grantee     string
	Revoke      bool
}

// ListPermissionsStmt is LIST perms [ON resource] [OF role]
// [NORECURSIVE].
type ListPermissionsStmt struct {
	Permissions []string
	All         bool
	// Resource is nil when no ON clause was given.
	Resource    *ResourceName
	Of          string
	NoRecursive bool
}

func (*CreateRoleStmt) stmt()       {}
func (*AlterRoleStmt) stmt()        {}
func (*DropRoleStmt) stmt()         {}
func (*ListRolesStmt) stmt()        {}
func (*GrantRoleStmt) stmt()        {}
func (*GrantPermissionsStmt) stmt() {}
func (*ListPermissionsStmt) stmt()  {}
