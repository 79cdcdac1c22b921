package auth

import (
	"slices"
	"sort"
	"strings"
)

// Role is a role as stored (system_auth.roles).
type Role struct {
	Name string `json:"name"`
	// SaltedHash is the bcrypt hash of the role's password; empty when the
	// role has none (it cannot log in with a password).
	SaltedHash string `json:"salted_hash,omitempty"`
	Superuser  bool   `json:"is_superuser"`
	Login      bool   `json:"can_login"`
	// MemberOf lists the roles granted to this one, sorted, without
	// duplicates.
	MemberOf []string `json:"member_of,omitempty"`
}

func (r *Role) clone() *Role {
	c := *r
	c.MemberOf = slices.Clone(r.MemberOf)
	return &c
}

// Grant is the permissions one role was granted directly on one resource
// (a row of system_auth.role_permissions).
type Grant struct {
	Role        string
	Resource    Resource
	Permissions Set
}

// State is an immutable snapshot of the roles and the permissions granted
// to them, with what every role holds through its memberships precomputed,
// so that a check costs a few map lookups. Never modify one or what its
// methods return; change a Mutable and Freeze it.
type State struct {
	roles map[string]*Role
	// perms maps a role to the permissions granted to it directly, by
	// resource name.
	perms map[string]map[string]Set

	// closure maps a role to itself and every role it is transitively a
	// member of (existing roles only), sorted.
	closure map[string][]string
	// super is true for the roles that are superusers, directly or
	// through a role they are a member of.
	super map[string]bool
	// effective maps a role to the union of the permissions granted to
	// the roles of its closure, by resource name.
	effective map[string]map[string]Set
}

// Empty is a State without roles.
var Empty = (&Mutable{}).Freeze()

// NumRoles is the number of roles.
func (s *State) NumRoles() int { return len(s.roles) }

// Role returns a role, nil when it does not exist.
func (s *State) Role(name string) *Role { return s.roles[name] }

// RoleNames returns every role name, sorted.
func (s *State) RoleNames() []string {
	out := make([]string, 0, len(s.roles))
	for n := range s.roles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// RolesOf returns a role and the roles it is a member of: transitively
// when recursive, else only those granted to it directly. It is empty
// when the role does not exist; sorted.
func (s *State) RolesOf(name string, recursive bool) []string {
	r := s.roles[name]
	if r == nil {
		return nil
	}
	if recursive {
		return s.closure[name]
	}
	out := []string{name}
	for _, m := range r.MemberOf {
		if s.roles[m] != nil {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// IsSuper reports whether a role is a superuser, itself or through a role
// it is a member of (Cassandra's Roles.hasSuperuserStatus).
func (s *State) IsSuper(name string) bool { return s.super[name] }

// Allowed reports whether a role holds permission p on resource r: on r or
// on one of its ancestors, granted to it or to a role it is a member of. A
// superuser holds every permission applicable along the chain.
func (s *State) Allowed(role string, p Permission, r Resource) bool {
	if s.roles[role] == nil {
		return false
	}
	super := s.super[role]
	eff := s.effective[role]
	for res := r; ; {
		if super && res.Applicable().Has(p) || eff[res.Name()].Has(p) {
			return true
		}
		parent, ok := res.Parent()
		if !ok {
			return false
		}
		res = parent
	}
}

// Granted returns the permissions granted directly to role on r.
func (s *State) Granted(role string, r Resource) Set { return s.perms[role][r.Name()] }

// Grants returns the permissions granted directly to role (every role
// when role is ""), on resource r only unless r is the zero Resource.
// Grants whose resource name does not parse are skipped.
func (s *State) Grants(role string, r Resource) []Grant {
	var out []Grant
	add := func(name string, byRes map[string]Set) {
		for resName, set := range byRes {
			if r.Kind != 0 && resName != r.Name() {
				continue
			}
			res, err := ParseResource(resName)
			if err != nil || set == 0 {
				continue
			}
			out = append(out, Grant{Role: name, Resource: res, Permissions: set})
		}
	}
	if role != "" {
		add(role, s.perms[role])
	} else {
		for name, byRes := range s.perms {
			add(name, byRes)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Role != out[j].Role {
			return out[i].Role < out[j].Role
		}
		return out[i].Resource.Name() < out[j].Resource.Name()
	})
	return out
}

// Members returns the roles that were granted role directly, sorted
// (system_auth.role_members).
func (s *State) Members(role string) []string {
	var out []string
	for name, r := range s.roles {
		if slices.Contains(r.MemberOf, role) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Mutable returns a deep copy of the state to change.
func (s *State) Mutable() *Mutable { return copyOf(s.roles, s.perms) }

func copyOf(roles map[string]*Role, perms map[string]map[string]Set) *Mutable {
	m := &Mutable{Roles: make(map[string]*Role, len(roles)), Perms: make(map[string]map[string]Set, len(perms))}
	for n, r := range roles {
		m.Roles[n] = r.clone()
	}
	for role, byRes := range perms {
		c := make(map[string]Set, len(byRes))
		for res, set := range byRes {
			c[res] = set
		}
		m.Perms[role] = c
	}
	return m
}

// State returns the State of m as it is now; m stays usable.
func (m *Mutable) State() *State { return copyOf(m.Roles, m.Perms).Freeze() }

// Mutable is a State being changed, by the role statements (as functions
// from one state to the next) and by the store that decodes it. Not safe
// for concurrent use.
type Mutable struct {
	Roles map[string]*Role
	// Perms maps a role to its directly granted permissions by resource
	// name. Permissions of a role that does not exist are ignored.
	Perms map[string]map[string]Set
}

// Freeze returns the immutable State of m; m must not be used after.
func (m *Mutable) Freeze() *State {
	s := &State{roles: m.Roles, perms: m.Perms, closure: map[string][]string{}, super: map[string]bool{},
		effective: map[string]map[string]Set{}}
	if s.roles == nil {
		s.roles = map[string]*Role{}
	}
	if s.perms == nil {
		s.perms = map[string]map[string]Set{}
	}
	for name := range s.roles {
		seen := map[string]bool{name: true}
		queue := []string{name}
		for i := 0; i < len(queue); i++ {
			for _, m := range s.roles[queue[i]].MemberOf {
				if !seen[m] && s.roles[m] != nil {
					seen[m] = true
					queue = append(queue, m)
				}
			}
		}
		sort.Strings(queue)
		s.closure[name] = queue
		eff := map[string]Set{}
		for _, r := range queue {
			if s.roles[r].Superuser {
				s.super[name] = true
			}
			for res, set := range s.perms[r] {
				eff[res] |= set
			}
		}
		s.effective[name] = eff
	}
	return s
}

// Role returns a role to change, nil when it does not exist.
func (m *Mutable) Role(name string) *Role { return m.Roles[name] }

// PutRole creates or replaces a role.
func (m *Mutable) PutRole(r *Role) {
	if m.Roles == nil {
		m.Roles = map[string]*Role{}
	}
	m.Roles[r.Name] = r
}

// DropRole removes a role with everything that refers to it: its
// memberships in other roles, the permissions granted to it and those
// granted on it (Cassandra's dropRole, revokeAllFrom and revokeAllOn).
func (m *Mutable) DropRole(name string) {
	delete(m.Roles, name)
	for _, r := range m.Roles {
		r.MemberOf = slices.DeleteFunc(r.MemberOf, func(x string) bool { return x == name })
	}
	delete(m.Perms, name)
	m.RevokeAllOn(RoleResource(name))
}

// Grant adds permissions on r to role.
func (m *Mutable) Grant(role string, r Resource, ps Set) {
	if m.Perms == nil {
		m.Perms = map[string]map[string]Set{}
	}
	if m.Perms[role] == nil {
		m.Perms[role] = map[string]Set{}
	}
	m.Perms[role][r.Name()] |= ps
}

// Revoke removes permissions on r from role; revoking what was not
// granted does nothing, as in Cassandra.
func (m *Mutable) Revoke(role string, r Resource, ps Set) {
	byRes := m.Perms[role]
	if byRes == nil {
		return
	}
	name := r.Name()
	if left := byRes[name] &^ ps; left != 0 {
		byRes[name] = left
	} else {
		delete(byRes, name)
	}
	if len(byRes) == 0 {
		delete(m.Perms, role)
	}
}

// RevokeAllOn removes every permission granted on r and on the resources
// under it (a dropped keyspace takes its tables' grants along), from every
// role.
func (m *Mutable) RevokeAllOn(r Resource) {
	name := r.Name()
	for role, byRes := range m.Perms {
		for res := range byRes {
			if res == name || strings.HasPrefix(res, name+"/") && r.Kind != RoleKind {
				delete(byRes, res)
			}
		}
		if len(byRes) == 0 {
			delete(m.Perms, role)
		}
	}
}

// GrantRole makes grantee a member of role. Both must exist.
func (m *Mutable) GrantRole(role, grantee string) {
	g := m.Roles[grantee]
	if g == nil || slices.Contains(g.MemberOf, role) {
		return
	}
	g.MemberOf = append(g.MemberOf, role)
	sort.Strings(g.MemberOf)
}

// RevokeRole removes grantee's membership of role.
func (m *Mutable) RevokeRole(role, grantee string) {
	if g := m.Roles[grantee]; g != nil {
		g.MemberOf = slices.DeleteFunc(g.MemberOf, func(x string) bool { return x == role })
	}
}
