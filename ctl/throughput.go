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

// throughputCommand is the "throughput" group: provisioned request units.
func throughputCommand() *cli.Command {
	return &cli.Command{
		Name:   "throughput",
		Usage:  "provisioned throughput (request units per second)",
		Action: groupAction,
		Subcommands: []*cli.Command{
			{
				Name:  "set",
				Usage: "set the provisioned RU/s of a table or (shared) of a keyspace; 0 means unlimited",
				UsageText: "cosmosctl throughput set --table KEYSPACE.TABLE RU_PER_SEC\n" +
					"cosmosctl throughput set --keyspace KEYSPACE RU_PER_SEC\n\n" +
					"A table's RU/s are divided evenly across its physical partitions, each serving at most\n" +
					"physical_partition_max_ru (10000 by default): raising it past that times the partition count\n" +
					"makes the controller split partitions.",
				ArgsUsage: "RU_PER_SEC",
				Flags: leafFlags(
					&cli.StringFlag{Name: "table", Usage: "keyspace.table"},
					&cli.StringFlag{Name: "keyspace", Usage: "keyspace (throughput shared by its tables)"},
				),
				Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
					req := &adminpb.SetThroughputRequest{Table: c.String("table"), Keyspace: c.String("keyspace")}
					var errs []error
					switch {
					case req.Table != "" && req.Keyspace != "":
						errs = append(errs, errors.New("--table and --keyspace exclude each other"))
					case req.Table == "" && req.Keyspace == "":
						errs = append(errs, errors.New("give --table KEYSPACE.TABLE or --keyspace KEYSPACE"))
					}
					if arg, err := oneArg(c, e.args, "RU_PER_SEC"); err != nil {
						errs = append(errs, err)
					} else if n, err := strconv.ParseInt(arg, 10, 64); err != nil || n < 0 {
						errs = append(errs, fmt.Errorf("RU_PER_SEC %q: want a whole number, 0 or more (0: unlimited)", arg))
					} else {
						req.RuPerSec = n
					}
					if err := errors.Join(errs...); err != nil {
						return err
					}
					var resp *adminpb.SetThroughputResponse
					err := e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
						resp, err = admin.SetThroughput(ctx, req)
						return err
					})
					if err != nil {
						return err
					}
					return e.print(resp, func(w io.Writer) error { return renderThroughput(w, req, resp) })
				}),
			},
		},
	}
}

// renderThroughput prints the new setting and, for a table, how many
// physical partitions it has and needs.
func renderThroughput(w io.Writer, req *adminpb.SetThroughputRequest, resp *adminpb.SetThroughputResponse) error {
	value := "unlimited"
	if resp.GetRuPerSec() > 0 {
		value = strconv.FormatInt(resp.GetRuPerSec(), 10) + " RU/s"
	}
	if req.GetKeyspace() != "" {
		if resp.GetRuPerSec() > 0 {
			value += " (shared by its tables)"
		}
		return keyValues(w, [][2]string{{"keyspace", req.GetKeyspace()}, {"throughput", value}})
	}
	parts := fmt.Sprintf("%d (needs %d)", resp.GetPartitions(), resp.GetPartitionsNeeded())
	if resp.GetPartitionsNeeded() > resp.GetPartitions() {
		parts += "; the controller splits partitions until there are enough"
	}
	return keyValues(w, [][2]string{{"table", req.GetTable()}, {"throughput", value}, {"partitions", parts}})
}
