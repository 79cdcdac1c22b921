package parser

import (
	"errors"
	"strings"
	"testing"
)

func sp(s string) *string { return &s }
func bp(b bool) *bool     { return &b }

func TestParseRoles(t *testing.T) {
	runParseCases(t, []parseCase{
		{"create role", "CREATE ROLE Alice", &CreateRoleStmt{Name: "alice"}},
		{"create role quoted", `CREATE ROLE IF NOT EXISTS "Alice"`, &CreateRoleStmt{Name: "Alice", IfNotExists: true}},
		{"create role string name", `CREATE ROLE 'Bob Smith'`, &CreateRoleStmt{Name: "Bob Smith"}},
		{"create role options", "CREATE ROLE r WITH PASSWORD = 'p''w' AND LOGIN = true AND SUPERUSER = false",
			&CreateRoleStmt{Name: "r", Options: RoleOptions{Password: sp("p'w"), Login: bp(true), Superuser: bp(false)}}},
		{"create role custom options", "CREATE ROLE r WITH OPTIONS = {'a': 'b'} AND LOGIN = false",
			&CreateRoleStmt{Name: "r", Options: RoleOptions{Options: true, Login: bp(false)}}},
		{"create user", "CREATE USER Alice WITH PASSWORD 'x'",
			&CreateRoleStmt{Name: "Alice", User: true, Options: RoleOptions{Password: sp("x"), Login: bp(true), Superuser: bp(false)}}},
		{"create user superuser", "CREATE USER IF NOT EXISTS 'bob' SUPERUSER",
			&CreateRoleStmt{Name: "bob", User: true, IfNotExists: true, Options: RoleOptions{Login: bp(true), Superuser: bp(true)}}},
		{"alter role", "ALTER ROLE r WITH PASSWORD = 'n'", &AlterRoleStmt{Name: "r", Options: RoleOptions{Password: sp("n")}}},
		{"alter role empty", "ALTER ROLE r", &AlterRoleStmt{Name: "r"}},
		{"alter user", "ALTER USER u WITH PASSWORD 'n' NOSUPERUSER",
			&AlterRoleStmt{Name: "u", User: true, Options: RoleOptions{Password: sp("n"), Superuser: bp(false)}}},
		{"drop role", "DROP ROLE IF EXISTS r", &DropRoleStmt{Name: "r", IfExists: true}},
		{"drop user", "DROP USER U", &DropRoleStmt{Name: "U", User: true}},
		{"list roles", "LIST ROLES", &ListRolesStmt{}},
		{"list roles of", "LIST ROLES OF r NORECURSIVE", &ListRolesStmt{Of: "r", NoRecursive: true}},
		{"list users", "LIST USERS", &ListRolesStmt{Users: true}},
		{"grant role", "GRANT r1 TO r2", &GrantRoleStmt{Role: "r1", Grantee: "r2"}},
		{"grant role named all", "GRANT all TO r2", &GrantRoleStmt{Role: "all", Grantee: "r2"}},
		{"revoke role", `REVOKE "R1" FROM 'r2'`, &GrantRoleStmt{Role: "R1", Grantee: "r2", Revoke: true}},
	})
}

func TestParsePermissions(t *testing.T) {
	runParseCases(t, []parseCase{
		{"grant select keyspace", "GRANT SELECT ON KEYSPACE ks TO r",
			&GrantPermissionsStmt{Permissions: []string{"SELECT"}, Resource: ResourceName{Kind: ResKeyspace, Keyspace: "ks"}, Grantee: "r"}},
		{"grant all permissions", "GRANT ALL PERMISSIONS ON ALL KEYSPACES TO r",
			&GrantPermissionsStmt{All: true, Resource: ResourceName{Kind: ResAllKeyspaces}, Grantee: "r"}},
		{"grant modify permission table", "GRANT MODIFY PERMISSION ON TABLE ks.t TO r",
			&GrantPermissionsStmt{Permissions: []string{"MODIFY"}, Resource: ResourceName{Kind: ResTable, Table: tbl("ks", "t")}, Grantee: "r"}},
		{"grant bare table", "GRANT ALTER ON t TO r",
			&GrantPermissionsStmt{Permissions: []string{"ALTER"}, Resource: ResourceName{Kind: ResTable, Table: tbl("", "t")}, Grantee: "r"}},
		{"grant roles", "GRANT CREATE ON ALL ROLES TO r",
			&GrantPermissionsStmt{Permissions: []string{"CREATE"}, Resource: ResourceName{Kind: ResAllRoles}, Grantee: "r"}},
		{"revoke role resource", "REVOKE AUTHORIZE ON ROLE other FROM r",
			&GrantPermissionsStmt{Permissions: []string{"AUTHORIZE"}, Resource: ResourceName{Kind: ResRole, Role: "other"}, Grantee: "r", Revoke: true}},
		{"revoke all", "REVOKE ALL ON ALL KEYSPACES FROM r",
			&GrantPermissionsStmt{All: true, Resource: ResourceName{Kind: ResAllKeyspaces}, Grantee: "r", Revoke: true}},
		{"list all", "LIST ALL", &ListPermissionsStmt{All: true}},
		{"list all permissions of", "LIST ALL PERMISSIONS OF r", &ListPermissionsStmt{All: true, Of: "r"}},
		{"list select on", "LIST SELECT ON ks.t OF r NORECURSIVE",
			&ListPermissionsStmt{Permissions: []string{"SELECT"}, Resource: &ResourceName{Kind: ResTable, Table: tbl("ks", "t")}, Of: "r", NoRecursive: true}},
	})
}

func TestParseAuthErrors(t *testing.T) {
	for _, tc := range []struct{ q, msg string }{
		{"CREATE ROLE r WITH PASSWORD = 'a' AND PASSWORD = 'b'", "Multiple definition for property 'PASSWORD'"},
		{"CREATE ROLE r WITH LOGIN = 1", "expecting BOOLEAN"},
		{"CREATE ROLE r WITH LOGIN = true AND LOGIN = false", "Multiple definition for property 'LOGIN'"},
		{"CREATE ROLE ?", "Bind variables cannot be used for role names"},
		{"CREATE USER \"Bob\"", "Quoted strings are are not supported for user names"},
		{"GRANT SELECT ON ALL FUNCTIONS TO r", "FUNCTIONS resources are not supported"},
		{"GRANT SELECT ks.t TO r", "expecting K_ON"},
		{"REVOKE r1 TO r2", "expecting K_FROM"},
		{"LIST", "no viable alternative"},
	} {
		_, err := Parse(tc.q)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("Parse(%q) = %v, want a syntax error with %q", tc.q, err, tc.msg)
		}
	}
}

// TestSyntaxErrorsRedactPasswords: a role statement that fails on its
// password literal must not quote the password in the error.
func TestSyntaxErrorsRedactPasswords(t *testing.T) {
	for _, q := range []string{
		"CREATE ROLE r WITH PASSWORD 's3cret-pw'",
		"ALTER ROLE r WITH PASSWORD = 's3cret-pw' LOGIN = true",
		"CREATE USER u WITH PASSWORD = 's3cret-pw'",
		"ALTER USER u WITH PASSWORD 's3cret-pw' 's3cret-pw'",
		"CREATE ROLE r WITH PASSWORD = 's3cret-pw' AND",
		"CREATE ROLE r WITH PASSWORD = 's3cret-pw",                 // unterminated
		"CREATE ROLE r WITH PASSWORD = $$s3cret-pw$$ LOGIN",        // dollar-quoted
		"CREATE ROLE r WITH PASSWORD = 's3cret''pw' AND LOGIN = 1", // doubled quote
		"create role r with password 's3cret-pw' and login = true", // lower case
		"CREATE ROLE r WITH LOGIN = true AND PASSWORD = 's3cret-pw' garbage",
		"CREATE ROLE r WITH PASSWORD = 's3cret-pw' AND PASSWORD = 's3cret-pw'",
		"ALTER ROLE r WITH PASSWORD = 's3cret-pw' AND OPTIONS = {'s3cret-pw': 1",
		"CREATE ROLE r WITH PASSWORD = 's3cret-pw'; SELECT",
	} {
		_, err := Parse(q)
		if err == nil {
			t.Errorf("Parse(%q): no error", q)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q) error quotes the password: %v", q, err)
		}
	}
	// Other statements keep quoting what they fail on.
	if _, err := Parse("SELECT * FROM t WHERE a = 'x' 'y'"); err == nil || !strings.Contains(err.Error(), "'y'") {
		t.Errorf("non-role statement error lost its token: %v", err)
	}
}
