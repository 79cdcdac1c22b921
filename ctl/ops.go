package ctl

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// opsCommand is the "ops" group: the long operations the controller runs
// (splits, moves, rebalances, drains), with their steps and progress.
func opsCommand() *cli.Command {
	return &cli.Command{
		Name:   "ops",
		Usage:  "long operations (split, move, rebalance, drain) and their progress",
		Action: groupAction,
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list operations, newest first",
				Flags: leafFlags(
					&cli.BoolFlag{Name: "active", Usage: "only pending and running operations"},
					&cli.UintFlag{Name: "limit", Usage: "at most this many operations (0: all)"},
				),
				Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
					req := &adminpb.ListOperationsRequest{Active: c.Bool("active"), Limit: uint32(min(c.Uint("limit"), 1<<32-1))}
					var resp *adminpb.ListOperationsResponse
					err := e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
						resp, err = admin.ListOperations(ctx, req)
						return err
					})
					if err != nil {
						return err
					}
					ops := resp.GetOperations()
					return e.print(messageList(ops), func(w io.Writer) error {
						if len(ops) == 0 {
							msg := "no operations\n"
							if req.GetActive() {
								msg = "no active operations\n"
							}
							_, err := io.WriteString(w, msg)
							return err
						}
						return renderOps(w, ops, time.Now())
					})
				}),
			},
			{
				Name:      "show",
				Usage:     "show one operation: its fields, steps and child operations",
				ArgsUsage: "ID",
				Flags:     leafFlags(waitFlags()...),
				Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
					arg, err := oneArg(c, e.args, "operation ID")
					if err != nil {
						return err
					}
					id, err := parseOperationID(arg)
					if err != nil {
						return err
					}
					op, err := e.getOperation(ctx, id)
					if err != nil {
						return err
					}
					if c.Bool(flagWait) {
						return e.follow(ctx, op, c.Duration(flagWaitTimeout))
					}
					return e.showOperation(ctx, op)
				}),
			},
		},
	}
}

// showOperation prints one operation in full: under -o table with its
// children, which it looks up; under -o json as the message.
func (e *env) showOperation(ctx context.Context, op *adminpb.Operation) error {
	if e.opts.output == formatJSON {
		return writeJSON(e.out, op)
	}
	var children []*adminpb.Operation
	if len(op.GetChildren()) > 0 {
		var resp *adminpb.ListOperationsResponse
		err := e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
			resp, err = admin.ListOperations(ctx, &adminpb.ListOperationsRequest{})
			return err
		})
		// Without the list the children still show by ID.
		if err == nil {
			children = childrenOf(op, resp.GetOperations())
		}
	}
	return renderOperation(e.out, op, children, time.Now())
}

// childrenOf picks op's children out of ops, in op's order.
func childrenOf(op *adminpb.Operation, ops []*adminpb.Operation) []*adminpb.Operation {
	byID := make(map[uint64]*adminpb.Operation, len(ops))
	for _, o := range ops {
		byID[o.GetId()] = o
	}
	var out []*adminpb.Operation
	for _, id := range op.GetChildren() {
		if c, ok := byID[id]; ok {
			out = append(out, c)
		}
	}
	return out
}

// nodeRef names a node in operations, which carry node IDs only; the
// form is the one nodes list's ID column and the admin API accept.
func nodeRef(id uint64) string { return "n" + strconv.FormatUint(id, 10) }

func nodeRefs(ids []uint64) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = nodeRef(id)
	}
	return strings.Join(out, ",")
}

// opNodes is the node part of an operation in one cell: "n1→n5" for a
// move, "→n2,n3,n4,n5" for a logical-partition move, the node of a drain.
func opNodes(op *adminpb.Operation) string {
	switch {
	case op.GetFromNode() != 0 || op.GetToNode() != 0:
		from, to := "?", "?"
		if op.GetFromNode() != 0 {
			from = nodeRef(op.GetFromNode())
		}
		if op.GetToNode() != 0 {
			to = nodeRef(op.GetToNode())
		}
		return from + "→" + to
	case len(op.GetToNodes()) > 0:
		return "→" + nodeRefs(op.GetToNodes())
	case op.GetNode() != 0:
		return nodeRef(op.GetNode())
	}
	return "-"
}

func opPartition(op *adminpb.Operation) string {
	if op.GetPartition() == 0 {
		return "-"
	}
	return partitionName(op.GetPartition())
}

// opNote is the reason of an operation, or its error once it failed.
func opNote(op *adminpb.Operation) string {
	if op.GetState() == opFailed && op.GetError() != "" {
		return "error: " + op.GetError()
	}
	return orDash(op.GetReason())
}

// reasonWidth bounds the REASON column of ops list; ops show has it whole.
const reasonWidth = 60

// renderOps prints the operations table.
func renderOps(w io.Writer, ops []*adminpb.Operation, now time.Time) error {
	t := newTable([]string{"ID", "KIND", "STATE", "PROGRESS", "PARTITION", "NODES", "TABLE", "UPDATED", "REASON"}, "ID", "PROGRESS")
	for _, op := range ops {
		t.row(op.GetId(), op.GetKind(), op.GetState(), strconv.Itoa(percent(op))+"%", opPartition(op), opNodes(op),
			orDash(op.GetTable()), age(op.GetUpdated(), now), truncate(opNote(op), reasonWidth))
	}
	return t.render(w)
}

// age says how long ago an RFC 3339 time was: "4s ago", "3m12s ago",
// "2h5m ago", "3d4h ago".
func age(rfc3339 string, now time.Time) string {
	at, err := time.Parse(time.RFC3339Nano, rfc3339)
	if err != nil {
		return orDash(rfc3339)
	}
	d := now.Sub(at)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds ago", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm ago", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh ago", int(d.Hours())/24, int(d.Hours())%24)
}

// operationFields are an operation's fields as label/value pairs, leaving
// out those its kind does not use.
func operationFields(op *adminpb.Operation, now time.Time) [][2]string {
	pairs := [][2]string{
		{"id", strconv.FormatUint(op.GetId(), 10)},
		{"kind", op.GetKind()},
		{"state", op.GetState()},
		{"progress", strconv.Itoa(percent(op)) + "%"},
	}
	add := func(label, value string) { pairs = append(pairs, [2]string{label, value}) }
	if op.GetTable() != "" {
		add("table", op.GetTable())
	}
	if op.GetPartition() != 0 {
		add("partition", partitionName(op.GetPartition()))
	}
	if op.GetFromNode() != 0 {
		add("from", nodeRef(op.GetFromNode()))
	}
	if op.GetToNode() != 0 {
		add("to", nodeRef(op.GetToNode()))
	}
	if len(op.GetToNodes()) > 0 {
		add("to nodes", nodeRefs(op.GetToNodes()))
	}
	if op.GetNode() != 0 {
		add("node", nodeRef(op.GetNode()))
	}
	if op.GetHasSplitToken() {
		add("split at", "token "+strconv.FormatInt(op.GetSplitToken(), 10))
	}
	if op.GetParent() != 0 {
		add("parent", strconv.FormatUint(op.GetParent(), 10))
	}
	if op.GetReason() != "" {
		add("reason", op.GetReason())
	}
	if op.GetError() != "" {
		add("error", op.GetError())
	}
	add("created", timeWithAge(op.GetCreated(), now))
	add("updated", timeWithAge(op.GetUpdated(), now))
	return pairs
}

func timeWithAge(rfc3339 string, now time.Time) string {
	if rfc3339 == "" {
		return "-"
	}
	return rfc3339 + " (" + age(rfc3339, now) + ")"
}

// renderSubmitted prints an operation just started, and how to follow it.
func renderSubmitted(w io.Writer, op *adminpb.Operation, now time.Time) error {
	if err := keyValues(w, operationFields(op, now)); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nfollow it with: cosmosctl ops show %d --wait\n", op.GetId())
	return err
}

// renderOperation prints one operation: its fields, its steps and its
// children (those found in children; the others by ID).
func renderOperation(w io.Writer, op *adminpb.Operation, children []*adminpb.Operation, now time.Time) error {
	if err := keyValues(w, operationFields(op, now)); err != nil {
		return err
	}
	if len(op.GetSteps()) == 0 {
		if _, err := io.WriteString(w, "\nSteps: none yet\n"); err != nil {
			return err
		}
	} else {
		if _, err := io.WriteString(w, "\nSteps:\n"); err != nil {
			return err
		}
		t := newTable([]string{"STEP", "STATE", "AT", "DETAIL"})
		for _, s := range op.GetSteps() {
			t.row(s.GetName(), s.GetState(), orDash(s.GetAt()), orDash(s.GetDetail()))
		}
		if err := t.render(w); err != nil {
			return err
		}
	}
	if len(op.GetChildren()) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\nChildren (%d):\n", len(op.GetChildren())); err != nil {
		return err
	}
	found := map[uint64]bool{}
	for _, c := range children {
		found[c.GetId()] = true
	}
	var missing []string
	for _, id := range op.GetChildren() {
		if !found[id] {
			missing = append(missing, strconv.FormatUint(id, 10))
		}
	}
	if len(children) > 0 {
		if err := renderOps(w, children, now); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		if _, err := fmt.Fprintf(w, "not listed (cosmosctl ops show ID): %s\n", strings.Join(missing, ", ")); err != nil {
			return err
		}
	}
	return nil
}
