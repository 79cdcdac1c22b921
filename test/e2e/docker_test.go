package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file drives the Docker CLI: the image, networks and containers of a
// test run, and their removal.

const (
	// labelRun marks every resource of a run with the run's id.
	labelRun = "cosmosd-e2e"
	// labelOwner is "<pid>" of the test process that created a resource,
	// so that a later run can tell abandoned resources from live ones.
	labelOwner = "cosmosd-e2e.owner"
	// imageRepo is the repository of the cached image.
	imageRepo = "cosmosd-e2e"
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

// dockerAvailable reports why Docker cannot be used, "" when it can.
func dockerAvailable() string {
	if _, err := exec.LookPath("docker"); err != nil {
		return "no docker command in PATH"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := docker(ctx, "info", "--format", "{{.ServerVersion}}"); err != nil {
		return "docker info failed (no reachable Docker engine): " + firstLine(err.Error())
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// artifacts are the binaries and the image of one test process.
type artifacts struct {
	dir   string // the build directory: cosmosd, cosmosctl, Dockerfile
	image string // cosmosd-e2e:<hash>
	ctl   string // the host's cosmosctl
}

var build struct {
	once sync.Once
	art  *artifacts
	err  error
}

// buildArtifacts builds the static binaries and the image once per test
// process. The image tag is a hash of the binaries, so an unchanged build
// reuses the cached image.
func buildArtifacts() (*artifacts, error) {
	build.once.Do(func() { build.art, build.err = doBuild() })
	return build.art, build.err
}

// removeArtifacts deletes the build directory (the image stays cached).
func removeArtifacts() {
	if build.art != nil {
		_ = os.RemoveAll(build.art.dir)
	}
}

func doBuild() (*artifacts, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cosmosd-e2e-build-")
	if err != nil {
		return nil, err
	}
	art := &artifacts{dir: dir, ctl: filepath.Join(dir, "cosmosctl")}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := sha256.New()
	for _, bin := range []string{"cosmosd", "cosmosctl"} {
		cmd := exec.CommandContext(ctx, goTool(), "build", "-trimpath", "-o", filepath.Join(dir, bin), "./cmd/"+bin)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("go build ./cmd/%s: %w\n%s", bin, err, out)
		}
		f, err := os.Open(filepath.Join(dir, bin))
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	art.image = imageRepo + ":" + hex.EncodeToString(h.Sum(nil))[:16]
	if _, err := docker(ctx, "image", "inspect", "--format", "{{.Id}}", art.image); err == nil {
		return art, nil
	}
	dockerfile := "FROM scratch\nCOPY cosmosd cosmosctl /\nENTRYPOINT [\"/cosmosd\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return nil, err
	}
	if _, err := docker(ctx, "build", "-q", "-t", art.image, dir); err != nil {
		return nil, err
	}
	// Keep one cached image: remove other tags no container uses.
	if tags, err := docker(ctx, "images", imageRepo, "--format", "{{.Repository}}:{{.Tag}}"); err == nil {
		for _, tag := range strings.Fields(tags) {
			if tag != art.image {
				_, _ = docker(ctx, "rmi", tag)
			}
		}
	}
	return art, nil
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

// randomID returns n random bytes in hex.
func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createNetwork creates a bridge network on a random 10.x.y.0/24 that no
// route of the host and no other Docker network uses, and returns the
// subnet's first three octets ("10.x.y.").
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
		// Paused containers cannot be removed while frozen on some
		// engines; unpause first.
		for _, id := range strings.Fields(ids) {
			_, _ = dockerT("unpause", id)
		}
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
