package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// The shipped configuration file parses (unknown keys are errors) and is
// valid.
func TestShippedConfigLoads(t *testing.T) {
	var c Config
	if err := c.LoadFile("../systemd/cosmosd.yaml"); err != nil {
		t.Fatal(err)
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "/var/lib/cosmosd" || c.Consensus != "raft" || c.LogFormat != "json" || c.DeadAfter != 5*time.Minute {
		t.Fatalf("unexpected values %+v", c)
	}
}

func TestConfigRejectsUnknownKeysAndReportsAllProblems(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("data_dri: /x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var c Config
	if err := c.LoadFile(path); err == nil || !strings.Contains(err.Error(), "data_dri") {
		t.Fatalf("typo accepted: %v", err)
	}
	bad := Config{Name: "n", DataDir: "/d", CQLAddr: "nope", Consensus: "paxos", LogLevel: "loud", MaxFrameBytes: 1}
	bad.SetDefaults()
	err := bad.Validate()
	for _, want := range []string{"cql_addr", "consensus", "log_level", "max_frame_bytes"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate did not report %s: %v", want, err)
		}
	}
}

func TestFlagsOverrideFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("name: from-file\ndata_dir: /from/file\ndead_after: 1m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got Config
	app := App()
	app.Action = func(c *cli.Context) error {
		var err error
		got, err = configFrom(c)
		return err
	}
	if err := app.Run([]string{"cosmosd", "--config", path, "--data-dir", "/from/flag", "--label", "zone=z1", "--consensus", "local"}); err != nil {
		t.Fatal(err)
	}
	if got.Name != "from-file" || got.DataDir != "/from/flag" || got.DeadAfter != time.Minute || got.Labels["zone"] != "z1" || got.ReplicationFactor != 1 {
		t.Fatalf("merged config %+v", got)
	}
}

// Leader-lease reads are off unless the configuration turns them on, and
// the raft engine is given the setting.
func TestLeaseReadsSetting(t *testing.T) {
	var c Config
	c.SetDefaults()
	if raftConfig(&Node{cfg: c}).LeaseReads {
		t.Fatal("lease reads on by default")
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("lease_reads: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = Config{}
	if err := c.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	c.SetDefaults()
	if !raftConfig(&Node{cfg: c}).LeaseReads {
		t.Fatal("lease_reads: true left lease reads off")
	}
}
