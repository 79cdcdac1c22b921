package e2e

import (
	"slices"

	"github.com/cosmosd/cosmosd/test/blackbox"
)

// This file reads the cluster's state the way an operator does: the host's
// cosmosctl against the nodes' admin port, output as JSON.

// ctl is the host's cosmosctl pointed at the nodes that can answer now.
func (c *Cluster) ctl() blackbox.Ctl {
	c.mu.Lock()
	defer c.mu.Unlock()
	var eps []string
	for _, n := range c.Nodes {
		if c.faulty[n] == "" {
			eps = append(eps, n.IP+":7070")
		}
	}
	return blackbox.Ctl{Path: c.art.Ctl, Endpoints: eps}
}

// Ctl runs the host's cosmosctl against the nodes that can answer and
// returns its standard output.
func (c *Cluster) Ctl(args ...string) ([]byte, error) { return c.ctl().Run(args...) }

// NodesList returns `cosmosctl nodes list`.
func (c *Cluster) NodesList() ([]blackbox.Node, error) { return c.ctl().Nodes() }

// Ring returns `cosmosctl ring show`.
func (c *Cluster) Ring() ([]blackbox.Partition, error) { return c.ctl().Ring() }

// ids returns the node ids of containers as a set.
func ids(xs ...*Container) map[uint64]bool {
	m := map[uint64]bool{}
	for _, x := range xs {
		m[x.ID] = true
	}
	return m
}

// without returns the nodes except some.
func (c *Cluster) without(except ...*Container) []*Container {
	var out []*Container
	for _, n := range c.Nodes {
		if !slices.Contains(except, n) {
			out = append(out, n)
		}
	}
	return out
}

// RingHealthy polls once: the ring is healthy on exactly the nodes live.
func (c *Cluster) RingHealthy(live []*Container) (bool, string) {
	parts, err := c.Ring()
	if err != nil {
		return false, err.Error()
	}
	why := blackbox.RingHealth{Live: ids(live...)}.Check(parts)
	return why == "", why
}

// Calm polls once: the nodes up are exactly up, the ring is healthy on
// them, each holds the replicas the ring gives it, and no operation runs.
func (c *Cluster) Calm(up []*Container) (bool, string) {
	return c.ctl().Calm(blackbox.RingHealth{Live: ids(up...)}, c.Operations)
}
