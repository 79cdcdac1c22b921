package e2eansible

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosmosd/cosmosd/test/dockertest"
)

// TestHealthCheck runs the role's cosmosd-health, the gate between two
// restarts of a roll, against canned cosmosctl answers: it must pass only a
// cluster where every partition has 4 caught-up, reachable voting replicas
// on up nodes and a leader.
func TestHealthCheck(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3")
	}
	root, err := dockertest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "deploy", "ansible", "roles", "cosmosd", "files", "cosmosd-health")

	type rep struct {
		node      int
		learner   bool
		reachable bool
		applied   int
	}
	ok4 := func(nodes ...int) []rep {
		var r []rep
		for _, n := range nodes {
			r = append(r, rep{node: n, reachable: true, applied: 1000})
		}
		return r
	}
	nodesUp := map[string]string{"node-1": "up", "node-2": "up", "node-3": "up", "node-4": "up", "node-5": "up"}
	with := func(m map[string]string, k, v string) map[string]string {
		out := map[string]string{}
		for a, b := range m {
			out[a] = b
		}
		out[k] = v
		return out
	}
	for _, tc := range []struct {
		name    string
		nodes   map[string]string // name -> state; node-N has id N
		parts   [][]rep
		leader  int // leader of every partition (0: none)
		readyz  int
		args    []string
		healthy bool
		why     string // in the output when not healthy
	}{
		{name: "healthy", nodes: nodesUp, parts: [][]rep{ok4(1, 2, 3, 4), ok4(2, 3, 4, 5)}, leader: 2, readyz: 200, healthy: true},
		{name: "no tables yet", nodes: nodesUp, readyz: 200, healthy: true},
		{name: "not ready", nodes: nodesUp, parts: [][]rep{ok4(1, 2, 3, 4)}, leader: 2, readyz: 503, why: "readyz answered 503"},
		{name: "this node suspect", nodes: with(nodesUp, "node-1", "suspect"), parts: [][]rep{ok4(2, 3, 4, 5)}, leader: 2, readyz: 200, why: "node node-1 is suspect"},
		{name: "replica on a node not up", nodes: with(nodesUp, "node-4", "suspect"), parts: [][]rep{ok4(1, 2, 3, 4)}, leader: 2, readyz: 200, why: "replicas on nodes not up: [4]"},
		{name: "unreachable replica", nodes: nodesUp, parts: [][]rep{{{1, false, true, 9}, {2, false, true, 9}, {3, false, true, 9}, {4, false, false, 0}}}, leader: 2, readyz: 200, why: "unreachable replicas on [4]"},
		{name: "no leader", nodes: nodesUp, parts: [][]rep{ok4(1, 2, 3, 4)}, readyz: 200, why: "no leader"},
		{name: "three replicas", nodes: nodesUp, parts: [][]rep{ok4(1, 2, 3)}, leader: 2, readyz: 200, why: "3 voters"},
		{name: "learner", nodes: nodesUp, parts: [][]rep{append(ok4(1, 2, 3, 4), rep{5, true, true, 1000})}, leader: 2, readyz: 200, why: "1 learners"},
		{name: "catching up", nodes: nodesUp, parts: [][]rep{{{1, false, true, 5000}, {2, false, true, 5000}, {3, false, true, 5000}, {4, false, true, 4000}}}, leader: 2, readyz: 200, why: "catching up: n4 at 4000 of 5000"},
		{name: "small lag is fine", nodes: nodesUp, parts: [][]rep{{{1, false, true, 5000}, {2, false, true, 5000}, {3, false, true, 5000}, {4, false, true, 4990}}}, leader: 2, readyz: 200, healthy: true},
		{name: "decommissioned and empty", nodes: with(nodesUp, "node-5", "decommissioned"), parts: [][]rep{ok4(1, 2, 3, 4)}, leader: 2, readyz: 503, args: []string{"--decommissioned=node-5"}, healthy: true},
		{name: "decommissioned but holding", nodes: with(nodesUp, "node-5", "decommissioned"), parts: [][]rep{ok4(2, 3, 4, 5)}, leader: 2, readyz: 200, args: []string{"--decommissioned=node-5"}, why: "still has a replica on node-5"},
		{name: "decommission not done", nodes: with(nodesUp, "node-5", "draining"), parts: [][]rep{ok4(1, 2, 3, 4)}, leader: 2, readyz: 200, args: []string{"--decommissioned=node-5"}, why: "node node-5 is draining"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var nodes []map[string]any
			for name, state := range tc.nodes {
				var id int
				fmt.Sscanf(name, "node-%d", &id)
				nodes = append(nodes, map[string]any{"id": id, "name": name, "state": state})
			}
			var parts []map[string]any
			for i, p := range tc.parts {
				var reps []map[string]any
				for _, r := range p {
					reps = append(reps, map[string]any{"node_id": r.node, "learner": r.learner, "reachable": r.reachable, "applied": r.applied})
				}
				parts = append(parts, map[string]any{"id": i + 1, "table": "ks.t", "replicas": reps, "leader_node": tc.leader})
			}
			writeJSON(t, filepath.Join(dir, "nodes.json"), nodes)
			writeJSON(t, filepath.Join(dir, "ring.json"), map[string]any{"partitions": parts})
			// A stand-in for cosmosctl: the last two arguments pick the
			// answer.
			fake := filepath.Join(dir, "cosmosctl")
			body := fmt.Sprintf("#!/bin/sh\neval last=\\${$#}\ncase \"$last\" in list) cat %s/nodes.json;; show) cat %s/ring.json;; *) exit 3;; esac\n", dir, dir)
			if err := os.WriteFile(fake, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tc.readyz) }))
			defer srv.Close()
			args := append([]string{script, "--node=node-1", "--timeout=0", "--interval=0", "--cosmosctl=" + fake, "--readyz=" + srv.URL}, tc.args...)
			out, err := exec.Command(python, args...).CombinedOutput()
			if tc.healthy != (err == nil) {
				t.Fatalf("healthy = %v (%v), want %v; output:\n%s", err == nil, err, tc.healthy, out)
			}
			if !tc.healthy && !strings.Contains(string(out), tc.why) {
				t.Errorf("output does not say %q:\n%s", tc.why, out)
			}
		})
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHealthCheckSecure runs cosmosd-health as the roles do on a secure
// cluster: --certs-dir goes to cosmosctl, and an https /readyz is verified
// against the directory's ca.crt (and fails without it).
func TestHealthCheckSecure(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3")
	}
	root, err := dockertest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "deploy", "ansible", "roles", "cosmosd", "files", "cosmosd-health")
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if err := os.Mkdir(certs, 0o700); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	// The run without the CA fails the handshake on purpose: no log of it.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(certs, "ca.crt"), caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(dir, "nodes.json"), []map[string]any{{"id": 1, "name": "node-1", "state": "up"}})
	writeJSON(t, filepath.Join(dir, "ring.json"), map[string]any{"partitions": []any{}})
	// The stand-in cosmosctl answers only when given --certs-dir DIR.
	fake := filepath.Join(dir, "cosmosctl")
	body := fmt.Sprintf("#!/bin/sh\ncase \" $* \" in *\" --certs-dir %s \"*) ;; *) echo \"no --certs-dir: $*\" >&2; exit 4;; esac\n"+
		"eval last=\\${$#}\ncase \"$last\" in list) cat %s/nodes.json;; show) cat %s/ring.json;; *) exit 3;; esac\n", certs, dir, dir)
	if err := os.WriteFile(fake, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) (string, error) {
		args := append([]string{script, "--node=node-1", "--replicas=1", "--timeout=0", "--interval=0", "--cosmosctl=" + fake, "--readyz=" + srv.URL + "/readyz"}, extra...)
		cmd := exec.Command(python, args...)
		cmd.Env = append(os.Environ(), "COSMOSCTL_CERTS_DIR=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("--certs-dir=" + certs); err != nil {
		t.Errorf("with --certs-dir: %v, want healthy:\n%s", err, out)
	}
	out, err := run()
	if err == nil || !strings.Contains(out, "readyz") {
		t.Errorf("without --certs-dir the https readyz must fail verification: %v\n%s", err, out)
	}
}
