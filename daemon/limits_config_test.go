package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// The request and connection limits have their documented defaults,
// idle_timeout: 0 disables the idle timeout (it is not replaced by the
// default), and flags override the file.
func TestLimitDefaultsFileAndFlags(t *testing.T) {
	var def Config
	def.SetDefaults()
	if def.MaxConnections != 4096 || def.MaxConnectionsPerClient != 512 || *def.IdleTimeout != 10*time.Minute ||
		def.MaxPartitionKeyRestrictionsPerQuery != 100 || def.MaxClusteringKeyRestrictionsPerQuery != 100 ||
		def.MaxMutationBytes != 16<<20 || def.PageMaxBytes != 8<<20 || def.MaxUnpagedResultBytes != 64<<20 ||
		def.MaxProvisionedThroughput != 1_000_000 || def.MaxPartitionsPerTable != 1024 {
		t.Fatalf("defaults %+v", def)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("idle_timeout: 0s\nmax_connections: 10\nmax_mutation_bytes: 1048576\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got Config
	app := App()
	app.Action = func(c *cli.Context) error {
		var err error
		got, err = configFrom(c)
		return err
	}
	if err := app.Run([]string{"cosmosd", "--config", path, "--name", "n", "--max-connections", "20", "--max-partitions-per-table", "8"}); err != nil {
		t.Fatal(err)
	}
	if *got.IdleTimeout != 0 || got.MaxConnections != 20 || got.MaxMutationBytes != 1<<20 || got.MaxPartitionsPerTable != 8 {
		t.Fatalf("merged config: idle %v, connections %d, mutation %d, partitions %d", *got.IdleTimeout, got.MaxConnections, got.MaxMutationBytes, got.MaxPartitionsPerTable)
	}
	// A small frame limit lowers the default mutation limit with it.
	small := Config{MaxFrameBytes: 1 << 20}
	small.SetDefaults()
	if small.MaxMutationBytes != 1<<20 {
		t.Fatalf("max_mutation_bytes %d with max_frame_bytes 1 MiB", small.MaxMutationBytes)
	}
	bad := Config{Name: "n", MaxFrameBytes: 1 << 20, MaxMutationBytes: 2 << 20, MaxConnections: -1, MaxProvisionedThroughput: -5}
	d := -time.Second
	bad.IdleTimeout = &d
	bad.SetDefaults()
	err := bad.Validate()
	for _, want := range []string{"max_mutation_bytes", "max_connections", "idle_timeout", "max_provisioned_throughput"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate did not report %s: %v", want, err)
		}
	}
}
