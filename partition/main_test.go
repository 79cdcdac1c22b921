package partition

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitBriefly yields while polling for an asynchronous effect.
func waitBriefly() { time.Sleep(time.Millisecond) }
