package exec

import (
	"crypto/sha256"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
)

// virtualTable is a system table computed on read from the cluster
// metadata. It supports the SELECT features drivers use: any restriction
// (evaluated as a filter), projection, LIMIT and paging.
type virtualTable struct {
	table *schema.Table
	rows  func(e *Executor, p *selectPlan) ([]*qrow, error)
}

var blobType = cqltype.Scalar(cqltype.Blob)

func mustType(s string) cqltype.Type {
	t, err := cqltype.Parse(s)
	if err != nil {
		panic(fmt.Sprintf("system table type %q: %v", s, err)) // program constant
	}
	return t
}

// defineVirtual builds a system table definition. cols are "name type"
// pairs; pk and ck name the key columns in order.
func defineVirtual(ks, name string, pk, ck []string, cols ...string) *schema.Table {
	t := &schema.Table{Keyspace: ks, Name: name, UUID: hostIDFor(ks + "." + name)}
	kind := map[string]schema.Kind{}
	pos := map[string]int{}
	for i, c := range pk {
		kind[c], pos[c] = schema.PartitionKey, i
	}
	for i, c := range ck {
		kind[c], pos[c] = schema.Clustering, i
	}
	for i, c := range cols {
		n, typ, _ := strings.Cut(c, " ")
		k, ok := kind[n]
		p := -1
		if ok {
			p = pos[n]
		} else {
			k = schema.Regular
		}
		t.Columns = append(t.Columns, schema.Column{ID: uint32(i), Name: n, Type: mustType(typ), Kind: k, Position: p})
	}
	t.NextColumnID = uint32(len(cols))
	t.Canonicalize()
	return t
}

var tableOptionColumns = []string{
	"bloom_filter_fp_chance double", "caching frozen<map<text, text>>", "cdc boolean", "comment text",
	"compaction frozen<map<text, text>>", "compression frozen<map<text, text>>", "crc_check_chance double",
	"dclocal_read_repair_chance double", "default_time_to_live int", "extensions frozen<map<text, blob>>",
	"gc_grace_seconds int", "id uuid", "max_index_interval int", "memtable_flush_period_in_ms int",
	"min_index_interval int", "read_repair_chance double", "speculative_retry text",
}

var virtualTables = map[string]*virtualTable{}

func registerVirtual(t *schema.Table, rows func(e *Executor, p *selectPlan) ([]*qrow, error)) {
	virtualTables[t.Keyspace+"."+t.Name] = &virtualTable{table: t, rows: rows}
}

func lookupVirtual(ks, name string) *virtualTable { return virtualTables[ks+"."+name] }

func init() {
	registerVirtual(defineVirtual("system", "local", []string{"key"}, nil,
		"key text", "bootstrapped text", "broadcast_address inet", "cluster_name text", "cql_version text",
		"data_center text", "gossip_generation int", "host_id uuid", "listen_address inet",
		"native_protocol_version text", "partitioner text", "rack text", "release_version text",
		"rpc_address inet", "schema_version uuid", "thrift_version text", "tokens set<text>",
		"truncated_at map<uuid, blob>"), (*Executor).localRows)
	registerVirtual(defineVirtual("system", "peers", []string{"peer"}, nil,
		"peer inet", "data_center text", "host_id uuid", "preferred_ip inet", "rack text",
		"release_version text", "rpc_address inet", "schema_version uuid", "tokens set<text>"), (*Executor).peerRows)
	registerVirtual(defineVirtual("system", "peers_v2", []string{"peer"}, []string{"peer_port"},
		"peer inet", "peer_port int", "data_center text", "host_id uuid", "native_address inet", "native_port int",
		"preferred_ip inet", "preferred_port int", "rack text", "release_version text", "schema_version uuid",
		"tokens set<text>"), (*Executor).peerRows)
	registerVirtual(defineVirtual("system_schema", "keyspaces", []string{"keyspace_name"}, nil,
		"keyspace_name text", "durable_writes boolean", "replication frozen<map<text, text>>"), (*Executor).keyspaceRows)
	registerVirtual(defineVirtual("system_schema", "tables", []string{"keyspace_name"}, []string{"table_name"},
		append([]string{"keyspace_name text", "table_name text", "flags frozen<set<text>>"}, tableOptionColumns...)...), (*Executor).tableRows)
	registerVirtual(defineVirtual("system_schema", "columns", []string{"keyspace_name"}, []string{"table_name", "column_name"},
		"keyspace_name text", "table_name text", "column_name text", "clustering_order text", "column_name_bytes blob",
		"kind text", "position int", "type text"), (*Executor).columnRows)
	registerVirtual(defineVirtual("system_schema", "views", []string{"keyspace_name"}, []string{"view_name"},
		append([]string{"keyspace_name text", "view_name text", "base_table_id uuid", "base_table_name text",
			"include_all_columns boolean", "where_clause text"}, tableOptionColumns...)...), noRows)
	registerVirtual(defineVirtual("system_schema", "triggers", []string{"keyspace_name"}, []string{"table_name", "trigger_name"},
		"keyspace_name text", "table_name text", "trigger_name text", "options frozen<map<text, text>>"), noRows)
	registerVirtual(defineVirtual("system_schema", "indexes", []string{"keyspace_name"}, []string{"table_name", "index_name"},
		"keyspace_name text", "table_name text", "index_name text", "kind text", "options frozen<map<text, text>>"), noRows)
	registerVirtual(defineVirtual("system_schema", "types", []string{"keyspace_name"}, []string{"type_name"},
		"keyspace_name text", "type_name text", "field_names frozen<list<text>>", "field_types frozen<list<text>>"), noRows)
	registerVirtual(defineVirtual("system_schema", "functions", []string{"keyspace_name"}, []string{"function_name", "argument_types"},
		"keyspace_name text", "function_name text", "argument_types frozen<list<text>>", "argument_names frozen<list<text>>",
		"body text", "called_on_null_input boolean", "language text", "return_type text"), noRows)
	registerVirtual(defineVirtual("system_schema", "aggregates", []string{"keyspace_name"}, []string{"aggregate_name", "argument_types"},
		"keyspace_name text", "aggregate_name text", "argument_types frozen<list<text>>", "final_func text",
		"initcond text", "return_type text", "state_func text", "state_type text"), noRows)
	// The roles and permissions, as Cassandra's CassandraRoleManager and
	// CassandraAuthorizer keep them. salted_hash is always null: the hashes
	// stay in etcd, and no client needs them.
	registerVirtual(defineVirtual("system_auth", "roles", []string{"role"}, nil,
		"role text", "can_login boolean", "is_superuser boolean", "member_of set<text>", "salted_hash text"), (*Executor).authRoleRows)
	registerVirtual(defineVirtual("system_auth", "role_members", []string{"role"}, []string{"member"},
		"role text", "member text"), (*Executor).authMemberRows)
	registerVirtual(defineVirtual("system_auth", "role_permissions", []string{"role"}, []string{"resource"},
		"role text", "resource text", "permissions set<text>"), (*Executor).authPermissionRows)
	registerVirtual(defineVirtual("system_auth", "resource_role_permissons_index", []string{"resource"}, []string{"role"},
		"resource text", "role text"), (*Executor).authResourceRows)
}

func noRows(*Executor, *selectPlan) ([]*qrow, error) { return nil, nil }

// hostIDFor derives a stable UUID from a name.
func hostIDFor(name string) string {
	h := sha256.Sum256([]byte(name))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// HostID is the host_id drivers see for a node.
func HostID(nodeID uint64) string { return hostIDFor("cosmosd-node-" + strconv.FormatUint(nodeID, 10)) }

// vrow builds a virtual row from Go values by column name.
func vrow(t *schema.Table, vals map[string]any) (*qrow, error) {
	r := &qrow{virtual: map[string][]byte{}}
	for name, v := range vals {
		c := t.Column(name)
		if c == nil {
			return nil, fmt.Errorf("system table %s has no column %s", t.Name, name)
		}
		b, err := cqltype.Marshal(c.Type, v)
		if err != nil {
			return nil, fmt.Errorf("system table %s column %s: %w", t.Name, name, err)
		}
		r.virtual[name] = b
	}
	for _, c := range t.PartitionKey() {
		r.pk = append(r.pk, r.virtual[c.Name])
	}
	for _, c := range t.ClusteringColumns() {
		r.ck = append(r.ck, r.virtual[c.Name])
	}
	if key, err := ring.RoutingKey(r.pk); err == nil {
		r.token = ring.Token(key)
	}
	return r, nil
}

// nodeAddr is the address a node is reached at for CQL.
func nodeAddr(n *cluster.NodeInfo) (net.IP, int) {
	host, port, err := net.SplitHostPort(n.CQLAddr)
	if err != nil {
		return net.IPv4(127, 0, 0, 1), 9042
	}
	ip := net.ParseIP(host)
	if ip == nil {
		if addrs, err := net.LookupIP(host); err == nil && len(addrs) > 0 {
			ip = addrs[0]
		} else {
			ip = net.IPv4(127, 0, 0, 1)
		}
	}
	p, _ := strconv.Atoi(port)
	return ip, p
}

// nodeTokens assigns each live node one token so drivers build a ring with
// every node on it: node i of n owns the i-th of n equal token ranges.
// Requests reach the right partition whichever node they land on; the
// tokens only spread client connections.
func nodeTokens(st *cluster.State) map[uint64][]string {
	ids := st.NodeIDs()
	ranges := ring.Even(max(1, len(ids)))
	out := map[uint64][]string{}
	for i, id := range ids {
		out[id] = []string{strconv.FormatInt(ranges[i][1], 10)}
	}
	return out
}

func (e *Executor) schemaVersion() string {
	v := e.cfg.Meta.State().Schema.Version
	if v == "" {
		return hostIDFor("empty-schema")
	}
	return v
}

func (e *Executor) localRows(p *selectPlan) ([]*qrow, error) {
	st := e.cfg.Meta.State()
	self := st.Nodes[e.cfg.NodeID]
	ip, tokens := net.IPv4(127, 0, 0, 1), []string{strconv.FormatInt(ring.Even(1)[0][1], 10)}
	dc, rack := e.cfg.Local.Datacenter, e.cfg.Local.Rack
	if self != nil {
		ip, _ = nodeAddr(self)
		if t := nodeTokens(st)[e.cfg.NodeID]; len(t) > 0 {
			tokens = t
		}
	}
	r, err := vrow(p.t, map[string]any{
		"key": "local", "bootstrapped": "COMPLETED", "broadcast_address": ip, "cluster_name": e.cfg.ClusterName,
		"cql_version": "3.4.4", "data_center": dc, "gossip_generation": int32(1), "host_id": e.cfg.Local.HostID,
		"listen_address": ip, "native_protocol_version": "4", "partitioner": "org.apache.cassandra.dht.Murmur3Partitioner",
		"rack": rack, "release_version": e.cfg.ReleaseVersion, "rpc_address": ip, "schema_version": e.schemaVersion(),
		"thrift_version": "20.1.0", "tokens": tokens,
	})
	if err != nil {
		return nil, ServerError("%v", err)
	}
	return []*qrow{r}, nil
}

func (e *Executor) peerRows(p *selectPlan) ([]*qrow, error) {
	st := e.cfg.Meta.State()
	tokens := nodeTokens(st)
	var out []*qrow
	for _, id := range st.NodeIDs() {
		if id == e.cfg.NodeID {
			continue
		}
		n := st.Nodes[id]
		ip, port := nodeAddr(n)
		vals := map[string]any{
			"peer": ip, "data_center": n.Label("dc", e.cfg.Local.Datacenter), "host_id": HostID(id),
			"rack": n.Label("rack", e.cfg.Local.Rack), "release_version": e.cfg.ReleaseVersion,
			"schema_version": e.schemaVersion(), "tokens": tokens[id], "preferred_ip": ip,
		}
		if p.t.Name == "peers_v2" {
			vals["peer_port"], vals["native_address"], vals["native_port"] = int32(7000), ip, int32(port)
			vals["preferred_port"] = int32(7000)
		} else {
			vals["rpc_address"] = ip
		}
		r, err := vrow(p.t, vals)
		if err != nil {
			return nil, ServerError("%v", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// allKeyspaces lists user keyspaces and the system keyspaces drivers
// describe, in name order.
func (e *Executor) allKeyspaces() []*schema.Keyspace {
	st := e.cfg.Meta.State().Schema
	var out []*schema.Keyspace
	for _, name := range st.KeyspaceNames() {
		out = append(out, st.Keyspaces[name])
	}
	for _, name := range []string{"system", "system_schema"} {
		out = append(out, &schema.Keyspace{Name: name, DurableWrites: true, Replication: map[string]string{"class": "org.apache.cassandra.locator.LocalStrategy"}})
	}
	out = append(out, &schema.Keyspace{Name: "system_auth", DurableWrites: true,
		Replication: map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "1"}})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// tablesOf lists the tables of a keyspace, system ones included.
func (e *Executor) tablesOf(ks string) []*schema.Table {
	if isSystemKeyspace(ks) {
		var out []*schema.Table
		for _, vt := range virtualTables {
			if vt.table.Keyspace == ks {
				out = append(out, vt.table)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out
	}
	st := e.cfg.Meta.State().Schema
	var out []*schema.Table
	for _, name := range st.TableNames(ks) {
		out = append(out, st.Table(ks, name))
	}
	return out
}

func (e *Executor) keyspaceRows(p *selectPlan) ([]*qrow, error) {
	var out []*qrow
	for _, ks := range e.allKeyspaces() {
		r, err := vrow(p.t, map[string]any{"keyspace_name": ks.Name, "durable_writes": ks.DurableWrites, "replication": ks.Replication})
		if err != nil {
			return nil, ServerError("%v", err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (e *Executor) tableRows(p *selectPlan) ([]*qrow, error) {
	var out []*qrow
	for _, ks := range e.allKeyspaces() {
		for _, t := range e.tablesOf(ks.Name) {
			ext := map[string][]byte{}
			if t.Options.Throughput > 0 {
				ext[ThroughputOption] = []byte(strconv.FormatInt(t.Options.Throughput, 10))
			}
			for _, name := range []string{AutoscaleOption, CellLevelTimestampOption} {
				if v, ok := t.Options.Other[name]; ok {
					ext[name] = []byte(v)
				}
			}
			r, err := vrow(p.t, map[string]any{
				"keyspace_name": ks.Name, "table_name": t.Name, "flags": []string{"compound"},
				"bloom_filter_fp_chance": 0.01, "caching": map[string]string{"keys": "ALL", "rows_per_partition": "NONE"},
				"cdc": false, "comment": t.Options.Comment,
				"compaction":       map[string]string{"class": "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy", "max_threshold": "32", "min_threshold": "4"},
				"compression":      map[string]string{"chunk_length_in_kb": "64", "class": "org.apache.cassandra.io.compress.LZ4Compressor"},
				"crc_check_chance": 1.0, "dclocal_read_repair_chance": 0.0, "default_time_to_live": t.Options.DefaultTTL,
				"extensions": ext, "gc_grace_seconds": t.Options.GCGraceSeconds, "id": t.UUID, "max_index_interval": int32(2048),
				"memtable_flush_period_in_ms": int32(0), "min_index_interval": int32(128), "read_repair_chance": 0.0,
				"speculative_retry": "99PERCENTILE",
			})
			if err != nil {
				return nil, ServerError("%v", err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func (e *Executor) columnRows(p *selectPlan) ([]*qrow, error) {
	var out []*qrow
	for _, ks := range e.allKeyspaces() {
		for _, t := range e.tablesOf(ks.Name) {
			cols := append([]schema.Column(nil), t.Columns...)
			sort.Slice(cols, func(i, j int) bool { return cols[i].Name < cols[j].Name })
			for _, c := range cols {
				order := "none"
				if c.Kind == schema.Clustering {
					order = "asc"
					if c.Desc {
						order = "desc"
					}
				}
				r, err := vrow(p.t, map[string]any{
					"keyspace_name": ks.Name, "table_name": t.Name, "column_name": c.Name, "clustering_order": order,
					"column_name_bytes": []byte(c.Name), "kind": string(c.Kind), "position": int32(c.Position), "type": c.Type.String(),
				})
				if err != nil {
					return nil, ServerError("%v", err)
				}
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func (e *Executor) authRoleRows(p *selectPlan) ([]*qrow, error) {
	st := e.authState()
	var out []*qrow
	for _, name := range st.RoleNames() {
		r := st.Role(name)
		vals := map[string]any{"role": name, "can_login": r.Login, "is_superuser": r.Superuser}
		if len(r.MemberOf) > 0 {
			vals["member_of"] = r.MemberOf
		}
		row, err := vrow(p.t, vals)
		if err != nil {
			return nil, ServerError("%v", err)
		}
		out = append(out, row)
	}
	return out, nil
}

func (e *Executor) authMemberRows(p *selectPlan) ([]*qrow, error) {
	st := e.authState()
	var out []*qrow
	for _, name := range st.RoleNames() {
		for _, m := range st.Members(name) {
			row, err := vrow(p.t, map[string]any{"role": name, "member": m})
			if err != nil {
				return nil, ServerError("%v", err)
			}
			out = append(out, row)
		}
	}
	return out, nil
}

func (e *Executor) authPermissionRows(p *selectPlan) ([]*qrow, error) {
	var out []*qrow
	for _, g := range e.authState().Grants("", auth.Resource{}) {
		row, err := vrow(p.t, map[string]any{"role": g.Role, "resource": g.Resource.Name(), "permissions": g.Permissions.Names()})
		if err != nil {
			return nil, ServerError("%v", err)
		}
		out = append(out, row)
	}
	return out, nil
}

func (e *Executor) authResourceRows(p *selectPlan) ([]*qrow, error) {
	var out []*qrow
	for _, g := range e.authState().Grants("", auth.Resource{}) {
		row, err := vrow(p.t, map[string]any{"resource": g.Resource.Name(), "role": g.Role})
		if err != nil {
			return nil, ServerError("%v", err)
		}
		out = append(out, row)
	}
	return out, nil
}
