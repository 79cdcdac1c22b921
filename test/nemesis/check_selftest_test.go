package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
)

// The checks must catch what they are for: these histories are written
// by hand, run without Docker, and each bad one must be reported with the
// violation it contains (a suite whose checker accepts everything would
// report 0 violations forever).

// at builds an operation from call to return, in milliseconds.
func at(call, ret int, o op) *op {
	o.Call, o.Return = time.Duration(call)*time.Millisecond, time.Duration(ret)*time.Millisecond
	return &o
}

func TestCheckers(t *testing.T) {
	cases := []struct {
		name string
		ops  []*op
		want string // a violation containing this; "" for none
		// notWant must be in no violation: a fault reported once is not
		// reported again as its consequences.
		notWant string
	}{
		{"registers: a clean history", []*op{
			at(0, 10, op{Kind: regInsert, Key: 1, Value: 5, Applied: true}),
			at(20, 30, op{Kind: regCAS, Key: 1, Expect: 5, Value: 6, Applied: true}),
			at(25, 35, op{Client: 1, Kind: regRead, Key: 1, Exists: true, Cur: 6}),
			at(40, 50, op{Kind: regCAS, Key: 1, Expect: 5, Value: 7, CurKnown: true, Exists: true, Cur: 6}),
			at(40, 50, op{Client: 1, Kind: regInsert, Key: 1, Value: 8, CurKnown: true, Exists: true, Cur: 6}),
			at(60, 70, op{Kind: regRead, Key: 1, Exists: true, Cur: 6, Final: true}),
		}, "", ""},
		{"registers: a stale read", []*op{
			at(0, 10, op{Kind: regInsert, Key: 1, Value: 5, Applied: true}),
			at(20, 30, op{Kind: regCAS, Key: 1, Expect: 5, Value: 6, Applied: true}),
			at(40, 50, op{Client: 1, Kind: regRead, Key: 1, Exists: true, Cur: 5}),
		}, "register 1 is not linearizable", ""},
		{"registers: a CAS that applied but answered [applied] = false", []*op{
			at(0, 10, op{Kind: regInsert, Key: 2, Value: 5, Applied: true}),
			at(20, 30, op{Kind: regCAS, Key: 2, Expect: 5, Value: 6, CurKnown: true, Exists: true, Cur: 5}),
			at(40, 50, op{Client: 1, Kind: regRead, Key: 2, Exists: true, Cur: 6}),
		}, "register 2 is not linearizable", ""},
		{"registers: a CAS that applied and answered [applied] = false with its own value", []*op{
			at(0, 10, op{Kind: regInsert, Key: 4, Value: 5, Applied: true}),
			at(20, 30, op{Kind: regCAS, Key: 4, Expect: 5, Value: 6, CurKnown: true, Exists: true, Cur: 6}),
			at(40, 50, op{Client: 1, Kind: regRead, Key: 4, Exists: true, Cur: 6}),
		}, "answered [applied] = false with its own value", "not linearizable"},
		{"registers: an unknown CAS that took effect later", []*op{
			at(0, 10, op{Kind: regInsert, Key: 1, Value: 5, Applied: true}),
			at(20, 30, op{Kind: regCAS, Key: 1, Expect: 5, Value: 6, Outcome: unknown}),
			at(40, 50, op{Client: 1, Kind: regRead, Key: 1, Exists: true, Cur: 5}),
			at(60, 70, op{Client: 1, Kind: regRead, Key: 1, Exists: true, Cur: 6}),
		}, "", ""},
		{"registers: a write that failed for sure took effect", []*op{
			at(0, 10, op{Kind: regInsert, Key: 3, Value: 5, Outcome: failed}),
			at(20, 30, op{Client: 1, Kind: regRead, Key: 3, Exists: true, Cur: 5}),
		}, "although its write failed for sure", "not linearizable"},
		{"lists: an append that failed for sure took effect", []*op{
			at(0, 10, op{Kind: listAppend, Key: 6, Value: 1, Outcome: failed}),
			at(20, 30, op{Kind: listAppend, Key: 6, Value: 2}),
			at(40, 50, op{Kind: listRead, Key: 6, List: []int{1, 2}, Final: true}),
		}, "although its append failed for sure", "not linearizable"},
		{"lists: a clean history with an unknown append nobody saw", []*op{
			at(0, 10, op{Kind: listAppend, Key: 1, Value: 1}),
			at(5, 15, op{Client: 1, Kind: listAppend, Key: 1, Value: 2}),
			at(20, 30, op{Kind: listAppend, Key: 1, Value: 3, Outcome: unknown}),
			at(20, 30, op{Client: 1, Kind: listRead, Key: 1, List: []int{2, 1}}),
			at(40, 50, op{Kind: listRead, Key: 1, List: []int{2, 1}, Final: true}),
		}, "", ""},
		{"lists: an element applied twice", []*op{
			at(0, 10, op{Kind: listAppend, Key: 1, Value: 1, Outcome: unknown}),
			at(20, 30, op{Kind: listRead, Key: 1, List: []int{1, 1}, Final: true}),
		}, "appears twice", "not linearizable"},
		{"lists: an acknowledged append lost", []*op{
			at(0, 10, op{Kind: listAppend, Key: 4, Value: 1}),
			at(20, 30, op{Kind: listRead, Key: 4, List: []int{}, Final: true}),
		}, "missing from the final read", ""},
		{"lists: a read that misses an earlier append", []*op{
			at(0, 10, op{Kind: listAppend, Key: 5, Value: 1}),
			at(20, 30, op{Kind: listRead, Key: 5, List: nil}),
			at(40, 50, op{Kind: listRead, Key: 5, List: []int{1}, Final: true}),
		}, "list 5 is not linearizable", ""},
		{"counters: within bounds", []*op{
			at(0, 10, op{Kind: counterAdd, Key: 1, Value: 1}),
			at(0, 10, op{Client: 1, Kind: counterAdd, Key: 1, Value: 1, Outcome: unknown}),
			at(5, 15, op{Client: 2, Kind: counterAdd, Key: 1, Value: 1, Outcome: failed}),
			at(20, 30, op{Kind: counterRead, Key: 1, Count: 2, Final: true}),
		}, "", ""},
		{"counters: an increment counted twice", []*op{
			at(0, 10, op{Kind: counterAdd, Key: 2, Value: 1}),
			at(20, 30, op{Kind: counterRead, Key: 2, Count: 2, Final: true}),
		}, "read 2 outside [1, 1]", ""},
		{"counters: a failed increment counted", []*op{
			at(0, 10, op{Kind: counterAdd, Key: 3, Value: 1, Outcome: failed}),
			at(20, 30, op{Kind: counterRead, Key: 3, Count: 1, Final: true}),
		}, "read 1 outside [0, 0]", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := check(tc.ops, "")
			all := strings.Join(v.violations, "\n")
			if tc.want == "" && len(v.violations) > 0 {
				t.Fatalf("violations in a correct history:\n%s", all)
			}
			if tc.want != "" && !strings.Contains(all, tc.want) {
				t.Fatalf("want a violation containing %q, got:\n%s", tc.want, all)
			}
			if tc.notWant != "" && strings.Contains(all, tc.notWant) {
				t.Fatalf("want no violation containing %q, got:\n%s", tc.notWant, all)
			}
			if len(v.unchecked) > 0 {
				t.Fatalf("unchecked: %v", v.unchecked)
			}
		})
	}
}

// Errors that prove nothing was written are failures; the others leave
// the outcome unknown.
func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want outcome
		code string
	}{
		{nil, ok, ""},
		{codeErr(gocql.ErrCodeUnavailable), failed, "0x1000 Unavailable"},
		{codeErr(gocql.ErrCodeOverloaded), failed, "0x1001 Overloaded"},
		{codeErr(gocql.ErrCodeWriteTimeout), unknown, "0x1100 WriteTimeout"},
		{codeErr(gocql.ErrCodeServer), unknown, "0x0000 ServerError"},
		{fmt.Errorf("wrapped: %w", codeErr(gocql.ErrCodeInvalid)), failed, "0x2200 Invalid"},
		{context.DeadlineExceeded, unknown, "client timeout"},
		{fmt.Errorf("read: %w", io.EOF), unknown, "connection error"},
		{&net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, unknown, "connection error"},
		{gocql.ErrNoConnections, failed, "no connection"},
		{gocql.ErrTimeoutNoResponse, unknown, "driver timeout"},
		{errors.New("something else"), unknown, "other: something else"},
	}
	for _, tc := range cases {
		got, code := classify(tc.err)
		if got != tc.want || !strings.HasPrefix(code, tc.code) {
			t.Errorf("classify(%v) = %s %q, want %s %q", tc.err, got, code, tc.want, tc.code)
		}
	}
}

// codeErr is an error frame of a given code, as gocql returns them.
type codeErr int

func (c codeErr) Code() int       { return int(c) }
func (c codeErr) Message() string { return "test" }
func (c codeErr) Error() string   { return fmt.Sprintf("error 0x%04X", int(c)) }
