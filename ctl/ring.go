package ctl

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
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
				Usage: "show each table's physical partitions (token order, or --sort): range, replicas, leader, size, rows; a table of more than 64 partitions gets a size summary instead of a bar chart",
				Flags: leafFlags(&cli.StringFlag{Name: "table", Usage: "only this table (keyspace.table)"},
					&cli.StringFlag{Name: "sort", Value: "token", Usage: "order of each table's partitions: token, bytes, rows, ru (largest first) or id"},
					&cli.IntFlag{Name: "limit", Usage: "show at most this many partitions per table (0: all)"}),
				Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
					view, err := parseRingView(c.String("sort"), c.Int("limit"))
					if err != nil {
						return err
					}
					var resp *adminpb.ShowRingResponse
					err = e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
						resp, err = admin.ShowRing(ctx, &adminpb.ShowRingRequest{Table: c.String("table")})
						return err
					})
					if err != nil {
						return err
					}
					all := resp.GetPartitions()
					resp.Partitions = view.apply(all)
					return e.print(resp, func(w io.Writer) error { return renderRingView(w, all, view) })
				}),
			},
		},
	}
}

// partitionName is how tables and later commands name a physical
// partition: P followed by its ID.
func partitionName(id uint64) string { return "P" + strconv.FormatUint(id, 10) }

// ringView is how ring show orders and trims each table's partitions.
type ringView struct {
	sort  string // token, bytes, rows, ru, id
	limit int    // per table; 0: all
}

func parseRingView(sort string, limit int) (ringView, error) {
	switch sort {
	case "token", "bytes", "rows", "ru", "id":
	default:
		return ringView{}, fmt.Errorf("--sort %q: want token, bytes, rows, ru or id", sort)
	}
	if limit < 0 {
		return ringView{}, fmt.Errorf("--limit %d: want 0 (all) or more", limit)
	}
	return ringView{sort: sort, limit: limit}, nil
}

// order sorts one table's partitions in place: token order as the server
// gives it, or the largest first (ties in token order), or by id.
func (v ringView) order(parts []*adminpb.Partition) {
	by := func(key func(*adminpb.Partition) float64) {
		slices.SortStableFunc(parts, func(a, b *adminpb.Partition) int { return cmp.Compare(key(b), key(a)) })
	}
	switch v.sort {
	case "bytes":
		by(func(p *adminpb.Partition) float64 { return float64(p.GetBytes()) })
	case "rows":
		by(func(p *adminpb.Partition) float64 { return float64(p.GetRows()) })
	case "ru":
		by(func(p *adminpb.Partition) float64 { return p.GetRuPerSec() })
	case "id":
		slices.SortStableFunc(parts, func(a, b *adminpb.Partition) int { return cmp.Compare(a.GetId(), b.GetId()) })
	default:
		slices.SortStableFunc(parts, func(a, b *adminpb.Partition) int { return cmp.Compare(a.GetStart(), b.GetStart()) })
	}
}

// apply returns the partitions to show: each table's ordered and trimmed.
func (v ringView) apply(parts []*adminpb.Partition) []*adminpb.Partition {
	var out []*adminpb.Partition
	for _, group := range groupByTable(parts) {
		group = slices.Clone(group)
		v.order(group)
		if v.limit > 0 && len(group) > v.limit {
			group = group[:v.limit]
		}
		out = append(out, group...)
	}
	return out
}

// renderRing prints every partition in token order (see renderRingView).
func renderRing(w io.Writer, parts []*adminpb.Partition) error {
	return renderRingView(w, parts, ringView{sort: "token"})
}

// renderRingView prints one section per table, in the order the server
// gave: a header line with the whole table's totals, the partitions the
// view selects, a line saying how many it left out, and either a bar chart
// of partition sizes or, for a table of more than maxBars partitions, a
// summary of their distribution.
func renderRingView(w io.Writer, parts []*adminpb.Partition, v ringView) error {
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
		if err := renderTableRing(w, group, v); err != nil {
			return err
		}
	}
	return nil
}

// maxBars is the largest table whose partitions get one bar each; a bigger
// table gets a summary line instead (a bar chart of 1,000 lines helps no
// one).
const maxBars = 64

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
func renderTableRing(w io.Writer, all []*adminpb.Partition, v ringView) error {
	parts := v.apply(all)
	var bytes, rows int64
	var ruShare, ruRate, hot bool
	for _, p := range all {
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
	header := fmt.Sprintf("%s: %s, %s, %s\n\n", all[0].GetTable(), plural(int64(len(all)), "partition"), plural(rows, "row"), humanBytes(bytes))
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
	if left := len(all) - len(parts); left > 0 {
		if _, err := fmt.Fprintf(w, "... and %s more (--limit %d, sorted by %s)\n", plural(int64(left), "partition"), v.limit, v.sort); err != nil {
			return err
		}
	}
	if len(all) > maxBars {
		_, err := io.WriteString(w, "\n"+ringSummary(all, ruRate))
		return err
	}
	_, err := io.WriteString(w, "\n"+barChart(bars, defaultBarWidth, humanBytes))
	return err
}

// ringSummary describes the distribution of a big table's partitions:
// smallest, median and largest by bytes (and by RU/s when measured).
func ringSummary(parts []*adminpb.Partition, ru bool) string {
	sizes := make([]int64, len(parts))
	rus := make([]float64, len(parts))
	for i, p := range parts {
		sizes[i], rus[i] = p.GetBytes(), p.GetRuPerSec()
	}
	slices.Sort(sizes)
	slices.Sort(rus)
	mid := len(parts) / 2
	s := fmt.Sprintf("partition sizes: smallest %s, median %s, largest %s\n", humanBytes(sizes[0]), humanBytes(sizes[mid]), humanBytes(sizes[len(sizes)-1]))
	if ru {
		s += fmt.Sprintf("partition RU/s: lowest %s, median %s, highest %s\n", formatRU(rus[0]), formatRU(rus[mid]), formatRU(rus[len(rus)-1]))
	}
	return s
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
