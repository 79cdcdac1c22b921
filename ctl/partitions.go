package ctl

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// defaultTop is how many logical partitions partitions show lists.
const defaultTop = 3

// partitionsCommand is the "partitions" group: one physical partition in
// detail.
func partitionsCommand() *cli.Command {
	return &cli.Command{
		Name:   "partitions",
		Usage:  "physical partitions in detail",
		Action: groupAction,
		Subcommands: []*cli.Command{
			{
				Name: "show",
				Usage: "show a physical partition like the portal's metrics blade: range, replicas, size, " +
					"request units, and its largest and busiest logical partitions",
				ArgsUsage: "ID",
				Flags: leafFlags(
					&cli.UintFlag{Name: "top", Value: defaultTop, Usage: "how many logical partitions to list by size and by RU/s"},
				),
				Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
					arg, err := oneArg(c, e.args, "partition ID (P17 or 17)")
					if err != nil {
						return err
					}
					id, err := parsePartitionID(arg)
					if err != nil {
						return err
					}
					top := c.Uint("top")
					if top == 0 || top > 1000 {
						return fmt.Errorf("--top %d: want 1 to 1000", top)
					}
					var det *adminpb.PartitionDetail
					err = e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
						det, err = admin.ShowPartition(ctx, &adminpb.ShowPartitionRequest{Id: id, Top: uint32(top)})
						return err
					})
					if err != nil {
						return err
					}
					return e.print(det, func(w io.Writer) error { return renderPartitionDetail(w, det) })
				}),
			},
		},
	}
}

// renderPartitionDetail prints the partition's record, then its largest
// and its busiest logical partitions, each with a bar scaled to the first.
func renderPartitionDetail(w io.Writer, det *adminpb.PartitionDetail) error {
	p := det.GetPartition()
	hot := "no"
	if p.GetHot() {
		hot = "yes: over its share with requests refused in the last 10 s"
	}
	pairs := [][2]string{
		{"partition", partitionName(p.GetId())},
		{"table", orDash(p.GetTable())},
		{"range", fmt.Sprintf("[%d, %d]", p.GetStart(), p.GetEnd())},
		{"generation", strconv.FormatUint(p.GetGeneration(), 10)},
		{"replicas", replicaList(p)},
		{"leader", leaderName(p)},
		{"bytes", fmt.Sprintf("%s (%d)", humanBytes(p.GetBytes()), p.GetBytes())},
		{"rows", strconv.FormatInt(p.GetRows(), 10)},
		{"logical partitions", strconv.FormatInt(p.GetLogicalPartitions(), 10)},
		{"RU/s", ruUsage(p)},
		{"throttled", strconv.FormatInt(p.GetThrottled(), 10) + " requests"},
		{"hot", hot},
	}
	if unreachable := unreachableReplicas(p); unreachable != "" {
		pairs = append(pairs, [2]string{"unreachable", unreachable})
	}
	if err := keyValues(w, pairs); err != nil {
		return err
	}

	if _, err := io.WriteString(w, "\nLargest logical partitions:\n"); err != nil {
		return err
	}
	if err := renderLogical(w, det.GetTopBySize(), []string{"BYTES", "ROWS"}, func(lp *adminpb.LogicalPartition) ([]any, float64) {
		return []any{humanBytes(lp.GetBytes()), lp.GetRows()}, float64(lp.GetBytes())
	}); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\nBusiest logical partitions:\n"); err != nil {
		return err
	}
	// The admin API reports only the rate of the busiest (not their size).
	return renderLogical(w, det.GetTopByRu(), []string{"RU/S"}, func(lp *adminpb.LogicalPartition) ([]any, float64) {
		return []any{formatRU(lp.GetRuPerSec())}, lp.GetRuPerSec()
	})
}

// ruUsage is a partition's request rate against its provisioned share:
// "120.5 of 1000 (12%)", or the rate alone when the table is unlimited.
func ruUsage(p *adminpb.Partition) string {
	if p.GetRuShare() <= 0 {
		return formatRU(p.GetRuPerSec()) + " (unlimited)"
	}
	return fmt.Sprintf("%s of %s (%.0f%%)", formatRU(p.GetRuPerSec()), formatRU(p.GetRuShare()), 100*p.GetRuPerSec()/p.GetRuShare())
}

func unreachableReplicas(p *adminpb.Partition) string {
	var out []string
	for _, r := range p.GetReplicas() {
		if !r.GetReachable() {
			out = append(out, nodeName(r.GetNodeName(), r.GetNodeId()))
		}
	}
	return strings.Join(out, ",")
}

// logicalBarWidth is the width of the bars of partitions show.
const logicalBarWidth = 20

// renderLogical prints one list of logical partitions: key, token, the
// measures (numbers, right-aligned) and a bar of the value that ranks them,
// scaled to the largest.
func renderLogical(w io.Writer, lps []*adminpb.LogicalPartition, measures []string, value func(*adminpb.LogicalPartition) ([]any, float64)) error {
	if len(lps) == 0 {
		_, err := io.WriteString(w, "none\n")
		return err
	}
	var largest float64
	for _, lp := range lps {
		_, v := value(lp)
		largest = max(largest, v)
	}
	header := append(append([]string{"KEY", "TOKEN"}, measures...), "")
	t := newTable(header, append([]string{"TOKEN"}, measures...)...)
	for _, lp := range lps {
		cells, v := value(lp)
		row := append(append([]any{strings.Join(lp.GetKey(), ", "), lp.GetToken()}, cells...), barCell(v, largest, logicalBarWidth))
		t.row(row...)
	}
	return t.render(w)
}
