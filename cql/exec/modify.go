package exec

import (
	"context"
	"encoding/binary"
	"strings"

	"github.com/cosmosd/cosmosd/cql/parser"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/storage"
)

// maxTTL is Cassandra's largest TTL: 20 years in seconds.
const maxTTL = 630720000

// modPlan is an analysed INSERT, UPDATE or DELETE.
type modPlan struct {
	table     *schema.Table
	mutations []*kvpb.Mutation
	// cond is the statement's lightweight-transaction condition.
	cond *kvpb.Condition
	// condCols are the columns a failed column condition reports back.
	condCols []*schema.Column
	// ifNotExists: a failed condition reports the whole existing row.
	ifNotExists bool
	counter     bool
	// hasTimestamp: the statement set USING TIMESTAMP.
	hasTimestamp bool
}

// modContext carries what analysis of a modification needs beyond the
// statement: the default timestamp and whether it runs in a batch.
type modContext struct {
	req Request
	// batchTS is the timestamp shared by a batch's statements that set
	// none of their own: the batch's USING TIMESTAMP, else its default;
	// batchSource says who chose it. Both are set when inBatch.
	batchTS     int64
	batchSource kvpb.Mutation_TimestampSource
	inBatch     bool
	// batchUsingTS: the batch itself has USING TIMESTAMP, which its
	// statements may then not repeat.
	batchUsingTS bool
}

func (e *Executor) runModify(ctx context.Context, sess *Session, stmt parser.Statement, b *binder, req Request) (*Result, error) {
	p, err := e.analyzeModify(sess, stmt, b, modContext{req: req})
	if err != nil {
		return nil, err
	}
	return e.applyPlans(ctx, []*modPlan{p}, req, false)
}

// timestamp resolves USING TIMESTAMP, the batch's or request's default, or
// the coordinator's clock.
func (e *Executor) timestamp(using parser.Using, t *schema.Table, b *binder, mc modContext) (int64, bool, error) {
	if using.Timestamp != nil {
		if mc.inBatch && mc.batchUsingTS {
			return 0, false, Invalid("Timestamp must be set either on BATCH or individual statements")
		}
		v, err := b.term(using.Timestamp, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "[timestamp]", Type: cqltype.Scalar(cqltype.Bigint)})
		if err != nil {
			return 0, false, err
		}
		if b.prepare {
			return 0, true, nil
		}
		if v.null {
			return 0, false, Invalid("Invalid null value of timestamp")
		}
		if v.unset {
			return e.defaultTimestamp(mc), false, nil
		}
		if len(v.b) != 8 {
			return 0, false, Invalid("Invalid empty value for timestamp")
		}
		ts := int64(binary.BigEndian.Uint64(v.b))
		if ts == storage.NoTimestamp {
			return 0, false, Invalid("Invalid timestamp %d", ts)
		}
		return ts, true, nil
	}
	return e.defaultTimestamp(mc), false, nil
}

func (e *Executor) defaultTimestamp(mc modContext) int64 {
	if mc.inBatch {
		return mc.batchTS
	}
	if mc.req.HasTimestamp {
		return mc.req.Timestamp
	}
	return e.cfg.Now().UnixMicro()
}

// defaultSource says who chose defaultTimestamp's timestamp. The state
// machine raises a coordinator's timestamp above what the logical
// partition holds and keeps a client's (partition/write.go, "Write
// timestamps"), so a statement's mutations must say which they carry.
func (mc modContext) defaultSource() kvpb.Mutation_TimestampSource {
	switch {
	case mc.inBatch:
		return mc.batchSource
	case mc.req.HasTimestamp:
		return kvpb.Mutation_CLIENT
	}
	return kvpb.Mutation_COORDINATOR
}

// ttl resolves USING TTL or the table default.
func ttl(using parser.Using, t *schema.Table, b *binder) (int32, error) {
	if using.TTL == nil {
		return t.Options.DefaultTTL, nil
	}
	v, err := b.term(using.TTL, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "[ttl]", Type: cqltype.Scalar(cqltype.Int)})
	if err != nil || b.prepare {
		return 0, err
	}
	if v.null {
		return 0, nil
	}
	if v.unset {
		return t.Options.DefaultTTL, nil
	}
	if len(v.b) != 4 {
		return 0, Invalid("Invalid empty value for ttl")
	}
	n := int32Of(v.b)
	if n < 0 {
		return 0, Invalid("A TTL must be greater or equal to 0, but was %d", n)
	}
	if n > maxTTL {
		return 0, Invalid("ttl is too large. requested (%d) maximum (%d)", n, maxTTL)
	}
	return n, nil
}

func (e *Executor) analyzeModify(sess *Session, stmt parser.Statement, b *binder, mc modContext) (*modPlan, error) {
	var name parser.TableName
	switch s := stmt.(type) {
	case *parser.InsertStmt:
		name = s.Table
	case *parser.UpdateStmt:
		name = s.Table
	case *parser.DeleteStmt:
		name = s.Table
	default:
		return nil, Invalid("Only INSERT, UPDATE and DELETE statements are allowed in a BATCH")
	}
	t, vt, err := e.resolveTable(sess, name)
	if err != nil {
		return nil, err
	}
	if vt != nil {
		return nil, newErr(CodeUnauthorized, "%s keyspace is not user-modifiable", t.Keyspace)
	}
	var p *modPlan
	switch s := stmt.(type) {
	case *parser.InsertStmt:
		p, err = e.analyzeInsert(t, s, b, mc)
	case *parser.UpdateStmt:
		p, err = e.analyzeUpdate(t, s, b, mc)
	default:
		p, err = e.analyzeDelete(t, stmt.(*parser.DeleteStmt), b, mc)
	}
	if err != nil {
		return nil, err
	}
	src := mc.defaultSource()
	if p.hasTimestamp {
		src = kvpb.Mutation_STATEMENT
	}
	for _, m := range p.mutations {
		m.TimestampSource = src
	}
	return p, nil
}

func spec(t *schema.Table, c *schema.Column) ColumnSpec {
	return ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: c.Name, Type: c.Type}
}

func (e *Executor) analyzeInsert(t *schema.Table, s *parser.InsertStmt, b *binder, mc modContext) (*modPlan, error) {
	if s.Json != nil {
		js, err := insertJSONColumns(t, s, b)
		if err != nil {
			return nil, err
		}
		s = js
	}
	if t.IsCounter() {
		return nil, Invalid("INSERT statements are not allowed on counter tables, use UPDATE instead")
	}
	if len(s.Columns) != len(s.Values) {
		return nil, Invalid("Unmatched column names/values")
	}
	ts, hasTS, err := e.timestamp(s.Using, t, b, mc)
	if err != nil {
		return nil, err
	}
	ttlv, err := ttl(s.Using, t, b)
	if err != nil {
		return nil, err
	}
	p := &modPlan{table: t, hasTimestamp: hasTS}
	pkVals := make([][]byte, len(t.PartitionKey()))
	ckVals := make([][]byte, len(t.ClusteringColumns()))
	ckSet := 0
	var rowOps, staticOps []*kvpb.ColumnOp
	seen := map[string]bool{}
	for i, name := range s.Columns {
		c := t.Column(name)
		if c == nil {
			return nil, Invalid("Undefined column name %s", name)
		}
		if seen[name] {
			return nil, Invalid("Multiple definitions found for column %s", name)
		}
		seen[name] = true
		v, err := b.term(s.Values[i], spec(t, c))
		if err != nil {
			return nil, err
		}
		switch c.Kind {
		case schema.PartitionKey, schema.Clustering:
			if !b.prepare {
				if v.unset {
					return nil, Invalid("Invalid unset value for column %s", name)
				}
				if v.null {
					return nil, Invalid("Invalid null value in condition for column %s", name)
				}
			}
			if c.Kind == schema.PartitionKey {
				pkVals[c.Position] = v.b
			} else {
				ckVals[c.Position] = v.b
				ckSet++
			}
		default:
			if v.unset {
				continue
			}
			op := &kvpb.ColumnOp{Column: c.ID, Kind: kvpb.ColumnOp_SET, Value: v.b}
			if v.null {
				op = &kvpb.ColumnOp{Column: c.ID, Kind: kvpb.ColumnOp_DELETE}
			}
			if c.Kind == schema.Static {
				staticOps = append(staticOps, op)
			} else {
				rowOps = append(rowOps, op)
			}
		}
	}
	if missing := missingColumns(t.PartitionKey(), pkVals, seen); missing != "" {
		return nil, Invalid("Some partition key parts are missing: %s", missing)
	}
	staticOnly := ckSet == 0 && len(rowOps) == 0 && len(t.ClusteringColumns()) > 0
	if !staticOnly {
		if missing := missingColumns(t.ClusteringColumns(), ckVals, seen); missing != "" {
			return nil, Invalid("Some clustering keys are missing: %s", missing)
		}
	}
	if s.IfNotExists && hasTS {
		return nil, Invalid("Cannot provide custom timestamp for conditional updates")
	}
	if b.prepare {
		return p, nil
	}
	pk, err := makePartitionKey(t, pkVals)
	if err != nil {
		return nil, err
	}
	var ck []byte
	if !staticOnly {
		if ck, err = encodeClustering(t, ckVals); err != nil {
			return nil, err
		}
		p.mutations = append(p.mutations, &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: pk.token, Pk: pk.key, Ck: ck,
			Timestamp: ts, Ttl: ttlv, Marker: true, Ops: rowOps})
	}
	if len(staticOps) > 0 {
		p.mutations = append(p.mutations, &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: pk.token, Pk: pk.key,
			Timestamp: ts, Ttl: ttlv, Ops: staticOps, Marker: staticOnly})
	}
	if s.IfNotExists {
		p.cond = &kvpb.Condition{Kind: kvpb.Condition_NOT_EXISTS, Token: pk.token, Pk: pk.key, Ck: ck}
		p.ifNotExists = true
	}
	return p, nil
}

func missingColumns(cols []*schema.Column, vals [][]byte, seen map[string]bool) string {
	var out []string
	for i, c := range cols {
		if vals[i] == nil && !seen[c.Name] {
			out = append(out, c.Name)
		}
	}
	return strings.Join(out, ", ")
}

// modificationKeys resolves the WHERE clause of UPDATE and DELETE into the
// partition keys and the clustering plan it addresses.
func modificationKeys(t *schema.Table, where []parser.Relation, b *binder, verb string) ([]partitionKey, *clusteringPlan, *restrictions, error) {
	for _, rel := range where {
		if rel.Kind == parser.RelToken {
			return nil, nil, nil, Invalid("The token function cannot be used in WHERE clauses for %s statements", verb)
		}
	}
	r, err := analyzeWhere(t, where, b)
	if err != nil {
		return nil, nil, nil, err
	}
	if non := r.nonKeyColumns(); len(non) > 0 {
		return nil, nil, nil, Invalid("Non PRIMARY KEY columns found in where clause: %s", strings.Join(non, ", "))
	}
	var missing []string
	for _, c := range t.PartitionKey() {
		rs := r.byCol[c.Name]
		if len(rs) == 0 {
			missing = append(missing, c.Name)
			continue
		}
		if rs[0].op != parser.OpEq && rs[0].op != parser.OpIn {
			return nil, nil, nil, Invalid("Only EQ and IN relation are supported on the partition key (unless you use the token() function) for %s statements", verb)
		}
	}
	if len(missing) > 0 {
		return nil, nil, nil, Invalid("Some partition key parts are missing: %s", strings.Join(missing, ", "))
	}
	for _, cr := range r.order {
		if cr.op == parser.OpContains || cr.op == parser.OpContainsKey || cr.op == parser.OpNeq {
			return nil, nil, nil, Invalid("Unsupported restriction %s on %s for %s statements", cr.op, cr.col.Name, verb)
		}
	}
	cp, err := r.clustering()
	if err != nil {
		return nil, nil, nil, err
	}
	if !cp.exact || cp.needsFiltering {
		return nil, nil, nil, Invalid("Invalid restrictions on clustering columns for %s statements: a clustering column cannot be restricted unless the preceding ones are restricted by equality", verb)
	}
	if b.prepare {
		return nil, cp, r, nil
	}
	keys, _, err := r.partitionKeys()
	return keys, cp, r, err
}

func (e *Executor) analyzeUpdate(t *schema.Table, s *parser.UpdateStmt, b *binder, mc modContext) (*modPlan, error) {
	ts, hasTS, err := e.timestamp(s.Using, t, b, mc)
	if err != nil {
		return nil, err
	}
	ttlv, err := ttl(s.Using, t, b)
	if err != nil {
		return nil, err
	}
	p := &modPlan{table: t, counter: t.IsCounter(), hasTimestamp: hasTS}
	// Counter updates are read-modify-writes ordered by the log (see
	// defaultSource); as in Cassandra they take no timestamp of their own.
	if p.counter && hasTS && !s.IfExists && len(s.Conditions) == 0 {
		return nil, Invalid("Cannot provide custom timestamp for counter updates")
	}
	if p.counter && s.Using.TTL != nil {
		return nil, Invalid("Cannot provide custom TTL for counter updates")
	}
	var rowOps, staticOps []*kvpb.ColumnOp
	// seen records, per column, whether an earlier assignment set the
	// whole value. As in Cassandra, a whole-value SET is incompatible with
	// any other assignment to the column, while additions, removals and
	// element sets combine (l = l + [1], l = [0] + l).
	seen := map[string]bool{}
	setsRegular := false
	for i := range s.Assignments {
		a := &s.Assignments[i]
		c := t.Column(a.Column)
		if c == nil {
			return nil, Invalid("Undefined column name %s", a.Column)
		}
		if c.IsPrimaryKey() {
			return nil, Invalid("PRIMARY KEY part %s found in SET part", a.Column)
		}
		if a.Field != "" {
			return nil, Invalid("Invalid field selection: %s is not a user type", c.Name)
		}
		wholeSet := a.Op == parser.AssignSet && a.Key == nil
		if prevWhole, ok := seen[a.Column]; ok && (prevWhole || wholeSet) {
			return nil, Invalid("Multiple incompatible setting of column %s", a.Column)
		}
		seen[a.Column] = seen[a.Column] || wholeSet
		ops, err := assignmentOps(t, c, a, b)
		if err != nil {
			return nil, err
		}
		// While preparing no ops are built; the rules below depend only
		// on which kinds of columns are assigned.
		setsRegular = setsRegular || c.Kind != schema.Static
		if c.Kind == schema.Static {
			staticOps = append(staticOps, ops...)
		} else {
			rowOps = append(rowOps, ops...)
		}
	}
	keys, cp, _, err := modificationKeys(t, s.Where, b, "UPDATE")
	if err != nil {
		return nil, err
	}
	hasCK := len(t.ClusteringColumns()) > 0
	if hasCK && !cp.fullKey && (setsRegular || cp.eqCols > 0) {
		var missing []string
		for _, c := range t.ClusteringColumns()[cp.eqCols:] {
			missing = append(missing, c.Name)
		}
		if cp.start != nil || cp.end != nil {
			return nil, Invalid("Slice restrictions are not supported on the clustering columns in UPDATE statements")
		}
		return nil, Invalid("Some clustering keys are missing: %s", strings.Join(missing, ", "))
	}
	if err := e.conditions(p, t, s.IfExists, s.Conditions, b, keys, cp, hasTS); err != nil {
		return nil, err
	}
	if b.prepare {
		return p, nil
	}
	for _, k := range keys {
		if len(staticOps) > 0 {
			p.mutations = append(p.mutations, &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: k.token, Pk: k.key, Timestamp: ts, Ttl: ttlv, Ops: staticOps})
		}
		if len(rowOps) > 0 {
			for _, ck := range cp.prefixes {
				p.mutations = append(p.mutations, &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: k.token, Pk: k.key, Ck: ck, Timestamp: ts, Ttl: ttlv, Ops: rowOps})
			}
		}
	}
	return p, nil
}

// assignmentOps turns one SET assignment into column operations.
func assignmentOps(t *schema.Table, c *schema.Column, a *parser.Assignment, b *binder) ([]*kvpb.ColumnOp, error) {
	typ := c.Type
	typeName := typ.String()
	if typ.Kind == cqltype.Counter {
		if a.Op != parser.AssignAdd && a.Op != parser.AssignSub {
			return nil, Invalid("Cannot set the value of counter column %s (counters can only be incremented/decremented, not set)", c.Name)
		}
		v, err := b.term(a.Value, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: c.Name, Type: cqltype.Scalar(cqltype.Bigint)})
		if err != nil || b.prepare {
			return nil, err
		}
		if v.null || v.unset {
			return nil, Invalid("Invalid null value for counter increment")
		}
		if len(v.b) != 8 {
			return nil, Invalid("Invalid empty value for counter increment")
		}
		d := int64(binary.BigEndian.Uint64(v.b))
		if a.Op == parser.AssignSub {
			d = -d
		}
		return []*kvpb.ColumnOp{{Column: c.ID, Kind: kvpb.ColumnOp_COUNTER_ADD, Value: binary.BigEndian.AppendUint64(nil, uint64(d))}}, nil
	}
	if a.Op != parser.AssignSet && !typ.IsMultiCell() {
		if isCollection(typ) {
			// Cassandra's message for l = l + [...] on a frozen list.
			return nil, Invalid("Invalid operation (%s) for frozen collection column %s", assignText(a), c.Name)
		}
		return nil, Invalid("Invalid operation (%s) for non counter column %s", assignText(a), c.Name)
	}
	if a.Key != nil {
		// c[key] = value
		switch typ.Kind {
		case cqltype.Map:
			if !typ.IsMultiCell() {
				return nil, Invalid("Invalid operation (%s) for frozen collection column %s", assignText(a), c.Name)
			}
			k, err := b.term(a.Key, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "key(" + c.Name + ")", Type: typ.Elems[0]})
			if err != nil {
				return nil, err
			}
			v, err := b.term(a.Value, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "value(" + c.Name + ")", Type: typ.Elems[1]})
			if err != nil || b.prepare {
				return nil, err
			}
			if k.null || k.unset {
				return nil, Invalid("Invalid null value for map key")
			}
			if v.unset {
				return nil, nil
			}
			if v.null {
				return []*kvpb.ColumnOp{{Column: c.ID, Kind: kvpb.ColumnOp_MAP_REMOVE, Value: cqltype.EncodeCollection([][]byte{k.b}), Type: typeName}}, nil
			}
			return []*kvpb.ColumnOp{{Column: c.ID, Kind: kvpb.ColumnOp_MAP_PUT, Value: cqltype.EncodeMap([][]byte{k.b}, [][]byte{v.b}), Type: typeName}}, nil
		case cqltype.List:
			if !typ.IsMultiCell() {
				return nil, Invalid("Invalid operation (%s) for frozen collection column %s", assignText(a), c.Name)
			}
			idx, err := b.term(a.Key, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "idx(" + c.Name + ")", Type: cqltype.Scalar(cqltype.Int)})
			if err != nil {
				return nil, err
			}
			v, err := b.term(a.Value, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "value(" + c.Name + ")", Type: typ.Elems[0]})
			if err != nil || b.prepare {
				return nil, err
			}
			if idx.null || idx.unset || len(idx.b) != 4 {
				return nil, Invalid("Invalid null value for list index")
			}
			i := int32Of(idx.b)
			if v.null {
				return []*kvpb.ColumnOp{{Column: c.ID, Kind: kvpb.ColumnOp_LIST_DELETE_INDEX, Index: i, Type: typeName}}, nil
			}
			return []*kvpb.ColumnOp{{Column: c.ID, Kind: kvpb.ColumnOp_LIST_SET_INDEX, Index: i, Value: v.b, Type: typeName}}, nil
		}
		if typ.Kind == cqltype.Set {
			return nil, Invalid("Invalid operation (%s) for set column %s", assignText(a), c.Name)
		}
		return nil, Invalid("Invalid operation (%s) for non collection column %s", assignText(a), c.Name)
	}
	if a.Op == parser.AssignPrepend && typ.Kind != cqltype.List {
		return nil, Invalid("Invalid operation (%s) for non list column %s", assignText(a), c.Name)
	}
	recv := ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: c.Name, Type: typ}
	if a.Op == parser.AssignSub && typ.Kind == cqltype.Map {
		recv.Type = cqltype.SetOf(typ.Elems[0])
	}
	v, err := b.term(a.Value, recv)
	if err != nil || b.prepare {
		return nil, err
	}
	if v.unset {
		return nil, nil
	}
	switch a.Op {
	case parser.AssignSet:
		if v.null {
			return []*kvpb.ColumnOp{{Column: c.ID, Kind: kvpb.ColumnOp_DELETE}}, nil
		}
		return []*kvpb.ColumnOp{{Column: c.ID, Kind: kvpb.ColumnOp_SET, Value: v.b}}, nil
	case parser.AssignAdd:
		if v.null {
			return nil, nil
		}
		kind := map[cqltype.Kind]kvpb.ColumnOp_Kind{cqltype.List: kvpb.ColumnOp_LIST_APPEND, cqltype.Set: kvpb.ColumnOp_SET_ADD, cqltype.Map: kvpb.ColumnOp_MAP_PUT}[typ.Kind]
		return []*kvpb.ColumnOp{{Column: c.ID, Kind: kind, Value: v.b, Type: typeName}}, nil
	case parser.AssignPrepend:
		if typ.Kind != cqltype.List {
			return nil, Invalid("Invalid operation (%s) for non list column %s", assignText(a), c.Name)
		}
		if v.null {
			return nil, nil
		}
		return []*kvpb.ColumnOp{{Column: c.ID, Kind: kvpb.ColumnOp_LIST_PREPEND, Value: v.b, Type: typeName}}, nil
	case parser.AssignSub:
		if v.null {
			return nil, nil
		}
		kind := map[cqltype.Kind]kvpb.ColumnOp_Kind{cqltype.List: kvpb.ColumnOp_LIST_REMOVE, cqltype.Set: kvpb.ColumnOp_SET_REMOVE, cqltype.Map: kvpb.ColumnOp_MAP_REMOVE}[typ.Kind]
		return []*kvpb.ColumnOp{{Column: c.ID, Kind: kind, Value: v.b, Type: typeName}}, nil
	}
	return nil, Invalid("unsupported assignment to %s", c.Name)
}

// assignText renders an assignment with its terms as markers, for errors.
func assignText(a *parser.Assignment) string {
	if a.Key != nil {
		return a.Column + "[?] = ?"
	}
	switch a.Op {
	case parser.AssignAdd:
		return a.Column + " = " + a.Column + " + ?"
	case parser.AssignSub:
		return a.Column + " = " + a.Column + " - ?"
	case parser.AssignPrepend:
		return a.Column + " = ? + " + a.Column
	}
	return a.Column + " = ?"
}

// isCollection reports whether t is a list, set or map, frozen or not.
func isCollection(t cqltype.Type) bool {
	return t.Kind == cqltype.List || t.Kind == cqltype.Set || t.Kind == cqltype.Map
}

func (e *Executor) analyzeDelete(t *schema.Table, s *parser.DeleteStmt, b *binder, mc modContext) (*modPlan, error) {
	ts, hasTS, err := e.timestamp(s.Using, t, b, mc)
	if err != nil {
		return nil, err
	}
	p := &modPlan{table: t, hasTimestamp: hasTS}
	if t.IsCounter() && hasTS && !s.IfExists && len(s.Conditions) == 0 {
		return nil, Invalid("Cannot provide custom timestamp for counter updates")
	}
	var rowOps, staticOps []*kvpb.ColumnOp
	for _, target := range s.Columns {
		c := t.Column(target.Column)
		if c == nil {
			return nil, Invalid("Undefined column name %s", target.Column)
		}
		if c.IsPrimaryKey() {
			return nil, Invalid("Invalid identifier %s for deletion (should not be a PRIMARY KEY part)", c.Name)
		}
		var op *kvpb.ColumnOp
		switch {
		case target.Key != nil && c.Type.Kind == cqltype.Map && c.Type.IsMultiCell():
			k, err := b.term(target.Key, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "key(" + c.Name + ")", Type: c.Type.Elems[0]})
			if err != nil {
				return nil, err
			}
			if !b.prepare && (k.null || k.unset) {
				return nil, Invalid("Invalid null map key for column %s", c.Name)
			}
			op = &kvpb.ColumnOp{Column: c.ID, Kind: kvpb.ColumnOp_MAP_REMOVE, Value: cqltype.EncodeCollection([][]byte{k.b}), Type: c.Type.String()}
		case target.Key != nil && c.Type.Kind == cqltype.List && c.Type.IsMultiCell():
			k, err := b.term(target.Key, ColumnSpec{Keyspace: t.Keyspace, Table: t.Name, Name: "idx(" + c.Name + ")", Type: cqltype.Scalar(cqltype.Int)})
			if err != nil {
				return nil, err
			}
			var idx int32
			if !b.prepare {
				if k.null || k.unset || len(k.b) != 4 {
					return nil, Invalid("Invalid null value for list index")
				}
				idx = int32Of(k.b)
			}
			op = &kvpb.ColumnOp{Column: c.ID, Kind: kvpb.ColumnOp_LIST_DELETE_INDEX, Index: idx, Type: c.Type.String()}
		case target.Key != nil:
			return nil, Invalid("Invalid operation (%s[?]) for non collection column %s", c.Name, c.Name)
		case target.Field != "":
			return nil, Invalid("Invalid field selection: %s is not a user type", c.Name)
		default:
			op = &kvpb.ColumnOp{Column: c.ID, Kind: kvpb.ColumnOp_DELETE}
		}
		if c.Kind == schema.Static {
			staticOps = append(staticOps, op)
		} else {
			rowOps = append(rowOps, op)
		}
	}
	keys, cp, _, err := modificationKeys(t, s.Where, b, "DELETE")
	if err != nil {
		return nil, err
	}
	if len(s.Columns) > 0 && len(rowOps) > 0 && !cp.fullKey && len(t.ClusteringColumns()) > 0 {
		return nil, Invalid("Range deletions are not supported for specific columns")
	}
	if err := e.conditions(p, t, s.IfExists, s.Conditions, b, keys, cp, hasTS); err != nil {
		return nil, err
	}
	if p.cond != nil && !cp.fullKey && len(t.ClusteringColumns()) > 0 && (len(rowOps) > 0 || len(s.Columns) == 0) &&
		!staticConditionsOnly(t, s, cp) {
		return nil, Invalid("DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF conditions")
	}
	if b.prepare {
		return p, nil
	}
	for _, k := range keys {
		if len(s.Columns) > 0 {
			if len(staticOps) > 0 {
				p.mutations = append(p.mutations, &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: k.token, Pk: k.key, Timestamp: ts, Ops: staticOps})
			}
			if len(rowOps) > 0 {
				for _, ck := range cp.prefixes {
					p.mutations = append(p.mutations, &kvpb.Mutation{Kind: kvpb.Mutation_UPSERT, Token: k.token, Pk: k.key, Ck: ck, Timestamp: ts, Ops: rowOps})
				}
			}
			continue
		}
		switch {
		case len(t.ClusteringColumns()) == 0 || cp.fullKey:
			ck := cp.prefixes
			if len(t.ClusteringColumns()) == 0 {
				ck = [][]byte{nil}
			}
			for _, c := range ck {
				p.mutations = append(p.mutations, &kvpb.Mutation{Kind: kvpb.Mutation_DELETE_ROW, Token: k.token, Pk: k.key, Ck: c, Timestamp: ts})
			}
		case cp.eqCols == 0 && cp.start == nil && cp.end == nil:
			p.mutations = append(p.mutations, &kvpb.Mutation{Kind: kvpb.Mutation_DELETE_PARTITION, Token: k.token, Pk: k.key, Timestamp: ts})
		default:
			for _, sl := range cp.slices() {
				p.mutations = append(p.mutations, &kvpb.Mutation{Kind: kvpb.Mutation_DELETE_RANGE, Token: k.token, Pk: k.key, Timestamp: ts,
					RangeStart: sl.GetStart(), RangeEnd: sl.GetEnd()})
			}
		}
	}
	return p, nil
}

// staticConditionsOnly reports a DELETE of a whole partition (no columns,
// no clustering restriction) whose conditions are all on static columns:
// Cassandra accepts it without the full primary key, since the conditions
// read only the partition's static row.
func staticConditionsOnly(t *schema.Table, s *parser.DeleteStmt, cp *clusteringPlan) bool {
	if len(s.Columns) > 0 || s.IfExists || len(s.Conditions) == 0 || cp.eqCols > 0 || cp.start != nil || cp.end != nil {
		return false
	}
	for _, c := range s.Conditions {
		col := t.Column(c.Column)
		if col == nil || col.Kind != schema.Static {
			return false
		}
	}
	return true
}

// applyPlans sends the mutations of one or more statements (a batch), one
// atomic write per physical partition, and builds the result. Conditional
// plans must all address one partition.
func (e *Executor) applyPlans(ctx context.Context, plans []*modPlan, req Request, batch bool) (*Result, error) {
	var conds []*kvpb.Condition
	var condPlan *modPlan
	for _, p := range plans {
		if p.cond != nil {
			conds = append(conds, p.cond)
			condPlan = p
		}
	}
	if err := writeConsistency(req, len(conds) > 0); err != nil {
		return nil, err
	}
	if len(conds) > 0 {
		return e.applyConditional(ctx, plans, conds, condPlan, req, batch)
	}
	// Group mutations by table and physical partition, keeping order.
	type group struct {
		table uint64
		part  uint64
		req   *kvpb.WriteRequest
		t     *schema.Table
	}
	var groups []*group
	idx := map[[2]uint64]*group{}
	now := e.cfg.Now().UnixMicro()
	st := e.cfg.Meta.State()
	for _, p := range plans {
		rg := st.Ring(p.table.ID)
		for _, m := range p.mutations {
			d := rg.Lookup(m.GetToken())
			if d == nil {
				return nil, ServerError("table %s has no partition for token %d", p.table.QualifiedName(), m.GetToken())
			}
			k := [2]uint64{p.table.ID, d.GetId()}
			g := idx[k]
			if g == nil {
				g = &group{table: p.table.ID, part: d.GetId(), t: p.table, req: &kvpb.WriteRequest{
					NowMicros: now, GcGraceSeconds: int64(p.table.Options.GCGraceSeconds),
					MaxLogicalPartitionBytes: e.cfg.LogicalPartitionMaxBytes}}
				idx[k] = g
				groups = append(groups, g)
			}
			g.req.Mutations = append(g.req.Mutations, m)
		}
	}
	// Sizes are checked before anything is sent, so that a refused
	// statement or batch has no effect on any partition.
	for _, g := range groups {
		if err := e.checkMutationSize(g.req); err != nil {
			return nil, err
		}
	}
	var charge float64
	for _, g := range groups {
		// Route by token so a split between planning and sending is
		// retried against the new ring.
		target := router.Target{Table: g.table, Token: g.req.Mutations[0].GetToken()}
		resp, err := e.cfg.Router.Write(ctx, target, g.req)
		if err != nil {
			return nil, e.writeError(err, g.t, g.req, req.Consistency, batch)
		}
		charge += resp.GetRequestUnits()
	}
	return &Result{Kind: ResultVoid, Charge: charge}, nil
}

// writeError maps a write failure, naming the logical partition when its
// size limit was hit.
func (e *Executor) writeError(err error, t *schema.Table, req *kvpb.WriteRequest, cl uint16, batch bool) error {
	if code := partitionErrorCode(err); code == kvpb.Error_PARTITION_TOO_LARGE {
		return Invalid("Write to logical partition %s of table %s refused: %s", e.describeKey(t, err, req), t.QualifiedName(), strings.TrimPrefix(err.Error(), "PARTITION_TOO_LARGE: "))
	}
	ce := kvError(err, cl, true)
	if x, ok := ce.(*Error); ok && batch && x.Code == CodeWriteTimeout {
		x.WriteType = "BATCH"
	}
	return ce
}
