package metakv_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine of Mem, of the etcd store's watches and keep-alives and
// of the embedded etcd must be gone when the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
