package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/time/rate"
)

// LoginConfig configures an Authenticator.
type LoginConfig struct {
	// State returns the current roles. Required.
	State func() *State
	// FailureBurst is how many failed logins in a row one client address,
	// or one role name, may have before its attempts are refused without
	// looking at the password. Default 10.
	FailureBurst int
	// FailureInterval is the time after which one more attempt is allowed
	// once the burst is spent: a sustained guesser gets one try per
	// interval per address and per role. Default 1s.
	FailureInterval time.Duration
	// HashCost is the bcrypt cost of the node's password hashes (default
	// DefaultHashCost): a login as a role that does not exist spends a
	// comparison at that cost too.
	HashCost int
	// Refresh, when set, brings State up to date with the store of
	// roles. A login about to be refused (bad credentials, or a role
	// that may not log in) calls it and, if the roles changed, checks
	// again: a role created, or a password changed, through another node
	// a moment ago is found. Failures are rate-limited, which bounds
	// what these calls cost.
	Refresh func()
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Defaults of LoginConfig.
const (
	DefaultFailureBurst    = 10
	DefaultFailureInterval = time.Second
)

// maxTrackedKeys bounds the addresses and role names whose failures are
// remembered: failures name arbitrary roles, so an attacker could
// otherwise grow the table without bound. Past it, buckets that refilled
// are forgotten, and if that is not enough, all of them.
const maxTrackedKeys = 1 << 16

// LoginError is a refused login. Message is what the client is told, with
// error code 0x0100 (AuthenticationError); it never contains the password.
type LoginError struct {
	Message string
	// Throttled is set when the attempt was refused by the failure rate
	// limit, without looking at the password.
	Throttled bool
}

func (e *LoginError) Error() string { return e.Message }

// Authenticator checks SASL PLAIN logins against the current roles, as
// Cassandra's PasswordAuthenticator, and rate-limits failures per client
// address and per role. Safe for concurrent use.
type Authenticator struct {
	cfg LoginConfig
	// dummy is the hash compared against for a role without one; made on
	// first use, as hashing takes a while.
	dummy func() []byte

	mu struct {
		sync.Mutex
		failures map[string]*rate.Limiter
	}
}

// NewAuthenticator returns an Authenticator.
func NewAuthenticator(cfg LoginConfig) *Authenticator {
	if cfg.FailureBurst <= 0 {
		cfg.FailureBurst = DefaultFailureBurst
	}
	if cfg.FailureInterval <= 0 {
		cfg.FailureInterval = DefaultFailureInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HashCost == 0 {
		cfg.HashCost = DefaultHashCost
	}
	a := &Authenticator{cfg: cfg}
	a.dummy = sync.OnceValue(func() []byte {
		h, _ := bcrypt.GenerateFromPassword([]byte("cosmosd: no such role"), cfg.HashCost)
		return h
	})
	a.mu.failures = map[string]*rate.Limiter{}
	return a
}

// Login checks a SASL PLAIN token from a client (its IP address) and
// returns the role it logs in as. A refusal is a *LoginError. Login
// spends a bcrypt comparison (tens of milliseconds) unless the token is
// malformed or the attempt is throttled.
func (a *Authenticator) Login(client string, token []byte) (string, error) {
	user, password, err := DecodePlain(token)
	if err != nil {
		a.cfg.Logger.Warn("login refused", "client", client, "reason", "malformed credentials")
		return "", &LoginError{Message: err.Error()}
	}
	// The role name comes from the client: it is logged, echoed and
	// used as a rate-limit key only in a bounded form.
	shown := displayName(user)
	now := a.cfg.Now()
	clientKey, roleKey := "client "+client, limitKey(user)
	if wait, throttled := a.throttled(now, clientKey); throttled {
		a.cfg.Logger.Warn("login refused", "client", client, "role", shown, "reason", "too many failed logins from the client")
		return "", &LoginError{Throttled: true,
			Message: fmt.Sprintf("Too many failed login attempts from %s; retry in %s", client, wait)}
	}
	if wait, throttled := a.throttled(now, roleKey); throttled {
		a.cfg.Logger.Warn("login refused", "client", client, "role", shown, "reason", "too many failed logins for the role")
		return "", &LoginError{Throttled: true,
			Message: fmt.Sprintf("Too many failed login attempts for role %s; retry in %s", shown, wait)}
	}
	st := a.cfg.State()
	r, ok := a.verify(st, user, password)
	if (!ok || !r.Login) && a.cfg.Refresh != nil {
		a.cfg.Refresh()
		if fresh := a.cfg.State(); fresh != st {
			r, ok = a.verify(fresh, user, password)
		}
	}
	if !ok {
		a.failed(now, clientKey, roleKey)
		a.cfg.Logger.Warn("login failed", "client", client, "role", shown, "reason", "bad credentials")
		return "", &LoginError{Message: fmt.Sprintf("Provided username %s and/or password are incorrect", shown)}
	}
	if !r.Login {
		a.cfg.Logger.Warn("login refused", "client", client, "role", shown, "reason", "role may not log in")
		return "", &LoginError{Message: fmt.Sprintf("%s is not permitted to log in", shown)}
	}
	return user, nil
}

// verify checks a password against the roles of st; it returns the role
// when it matches.
func (a *Authenticator) verify(st *State, user, password string) (*Role, bool) {
	r := st.Role(user)
	hash := ""
	if r != nil {
		hash = r.SaltedHash
	}
	return r, checkPassword(hash, a.dummy(), password)
}

// maxShownNameBytes bounds a role name from a login as logged and echoed:
// the name is whatever the client sent, up to a frame's size.
const maxShownNameBytes = 128

// displayName returns a role name from a login for logs and messages, cut
// to maxShownNameBytes (at a rune boundary) with an ellipsis.
func displayName(name string) string {
	if len(name) <= maxShownNameBytes {
		return name
	}
	cut := maxShownNameBytes
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

// limitKey is the rate-limit key of a role name: the name itself when
// short, else a digest of it, so that the table of tracked keys stays
// small whatever names clients send.
func limitKey(name string) string {
	if len(name) <= 64 && !strings.HasPrefix(name, "#") {
		return "role " + name
	}
	sum := sha256.Sum256([]byte(name))
	return "role #" + hex.EncodeToString(sum[:16])
}

// throttled reports whether key spent its burst of failures, and how long
// until its next attempt is allowed.
func (a *Authenticator) throttled(now time.Time, key string) (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	lim := a.mu.failures[key]
	if lim == nil {
		return 0, false
	}
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return 0, false
	}
	// Rounded up, so that a client retrying after the wait it was told
	// finds a token.
	wait := time.Duration((1 - tokens) * float64(a.cfg.FailureInterval))
	return (wait + time.Millisecond - 1).Truncate(time.Millisecond), true
}

// failed records a failed login against keys.
func (a *Authenticator) failed(now time.Time, keys ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, k := range keys {
		lim := a.mu.failures[k]
		if lim == nil {
			if len(a.mu.failures) >= maxTrackedKeys {
				a.sweepLocked(now)
			}
			lim = rate.NewLimiter(rate.Every(a.cfg.FailureInterval), a.cfg.FailureBurst)
			a.mu.failures[k] = lim
		}
		lim.AllowN(now, 1)
	}
}

// sweepLocked forgets the keys whose bucket refilled; if the table is
// still full, it forgets everything (an attacker spreading failures over
// that many keys gains one burst each, and the table's memory stays
// bounded).
func (a *Authenticator) sweepLocked(now time.Time) {
	for k, lim := range a.mu.failures {
		if lim.TokensAt(now) >= float64(a.cfg.FailureBurst) {
			delete(a.mu.failures, k)
		}
	}
	if len(a.mu.failures) >= maxTrackedKeys {
		clear(a.mu.failures)
	}
}
