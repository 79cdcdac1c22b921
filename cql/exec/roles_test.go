package exec

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cql/exec/exectest"
)

// authExecutor returns an executor with authorization on (RequireAuth),
// over a real Meta on the in-memory metadata store, whose roles are the
// superuser "su" and "alice" (LOGIN, no permissions), and the keyspace ks
// with table ks.t.
func authExecutor(t *testing.T) (*Executor, *cluster.Meta) {
	t.Helper()
	ctx := context.Background()
	_, meta := exectest.NewMeta(t)
	roles := cluster.NewRoles(meta)
	if err := roles.Update(ctx, func(m *auth.Mutable) error {
		m.PutRole(&auth.Role{Name: "su", Superuser: true, Login: true})
		m.PutRole(&auth.Role{Name: "alice", Login: true})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	catalog := cluster.NewCatalog(meta)
	cfg := Config{NodeID: 1, Meta: meta, Catalog: catalog, Placer: &fuzzPlacer{catalog: catalog},
		Local: LocalNode{HostID: "8f3b9e52-7c0e-4a55-9d7a-1f2e3d4c5b6a", Datacenter: "dc1", Rack: "r1"}}
	// The schema is made without authorization, so that no role holds
	// anything on it.
	setup := New(cfg)
	for _, q := range []string{
		"CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		"CREATE TABLE ks.t (k int PRIMARY KEY, v int)",
	} {
		if _, err := setup.Query(ctx, &Session{}, q, Request{}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cfg.RequireAuth, cfg.Roles, cfg.PasswordHashCost = true, roles, bcrypt.MinCost
	return New(cfg), meta
}

// as returns a session logged in as role ("" is anonymous).
func as(role string) *Session {
	s := &Session{}
	if role != "" {
		s.Login(role)
	}
	return s
}

// render shows a result as the test scripts expect: "ok" for a void
// result, else a header of column names and one line per row.
func render(res *Result) string {
	if res == nil || res.Kind != ResultRows {
		return "ok"
	}
	var b strings.Builder
	for i, c := range res.Rows.Columns {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.Name)
	}
	for _, row := range res.Rows.Rows {
		b.WriteByte('\n')
		for i, cell := range row {
			if i > 0 {
				b.WriteString(" | ")
			}
			switch c := res.Rows.Columns[i]; c.Type.String() {
			case "boolean":
				fmt.Fprint(&b, len(cell) == 1 && cell[0] == 1)
			case "text", "varchar":
				b.Write(cell)
			default:
				fmt.Fprintf(&b, "%x", cell)
			}
		}
	}
	return b.String()
}

// step is one statement of a script: who runs it and what it must give,
// either the rendered result or "0xCODE fragment" for an error.
type step struct{ as, q, want string }

func runSteps(t *testing.T, e *Executor, steps []step) {
	t.Helper()
	for _, s := range steps {
		res, err := e.Query(context.Background(), as(s.as), s.q, Request{})
		got := render(res)
		if err != nil {
			got = err.Error()
			if ce, ok := err.(*Error); ok {
				got = fmt.Sprintf("0x%04x %s", int32(ce.Code), ce.Message)
			}
			if strings.HasPrefix(s.want, "0x") && strings.HasPrefix(got, s.want) {
				continue
			}
		}
		if got != s.want {
			t.Fatalf("%s: %s\n got: %s\nwant: %s", s.as, s.q, got, s.want)
		}
	}
}

func TestRoleStatements(t *testing.T) {
	e, meta := authExecutor(t)
	runSteps(t, e, []step{
		// Who may create roles, and with what.
		{"alice", "CREATE ROLE bob", "0x2100 User alice does not have sufficient privileges to perform the requested operation"},
		{"su", "CREATE ROLE bob WITH PASSWORD = 'bob-pw' AND LOGIN = true", "ok"},
		{"su", "CREATE ROLE bob", "0x2200 bob already exists"},
		{"su", "CREATE ROLE IF NOT EXISTS bob", "ok"},
		{"su", "CREATE ROLE ''", "0x2200 Role name can't be an empty string"},
		{"su", "CREATE ROLE long WITH PASSWORD = '" + strings.Repeat("p", 73) + "'", "0x2200 Password must be at most 72 bytes long"},
		{"su", "CREATE ROLE opts WITH OPTIONS = {'a': 'b'}", "0x2200 org.apache.cassandra.auth.CassandraRoleManager doesn't support OPTIONS"},
		{"su", "GRANT CREATE ON ALL ROLES TO alice", "ok"},
		{"alice", "CREATE ROLE carol WITH SUPERUSER = true", "0x2100 Only superusers can create a role with superuser status"},
		{"alice", "CREATE ROLE carol WITH LOGIN = true", "ok"},
		// The creator may alter, drop and grant what it created.
		{"su", "LIST ALL PERMISSIONS OF alice", "role username resource permission\n" +
			"alice | alice | <all roles> | CREATE\n" +
			"alice | alice | <role carol> | ALTER\n" +
			"alice | alice | <role carol> | DROP\n" +
			"alice | alice | <role carol> | AUTHORIZE"},
		{"alice", "ALTER ROLE carol WITH PASSWORD = 'carol-pw'", "ok"},
		{"alice", "ALTER ROLE carol WITH SUPERUSER = true", "0x2100 Only superusers are allowed to alter superuser status"},
		{"alice", "ALTER ROLE bob WITH PASSWORD = 'x'", "0x2100 User alice does not have sufficient privileges"},
		// A role may change its own password, and nothing else.
		{"bob", "ALTER ROLE bob WITH PASSWORD = 'bob-pw-2'", "ok"},
		{"bob", "ALTER ROLE bob WITH LOGIN = false", "0x2100 You aren't allowed to alter LOGIN"},
		{"bob", "ALTER ROLE bob WITH SUPERUSER = true", "0x2100 You aren't allowed to alter your own superuser status or that of a role granted to you"},
		{"su", "ALTER ROLE su WITH SUPERUSER = false", "0x2100 You aren't allowed to alter your own superuser status"},
		{"su", "ALTER ROLE nosuch WITH LOGIN = true", "0x2200 nosuch doesn't exist"},
		{"su", "ALTER ROLE bob WITH SUPERUSER = true", "ok"},
		{"su", "ALTER ROLE bob WITH SUPERUSER = false", "ok"},
		// Dropping.
		{"alice", "DROP ROLE bob", "0x2100 User alice does not have sufficient privileges"},
		{"su", "DROP ROLE su", "0x2200 Cannot DROP primary role for current login"},
		{"su", "DROP ROLE nosuch", "0x2200 nosuch doesn't exist"},
		{"su", "DROP ROLE IF EXISTS nosuch", "ok"},
		{"su", "CREATE ROLE boss WITH SUPERUSER = true", "ok"},
		{"su", "GRANT DROP ON ROLE boss TO alice", "ok"},
		{"alice", "DROP ROLE boss", "0x2100 Only superusers can drop a role with superuser status"},
		{"alice", "DROP ROLE carol", "ok"},
		{"su", "LIST ALL PERMISSIONS OF alice", "role username resource permission\n" +
			"alice | alice | <all roles> | CREATE\n" +
			"alice | alice | <role boss> | DROP"},
		// Role memberships.
		{"alice", "GRANT boss TO alice", "0x2100 User alice does not have sufficient privileges"},
		{"su", "GRANT nosuch TO alice", "0x2200 nosuch doesn't exist"},
		{"su", "GRANT bob TO alice", "ok"},
		{"su", "GRANT alice TO bob", "0x2200 alice is a member of bob"},
		{"su", "REVOKE boss FROM alice", "0x2200 alice is not a member of boss"},
		{"su", "LIST ROLES OF alice", "role super login options\nalice | false | true | 00000000\nbob | false | true | 00000000"},
		{"alice", "LIST ROLES", "role super login options\nalice | false | true | 00000000\nbob | false | true | 00000000"},
		{"alice", "LIST ROLES OF boss", "0x2100 You are not authorized to view roles granted to boss"},
		{"su", "LIST ROLES", "role super login options\n" +
			"alice | false | true | 00000000\nbob | false | true | 00000000\nboss | true | false | 00000000\nsu | true | true | 00000000"},
		{"su", "LIST USERS", "name super\nalice | false\nbob | false\nsu | true"},
		// Dropping a role drops its memberships and grants.
		{"su", "DROP ROLE bob", "ok"},
		{"su", "LIST ROLES OF alice", "role super login options\nalice | false | true | 00000000"},
		{"su", "DROP ROLE boss", "ok"},
		{"su", "LIST ALL PERMISSIONS OF alice", "role username resource permission\nalice | alice | <all roles> | CREATE"},
		// An empty listing is a void result, as in Cassandra.
		{"su", "LIST ALL PERMISSIONS OF su", "ok"},
	})
	// Passwords are stored as bcrypt hashes only.
	st := meta.State().Auth
	for _, name := range []string{"alice", "su"} {
		if h := st.Role(name).SaltedHash; h != "" {
			t.Fatalf("%s has a password hash %q but was given none", name, h)
		}
	}
	e2, meta2 := authExecutor(t)
	runSteps(t, e2, []step{{"su", "CREATE ROLE dave WITH PASSWORD = 'dave-pw' AND LOGIN = true", "ok"}})
	h := meta2.State().Auth.Role("dave").SaltedHash
	if !strings.HasPrefix(h, "$2a$04$") || strings.Contains(h, "dave-pw") || bcrypt.CompareHashAndPassword([]byte(h), []byte("dave-pw")) != nil {
		t.Fatalf("dave's stored hash %q", h)
	}
}

func TestPermissionChecks(t *testing.T) {
	e, _ := authExecutor(t)
	runSteps(t, e, []step{
		// Anonymous sessions: not logged in (RequireAuth).
		{"", "SELECT * FROM ks.t WHERE k = 1", "0x2100 You have not logged in"},
		{"", "CREATE ROLE x", "0x2100 You have not logged in"},
		// The data statements and the permission each needs.
		{"alice", "SELECT * FROM ks.t WHERE k = 1", "0x2100 User alice has no SELECT permission on <table ks.t> or any of its parents"},
		{"alice", "INSERT INTO ks.t (k, v) VALUES (1, 1)", "0x2100 User alice has no MODIFY permission on <table ks.t> or any of its parents"},
		{"alice", "UPDATE ks.t SET v = 1 WHERE k = 1", "0x2100 User alice has no MODIFY permission on <table ks.t>"},
		{"alice", "DELETE FROM ks.t WHERE k = 1", "0x2100 User alice has no MODIFY permission on <table ks.t>"},
		{"alice", "BEGIN BATCH INSERT INTO ks.t (k, v) VALUES (1, 1) APPLY BATCH", "0x2100 User alice has no MODIFY permission on <table ks.t>"},
		{"alice", "TRUNCATE ks.t", "0x2100 User alice has no MODIFY permission on <table ks.t>"},
		{"alice", "CREATE KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", "0x2100 User alice has no CREATE permission on <all keyspaces> or any of its parents"},
		{"alice", "ALTER KEYSPACE ks WITH durable_writes = false", "0x2100 User alice has no ALTER permission on <keyspace ks> or any of its parents"},
		{"alice", "DROP KEYSPACE ks", "0x2100 User alice has no DROP permission on <keyspace ks> or any of its parents"},
		{"alice", "CREATE TABLE ks.u (k int PRIMARY KEY)", "0x2100 User alice has no CREATE permission on <keyspace ks> or any of its parents"},
		{"alice", "ALTER TABLE ks.t ADD w int", "0x2100 User alice has no ALTER permission on <table ks.t> or any of its parents"},
		{"alice", "DROP TABLE ks.t", "0x2100 User alice has no DROP permission on <table ks.t> or any of its parents"},
		{"alice", "SELECT role FROM system_auth.roles", "0x2100 User alice has no SELECT permission on <table system_auth.roles> or any of its parents"},
		// What drivers read on connecting needs nothing.
		{"alice", "SELECT key FROM system.local", "key\nlocal"},
		// A conditional write needs SELECT too (the condition reads).
		{"su", "GRANT MODIFY ON TABLE ks.t TO alice", "ok"},
		{"alice", "UPDATE ks.t SET v = 2 WHERE k = 1 IF v = 1", "0x2100 User alice has no SELECT permission on <table ks.t>"},
		{"alice", "INSERT INTO ks.t (k, v) VALUES (1, 1) IF NOT EXISTS", "0x2100 User alice has no SELECT permission on <table ks.t>"},
		// GRANT validity and who may grant.
		{"alice", "GRANT MODIFY ON TABLE ks.t TO alice", "0x2100 User alice has no AUTHORIZE permission on <table ks.t> or any of its parents"},
		{"su", "GRANT AUTHORIZE ON KEYSPACE ks TO alice", "ok"},
		{"alice", "GRANT SELECT ON TABLE ks.t TO su", "0x2100 User alice has no SELECT permission on <table ks.t> or any of its parents"},
		{"alice", "GRANT MODIFY ON TABLE ks.t TO su", "ok"},
		{"su", "GRANT CREATE ON TABLE ks.t TO alice", "0x2000 Resource type DataResource does not support any of the requested permissions"},
		{"su", "GRANT DESCRIBE ON KEYSPACE ks TO alice", "0x2000 Resource type DataResource does not support any of the requested permissions"},
		{"su", "GRANT SELECT ON KEYSPACE nosuch TO alice", "0x2200 Resource <keyspace nosuch> doesn't exist"},
		{"su", "GRANT SELECT ON TABLE ks.nosuch TO alice", "0x2200 Resource <table ks.nosuch> doesn't exist"},
		{"su", "GRANT SELECT ON KEYSPACE ks TO nosuch", "0x2200 Role nosuch doesn't exist"},
		{"su", "GRANT SELECT ON TABLE t TO alice", "0x2200 No keyspace has been specified"},
		{"su", "REVOKE SELECT ON KEYSPACE ks FROM alice", "ok"}, // nothing to revoke
		{"su", "GRANT ALL ON TABLE ks.t TO alice", "ok"},        // ALL is what applies to a table
		{"su", "LIST ALL PERMISSIONS ON TABLE ks.t OF alice NORECURSIVE", "role username resource permission\n" +
			"alice | alice | <table ks.t> | ALTER\n" +
			"alice | alice | <table ks.t> | DROP\n" +
			"alice | alice | <table ks.t> | SELECT\n" +
			"alice | alice | <table ks.t> | MODIFY\n" +
			"alice | alice | <table ks.t> | AUTHORIZE"},
		{"su", "LIST SELECT PERMISSION ON TABLE ks.t", "role username resource permission\nalice | alice | <table ks.t> | SELECT"},
		{"su", "LIST SELECT, MODIFY ON TABLE ks.t", "0x2000 "},
		{"su", "LIST ALL PERMISSIONS ON KEYSPACE nosuch", "0x2200 <keyspace nosuch> doesn't exist"},
		// The creator of a keyspace holds everything on it; dropping the
		// keyspace revokes every permission on it and its tables.
		{"su", "GRANT CREATE ON ALL KEYSPACES TO alice", "ok"},
		{"alice", "CREATE KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}", "ok"},
		{"su", "LIST ALL PERMISSIONS ON KEYSPACE ks2 OF alice NORECURSIVE", "role username resource permission\n" +
			"alice | alice | <keyspace ks2> | CREATE\n" +
			"alice | alice | <keyspace ks2> | ALTER\n" +
			"alice | alice | <keyspace ks2> | DROP\n" +
			"alice | alice | <keyspace ks2> | SELECT\n" +
			"alice | alice | <keyspace ks2> | MODIFY\n" +
			"alice | alice | <keyspace ks2> | AUTHORIZE"},
		{"alice", "CREATE TABLE ks2.t (k int PRIMARY KEY)", "ok"},
		{"su", "GRANT SELECT ON TABLE ks2.t TO su", "ok"},
		{"alice", "DROP KEYSPACE ks2", "ok"},
		{"su", "LIST ALL PERMISSIONS OF su", "role username resource permission\nsu | su | <table ks.t> | MODIFY"},
		{"su", "SELECT role, resource FROM system_auth.role_permissions", "role resource\n" +
			"alice | data\nalice | data/ks\nalice | data/ks/t\nsu | data/ks/t"},
	})
}

// Without an authenticator every session is anonymous: everything runs
// except the role statements, which Cassandra refuses to anonymous
// sessions.
func TestRoleStatementsNeedALogin(t *testing.T) {
	e, _ := authExecutor(t)
	e.cfg.RequireAuth = false
	runSteps(t, e, []step{
		{"", "CREATE ROLE x", "0x2100 You have to be logged in and not anonymous to perform this request"},
		{"", "LIST ROLES", "0x2100 You have to be logged in and not anonymous"},
		{"", "GRANT SELECT ON KEYSPACE ks TO alice", "0x2100 You have to be logged in and not anonymous"},
		{"", "SELECT key FROM system.local", "key\nlocal"},
	})
}
