package nemesis

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cosmosd/cosmosd/test/dockertest"
)

// The faults the nemesis injects into one host, and their heals.

// Each fault records whether the node can answer, so cosmosctl is
// pointed at nodes that can.

func (c *Cluster) setFaulty(x *Container, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if why == "" {
		delete(c.faulty, x)
	} else {
		c.faulty[x] = why
	}
}

func (c *Cluster) faultOf(x *Container) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.faulty[x]
}

// Kill kills a container (SIGKILL).
func (c *Cluster) Kill(x *Container) error {
	c.setFaulty(x, "killed")
	return c.docker("kill", x.Name)
}

// Start starts a stopped or killed container with its data.
func (c *Cluster) Start(x *Container) error {
	if err := c.docker("start", x.Name); err != nil {
		return err
	}
	c.setFaulty(x, "")
	return nil
}

// Pause freezes every process of a container.
func (c *Cluster) Pause(x *Container) error {
	c.setFaulty(x, "paused")
	return c.docker("pause", x.Name)
}

// Unpause thaws a paused container.
func (c *Cluster) Unpause(x *Container) error {
	if err := c.docker("unpause", x.Name); err != nil {
		return err
	}
	c.setFaulty(x, "")
	return nil
}

// Disconnect takes a container off the network.
func (c *Cluster) Disconnect(x *Container) error {
	c.setFaulty(x, "disconnected")
	return c.docker("network", "disconnect", c.network, x.Name)
}

// Connect puts a disconnected container back, at its address.
func (c *Cluster) Connect(x *Container) error {
	if err := c.docker("network", "connect", "--ip", x.IP, c.network, x.Name); err != nil {
		return err
	}
	c.setFaulty(x, "")
	return nil
}

// cutRules are the iptables rules that cut x off from peers, in x's
// network namespace: x neither receives from nor sends to them, while
// etcd and the clients still reach it.
func cutRules(peers []*Container) [][]string {
	var rules [][]string
	for _, p := range peers {
		rules = append(rules, []string{"INPUT", "-s", p.IP, "-j", "DROP"}, []string{"OUTPUT", "-d", p.IP, "-j", "DROP"})
	}
	return rules
}

// iptables runs iptables in a container's network namespace.
func (c *Cluster) iptables(x *Container, op string, rule []string) error {
	pid, err := dockertest.DockerT("inspect", "-f", "{{.State.Pid}}", x.Name)
	if err != nil {
		return err
	}
	args := append([]string{"-t", pid, "-n", "iptables", "-w", op}, rule...)
	out, err := exec.Command("nsenter", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nsenter %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Cut partitions x from some peers (it still reaches etcd and clients).
func (c *Cluster) Cut(x *Container, peers []*Container) error {
	c.setFaulty(x, "cut")
	for _, r := range cutRules(peers) {
		if err := c.iptables(x, "-A", r); err != nil {
			return err
		}
	}
	return nil
}

// Uncut removes the rules Cut added.
func (c *Cluster) Uncut(x *Container, peers []*Container) error {
	var errs []error
	for _, r := range cutRules(peers) {
		errs = append(errs, c.iptables(x, "-D", r))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.setFaulty(x, "")
	return nil
}

// SetClock makes a node's clock run off by d (the node re-reads the file
// every second).
func (c *Cluster) SetClock(x *Container, d time.Duration) error {
	f := filepath.Join(c.dir, "clock-offset-"+x.Host)
	if err := os.WriteFile(f, []byte(d.String()+"\n"), 0o644); err != nil {
		return err
	}
	return c.docker("cp", f, x.Name+":"+clockFile)
}

// fillFile is the file the disk-full fault fills a data directory with.
const fillFile = "nemesis-disk-full"

// Fill fills a node's data directory until the file system is full and
// returns how many bytes that took: it allocates what is free, then
// writes until ENOSPC (allocation leaves a few blocks).
func (c *Cluster) Fill(x *Container) (int64, error) {
	if x.dataDir == "" {
		return 0, errors.New("no size-limited data directory: " + c.noDisk)
	}
	f, err := os.Create(filepath.Join(x.dataDir, fillFile))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var st syscall.Statfs_t
	if err := syscall.Statfs(x.dataDir, &st); err != nil {
		return 0, err
	}
	n := int64(st.Bavail) * st.Bsize
	for n > 0 && syscall.Fallocate(int(f.Fd()), 0, 0, n) != nil {
		n -= 16 << 20 // metadata takes a little of what statfs calls free
	}
	n = max(n, 0)
	if _, err := f.Seek(n, 0); err != nil {
		return n, err
	}
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Write(buf)
		n += int64(k)
		if errors.Is(err, syscall.ENOSPC) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// Unfill removes the file Fill wrote.
func (c *Cluster) Unfill(x *Container) error {
	return os.Remove(filepath.Join(x.dataDir, fillFile))
}

// state reports whether a container runs, and if not how it ended.
func (c *Cluster) state(x *Container) (running bool, how string, err error) {
	out, err := dockertest.DockerT("inspect", "-f", "{{.State.Running}} {{.State.Paused}} exit={{.State.ExitCode}} oom={{.State.OOMKilled}} {{.State.Error}}", x.Name)
	if err != nil {
		return false, "", err
	}
	return strings.HasPrefix(out, "true"), out, nil
}

// Wipe kills a node, deletes its data directory and starts it empty: it
// must join as a new node, and the cluster must repair the old one's
// replicas. The container is re-created, which also works for anonymous
// volumes. It returns the node's old id.
func (c *Cluster) Wipe(x *Container) (uint64, error) {
	old := c.ID(x)
	c.setFaulty(x, "wiped")
	if err := c.docker("rm", "-f", "-v", x.Name); err != nil {
		return old, err
	}
	if x.dataDir != "" {
		entries, err := os.ReadDir(x.dataDir)
		if err != nil {
			return old, err
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(x.dataDir, e.Name())); err != nil {
				return old, err
			}
		}
	}
	if err := c.createNode(x); err != nil {
		return old, err
	}
	if err := c.Start(x); err != nil {
		return old, err
	}
	c.mu.Lock()
	c.retired = append(c.retired, old)
	c.mu.Unlock()
	return old, nil
}

// restore undoes whatever fault a container is under, best effort.
func (c *Cluster) restore(x *Container) {
	var err error
	switch c.faultOf(x) {
	case "":
		return
	case "killed", "wiped":
		err = c.Start(x)
	case "paused":
		err = c.Unpause(x)
	case "disconnected":
		err = c.Connect(x)
	case "cut":
		// Rules die with the container's network namespace; a restart
		// is the reliable way to drop them all.
		_ = c.docker("restart", x.Name)
		c.setFaulty(x, "")
	}
	if err != nil {
		c.t.Errorf("restore %s: %v", x.Host, err)
	}
}
