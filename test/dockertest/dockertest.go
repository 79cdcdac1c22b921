// Package dockertest drives the Docker CLI for the suites that run cosmosd
// hosts as containers (test/e2e, test/e2e-ansible, test/nemesis): the
// engine check, the suites' images (Build), the labelled networks and
// containers of one test run, and their removal, including what an
// earlier run killed by go test's -timeout left behind.
//
// Every resource of a run carries two labels: the suite's name with the
// run's id as value, and "<suite>.owner" with the pid of the test process.
// A resource whose owner is no longer a running test binary is abandoned
// and any later run of the suite removes it; scripts/e2e-clean.sh removes
// them all by the same labels.
package dockertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Docker runs the docker CLI and returns its trimmed standard output; the
// error carries standard error.
func Docker(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// DockerT runs docker with a generous timeout: a loaded engine takes
// seconds to create or remove a container.
func DockerT(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return Docker(ctx, args...)
}

// Problem reports why Docker cannot be used, "" when it can.
func Problem() string {
	if _, err := exec.LookPath("docker"); err != nil {
		return "no docker command in PATH"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := Docker(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return "docker info failed (no reachable Docker engine): " + msg
	}
	return ""
}

// GoTool is the go command: $GO (as make passes it) or go on PATH.
func GoTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// ModuleRoot is the directory of the cosmosd module's go.mod.
func ModuleRoot() (string, error) {
	out, err := exec.Command(GoTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the cosmosd module")
	}
	return filepath.Dir(gomod), nil
}

// RandomID returns n random bytes in hex.
func RandomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Run is the Docker resources of one test process.
type Run struct {
	Suite string // the label key; also the prefix of the owner label
	ID    string // random, distinct per run
}

// NewRun removes what earlier runs of the suite abandoned and returns a
// new run.
func NewRun(suite string) *Run {
	SweepAbandoned(suite)
	return &Run{Suite: suite, ID: RandomID(4)}
}

// ownerLabel is the label that holds the pid of the owning process.
func ownerLabel(suite string) string { return suite + ".owner" }

// Labels are the `docker create` / `docker network create` flags that
// mark a resource as the run's.
func (r *Run) Labels() []string {
	return []string{"--label", r.Suite + "=" + r.ID, "--label", ownerLabel(r.Suite) + "=" + strconv.Itoa(os.Getpid())}
}

// CreateNetwork creates a bridge network on a random 10.x.y.0/24 that no
// route of the host uses, and returns the subnet's first three octets
// ("10.x.y."). Docker refuses a subnet another network holds; then it
// tries another.
func (r *Run) CreateNetwork(name string) (string, error) {
	routes := hostRoutes()
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		x, _ := rand.Int(rand.Reader, big.NewInt(150))
		y, _ := rand.Int(rand.Reader, big.NewInt(256))
		prefix := fmt.Sprintf("10.%d.%d.", 100+x.Int64(), y.Int64())
		_, subnet, _ := net.ParseCIDR(prefix + "0/24")
		if overlapsAny(subnet, routes) {
			continue
		}
		args := append([]string{"network", "create", "--driver", "bridge", "--subnet", subnet.String(), "--gateway", prefix + "1"}, r.Labels()...)
		_, err := DockerT(append(args, name)...)
		if err == nil {
			return prefix, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "overlap") {
			return "", err
		}
	}
	return "", fmt.Errorf("no free subnet for the test network: %w", lastErr)
}

// hostRoutes are the IPv4 destinations of the host's routing table.
func hostRoutes() []*net.IPNet {
	raw, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return nil
	}
	var out []*net.IPNet
	for _, line := range strings.Split(string(raw), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		dst, err1 := strconv.ParseUint(f[1], 16, 32)
		mask, err2 := strconv.ParseUint(f[7], 16, 32)
		if err1 != nil || err2 != nil || mask == 0 {
			continue // the default route overlaps everything
		}
		le := func(v uint64) net.IP { return net.IPv4(byte(v), byte(v>>8), byte(v>>16), byte(v>>24)).To4() }
		out = append(out, &net.IPNet{IP: le(dst), Mask: net.IPMask(le(mask))})
	}
	return out
}

func overlapsAny(n *net.IPNet, others []*net.IPNet) bool {
	for _, o := range others {
		if o.Contains(n.IP) || n.Contains(o.IP) {
			return true
		}
	}
	return false
}

// Remove removes every container of the run (with its anonymous volumes)
// and the network.
func (r *Run) Remove(network string) error {
	var errs []error
	ids, err := DockerT("ps", "-aq", "--filter", "label="+r.Suite+"="+r.ID)
	if err != nil {
		errs = append(errs, err)
	} else if ids != "" {
		// Paused containers cannot be removed while frozen on some
		// engines; unpause first.
		for _, id := range strings.Fields(ids) {
			_, _ = DockerT("unpause", id)
		}
		if _, err := DockerT(append([]string{"rm", "-f", "-v"}, strings.Fields(ids)...)...); err != nil {
			errs = append(errs, err)
		}
	}
	if network != "" {
		if _, err := DockerT("network", "rm", network); err != nil && !strings.Contains(err.Error(), "not found") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SweepAbandoned removes the containers and networks of earlier runs of a
// suite whose test process is gone: go test's -timeout kills the process
// without running cleanups.
func SweepAbandoned(suite string) {
	alive := func(owner string) bool {
		pid, err := strconv.Atoi(owner)
		if err != nil || pid <= 0 {
			return false
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && bytes.Contains(cmdline, []byte(".test"))
	}
	format := `{{.ID}} {{.Label "` + ownerLabel(suite) + `"}}`
	stale := func(out string) []string {
		var ids []string
		for _, line := range strings.Split(out, "\n") {
			if id, owner, ok := strings.Cut(strings.TrimSpace(line), " "); ok && !alive(owner) {
				ids = append(ids, id)
			}
		}
		return ids
	}
	if out, err := DockerT("ps", "-a", "--filter", "label="+suite, "--format", format); err == nil {
		if ids := stale(out); len(ids) > 0 {
			_, _ = DockerT(append([]string{"rm", "-f", "-v"}, ids...)...)
		}
	}
	if out, err := DockerT("network", "ls", "--filter", "label="+suite, "--format", format); err == nil {
		for _, id := range stale(out) {
			_, _ = DockerT("network", "rm", id)
		}
	}
}
