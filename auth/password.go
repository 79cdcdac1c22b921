package auth

import (
	"bytes"
	"fmt"

	"golang.org/x/crypto/bcrypt"
)

// PasswordAuthenticatorClass is the authenticator named in AUTHENTICATE:
// drivers (gocql's PasswordAuthenticator, the DataStax drivers'
// PlainTextAuthProvider, cqlsh -u/-p) answer it with a SASL PLAIN token.
const PasswordAuthenticatorClass = "org.apache.cassandra.auth.PasswordAuthenticator"

// DefaultHashCost is the bcrypt cost of new password hashes: 2^10 rounds,
// Cassandra's default (auth_bcrypt_gensalt_log2_rounds), about 50 ms of
// CPU per login on a current core.
const DefaultHashCost = bcrypt.DefaultCost

// MaxPasswordBytes is the longest password: bcrypt reads no more.
const MaxPasswordBytes = 72

// ErrPasswordTooLong refuses a password bcrypt would truncate.
var ErrPasswordTooLong = fmt.Errorf("passwords are limited to %d bytes", MaxPasswordBytes)

// HashPassword returns a salted bcrypt hash of password at cost (0 means
// DefaultHashCost). bcrypt reads at most 72 bytes of a password; longer
// ones are refused rather than silently truncated.
func HashPassword(password string, cost int) (string, error) {
	if cost == 0 {
		cost = DefaultHashCost
	}
	if len(password) > MaxPasswordBytes {
		return "", ErrPasswordTooLong
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		// The error never holds the password.
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// checkPassword reports whether password matches hash. With an empty
// hash (no such role, or a role without a password) it compares against
// dummy instead and reports false, so that a failed login takes as long
// whatever the reason, and the time taken does not tell which role names
// exist.
//
// A password longer than MaxPasswordBytes never matches: bcrypt compares
// only its first 72 bytes, so without this check a stored password
// followed by anything would log in too.
func checkPassword(hash string, dummy []byte, password string) bool {
	if hash == "" || len(password) > MaxPasswordBytes {
		_ = bcrypt.CompareHashAndPassword(dummy, []byte(password[:min(len(password), MaxPasswordBytes)]))
		return false
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// DecodePlain decodes a SASL PLAIN token, [authzid] NUL authcid NUL
// passwd (RFC 4616), as Cassandra's PasswordAuthenticator does: scanning
// from the end, the last field is the password and the one before it the
// user. Errors carry Cassandra's messages, which never include the token.
func DecodePlain(token []byte) (user, password string, err error) {
	var u, p []byte
	gotU, gotP := false, false
	end := len(token)
	for i := len(token) - 1; i >= 0; i-- {
		if token[i] != 0 {
			continue
		}
		switch {
		case !gotP:
			p, gotP = token[i+1:end], true
		case !gotU:
			u, gotU = token[i+1:end], true
		default:
			return "", "", &LoginError{Message: "Credential format error: username or password is empty or contains NUL(\\0) character"}
		}
		end = i
	}
	if !gotP || len(p) == 0 {
		return "", "", &LoginError{Message: "Password must not be null"}
	}
	if !gotU || len(u) == 0 {
		return "", "", &LoginError{Message: "Authentication ID must not be null"}
	}
	if bytes.IndexByte(u, 0) >= 0 || bytes.IndexByte(p, 0) >= 0 {
		return "", "", &LoginError{Message: "Credential format error: username or password is empty or contains NUL(\\0) character"}
	}
	return string(u), string(p), nil
}
