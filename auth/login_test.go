package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/cosmosd/cosmosd/test/logbuf"
)

// token is the SASL PLAIN token a driver sends.
func token(user, password string) []byte { return []byte("\x00" + user + "\x00" + password) }

// loginState has alice (login, password "alice-pw"), nologin (a password
// but LOGIN false) and nopw (LOGIN without a password).
func loginState(t *testing.T) *State {
	t.Helper()
	m := &Mutable{}
	for _, r := range []struct {
		name, pw string
		login    bool
	}{{"alice", "alice-pw", true}, {"nologin", "nologin-pw", false}, {"nopw", "", true}} {
		role := &Role{Name: r.name, Login: r.login}
		if r.pw != "" {
			h, err := HashPassword(r.pw, bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			role.SaltedHash = h
		}
		m.PutRole(role)
	}
	return m.Freeze()
}

func TestLogin(t *testing.T) {
	st := loginState(t)
	var logs logbuf.Buffer
	a := NewAuthenticator(LoginConfig{State: func() *State { return st }, HashCost: bcrypt.MinCost,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, tc := range []struct {
		name  string
		token []byte
		role  string
		err   string
	}{
		{"right password", token("alice", "alice-pw"), "alice", ""},
		{"with authzid", []byte("someone\x00alice\x00alice-pw"), "alice", ""},
		{"wrong password", token("alice", "wrong-pw-1"), "", "Provided username alice and/or password are incorrect"},
		{"password too long", token("alice", "alice-pw"+strings.Repeat("x", 80)), "", "Provided username alice and/or password are incorrect"},
		{"no such role", token("mallory", "wrong-pw-2"), "", "Provided username mallory and/or password are incorrect"},
		{"no password set", token("nopw", "wrong-pw-3"), "", "Provided username nopw and/or password are incorrect"},
		{"may not log in", token("nologin", "nologin-pw"), "", "nologin is not permitted to log in"},
		{"malformed", []byte("alice\x00wrong-pw-4"), "", "Authentication ID must not be null"},
		{"empty password", token("alice", ""), "", "Password must not be null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			role, err := a.Login("10.0.0.1", tc.token)
			if tc.err == "" {
				if err != nil || role != tc.role {
					t.Fatalf("Login = %q, %v; want %q", role, err, tc.role)
				}
				return
			}
			var le *LoginError
			if !errors.As(err, &le) || le.Message != tc.err || le.Throttled {
				t.Fatalf("Login = %q, %v; want LoginError %q", role, err, tc.err)
			}
		})
	}
	out := logs.String()
	for _, secret := range []string{"alice-pw", "nologin-pw", "wrong-pw"} {
		if strings.Contains(out, secret) {
			t.Fatalf("a password is in the log:\n%s", out)
		}
	}
	for _, want := range []string{"client=10.0.0.1", "role=mallory", "reason=\"bad credentials\"", "reason=\"role may not log in\"", "reason=\"malformed credentials\""} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %s:\n%s", want, out)
		}
	}
}

// clock is a manual clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestLoginRateLimit(t *testing.T) {
	st := loginState(t)
	m := st.Mutable()
	m.PutRole(&Role{Name: "bob", Login: true, SaltedHash: st.Role("alice").SaltedHash}) // bob's password is alice-pw
	st = m.Freeze()
	clk := &clock{now: time.Unix(1e9, 0)}
	a := NewAuthenticator(LoginConfig{State: func() *State { return st }, HashCost: bcrypt.MinCost,
		FailureBurst: 3, FailureInterval: time.Second, Now: clk.Now})
	login := func(client, user, pw string) (string, *LoginError) {
		t.Helper()
		role, err := a.Login(client, token(user, pw))
		if err == nil {
			return role, nil
		}
		var le *LoginError
		if !errors.As(err, &le) {
			t.Fatalf("error %T %v", err, err)
		}
		return "", le
	}
	wantThrottled := func(what string, le *LoginError, fragment string) {
		t.Helper()
		if le == nil || !le.Throttled || !strings.Contains(le.Message, fragment) {
			t.Fatalf("%s: %+v, want throttled %q", what, le, fragment)
		}
	}

	// The burst of failures from one client is allowed, then even the
	// right password is refused without being looked at.
	for i := 0; i < 3; i++ {
		if _, le := login("10.0.0.1", "alice", "bad"); le == nil || le.Throttled {
			t.Fatalf("failure %d: %+v, want bad credentials", i, le)
		}
	}
	_, le := login("10.0.0.1", "bob", "alice-pw")
	wantThrottled("right password from the throttled client", le, "Too many failed login attempts from 10.0.0.1; retry in 1s")
	// The role is throttled from other clients too.
	_, le = login("10.0.0.2", "alice", "alice-pw")
	wantThrottled("throttled role from another client", le, "Too many failed login attempts for role alice")
	// Another client may log in as another role.
	if role, le := login("10.0.0.2", "bob", "alice-pw"); le != nil || role != "bob" {
		t.Fatalf("another client and role: %q %+v", role, le)
	}
	// Throttled attempts do not count as failures: one interval later,
	// exactly one more attempt is allowed, and it may succeed.
	clk.Advance(time.Second)
	if role, le := login("10.0.0.1", "alice", "alice-pw"); le != nil || role != "alice" {
		t.Fatalf("after an interval: %q %+v", role, le)
	}
	// Successes take nothing from the bucket: two seconds after it was
	// spent, it holds two attempts.
	clk.Advance(time.Second)
	for i := 0; i < 2; i++ {
		if _, le := login("10.0.0.1", "alice", "bad"); le == nil || le.Throttled {
			t.Fatalf("failure %d after refill: %+v", i, le)
		}
	}
	_, le = login("10.0.0.1", "alice", "alice-pw")
	wantThrottled("spent again", le, "retry in 1s")
	clk.Advance(400 * time.Millisecond)
	_, le = login("10.0.0.1", "alice", "alice-pw")
	wantThrottled("partly refilled", le, "retry in 600ms")
	// A full refill allows a whole burst again.
	clk.Advance(10 * time.Second)
	for i := 0; i < 3; i++ {
		if _, le := login("10.0.0.3", "alice", "bad"); le == nil || le.Throttled {
			t.Fatalf("burst after refill, failure %d: %+v", i, le)
		}
	}
	// Malformed tokens are refused before the limiter and do not count.
	for i := 0; i < 10; i++ {
		if _, le := login("10.0.0.4", "", "x"); le == nil || le.Throttled {
			t.Fatalf("malformed %d: %+v", i, le)
		}
	}
	if role, le := login("10.0.0.4", "bob", "alice-pw"); le != nil || role != "bob" {
		t.Fatalf("after malformed tokens: %q %+v", role, le)
	}
}

// Failed logins name arbitrary roles: the table of tracked keys and what
// is logged stay bounded whatever names clients send.
func TestLoginBoundsClientInput(t *testing.T) {
	st := loginState(t)
	var logs logbuf.Buffer
	clk := &clock{now: time.Unix(1e9, 0)}
	a := NewAuthenticator(LoginConfig{State: func() *State { return st }, HashCost: bcrypt.MinCost, Now: clk.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	huge := strings.Repeat("u", 1<<20)
	_, err := a.Login("10.0.0.1", token(huge, "pw"))
	var le *LoginError
	if !errors.As(err, &le) || len(le.Message) > 300 || !strings.Contains(le.Message, "uuu…") {
		t.Fatalf("huge role name: message of %d bytes", len(le.Message))
	}
	if n := len(logs.String()); n > 1000 {
		t.Fatalf("one failed login logged %d bytes", n)
	}
	a.mu.Lock()
	for k := range a.mu.failures {
		if len(k) > 100 {
			t.Fatalf("rate-limit key of %d bytes", len(k))
		}
	}
	a.mu.Unlock()
	// A long name is limited as itself: its digest key is stable.
	for i := 0; i < DefaultFailureBurst-1; i++ {
		_, _ = a.Login(fmt.Sprintf("10.1.0.%d", i), token(huge, "pw"))
	}
	_, err = a.Login("10.2.0.1", token(huge, "pw"))
	if !errors.As(err, &le) || !le.Throttled {
		t.Fatalf("the burst of a long role name: %v, want throttled", err)
	}
	if got := displayName(strings.Repeat("é", 100)); len(got) > maxShownNameBytes+len("…") || !strings.HasSuffix(got, "é…") {
		t.Fatalf("displayName cut a rune: %q", got)
	}
}

// The table of tracked keys is bounded: past maxTrackedKeys, the keys
// whose bucket refilled are forgotten.
func TestLoginFailureTableBounded(t *testing.T) {
	st := Empty
	clk := &clock{now: time.Unix(1e9, 0)}
	a := NewAuthenticator(LoginConfig{State: func() *State { return st }, HashCost: bcrypt.MinCost, Now: clk.Now})
	for i := 0; i < maxTrackedKeys; i++ {
		a.failed(clk.Now(), fmt.Sprintf("role r%d", i))
	}
	clk.Advance(time.Minute)
	a.failed(clk.Now(), "role fresh")
	a.mu.Lock()
	n := len(a.mu.failures)
	a.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d keys tracked after the sweep, want 1", n)
	}
}

// A login about to be refused refreshes the roles once and checks again:
// a role created through another node a moment ago is found.
func TestLoginRefresh(t *testing.T) {
	st := loginState(t)
	later := st.Mutable()
	h, err := HashPassword("new-pw", bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	later.PutRole(&Role{Name: "newcomer", Login: true, SaltedHash: h})
	later.Role("nologin").Login = true
	var mu sync.Mutex
	current, refreshes := st, 0
	a := NewAuthenticator(LoginConfig{HashCost: bcrypt.MinCost,
		State: func() *State { mu.Lock(); defer mu.Unlock(); return current },
		Refresh: func() {
			mu.Lock()
			defer mu.Unlock()
			refreshes++
			current = later.State()
		}})
	if role, err := a.Login("10.0.0.1", token("alice", "alice-pw")); err != nil || role != "alice" || refreshes != 0 {
		t.Fatalf("a good login: %q %v, %d refreshes", role, err, refreshes)
	}
	if role, err := a.Login("10.0.0.1", token("newcomer", "new-pw")); err != nil || role != "newcomer" || refreshes != 1 {
		t.Fatalf("a role the node had not seen: %q %v, %d refreshes", role, err, refreshes)
	}
	if role, err := a.Login("10.0.0.1", token("nologin", "nologin-pw")); err != nil || role != "nologin" {
		t.Fatalf("a role given LOGIN since: %q %v", role, err)
	}
	before := refreshes
	if _, err := a.Login("10.0.0.1", token("newcomer", "wrong")); err == nil || refreshes != before+1 {
		t.Fatalf("a wrong password: %v, %d refreshes", err, refreshes-before)
	}
}
