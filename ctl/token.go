package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// tokenCommand computes where a partition key lives.
func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "show the token of a partition key and the physical partition that owns it",
		UsageText: "cosmosctl token --table KEYSPACE.TABLE --key VALUE [--key VALUE ...]\n\n" +
			"Give one --key per partition-key column, in the table's order. Text values are taken\n" +
			"as they are; other types as the CQL literal they spell (42, true, 3.5, a UUID, 0xcafe).",
		Flags: leafFlags(
			&cli.StringFlag{Name: "table", Usage: "keyspace.table"},
			// KeepSpace and the app's DisableSliceFlagSeparator: a key is
			// exactly the argument, commas and spaces included.
			&cli.StringSliceFlag{Name: "key", KeepSpace: true, Usage: "value of a partition-key column; repeat for composite keys"},
		),
		Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
			table, keys := c.String("table"), c.StringSlice("key")
			var errs []error
			if table == "" {
				errs = append(errs, errors.New("--table is required"))
			}
			if len(keys) == 0 {
				errs = append(errs, errors.New("--key is required (one per partition-key column)"))
			}
			if len(errs) > 0 {
				return errors.Join(errs...)
			}
			var resp *adminpb.TokenResponse
			err := e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
				resp, err = admin.Token(ctx, &adminpb.TokenRequest{Table: table, Key: keys})
				return err
			})
			if err != nil {
				return err
			}
			return e.print(resp, func(w io.Writer) error { return renderToken(w, table, keys, resp) })
		}),
	}
}

// renderToken prints the answer as a short record.
func renderToken(w io.Writer, table string, keys []string, resp *adminpb.TokenResponse) error {
	pairs := [][2]string{
		{"table", table},
		{"key", strings.Join(keys, ", ")},
		{"token", strconv.FormatInt(resp.GetToken(), 10)},
	}
	if p := resp.GetPartition(); p != nil {
		pairs = append(pairs,
			[2]string{"partition", partitionName(p.GetId())},
			[2]string{"range", fmt.Sprintf("[%d, %d]", p.GetStart(), p.GetEnd())},
			[2]string{"generation", strconv.FormatUint(p.GetGeneration(), 10)},
			[2]string{"replicas", replicaList(p)},
			[2]string{"leader", leaderName(p)},
		)
	} else {
		pairs = append(pairs, [2]string{"partition", "- (no partition owns this token)"})
	}
	return keyValues(w, pairs)
}
