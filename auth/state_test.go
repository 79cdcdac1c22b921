package auth

import (
	"reflect"
	"testing"
)

func TestResourceNames(t *testing.T) {
	for _, tc := range []struct {
		r            Resource
		name, shown  string
		chain        []string
		typeName     string
		createOnRoot bool
	}{
		{AllKeyspaces(), "data", "<all keyspaces>", []string{"data"}, "DataResource", true},
		{KeyspaceResource("ks"), "data/ks", "<keyspace ks>", []string{"data/ks", "data"}, "DataResource", true},
		{TableResource("ks", "t"), "data/ks/t", "<table ks.t>", []string{"data/ks/t", "data/ks", "data"}, "DataResource", false},
		{AllRoles(), "roles", "<all roles>", []string{"roles"}, "RoleResource", true},
		{RoleResource("a/b"), "roles/a/b", "<role a/b>", []string{"roles/a/b", "roles"}, "RoleResource", false},
	} {
		t.Run(tc.shown, func(t *testing.T) {
			if tc.r.Name() != tc.name || tc.r.String() != tc.shown || tc.r.TypeName() != tc.typeName {
				t.Fatalf("Name %q String %q TypeName %q", tc.r.Name(), tc.r.String(), tc.r.TypeName())
			}
			back, err := ParseResource(tc.name)
			if err != nil || back != tc.r {
				t.Fatalf("ParseResource(%q) = %+v, %v", tc.name, back, err)
			}
			var chain []string
			for _, c := range tc.r.Chain() {
				chain = append(chain, c.Name())
			}
			if !reflect.DeepEqual(chain, tc.chain) {
				t.Fatalf("Chain %v, want %v", chain, tc.chain)
			}
			if tc.r.Applicable().Has(Create) != tc.createOnRoot {
				t.Fatalf("CREATE applicable: %v", tc.r.Applicable().Has(Create))
			}
		})
	}
	for _, bad := range []string{"", "data/", "data//t", "data/ks/", "data/a/b/c", "roles/", "role", "functions/x"} {
		if r, err := ParseResource(bad); err == nil {
			t.Fatalf("ParseResource(%q) = %+v", bad, r)
		}
	}
	if (Resource{}).Applicable() != 0 || (Resource{}).Name() != "" {
		t.Fatal("the zero resource has a name or permissions")
	}
}

func TestPermissionSets(t *testing.T) {
	s, err := ParseSet([]string{"select", "MODIFY", "Alter"})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Names(); !reflect.DeepEqual(got, []string{"ALTER", "SELECT", "MODIFY"}) {
		t.Fatalf("Names = %v (Cassandra's order is ALTER, SELECT, MODIFY)", got)
	}
	if s.Len() != 3 || !s.Has(Select) || s.Has(Drop) {
		t.Fatalf("set %v", s.Names())
	}
	if _, err := ParseSet([]string{"SELECT", "FLY"}); err == nil {
		t.Fatal("ParseSet accepted FLY")
	}
	if AllPermissions.Len() != int(numPermissions) {
		t.Fatalf("AllPermissions has %d", AllPermissions.Len())
	}
	if Permission(42).String() != "Permission(42)" {
		t.Fatal(Permission(42).String())
	}
}

// roleGraph: dba is a superuser; reader has SELECT on ks; writer is a
// member of reader and has MODIFY on ks.t; app is a member of writer;
// admin is a member of dba; loner has nothing.
func roleGraph() *Mutable {
	m := &Mutable{}
	for _, n := range []string{"dba", "reader", "writer", "app", "admin", "loner"} {
		m.PutRole(&Role{Name: n, Login: true})
	}
	m.Role("dba").Superuser = true
	m.Grant("reader", KeyspaceResource("ks"), SetOf(Select))
	m.Grant("writer", TableResource("ks", "t"), SetOf(Modify))
	m.GrantRole("reader", "writer")
	m.GrantRole("writer", "app")
	m.GrantRole("dba", "admin")
	return m
}

func TestAllowed(t *testing.T) {
	st := roleGraph().Freeze()
	t1, t2 := TableResource("ks", "t"), TableResource("ks", "u")
	other := TableResource("other", "t")
	for _, tc := range []struct {
		role string
		p    Permission
		r    Resource
		want bool
	}{
		{"reader", Select, t1, true}, // granted on the keyspace
		{"reader", Select, KeyspaceResource("ks"), true},
		{"reader", Select, AllKeyspaces(), false}, // not on the parent
		{"reader", Select, other, false},
		{"reader", Modify, t1, false},
		{"writer", Modify, t1, true},
		{"writer", Modify, t2, false},
		{"writer", Select, t2, true}, // through reader
		{"app", Select, t1, true},    // through writer, then reader
		{"app", Modify, t1, true},
		{"app", Drop, t1, false},
		{"dba", Drop, other, true},
		{"dba", Create, AllKeyspaces(), true},
		{"dba", Create, t1, true}, // applicable to its keyspace, as Cassandra walks the chain
		{"dba", Describe, AllRoles(), true},
		{"admin", Alter, RoleResource("reader"), true}, // superuser through dba
		{"loner", Select, t1, false},
		{"nosuch", Select, t1, false},
	} {
		if got := st.Allowed(tc.role, tc.p, tc.r); got != tc.want {
			t.Errorf("Allowed(%s, %s, %s) = %v, want %v", tc.role, tc.p, tc.r, got, tc.want)
		}
	}
	for role, want := range map[string]bool{"dba": true, "admin": true, "app": false, "nosuch": false} {
		if st.IsSuper(role) != want {
			t.Errorf("IsSuper(%s) = %v", role, !want)
		}
	}
	if got := st.RolesOf("app", true); !reflect.DeepEqual(got, []string{"app", "reader", "writer"}) {
		t.Errorf("RolesOf(app, recursive) = %v", got)
	}
	if got := st.RolesOf("app", false); !reflect.DeepEqual(got, []string{"app", "writer"}) {
		t.Errorf("RolesOf(app) = %v", got)
	}
	if got := st.RolesOf("nosuch", true); got != nil {
		t.Errorf("RolesOf(nosuch) = %v", got)
	}
	if got := st.Members("reader"); !reflect.DeepEqual(got, []string{"writer"}) {
		t.Errorf("Members(reader) = %v", got)
	}
	if got := st.Grants("", Resource{}); len(got) != 2 || got[0].Role != "reader" || got[1].Resource != t1 {
		t.Errorf("Grants = %+v", got)
	}
	if got := st.Granted("writer", t1); got != SetOf(Modify) {
		t.Errorf("Granted(writer, t1) = %v", got.Names())
	}
}

func TestMutable(t *testing.T) {
	t1 := TableResource("ks", "t")
	for _, tc := range []struct {
		name   string
		change func(m *Mutable)
		check  func(t *testing.T, st *State)
	}{
		{"revoke part of a grant", func(m *Mutable) {
			m.Grant("writer", t1, SetOf(Select, Alter))
			m.Revoke("writer", t1, SetOf(Modify, Alter))
		}, func(t *testing.T, st *State) {
			if st.Granted("writer", t1) != SetOf(Select) {
				t.Fatalf("left %v", st.Granted("writer", t1).Names())
			}
		}},
		{"revoke what was not granted", func(m *Mutable) {
			m.Revoke("loner", t1, AllPermissions)
			m.Revoke("reader", t1, SetOf(Select)) // granted on the keyspace, not the table
		}, func(t *testing.T, st *State) {
			if !st.Allowed("reader", Select, t1) || len(st.Grants("loner", Resource{})) != 0 {
				t.Fatal("revoking nothing changed something")
			}
		}},
		{"revoke the last permission", func(m *Mutable) {
			m.Revoke("writer", t1, SetOf(Modify))
		}, func(t *testing.T, st *State) {
			if st.Allowed("app", Modify, t1) || len(st.Grants("writer", Resource{})) != 0 {
				t.Fatal("MODIFY still held")
			}
		}},
		{"drop a role in the middle", func(m *Mutable) {
			m.Grant("reader", RoleResource("writer"), SetOf(Alter))
			m.DropRole("writer")
		}, func(t *testing.T, st *State) {
			if st.Role("writer") != nil || st.Allowed("app", Select, t1) || st.Allowed("app", Modify, t1) {
				t.Fatal("app still holds what it had through writer")
			}
			if got := st.Role("app").MemberOf; len(got) != 0 {
				t.Fatalf("app is still a member of %v", got)
			}
			if len(st.Grants("", RoleResource("writer"))) != 0 {
				t.Fatal("permissions on the dropped role remain")
			}
			if !st.Allowed("reader", Select, t1) {
				t.Fatal("reader lost its own grant")
			}
		}},
		{"drop a superuser role", func(m *Mutable) { m.DropRole("dba") }, func(t *testing.T, st *State) {
			if st.IsSuper("admin") {
				t.Fatal("admin is still a superuser")
			}
		}},
		{"revoke all on a keyspace takes its tables", func(m *Mutable) {
			m.Grant("loner", KeyspaceResource("ks2"), SetOf(Select))
			m.Grant("loner", TableResource("ks2", "t"), SetOf(Modify))
			m.RevokeAllOn(KeyspaceResource("ks"))
		}, func(t *testing.T, st *State) {
			if len(st.Grants("reader", Resource{})) != 0 || len(st.Grants("writer", Resource{})) != 0 {
				t.Fatal("grants on ks or its tables remain")
			}
			if len(st.Grants("loner", Resource{})) != 2 {
				t.Fatal("grants on ks2 went too")
			}
		}},
		{"revoke all on a role leaves similar names", func(m *Mutable) {
			m.Grant("loner", RoleResource("app"), SetOf(Alter))
			m.Grant("loner", RoleResource("app/x"), SetOf(Alter))
			m.RevokeAllOn(RoleResource("app"))
		}, func(t *testing.T, st *State) {
			if got := st.Grants("loner", Resource{}); len(got) != 1 || got[0].Resource != RoleResource("app/x") {
				t.Fatalf("grants %+v", got)
			}
		}},
		{"revoke a role", func(m *Mutable) {
			m.RevokeRole("reader", "writer")
			m.GrantRole("reader", "nosuch") // the grantee must exist
		}, func(t *testing.T, st *State) {
			if st.Allowed("app", Select, t1) || st.Role("nosuch") != nil {
				t.Fatal("app still reads")
			}
			if !st.Allowed("app", Modify, t1) {
				t.Fatal("app lost writer's MODIFY")
			}
		}},
		{"grant a role twice", func(m *Mutable) {
			m.GrantRole("reader", "writer")
			m.GrantRole("loner", "writer")
		}, func(t *testing.T, st *State) {
			if got := st.Role("writer").MemberOf; !reflect.DeepEqual(got, []string{"loner", "reader"}) {
				t.Fatalf("MemberOf %v", got)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := roleGraph()
			before := m.State()
			tc.change(m)
			tc.check(t, m.Freeze())
			// The State taken before is unchanged: it shares nothing
			// with the Mutable.
			if !before.Allowed("app", Modify, t1) || !before.Allowed("app", Select, t1) || before.NumRoles() != 6 {
				t.Fatal("a frozen State changed with its Mutable")
			}
		})
	}
	// A cycle stored by a bug or a race ends the closure; it does not
	// loop.
	m := roleGraph()
	m.GrantRole("app", "reader")
	st := m.Freeze()
	if got := st.RolesOf("reader", true); !reflect.DeepEqual(got, []string{"app", "reader", "writer"}) {
		t.Fatalf("cycle closure %v", got)
	}
	if Empty.NumRoles() != 0 || Empty.Allowed("x", Select, AllKeyspaces()) {
		t.Fatal("Empty is not empty")
	}
	// A State's Mutable is a deep copy.
	mm := st.Mutable()
	mm.Role("app").MemberOf = nil
	mm.Grant("loner", t1, AllPermissions)
	if len(st.Role("app").MemberOf) == 0 || st.Allowed("loner", Select, t1) {
		t.Fatal("changing a State's Mutable changed the State")
	}
}
