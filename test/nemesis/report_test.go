package nemesis

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The report: what ran, what the faults did to the clients, and what the
// checks found, as markdown (the run directory keeps it; docs/
// reliability.md quotes the figures). For each fault kind it gives the
// slowest client operation while such a fault was on (from injection
// until afterglow after the heal or until the cluster recovered, but not
// beyond the next fault), the slowest one whose coordinator was
// not a victim (a client cannot avoid waiting for a host it talks to
// that froze; the cluster can avoid stalling requests on other hosts),
// and the error codes clients saw.

// kindStats aggregates the faults of one kind.
type kindStats struct {
	kind         string
	faults       int
	ops          int
	outcomes     [3]int
	slowest      *op
	slowestOther *op // coordinated by a node that was not a victim
	codes        map[string]int
	maxRecovery  time.Duration
	unrecovered  int
	// two-down: operations on partitions that had lost their quorum.
	noQuorumOps      int
	noQuorumCodes    map[string]int
	noQuorumSlowest  *op
	noQuorumFirstErr time.Duration // from the kills to the first error on them; -1 none
}

func slower(a, b *op) *op {
	if a == nil || b.latency() > a.latency() {
		return b
	}
	return a
}

// faultStats attributes every operation to the faults it overlapped.
func faultStats(ops []*op, events []*faultEvent) []*kindStats {
	byKind := map[string]*kindStats{}
	get := func(kind string) *kindStats {
		if byKind[kind] == nil {
			byKind[kind] = &kindStats{kind: kind, codes: map[string]int{}, noQuorumCodes: map[string]int{}, noQuorumFirstErr: -1}
		}
		return byKind[kind]
	}
	for _, ev := range events {
		s := get(ev.Kind)
		s.faults++
		if ev.Recovery != "" {
			s.unrecovered++
		} else {
			s.maxRecovery = max(s.maxRecovery, ev.Recovered-ev.Healed)
		}
	}
	// A fault is blamed from its start until its window ends, but not
	// beyond the next fault's start.
	ends := make([]time.Duration, len(events))
	for i, ev := range events {
		ends[i] = ev.windowEnd()
		if i+1 < len(events) {
			ends[i] = min(ends[i], events[i+1].Start)
		}
	}
	for _, o := range ops {
		if o.Final {
			continue
		}
		attributed := false
		for i, ev := range events {
			if o.Return < ev.Start || o.Call > ends[i] {
				continue
			}
			attributed = true
			s := get(ev.Kind)
			s.ops++
			s.outcomes[o.Outcome]++
			s.slowest = slower(s.slowest, o)
			if o.Coord != "" && !slices.ContainsFunc(append(o.Hosts, o.Coord), func(h string) bool { return slices.Contains(ev.VictimIPs, h) }) {
				// No attempt went to a victim: what the cluster made the
				// client wait, not what a frozen host did.
				s.slowestOther = slower(s.slowestOther, o)
			}
			if o.Code != "" {
				s.codes[o.Code]++
			}
			if ev.Kind == kindTwoDown && o.Call >= ev.Injected && o.Call < ev.HealStart && ev.inNoQuorum(o) {
				s.noQuorumOps++
				s.noQuorumSlowest = slower(s.noQuorumSlowest, o)
				code := o.Code
				if code == "" {
					code = "ok"
				}
				s.noQuorumCodes[code]++
				if o.Outcome != ok && (s.noQuorumFirstErr < 0 || o.Return-ev.Injected < s.noQuorumFirstErr) {
					s.noQuorumFirstErr = o.Return - ev.Injected
				}
			}
		}
		if !attributed {
			s := get("none")
			s.ops++
			s.outcomes[o.Outcome]++
			s.slowest = slower(s.slowest, o)
			s.slowestOther = slower(s.slowestOther, o)
			if o.Code != "" {
				s.codes[o.Code]++
			}
		}
	}
	var out []*kindStats
	for _, k := range append([]string{"none"}, allKinds()...) {
		if byKind[k] != nil {
			out = append(out, byKind[k])
		}
	}
	return out
}

func codesText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var s []string
	for _, k := range keys {
		s = append(s, fmt.Sprintf("%s ×%d", k, m[k]))
	}
	return strings.Join(s, ", ")
}

func opText(o *op) string {
	if o == nil {
		return "-"
	}
	s := fmt.Sprintf("%s %s at %s (%s", o.latency().Round(time.Millisecond), o.Kind, fmtDur(o.Call), o.Outcome)
	if o.Code != "" {
		s += ", " + o.Code
	}
	if o.Coord != "" {
		s += ", via " + o.Coord
	}
	return s + ")"
}

// runSummary is everything the report needs.
type runSummary struct {
	seed     int64
	duration time.Duration // of the fault phase
	elapsed  time.Duration // of the workload
	ops      []*op
	faults   []*faultEvent
	cluster  []*opEvent
	verdict  *verdict
	calm     string // how the final calm check went
	nodes    string // hosts and their node ids
}

// markdown renders the report.
func (r *runSummary) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("## Nemesis run, seed %d", r.seed)
	w("")
	w("Fault phase %s, workload %s; nodes %s.", r.duration, r.elapsed.Round(time.Second), r.nodes)
	w("")
	var kinds [7]int
	var outcomes [3]int
	for _, o := range r.ops {
		if !o.Final {
			kinds[o.Kind]++
			outcomes[o.Outcome]++
		}
	}
	w("- Operations: %d (registers: %d reads, %d inserts, %d CAS; lists: %d appends, %d reads; counters: %d increments, %d reads): %d ok, %d failed for sure, %d unknown.",
		outcomes[0]+outcomes[1]+outcomes[2], kinds[regRead], kinds[regInsert], kinds[regCAS], kinds[listAppend], kinds[listRead], kinds[counterAdd], kinds[counterRead],
		outcomes[ok], outcomes[failed], outcomes[unknown])
	faultCount := map[string]int{}
	for _, f := range r.faults {
		faultCount[f.Kind]++
	}
	var fk []string
	for _, k := range allKinds() {
		if faultCount[k] > 0 {
			fk = append(fk, fmt.Sprintf("%s %d", k, faultCount[k]))
		}
	}
	w("- Faults: %d (%s).", len(r.faults), strings.Join(fk, ", "))
	opCount, opFail := map[string]int{}, map[string]int{}
	for _, e := range r.cluster {
		opCount[e.Kind]++
		if e.Err != "" {
			opFail[e.Kind]++
		}
	}
	w("- Cluster operations: %d splits (%d failed), %d moves (%d failed), %d leader transfers (%d failed).",
		opCount["split"], opFail["split"], opCount["move"], opFail["move"], opCount["transfer"], opFail["transfer"])
	v := r.verdict
	w("- Checked: %d register operations and %d list operations with porcupine, %d counter reads; %d writes of unknown outcome took effect, %d never showed and were left out.",
		v.registerOps, v.listOps, v.counterOps, v.unknownApplied, v.unknownDropped)
	w("- Violations: %d. Unchecked (porcupine timed out): %d. Calm at the end: %s.", len(v.violations), len(v.unchecked), r.calm)
	w("")
	w("| fault | count | ops during | ok / failed / unknown | slowest op | slowest op via a non-victim coordinator | error codes seen | longest recovery |")
	w("|---|---|---|---|---|---|---|---|")
	for _, s := range faultStats(r.ops, r.faults) {
		rec := "-"
		if s.kind != "none" {
			rec = s.maxRecovery.Round(100 * time.Millisecond).String()
			if s.unrecovered > 0 {
				rec += fmt.Sprintf(" (%d not recovered)", s.unrecovered)
			}
		}
		count := fmt.Sprint(s.faults)
		if s.kind == "none" {
			count = "-"
		}
		w("| %s | %s | %d | %d / %d / %d | %s | %s | %s | %s |", s.kind, count, s.ops, s.outcomes[ok], s.outcomes[failed], s.outcomes[unknown],
			opText(s.slowest), opText(s.slowestOther), codesText(s.codes), rec)
	}
	for _, s := range faultStats(r.ops, r.faults) {
		if s.kind == kindTwoDown {
			first := "no error"
			if s.noQuorumFirstErr >= 0 {
				first = s.noQuorumFirstErr.Round(time.Millisecond).String()
			}
			w("")
			w("two-down: %d operations were sent to partitions with 2 of 4 replicas down (between the kills and the restarts): %s; slowest %s; first error %s after the kills.",
				s.noQuorumOps, codesText(s.noQuorumCodes), opText(s.noQuorumSlowest), first)
		}
	}
	w("")
	w("### Fault timeline")
	w("")
	for _, f := range r.faults {
		w("- %s %s: %s; healed at %s; %s%s", fmtDur(f.Start), f.Kind, f.Desc, fmtDur(f.Healed), recoveryText(f), notesText(f))
	}
	w("")
	w("### Cluster operations")
	w("")
	for _, e := range r.cluster {
		res := "done"
		if e.Err != "" {
			res = "failed: " + e.Err
		}
		w("- %s %s (%s): %s", fmtDur(e.Start), e.Desc, (e.End - e.Start).Round(100*time.Millisecond), res)
	}
	if len(v.notes) > 0 {
		w("")
		w("### Notes")
		w("")
		for _, n := range v.notes {
			w("- %s", n)
		}
	}
	if len(v.violations) > 0 {
		w("")
		w("### Violations")
		w("")
		for _, x := range v.violations {
			w("- %s", x)
		}
	}
	return b.String()
}
