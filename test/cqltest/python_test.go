package cqltest

import (
	"context"
	"os"
	osexec "os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/test/testcluster"
)

// pythonPath is Debian's interpreter, which has python3-cassandra; the
// python3 first on PATH may be another installation without it.
const pythonPath = "/usr/bin/python3"

// TestPythonDriver runs test/python/test_driver.py (the DataStax Python
// driver) against a node of its own.
func TestPythonDriver(t *testing.T) {
	t.Parallel()
	needPython(t)
	c := testcluster.Start(t, testcluster.Options{})
	runPythonDriver(t, c)
}

// needPython skips the test unless Debian's python3-cassandra is there.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(pythonPath); err != nil {
		t.Skipf("%s not found: install python3 and python3-cassandra to run the Python driver test", pythonPath)
	}
	if out, err := osexec.Command(pythonPath, "-c", "import cassandra").CombinedOutput(); err != nil {
		t.Skipf("the cassandra module is missing for %s (apt-get install python3-cassandra): %v\n%s", pythonPath, err, out)
	}
}

// runPythonDriver runs test_driver.py against node 0 of c, with extra
// arguments (a login, TLS files).
func runPythonDriver(t *testing.T, c *testcluster.Cluster, args ...string) {
	t.Helper()
	host, port := c.CQLHostPort(0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args = append([]string{"../python/test_driver.py", "--host", host, "--port", strconv.Itoa(port)}, args...)
	out, err := osexec.CommandContext(ctx, pythonPath, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("Python driver test failed: %v\n%s", err, out)
	}
	t.Logf("Python driver test:\n%s", out)
}
