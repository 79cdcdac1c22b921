// Package scripts_test checks the release packaging (dist.sh): what an
// operator unpacks must hold everything the README promises.
package scripts_test

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The tarball and the Debian package carry the binaries, the health check
// script (executable), the systemd unit, the configuration, the README and
// the license (issue 17: README, LICENSE and cosmosd-health were missing).
// Stand-in binaries keep the test fast; the rest is dist.sh's real work.
func TestDistPackagesLayout(t *testing.T) {
	for _, tool := range []string{"tar", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	bins := t.TempDir()
	for _, b := range []string{"cosmosd", "cosmosctl"} {
		if err := os.WriteFile(filepath.Join(bins, b), []byte("#!/bin/sh\necho "+b+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dist := t.TempDir()
	cmd := exec.Command("./dist.sh", "v1.2.3", "abc1234", "2025-01-02T03:04:05Z")
	cmd.Env = append(os.Environ(), "DIST_DIR="+dist, "DIST_BINARIES="+bins)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dist.sh: %v\n%s", err, out)
	}

	tarball := filepath.Join(dist, "cosmosd-v1.2.3-linux-amd64.tar.gz")
	files := tarFiles(t, tarball)
	const root = "cosmosd-v1.2.3-linux-amd64/"
	for _, want := range []string{"bin/cosmosd", "bin/cosmosctl", "bin/cosmosd-health", "README.md", "LICENSE",
		"systemd/cosmosd.service", "etc/cosmosd/cosmosd.yaml"} {
		if _, ok := files[root+want]; !ok {
			t.Errorf("tarball lacks %s; it has %v", want, keys(files))
		}
	}
	if m := files[root+"bin/cosmosd-health"]; m&0o111 == 0 {
		t.Errorf("bin/cosmosd-health mode %o: not executable", m)
	}
	sameAs(t, tarball, root+"LICENSE", "../LICENSE")
	sameAs(t, tarball, root+"bin/cosmosd-health", "../deploy/ansible/roles/cosmosd/files/cosmosd-health")
	if lic, err := os.ReadFile("../LICENSE"); err != nil || !strings.Contains(string(lic), "Apache License") || !strings.Contains(string(lic), "Version 2.0, January 2004") {
		t.Errorf("LICENSE is not the Apache License 2.0 text (err %v)", err)
	}

	deb := filepath.Join(dist, "cosmosd_1.2.3_amd64.deb")
	listing, err := exec.Command("dpkg-deb", "-c", deb).CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg-deb -c: %v\n%s", err, listing)
	}
	for _, want := range []string{"./usr/bin/cosmosd", "./usr/bin/cosmosctl", "./usr/bin/cosmosd-health",
		"./usr/share/doc/cosmosd/README.md", "./usr/share/doc/cosmosd/copyright",
		"./lib/systemd/system/cosmosd.service", "./etc/cosmosd/cosmosd.yaml"} {
		found := false
		for _, l := range strings.Split(string(listing), "\n") {
			f := strings.Fields(l)
			if len(f) > 0 && f[len(f)-1] == want {
				found = true
				if strings.HasSuffix(want, "cosmosd-health") && !strings.HasPrefix(f[0], "-rwxr-xr-x") {
					t.Errorf("deb %s mode %s: not executable", want, f[0])
				}
			}
		}
		if !found {
			t.Errorf("deb lacks %s:\n%s", want, listing)
		}
	}
}

// tarFiles returns the regular files of a .tar.gz with their modes.
func tarFiles(t *testing.T, path string) map[string]int64 {
	t.Helper()
	files := map[string]int64{}
	eachTarFile(t, path, func(h *tar.Header, _ io.Reader) { files[h.Name] = h.Mode })
	return files
}

func eachTarFile(t *testing.T, path string, fn func(*tar.Header, io.Reader)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			fn(h, tr)
		}
	}
}

// sameAs checks that the tarball's file name has the content of the
// repository's file src.
func sameAs(t *testing.T, tarball, name, src string) {
	t.Helper()
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	eachTarFile(t, tarball, func(h *tar.Header, r io.Reader) {
		if h.Name != name {
			return
		}
		found = true
		got, err := io.ReadAll(r)
		if err != nil || string(got) != string(want) {
			t.Errorf("%s differs from %s (err %v)", name, src, err)
		}
	})
	if !found {
		t.Errorf("%s not in %s", name, tarball)
	}
}

func keys(m map[string]int64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
