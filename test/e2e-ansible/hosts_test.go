package e2eansible

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
	"syscall"
	"testing"
	"time"
)

// This file drives Docker: the host image, the network and the containers
// that play Debian hosts with systemd as PID 1.

const (
	// labelRun marks every resource of a run with the run's id.
	labelRun = "cosmosd-e2e-ansible"
	// labelOwner is the pid of the test process that created a resource,
	// so that a later run can tell abandoned resources from live ones.
	labelOwner = "cosmosd-e2e-ansible.owner"
)

// docker runs the docker CLI and returns its trimmed standard output; the
// error carries standard error.
func docker(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// dockerT runs docker with a generous timeout.
func dockerT(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return docker(ctx, args...)
}

// dockerProblem reports why Docker cannot be used, "" when it can.
func dockerProblem() string {
	if _, err := exec.LookPath("docker"); err != nil {
		return "no docker command in PATH"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := docker(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return "docker info failed (no reachable Docker engine): " + msg
	}
	return ""
}

// ansibleProblem reports why the playbooks cannot be run, "" when they can.
func ansibleProblem() string {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		return "no ansible-playbook in PATH (scripts/deps.sh installs Debian's ansible)"
	}
	out, err := exec.Command("ansible-doc", "-t", "connection", "-l").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("community.docker.docker")) {
		return "Ansible has no community.docker.docker connection plugin (Debian's ansible package ships it)"
	}
	return ""
}

// moduleRoot is the directory of go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the cosmosd module")
	}
	return filepath.Dir(gomod), nil
}

// goTool is the go command: $GO (as make passes it) or go on PATH.
func goTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// imageProblem reports why the host image can be neither reused nor
// built, "" when build.sh can produce it.
func imageProblem(script string) string {
	sum, err := exec.Command("sh", "-c", `sha256sum < "$1" | cut -c1-16`, "sh", script).Output()
	if err != nil {
		return "hash " + script + ": " + err.Error()
	}
	tag := "cosmosd-e2e-ansible-host:" + strings.TrimSpace(string(sum))
	if _, err := dockerT("image", "inspect", "--format", "{{.Id}}", tag); err == nil {
		return ""
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if _, err := os.Stat("/usr/sbin/debootstrap"); err != nil {
			return "the host image " + tag + " is not built and debootstrap is missing (scripts/deps.sh installs it)"
		}
	}
	if os.Getuid() != 0 && exec.Command("sudo", "-n", "true").Run() != nil {
		return "the host image " + tag + " is not built and debootstrap needs root or password-less sudo"
	}
	return ""
}

// buildImage runs image/build.sh and returns the image tag.
func buildImage(t *testing.T, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	tag := strings.TrimSpace(stdout.String())
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		t.Logf("%s", msg)
	}
	t.Logf("host image %s ready in %s", tag, time.Since(start).Round(100*time.Millisecond))
	return tag
}

// randomID returns n random bytes in hex.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createNetwork creates a bridge network on a random 10.x.y.0/24 that no
// route of the host uses, and returns the subnet's first three octets.
func createNetwork(name, runID string) (string, error) {
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
		_, err := dockerT("network", "create", "--driver", "bridge", "--subnet", subnet.String(), "--gateway", prefix+"1",
			"--label", labelRun+"="+runID, "--label", labelOwner+"="+strconv.Itoa(os.Getpid()), name)
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

// cgroup2Magic is CGROUP2_SUPER_MAGIC: /sys/fs/cgroup is the unified
// hierarchy (cgroup v2) when its file system has this type.
const cgroup2Magic = 0x63677270

// systemdRunFlags are the `docker create` flags that let systemd run as
// PID 1 in a container on this host.
func systemdRunFlags() []string {
	flags := []string{
		// systemd halts on SIGRTMIN+3; SIGTERM would make it re-execute.
		"--stop-signal", "SIGRTMIN+3",
		"--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
	}
	if v := os.Getenv("COSMOSD_E2E_ANSIBLE_PRIVILEGED"); v == "1" || v == "true" {
		return append(flags, "--privileged", "--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw")
	}
	// CAP_SYS_ADMIN lets systemd set up the mount namespaces of the unit's
	// sandboxing (ProtectSystem=strict, PrivateTmp, ...); without it,
	// systemd skips them inside a container and the unit would run less
	// confined than on a real host.
	flags = append(flags, "--cap-add", "SYS_ADMIN")
	if info, _ := dockerT("info", "--format", "{{.SecurityOptions}}"); strings.Contains(info, "apparmor") {
		flags = append(flags, "--security-opt", "apparmor=unconfined")
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err == nil && st.Type == cgroup2Magic {
		return append(flags, "--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw")
	}
	return append(flags, "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro")
}

// sweepAbandoned removes containers and networks of earlier runs whose
// test process is gone: go test's -timeout kills the process without
// running cleanups.
func sweepAbandoned() {
	alive := func(owner string) bool {
		pid, err := strconv.Atoi(owner)
		if err != nil || pid <= 0 {
			return false
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && bytes.Contains(cmdline, []byte(".test"))
	}
	out, err := dockerT("ps", "-a", "--filter", "label="+labelRun, "--format", `{{.ID}} {{.Label "`+labelOwner+`"}}`)
	if err == nil {
		var stale []string
		for _, line := range strings.Split(out, "\n") {
			if id, owner, ok := strings.Cut(strings.TrimSpace(line), " "); ok && !alive(owner) {
				stale = append(stale, id)
			}
		}
		if len(stale) > 0 {
			_, _ = dockerT(append([]string{"rm", "-f", "-v"}, stale...)...)
		}
	}
	out, err = dockerT("network", "ls", "--filter", "label="+labelRun, "--format", `{{.ID}} {{.Label "`+labelOwner+`"}}`)
	if err == nil {
		for _, line := range strings.Split(out, "\n") {
			if id, owner, ok := strings.Cut(strings.TrimSpace(line), " "); ok && !alive(owner) {
				_, _ = dockerT("network", "rm", id)
			}
		}
	}
}

// removeRun removes every container (with its anonymous volumes) and the
// network of a run.
func removeRun(runID, network string) error {
	var errs []error
	ids, err := dockerT("ps", "-aq", "--filter", "label="+labelRun+"="+runID)
	if err != nil {
		errs = append(errs, err)
	} else if ids != "" {
		if _, err := dockerT(append([]string{"rm", "-f", "-v"}, strings.Fields(ids)...)...); err != nil {
			errs = append(errs, err)
		}
	}
	if network != "" {
		if _, err := dockerT("network", "rm", network); err != nil && !strings.Contains(err.Error(), "not found") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
