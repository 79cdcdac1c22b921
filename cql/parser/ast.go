package parser

import "github.com/cosmosd/cosmosd/cqltype"

// Statement is a parsed CQL statement. Implementations are the pointer
// types *SelectStmt, *InsertStmt, *UpdateStmt, *DeleteStmt, *BatchStmt,
// *UseStmt, *CreateKeyspaceStmt, *AlterKeyspaceStmt, *DropKeyspaceStmt,
// *CreateTableStmt, *AlterTableStmt, *DropTableStmt, *TruncateStmt,
// *CreateIndexStmt, *DropIndexStmt, *CreateTypeStmt, *DropTypeStmt, the
// role and permission statements (*CreateRoleStmt, *AlterRoleStmt,
// *DropRoleStmt, *ListRolesStmt, *GrantRoleStmt, *GrantPermissionsStmt,
// *ListPermissionsStmt) and *UnsupportedStmt.
type Statement interface{ stmt() }

// SelectStmt is SELECT [JSON] [DISTINCT] selectors FROM t [WHERE ...]
// [GROUP BY ...] [ORDER BY ...] [PER PARTITION LIMIT n] [LIMIT n]
// [ALLOW FILTERING].
type SelectStmt struct {
	Table    TableName
	Json     bool
	Distinct bool
	// Star is true for SELECT *; Selectors is then nil.
	Star      bool
	Selectors []Selector
	Where     []Relation
	GroupBy   []string
	OrderBy   []Ordering
	// PerPartitionLimit and Limit are nil when absent, else a *Literal
	// (integer) or a *BindMarker.
	PerPartitionLimit Term
	Limit             Term
	AllowFiltering    bool
}

// InsertStmt is INSERT INTO t (cols) VALUES (terms) or INSERT INTO t JSON
// value [DEFAULT NULL|UNSET], then [IF NOT EXISTS] [USING ...]. The parser
// does not check that Columns and Values have the same length.
type InsertStmt struct {
	Table   TableName
	Columns []string
	Values  []Term
	// Json is the JSON document of INSERT JSON (a string *Literal or a
	// *BindMarker); Columns and Values are nil then.
	Json Term
	// DefaultUnset is true for INSERT JSON ... DEFAULT UNSET.
	DefaultUnset bool
	IfNotExists  bool
	Using        Using
}

// UpdateStmt is UPDATE t [USING ...] SET assignments WHERE relations
// [IF EXISTS | IF conditions].
type UpdateStmt struct {
	Table       TableName
	Using       Using
	Assignments []Assignment
	Where       []Relation
	IfExists    bool
	Conditions  []Condition
}

// DeleteStmt is DELETE [targets] FROM t [USING TIMESTAMP n] WHERE relations
// [IF EXISTS | IF conditions]. Columns is nil when the whole row goes. Only
// Using.Timestamp can be set.
type DeleteStmt struct {
	Columns    []DeleteTarget
	Table      TableName
	Using      Using
	Where      []Relation
	IfExists   bool
	Conditions []Condition
}

// BatchKind is the kind of a BATCH.
type BatchKind uint8

// Kinds of batches.
const (
	BatchLogged   BatchKind = iota // BEGIN BATCH
	BatchUnlogged                  // BEGIN UNLOGGED BATCH
	BatchCounter                   // BEGIN COUNTER BATCH
)

// BatchStmt is BEGIN [UNLOGGED|COUNTER] BATCH [USING ...] stmts APPLY BATCH.
// Statements holds only *InsertStmt, *UpdateStmt and *DeleteStmt; bind
// markers are numbered across the whole batch.
type BatchStmt struct {
	Kind       BatchKind
	Using      Using
	Statements []Statement
}

// UseStmt is USE ks.
type UseStmt struct{ Keyspace string }

// CreateKeyspaceStmt is CREATE KEYSPACE [IF NOT EXISTS] ks WITH options.
type CreateKeyspaceStmt struct {
	Name        string
	IfNotExists bool
	Options     Options
}

// AlterKeyspaceStmt is ALTER KEYSPACE [IF EXISTS] ks WITH options.
type AlterKeyspaceStmt struct {
	Name     string
	IfExists bool
	Options  Options
}

// DropKeyspaceStmt is DROP KEYSPACE [IF EXISTS] ks.
type DropKeyspaceStmt struct {
	Name     string
	IfExists bool
}

// ColumnDef declares a column in CREATE TABLE or ALTER TABLE ADD. An unknown
// type name parses as a cqltype.UDT type with that Name (and Keyspace when
// qualified); the executor resolves or rejects it.
type ColumnDef struct {
	Name   string
	Type   cqltype.Type
	Static bool
}

// CreateTableStmt is CREATE TABLE [IF NOT EXISTS] t (defs) [WITH ...].
//
// PartitionKey and Clustering come from the single PRIMARY KEY definition,
// inline ("id int PRIMARY KEY") or as a table element; a second one is a
// syntax error. PartitionKey is nil when none was given (the executor
// rejects that). Column names are not checked against Columns here.
type CreateTableStmt struct {
	Table           TableName
	IfNotExists     bool
	Columns         []ColumnDef
	PartitionKey    []string
	Clustering      []string
	ClusteringOrder []Ordering
	CompactStorage  bool
	Options         Options
}

// AlterKind is what an ALTER TABLE does.
type AlterKind uint8

// Kinds of ALTER TABLE.
const (
	AlterAdd                AlterKind = iota // ADD [IF NOT EXISTS] c t | ADD (c t, ...)
	AlterDrop                                // DROP [IF EXISTS] c | DROP (c, ...)
	AlterRename                              // RENAME [IF EXISTS] a TO b [AND c TO d]
	AlterWith                                // WITH options
	AlterColumnType                          // ALTER c TYPE t
	AlterDropCompactStorage                  // DROP COMPACT STORAGE
)

// AlterTableStmt is ALTER TABLE [IF EXISTS] t followed by one alteration;
// only the fields of its Kind are set.
type AlterTableStmt struct {
	Table    TableName
	IfExists bool
	Kind     AlterKind

	Add            []ColumnDef
	AddIfNotExists bool

	Drop         []string
	DropIfExists bool

	Renames        [][2]string
	RenameIfExists bool

	Options Options

	// AlterColumn and AlterType are set for AlterColumnType.
	AlterColumn string
	AlterType   cqltype.Type
}

// DropTableStmt is DROP TABLE [IF EXISTS] t.
type DropTableStmt struct {
	Table    TableName
	IfExists bool
}

// TruncateStmt is TRUNCATE [TABLE] t.
type TruncateStmt struct{ Table TableName }

// IndexTargetKind says what part of a column an index covers.
type IndexTargetKind uint8

// Kinds of index targets.
const (
	IndexSimple  IndexTargetKind = iota // (c)
	IndexKeys                           // (KEYS(c))
	IndexValues                         // (VALUES(c))
	IndexEntries                        // (ENTRIES(c))
	IndexFull                           // (FULL(c))
)

// IndexTarget is one indexed column of CREATE INDEX.
type IndexTarget struct {
	Column string
	Kind   IndexTargetKind
}

// CreateIndexStmt is CREATE [CUSTOM] INDEX [IF NOT EXISTS] [name] ON
// t (targets) [USING 'class'] [WITH options].
type CreateIndexStmt struct {
	// Name is "" when the index is unnamed.
	Name        string
	Table       TableName
	IfNotExists bool
	Custom      bool
	Targets     []IndexTarget
	// Using is the class of a custom index, or "".
	Using   string
	Options Options
}

// DropIndexStmt is DROP INDEX [IF EXISTS] [ks.]name.
type DropIndexStmt struct {
	Index    TableName
	IfExists bool
}

// CreateTypeStmt is CREATE TYPE [IF NOT EXISTS] [ks.]name (field type, ...).
type CreateTypeStmt struct {
	Name        TableName
	IfNotExists bool
	Fields      []cqltype.Field
}

// DropTypeStmt is DROP TYPE [IF EXISTS] [ks.]name.
type DropTypeStmt struct {
	Name     TableName
	IfExists bool
}

// UnsupportedStmt is a statement that cosmosd recognises by its leading
// keywords but does not implement (materialized views, functions,
// aggregates, triggers, LIST SUPERUSERS, ALTER TYPE, DESCRIBE). The rest of
// its text is not parsed.
type UnsupportedStmt struct {
	// Text is the whole statement, trimmed of spaces and trailing ';'.
	Text string
	// What names the statement in upper case, e.g. "CREATE MATERIALIZED
	// VIEW", "DESCRIBE".
	What string
}

func (*SelectStmt) stmt()         {}
func (*InsertStmt) stmt()         {}
func (*UpdateStmt) stmt()         {}
func (*DeleteStmt) stmt()         {}
func (*BatchStmt) stmt()          {}
func (*UseStmt) stmt()            {}
func (*CreateKeyspaceStmt) stmt() {}
func (*AlterKeyspaceStmt) stmt()  {}
func (*DropKeyspaceStmt) stmt()   {}
func (*CreateTableStmt) stmt()    {}
func (*AlterTableStmt) stmt()     {}
func (*DropTableStmt) stmt()      {}
func (*TruncateStmt) stmt()       {}
func (*CreateIndexStmt) stmt()    {}
func (*DropIndexStmt) stmt()      {}
func (*CreateTypeStmt) stmt()     {}
func (*DropTypeStmt) stmt()       {}
func (*UnsupportedStmt) stmt()    {}
