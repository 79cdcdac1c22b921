package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The offset clock follows its file: a duration shifts the clock, a
// missing file means no shift, and an empty file or content that is not
// a duration keeps the previous offset (a writer may be caught half-way).
func TestOffsetClockFollowsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	c := newOffsetClock(path, slog.New(slog.DiscardHandler))
	steps := []struct {
		name    string
		content *string // nil removes the file
		want    time.Duration
	}{
		{"missing file", nil, 0},
		{"one hour ahead", ptr("1h"), time.Hour},
		{"garbage keeps the last offset", ptr("soon"), time.Hour},
		{"one hour behind, with a newline", ptr("-1h\n"), -time.Hour},
		{"empty file keeps the last offset", ptr(""), -time.Hour},
		{"zero", ptr("0s"), 0},
		{"minutes", ptr("90m"), 90 * time.Minute},
		{"file removed", nil, 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.content == nil {
				if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, []byte(*s.content), 0o600); err != nil {
				t.Fatal(err)
			}
			c.reload()
			before := time.Now()
			got := c.Now()
			after := time.Now()
			if got.Before(before.Add(s.want)) || got.After(after.Add(s.want)) {
				t.Fatalf("Now() = %s, want within [%s, %s] (offset %s)", got, before.Add(s.want), after.Add(s.want), s.want)
			}
		})
	}
}

// testing_clock_offset_file is a YAML key (and has no flag).
func TestClockOffsetFileFromYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("testing_clock_offset_file: /clock-offset\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var c Config
	if err := c.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if c.TestingClockOffsetFile != "/clock-offset" {
		t.Fatalf("testing_clock_offset_file = %q", c.TestingClockOffsetFile)
	}
}

func ptr(s string) *string { return &s }
