package ctl

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// ringCommand is the "ring" group: how tables are cut into physical
// partitions.
func ringCommand() *cli.Command {
	return &cli.Command{
		Name:   "ring",
		Usage:  "the physical partitions of the tables",
		Action: groupAction,
		Subcommands: []*cli.Command{
			{
				Name:  "show",
				Usage: "show each table's physical partitions in token order: range, replicas, leader, size, rows",
				Flags: leafFlags(&cli.StringFlag{Name: "table", Usage: "only this table (keyspace.table)"}),
				Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
					var resp *adminpb.ShowRingResponse
					err := e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
						resp, err = admin.ShowRing(ctx, &adminpb.ShowRingRequest{Table: c.String("table")})
						return err
					})
					if err != nil {
						return err
					}
					return e.print(resp, func(w io.Writer) error { return renderRing(w, resp.GetPartitions()) })
				}),
			},
		},
	}
}

// partitionName is how tables and later commands name a physical
// partition: P followed by its ID.
func partitionName(id uint64) string { return "P" + strconv.FormatUint(id, 10) }

// renderRing prints one section per table, in the order the server gave
// (token order within a table): a header line, the partition table and a
// bar chart of partition sizes.
func renderRing(w io.Writer, parts []*adminpb.Partition) error {
	if len(parts) == 0 {
		_, err := io.WriteString(w, "no tables\n")
		return err
	}
	for i, group := range groupByTable(parts) {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := renderTableRing(w, group); err != nil {
			return err
		}
	}
	return nil
}

// groupByTable splits partitions by table, keeping first-seen order.
func groupByTable(parts []*adminpb.Partition) [][]*adminpb.Partition {
	var groups [][]*adminpb.Partition
	index := map[string]int{}
	for _, p := range parts {
		i, ok := index[p.GetTable()]
		if !ok {
			i = len(groups)
			index[p.GetTable()] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return groups
}

// renderTableRing prints the section of one table.
func renderTableRing(w io.Writer, parts []*adminpb.Partition) error {
	var bytes, rows int64
	var ruShare, ruRate, hot bool
	for _, p := range parts {
		bytes += p.GetBytes()
		rows += p.GetRows()
		ruShare = ruShare || p.GetRuShare() != 0
		ruRate = ruRate || p.GetRuPerSec() != 0
		hot = hot || p.GetHot()
	}
	// A provisioned table always shows its rate next to its share, and
	// whether a partition runs hot (over its share, refusing requests).
	ruRate = ruRate || ruShare
	hot = hot || ruShare
	header := fmt.Sprintf("%s: %s, %s, %s\n\n", parts[0].GetTable(), plural(int64(len(parts)), "partition"), plural(rows, "row"), humanBytes(bytes))
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}

	cols := []string{"PARTITION", "START", "END", "REPLICAS", "LEADER", "GEN", "BYTES", "ROWS"}
	if ruRate {
		cols = append(cols, "RU/S")
	}
	if ruShare {
		cols = append(cols, "RU/S SHARE")
	}
	if hot {
		cols = append(cols, "HOT")
	}
	t := newTable(cols, "START", "END", "GEN", "BYTES", "ROWS", "RU/S", "RU/S SHARE")
	bars := make([]bar, 0, len(parts))
	for _, p := range parts {
		row := []any{partitionName(p.GetId()), p.GetStart(), p.GetEnd(), replicaList(p), leaderName(p),
			p.GetGeneration(), humanBytes(p.GetBytes()), p.GetRows()}
		if ruRate {
			row = append(row, formatRU(p.GetRuPerSec()))
		}
		if ruShare {
			row = append(row, formatRU(p.GetRuShare()))
		}
		if hot {
			row = append(row, hotMark(p))
		}
		t.row(row...)
		bars = append(bars, bar{label: partitionName(p.GetId()), value: p.GetBytes()})
	}
	if err := t.render(w); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n"+barChart(bars, defaultBarWidth, humanBytes))
	return err
}

// replicaList names a partition's replicas: the leader marked with *,
// learners with (l).
func replicaList(p *adminpb.Partition) string {
	if len(p.GetReplicas()) == 0 {
		return "-"
	}
	names := make([]string, 0, len(p.GetReplicas()))
	for _, r := range p.GetReplicas() {
		n := nodeName(r.GetNodeName(), r.GetNodeId())
		if p.GetLeaderNode() != 0 && r.GetNodeId() == p.GetLeaderNode() {
			n += "*"
		}
		if r.GetLearner() {
			n += "(l)"
		}
		names = append(names, n)
	}
	return strings.Join(names, ",")
}

// leaderName is the leader's node name, or - when no replica reported
// leadership.
func leaderName(p *adminpb.Partition) string {
	if p.GetLeaderNode() == 0 {
		return "-"
	}
	return nodeName(p.GetLeaderName(), p.GetLeaderNode())
}

// hotMark is the HOT cell: "HOT" for a partition over its share that
// refused requests in the last 10 s, "-" otherwise.
func hotMark(p *adminpb.Partition) string {
	if p.GetHot() {
		return "HOT"
	}
	return "-"
}

// formatRU prints request units per second to one decimal at most.
func formatRU(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}
