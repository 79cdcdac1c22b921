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
	if _, err := os.Stat(pythonPath); err != nil {
		t.Skipf("%s not found: install python3 and python3-cassandra to run the Python driver test", pythonPath)
	}
	if out, err := osexec.Command(pythonPath, "-c", "import cassandra").CombinedOutput(); err != nil {
		t.Skipf("the cassandra module is missing for %s (apt-get install python3-cassandra): %v\n%s", pythonPath, err, out)
	}
	c := testcluster.Start(t, testcluster.Options{})
	host, port := c.CQLHostPort(0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, pythonPath, "../python/test_driver.py", "--host", host, "--port", strconv.Itoa(port))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("Python driver test failed: %v\n%s", err, out)
	}
	t.Logf("Python driver test:\n%s", out)
}
