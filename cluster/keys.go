package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// DefaultPrefix is where cosmosd keeps its metadata in etcd.
const DefaultPrefix = "/cosmosd/"

type keys struct{ prefix string }

func (k keys) node(id uint64) string        { return fmt.Sprintf("%snodes/%020d", k.prefix, id) }
func (k keys) nodes() string                { return k.prefix + "nodes/" }
func (k keys) keyspace(ks string) string    { return k.prefix + "catalog/keyspaces/" + ks }
func (k keys) keyspaces() string            { return k.prefix + "catalog/keyspaces/" }
func (k keys) table(ks, t string) string    { return k.prefix + "catalog/tables/" + ks + "/" + t }
func (k keys) tablesOf(ks string) string    { return k.prefix + "catalog/tables/" + ks + "/" }
func (k keys) tables() string               { return k.prefix + "catalog/tables/" }
func (k keys) version() string              { return k.prefix + "catalog/version" }
func (k keys) ringOf(table uint64) string   { return fmt.Sprintf("%sring/%020d/", k.prefix, table) }
func (k keys) rings() string                { return k.prefix + "ring/" }
func (k keys) counter(kind string) string   { return k.prefix + "ids/" + kind }
func (k keys) part(table, id uint64) string { return fmt.Sprintf("%s%020d", k.ringOf(table), id) }
func (k keys) members() string              { return k.prefix + "members/" }
func (k keys) member(id uint64) string      { return fmt.Sprintf("%smembers/%020d", k.prefix, id) }

// pendingTables holds a record per table being created in several
// transactions (Catalog.CreateTable); Meta hides the ring of such a table.
func (k keys) pendingTables() string         { return k.prefix + "pending-tables/" }
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
