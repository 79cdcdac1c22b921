package cluster

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// DefaultPrefix is where cosmosd keeps its metadata in etcd.
const DefaultPrefix = "/cosmosd/"

// keys builds every metadata key; nothing outside this file spells one.
// Keys are relative to the store's namespace (metakv.NewEtcd adds the
// etcd prefix, DefaultPrefix unless configured). The layout:
//
//	catalog/keyspaces/<ks>          schema.Keyspace (JSON)
//	catalog/tables/<ks>/<table>     schema.Table (JSON)
//	catalog/version                 a UUID, changed by every schema change
//	ring/<table:%020d>/<part:%020d> kvpb.Descriptor (proto): the routing copy of a partition's descriptor
//	pending-tables/<table:%020d>    partition count of a table being created in several transactions (leased)
//	ids/<kind>                      the next id of a kind: node, table, partition, op
//	nodes/<node:%020d>              NodeInfo (JSON), leased: present while the node lives
//	members/<node:%020d>            Member (JSON): the persistent record of every node ever seen
//	ops/<op:%020d>                  an operation of the controller (JSON, placement.Operation)
//	controller/<lease:hex>          the controller election's candidates (metakv.Store.Campaign)
//	auth/roles/<role>               auth.Role (JSON), role names path-escaped
//	auth/permissions/<role>         {resource: [permission]} (JSON)
//	auth/version                    a UUID, changed by every change of roles or permissions
//
// Meta follows catalog/, ring/, pending-tables/, nodes/, members/ and
// auth/; ids/, ops/ and controller/ are read on demand.
type keys struct{}

func (keys) node(id uint64) string          { return fmt.Sprintf("nodes/%020d", id) }
func (keys) nodes() string                  { return "nodes/" }
func (keys) catalog() string                { return "catalog/" }
func (keys) keyspace(ks string) string      { return "catalog/keyspaces/" + ks }
func (keys) keyspaces() string              { return "catalog/keyspaces/" }
func (keys) table(ks, t string) string      { return "catalog/tables/" + ks + "/" + t }
func (keys) tablesOf(ks string) string      { return "catalog/tables/" + ks + "/" }
func (keys) tables() string                 { return "catalog/tables/" }
func (keys) version() string                { return "catalog/version" }
func (keys) ringOf(table uint64) string     { return fmt.Sprintf("ring/%020d/", table) }
func (keys) rings() string                  { return "ring/" }
func (keys) counter(kind string) string     { return "ids/" + kind }
func (k keys) part(table, id uint64) string { return fmt.Sprintf("%s%020d", k.ringOf(table), id) }
func (keys) members() string                { return "members/" }
func (keys) member(id uint64) string        { return fmt.Sprintf("members/%020d", id) }
func (keys) ops() string                    { return "ops/" }
func (keys) op(id uint64) string            { return fmt.Sprintf("ops/%020d", id) }

// StoredTableKey is the key of a table's stored definition, for tools and
// tests that inspect or repair one (an operator removing a definition no
// node can decode); everything else goes through Catalog.
func StoredTableKey(keyspace, table string) string { return keys{}.table(keyspace, table) }

// controllerElection is the name of the controller's election.
func (keys) controllerElection() string { return "controller" }

// pendingTables holds a record per table being created in several
// transactions (Catalog.CreateTable); Meta hides the ring of such a table.
func (keys) pendingTables() string           { return "pending-tables/" }
func (k keys) pendingTable(id uint64) string { return fmt.Sprintf("%s%020d", k.pendingTables(), id) }

// pendingTableID parses the table id of a pending-table key.
func (k keys) pendingTableID(key string) (uint64, bool) {
	rest, ok := strings.CutPrefix(key, k.pendingTables())
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(rest, 10, 64)
	return id, err == nil
}

func (keys) auth() string                 { return "auth/" }
func (keys) authVersion() string          { return "auth/version" }
func (keys) roles() string                { return "auth/roles/" }
func (k keys) role(name string) string    { return k.roles() + url.PathEscape(name) }
func (keys) permissions() string          { return "auth/permissions/" }
func (k keys) permsOf(name string) string { return k.permissions() + url.PathEscape(name) }
