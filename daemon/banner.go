package daemon

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// bannerNode is what the startup banner says about one node: its name and
// the addresses its listeners are bound to (not the advertised ones: the
// banner is how an operator sees that a node listens on every interface).
type bannerNode struct {
	Name, CQL, Peer, Admin, HTTP, DataDir string
}

// bannerOf describes a started node.
func bannerOf(n *Node) bannerNode {
	return bannerNode{Name: n.cfg.Name, CQL: n.CQLAddr(), Peer: n.PeerAddr(), Admin: n.AdminAddr(), HTTP: n.HTTPAddr(), DataDir: n.cfg.DataDir}
}

// writeBanner prints the startup banner: every address of every node (CQL,
// peer, admin, HTTP) and its data directory, and where etcd is, one node a
// line. The logs say the same at Info, but a new user reads the banner
// (issue 17: it omitted the HTTP port and the data directory).
func writeBanner(w io.Writer, title string, nodes []bannerNode, etcd, etcdDir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", title)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tCQL\tPEER\tADMIN\tHTTP\tDATA DIR")
	for _, n := range nodes {
		http := n.HTTP
		if http == "" {
			http = "off"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.CQL, n.Peer, n.Admin, http, n.DataDir)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if etcdDir != "" {
		fmt.Fprintf(&b, "  etcd: embedded, %s, data in %s\n", etcd, etcdDir)
	} else {
		fmt.Fprintf(&b, "  etcd: %s\n", etcd)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// nodeBanner prints the banner of a single node.
func nodeBanner(w io.Writer, n *Node) error {
	etcd, dir := strings.Join(n.cfg.EtcdEndpoints, ","), ""
	if n.embedded != nil {
		etcd, dir = strings.Join(n.embedded.Endpoints(), ","), filepath.Join(n.cfg.DataDir, "etcd")
	}
	return writeBanner(w, fmt.Sprintf("cosmosd %s: node %s (id %d) started; SIGINT or SIGTERM stops it", Version, n.cfg.Name, n.ID()),
		[]bannerNode{bannerOf(n)}, etcd, dir)
}

// demoBanner prints the banner of a demo cluster.
func demoBanner(w io.Writer, d *Demo, dataDir string) error {
	nodes := make([]bannerNode, len(d.Nodes))
	for i, n := range d.Nodes {
		nodes[i] = bannerOf(n)
	}
	return writeBanner(w, fmt.Sprintf("cosmosd demo: %d nodes, insecure (no TLS, no authentication); Ctrl-C stops", len(d.Nodes)),
		nodes, strings.Join(d.Etcd.Endpoints(), ","), filepath.Join(dataDir, "etcd"))
}
