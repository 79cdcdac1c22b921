package dockertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Artifacts are the static binaries of one test process and the image
// FROM scratch that holds them.
type Artifacts struct {
	Dir   string // the build directory: cosmosd, cosmosctl, Dockerfile
	Image string // <repo>:<hash of the binaries>
	Ctl   string // the host's cosmosctl
}

type build struct {
	once sync.Once
	art  *Artifacts
	err  error
}

var builds struct {
	mu sync.Mutex
	m  map[string]*build
}

// Build builds the static binaries and the image of repo once per test
// process. The image tag is a hash of the binaries, so an unchanged build
// reuses the cached image; other tags of repo no container uses are
// removed, keeping one cached image per suite.
func Build(repo string) (*Artifacts, error) {
	builds.mu.Lock()
	if builds.m == nil {
		builds.m = map[string]*build{}
	}
	b := builds.m[repo]
	if b == nil {
		b = &build{}
		builds.m[repo] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() { b.art, b.err = buildImage(repo) })
	return b.art, b.err
}

// RemoveBuilds deletes the build directories of this process (the images
// stay cached).
func RemoveBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	for _, b := range builds.m {
		if b.art != nil {
			_ = os.RemoveAll(b.art.Dir)
		}
	}
}

func buildImage(repo string) (*Artifacts, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", repo+"-build-")
	if err != nil {
		return nil, err
	}
	art := &Artifacts{Dir: dir, Ctl: filepath.Join(dir, "cosmosctl")}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := sha256.New()
	for _, bin := range []string{"cosmosd", "cosmosctl"} {
		cmd := exec.CommandContext(ctx, GoTool(), "build", "-trimpath", "-o", filepath.Join(dir, bin), "./cmd/"+bin)
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
	art.Image = repo + ":" + hex.EncodeToString(h.Sum(nil))[:16]
	if _, err := Docker(ctx, "image", "inspect", "--format", "{{.Id}}", art.Image); err == nil {
		return art, nil
	}
	dockerfile := "FROM scratch\nCOPY cosmosd cosmosctl /\nENTRYPOINT [\"/cosmosd\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return nil, err
	}
	if _, err := Docker(ctx, "build", "-q", "-t", art.Image, dir); err != nil {
		return nil, err
	}
	if tags, err := Docker(ctx, "images", repo, "--format", "{{.Repository}}:{{.Tag}}"); err == nil {
		for _, tag := range strings.Fields(tags) {
			if tag != art.Image {
				_, _ = Docker(ctx, "rmi", tag)
			}
		}
	}
	return art, nil
}
