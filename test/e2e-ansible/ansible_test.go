package e2eansible

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/test/blackbox"
)

// This file runs the playbooks of deploy/ansible against the hosts: the
// inventory, ansible-playbook itself and its PLAY RECAP.

// recap is one host's line of a PLAY RECAP.
type recap struct {
	OK, Changed, Unreachable, Failed, Skipped, Rescued, Ignored int
}

var recapLine = regexp.MustCompile(`^(\S+)\s+:\s+((?:[a-z]+=\d+\s*)+)$`)

// parseRecap reads the PLAY RECAP of ansible-playbook's output: host name
// to counts. Lines before the last "PLAY RECAP" header are ignored.
func parseRecap(out string) (map[string]recap, error) {
	i := strings.LastIndex(out, "PLAY RECAP")
	if i < 0 {
		return nil, fmt.Errorf("no PLAY RECAP in the output")
	}
	res := map[string]recap{}
	for _, line := range strings.Split(out[i:], "\n")[1:] {
		line = strings.TrimSpace(line)
		m := recapLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var r recap
		for _, kv := range strings.Fields(m[2]) {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("recap line %q: %w", line, err)
			}
			switch k {
			case "ok":
				r.OK = n
			case "changed":
				r.Changed = n
			case "unreachable":
				r.Unreachable = n
			case "failed":
				r.Failed = n
			case "skipped":
				r.Skipped = n
			case "rescued":
				r.Rescued = n
			case "ignored":
				r.Ignored = n
			}
		}
		res[m[1]] = r
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("PLAY RECAP lists no host")
	}
	return res, nil
}

func TestParseRecap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		out     string
		want    map[string]recap
		wantErr bool
	}{
		{
			name: "two hosts",
			out: `TASK [x] ***
ok: [node-1]

PLAY RECAP *********************************************************************
node-1                     : ok=15   changed=0    unreachable=0    failed=0    skipped=1    rescued=0    ignored=0   
node-4                     : ok=10   changed=6    unreachable=1    failed=2    skipped=0    rescued=3    ignored=4   

Playbook run took 0 days, 0 hours, 0 minutes, 53 seconds
`,
			want: map[string]recap{
				"node-1": {OK: 15, Skipped: 1},
				"node-4": {OK: 10, Changed: 6, Unreachable: 1, Failed: 2, Rescued: 3, Ignored: 4},
			},
		},
		{
			name: "only the last recap counts",
			out:  "PLAY RECAP ***\na : ok=1 changed=1\n\nPLAY RECAP ***\nb : ok=2 changed=0\n",
			want: map[string]recap{"b": {OK: 2}},
		},
		{name: "no recap", out: "ERROR! the playbook could not be found", wantErr: true},
		{name: "empty recap", out: "PLAY RECAP ***\n\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRecap(tc.out)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// inventory describes the hosts given to Ansible.
type inventory struct {
	deb     string  // cosmosd_deb
	etcd    []*Host // group etcd
	cosmosd []*Host // group cosmosd
	extra   string  // more YAML under all.vars, indented by 4 spaces
}

// write writes the inventory as YAML. The hosts are containers reached
// with the community.docker.docker connection plugin; everything else is
// what an inventory of real hosts holds.
func (inv inventory) write(path string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by the e2e-ansible test.\nall:\n  vars:\n")
	fmt.Fprintf(&b, "    ansible_connection: community.docker.docker\n    ansible_python_interpreter: /usr/bin/python3\n")
	fmt.Fprintf(&b, "    cosmosd_deb: %q\n", inv.deb)
	b.WriteString(inv.extra)
	b.WriteString("  children:\n    etcd:\n      hosts:\n")
	for _, h := range inv.etcd {
		fmt.Fprintf(&b, "        %s:\n", h.Host)
	}
	b.WriteString("    cosmosd:\n      hosts:\n")
	for _, h := range inv.cosmosd {
		fmt.Fprintf(&b, "        %s:\n          ansible_host: %s\n          private_address: %s\n          cosmosd_zone: %s\n          cosmosd_rack: %s\n",
			h.Host, h.Name, h.IP, h.Zone, h.Rack)
	}
	// Hosts only in the etcd group still need their connection.
	for _, h := range inv.etcd {
		if !containsHost(inv.cosmosd, h) {
			return fmt.Errorf("etcd host %s is not a cosmosd host; the test's inventory puts connection variables on cosmosd hosts only", h.Host)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func containsHost(hs []*Host, h *Host) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

// playbook runs one playbook of deploy/ansible with the inventory and
// returns the PLAY RECAP. The whole output goes to the run's log
// directory; a failed run fails the test with the output's tail.
func (c *Cluster) playbook(t *testing.T, inv string, name string, args ...string) map[string]recap {
	t.Helper()
	c.runs++
	logPath := filepath.Join(c.logs, fmt.Sprintf("%02d-%s.log", c.runs, strings.TrimSuffix(name, ".yml")))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir := filepath.Join(c.root, "deploy", "ansible")
	full := append([]string{"-i", inv, name}, args...)
	cmd := exec.CommandContext(ctx, "ansible-playbook", full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANSIBLE_CONFIG="+filepath.Join(dir, "ansible.cfg"), "ANSIBLE_NOCOLOR=1",
		"ANSIBLE_FORCE_COLOR=0", "ANSIBLE_STDOUT_CALLBACK=default", "ANSIBLE_RETRY_FILES_ENABLED=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start).Round(100 * time.Millisecond)
	header := fmt.Sprintf("$ cd deploy/ansible && ansible-playbook %s\n", strings.Join(full, " "))
	if werr := os.WriteFile(logPath, []byte(header+out.String()), 0o644); werr != nil {
		t.Logf("write %s: %v", logPath, werr)
	}
	res, perr := parseRecap(out.String())
	if err != nil || perr != nil {
		t.Fatalf("ansible-playbook %s failed after %s: %v %v (full output in %s)\n%s", strings.Join(full, " "), took, err, perr, logPath, blackbox.Tail(out.String(), 80))
	}
	t.Logf("ansible-playbook %s: %s in %s (log %s)", strings.Join(append([]string{name}, args...), " "), formatRecap(res), took, logPath)
	return res
}

func formatRecap(res map[string]recap) string {
	var hosts []string
	for h := range res {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var parts []string
	for _, h := range hosts {
		r := res[h]
		parts = append(parts, fmt.Sprintf("%s ok=%d changed=%d failed=%d", h, r.OK, r.Changed, r.Failed))
	}
	return strings.Join(parts, ", ")
}

// requireUnchanged fails unless the recap names every host of hosts and
// every host it names (localhost of a preliminary play included) reports
// changed=0, failed=0 and unreachable=0.
func requireUnchanged(t *testing.T, what string, res map[string]recap, hosts ...*Host) {
	t.Helper()
	for _, h := range hosts {
		if _, ok := res[h.Host]; !ok {
			t.Errorf("%s: PLAY RECAP does not list %s: %s", what, h.Host, formatRecap(res))
		}
	}
	for h, r := range res {
		if r.Changed != 0 || r.Failed != 0 || r.Unreachable != 0 {
			t.Errorf("%s: %s reports changed=%d failed=%d unreachable=%d, want all 0", what, h, r.Changed, r.Failed, r.Unreachable)
		}
	}
}
