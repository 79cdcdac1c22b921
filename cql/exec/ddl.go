package exec

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/schema"
)

var validName = regexp.MustCompile(`^\w{1,48}$`)

// ThroughputOption is Cosmos DB's table and keyspace option for provisioned
// request units per second.
const ThroughputOption = "cosmosdb_provisioned_throughput"

// Cosmos DB's other table options. Both are kept in the table's options
// (schema.Options.Other) and shown in system_schema.tables.extensions, as
// ThroughputOption is.
//
// AutoscaleOption is the most RU/s autoscale may provision. cosmosd does
// not scale throughput by itself: a table given only this option is
// provisioned with that ceiling, as if it were ThroughputOption (the most
// it may use), and an explicit ThroughputOption wins.
//
// CellLevelTimestampOption turns on cell-level timestamps in Cosmos DB;
// cosmosd always keeps a timestamp per cell, as Cassandra does, so the
// value is accepted, validated as a boolean and stored, and changes
// nothing.
const (
	AutoscaleOption          = "cosmosdb_autoscale_max_throughput"
	CellLevelTimestampOption = "cosmosdb_cell_level_timestamp"
)

func schemaChange(change, target, ks, name string) *Result {
	return &Result{Kind: ResultSchemaChange, Change: &SchemaChange{Change: change, Target: target, Keyspace: ks, Name: name}}
}

// optBool reads a boolean property: true or false, bare or quoted.
func optBool(v parser.OptionValue, name string) (bool, error) {
	if v.Kind == parser.OptBoolean || v.Kind == parser.OptString {
		switch strings.ToLower(v.Text) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, newErr(CodeConfig, "Invalid value for property '%s': %q is not a boolean", name, v.Text)
}

func optInt(v parser.OptionValue, name string) (int64, error) {
	if v.Kind != parser.OptNumber && v.Kind != parser.OptString {
		return 0, newErr(CodeConfig, "Invalid value for property '%s'", name)
	}
	n, err := strconv.ParseInt(v.Text, 10, 64)
	if err != nil || n < 0 {
		return 0, newErr(CodeConfig, "Invalid value for property '%s': %q is not a non-negative integer", name, v.Text)
	}
	return n, nil
}

// keyspaceOptions applies WITH options to ks.
func keyspaceOptions(ks *schema.Keyspace, opts parser.Options) error {
	for _, o := range opts {
		switch strings.ToLower(o.Name) {
		case "replication":
			if o.Value.Kind != parser.OptMap {
				return newErr(CodeConfig, "Invalid value for property 'replication'")
			}
			repl := map[string]string{}
			for _, e := range o.Value.Map {
				repl[e.Key] = e.Value.Text
			}
			class, ok := repl["class"]
			if !ok {
				return newErr(CodeConfig, "Missing replication strategy class")
			}
			switch strings.TrimPrefix(class, "org.apache.cassandra.locator.") {
			case "SimpleStrategy", "NetworkTopologyStrategy", "LocalStrategy", "EverywhereStrategy":
				repl["class"] = "org.apache.cassandra.locator." + strings.TrimPrefix(class, "org.apache.cassandra.locator.")
			default:
				return newErr(CodeConfig, "Unable to find replication strategy class '%s'", class)
			}
			ks.Replication = repl
		case "durable_writes":
			if o.Value.Kind != parser.OptBoolean && o.Value.Kind != parser.OptString {
				return newErr(CodeConfig, "Invalid value for property 'durable_writes'")
			}
			ks.DurableWrites = strings.EqualFold(o.Value.Text, "true")
		case ThroughputOption:
			n, err := optInt(o.Value, o.Name)
			if err != nil {
				return err
			}
			ks.Throughput = n
		default:
			return Syntax("Unknown property '%s'", o.Name)
		}
	}
	return nil
}

func isSystemKeyspace(ks string) bool {
	switch ks {
	case "system", "system_schema", "system_auth", "system_distributed", "system_traces", "system_virtual_schema":
		return true
	}
	return false
}

func (e *Executor) createKeyspace(ctx context.Context, s *parser.CreateKeyspaceStmt) (*Result, error) {
	if !validName.MatchString(s.Name) {
		return nil, Invalid("Keyspace name must not be empty, more than 48 characters long, or contain non-alphanumeric-underscore characters (got '%s')", s.Name)
	}
	if isSystemKeyspace(s.Name) {
		return nil, &Error{Code: CodeAlreadyExists, Message: fmt.Sprintf("Keyspace %s already exists", s.Name), Keyspace: s.Name}
	}
	ks := &schema.Keyspace{Name: s.Name, DurableWrites: true,
		Replication: map[string]string{"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "4"}}
	if err := keyspaceOptions(ks, s.Options); err != nil {
		return nil, err
	}
	if err := e.checkThroughput(0, ks.Throughput); err != nil {
		return nil, err
	}
	created, err := e.cfg.Catalog.CreateKeyspace(ctx, ks, s.IfNotExists)
	if errors.Is(err, cluster.ErrKeyspaceExists) {
		return nil, &Error{Code: CodeAlreadyExists, Message: fmt.Sprintf("Keyspace %s already exists", s.Name), Keyspace: s.Name}
	}
	if err != nil {
		return nil, ServerError("%v", err)
	}
	if !created {
		return voidResult, nil
	}
	return schemaChange("CREATED", "KEYSPACE", s.Name, ""), nil
}

func (e *Executor) alterKeyspace(ctx context.Context, s *parser.AlterKeyspaceStmt) (*Result, error) {
	if isSystemKeyspace(s.Name) {
		return nil, newErr(CodeUnauthorized, "%s keyspace is not user-modifiable", s.Name)
	}
	err := e.cfg.Catalog.AlterKeyspace(ctx, s.Name, func(ks *schema.Keyspace) error {
		old := ks.Throughput
		if err := keyspaceOptions(ks, s.Options); err != nil {
			return err
		}
		return e.checkThroughput(old, ks.Throughput)
	})
	if errors.Is(err, cluster.ErrKeyspaceNotFound) {
		if s.IfExists {
			return voidResult, nil
		}
		return nil, newErr(CodeConfig, "Cannot alter non existing keyspace '%s'.", s.Name)
	}
	if err != nil {
		return nil, AsError(err)
	}
	return schemaChange("UPDATED", "KEYSPACE", s.Name, ""), nil
}

func (e *Executor) dropKeyspace(ctx context.Context, s *parser.DropKeyspaceStmt) (*Result, error) {
	if isSystemKeyspace(s.Name) {
		return nil, newErr(CodeUnauthorized, "%s keyspace is not user-modifiable", s.Name)
	}
	dropped, err := e.cfg.Catalog.DropKeyspace(ctx, s.Name, s.IfExists)
	if errors.Is(err, cluster.ErrKeyspaceNotFound) {
		return nil, newErr(CodeConfig, "Cannot drop non existing keyspace '%s'.", s.Name)
	}
	if err != nil {
		return nil, ServerError("%v", err)
	}
	if !dropped {
		return voidResult, nil
	}
	return schemaChange("DROPPED", "KEYSPACE", s.Name, ""), nil
}

// tableKeyspace resolves the keyspace of a DDL statement's table.
func (e *Executor) tableKeyspace(sess *Session, name parser.TableName) (string, error) {
	ks := name.Keyspace
	if ks == "" {
		ks = sess.Keyspace()
	}
	if ks == "" {
		return "", Invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename")
	}
	if isSystemKeyspace(ks) {
		return "", newErr(CodeUnauthorized, "%s keyspace is not user-modifiable", ks)
	}
	if !e.keyspaceExists(ks) {
		return "", Invalid("Keyspace '%s' doesn't exist", ks)
	}
	return ks, nil
}

// checkColumnType enforces the rules on a column's type and returns the
// type as the catalog will give it back.
//
// The catalog stores a type in its CQL spelling and every node parses it
// back with cqltype.Parse (schema.Column). A type the parser accepted but
// cqltype.Parse cannot read would be stored and then be unreadable: the
// table would answer "unconfigured table" and could not be dropped
// normally (issue 15, a column typed 'org.apache...LexicalUUIDType').
// So what cosmosd does not support is refused here, up front, and every
// accepted type is the one read back from its own spelling.
func checkColumnType(name string, t cqltype.Type, kind schema.Kind) (cqltype.Type, error) {
	var walk func(t cqltype.Type) error
	walk = func(t cqltype.Type) error {
		switch t.Kind {
		case cqltype.UDT:
			return Invalid("Unknown type %s", t.Name)
		case cqltype.Custom:
			return Invalid("Custom types are not supported by cosmosd (column %s has type '%s')", name, t.Custom)
		}
		for _, el := range t.Elems {
			if err := walk(el); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(t); err != nil {
		return cqltype.Type{}, err
	}
	stored, err := cqltype.Parse(t.String())
	if err != nil {
		// cqltype's messages are Cassandra's, e.g. "Non-frozen collections
		// are not allowed inside collections".
		return cqltype.Type{}, Invalid("%v", err)
	}
	t = stored
	if kind == schema.PartitionKey || kind == schema.Clustering {
		if t.IsMultiCell() {
			return cqltype.Type{}, Invalid("Invalid non-frozen collection type for PRIMARY KEY component %s", name)
		}
		if t.Kind == cqltype.Counter {
			return cqltype.Type{}, Invalid("counter type is not supported for PRIMARY KEY column '%s'", name)
		}
		if t.Kind == cqltype.Duration {
			return cqltype.Type{}, Invalid("duration type is not supported for PRIMARY KEY column '%s'", name)
		}
	}
	if kind == schema.Static && t.Kind == cqltype.Counter {
		return cqltype.Type{}, Invalid("Static counter columns are not supported")
	}
	return t, nil
}

// setOther records an option kept as given in t.Options.Other.
func setOther(t *schema.Table, name, value string) {
	if t.Options.Other == nil {
		t.Options.Other = map[string]string{}
	}
	t.Options.Other[name] = value
}

// tableOptions applies WITH options to t.
func tableOptions(t *schema.Table, opts parser.Options) error {
	// An autoscale ceiling provisions the table (AutoscaleOption) unless
	// the statement gives the throughput itself, or the table's throughput
	// was set apart from the ceiling (by ThroughputOption or cosmosctl).
	throughputGiven := false
	autoscale := int64(-1)
	oldAutoscale, hadAutoscale := int64(0), false
	if v, ok := t.Options.Other[AutoscaleOption]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			oldAutoscale, hadAutoscale = n, true
		}
	}
	for _, o := range opts {
		name := strings.ToLower(o.Name)
		switch name {
		case ThroughputOption:
			n, err := optInt(o.Value, name)
			if err != nil {
				return err
			}
			t.Options.Throughput = n
			throughputGiven = true
		case AutoscaleOption:
			n, err := optInt(o.Value, name)
			if err != nil {
				return err
			}
			autoscale = n
			setOther(t, name, strconv.FormatInt(n, 10))
		case CellLevelTimestampOption:
			b, err := optBool(o.Value, name)
			if err != nil {
				return err
			}
			setOther(t, name, strconv.FormatBool(b))
		case "default_time_to_live":
			n, err := optInt(o.Value, name)
			if err != nil {
				return err
			}
			if n > 630720000 {
				return newErr(CodeConfig, "default_time_to_live must be less than or equal to 630720000 (got %d)", n)
			}
			t.Options.DefaultTTL = int32(n)
		case "gc_grace_seconds":
			n, err := optInt(o.Value, name)
			if err != nil {
				return err
			}
			t.Options.GCGraceSeconds = int32(min(n, 1<<31-1))
		case "comment":
			t.Options.Comment = o.Value.Text
		case "bloom_filter_fp_chance", "caching", "compaction", "compression", "crc_check_chance",
			"dclocal_read_repair_chance", "read_repair_chance", "max_index_interval", "min_index_interval",
			"memtable_flush_period_in_ms", "speculative_retry", "cdc", "extensions", "additional_write_policy",
			"read_repair", "memtable":
			setOther(t, name, optionText(o.Value))
		default:
			return Syntax("Unknown property '%s'", o.Name)
		}
	}
	if autoscale >= 0 && !throughputGiven &&
		(t.Options.Throughput == 0 || hadAutoscale && t.Options.Throughput == oldAutoscale) {
		t.Options.Throughput = autoscale
	}
	return nil
}

func optionText(v parser.OptionValue) string {
	if v.Kind != parser.OptMap {
		return v.Text
	}
	parts := make([]string, len(v.Map))
	for i, e := range v.Map {
		parts[i] = fmt.Sprintf("'%s': '%s'", e.Key, e.Value.Text)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (e *Executor) createTable(ctx context.Context, sess *Session, s *parser.CreateTableStmt) (*Result, error) {
	ks, err := e.tableKeyspace(sess, s.Table)
	if err != nil {
		return nil, err
	}
	if !validName.MatchString(s.Table.Name) {
		return nil, Invalid("Table name must not be empty, more than 48 characters long, or contain non-alphanumeric-underscore characters (got '%s')", s.Table.Name)
	}
	if existing := e.cfg.Meta.State().Schema.Table(ks, s.Table.Name); existing != nil {
		if s.IfNotExists {
			return voidResult, nil
		}
		return nil, &Error{Code: CodeAlreadyExists, Message: fmt.Sprintf("Table %s.%s already exists", ks, s.Table.Name), Keyspace: ks, Table: s.Table.Name}
	}
	if s.CompactStorage {
		return nil, Invalid("COMPACT STORAGE is not supported by cosmosd")
	}
	if len(s.PartitionKey) == 0 {
		return nil, Invalid("No PRIMARY KEY specifed for table '%s' (exactly one required)", s.Table.Name)
	}
	t := &schema.Table{Keyspace: ks, Name: s.Table.Name, UUID: cluster.NewUUID()}
	t.Options.GCGraceSeconds = schema.DefaultGCGraceSeconds
	defs := map[string]parser.ColumnDef{}
	for _, c := range s.Columns {
		if _, dup := defs[c.Name]; dup {
			return nil, Invalid("Multiple definition of identifier %s", c.Name)
		}
		defs[c.Name] = c
	}
	kinds := map[string]schema.Kind{}
	pos := map[string]int{}
	for i, name := range s.PartitionKey {
		if _, ok := defs[name]; !ok {
			return nil, Invalid("Unknown definition %s referenced in PRIMARY KEY", name)
		}
		if _, dup := kinds[name]; dup {
			return nil, Invalid("Multiple definition of identifier %s", name)
		}
		kinds[name], pos[name] = schema.PartitionKey, i
	}
	for i, name := range s.Clustering {
		if _, ok := defs[name]; !ok {
			return nil, Invalid("Unknown definition %s referenced in PRIMARY KEY", name)
		}
		if _, dup := kinds[name]; dup {
			return nil, Invalid("Multiple definition of identifier %s", name)
		}
		kinds[name], pos[name] = schema.Clustering, i
	}
	desc := map[string]bool{}
	if len(s.ClusteringOrder) > 0 {
		for i, o := range s.ClusteringOrder {
			if kinds[o.Column] != schema.Clustering {
				return nil, Invalid("Only clustering key columns can be defined in CLUSTERING ORDER directive")
			}
			if i >= len(s.Clustering) || s.Clustering[i] != o.Column {
				return nil, Invalid("The order of columns in the CLUSTERING ORDER directive must be the one of the clustering key")
			}
			desc[o.Column] = o.Desc
		}
	}
	counters, others := 0, 0
	for _, c := range s.Columns {
		kind, isKey := kinds[c.Name]
		if !isKey {
			kind = schema.Regular
			if c.Static {
				kind = schema.Static
			}
		} else if c.Static {
			return nil, Invalid("Static column %s cannot be part of the PRIMARY KEY", c.Name)
		}
		if kind == schema.Static && len(s.Clustering) == 0 {
			return nil, Invalid("Static columns are only useful (and thus allowed) if the table has at least one clustering column")
		}
		typ, err := checkColumnType(c.Name, c.Type, kind)
		if err != nil {
			return nil, err
		}
		if !isKey {
			if typ.Kind == cqltype.Counter {
				counters++
			} else {
				others++
			}
		}
		p := -1
		if isKey {
			p = pos[c.Name]
		}
		t.Columns = append(t.Columns, schema.Column{Name: c.Name, Type: typ, Kind: kind, Position: p, Desc: desc[c.Name]})
	}
	if counters > 0 && others > 0 {
		return nil, Invalid("Cannot mix counter and non counter columns in the same table")
	}
	if err := tableOptions(t, s.Options); err != nil {
		return nil, err
	}
	if err := e.checkThroughput(0, t.Options.Throughput); err != nil {
		return nil, err
	}
	if counters > 0 && t.Options.DefaultTTL > 0 {
		return nil, Invalid("Cannot set default_time_to_live on a table with counters")
	}
	t.Canonicalize()
	for i := range t.Columns {
		t.Columns[i].ID = uint32(i)
	}
	t.NextColumnID = uint32(len(t.Columns))
	if err := t.Validate(); err != nil {
		return nil, Invalid("%v", err)
	}
	id, err := e.cfg.Catalog.AllocateID(ctx, "table", 1)
	if err != nil {
		return nil, ServerError("allocate table id: %v", err)
	}
	t.ID = id
	n := e.partitionsFor(t.Options.Throughput)
	parts, err := e.cfg.Placer.PlaceTable(ctx, t, n)
	if err != nil {
		return nil, Invalid("Cannot create table %s.%s: %v", ks, t.Name, err)
	}
	created, err := e.cfg.Catalog.CreateTable(ctx, t, parts, s.IfNotExists)
	switch {
	case errors.Is(err, cluster.ErrTableExists):
		return nil, &Error{Code: CodeAlreadyExists, Message: fmt.Sprintf("Table %s.%s already exists", ks, t.Name), Keyspace: ks, Table: t.Name}
	case errors.Is(err, cluster.ErrKeyspaceNotFound):
		return nil, Invalid("Keyspace '%s' doesn't exist", ks)
	case err != nil:
		return nil, ServerError("%v", err)
	case !created:
		return voidResult, nil
	}
	return schemaChange("CREATED", "TABLE", ks, t.Name), nil
}

// partitionsFor is the number of physical partitions a table starts with:
// enough that each partition's share of the throughput is at most the
// per-partition maximum.
func (e *Executor) partitionsFor(throughput int64) int {
	if throughput <= 0 {
		return 1
	}
	n := (throughput + e.cfg.PhysicalPartitionMaxRU - 1) / e.cfg.PhysicalPartitionMaxRU
	return int(max(1, min(n, int64(e.cfg.MaxPartitionsPerTable))))
}

// checkThroughput refuses provisioning more RU/s than
// MaxProvisionedThroughput. Only a changed value is checked, so that a
// table provisioned before the limit was lowered can still be altered in
// other ways.
func (e *Executor) checkThroughput(old, n int64) error {
	if n == old || n <= e.cfg.MaxProvisionedThroughput {
		return nil
	}
	return Invalid("%s = %d exceeds the maximum of %d RU/s (max_provisioned_throughput)", ThroughputOption, n, e.cfg.MaxProvisionedThroughput)
}

func (e *Executor) alterTable(ctx context.Context, sess *Session, s *parser.AlterTableStmt) (*Result, error) {
	ks, err := e.tableKeyspace(sess, s.Table)
	if err != nil {
		return nil, err
	}
	if e.lookupTable(ks, s.Table.Name) == nil {
		if s.IfExists {
			return voidResult, nil
		}
		return nil, Invalid("Table '%s.%s' doesn't exist", ks, s.Table.Name)
	}
	noop := false
	_, err = e.cfg.Catalog.AlterTable(ctx, ks, s.Table.Name, func(t *schema.Table) error {
		noop = false
		old := t.Options.Throughput
		if err := alterTableDef(t, s, &noop); err != nil {
			return err
		}
		return e.checkThroughput(old, t.Options.Throughput)
	})
	if errors.Is(err, cluster.ErrTableNotFound) {
		if s.IfExists {
			return voidResult, nil
		}
		return nil, Invalid("Table '%s.%s' doesn't exist", ks, s.Table.Name)
	}
	if err != nil {
		return nil, AsError(err)
	}
	if noop {
		return voidResult, nil
	}
	return schemaChange("UPDATED", "TABLE", ks, s.Table.Name), nil
}

// alterTableDef applies an ALTER TABLE to t; noop reports an IF [NOT]
// EXISTS that made it do nothing.
func alterTableDef(t *schema.Table, s *parser.AlterTableStmt, noop *bool) error {
	switch s.Kind {
	case parser.AlterAdd:
		added := 0
		for _, c := range s.Add {
			if t.Column(c.Name) != nil {
				if s.AddIfNotExists {
					continue
				}
				return Invalid("Invalid column name %s because it conflicts with an existing column", c.Name)
			}
			kind := schema.Regular
			if c.Static {
				kind = schema.Static
				if len(t.ClusteringColumns()) == 0 {
					return Invalid("Static columns are not allowed in COMPACT STORAGE tables or tables without clustering columns")
				}
			}
			typ, err := checkColumnType(c.Name, c.Type, kind)
			if err != nil {
				return err
			}
			if (typ.Kind == cqltype.Counter) != t.IsCounter() {
				return Invalid("Cannot add a counter column (%s) in a non counter column family", c.Name)
			}
			t.Columns = append(t.Columns, schema.Column{ID: t.NextColumnID, Name: c.Name, Type: typ, Kind: kind, Position: -1})
			t.NextColumnID++
			added++
		}
		*noop = added == 0
	case parser.AlterDrop:
		dropped := 0
		for _, name := range s.Drop {
			c := t.Column(name)
			if c == nil {
				if s.DropIfExists {
					continue
				}
				return Invalid("Column %s was not found in table %s", name, t.Name)
			}
			if c.IsPrimaryKey() {
				return Invalid("Cannot drop PRIMARY KEY part %s", name)
			}
			t.Dropped = append(t.Dropped, c.ID)
			for i := range t.Columns {
				if t.Columns[i].Name == name {
					t.Columns = append(t.Columns[:i], t.Columns[i+1:]...)
					break
				}
			}
			dropped++
		}
		*noop = dropped == 0
	case parser.AlterRename:
		for _, r := range s.Renames {
			c := t.Column(r[0])
			if c == nil {
				if s.RenameIfExists {
					continue
				}
				return Invalid("Column %s was not found in table %s", r[0], t.Name)
			}
			if !c.IsPrimaryKey() {
				return Invalid("Cannot rename non PRIMARY KEY column %s", r[0])
			}
			if t.Column(r[1]) != nil {
				return Invalid("Cannot rename column %s to %s in table %s; another column of that name already exist", r[0], r[1], t.Name)
			}
			c.Name = r[1]
		}
	case parser.AlterWith:
		if err := tableOptions(t, s.Options); err != nil {
			return err
		}
	case parser.AlterColumnType:
		return Invalid("Altering column types is no longer supported")
	default:
		return Invalid("Unsupported ALTER TABLE")
	}
	t.Canonicalize()
	return nil
}

func (e *Executor) dropTable(ctx context.Context, sess *Session, s *parser.DropTableStmt) (*Result, error) {
	ks, err := e.tableKeyspace(sess, s.Table)
	if err != nil {
		if s.IfExists && s.Table.Keyspace != "" && !isSystemKeyspace(s.Table.Keyspace) {
			return voidResult, nil
		}
		return nil, err
	}
	dropped, err := e.cfg.Catalog.DropTable(ctx, ks, s.Table.Name, s.IfExists)
	if errors.Is(err, cluster.ErrTableNotFound) {
		return nil, Invalid("Table '%s.%s' doesn't exist", ks, s.Table.Name)
	}
	if err != nil {
		return nil, ServerError("%v", err)
	}
	if !dropped {
		return voidResult, nil
	}
	return schemaChange("DROPPED", "TABLE", ks, s.Table.Name), nil
}

func (e *Executor) truncate(ctx context.Context, sess *Session, s *parser.TruncateStmt) (*Result, error) {
	t, vt, err := e.resolveTable(sess, s.Table)
	if err != nil {
		return nil, err
	}
	if vt != nil {
		return nil, newErr(CodeUnauthorized, "%s keyspace is not user-modifiable", t.Keyspace)
	}
	for _, p := range e.cfg.Meta.State().Ring(t.ID).Partitions() {
		req := &kvpb.WriteRequest{Truncate: true, NowMicros: e.cfg.Now().UnixMicro()}
		if _, err := e.cfg.Router.Write(ctx, router.Target{Table: t.ID, Partition: p.GetId()}, req); err != nil {
			return nil, &Error{Code: CodeTruncate, Message: fmt.Sprintf("Error during truncate: %v", err)}
		}
	}
	return voidResult, nil
}
