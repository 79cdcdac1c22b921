package blackbox

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// ringJSON builds `cosmosctl ring show -o json` partitions from
// "start end leader replica..." lines, a replica written n<ID> with an
// optional "l" (learner) or "?" (unreachable) suffix.
func ringJSON(t *testing.T, table string, lines ...string) []Partition {
	t.Helper()
	var parts []Partition
	for i, l := range lines {
		f := strings.Fields(l)
		raw := `{"id":` + itoa(int64(i+1)) + `,"table":"` + table + `","start":` + f[0] + `,"end":` + f[1] + `,"leader_node":` + f[2] + `,"replicas":[`
		for j, r := range f[3:] {
			if j > 0 {
				raw += ","
			}
			id := strings.TrimRight(strings.TrimPrefix(r, "n"), "l?")
			raw += `{"node_id":` + id + `,"learner":` + boolStr(strings.HasSuffix(r, "l")) + `,"reachable":` + boolStr(!strings.HasSuffix(r, "?")) + `}`
		}
		raw += "]}"
		var p Partition
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		parts = append(parts, p)
	}
	return parts
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestRingHealth(t *testing.T) {
	lo, hi := itoa(math.MinInt64), itoa(math.MaxInt64)
	live := map[uint64]bool{1: true, 2: true, 3: true, 4: true, 5: true}
	cases := []struct {
		name       string
		lines      []string
		needLeader bool
		want       string // substring of the problem; "" healthy
	}{
		{"one partition", []string{lo + " " + hi + " 1 n1 n2 n3 n4"}, true, ""},
		{"two partitions", []string{lo + " -1 1 n1 n2 n3 n4", "0 " + hi + " 5 n2 n3 n4 n5"}, true, ""},
		{"gap", []string{lo + " -1 1 n1 n2 n3 n4", "5 " + hi + " 5 n2 n3 n4 n5"}, false, "P2 starts at 5, want 0"},
		{"short end", []string{lo + " 7 1 n1 n2 n3 n4"}, false, "last partition ends at 7"},
		{"three replicas", []string{lo + " " + hi + " 1 n1 n2 n3"}, false, "P1[n1*,n2,n3]"},
		{"learner", []string{lo + " " + hi + " 1 n1 n2 n3 n4l"}, false, "n4(l)"},
		{"unreachable", []string{lo + " " + hi + " 1 n1 n2 n3 n4?"}, false, "n4?"},
		{"dead node", []string{lo + " " + hi + " 1 n1 n2 n3 n9"}, false, "n9"},
		{"same node twice", []string{lo + " " + hi + " 1 n1 n2 n3 n3"}, false, "n3,n3"},
		{"no leader allowed", []string{lo + " " + hi + " 0 n1 n2 n3 n4"}, false, ""},
		{"no leader required", []string{lo + " " + hi + " 0 n1 n2 n3 n4"}, true, "P1[n1,n2,n3,n4]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RingHealth{Live: live, NeedLeader: tc.needLeader}.Check(ringJSON(t, "ks.t", tc.lines...))
			if tc.want == "" && got != "" {
				t.Fatalf("healthy ring reported: %s", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("problem %q, want it to mention %q", got, tc.want)
			}
		})
	}
	if got := (RingHealth{Live: live}).Check(nil); got != "no partitions" {
		t.Fatalf("empty ring: %q", got)
	}
}

func TestReplicasMatchRing(t *testing.T) {
	parts := ringJSON(t, "ks.t", itoa(math.MinInt64)+" "+itoa(math.MaxInt64)+" 1 n1 n2 n3 n4")
	live := map[uint64]bool{1: true, 2: true, 3: true, 4: true, 5: true}
	nodes := []Node{{ID: 1, Name: "a", Replicas: 1}, {ID: 2, Name: "b", Replicas: 1}, {ID: 3, Name: "c", Replicas: 1},
		{ID: 4, Name: "d", Replicas: 1}, {ID: 5, Name: "e", Replicas: 0}}
	if got := ReplicasMatchRing(nodes, parts, live); got != "" {
		t.Fatalf("matching replicas reported: %s", got)
	}
	nodes[4].Replicas = 1 // a stale replica left behind on e
	if got := ReplicasMatchRing(nodes, parts, live); got != "e holds 1 replicas, the ring gives it 0" {
		t.Fatalf("stale replica: %q", got)
	}
	delete(live, 5) // a dead node's count is not judged
	if got := ReplicasMatchRing(nodes, parts, live); got != "" {
		t.Fatalf("dead node judged: %s", got)
	}
}

func TestTail(t *testing.T) {
	if got := Tail("a\nb\nc\n", 2); got != "[... 1 lines]\nb\nc" {
		t.Fatalf("Tail = %q", got)
	}
	if got := Tail(strings.Repeat("x", 500), 1); len(got) != 403 {
		t.Fatalf("long line kept %d bytes, want 400 and an ellipsis", len(got))
	}
}
