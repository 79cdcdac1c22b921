package cqltest

import (
	"context"
	"log/slog"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cql/frame"
	"github.com/cosmosd/cosmosd/daemon"
	"github.com/cosmosd/cosmosd/security"
	"github.com/cosmosd/cosmosd/test/logbuf"
	"github.com/cosmosd/cosmosd/test/testcluster"
)

// TestCQLWithPassword runs the driver-level suite, unchanged, against a node
// that requires a login (authenticator password): gocql logs in with its
// PasswordAuthenticator as the superuser, raw-frame cases answer
// AUTHENTICATE with a SASL PLAIN token, and the role statements of the
// Errors case run instead of being refused.
func TestCQLWithPassword(t *testing.T) {
	t.Parallel()
	runCQL(t, testcluster.Options{Password: "suite-superuser-pw"})
}

// TestCQLSecure runs the suite over TLS with client certificates and a
// login, as a production node runs.
func TestCQLSecure(t *testing.T) {
	t.Parallel()
	runCQL(t, testcluster.Options{TLS: true, CQLRequireClientCert: true, Password: "suite-superuser-pw"})
}

// TestPythonDriverWithPassword runs test/python/test_driver.py unchanged
// with the driver's PlainTextAuthProvider, and checks that the driver
// reports a wrong password as AuthenticationFailed naming it.
func TestPythonDriverWithPassword(t *testing.T) {
	t.Parallel()
	needPython(t)
	c := testcluster.Start(t, testcluster.Options{Password: "py-superuser-pw"})
	runPythonDriver(t, c, "--user", testcluster.Superuser, "--password", "py-superuser-pw")
	host, port := c.CQLHostPort(0)
	for _, tc := range []struct{ name, login, want string }{
		{"wrong password", "PlainTextAuthProvider(username='cassandra', password='py-wrong-pw')",
			`code=0100 [Bad credentials] message="Provided username cassandra and/or password are incorrect"`},
		{"no credentials", "None", "AuthenticationFailed: Remote end requires authentication"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := `
import sys
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster, NoHostAvailable
c = Cluster([sys.argv[1]], port=int(sys.argv[2]), protocol_version=4, connect_timeout=10, auth_provider=` + tc.login + `)
try:
    c.connect()
    print("connected")
except NoHostAvailable as e:
    for err in e.errors.values():
        print("%s: %s" % (type(err).__name__, err))
finally:
    c.shutdown()
`
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := osexec.CommandContext(ctx, pythonPath, "-c", script, host, strconv.Itoa(port)).CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("python: %v\n%s\nwant %q", err, out, tc.want)
			}
		})
	}
}

// TestPythonDriverSecure runs test/python/test_driver.py unchanged over
// TLS, presenting the client certificate the node requires, and logged in
// with PlainTextAuthProvider.
func TestPythonDriverSecure(t *testing.T) {
	t.Parallel()
	needPython(t)
	c := testcluster.Start(t, testcluster.Options{TLS: true, CQLRequireClientCert: true, Password: "py-secure-pw"})
	runPythonDriver(t, c, "--user", testcluster.Superuser, "--password", "py-secure-pw",
		"--ca", filepath.Join(c.CertsDir, security.CAFile),
		"--cert", filepath.Join(c.CertsDir, security.ClientCertFile("root")),
		"--key", filepath.Join(c.CertsDir, security.ClientKeyFile("root")))
}

// plain is the SASL PLAIN token drivers send.
func plain(user, password string) []byte { return []byte("\x00" + user + "\x00" + password) }

// rawLogin opens a raw connection, sends STARTUP, checks that the node asks
// for Cassandra's PasswordAuthenticator, and answers with token.
func rawLogin(t *testing.T, addr string, token []byte) (*rawConn, frame.Response) {
	t.Helper()
	c := dialRaw(t, addr)
	a, ok := c.roundTrip(&frame.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}).(*frame.Authenticate)
	if !ok || a.Authenticator != auth.PasswordAuthenticatorClass {
		t.Fatalf("STARTUP: %#v, want AUTHENTICATE %s", a, auth.PasswordAuthenticatorClass)
	}
	return c, c.roundTrip(&frame.AuthResponse{Token: token})
}

// rawSession is a raw connection logged in as user.
func rawSession(t *testing.T, addr, user, password string) *rawConn {
	t.Helper()
	c, resp := rawLogin(t, addr, plain(user, password))
	if _, ok := resp.(*frame.AuthSuccess); !ok {
		t.Fatalf("login as %s on %s: %#v, want AUTH_SUCCESS", user, addr, resp)
	}
	return c
}

// loginAs opens a gocql session on node i only, logged in as user: what a
// session changes, it then reads back on the same node (revocations reach
// other nodes through the watch, which the test checks separately).
func loginAs(c *testcluster.Cluster, i int, user, password string) (*gocql.Session, error) {
	cc := c.NewClusterConfig(i)
	cc.Authenticator = gocql.PasswordAuthenticator{Username: user, Password: password}
	host, _ := c.CQLHostPort(i)
	cc.HostFilter = gocql.WhiteListHostFilter(host)
	return cc.CreateSession()
}

func mustLoginAs(t *testing.T, c *testcluster.Cluster, i int, user, password string) *gocql.Session {
	t.Helper()
	s, err := loginAs(c, i, user, password)
	if err != nil {
		t.Fatalf("log in as %s on node %d: %v", user, i, err)
	}
	t.Cleanup(s.Close)
	return s
}

// Passwords the test sets or tries; none may appear in a log line.
const (
	authSuperPW   = "super-pw-7d1f"
	authReaderPW1 = "reader-pw-1-a93c"
	authReaderPW2 = "reader-pw-2-0be4"
	authWrongPW   = "wrong-pw-55e2"
	authSyntaxPW  = "syntax-pw-c4d0"
	authLeakPW    = "leak-pw-9f1b"
)

// TestAuth drives authentication, roles and permissions on a secure
// two-node cluster (TLS with client certificates, and a login) through
// gocql and raw frames, as a client of a production cluster sees them, and
// checks that no password reaches any log line.
func TestAuth(t *testing.T) {
	t.Parallel()
	logs := &logbuf.Buffer{}
	c := testcluster.Start(t, testcluster.Options{Nodes: 2, Password: authSuperPW, TLS: true, CQLRequireClientCert: true,
		Configure: func(i int, cfg *daemon.Config) {
			cfg.ReplicationFactor = 2
			cfg.Knobs.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test_node", i)
		}})
	addr := func(i int) string {
		host, port := c.CQLHostPort(i)
		return host + ":" + strconv.Itoa(port)
	}
	for i := range c.Nodes {
		rawTLS.Store(addr(i), testcluster.ClientTLS(t, c.CertsDir, "root"))
		t.Cleanup(func() { rawTLS.Delete(addr(i)) })
	}
	su := mustLoginAs(t, c, 0, testcluster.Superuser, authSuperPW)
	top := t // owns what lives across subtests

	if !t.Run("Handshake", func(t *testing.T) {
		// Nothing but a login is accepted before one succeeded.
		rc := dialRaw(t, addr(0))
		if _, ok := rc.roundTrip(&frame.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}).(*frame.Authenticate); !ok {
			t.Fatal("STARTUP: no AUTHENTICATE")
		}
		rawErr(t, "QUERY before the login", rc.query("SELECT key FROM system.local"), frame.CodeProtocolError, "expecting SASL_RESPONSE")
		rawErr(t, "REGISTER before the login", rc.roundTrip(&frame.Register{Events: []string{frame.EventSchemaChange}}), frame.CodeProtocolError, "expecting SASL_RESPONSE")
		rawErr(t, "STARTUP again", rc.roundTrip(&frame.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}), frame.CodeProtocolError, "expecting SASL_RESPONSE")
		// A wrong password is BadCredentials (0x0100), and the
		// connection may try again.
		e := rawErr(t, "wrong password", rc.roundTrip(&frame.AuthResponse{Token: plain(testcluster.Superuser, authWrongPW)}),
			frame.CodeBadCredentials, "Provided username cassandra and/or password are incorrect")
		if strings.Contains(e.Message, authWrongPW) {
			t.Fatalf("the refusal quotes the password: %q", e.Message)
		}
		rawErr(t, "malformed token", rc.roundTrip(&frame.AuthResponse{Token: []byte("cassandra\x00" + authWrongPW)}),
			frame.CodeBadCredentials, "Authentication ID must not be null")
		rawErr(t, "empty token", rc.roundTrip(&frame.AuthResponse{}), frame.CodeBadCredentials, "Password must not be null")
		if _, ok := rc.roundTrip(&frame.AuthResponse{Token: plain(testcluster.Superuser, authSuperPW)}).(*frame.AuthSuccess); !ok {
			t.Fatal("the right password after wrong ones: no AUTH_SUCCESS")
		}
		if _, ok := rc.query("SELECT key FROM system.local").(*frame.RowsResult); !ok {
			t.Fatal("query after the login failed")
		}
		rawErr(t, "second login", rc.roundTrip(&frame.AuthResponse{Token: plain(testcluster.Superuser, authSuperPW)}), frame.CodeProtocolError, "already authenticated")

		// gocql without credentials, and with a wrong password.
		cc := c.NewClusterConfig(0)
		cc.Authenticator = nil
		if s, err := cc.CreateSession(); err == nil {
			s.Close()
			t.Fatal("a session without credentials was created")
		} else if !strings.Contains(err.Error(), "authentication required") {
			t.Fatalf("without credentials: %v, want authentication required", err)
		}
		if s, err := loginAs(c, 0, testcluster.Superuser, authWrongPW); err == nil {
			s.Close()
			t.Fatal("a session with a wrong password was created")
		} else if !strings.Contains(err.Error(), "Provided username cassandra and/or password are incorrect") {
			t.Fatalf("wrong password: %v", err)
		}
		// The node keeps serving the right password.
		eq(t, "a new session after failures", strs(t, mustLoginAs(t, c, 0, testcluster.Superuser, authSuperPW),
			"SELECT key FROM system.local"), []string{"local"})
	}) {
		return
	}

	var reader *gocql.Session
	if !t.Run("ReadNotWrite", func(t *testing.T) {
		keyspace(t, su, "authks")
		exec(t, su, "CREATE TABLE authks.t (k int PRIMARY KEY, v text)",
			"INSERT INTO authks.t (k, v) VALUES (1, 'a')",
			"CREATE ROLE reader WITH PASSWORD = '"+authReaderPW1+"' AND LOGIN = true",
			"GRANT SELECT ON KEYSPACE authks TO reader")
		reader = mustLoginAs(top, c, 0, "reader", authReaderPW1)
		eq(t, "reader's SELECT", strs(t, reader, "SELECT v FROM authks.t WHERE k = 1"), []string{"a"})
		queryErr(t, reader, "INSERT INTO authks.t (k, v) VALUES (2, 'b')", codeUnauthorized,
			"User reader has no MODIFY permission on <table authks.t> or any of its parents")
		queryErr(t, reader, "UPDATE authks.t SET v = 'x' WHERE k = 1 IF v = 'a'", codeUnauthorized, "has no MODIFY permission")
		queryErr(t, reader, "TRUNCATE authks.t", codeUnauthorized, "has no MODIFY permission on <table authks.t>")
		queryErr(t, reader, "DROP TABLE authks.t", codeUnauthorized, "User reader has no DROP permission on <table authks.t> or any of its parents")
		queryErr(t, reader, "CREATE TABLE authks.u (k int PRIMARY KEY)", codeUnauthorized, "has no CREATE permission on <keyspace authks>")
		queryErr(t, reader, "CREATE KEYSPACE authks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
			codeUnauthorized, "has no CREATE permission on <all keyspaces>")
		// A prepared write is refused at execution.
		queryErrArgs(t, reader, "INSERT INTO authks.t (k, v) VALUES (?, ?)", []any{3, "c"}, codeUnauthorized, "has no MODIFY permission")
		// Drivers' metadata tables stay readable; system_auth does not.
		eq(t, "system.local", strs(t, reader, "SELECT key FROM system.local"), []string{"local"})
		queryErr(t, reader, "SELECT role FROM system_auth.roles", codeUnauthorized, "has no SELECT permission on <table system_auth.roles>")
		// Role statements reader has no access to.
		queryErr(t, reader, "CREATE ROLE sneaky", codeUnauthorized, "User reader does not have sufficient privileges to perform the requested operation")
		queryErr(t, reader, "ALTER ROLE reader WITH SUPERUSER = true", codeUnauthorized, "You aren't allowed to alter your own superuser status")
		queryErr(t, reader, "ALTER ROLE reader WITH LOGIN = false", codeUnauthorized, "You aren't allowed to alter LOGIN")
		queryErr(t, reader, "ALTER ROLE cassandra WITH PASSWORD = '"+authLeakPW+"'", codeUnauthorized, "User reader does not have sufficient privileges")
		queryErr(t, reader, "GRANT SELECT ON KEYSPACE authks TO reader", codeUnauthorized, "User reader has no AUTHORIZE permission on <keyspace authks> or any of its parents")
		queryErr(t, reader, "LIST ALL PERMISSIONS", codeUnauthorized, "You are not authorized to view everyone's permissions")
		queryErr(t, reader, "LIST ALL PERMISSIONS OF cassandra", codeUnauthorized, "You are not authorized to view cassandra's permissions")
		// A role sees its own roles and grants, as in Cassandra.
		eq(t, "reader's LIST ROLES", query(t, reader, "LIST ROLES"),
			[]map[string]any{{"role": "reader", "super": false, "login": true, "options": map[string]string{}}})
		eq(t, "reader's LIST PERMISSIONS", query(t, reader, "LIST ALL PERMISSIONS OF reader"),
			[]map[string]any{{"role": "reader", "username": "reader", "resource": "<keyspace authks>", "permission": "SELECT"}})
		eq(t, "superuser's LIST ROLES", query(t, su, "LIST ROLES"), []map[string]any{
			{"role": "cassandra", "super": true, "login": true, "options": map[string]string{}},
			{"role": "reader", "super": false, "login": true, "options": map[string]string{}}})
		// The system_auth tables drivers and cqlsh read; never a hash.
		rows := query(t, su, "SELECT * FROM system_auth.roles")
		eq(t, "system_auth.roles", len(rows), 2)
		for _, r := range rows {
			if _, ok := r["salted_hash"]; ok && r["salted_hash"] != "" {
				t.Fatalf("system_auth.roles shows a salted hash: %v", r)
			}
		}
		eq(t, "system_auth.role_permissions", query(t, su, "SELECT * FROM system_auth.role_permissions WHERE role = 'reader'"),
			[]map[string]any{{"role": "reader", "resource": "data/authks", "permissions": []string{"SELECT"}}})
	}) {
		return
	}

	if !t.Run("Inheritance", func(t *testing.T) {
		exec(t, su, "CREATE ROLE writers", "GRANT MODIFY ON TABLE authks.t TO writers", "GRANT writers TO reader")
		// On the session reader already had: no reconnection.
		exec(t, reader, "INSERT INTO authks.t (k, v) VALUES (2, 'b')")
		eq(t, "LIST PERMISSIONS OF reader", query(t, su, "LIST ALL PERMISSIONS OF reader"), []map[string]any{
			{"role": "reader", "username": "reader", "resource": "<keyspace authks>", "permission": "SELECT"},
			{"role": "writers", "username": "writers", "resource": "<table authks.t>", "permission": "MODIFY"}})
		// ON a resource lists the grants on it and on its parents;
		// NORECURSIVE only those on it (inherited roles count either
		// way, as in Cassandra).
		eq(t, "LIST PERMISSIONS ON TABLE", len(query(t, su, "LIST ALL PERMISSIONS ON TABLE authks.t OF reader")), 2)
		eq(t, "LIST PERMISSIONS ON TABLE NORECURSIVE", query(t, su, "LIST ALL PERMISSIONS ON TABLE authks.t OF reader NORECURSIVE"),
			[]map[string]any{{"role": "writers", "username": "writers", "resource": "<table authks.t>", "permission": "MODIFY"}})
		var roles []string
		for _, r := range query(t, reader, "LIST ROLES") {
			roles = append(roles, r["role"].(string))
		}
		eq(t, "reader's roles", roles, []string{"reader", "writers"})
		queryErr(t, su, "GRANT reader TO writers", codeInvalid, "reader is a member of writers") // no cycles
		exec(t, su, "REVOKE writers FROM reader")
		queryErr(t, reader, "INSERT INTO authks.t (k, v) VALUES (3, 'c')", codeUnauthorized, "has no MODIFY permission")
	}) {
		return
	}

	if !t.Run("OtherNode", func(t *testing.T) {
		// reader is logged in on node 1 on one connection throughout.
		rc := rawSession(t, addr(1), "reader", authReaderPW1)
		rawErr(t, "node 1 before the grant", rc.query("INSERT INTO authks.t (k, v) VALUES (4, 'd')"), frame.CodeUnauthorized, "has no MODIFY permission")
		exec(t, su, "GRANT writers TO reader") // through node 0
		rawCheckVoid(t, "node 1 after the grant", rc.query("INSERT INTO authks.t (k, v) VALUES (4, 'd')"))
		// A revocation needs no refusal to be seen: the watch brings it.
		exec(t, su, "REVOKE writers FROM reader", "REVOKE SELECT ON KEYSPACE authks FROM reader")
		eventually(t, 30*time.Second, "node 1 to see the revocations", func() bool {
			_, ok := rc.query("SELECT v FROM authks.t WHERE k = 1").(*frame.Error)
			return ok
		})
		rawErr(t, "node 1 SELECT after the revocation", rc.query("SELECT v FROM authks.t WHERE k = 1"), frame.CodeUnauthorized,
			"User reader has no SELECT permission on <table authks.t> or any of its parents")
		rawErr(t, "node 1 INSERT after the revocation", rc.query("INSERT INTO authks.t (k, v) VALUES (5, 'e')"), frame.CodeUnauthorized, "has no MODIFY permission")
		exec(t, su, "GRANT SELECT ON KEYSPACE authks TO reader")

		// What one node just did is seen at once by the other: a role
		// created on node 0 logs in, and is granted to, on node 1.
		su0 := rawSession(t, addr(0), testcluster.Superuser, authSuperPW)
		su1 := rawSession(t, addr(1), testcluster.Superuser, authSuperPW)
		rawCheckVoid(t, "CREATE ROLE on node 0", su0.query("CREATE ROLE fresh WITH PASSWORD = '"+authLeakPW+"' AND LOGIN = true"))
		rawCheckVoid(t, "GRANT on node 1", su1.query("GRANT SELECT ON KEYSPACE authks TO fresh"))
		fresh := rawSession(t, addr(1), "fresh", authLeakPW)
		if _, ok := fresh.query("SELECT v FROM authks.t WHERE k = 1").(*frame.RowsResult); !ok {
			t.Fatal("fresh's SELECT on node 1")
		}
		// A drop is seen at once by the node that made it; the other
		// learns of it through the watch (a login succeeds only while
		// the drop is on its way).
		rawCheckVoid(t, "DROP ROLE on node 1", su1.query("DROP ROLE fresh"))
		_, resp := rawLogin(t, addr(1), plain("fresh", authLeakPW))
		rawErr(t, "a dropped role", resp, frame.CodeBadCredentials, "Provided username fresh and/or password are incorrect")
		eventually(t, 30*time.Second, "node 0 to refuse the dropped role", func() bool {
			_, resp := rawLogin(t, addr(0), plain("fresh", authLeakPW))
			_, refused := resp.(*frame.Error)
			return refused
		})
	}) {
		return
	}

	if !t.Run("AlterOwnPassword", func(t *testing.T) {
		// Changed through node 0, the new password logs in at once on
		// node 1, and the old one no longer does.
		rc := rawSession(t, addr(0), "reader", authReaderPW1)
		rawCheckVoid(t, "ALTER ROLE on node 0", rc.query("ALTER ROLE reader WITH PASSWORD = '"+authReaderPW2+"'"))
		rawSession(t, addr(1), "reader", authReaderPW2)
		_, resp := rawLogin(t, addr(0), plain("reader", authReaderPW1))
		rawErr(t, "the old password", resp, frame.CodeBadCredentials, "Provided username reader and/or password are incorrect")
		s := mustLoginAs(t, c, 0, "reader", authReaderPW2)
		eq(t, "with the new password", strs(t, s, "SELECT v FROM authks.t WHERE k = 1"), []string{"a"})
		// A role without LOGIN cannot log in, whatever its password.
		exec(t, su, "CREATE ROLE nologin WITH PASSWORD = '"+authLeakPW+"'")
		_, resp = rawLogin(t, addr(0), plain("nologin", authLeakPW))
		rawErr(t, "a role without LOGIN", resp, frame.CodeBadCredentials, "nologin is not permitted to log in")
	}) {
		return
	}

	if !t.Run("DropKeyspaceRevokes", func(t *testing.T) {
		exec(t, su, "GRANT ALTER ON TABLE authks.t TO reader", "DROP KEYSPACE authks")
		if rows := query(t, su, "LIST ALL PERMISSIONS OF reader"); len(rows) != 0 {
			t.Fatalf("permissions on the dropped keyspace remain: %v", rows)
		}
		keyspace(t, su, "authks")
		exec(t, su, "CREATE TABLE authks.t (k int PRIMARY KEY, v text)")
		queryErr(t, reader, "SELECT v FROM authks.t WHERE k = 1", codeUnauthorized, "has no SELECT permission")
		// The creator (the superuser here) was granted everything on
		// what it created.
		eq(t, "creator's grants", len(query(t, su, "LIST ALL PERMISSIONS ON KEYSPACE authks OF cassandra NORECURSIVE")), 6)
		exec(t, su, "GRANT SELECT ON KEYSPACE authks TO reader")
	}) {
		return
	}

	if !t.Run("SyntaxErrorHidesPassword", func(t *testing.T) {
		for _, q := range []string{
			"CREATE ROLE leak WITH PASSWORD '" + authSyntaxPW + "'",
			"ALTER ROLE reader WITH PASSWORD = '" + authSyntaxPW + "' AND",
			"CREATE USER leak WITH PASSWORD '" + authSyntaxPW + "' SUPERUSER garbage",
		} {
			err := su.Query(q).Exec()
			wantErr(t, q, err, codeSyntax)
			if strings.Contains(err.Error(), authSyntaxPW) {
				t.Fatalf("%s: the error quotes the password: %v", q, err)
			}
		}
	}) {
		return
	}

	if !t.Run("RestartKeepsRoles", func(t *testing.T) {
		c.RestartNode(1)
		rc := rawSession(t, addr(1), "reader", authReaderPW2)
		// The partition's replica on node 1 may be catching up.
		eventually(t, 30*time.Second, "reader's SELECT on the restarted node", func() bool {
			_, ok := rc.query("SELECT v FROM authks.t WHERE k = 1").(*frame.RowsResult)
			return ok
		})
		rawErr(t, "reader's INSERT on the restarted node", rc.query("INSERT INTO authks.t (k, v) VALUES (9, 'z')"), frame.CodeUnauthorized, "has no MODIFY permission")
		_, resp := rawLogin(t, addr(1), plain("reader", authReaderPW1))
		rawErr(t, "the old password after the restart", resp, frame.CodeBadCredentials, "incorrect")
	}) {
		return
	}

	// Checked last, over everything the cluster logged.
	t.Run("NoPasswordInLogs", func(t *testing.T) {
		out := logs.String()
		for _, want := range []string{"login failed", "role=reader", "created superuser role"} {
			if !strings.Contains(out, want) {
				t.Fatalf("the captured log lacks %q: the capture does not work", want)
			}
		}
		for _, pw := range []string{authSuperPW, authReaderPW1, authReaderPW2, authWrongPW, authSyntaxPW, authLeakPW} {
			if i := strings.Index(out, pw); i >= 0 {
				start := strings.LastIndexByte(out[:i], '\n') + 1
				end := strings.IndexByte(out[i:], '\n')
				t.Fatalf("a password is logged: %s", out[start:i+max(end, 0)])
			}
		}
	})
}

// TestAuthFailedLoginRateLimit: failed logins from one client are
// throttled after a burst (auth.DefaultFailureBurst), with a message that
// says when to retry, and the right password logs in again once the
// throttle ends. It has a node of its own, as it throttles this process's
// logins.
func TestAuthFailedLoginRateLimit(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{Password: "limit-superuser-pw"})
	host, port := c.CQLHostPort(0)
	addr := host + ":" + strconv.Itoa(port)
	rc := dialRaw(t, addr)
	if _, ok := rc.roundTrip(&frame.Startup{Options: map[string]string{"CQL_VERSION": "3.0.0"}}).(*frame.Authenticate); !ok {
		t.Fatal("no AUTHENTICATE")
	}
	failures := 0
	var throttled *frame.Error
	for i := 0; i < 500 && throttled == nil; i++ {
		e := rawErr(t, "wrong password", rc.roundTrip(&frame.AuthResponse{Token: plain(testcluster.Superuser, authWrongPW)}), frame.CodeBadCredentials, "")
		if strings.Contains(e.Message, "Too many failed login attempts") {
			throttled = e
		} else {
			failures++
		}
	}
	if throttled == nil {
		t.Fatal("500 failed logins in a row were never throttled")
	}
	if failures < auth.DefaultFailureBurst {
		t.Fatalf("throttled after %d failures, want at least the burst of %d", failures, auth.DefaultFailureBurst)
	}
	if !strings.Contains(throttled.Message, "retry in") {
		t.Fatalf("throttle message %q does not say when to retry", throttled.Message)
	}
	t.Logf("throttled after %d failures: %s", failures, throttled.Message)
	// Throttling ends: the right password logs in again.
	eventually(t, 30*time.Second, "the right password to log in after the throttle", func() bool {
		_, ok := rc.roundTrip(&frame.AuthResponse{Token: plain(testcluster.Superuser, "limit-superuser-pw")}).(*frame.AuthSuccess)
		return ok
	})
}
