package nemesis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gocql/gocql"
)

// The workload: clients on the host issue operations through gocql and
// record each one with the time it was invoked and returned and what came
// of it. The checks (check_test.go) judge the recorded history.

// Tables of the workload. The throughput gives each table 2 physical
// partitions to start from; the operator splits them further.
const (
	keyspace      = "nemesis"
	registerTable = keyspace + ".registers"
	listTable     = keyspace + ".lists"
	counterTable  = keyspace + ".counters"
	clockTable    = keyspace + ".clock"
)

var schemaCQL = []string{
	"CREATE KEYSPACE " + keyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
	"CREATE TABLE " + registerTable + " (k int PRIMARY KEY, v int) WITH cosmosdb_provisioned_throughput = 20000",
	"CREATE TABLE " + listTable + " (k int PRIMARY KEY, l list<int>) WITH cosmosdb_provisioned_throughput = 20000",
	"CREATE TABLE " + counterTable + " (k int PRIMARY KEY, n counter) WITH cosmosdb_provisioned_throughput = 20000",
	"CREATE TABLE " + clockTable + " (k int PRIMARY KEY, v int)",
}

// Workload shape: keys per table and client goroutines per workload.
// Few keys per client keep per-key histories busy (interesting) and
// many keys keep porcupine's per-key search small.
const (
	registerKeys    = 24
	listKeys        = 24
	counterKeys     = 4
	registerWorkers = 3
	listWorkers     = 2
	counterWorkers  = 1
)

// opKind is what an operation did.
type opKind uint8

const (
	regRead     opKind = iota // SELECT v at SERIAL or QUORUM
	regInsert                 // INSERT (k, v) IF NOT EXISTS
	regCAS                    // UPDATE SET v = Value IF v = Expect
	listAppend                // UPDATE SET l = l + [Value]
	listRead                  // SELECT l at QUORUM
	counterAdd                // UPDATE SET n = n + 1
	counterRead               // SELECT n at QUORUM
)

func (k opKind) String() string {
	return [...]string{"read", "insert", "cas", "append", "read-list", "incr", "read-counter"}[k]
}

func (k opKind) write() bool {
	return k == regInsert || k == regCAS || k == listAppend || k == counterAdd
}

// outcome is what a client knows about an operation's effect.
type outcome uint8

const (
	ok      outcome = iota // acknowledged
	failed                 // provably not applied (Unavailable, Overloaded, Invalid, never sent)
	unknown                // maybe applied: timeouts, WriteTimeout, lost connections
)

func (o outcome) String() string { return [...]string{"ok", "failed", "unknown"}[o] }

// op is one operation of the history. Times are since the run's start.
type op struct {
	Client int
	Kind   opKind
	Key    int
	Value  int  // written, inserted or appended
	Expect int  // CAS: the value it expects
	Serial bool // read at SERIAL (else QUORUM)
	Final  bool // a read of the final check, not of the workload

	Call, Return time.Duration
	Outcome      outcome
	Code         string // the error's class ("" when ok), see classify
	Err          string
	Coord        string   // the coordinator of the last attempt
	Hosts        []string // the coordinators of every attempt
	Attempts     int
	AttemptLog   string // each attempt's host and error, when there were several

	// Results.
	Applied  bool  // LWT: [applied]
	Exists   bool  // register read or refused LWT: the row exists
	CurKnown bool  // a refused LWT returned the current value
	Cur      int   // register read or refused LWT: the current value
	List     []int // list read
	Count    int64 // counter read
}

func (o *op) latency() time.Duration { return o.Return - o.Call }

func (o *op) String() string { return o.format(false) }

// format renders an operation; long lists are cut to their ends unless
// full.
func (o *op) format(full bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s..%s] c%d %s k=%d", fmtDur(o.Call), fmtDur(o.Return), o.Client, o.Kind, o.Key)
	switch o.Kind {
	case regInsert, listAppend:
		fmt.Fprintf(&b, " v=%d", o.Value)
	case regCAS:
		fmt.Fprintf(&b, " %d->%d", o.Expect, o.Value)
	case regRead:
		if o.Serial {
			b.WriteString(" SERIAL")
		}
	}
	fmt.Fprintf(&b, ": %s", o.Outcome)
	if o.Outcome == ok {
		switch o.Kind {
		case regInsert, regCAS:
			fmt.Fprintf(&b, " applied=%v", o.Applied)
			if !o.Applied && o.CurKnown {
				fmt.Fprintf(&b, " current=%s", regValue(o.Exists, o.Cur))
			}
		case regRead:
			fmt.Fprintf(&b, " = %s", regValue(o.Exists, o.Cur))
		case listRead:
			if full || len(o.List) <= 12 {
				fmt.Fprintf(&b, " = %v", o.List)
			} else {
				fmt.Fprintf(&b, " = %d elements %v ... %v", len(o.List), o.List[:3], o.List[len(o.List)-8:])
			}
		case counterRead:
			fmt.Fprintf(&b, " = %d", o.Count)
		}
	} else {
		fmt.Fprintf(&b, " (%s: %s)", o.Code, o.Err)
	}
	if o.Coord != "" {
		fmt.Fprintf(&b, " via %s", o.Coord)
	}
	if o.Attempts > 1 {
		fmt.Fprintf(&b, " (%d driver attempts: %s)", o.Attempts, o.AttemptLog)
	}
	return b.String()
}

func regValue(exists bool, v int) string {
	if !exists {
		return "none"
	}
	return fmt.Sprint(v)
}

func fmtDur(d time.Duration) string {
	if d == forever {
		return "∞"
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

// forever is the return time porcupine gets for an operation whose
// outcome is unknown: it may take effect at any time after its call.
const forever = time.Duration(1<<63 - 1)

// history collects operations from every client.
type history struct {
	t0 time.Time
	mu struct {
		sync.Mutex
		ops []*op
	}
}

func (h *history) since() time.Duration { return time.Since(h.t0) }

func (h *history) add(o *op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mu.ops = append(h.mu.ops, o)
}

// ops returns the operations so far, in call order.
func (h *history) ops() []*op {
	h.mu.Lock()
	out := append([]*op(nil), h.mu.ops...)
	h.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// classify tells what a client can conclude from an error: failed when
// the statement provably had no effect (Cassandra's Unavailable and
// Overloaded are answered before anything is written; request errors;
// the driver had no connection to send it on), unknown otherwise. The
// class names the CQL error code or the client-side failure.
func classify(err error) (outcome, string) {
	var re gocql.RequestError
	switch {
	case err == nil:
		return ok, ""
	case errors.As(err, &re):
		name := fmt.Sprintf("0x%04X %s", re.Code(), codeName(re.Code()))
		switch re.Code() {
		case gocql.ErrCodeUnavailable, gocql.ErrCodeOverloaded, gocql.ErrCodeBootstrapping,
			gocql.ErrCodeSyntax, gocql.ErrCodeUnauthorized, gocql.ErrCodeInvalid, gocql.ErrCodeConfig,
			gocql.ErrCodeAlreadyExists, gocql.ErrCodeUnprepared, gocql.ErrCodeProtocol, gocql.ErrCodeCredentials:
			return failed, name
		}
		return unknown, name
	case errors.Is(err, context.DeadlineExceeded):
		return unknown, "client timeout"
	case errors.Is(err, gocql.ErrTimeoutNoResponse):
		return unknown, "driver timeout"
	case errors.Is(err, gocql.ErrNoConnections):
		return failed, "no connection"
	case errors.Is(err, gocql.ErrConnectionClosed):
		return unknown, "connection closed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, new(*net.OpError)):
		return unknown, "connection error"
	}
	msg := err.Error()
	if len(msg) > 40 {
		msg = msg[:40] + "..."
	}
	return unknown, "other: " + msg
}

func codeName(code int) string {
	switch code {
	case gocql.ErrCodeServer:
		return "ServerError"
	case gocql.ErrCodeProtocol:
		return "ProtocolError"
	case gocql.ErrCodeUnavailable:
		return "Unavailable"
	case gocql.ErrCodeOverloaded:
		return "Overloaded"
	case gocql.ErrCodeBootstrapping:
		return "IsBootstrapping"
	case gocql.ErrCodeTruncate:
		return "TruncateError"
	case gocql.ErrCodeWriteTimeout:
		return "WriteTimeout"
	case gocql.ErrCodeReadTimeout:
		return "ReadTimeout"
	case gocql.ErrCodeReadFailure:
		return "ReadFailure"
	case gocql.ErrCodeWriteFailure:
		return "WriteFailure"
	case gocql.ErrCodeCASWriteUnknown:
		return "CASWriteUnknown"
	case gocql.ErrCodeInvalid:
		return "Invalid"
	case gocql.ErrCodeUnprepared:
		return "Unprepared"
	}
	return "Error"
}

// observer records the driver's attempts of one statement.
type observer struct {
	mu       sync.Mutex
	host     string   // of the last attempt
	hosts    []string // of every attempt
	attempts int
	log      []string
}

func (a *observer) ObserveQuery(_ context.Context, q gocql.ObservedQuery) {
	a.mu.Lock()
	defer a.mu.Unlock()
	host := "?"
	if q.Host != nil {
		host = q.Host.ConnectAddress().String()
	}
	a.host = host
	if !slices.Contains(a.hosts, host) {
		a.hosts = append(a.hosts, host)
	}
	a.attempts = max(a.attempts, q.Attempt+1)
	res := "ok"
	if q.Err != nil {
		res = q.Err.Error()
		if len(res) > 80 {
			res = res[:80] + "..."
		}
	}
	a.log = append(a.log, fmt.Sprintf("#%d %s %s: %s", q.Attempt+1, host, q.End.Sub(q.Start).Round(time.Millisecond), res))
}

// Workload runs the clients until halted.
type Workload struct {
	s    *gocql.Session
	hist *history
	stop chan struct{}
	done sync.WaitGroup
}

// clientSeed derives a client's random source from the run's seed.
func clientSeed(seed int64, client int) int64 { return seed*1000 + int64(client) + 1 }

// StartWorkload starts every client.
func StartWorkload(s *gocql.Session, hist *history, seed int64) *Workload {
	w := &Workload{s: s, hist: hist, stop: make(chan struct{})}
	id := 0
	spawn := func(n int, run func(c *client)) {
		for i := 0; i < n; i++ {
			c := &client{w: w, id: id, rng: rand.New(rand.NewSource(clientSeed(seed, id)))}
			id++
			w.done.Add(1)
			go func() {
				defer w.done.Done()
				run(c)
			}()
		}
	}
	spawn(registerWorkers, (*client).registers)
	spawn(listWorkers, (*client).lists)
	spawn(counterWorkers, (*client).counters)
	return w
}

// clients is the number of client ids the workload uses; the final
// reads use the next one.
const clients = registerWorkers + listWorkers + counterWorkers

// Halt stops the clients and waits for their operations to return.
func (w *Workload) Halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.done.Wait()
}

// client is one client goroutine; values it writes are unique to it.
type client struct {
	w   *Workload
	id  int
	rng *rand.Rand
	seq int
}

func (c *client) stopped() bool {
	select {
	case <-c.w.stop:
		return true
	default:
		return false
	}
}

// next returns a value no other operation writes.
func (c *client) next() int {
	c.seq++
	return (c.id+1)*10_000_000 + c.seq
}

// readSpeculation is the speculative execution of reads.
var readSpeculation = &gocql.SimpleSpeculativeExecution{NumAttempts: 1, TimeoutDelay: 500 * time.Millisecond}

// run executes one statement as op and records it.
func (c *client) run(o *op, q *gocql.Query, exec func(q *gocql.Query) error) {
	runOp(c.w.hist, o, q, exec)
}

// runOp executes q under the operation timeout, classifies the result
// and records o. Writes run without a retry policy: gocql (1.7) retries
// whatever its policy allows, idempotent or not, and a retried append,
// increment or LWT would be applied twice by the client, not by the
// database.
func runOp(h *history, o *op, q *gocql.Query, exec func(q *gocql.Query) error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if o.Kind.write() {
		q = q.RetryPolicy(nil)
	} else {
		// Reads are idempotent: as a careful client does, ask a second
		// coordinator when the first has not answered in 500ms, so a
		// client is not held by a host that froze (which no server can
		// answer for).
		q = q.SetSpeculativeExecutionPolicy(readSpeculation)
	}
	var obs observer
	o.Call = h.since()
	err := exec(q.WithContext(ctx).Observer(&obs))
	o.Return = h.since()
	obs.mu.Lock()
	o.Coord, o.Hosts, o.Attempts = obs.host, obs.hosts, obs.attempts
	if obs.attempts > 1 {
		o.AttemptLog = strings.Join(obs.log, "; ")
	}
	obs.mu.Unlock()
	o.Outcome, o.Code = classify(err)
	if o.Kind.write() && o.Attempts > 1 && o.Outcome == failed {
		// Cannot happen without a retry policy; if it does, an
		// earlier attempt may have applied the write.
		o.Outcome = unknown
	}
	if err != nil {
		o.Err = err.Error()
		if len(o.Err) > 200 {
			o.Err = o.Err[:200] + "..."
		}
	}
	h.add(o)
}

// registers runs LWT registers: reads at SERIAL or QUORUM, inserts if not
// exists, and compare-and-sets from a value the client saw.
func (c *client) registers() {
	known := map[int]int{} // key -> the last value this client saw there
	for !c.stopped() {
		k := c.rng.Intn(registerKeys)
		r := c.rng.Intn(10)
		cur, haveCur := known[k]
		switch {
		case r < 2:
			c.insert(k, known)
		case r < 6 && haveCur:
			c.cas(k, cur, known)
		default:
			c.read(k, c.rng.Intn(2) == 0, known)
		}
	}
}

func (c *client) read(k int, serial bool, known map[int]int) {
	o := &op{Client: c.id, Kind: regRead, Key: k, Serial: serial}
	cl := gocql.Quorum
	if serial {
		cl = serialRead
	}
	q := c.w.s.Query("SELECT v FROM "+registerTable+" WHERE k = ?", k).Consistency(cl).Idempotent(true)
	readRegister(c.w.hist, o, q)
	if o.Outcome == ok {
		if o.Exists {
			known[k] = o.Cur
		} else {
			delete(known, k)
		}
	}
}

// readRegister runs a register read into o.
func readRegister(h *history, o *op, q *gocql.Query) {
	runOp(h, o, q, func(q *gocql.Query) error {
		var v *int
		err := q.Scan(&v)
		switch {
		case errors.Is(err, gocql.ErrNotFound):
			return nil
		case err != nil:
			return err
		case v != nil:
			o.Exists, o.Cur = true, *v
		}
		return nil
	})
}

// scanCAS runs a conditional statement: [applied], and the current value
// of v when it was not applied (a refused INSERT returns the whole row, a
// refused UPDATE the columns of its condition; an absent row returns v
// null or no v at all).
func scanCAS(o *op) func(q *gocql.Query) error {
	return func(q *gocql.Query) error {
		var v *int
		m := map[string]any{"v": &v}
		applied, err := q.MapScanCAS(m)
		if err != nil {
			return err
		}
		o.Applied = applied
		if !applied {
			if cur, present := m["v"]; present {
				o.CurKnown = true
				if p, isPtr := cur.(*int); isPtr && p != nil {
					o.Exists, o.Cur = true, *p
				}
			}
		}
		return nil
	}
}

func (c *client) insert(k int, known map[int]int) {
	o := &op{Client: c.id, Kind: regInsert, Key: k, Value: c.next()}
	c.run(o, c.w.s.Query("INSERT INTO "+registerTable+" (k, v) VALUES (?, ?) IF NOT EXISTS", k, o.Value), scanCAS(o))
	c.learn(o, known)
}

func (c *client) cas(k, from int, known map[int]int) {
	o := &op{Client: c.id, Kind: regCAS, Key: k, Value: c.next(), Expect: from}
	c.run(o, c.w.s.Query("UPDATE "+registerTable+" SET v = ? WHERE k = ? IF v = ?", o.Value, k, from), scanCAS(o))
	c.learn(o, known)
}

// learn updates what the client knows of a register after an LWT. After
// an unknown outcome it forgets the key: a value whose write may not have
// happened is never used as an expectation (which lets the checker drop
// unknown writes nobody observed).
func (c *client) learn(o *op, known map[int]int) {
	switch {
	case o.Outcome != ok:
		delete(known, o.Key)
	case o.Applied:
		known[o.Key] = o.Value
	case o.CurKnown && o.Exists:
		known[o.Key] = o.Cur
	default:
		delete(known, o.Key)
	}
}

// lists appends unique elements to lists and reads them whole.
func (c *client) lists() {
	for !c.stopped() {
		k := c.rng.Intn(listKeys)
		if c.rng.Intn(2) == 0 {
			o := &op{Client: c.id, Kind: listAppend, Key: k, Value: c.next()}
			c.run(o, c.w.s.Query("UPDATE "+listTable+" SET l = l + ? WHERE k = ?", []int{o.Value}, k), (*gocql.Query).Exec)
			continue
		}
		o := &op{Client: c.id, Kind: listRead, Key: k}
		readList(c.w.hist, o, c.w.s.Query("SELECT l FROM "+listTable+" WHERE k = ?", k).Consistency(gocql.Quorum).Idempotent(true))
	}
}

// readList runs a list read into o (an absent row is the empty list).
func readList(h *history, o *op, q *gocql.Query) {
	runOp(h, o, q, func(q *gocql.Query) error {
		err := q.Scan(&o.List)
		if errors.Is(err, gocql.ErrNotFound) {
			return nil
		}
		return err
	})
}

// counters increments counters and now and then reads one.
func (c *client) counters() {
	for !c.stopped() {
		k := c.rng.Intn(counterKeys)
		if c.rng.Intn(5) == 0 {
			o := &op{Client: c.id, Kind: counterRead, Key: k}
			readCounter(c.w.hist, o, c.w.s.Query("SELECT n FROM "+counterTable+" WHERE k = ?", k).Consistency(gocql.Quorum).Idempotent(true))
			continue
		}
		o := &op{Client: c.id, Kind: counterAdd, Key: k, Value: 1}
		c.run(o, c.w.s.Query("UPDATE "+counterTable+" SET n = n + 1 WHERE k = ?", k), (*gocql.Query).Exec)
	}
}

// readCounter runs a counter read into o (an absent row is 0).
func readCounter(h *history, o *op, q *gocql.Query) {
	runOp(h, o, q, func(q *gocql.Query) error {
		err := q.Scan(&o.Count)
		if errors.Is(err, gocql.ErrNotFound) {
			return nil
		}
		return err
	})
}

// finalReads reads every key once more after the run (with retries until
// one read of each succeeds, within d for all of them) and records the
// reads in the history: they are what the checks compare acknowledged
// writes with.
func finalReads(s *gocql.Session, h *history, d time.Duration) error {
	deadline := time.Now().Add(d)
	try := func(what string, read func() *op) error {
		if time.Now().After(deadline) {
			return fmt.Errorf("final read of %s: no time left", what)
		}
		for {
			o := read()
			if o.Outcome == ok {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("final read of %s: %s", what, o.Err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	var errs []error
	for k := 0; k < registerKeys; k++ {
		errs = append(errs, try(fmt.Sprintf("register %d", k), func() *op {
			o := &op{Client: clients, Kind: regRead, Key: k, Serial: true, Final: true}
			readRegister(h, o, s.Query("SELECT v FROM "+registerTable+" WHERE k = ?", k).Consistency(serialRead).Idempotent(true))
			return o
		}))
	}
	for k := 0; k < listKeys; k++ {
		errs = append(errs, try(fmt.Sprintf("list %d", k), func() *op {
			o := &op{Client: clients, Kind: listRead, Key: k, Final: true}
			readList(h, o, s.Query("SELECT l FROM "+listTable+" WHERE k = ?", k).Consistency(gocql.Quorum).Idempotent(true))
			return o
		}))
	}
	for k := 0; k < counterKeys; k++ {
		errs = append(errs, try(fmt.Sprintf("counter %d", k), func() *op {
			o := &op{Client: clients, Kind: counterRead, Key: k, Final: true}
			readCounter(h, o, s.Query("SELECT n FROM "+counterTable+" WHERE k = ?", k).Consistency(gocql.Quorum).Idempotent(true))
			return o
		}))
	}
	return errors.Join(errs...)
}

// serialRead is consistency SERIAL for a plain read: gocql types SERIAL
// as a serial consistency, but the protocol takes it as a read's level.
const serialRead = gocql.Consistency(gocql.Serial)
