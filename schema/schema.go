package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cosmosd/cosmosd/cqltype"
)

// Kind is the role of a column, spelled as in system_schema.columns.kind.
type Kind string

// Column kinds.
const (
	PartitionKey Kind = "partition_key"
	Clustering   Kind = "clustering"
	Regular      Kind = "regular"
	Static       Kind = "static"
)

// Column is one column of a table.
type Column struct {
	ID   uint32
	Name string
	Type cqltype.Type
	Kind Kind
	// Position orders partition-key and clustering columns; -1 otherwise.
	Position int
	// Desc is the clustering order of a clustering column.
	Desc bool
}

// IsPrimaryKey reports whether c is part of the primary key.
func (c *Column) IsPrimaryKey() bool { return c.Kind == PartitionKey || c.Kind == Clustering }

type columnJSON struct {
	ID       uint32 `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Kind     Kind   `json:"kind"`
	Position int    `json:"position"`
	Desc     bool   `json:"desc,omitempty"`
}

// MarshalJSON stores the type in its CQL spelling.
func (c Column) MarshalJSON() ([]byte, error) {
	return json.Marshal(columnJSON{ID: c.ID, Name: c.Name, Type: c.Type.String(), Kind: c.Kind, Position: c.Position, Desc: c.Desc})
}

// UnmarshalJSON parses the CQL type spelling.
func (c *Column) UnmarshalJSON(b []byte) error {
	var j columnJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	t, err := cqltype.Parse(j.Type)
	if err != nil {
		return fmt.Errorf("column %s: %w", j.Name, err)
	}
	*c = Column{ID: j.ID, Name: j.Name, Type: t, Kind: j.Kind, Position: j.Position, Desc: j.Desc}
	return nil
}

// Keyspace is a CQL keyspace.
type Keyspace struct {
	Name string `json:"name"`
	// Replication is kept as given (and shown in system_schema) but, as in
	// Cosmos DB, cosmosd always keeps 4 replicas per partition.
	Replication   map[string]string `json:"replication"`
	DurableWrites bool              `json:"durable_writes"`
	// Throughput is shared provisioned RU/s of the keyspace, 0 for none.
	Throughput int64 `json:"throughput,omitempty"`
}

// Options are a table's WITH options that cosmosd interprets.
type Options struct {
	// Throughput is the provisioned RU/s (cosmosdb_provisioned_throughput);
	// 0 means unlimited.
	Throughput int64 `json:"throughput,omitempty"`
	// DefaultTTL in seconds applies to writes without USING TTL.
	DefaultTTL int32 `json:"default_time_to_live,omitempty"`
	// GCGraceSeconds is how long tombstones are kept.
	GCGraceSeconds int32  `json:"gc_grace_seconds"`
	Comment        string `json:"comment,omitempty"`
	// Other holds options accepted and shown but not interpreted.
	Other map[string]string `json:"other,omitempty"`
}

// DefaultGCGraceSeconds is Cassandra's default gc_grace_seconds (10 days).
const DefaultGCGraceSeconds = 864000

// Table is a CQL table.
type Table struct {
	ID       uint64 `json:"id"`
	UUID     string `json:"uuid"` // system_schema.tables.id
	Keyspace string `json:"keyspace"`
	Name     string `json:"name"`
	// Columns in canonical order; see the package invariants.
	Columns []Column `json:"columns"`
	// Dropped lists ids of dropped columns, whose cells are ignored.
	Dropped      []uint32 `json:"dropped,omitempty"`
	NextColumnID uint32   `json:"next_column_id"`
	Options      Options  `json:"options"`
}

// QualifiedName returns "keyspace.table".
func (t *Table) QualifiedName() string { return t.Keyspace + "." + t.Name }

// Column returns the column named name, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// ColumnByID returns the column with id, or nil (dropped or unknown).
func (t *Table) ColumnByID(id uint32) *Column {
	for i := range t.Columns {
		if t.Columns[i].ID == id {
			return &t.Columns[i]
		}
	}
	return nil
}

// PartitionKey returns the partition-key columns in order.
func (t *Table) PartitionKey() []*Column { return t.ofKind(PartitionKey) }

// ClusteringColumns returns the clustering columns in order.
func (t *Table) ClusteringColumns() []*Column { return t.ofKind(Clustering) }

func (t *Table) ofKind(k Kind) []*Column {
	var out []*Column
	for i := range t.Columns {
		if t.Columns[i].Kind == k {
			out = append(out, &t.Columns[i])
		}
	}
	return out
}

// HasStatic reports whether the table has static columns.
func (t *Table) HasStatic() bool { return len(t.ofKind(Static)) > 0 }

// IsCounter reports whether the table holds counters (all its non-key
// columns are counters).
func (t *Table) IsCounter() bool {
	for i := range t.Columns {
		if !t.Columns[i].IsPrimaryKey() {
			return t.Columns[i].Type.Kind == cqltype.Counter
		}
	}
	return false
}

// Canonicalize orders Columns canonically and fixes Positions.
func (t *Table) Canonicalize() {
	rank := map[Kind]int{PartitionKey: 0, Clustering: 1, Static: 2, Regular: 2}
	sort.SliceStable(t.Columns, func(i, j int) bool {
		a, b := &t.Columns[i], &t.Columns[j]
		if rank[a.Kind] != rank[b.Kind] {
			return rank[a.Kind] < rank[b.Kind]
		}
		if a.IsPrimaryKey() {
			return a.Position < b.Position
		}
		return a.Name < b.Name
	})
	for i := range t.Columns {
		if !t.Columns[i].IsPrimaryKey() {
			t.Columns[i].Position = -1
		}
	}
}

// Validate checks the table's invariants and reports every problem.
func (t *Table) Validate() error {
	var errs []error
	if t.Keyspace == "" || t.Name == "" {
		errs = append(errs, errors.New("table needs a keyspace and a name"))
	}
	ids := map[uint32]bool{}
	names := map[string]bool{}
	var pk, ck int
	for _, c := range t.Columns {
		if ids[c.ID] {
			errs = append(errs, fmt.Errorf("duplicate column id %d", c.ID))
		}
		ids[c.ID] = true
		if names[c.Name] {
			errs = append(errs, fmt.Errorf("multiple definition of identifier %s", c.Name))
		}
		names[c.Name] = true
		if c.ID >= t.NextColumnID {
			errs = append(errs, fmt.Errorf("column %s id %d not below next id %d", c.Name, c.ID, t.NextColumnID))
		}
		switch c.Kind {
		case PartitionKey:
			pk++
		case Clustering:
			ck++
		case Static, Regular:
		default:
			errs = append(errs, fmt.Errorf("column %s has unknown kind %q", c.Name, c.Kind))
		}
	}
	if pk == 0 {
		errs = append(errs, errors.New("no PRIMARY KEY specified (exactly one required)"))
	}
	if ck == 0 && t.HasStatic() {
		errs = append(errs, errors.New("static columns are only allowed in tables with clustering columns"))
	}
	return errors.Join(errs...)
}

// Clone returns a deep copy.
func (t *Table) Clone() *Table {
	c := *t
	c.Columns = append([]Column(nil), t.Columns...)
	c.Dropped = append([]uint32(nil), t.Dropped...)
	if t.Options.Other != nil {
		c.Options.Other = make(map[string]string, len(t.Options.Other))
		for k, v := range t.Options.Other {
			c.Options.Other[k] = v
		}
	}
	return &c
}

// Schema is an immutable snapshot of the catalog. Never modify one that
// has been published.
type Schema struct {
	// Version identifies the snapshot (system.local.schema_version).
	Version   string
	Keyspaces map[string]*Keyspace
	// Tables by keyspace then name.
	Tables map[string]map[string]*Table
	ByID   map[uint64]*Table
}

// Empty returns a schema with nothing in it.
func Empty() *Schema {
	return &Schema{Keyspaces: map[string]*Keyspace{}, Tables: map[string]map[string]*Table{}, ByID: map[uint64]*Table{}}
}

// Table returns keyspace.name, or nil.
func (s *Schema) Table(keyspace, name string) *Table {
	return s.Tables[keyspace][name]
}

// KeyspaceNames returns the keyspaces in name order.
func (s *Schema) KeyspaceNames() []string {
	out := make([]string, 0, len(s.Keyspaces))
	for k := range s.Keyspaces {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TableNames returns the tables of a keyspace in name order.
func (s *Schema) TableNames(keyspace string) []string {
	out := make([]string, 0, len(s.Tables[keyspace]))
	for k := range s.Tables[keyspace] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ParseQualified splits "ks.table" (either part may be quoted by the
// caller beforehand); a bare name gets the default keyspace.
func ParseQualified(name, defaultKeyspace string) (ks, table string, err error) {
	ks, table, ok := strings.Cut(name, ".")
	if !ok {
		if defaultKeyspace == "" {
			return "", "", fmt.Errorf("no keyspace given for table %q", name)
		}
		return defaultKeyspace, name, nil
	}
	if ks == "" || table == "" {
		return "", "", fmt.Errorf("bad table name %q", name)
	}
	return ks, table, nil
}
