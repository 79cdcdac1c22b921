package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cluster/metakv"
)

// Roles and permissions live next to the catalog, under
//
//	auth/roles/<role>         auth.Role (JSON): bcrypt hash, flags, memberships
//	auth/permissions/<role>   {resource name: [permission, ...]} (JSON)
//	auth/version              a UUID, changed by every change of the above
//
// with role names path-escaped. Meta decodes them into State.Auth, so
// every node checks permissions against memory, invalidated by the same
// watch that follows the schema.

// Roles changes the roles and permissions in the metadata store. Safe for
// concurrent use.
type Roles struct {
	meta *Meta
	kv   metakv.Store
	k    keys
}

// NewRoles returns a writer of the roles over meta's store.
func NewRoles(meta *Meta) *Roles { return &Roles{meta: meta, kv: meta.kv, k: meta.k} }

// Update changes the roles and permissions as one transaction: change gets
// a copy of them as of one revision, and what it changed is committed
// only if nothing under auth/ changed since; otherwise they are read again
// and change runs again, so change must be a function of its argument. An
// error from change aborts the update and is returned as is. Update returns
// once the local Meta has published the result (read your own writes).
func (r *Roles) Update(ctx context.Context, change func(m *auth.Mutable) error) error {
	for {
		kvs, rev, err := r.kv.List(ctx, r.k.auth())
		if err != nil {
			return fmt.Errorf("read roles: %w", err)
		}
		raw := make(map[string][]byte, len(kvs))
		for _, kv := range kvs {
			raw[kv.Key] = kv.Value
		}
		m := decodeAuth(r.k, raw, nil)
		if err := change(m); err != nil {
			return err
		}
		next, err := encodeAuth(r.k, m)
		if err != nil {
			return err
		}
		var ops []metakv.Op
		for key, v := range next {
			if old, ok := raw[key]; !ok || !bytes.Equal(old, v) {
				ops = append(ops, metakv.Put(key, v))
			}
		}
		for key := range raw {
			if _, ok := next[key]; !ok && key != r.k.authVersion() {
				ops = append(ops, metakv.Delete(key))
			}
		}
		if len(ops) == 0 {
			return nil
		}
		ops = append(ops, metakv.Put(r.k.authVersion(), []byte(NewUUID())))
		// Every change puts the version key, so a key deleted since
		// the read shows as a newer version.
		tx, err := r.kv.Txn(ctx, metakv.Txn{
			If:   []metakv.Cond{metakv.UnchangedUnderSince(r.k.auth(), rev)},
			Then: ops,
		})
		if err != nil {
			return fmt.Errorf("update roles: %w", err)
		}
		if tx.Succeeded {
			return r.meta.WaitRevision(ctx, tx.Revision)
		}
	}
}

// encodeAuth returns the keys and values that store m.
func encodeAuth(k keys, m *auth.Mutable) (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, role := range m.Roles {
		role.Name = name
		v, err := json.Marshal(role)
		if err != nil {
			return nil, fmt.Errorf("encode role %s: %w", name, err)
		}
		out[k.role(name)] = v
	}
	for name, byRes := range m.Perms {
		if m.Roles[name] == nil || len(byRes) == 0 {
			continue
		}
		enc := make(map[string][]string, len(byRes))
		for res, set := range byRes {
			if set != 0 {
				enc[res] = set.Names()
			}
		}
		if len(enc) == 0 {
			continue
		}
		v, err := json.Marshal(enc) // map keys are sorted: stable bytes
		if err != nil {
			return nil, fmt.Errorf("encode permissions of %s: %w", name, err)
		}
		out[k.permsOf(name)] = v
	}
	return out, nil
}

// decodeAuth builds the roles and permissions from their keys. A record
// that does not decode is logged and skipped, as Meta does with the
// catalog: the rest stays usable, and a role that cannot be read cannot
// log in.
func decodeAuth(k keys, raw map[string][]byte, logger *slog.Logger) *auth.Mutable {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &auth.Mutable{Roles: map[string]*auth.Role{}, Perms: map[string]map[string]auth.Set{}}
	names := make([]string, 0, len(raw))
	for key := range raw {
		names = append(names, key)
	}
	sort.Strings(names)
	for _, key := range names {
		v := raw[key]
		switch {
		case strings.HasPrefix(key, k.roles()):
			name, err := url.PathUnescape(key[len(k.roles()):])
			r := &auth.Role{}
			if err == nil {
				err = json.Unmarshal(v, r)
			}
			if err != nil {
				logger.Error("skip undecodable role", "key", key, "err", err)
				continue
			}
			r.Name = name
			m.Roles[name] = r
		case strings.HasPrefix(key, k.permissions()):
			name, err := url.PathUnescape(key[len(k.permissions()):])
			var enc map[string][]string
			if err == nil {
				err = json.Unmarshal(v, &enc)
			}
			if err != nil {
				logger.Error("skip undecodable permissions", "key", key, "err", err)
				continue
			}
			byRes := map[string]auth.Set{}
			for res, ps := range enc {
				set, err := auth.ParseSet(ps)
				if err != nil {
					logger.Error("skip undecodable permissions", "key", key, "resource", res, "err", err)
					continue
				}
				byRes[res] = set
			}
			m.Perms[name] = byRes
		}
	}
	return m
}
