package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// This file holds the commands that change where data lives: split, move
// and rebalance. Each starts an operation through the admin API and prints
// it, or follows it with --wait (wait.go). Node-wide operations (drain,
// decommission) are in nodes.go.

// splitCommand splits a physical partition.
func splitCommand() *cli.Command {
	return &cli.Command{
		Name:  "split",
		Usage: "split a physical partition in two at a token boundary",
		UsageText: "cosmosctl split --partition ID [--at TOKEN | --key VALUE ...] [--wait]\n\n" +
			"By default the split point halves the partition's stored bytes. --at gives the first token of\n" +
			"the right half; --key splits at the token of a partition key (one --key per partition-key\n" +
			"column). A logical partition is never cut, so a partition holding a single one cannot be split.",
		Flags: leafFlags(append([]cli.Flag{
			&cli.StringFlag{Name: "partition", Usage: "the partition to split (P17 or 17)"},
			&cli.StringFlag{Name: "at", Usage: "first token of the right half"},
			&cli.StringSliceFlag{Name: "key", KeepSpace: true, Usage: "split at this partition key's token; repeat for composite keys"},
		}, waitFlags()...)...),
		Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
			req := &adminpb.SplitRequest{Key: c.StringSlice("key")}
			var errs []error
			if !c.IsSet("partition") {
				errs = append(errs, errors.New("--partition is required"))
			} else if id, err := parsePartitionID(c.String("partition")); err != nil {
				errs = append(errs, fmt.Errorf("--partition: %w", err))
			} else {
				req.Partition = id
			}
			if c.IsSet("at") {
				at, err := strconv.ParseInt(c.String("at"), 10, 64)
				if err != nil {
					errs = append(errs, fmt.Errorf("--at %q: want a token (a signed 64-bit integer)", c.String("at")))
				}
				req.HasAt, req.At = true, at
				if len(req.Key) > 0 {
					errs = append(errs, errors.New("--at and --key exclude each other: give a token or a key"))
				}
			}
			if err := errors.Join(errs...); err != nil {
				return err
			}
			return e.submitOperation(ctx, c, func(ctx context.Context, admin adminpb.AdminClient) (*adminpb.Operation, error) {
				return admin.Split(ctx, req)
			})
		}),
	}
}

// moveCommand moves a replica of a physical partition, or a logical
// partition onto chosen nodes.
func moveCommand() *cli.Command {
	return &cli.Command{
		Name:  "move",
		Usage: "move a replica of a physical partition, or a logical partition, to other nodes",
		UsageText: "cosmosctl move --partition ID --from NODE --to NODE [--wait]\n" +
			"cosmosctl move --table KEYSPACE.TABLE --key VALUE [--key VALUE ...] --to NODE [--to NODE ...] [--wait]\n\n" +
			"The first form moves one replica of a physical partition from one node to another. The second\n" +
			"moves one logical partition: it splits it off into a physical partition of its own, then moves\n" +
			"that partition's replicas onto the --to nodes. Nodes are given by name or ID.",
		Flags: leafFlags(append([]cli.Flag{
			&cli.StringFlag{Name: "partition", Usage: "the physical partition whose replica moves (P17 or 17)"},
			&cli.StringFlag{Name: "from", Usage: "with --partition: the node that gives up its replica"},
			&cli.StringSliceFlag{Name: "to", Usage: "the node that takes the replica; with --table, repeat for each node that should hold it"},
			&cli.StringFlag{Name: "table", Usage: "keyspace.table of the logical partition to move"},
			&cli.StringSliceFlag{Name: "key", KeepSpace: true, Usage: "with --table: value of a partition-key column; repeat for composite keys"},
		}, waitFlags()...)...),
		Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
			byPartition, byTable := c.IsSet("partition"), c.IsSet("table")
			to := c.StringSlice("to")
			var errs []error
			switch {
			case byPartition && byTable:
				return errors.New("--partition and --table exclude each other: move a physical partition's replica or a logical partition")
			case !byPartition && !byTable:
				return errors.New("give --partition ID --from NODE --to NODE (move a replica) or --table KEYSPACE.TABLE --key VALUE --to NODE... (move a logical partition)")
			case byPartition:
				id, err := parsePartitionID(c.String("partition"))
				if err != nil {
					errs = append(errs, fmt.Errorf("--partition: %w", err))
				}
				if c.String("from") == "" {
					errs = append(errs, errors.New("--from is required with --partition"))
				}
				if len(to) != 1 || to[0] == "" {
					errs = append(errs, errors.New("--partition takes exactly one --to node"))
				}
				if c.IsSet("key") {
					errs = append(errs, errors.New("--key goes with --table, not --partition"))
				}
				if err := errors.Join(errs...); err != nil {
					return err
				}
				req := &adminpb.MoveRequest{Partition: id, From: c.String("from"), To: to[0]}
				return e.submitOperation(ctx, c, func(ctx context.Context, admin adminpb.AdminClient) (*adminpb.Operation, error) {
					return admin.Move(ctx, req)
				})
			}
			if c.String("table") == "" {
				errs = append(errs, errors.New("--table: want keyspace.table"))
			}
			if len(c.StringSlice("key")) == 0 {
				errs = append(errs, errors.New("--key is required with --table (one per partition-key column)"))
			}
			if len(to) == 0 {
				errs = append(errs, errors.New("--to is required: the nodes that should hold the logical partition"))
			}
			if c.IsSet("from") {
				errs = append(errs, errors.New("--from goes with --partition; a logical partition moves onto the --to nodes"))
			}
			if err := errors.Join(errs...); err != nil {
				return err
			}
			req := &adminpb.MoveKeyRequest{Table: c.String("table"), Key: c.StringSlice("key"), To: to}
			return e.submitOperation(ctx, c, func(ctx context.Context, admin adminpb.AdminClient) (*adminpb.Operation, error) {
				return admin.MoveKey(ctx, req)
			})
		}),
	}
}

// rebalanceCommand evens out replicas across nodes.
func rebalanceCommand() *cli.Command {
	return &cli.Command{
		Name:  "rebalance",
		Usage: "even out replicas across the nodes",
		UsageText: "cosmosctl rebalance [--dry-run] [--wait]\n\n" +
			"--dry-run prints the moves a rebalance would make now, without making them.",
		Flags: leafFlags(append([]cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "print the planned moves and change nothing"},
		}, waitFlags()...)...),
		Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
			if !c.Bool("dry-run") {
				return e.submitOperation(ctx, c, func(ctx context.Context, admin adminpb.AdminClient) (*adminpb.Operation, error) {
					resp, err := admin.Rebalance(ctx, &adminpb.RebalanceRequest{})
					if err == nil && resp.GetOperation() == nil {
						err = errors.New("the server started no rebalance operation")
					}
					return resp.GetOperation(), err
				})
			}
			if c.Bool(flagWait) {
				return errors.New("--wait has nothing to follow with --dry-run")
			}
			var resp *adminpb.RebalanceResponse
			err := e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
				resp, err = admin.Rebalance(ctx, &adminpb.RebalanceRequest{DryRun: true})
				return err
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(w io.Writer) error { return renderPlan(w, resp.GetPlan()) })
		}),
	}
}

// renderPlan prints a rebalance plan.
func renderPlan(w io.Writer, plan []*adminpb.PlannedMove) error {
	if len(plan) == 0 {
		_, err := io.WriteString(w, "nothing to move: the cluster is balanced\n")
		return err
	}
	t := newTable([]string{"PARTITION", "TABLE", "FROM", "TO", "REASON"})
	for _, m := range plan {
		t.row(partitionName(m.GetPartition()), orDash(m.GetTable()), nodeName(m.GetFromName(), m.GetFromNode()),
			nodeName(m.GetToName(), m.GetToNode()), orDash(m.GetReason()))
	}
	return t.render(w)
}
