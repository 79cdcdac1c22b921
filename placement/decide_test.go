package placement

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/cosmosd/cosmosd/cluster"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
)

// TestDecisions runs the scripts of testdata/: a cluster state in, the
// controller's decisions out. Each file starts from an empty cluster with
// the default configuration. Directives:
//
//	config dead-after=5m max-moves=2 max-bytes=50G max-ru=10000 max-partitions=1024 tolerance=1 no-rebalance max-transfers=2
//	nodes                   one line per node: n1 [zone=a] [rack=r1] [down=10m|gone|decommissioned] [draining|node-draining]
//	table id=1 name=ks.t [throughput=25000]    (drop-table id=1 removes it, leaving its ring)
//	partitions table=1 [even=N replicas=(n1,n2)]  (the whole ring) or lines: p10 range=(0,99) [gen=3] replicas=(n1,n2) [learners=(n5)]
//	report                  one line per partition the nodes report: p10 [leader=n1] [commit=10] [bytes=60G]
//	                        [gen=4] [replicas=(..)] [learners=(..)] [range=(a,b)] [table=1] [failed=(n3)] [stale=(n2)] [bytes-of=(n2:1G)]
//	ops                     stored operations, newest last: op5 repair p10 [from=n4 to=n5] running|pending|done|failed
//	plan [size-check]       PlanRound, the ring syncs and the members marked down
//	schedule [running=(op5)] which stored operations start now
//	gc keep=N               which finished operations are deleted
//	drain node=n1 | decommission node=n1 | rebalance    the next step of such an operation
//	check-drain node=n1     whether a drain can complete
//	place n=2 rf=3          replica sets for new partitions
//	view                    the members' states and the placement candidates
func TestDecisions(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasSuffix(path, ".txt") {
			return
		}
		h := newHarness()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			h.t = t
			out, err := h.run(d)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			return out
		})
	})
}

// harnessNow is the scripts' "now": down=10m is ten minutes before it.
var harnessNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness is the state a script builds.
type harness struct {
	t       testing.TB // of the directive running
	cfg     ControllerConfig
	nodes   map[uint64]*cluster.NodeInfo
	members map[uint64]*cluster.Member
	tables  map[uint64]*schema.Table
	parts   map[uint64]map[uint64]*kvpb.Descriptor // table -> id -> routing copy
	reports map[uint64]*Report
	ops     []*Operation // newest first
}

func newHarness() *harness {
	h := &harness{nodes: map[uint64]*cluster.NodeInfo{}, members: map[uint64]*cluster.Member{},
		tables: map[uint64]*schema.Table{}, parts: map[uint64]map[uint64]*kvpb.Descriptor{}}
	h.cfg.setDefaults()
	return h
}

// state builds the cluster.State the script describes.
func (h *harness) state() *cluster.State {
	sc := schema.Empty()
	for id, t := range h.tables {
		sc.ByID[id] = t
	}
	rings := map[uint64]*ring.Ring{}
	for table, ps := range h.parts {
		var descs []*kvpb.Descriptor
		for _, id := range sortedKeys(ps) {
			descs = append(descs, ps[id])
		}
		rings[table] = ring.New(table, descs)
	}
	return &cluster.State{Schema: sc, Rings: rings, Nodes: h.nodes, Members: h.members}
}

func (h *harness) run(d *datadriven.TestData) (string, error) {
	// The directives that build the state print nothing.
	build := map[string]func(*datadriven.TestData) error{
		"config": h.config, "nodes": h.setNodes, "table": h.table, "drop-table": h.dropTable,
		"partitions": h.partitions, "report": h.report, "ops": h.setOps,
	}
	if f, ok := build[d.Cmd]; ok {
		return "", f(d)
	}
	switch d.Cmd {
	case "plan":
		return h.plan(d), nil
	case "schedule":
		return h.schedule(d)
	case "gc":
		var keep int
		d.ScanArgs(h.t, "keep", &keep)
		_, drop := garbage(h.ops, keep)
		var b strings.Builder
		for _, op := range drop {
			fmt.Fprintf(&b, "delete op%d\n", op.ID)
		}
		return orNothing(b.String()), nil
	case "drain", "decommission", "rebalance":
		return h.parent(d)
	case "check-drain":
		node, err := h.nodeArg(d, "node")
		if err != nil {
			return "", err
		}
		if err := CheckDrain(ViewOf(h.state(), harnessNow, h.cfg.DeadAfter, h.busy()), node); err != nil {
			return "error: " + err.Error() + "\n", nil
		}
		return "drainable\n", nil
	case "place":
		return h.place(d)
	case "view":
		return h.view(), nil
	}
	return "", fmt.Errorf("unknown directive %q", d.Cmd)
}

func orNothing(s string) string {
	if s == "" {
		return "nothing\n"
	}
	return s
}

func (h *harness) config(d *datadriven.TestData) error {
	for _, a := range d.CmdArgs {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		var err error
		switch a.Key {
		case "dead-after":
			h.cfg.DeadAfter, err = time.ParseDuration(v)
		case "max-moves":
			h.cfg.MaxConcurrentMoves, err = strconv.Atoi(v)
		case "max-bytes":
			h.cfg.PhysicalPartitionMaxBytes, err = parseBytes(v)
		case "max-ru":
			h.cfg.PhysicalPartitionMaxRU, err = strconv.ParseInt(v, 10, 64)
		case "max-partitions":
			h.cfg.MaxPartitionsPerTable, err = strconv.Atoi(v)
		case "tolerance":
			h.cfg.RebalanceTolerance, err = strconv.Atoi(v)
		case "no-rebalance":
			h.cfg.DisableAutoRebalance = true
		case "max-transfers":
			h.cfg.MaxLeaderTransfers, err = strconv.Atoi(v)
		default:
			return fmt.Errorf("unknown config %q", a.Key)
		}
		if err != nil {
			return fmt.Errorf("config %s: %w", a.Key, err)
		}
	}
	return nil
}

// lines parses the input, one directive-like line each: a name and
// arguments.
func lines(d *datadriven.TestData) ([]parsedLine, error) {
	var out []parsedLine
	for _, l := range strings.Split(d.Input, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, args, err := datadriven.ParseLine(l)
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", l, err)
		}
		pl := parsedLine{name: name, args: map[string][]string{}}
		for _, a := range args {
			pl.args[a.Key] = a.Vals
		}
		out = append(out, pl)
	}
	return out, nil
}

type parsedLine struct {
	name string
	args map[string][]string
}

// eachLine calls f with each line of the input and the id its name
// refers to (see ref: a name n3 with prefix n is node 3), stopping at the
// first error.
func eachLine(d *datadriven.TestData, prefix string, f func(id uint64, l parsedLine) error) error {
	ls, err := lines(d)
	if err != nil {
		return err
	}
	for _, l := range ls {
		id, err := ref(prefix, l.name)
		if err != nil {
			return err
		}
		if err := f(id, l); err != nil {
			return err
		}
	}
	return nil
}

// maybeArg parses argument k of l with parse into *dst when l has it,
// and leaves *dst as it was otherwise.
func maybeArg[T any](l parsedLine, k string, parse func(string) (T, error), dst *T) error {
	if !l.has(k) {
		return nil
	}
	v, err := parse(l.val(k))
	if err != nil {
		return fmt.Errorf("%s %s: %w", l.name, k, err)
	}
	*dst = v
	return nil
}

func parseUint(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }

func nodeRef(s string) (uint64, error) { return ref("n", s) }

func (l parsedLine) has(k string) bool { _, ok := l.args[k]; return ok }

func (l parsedLine) val(k string) string {
	if v := l.args[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// ref parses a reference like n3, p10 or op5.
func ref(prefix, s string) (uint64, error) {
	if !strings.HasPrefix(s, prefix) {
		return 0, fmt.Errorf("%q does not start with %q", s, prefix)
	}
	return strconv.ParseUint(s[len(prefix):], 10, 64)
}

func refs(prefix string, ss []string) ([]uint64, error) {
	var out []uint64
	for _, s := range ss {
		id, err := ref(prefix, s)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

func (h *harness) nodeArg(d *datadriven.TestData, key string) (uint64, error) {
	var s string
	d.ScanArgs(h.t, key, &s)
	return ref("n", s)
}

// parseBytes parses 60G, 512M, 1000 (decimal units).
func parseBytes(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSuffix(s, suffix), m
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

func (h *harness) setNodes(d *datadriven.TestData) error {
	return eachLine(d, "n", func(id uint64, l parsedLine) error {
		info := &cluster.NodeInfo{ID: id, Name: l.name, Labels: map[string]string{}}
		for _, k := range []string{"zone", "rack"} {
			if l.has(k) {
				info.Labels[k] = l.val(k)
			}
		}
		m := &cluster.Member{Info: *info, FirstSeen: harnessNow.Add(-time.Hour), Draining: l.has("draining")}
		info.Draining = l.has("node-draining")
		h.members[id] = m
		h.nodes[id] = info
		switch {
		case l.has("down"):
			ago, err := time.ParseDuration(l.val("down"))
			if err != nil {
				return err
			}
			m.DownSince = harnessNow.Add(-ago)
			delete(h.nodes, id)
		case l.has("gone"):
			delete(h.nodes, id)
		case l.has("decommissioned"):
			m.Decommissioned = true
			delete(h.nodes, id)
		}
		return nil
	})
}

func (h *harness) table(d *datadriven.TestData) error {
	var id uint64
	var name string
	var tp int64
	d.ScanArgs(h.t, "id", &id)
	d.ScanArgs(h.t, "name", &name)
	d.MaybeScanArgs(h.t, "throughput", &tp)
	ks, n, ok := strings.Cut(name, ".")
	if !ok {
		return fmt.Errorf("table name %q is not keyspace.table", name)
	}
	h.tables[id] = &schema.Table{ID: id, Keyspace: ks, Name: n, Options: schema.Options{Throughput: tp}}
	return nil
}

func (h *harness) dropTable(d *datadriven.TestData) error {
	var id uint64
	d.ScanArgs(h.t, "id", &id)
	delete(h.tables, id)
	return nil
}

// replicasOf builds the replicas of a line: voters then learners, replica
// ids in that order.
func replicasOf(l parsedLine) ([]*kvpb.ReplicaDescriptor, error) {
	voters, err := refs("n", l.args["replicas"])
	if err != nil {
		return nil, err
	}
	learners, err := refs("n", l.args["learners"])
	if err != nil {
		return nil, err
	}
	var out []*kvpb.ReplicaDescriptor
	for _, n := range voters {
		out = append(out, &kvpb.ReplicaDescriptor{NodeId: n, ReplicaId: uint64(len(out) + 1)})
	}
	for _, n := range learners {
		out = append(out, &kvpb.ReplicaDescriptor{NodeId: n, ReplicaId: uint64(len(out) + 1), Learner: true})
	}
	return out, nil
}

// rangeArg parses range=(a,b); min and max stand for the ring's ends.
func rangeArg(l parsedLine) (start, end int64, err error) {
	v := l.args["range"]
	if len(v) != 2 {
		return 0, 0, fmt.Errorf("%s: range wants two values, got %v", l.name, v)
	}
	parse := func(s string) (int64, error) {
		switch s {
		case "min":
			return math.MinInt64, nil
		case "max":
			return math.MaxInt64, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	if start, err = parse(v[0]); err == nil {
		end, err = parse(v[1])
	}
	return start, end, err
}

func (h *harness) partitions(d *datadriven.TestData) error {
	var table uint64
	d.ScanArgs(h.t, "table", &table)
	// The table's ring is replaced whole.
	h.parts[table] = map[uint64]*kvpb.Descriptor{}
	if d.HasArg("even") {
		var n int
		var first uint64 = table * 100
		d.ScanArgs(h.t, "even", &n)
		d.MaybeScanArgs(h.t, "first", &first)
		arg, _ := d.Arg("replicas")
		reps, err := replicasOf(parsedLine{args: map[string][]string{"replicas": arg.Vals}})
		if err != nil {
			return err
		}
		for i, r := range ring.Even(n) {
			id := first + uint64(i)
			h.parts[table][id] = &kvpb.Descriptor{Id: id, TableId: table, Start: r[0], End: r[1], Generation: 1,
				Replicas: reps, NextReplicaId: uint64(len(reps) + 1)}
		}
	}
	return eachLine(d, "p", func(id uint64, l parsedLine) error {
		start, end, err := rangeArg(l)
		if err != nil {
			return err
		}
		reps, err := replicasOf(l)
		if err != nil {
			return err
		}
		gen := uint64(1)
		if err := maybeArg(l, "gen", parseUint, &gen); err != nil {
			return err
		}
		h.parts[table][id] = &kvpb.Descriptor{Id: id, TableId: table, Start: start, End: end, Generation: gen,
			Replicas: reps, NextReplicaId: uint64(len(reps) + 1)}
		return nil
	})
}

// copyOf finds a routing copy by partition id.
func (h *harness) copyOf(id uint64) *kvpb.Descriptor {
	for _, ps := range h.parts {
		if p := ps[id]; p != nil {
			return p
		}
	}
	return nil
}

// report builds what the nodes answer: each replica of a partition's
// reported descriptor answers from its node (a registered one), with that
// descriptor (the routing copy for the stale ones), and the answers go
// through MergeStatus as the controller's collect does.
func (h *harness) report(d *datadriven.TestData) error {
	resps := map[uint64]*kvpb.ReplicaStatusResponse{}
	err := eachLine(d, "p", func(id uint64, l parsedLine) error {
		desc := &kvpb.Descriptor{Id: id}
		old := h.copyOf(id)
		if old != nil {
			desc = &kvpb.Descriptor{Id: id, TableId: old.GetTableId(), Start: old.GetStart(), End: old.GetEnd(),
				Generation: old.GetGeneration(), Replicas: old.GetReplicas(), NextReplicaId: old.GetNextReplicaId()}
		}
		var err error
		if l.has("range") {
			if desc.Start, desc.End, err = rangeArg(l); err != nil {
				return err
			}
		}
		if l.has("replicas") || l.has("learners") {
			if desc.Replicas, err = replicasOf(l); err != nil {
				return err
			}
		}
		leader, commit := uint64(0), uint64(10)
		var bytes int64
		if err := errors.Join(
			maybeArg(l, "table", parseUint, &desc.TableId),
			maybeArg(l, "gen", parseUint, &desc.Generation),
			maybeArg(l, "leader", nodeRef, &leader),
			maybeArg(l, "commit", parseUint, &commit),
			maybeArg(l, "bytes", parseBytes, &bytes),
		); err != nil {
			return err
		}
		failed, err := refs("n", l.args["failed"])
		if err != nil {
			return err
		}
		stale, err := refs("n", l.args["stale"])
		if err != nil {
			return err
		}
		// bytes-of=(n2:10G) is what one replica reports instead.
		bytesOf := map[uint64]int64{}
		for _, v := range l.args["bytes-of"] {
			n, b, _ := strings.Cut(v, ":")
			node, err := ref("n", n)
			if err != nil {
				return err
			}
			if bytesOf[node], err = parseBytes(b); err != nil {
				return err
			}
		}
		for _, r := range desc.GetReplicas() {
			node := r.GetNodeId()
			if h.nodes[node] == nil {
				continue // a node that is not registered does not answer
			}
			rs := &kvpb.ReplicaStatus{Desc: desc, ReplicaId: r.GetReplicaId(), Leader: node == leader, Applied: commit, Commit: commit, Bytes: bytes}
			if b, ok := bytesOf[node]; ok {
				rs.Bytes = b
			}
			if contains64(stale, node) && old != nil {
				rs.Desc = old
			}
			if contains64(failed, node) {
				rs.Failed = "disk I/O error"
			}
			if resps[node] == nil {
				resps[node] = &kvpb.ReplicaStatusResponse{NodeId: node}
			}
			resps[node].Replicas = append(resps[node].Replicas, rs)
		}
		return nil
	})
	if err != nil {
		return err
	}
	h.reports = map[uint64]*Report{}
	for _, node := range sortedKeys(resps) {
		MergeStatus(h.reports, node, resps[node])
	}
	return nil
}

func contains64(s []uint64, v uint64) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (h *harness) setOps(d *datadriven.TestData) error {
	h.ops = nil
	return eachLine(d, "op", func(id uint64, l parsedLine) error {
		op := &Operation{ID: id, State: StatePending}
		for key, vals := range l.args {
			var err error
			switch key {
			case KindMove, KindRepair, KindSplit, KindRebalance, KindDrain, KindDecommission, KindMoveKey:
				op.Kind = key
				if len(vals) > 0 {
					op.Partition, err = ref("p", vals[0])
				}
			case StatePending, StateRunning, StateDone, StateFailed:
				op.State = key
			case "from":
				err = maybeArg(l, key, nodeRef, &op.From)
			case "to":
				err = maybeArg(l, key, nodeRef, &op.To)
			case "node":
				err = maybeArg(l, key, nodeRef, &op.Node)
			case "table":
				err = maybeArg(l, key, parseUint, &op.Table)
			default:
				err = fmt.Errorf("%s: unknown argument %q", l.name, key)
			}
			if err != nil {
				return err
			}
		}
		if p := h.copyOf(op.Partition); p != nil && op.Table == 0 {
			op.Table = p.GetTableId()
		}
		h.ops = append([]*Operation{op}, h.ops...)
		return nil
	})
}

// busy is the partitions of the active operations.
func (h *harness) busy() map[uint64]bool {
	out := map[uint64]bool{}
	for _, op := range h.ops {
		if op.Active() && op.Partition != 0 {
			out[op.Partition] = true
		}
	}
	return out
}

func (h *harness) plan(d *datadriven.TestData) string {
	st := h.state()
	var b strings.Builder
	for _, id := range GoneMembers(st) {
		fmt.Fprintf(&b, "mark-down n%d\n", id)
	}
	updates, missing := PlanRingSyncs(st, h.reports, h.ops)
	for _, u := range updates {
		fmt.Fprintf(&b, "sync p%d gen %d -> %d: %s -> %s\n", u.New.GetId(), u.Old.GetGeneration(), u.New.GetGeneration(), descString(u.Old), descString(u.New))
		h.parts[u.New.GetTableId()][u.New.GetId()] = u.New
	}
	if len(missing) > 0 {
		// The controller adds missing partitions after its updates are
		// visible: plan on the state with them applied.
		after := h.state()
		for _, m := range AddableRanges(after, missing) {
			fmt.Fprintf(&b, "add p%d: %s\n", m.GetId(), descString(m))
		}
		for _, m := range missing {
			if len(AddableRanges(after, []*kvpb.Descriptor{m})) == 0 {
				fmt.Fprintf(&b, "hold p%d: %s overlaps the ring\n", m.GetId(), descString(m))
			}
		}
	}
	// Updates were applied to the script's state above; put it back, so
	// that planning sees the rings as the controller's round does.
	for _, u := range updates {
		h.parts[u.Old.GetTableId()][u.Old.GetId()] = u.Old
	}
	plan := PlanRound(h.cfg.policy(), Snapshot{State: st, Now: harnessNow, Reports: h.reports, Ops: h.ops, SizeCheck: d.HasArg("size-check")})
	for _, op := range plan.Submit {
		fmt.Fprintf(&b, "%s\n", opString(op))
	}
	for _, c := range plan.Capped {
		fmt.Fprintf(&b, "capped %s at %d partitions: %s\n", c.Name, c.Partitions, c.Reason)
	}
	for _, l := range plan.RemoveLearners {
		fmt.Fprintf(&b, "remove-learner p%d n%d\n", l.Partition, l.Replica.GetNodeId())
	}
	for _, t := range plan.Transfers {
		fmt.Fprintf(&b, "transfer p%d n%d -> n%d\n", t.Partition, t.From, t.To)
	}
	return orNothing(b.String())
}

func descString(d *kvpb.Descriptor) string {
	var reps []string
	for _, r := range d.GetReplicas() {
		s := fmt.Sprintf("n%d", r.GetNodeId())
		if r.GetLearner() {
			s += "(l)"
		}
		reps = append(reps, s)
	}
	return fmt.Sprintf("[%s, %s] %s", tokenString(d.GetStart()), tokenString(d.GetEnd()), strings.Join(reps, ","))
}

func tokenString(t int64) string {
	switch t {
	case math.MinInt64:
		return "min"
	case math.MaxInt64:
		return "max"
	}
	return strconv.FormatInt(t, 10)
}

func opString(op *Operation) string {
	switch op.Kind {
	case KindMove, KindRepair:
		return fmt.Sprintf("%s p%d n%d -> n%d: %s", op.Kind, op.Partition, op.From, op.To, op.Reason)
	case KindSplit:
		by := op.SplitBy
		if by == "" {
			by = "bytes"
		}
		return fmt.Sprintf("split p%d by %s: %s", op.Partition, by, op.Reason)
	}
	return fmt.Sprintf("%s %s", op.Kind, op.Reason)
}

func (h *harness) schedule(d *datadriven.TestData) (string, error) {
	running := map[uint64]*Operation{}
	busy := map[uint64]uint64{}
	if arg, ok := d.Arg("running"); ok {
		ids, err := refs("op", arg.Vals)
		if err != nil {
			return "", err
		}
		for _, id := range ids {
			for _, op := range h.ops {
				if op.ID == id {
					running[id] = op
					if op.Partition != 0 {
						busy[op.Partition] = id
					}
				}
			}
		}
	}
	var b strings.Builder
	for _, op := range runnable(h.ops, running, busy, h.cfg.MaxConcurrentMoves) {
		fmt.Fprintf(&b, "start op%d %s\n", op.ID, op.Kind)
	}
	return orNothing(b.String()), nil
}

func (h *harness) parent(d *datadriven.TestData) (string, error) {
	var node uint64
	if d.Cmd != "rebalance" {
		var err error
		if node, err = h.nodeArg(d, "node"); err != nil {
			return "", err
		}
	}
	kind := map[string]string{"drain": KindDrain, "decommission": KindDecommission, "rebalance": KindRebalance}[d.Cmd]
	moves, next, err := planParent(h.cfg.policy(), kind, node, h.state(), harnessNow, h.busy())
	if err != nil {
		return "error: " + err.Error() + "\n", nil
	}
	var b strings.Builder
	for _, m := range moves {
		fmt.Fprintf(&b, "move p%d n%d -> n%d: %s\n", m.Partition, m.From, m.To, m.Reason)
	}
	switch next {
	case parentWait:
		b.WriteString("wait: moves of other operations are in flight\n")
	case parentFinished:
		b.WriteString("finished\n")
	}
	return b.String(), nil
}

func (h *harness) place(d *datadriven.TestData) (string, error) {
	var n, rf int
	d.ScanArgs(h.t, "n", &n)
	d.ScanArgs(h.t, "rf", &rf)
	st := h.state()
	load := map[uint64]int{}
	for _, r := range st.Rings {
		for _, p := range r.Partitions() {
			for _, rd := range p.GetReplicas() {
				load[rd.GetNodeId()]++
			}
		}
	}
	nodes := liveNodes(st)
	for i := range nodes {
		nodes[i].Load = load[nodes[i].ID]
	}
	sets, err := Place(nodes, n, rf)
	if err != nil {
		return "error: " + err.Error() + "\n", nil
	}
	zone := map[uint64]string{}
	for _, nd := range nodes {
		zone[nd.ID] = nd.Zone + "/" + nd.Rack
	}
	var b strings.Builder
	for i, s := range sets {
		var parts []string
		for _, id := range s {
			parts = append(parts, fmt.Sprintf("n%d(%s)", id, zone[id]))
		}
		fmt.Fprintf(&b, "partition %d: %s\n", i+1, strings.Join(parts, " "))
	}
	return b.String(), nil
}

func (h *harness) view() string {
	st := h.state()
	var b strings.Builder
	ids := sortedKeys(st.Members)
	for _, id := range ids {
		fmt.Fprintf(&b, "n%d %s\n", id, st.MemberState(id, harnessNow, h.cfg.DeadAfter))
	}
	v := ViewOf(st, harnessNow, h.cfg.DeadAfter, nil)
	var live, dead []string
	for _, n := range v.Live {
		live = append(live, fmt.Sprintf("n%d", n.ID))
	}
	for _, id := range sortedKeys(v.Dead) {
		dead = append(dead, fmt.Sprintf("n%d", id))
	}
	if len(dead) == 0 {
		dead = []string{"none"}
	}
	fmt.Fprintf(&b, "candidates: %s\ndead: %s\nstable: %t\n", strings.Join(live, " "), strings.Join(dead, " "), stable(st, harnessNow, h.cfg.DeadAfter))
	return b.String()
}
