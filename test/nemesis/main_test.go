package nemesis

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cosmosd/cosmosd/test/dockertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.RemoveBuilds()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// settings are the run's knobs, from the environment (see the package
// documentation).
type settings struct {
	seed     int64
	duration time.Duration // of the fault phase
	kinds    []string      // fault kinds allowed
	logs     bool          // print the containers' log tails even on success
	report   string        // also write the markdown report here
}

// defaultDuration is the fault phase of the short mode (make test).
const defaultDuration = 3 * time.Minute

// requireDocker skips the test, with the reason, when the suite cannot or
// should not run.
func requireDocker(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("nemesis: skipped in -short mode (the run takes minutes)")
	}
	if v := os.Getenv("COSMOSD_NEMESIS"); v == "0" || v == "false" || v == "off" {
		t.Skip("nemesis: skipped because COSMOSD_NEMESIS=" + v)
	}
	if why := dockertest.Problem(); why != "" {
		t.Skip("nemesis: needs Docker: " + why)
	}
}

// loadSettings reads COSMOSD_NEMESIS_*; a malformed value fails the test
// rather than running something else than asked.
func loadSettings(t *testing.T) settings {
	t.Helper()
	s := settings{seed: time.Now().UnixNano() % 1_000_000_000, duration: defaultDuration, kinds: allKinds()}
	if v := os.Getenv("COSMOSD_NEMESIS_SEED"); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("COSMOSD_NEMESIS_SEED=%q: %v", v, err)
		}
		s.seed = seed
	}
	if v := os.Getenv("COSMOSD_NEMESIS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("COSMOSD_NEMESIS_DURATION=%q: want a positive duration (%v)", v, err)
		}
		s.duration = d
	}
	if v := os.Getenv("COSMOSD_NEMESIS_FAULTS"); v != "" {
		s.kinds = nil
		for _, k := range strings.Split(v, ",") {
			k = strings.TrimSpace(k)
			if !isKind(k) {
				t.Fatalf("COSMOSD_NEMESIS_FAULTS: unknown fault kind %q; kinds: %s", k, strings.Join(allKinds(), ","))
			}
			s.kinds = append(s.kinds, k)
		}
	}
	s.logs = os.Getenv("COSMOSD_NEMESIS_LOGS") == "1"
	s.report = os.Getenv("COSMOSD_NEMESIS_REPORT")
	return s
}
