package nemesis

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

	"github.com/cosmosd/cosmosd/test/dockertest"
)

// This file builds the binaries and the image of a test process, as
// test/e2e does: static binaries in an image FROM scratch, tagged with a
// hash of the binaries so an unchanged build reuses the cached image.

const (
	// suite labels every Docker resource of the suite (see dockertest).
	suite = "cosmosd-nemesis"
	// imageRepo is the repository of the cached image.
	imageRepo = "cosmosd-nemesis"
)

// artifacts are the binaries and the image of one test process.
type artifacts struct {
	dir   string // the build directory: cosmosd, cosmosctl, Dockerfile
	image string // cosmosd-nemesis:<hash>
	ctl   string // the host's cosmosctl
}

var build struct {
	once sync.Once
	art  *artifacts
	err  error
}

// buildArtifacts builds the static binaries and the image once per test
// process.
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
	root, err := dockertest.ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cosmosd-nemesis-build-")
	if err != nil {
		return nil, err
	}
	art := &artifacts{dir: dir, ctl: filepath.Join(dir, "cosmosctl")}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h := sha256.New()
	for _, bin := range []string{"cosmosd", "cosmosctl"} {
		cmd := exec.CommandContext(ctx, dockertest.GoTool(), "build", "-trimpath", "-o", filepath.Join(dir, bin), "./cmd/"+bin)
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
	if _, err := dockertest.Docker(ctx, "image", "inspect", "--format", "{{.Id}}", art.image); err == nil {
		return art, nil
	}
	dockerfile := "FROM scratch\nCOPY cosmosd cosmosctl /\nENTRYPOINT [\"/cosmosd\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return nil, err
	}
	if _, err := dockertest.Docker(ctx, "build", "-q", "-t", art.image, dir); err != nil {
		return nil, err
	}
	// Keep one cached image: remove other tags no container uses.
	if tags, err := dockertest.Docker(ctx, "images", imageRepo, "--format", "{{.Repository}}:{{.Tag}}"); err == nil {
		for _, tag := range strings.Fields(tags) {
			if tag != art.image {
				_, _ = dockertest.Docker(ctx, "rmi", tag)
			}
		}
	}
	return art, nil
}
