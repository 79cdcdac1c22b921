package cluster

import (
	"fmt"
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
