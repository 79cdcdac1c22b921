package nemesis

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// The checks judge a history (see workload_test.go). Registers and lists
// go through porcupine, key by key; what porcupine cannot say clearly
// (an element applied twice, an acknowledged element lost, a write that
// failed for sure but took effect, a counter off its bounds) is checked
// directly. Every violation is reported with the operations that show it.

// regState is a register: absent, or holding v.
type regState struct {
	exists bool
	v      int
}

func (s regState) String() string { return regValue(s.exists, s.v) }

// registerModel is a compare-and-set register. An operation with an
// unknown outcome did what its statement does at the point it is
// linearized (its return is open-ended); its result is not checked.
var registerModel = porcupine.Model{
	Init: func() any { return regState{} },
	Step: func(state, input, _ any) (bool, any) {
		s, o := state.(regState), input.(*op)
		switch o.Kind {
		case regRead:
			return o.Exists == s.exists && (!s.exists || o.Cur == s.v), s
		case regInsert:
			switch {
			case o.Outcome == unknown && !s.exists:
				return true, regState{true, o.Value}
			case o.Outcome == unknown:
				return true, s
			case o.Applied:
				return !s.exists, regState{true, o.Value}
			}
			// Refused: the row exists, and it is the row returned.
			return s.exists && (!o.CurKnown || (o.Exists && o.Cur == s.v)), s
		case regCAS:
			match := s.exists && s.v == o.Expect
			switch {
			case o.Outcome == unknown && match:
				return true, regState{true, o.Value}
			case o.Outcome == unknown:
				return true, s
			case o.Applied:
				return match, regState{true, o.Value}
			}
			return !match && (!o.CurKnown || (o.Exists == s.exists && (!s.exists || o.Cur == s.v))), s
		}
		return false, s
	},
	DescribeOperation: func(input, _ any) string { return input.(*op).String() },
	DescribeState:     func(state any) string { return state.(regState).String() },
}

// listModel is a list that appends add to the end of and reads return
// whole; the state is the elements joined with commas.
var listModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, _ any) (bool, any) {
		s, o := state.(string), input.(*op)
		if o.Kind == listAppend {
			if s == "" {
				return true, strconv.Itoa(o.Value)
			}
			return true, s + "," + strconv.Itoa(o.Value)
		}
		return joinInts(o.List) == s, s
	},
	Hash: func(state any) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(string)))
		return h.Sum64()
	},
	DescribeOperation: func(input, _ any) string { return input.(*op).String() },
	DescribeState:     func(state any) string { return "[" + state.(string) + "]" },
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// verdict is what the checks found.
type verdict struct {
	violations []string // each with its evidence
	notes      []string // facts for the report
	unchecked  []string // keys porcupine ran out of time on
	visuals    []string // porcupine visualisations written
	// What was checked.
	registerOps, listOps, counterOps int
	unknownApplied, unknownDropped   int
}

func (v *verdict) violation(format string, args ...any) {
	v.violations = append(v.violations, fmt.Sprintf(format, args...))
}

// checkTimeout bounds porcupine's search per key.
const checkTimeout = 2 * time.Minute

// check runs every check on a history; visualisations of
// non-linearizable keys go to dir.
func check(ops []*op, dir string) *verdict {
	v := &verdict{}
	checkRegisters(v, ops, dir)
	checkLists(v, ops, dir)
	checkCounters(v, ops)
	return v
}

// byKey groups operations of some kinds by key, in call order.
func byKey(ops []*op, kinds ...opKind) map[int][]*op {
	m := map[int][]*op{}
	for _, o := range ops {
		for _, k := range kinds {
			if o.Kind == k {
				m[o.Key] = append(m[o.Key], o)
			}
		}
	}
	return m
}

func sortedKeys(m map[int][]*op) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// porcupineOps converts operations: an unknown outcome returns "never".
func porcupineOps(ops []*op) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, o := range ops {
		ret := int64(o.Return)
		if o.Outcome == unknown {
			ret = int64(forever)
		}
		out = append(out, porcupine.Operation{ClientId: o.Client, Input: o, Output: o, Call: int64(o.Call), Return: ret})
	}
	return out
}

// linearizable checks one key's operations and reports a violation with
// evidence (the end of the longest linearizable prefix porcupine found,
// and the operations it could not place) and a visualisation.
func linearizable(v *verdict, model porcupine.Model, what string, ops []*op, dir string) {
	res, info := porcupine.CheckOperationsVerbose(model, porcupineOps(ops), checkTimeout)
	switch res {
	case porcupine.Ok:
		return
	case porcupine.Unknown:
		v.unchecked = append(v.unchecked, fmt.Sprintf("%s (%d operations): porcupine gave up after %s", what, len(ops), checkTimeout))
		return
	}
	var evidence []string
	if parts := info.PartialLinearizationsOperations(); len(parts) > 0 {
		var longest []porcupine.Operation
		for _, l := range parts[0] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		in := map[*op]bool{}
		for _, o := range longest {
			in[o.Input.(*op)] = true
		}
		evidence = append(evidence, fmt.Sprintf("longest linearizable prefix: %d of %d operations; its last ones:", len(longest), len(ops)))
		for _, o := range longest[max(0, len(longest)-8):] {
			evidence = append(evidence, "  "+o.Input.(*op).String())
		}
		evidence = append(evidence, "first operations it cannot place after them:")
		n := 0
		for _, o := range ops {
			if !in[o] && n < 8 {
				evidence = append(evidence, "  "+o.String())
				n++
			}
		}
	}
	if dir != "" {
		path := filepath.Join(dir, strings.NewReplacer(" ", "-", "/", "-").Replace(what)+".html")
		if err := porcupine.VisualizePath(model, info, path); err == nil {
			v.visuals = append(v.visuals, path)
			evidence = append(evidence, "visualisation: "+path)
		}
	}
	v.violation("%s is not linearizable:\n    %s", what, strings.Join(evidence, "\n    "))
}

// checkRegisters: porcupine per key, after dropping writes that failed
// for sure and unknown writes whose value nobody observed (see learn: no
// client ever expects such a value, so they cannot explain anything).
func checkRegisters(v *verdict, ops []*op, dir string) {
	keyed := byKey(ops, regRead, regInsert, regCAS)
	for _, k := range sortedKeys(keyed) {
		keyOps := keyed[k]
		observed := map[int]bool{}
		for _, o := range keyOps {
			if o.Outcome == ok && o.Exists && (o.Kind == regRead || (!o.Applied && o.CurKnown)) {
				observed[o.Cur] = true
			}
		}
		written := map[int]*op{}
		var checked []*op
		for _, o := range keyOps {
			switch {
			case o.Kind == regRead && o.Outcome == ok:
				checked = append(checked, o)
			case o.Kind == regRead:
			case o.Outcome == failed && observed[o.Value]:
				// Reported here; porcupine then takes it as a write of
				// unknown outcome, so it judges the rest of the history.
				written[o.Value] = o
				v.violation("register %d: value %d was read although its write failed for sure: %s", k, o.Value, o)
				checked = append(checked, asUnknown(o))
			case o.Outcome == failed:
				written[o.Value] = o
			case o.Outcome == ok && !o.Applied && o.CurKnown && o.Exists && o.Cur == o.Value:
				// Refused, yet the row holds its own (unique) value: it
				// applied and answered [applied] = false, the signature
				// of a conditional write retried after it took effect.
				written[o.Value] = o
				v.violation("register %d: LWT took effect but answered [applied] = false with its own value as the current one: %s", k, o)
				checked = append(checked, asUnknown(o))
			case o.Outcome == unknown && !observed[o.Value]:
				written[o.Value] = o
				v.unknownDropped++
			default:
				written[o.Value] = o
				if o.Outcome == unknown {
					v.unknownApplied++
				}
				checked = append(checked, o)
			}
		}
		for val := range observed {
			if written[val] == nil {
				v.violation("register %d: value %d was observed but no client wrote it", k, val)
			}
		}
		v.registerOps += len(checked)
		linearizable(v, registerModel, fmt.Sprintf("register %d", k), checked, dir)
	}
}

// checkLists: no element twice in any read; every acknowledged append in
// the final read; no element of a failed append or of no append at all
// observed; then porcupine per key, without the unknown appends nobody
// observed (a list only grows, so an applied append shows in every later
// read).
func checkLists(v *verdict, ops []*op, dir string) {
	keyed := byKey(ops, listAppend, listRead)
	for _, k := range sortedKeys(keyed) {
		keyOps := keyed[k]
		appends := map[int]*op{}
		for _, o := range keyOps {
			if o.Kind == listAppend {
				appends[o.Value] = o
			}
		}
		observed := map[int]bool{}
		var final *op
		twice := map[int][]*op{} // element -> the reads that hold it twice
		var twiceOrder []int
		for _, o := range keyOps {
			if o.Kind != listRead || o.Outcome != ok {
				continue
			}
			if o.Final {
				final = o
			}
			seen := map[int]bool{}
			for _, x := range o.List {
				if seen[x] {
					if twice[x] == nil {
						twiceOrder = append(twiceOrder, x)
					}
					twice[x] = append(twice[x], o)
				}
				seen[x] = true
				observed[x] = true
			}
		}
		for _, x := range twiceOrder {
			v.violation("list %d: element %d appears twice (applied twice) in %d reads, the first %s; its append: %s", k, x, len(twice[x]), twice[x][0], appends[x])
		}
		for x := range observed {
			switch a := appends[x]; {
			case a == nil:
				v.violation("list %d: element %d was read but no client appended it", k, x)
			case a.Outcome == failed:
				v.violation("list %d: element %d was read although its append failed for sure: %s", k, x, a)
			}
		}
		if final == nil {
			v.notes = append(v.notes, fmt.Sprintf("list %d: no final read", k))
		} else {
			inFinal := map[int]bool{}
			for _, x := range final.List {
				inFinal[x] = true
			}
			for _, a := range keyOps {
				if a.Kind == listAppend && a.Outcome == ok && !inFinal[a.Value] {
					v.violation("list %d: acknowledged append of %d is missing from the final read %s: %s", k, a.Value, final, a)
				}
			}
		}
		var checked []*op
		for _, o := range keyOps {
			switch {
			case o.Kind == listAppend && o.Outcome == failed && observed[o.Value]:
				checked = append(checked, asUnknown(o)) // reported above
			case o.Outcome == failed, o.Kind == listRead && o.Outcome != ok:
			case o.Kind == listAppend && o.Outcome == unknown && !observed[o.Value]:
				v.unknownDropped++
			case o.Kind == listRead && len(twice) > 0:
				// Reported above; porcupine judges the rest of the
				// history with each element once.
				checked = append(checked, deduped(o))
			default:
				if o.Outcome == unknown {
					v.unknownApplied++
				}
				checked = append(checked, o)
			}
		}
		v.listOps += len(checked)
		linearizable(v, listModel, fmt.Sprintf("list %d", k), checked, dir)
	}
}

// checkCounters: every read of a counter lies between the increments
// acknowledged before it began and the increments (acknowledged or of
// unknown outcome) begun before it ended; increments that failed for sure
// count for nothing. For the final read that is acked <= n <= acked +
// unknown.
func checkCounters(v *verdict, ops []*op) {
	keyed := byKey(ops, counterAdd, counterRead)
	for _, k := range sortedKeys(keyed) {
		var adds []*op
		for _, o := range keyed[k] {
			if o.Kind == counterAdd {
				adds = append(adds, o)
			}
		}
		var acked, unknowns, fails int
		for _, a := range adds {
			switch a.Outcome {
			case ok:
				acked++
			case unknown:
				unknowns++
			default:
				fails++
			}
		}
		var bad []string
		for _, r := range keyed[k] {
			if r.Kind != counterRead || r.Outcome != ok {
				continue
			}
			v.counterOps++
			var low, high int64
			for _, a := range adds {
				if a.Outcome == ok && a.Return < r.Call {
					low++
				}
				if a.Outcome != failed && a.Call < r.Return {
					high++
				}
			}
			if r.Count < low || r.Count > high {
				bad = append(bad, fmt.Sprintf("read %d outside [%d, %d]: %s", r.Count, low, high, r))
			}
			if r.Final {
				v.notes = append(v.notes, fmt.Sprintf("counter %d: final value %d; increments acknowledged %d, unknown %d, failed %d", k, r.Count, acked, unknowns, fails))
			}
		}
		if len(bad) > 0 {
			// One violation per counter: once off, every later read is.
			var failedAdds []string
			for _, a := range adds {
				if a.Outcome == failed {
					failedAdds = append(failedAdds, a.String())
				}
			}
			v.violation("counter %d: %d reads outside [increments acknowledged before the read began, increments begun before it ended and not failed]; the first: %s; the last: %s; increments that failed for sure: %s",
				k, len(bad), bad[0], bad[len(bad)-1], strings.Join(failedAdds, "; "))
		}
	}
}

// deduped returns a copy of a list read with each element once, where it
// first appears.
func deduped(o *op) *op {
	c := *o
	c.List = nil
	seen := map[int]bool{}
	for _, x := range o.List {
		if !seen[x] {
			c.List = append(c.List, x)
			seen[x] = true
		}
	}
	return &c
}

// asUnknown returns a copy of a write with an unknown outcome.
func asUnknown(o *op) *op {
	c := *o
	c.Outcome = unknown
	return &c
}

// writeHistory saves the history as text, one operation a line.
func writeHistory(path string, ops []*op) error {
	var b strings.Builder
	for _, o := range ops {
		b.WriteString(o.format(true))
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
