package exec

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: every
// cluster a test starts (exectest, metakv.Mem, Meta's watch, the
// partitions' consensus groups) must be closed by its Cleanup.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
