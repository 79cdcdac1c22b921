package e2eansible

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/test/dockertest"
)

// This file drives Docker: the host image, the network and the containers
// that play Debian hosts with systemd as PID 1.

// suite labels every Docker resource of the suite (see dockertest).
const suite = "cosmosd-e2e-ansible"

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

// imageProblem reports why the host image can be neither reused nor
// built, "" when build.sh can produce it.
func imageProblem(script string) string {
	sum, err := exec.Command("sh", "-c", `sha256sum < "$1" | cut -c1-16`, "sh", script).Output()
	if err != nil {
		return "hash " + script + ": " + err.Error()
	}
	tag := "cosmosd-e2e-ansible-host:" + strings.TrimSpace(string(sum))
	if _, err := dockertest.DockerT("image", "inspect", "--format", "{{.Id}}", tag); err == nil {
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
	if info, _ := dockertest.DockerT("info", "--format", "{{.SecurityOptions}}"); strings.Contains(info, "apparmor") {
		flags = append(flags, "--security-opt", "apparmor=unconfined")
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/cgroup", &st); err == nil && st.Type == cgroup2Magic {
		return append(flags, "--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw")
	}
	return append(flags, "-v", "/sys/fs/cgroup:/sys/fs/cgroup:ro")
}
