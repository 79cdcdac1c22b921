package auth

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestHashPassword(t *testing.T) {
	h, err := HashPassword("s3cret", bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h, "s3cret") || !strings.HasPrefix(h, "$2a$04$") {
		t.Fatalf("hash %q: want a bcrypt hash at cost 4 without the password", h)
	}
	again, err := HashPassword("s3cret", bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if again == h {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	if cost, err := bcrypt.Cost([]byte(h)); err != nil || cost != bcrypt.MinCost {
		t.Fatalf("cost %d %v, want %d", cost, err, bcrypt.MinCost)
	}
	def, err := HashPassword("x", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cost, _ := bcrypt.Cost([]byte(def)); cost != DefaultHashCost {
		t.Fatalf("default cost %d, want %d", cost, DefaultHashCost)
	}
	if _, err := HashPassword(strings.Repeat("p", MaxPasswordBytes+1), bcrypt.MinCost); !errors.Is(err, ErrPasswordTooLong) {
		t.Fatalf("73-byte password: %v, want ErrPasswordTooLong", err)
	}
	if _, err := HashPassword(strings.Repeat("p", MaxPasswordBytes), bcrypt.MinCost); err != nil {
		t.Fatalf("72-byte password: %v", err)
	}
}

func TestCheckPassword(t *testing.T) {
	long := strings.Repeat("p", MaxPasswordBytes)
	hash, err := HashPassword("s3cret", bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	longHash, err := HashPassword(long, bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("dummy"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, hash, password string
		want                 bool
	}{
		{"right", hash, "s3cret", true},
		{"wrong", hash, "s3cret2", false},
		{"prefix", hash, "s3cre", false},
		{"case", hash, "S3cret", false},
		{"empty", hash, "", false},
		{"no hash", "", "s3cret", false},
		{"no hash and the dummy's password", "", "dummy", false},
		{"garbage hash", "not a hash", "s3cret", false},
		{"72 bytes", longHash, long, true},
		// bcrypt reads 72 bytes: anything after the stored password
		// must not log in.
		{"72 bytes and more", longHash, long + "x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkPassword(tc.hash, dummy, tc.password); got != tc.want {
				t.Fatalf("checkPassword = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecodePlain(t *testing.T) {
	const (
		formatErr = "Credential format error: username or password is empty or contains NUL(\\0) character"
		noPass    = "Password must not be null"
		noUser    = "Authentication ID must not be null"
	)
	huge := bytes.Repeat([]byte("u"), 1<<20)
	for _, tc := range []struct {
		name       string
		token      []byte
		user, pass string
		err        string
	}{
		{"plain", []byte("\x00alice\x00pw"), "alice", "pw", ""},
		{"authzid is ignored", []byte("admin\x00alice\x00pw"), "alice", "pw", ""},
		{"password with spaces and unicode", []byte("\x00bob\x00p w ü"), "bob", "p w ü", ""},
		{"huge user", append(append([]byte{0}, huge...), "\x00pw"...), string(huge), "pw", ""},
		{"huge password", append([]byte("\x00u\x00"), huge...), "u", string(huge), ""},
		{"empty token", nil, "", "", noPass},
		{"no NUL", []byte("alicepw"), "", "", noPass},
		{"no user field", []byte("alice\x00pw"), "", "", noUser},
		{"empty password", []byte("\x00alice\x00"), "", "", noPass},
		{"empty user", []byte("\x00\x00pw"), "", "", noUser},
		{"only NULs", []byte("\x00\x00"), "", "", noPass},
		{"too many fields", []byte("\x00a\x00b\x00c"), "", "", formatErr},
		{"NUL in the authzid", []byte("x\x00y\x00alice\x00pw"), "", "", formatErr},
		{"huge token of NULs", bytes.Repeat([]byte{0}, 1<<16), "", "", formatErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, pass, err := DecodePlain(tc.token)
			if tc.err != "" {
				var le *LoginError
				if !errors.As(err, &le) || le.Message != tc.err {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				if user != "" || pass != "" {
					t.Fatalf("refused token decoded to %q/%q", user, pass)
				}
				return
			}
			if err != nil || user != tc.user || pass != tc.pass {
				t.Fatalf("= %q, %q, %v; want %q, %q", user[:min(len(user), 20)], pass[:min(len(pass), 20)], err, tc.user[:min(len(tc.user), 20)], tc.pass[:min(len(tc.pass), 20)])
			}
		})
	}
}

// FuzzDecodePlain: tokens come from unauthenticated clients. Decoding never
// panics, an accepted token has a non-empty user and password without NUL,
// and re-encoding them decodes the same.
func FuzzDecodePlain(f *testing.F) {
	for _, s := range []string{"\x00u\x00p", "a\x00u\x00p", "", "\x00", "\x00\x00", "u\x00p", "\x00\x00\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, token []byte) {
		user, pass, err := DecodePlain(token)
		if err != nil {
			var le *LoginError
			if !errors.As(err, &le) {
				t.Fatalf("error %T is not a *LoginError", err)
			}
			return
		}
		if user == "" || pass == "" || strings.ContainsRune(user, 0) || strings.ContainsRune(pass, 0) {
			t.Fatalf("accepted %q/%q", user, pass)
		}
		u2, p2, err := DecodePlain([]byte("\x00" + user + "\x00" + pass))
		if err != nil || u2 != user || p2 != pass {
			t.Fatalf("re-decode: %q %q %v", u2, p2, err)
		}
	})
}
