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

// nodesCommand is the "nodes" group: the hosts of the cluster.
func nodesCommand() *cli.Command {
	return &cli.Command{
		Name:   "nodes",
		Usage:  "the nodes of the cluster",
		Action: groupAction,
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list every node with its state, addresses, location and load",
				Flags: leafFlags(),
				Action: run(func(ctx context.Context, _ *cli.Context, e *env) error {
					var resp *adminpb.ListNodesResponse
					err := e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
						resp, err = admin.ListNodes(ctx, &adminpb.ListNodesRequest{})
						return err
					})
					if err != nil {
						return err
					}
					return e.print(messageList(resp.GetNodes()), func(w io.Writer) error { return renderNodes(w, resp.GetNodes()) })
				}),
			},
			{
				Name:      "drain",
				Usage:     "move every replica off a node (before maintenance); the node stays a member",
				ArgsUsage: "NODE",
				Flags:     leafFlags(waitFlags()...),
				Action: nodeOperation(func(ctx context.Context, admin adminpb.AdminClient, node string) (*adminpb.Operation, error) {
					return admin.DrainNode(ctx, &adminpb.NodeRequest{Node: node})
				}),
			},
			{
				Name:      "decommission",
				Usage:     "drain a node and record it as decommissioned (before removing the host)",
				ArgsUsage: "NODE",
				Flags:     leafFlags(waitFlags()...),
				Action: nodeOperation(func(ctx context.Context, admin adminpb.AdminClient, node string) (*adminpb.Operation, error) {
					return admin.DecommissionNode(ctx, &adminpb.NodeRequest{Node: node})
				}),
			},
			{
				Name:      "undrain",
				Usage:     "take a node out of draining (it gets replicas again) and stop its drain or decommission",
				ArgsUsage: "NODE",
				Flags:     leafFlags(),
				Action: run(func(ctx context.Context, c *cli.Context, e *env) error {
					node, err := oneArg(c, e.args, "NODE (a node name or ID)")
					if err != nil {
						return err
					}
					var resp *adminpb.UndrainNodeResponse
					err = e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
						resp, err = admin.UndrainNode(ctx, &adminpb.NodeRequest{Node: node})
						return err
					})
					if err != nil {
						return err
					}
					return e.print(resp, func(w io.Writer) error { return renderUndrain(w, resp) })
				}),
			},
		},
	}
}

// nodeOperation is the action of a command that starts an operation on the
// node named by its argument (a name or an ID).
func nodeOperation(rpc func(ctx context.Context, admin adminpb.AdminClient, node string) (*adminpb.Operation, error)) cli.ActionFunc {
	return run(func(ctx context.Context, c *cli.Context, e *env) error {
		node, err := oneArg(c, e.args, "NODE (a node name or ID)")
		if err != nil {
			return err
		}
		return e.submitOperation(ctx, c, func(ctx context.Context, admin adminpb.AdminClient) (*adminpb.Operation, error) {
			return rpc(ctx, admin, node)
		})
	})
}

// renderUndrain says what undrain did.
func renderUndrain(w io.Writer, r *adminpb.UndrainNodeResponse) error {
	name := nodeName(r.GetName(), r.GetNode())
	if !r.GetWasDraining() {
		_, err := fmt.Fprintf(w, "node %s was not draining; nothing changed\n", name)
		return err
	}
	msg := fmt.Sprintf("node %s undrained: it takes replicas again", name)
	if ops := r.GetStoppedOperations(); len(ops) > 0 {
		ids := make([]string, len(ops))
		for i, id := range ops {
			ids[i] = strconv.FormatUint(id, 10)
		}
		msg += "; stopping operation " + strings.Join(ids, ", ") + " (moves under way finish)"
	}
	_, err := fmt.Fprintln(w, msg)
	return err
}

// renderNodes prints the node table.
func renderNodes(w io.Writer, nodes []*adminpb.Node) error {
	// FAILED counts replicas that stopped on a failure and await their
	// replacement; anything but 0 deserves a look at the node's log.
	t := newTable([]string{"ID", "NAME", "STATE", "CQL", "ADMIN", "ZONE/RACK", "REPLICAS", "LEADERS", "FAILED", "BYTES", "VERSION"},
		"ID", "REPLICAS", "LEADERS", "FAILED", "BYTES")
	for _, n := range nodes {
		t.row(n.GetId(), orDash(n.GetName()), orDash(n.GetState()), orDash(n.GetCqlAddr()), orDash(n.GetAdminAddr()),
			location(n.GetLabels()), n.GetReplicas(), n.GetLeaders(), n.GetFailedReplicas(), humanBytes(n.GetBytes()), orDash(n.GetVersion()))
	}
	return t.render(w)
}

// location is "zone/rack" from a node's labels; a cluster labelled with dc
// instead of zone (Cassandra's vocabulary) shows the dc.
func location(labels map[string]string) string {
	zone := labels["zone"]
	if zone == "" {
		zone = labels["dc"]
	}
	rack := labels["rack"]
	if zone == "" && rack == "" {
		return "-"
	}
	return orDash(zone) + "/" + orDash(rack)
}

// nodeName names a node in tables: its name, or n<ID> when the node is not
// registered (any more).
func nodeName(name string, id uint64) string {
	if name != "" {
		return name
	}
	return "n" + strconv.FormatUint(id, 10)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
