package ctl

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// Build identity stamped into the test binary, as make dist does, so the
// tests also check the -X paths.
const (
	testVersion   = "1.2.3-test"
	testCommit    = "abc1234"
	testBuildDate = "2025-01-02T03:04:05Z"
)

// binary is the path of the cosmosctl built by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cosmosctl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "cosmosctl")
	ldflags := fmt.Sprintf("-X github.com/cosmosd/cosmosd/ctl.Version=%s -X github.com/cosmosd/cosmosd/ctl.Commit=%s -X github.com/cosmosd/cosmosd/ctl.BuildDate=%s",
		testVersion, testCommit, testBuildDate)
	build := exec.Command("go", "build", "-ldflags", ldflags, "-o", binary, "./cmd/cosmosctl")
	build.Dir = ".." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build cosmosctl: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			return 1
		}
	}
	return code
}
