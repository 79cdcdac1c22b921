package cluster

import (
	"github.com/cosmosd/cosmosd/cluster/metakv"

	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/auth"
)

// waitAuth polls a Meta until its roles satisfy ok.
func waitAuth(t *testing.T, m *Meta, what string, ok func(*auth.State) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok(m.State().Auth) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRolesUpdateIsStoredAndWatched(t *testing.T) {
	kv, m1 := openMeta(t)
	m2, err := OpenMeta(context.Background(), kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	r1 := NewRoles(m1)
	ctx := context.Background()
	odd := "we/ird role%2F ü" // escaped in the key, kept in the name
	err = r1.Update(ctx, func(m *auth.Mutable) error {
		m.PutRole(&auth.Role{Name: "reader", Login: true, SaltedHash: "$2a$04$hash"})
		m.PutRole(&auth.Role{Name: odd})
		m.Grant("reader", auth.TableResource("ks", "t"), auth.SetOf(auth.Select, auth.Modify))
		m.Grant(odd, auth.RoleResource("reader"), auth.SetOf(auth.Alter))
		m.GrantRole(odd, "reader")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Update returns once the writer's own Meta shows the change.
	st := m1.State().Auth
	if st.NumRoles() != 2 || !st.Allowed("reader", auth.Modify, auth.TableResource("ks", "t")) ||
		!st.Allowed("reader", auth.Alter, auth.RoleResource("reader")) || st.Role(odd) == nil || st.Role("reader").SaltedHash != "$2a$04$hash" {
		t.Fatalf("own Meta after Update: roles %v", st.RoleNames())
	}
	// The other Meta sees it through the watch.
	waitAuth(t, m2, "the grant on the other Meta", func(s *auth.State) bool {
		return s.Allowed("reader", auth.Select, auth.TableResource("ks", "t"))
	})
	recs, _, err := kv.List(ctx, "auth/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range recs {
		keys = append(keys, kv.Key)
	}
	want := []string{"auth/permissions/reader", "auth/permissions/we%2Fird%20role%252F%20%C3%BC", "auth/roles/reader",
		"auth/roles/we%2Fird%20role%252F%20%C3%BC", "auth/version"}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("keys %v, want %v", keys, want)
	}

	// Dropping a role deletes its keys, its memberships and the grants
	// on it; the other Meta follows.
	if err := r1.Update(ctx, func(m *auth.Mutable) error { m.DropRole(odd); return nil }); err != nil {
		t.Fatal(err)
	}
	waitAuth(t, m2, "the drop on the other Meta", func(s *auth.State) bool { return s.Role(odd) == nil })
	st = m2.State().Auth
	if got := st.Role("reader").MemberOf; len(got) != 0 || st.Allowed("reader", auth.Alter, auth.RoleResource("reader")) {
		t.Fatalf("after the drop: member of %v", got)
	}
	if recs, _, _ := kv.List(ctx, "auth/permissions/we"); len(recs) != 0 {
		t.Fatal("the dropped role's permissions are still stored")
	}

	// An error from change aborts the update, and a change that
	// changes nothing writes nothing.
	boom := errors.New("boom")
	if err := r1.Update(ctx, func(m *auth.Mutable) error { m.DropRole("reader"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	before, _, _ := kv.Get(ctx, "auth/version")
	if err := r1.Update(ctx, func(m *auth.Mutable) error {
		m.Revoke("reader", auth.KeyspaceResource("nosuch"), auth.AllPermissions)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	after, _, _ := kv.Get(ctx, "auth/version")
	if m1.State().Auth.Role("reader") == nil || before.ModRevision != after.ModRevision {
		t.Fatal("an aborted or empty update changed the roles")
	}
}

// Concurrent updates from two nodes all land: each runs as a transaction
// that retries on a conflicting change.
func TestRolesConcurrentUpdates(t *testing.T) {
	kv, m1 := openMeta(t)
	m2, err := OpenMeta(context.Background(), kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	writers := []*Roles{NewRoles(m1), NewRoles(m2)}
	ctx := context.Background()
	if err := writers[0].Update(ctx, func(m *auth.Mutable) error {
		m.PutRole(&auth.Role{Name: "shared"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("r%02d", i)
			errs <- writers[i%2].Update(ctx, func(m *auth.Mutable) error {
				m.PutRole(&auth.Role{Name: name})
				// Every writer changes the same role's grants too.
				m.Grant("shared", auth.KeyspaceResource(name), auth.SetOf(auth.Select))
				return nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []*Meta{m1, m2} {
		waitAuth(t, m, "every role", func(s *auth.State) bool { return s.NumRoles() == n+1 })
		if got := len(m.State().Auth.Grants("shared", auth.Resource{})); got != n {
			t.Fatalf("shared has %d grants, want %d: an update was lost", got, n)
		}
	}
}

// A record that does not decode is skipped; the rest stays usable.
func TestRolesUndecodableRecord(t *testing.T) {
	kv, m := openMeta(t)
	ctx := context.Background()
	if err := NewRoles(m).Update(ctx, func(mu *auth.Mutable) error {
		mu.PutRole(&auth.Role{Name: "good", Login: true})
		mu.Grant("good", auth.AllKeyspaces(), auth.SetOf(auth.Select))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for key, v := range map[string]string{
		"auth/roles/bad":       "{not json",
		"auth/permissions/bad": `{"data": ["FLY"]}`,
		"auth/roles/%zz":       `{}`,
	} {
		if _, err := metakv.Do(ctx, kv, metakv.Put(key, []byte(v))); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := metakv.Do(ctx, kv, metakv.Put("auth/version", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	st := m.State().Auth
	if st.NumRoles() != 1 || !st.Allowed("good", auth.Select, auth.AllKeyspaces()) {
		t.Fatalf("roles %v", st.RoleNames())
	}
}
