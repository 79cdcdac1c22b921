package auth

import (
	"fmt"
	"math/bits"
	"strings"
)

// Permission is one of Cassandra's permissions. The order is Cassandra's
// (the ordinal of org.apache.cassandra.auth.Permission), which LIST
// PERMISSIONS sorts by.
type Permission uint8

// Permissions.
const (
	Create Permission = iota
	Alter
	Drop
	Select
	Modify
	Authorize
	Describe
	Execute
	numPermissions
)

var permissionNames = [numPermissions]string{"CREATE", "ALTER", "DROP", "SELECT", "MODIFY", "AUTHORIZE", "DESCRIBE", "EXECUTE"}

func (p Permission) String() string {
	if p < numPermissions {
		return permissionNames[p]
	}
	return fmt.Sprintf("Permission(%d)", p)
}

// ParsePermission parses a permission name (any case).
func ParsePermission(s string) (Permission, bool) {
	for i, n := range permissionNames {
		if strings.EqualFold(n, s) {
			return Permission(i), true
		}
	}
	return 0, false
}

// Set is a set of permissions.
type Set uint16

// SetOf returns the set of ps.
func SetOf(ps ...Permission) Set {
	var s Set
	for _, p := range ps {
		s |= 1 << p
	}
	return s
}

// AllPermissions is every permission; GRANT ALL narrows it to those
// applicable to the resource.
const AllPermissions Set = 1<<numPermissions - 1

// Has reports whether p is in s.
func (s Set) Has(p Permission) bool { return s&(1<<p) != 0 }

// Len is the number of permissions in s.
func (s Set) Len() int { return bits.OnesCount16(uint16(s)) }

// List returns the permissions of s in Cassandra's order.
func (s Set) List() []Permission {
	var out []Permission
	for p := Permission(0); p < numPermissions; p++ {
		if s.Has(p) {
			out = append(out, p)
		}
	}
	return out
}

// Names returns the names of s's permissions in order.
func (s Set) Names() []string {
	var out []string
	for _, p := range s.List() {
		out = append(out, p.String())
	}
	return out
}

// ParseSet parses permission names; unknown names are errors.
func ParseSet(names []string) (Set, error) {
	var s Set
	for _, n := range names {
		p, ok := ParsePermission(n)
		if !ok {
			return 0, fmt.Errorf("unknown permission %q", n)
		}
		s |= SetOf(p)
	}
	return s, nil
}

// ResourceKind is the kind of a Resource.
type ResourceKind uint8

// Resource kinds: the data resources and the role resources of Cassandra
// (function and MBean resources have no counterpart in cosmosd).
const (
	AllKeyspacesKind ResourceKind = iota + 1
	KeyspaceKind
	TableKind
	AllRolesKind
	RoleKind
)

// Resource is something permissions are granted on. The zero Resource is
// invalid.
type Resource struct {
	Kind     ResourceKind
	Keyspace string // KeyspaceKind, TableKind
	Table    string // TableKind
	Role     string // RoleKind
}

// AllKeyspaces returns <all keyspaces>, the root of the data resources.
func AllKeyspaces() Resource { return Resource{Kind: AllKeyspacesKind} }

// KeyspaceResource returns <keyspace ks>.
func KeyspaceResource(ks string) Resource { return Resource{Kind: KeyspaceKind, Keyspace: ks} }

// TableResource returns <table ks.t>.
func TableResource(ks, t string) Resource { return Resource{Kind: TableKind, Keyspace: ks, Table: t} }

// AllRoles returns <all roles>, the root of the role resources.
func AllRoles() Resource { return Resource{Kind: AllRolesKind} }

// RoleResource returns <role r>.
func RoleResource(r string) Resource { return Resource{Kind: RoleKind, Role: r} }

// String is Cassandra's display form, as in error messages and LIST
// PERMISSIONS: "<all keyspaces>", "<keyspace ks>", "<table ks.t>", "<all
// roles>", "<role r>".
func (r Resource) String() string {
	switch r.Kind {
	case AllKeyspacesKind:
		return "<all keyspaces>"
	case KeyspaceKind:
		return "<keyspace " + r.Keyspace + ">"
	case TableKind:
		return "<table " + r.Keyspace + "." + r.Table + ">"
	case AllRolesKind:
		return "<all roles>"
	case RoleKind:
		return "<role " + r.Role + ">"
	}
	return "<invalid resource>"
}

// Name is Cassandra's stored form (system_auth.role_permissions.resource):
// "data", "data/ks", "data/ks/t", "roles", "roles/r".
func (r Resource) Name() string {
	switch r.Kind {
	case AllKeyspacesKind:
		return "data"
	case KeyspaceKind:
		return "data/" + r.Keyspace
	case TableKind:
		return "data/" + r.Keyspace + "/" + r.Table
	case AllRolesKind:
		return "roles"
	case RoleKind:
		return "roles/" + r.Role
	}
	return ""
}

// ParseResource parses a Name. Keyspace and table names never contain '/';
// a role name may, so everything after "roles/" is the role.
func ParseResource(name string) (Resource, error) {
	switch {
	case name == "data":
		return AllKeyspaces(), nil
	case name == "roles":
		return AllRoles(), nil
	case strings.HasPrefix(name, "roles/") && len(name) > len("roles/"):
		return RoleResource(name[len("roles/"):]), nil
	case strings.HasPrefix(name, "data/"):
		parts := strings.Split(name[len("data/"):], "/")
		switch {
		case len(parts) == 1 && parts[0] != "":
			return KeyspaceResource(parts[0]), nil
		case len(parts) == 2 && parts[0] != "" && parts[1] != "":
			return TableResource(parts[0], parts[1]), nil
		}
	}
	return Resource{}, fmt.Errorf("invalid resource name %q", name)
}

// Parent returns the resource's parent; false for a root.
func (r Resource) Parent() (Resource, bool) {
	switch r.Kind {
	case KeyspaceKind:
		return AllKeyspaces(), true
	case TableKind:
		return KeyspaceResource(r.Keyspace), true
	case RoleKind:
		return AllRoles(), true
	}
	return Resource{}, false
}

// Chain returns the resource followed by its ancestors up to the root
// (Cassandra's Resources.chain).
func (r Resource) Chain() []Resource {
	out := []Resource{r}
	for {
		p, ok := out[len(out)-1].Parent()
		if !ok {
			return out
		}
		out = append(out, p)
	}
}

// Applicable returns the permissions that can be granted on the resource.
func (r Resource) Applicable() Set {
	switch r.Kind {
	case AllKeyspacesKind, KeyspaceKind:
		return SetOf(Create, Alter, Drop, Select, Modify, Authorize)
	case TableKind:
		return SetOf(Alter, Drop, Select, Modify, Authorize)
	case AllRolesKind:
		return SetOf(Create, Alter, Drop, Authorize, Describe)
	case RoleKind:
		return SetOf(Alter, Drop, Authorize)
	}
	return 0
}

// TypeName is the Java class name Cassandra uses for the resource's kind
// in messages ("Resource type DataResource does not support ...").
func (r Resource) TypeName() string {
	if r.Kind == AllRolesKind || r.Kind == RoleKind {
		return "RoleResource"
	}
	return "DataResource"
}
