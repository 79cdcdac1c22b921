package securitytest

import (
	"os"
	"testing"

	"github.com/cosmosd/cosmosd/security"
)

func TestPKIMakesTheFiles(t *testing.T) {
	dir := t.TempDir()
	PKI(t, dir, "app")
	for _, f := range []string{security.NodeFiles(dir).Cert, security.NodeFiles(dir).Key, security.NodeFiles(dir).CA,
		security.ClientFiles(dir, "app").Cert, security.ClientFiles(dir, "app").Key} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("missing %s: %v", f, err)
		}
	}
}
