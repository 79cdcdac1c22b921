package ctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

// Following operations (--wait). The controller runs an operation after
// the admin API has persisted it; cosmosctl polls GetOperation until its
// state is done or failed. Polls that fail because an endpoint went away or
// the controller changed are retried, on the next endpoint, for
// defaultRetryFor after the last poll that succeeded: a controller failover
// or the loss of the node cosmosctl talks to does not end the wait.

const (
	defaultPollEvery = 500 * time.Millisecond
	defaultRetryFor  = 30 * time.Second
)

// Operation states (placement's vocabulary).
const (
	opPending = "pending"
	opRunning = "running"
	opDone    = "done"
	opFailed  = "failed"
)

// Names of the --wait flags.
const (
	flagWait        = "wait"
	flagWaitTimeout = "wait-timeout"
)

// waitFlags are the flags of commands that start or show an operation.
func waitFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: flagWait, Usage: "follow the operation until it is done or failed, showing its progress; exit non-zero if it fails"},
		&cli.DurationFlag{Name: flagWaitTimeout, Usage: "with --wait, stop waiting after this long (the operation goes on); 0 waits as long as it takes"},
	}
}

// finished reports whether an operation has reached a final state.
func finished(op *adminpb.Operation) bool {
	return op.GetState() == opDone || op.GetState() == opFailed
}

// submitOperation runs rpc, which starts an operation, and prints the
// operation; with --wait it follows the operation to its end instead.
func (e *env) submitOperation(ctx context.Context, c *cli.Context, rpc func(ctx context.Context, admin adminpb.AdminClient) (*adminpb.Operation, error)) error {
	var op *adminpb.Operation
	err := e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
		op, err = rpc(ctx, admin)
		return err
	})
	if err != nil {
		return err
	}
	if !c.Bool(flagWait) {
		return e.print(op, func(w io.Writer) error { return renderSubmitted(w, op, time.Now()) })
	}
	return e.follow(ctx, op, c.Duration(flagWaitTimeout))
}

// follow waits for op to end, showing its progress, prints the final
// operation and fails if the operation failed.
func (e *env) follow(ctx context.Context, op *adminpb.Operation, timeout time.Duration) error {
	view := e.progressView()
	final, err := e.waitOperation(ctx, op, timeout, view.update)
	view.end(final, err == nil)
	if err != nil {
		return err
	}
	if err := e.showOperation(ctx, final); err != nil {
		return err
	}
	if final.GetState() == opFailed {
		return fmt.Errorf("operation %d (%s) failed: %s", final.GetId(), final.GetKind(), orDash(final.GetError()))
	}
	return nil
}

// waitOperation polls op every pollEvery until it has finished, calling
// update with every answer. It returns the last operation seen; the error
// says why it stopped early (interrupted, --wait-timeout, the cluster
// unreachable for retryFor).
func (e *env) waitOperation(ctx context.Context, op *adminpb.Operation, timeout time.Duration, update func(*adminpb.Operation)) (*adminpb.Operation, error) {
	parent := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	update(op)
	tick := time.NewTicker(e.pollEvery)
	defer tick.Stop()
	lastOK := time.Now()
	for !finished(op) {
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return op, fmt.Errorf("interrupted; operation %d goes on (cosmosctl ops show %d)", op.GetId(), op.GetId())
			}
			return op, fmt.Errorf("operation %d is still %s after %s (--wait-timeout); it goes on (cosmosctl ops show %d --wait)",
				op.GetId(), op.GetState(), timeout, op.GetId())
		case <-tick.C:
		}
		got, err := e.getOperation(ctx, op.GetId())
		if err != nil {
			if ctx.Err() != nil {
				continue // reported by the select above
			}
			if !transient(err) || time.Since(lastOK) > e.retryFor {
				return op, fmt.Errorf("follow operation %d: %w", op.GetId(), err)
			}
			e.reconnect()
			continue
		}
		lastOK = time.Now()
		op = got
		update(op)
	}
	return op, nil
}

func (e *env) getOperation(ctx context.Context, id uint64) (*adminpb.Operation, error) {
	var op *adminpb.Operation
	err := e.call(ctx, func(ctx context.Context, admin adminpb.AdminClient) (err error) {
		op, err = admin.GetOperation(ctx, &adminpb.GetOperationRequest{Id: id})
		return err
	})
	return op, err
}

// transient reports whether a failed poll of an operation that exists is
// worth retrying: the endpoint or the cluster is (for now) unreachable or
// slow. GetOperation answers NotFound also when its etcd read fails, and
// the operation was seen before the poll, so NotFound counts too.
func transient(err error) bool {
	if errors.Is(err, ErrNoEndpoint) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.NotFound, codes.Aborted, codes.ResourceExhausted:
		return true
	}
	return false
}

// reconnect drops the connection after a failed call, so that the next
// call dials again, trying the endpoint after the one that failed first
// (and that one last).
func (e *env) reconnect() {
	if e.client == nil {
		return
	}
	failed := e.client.endpoint
	e.close()
	if i := slices.Index(e.opts.endpoints, failed); i >= 0 {
		e.opts.endpoints = append(slices.Clone(e.opts.endpoints[i+1:]), e.opts.endpoints[:i+1]...)
	}
}

// progressView shows an operation's progress while cosmosctl waits.
type progressView interface {
	// update shows the operation as last polled.
	update(op *adminpb.Operation)
	// end closes the display; complete is false when the wait stopped
	// before the operation ended.
	end(op *adminpb.Operation, complete bool)
}

// progressView picks the display: none under -o json (stdout is the JSON
// document), a redrawn bar on a terminal, else one line per change, which
// reads well in CI logs.
func (e *env) progressView() progressView {
	switch {
	case e.opts.output == formatJSON:
		return noProgress{}
	case isTerminal(e.out):
		return newBarProgress(e.out)
	}
	return &lineProgress{w: e.out}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

type noProgress struct{}

func (noProgress) update(*adminpb.Operation)    {}
func (noProgress) end(*adminpb.Operation, bool) {}

// lineProgress prints one line each time the progress line changes.
type lineProgress struct {
	w       io.Writer
	last    string
	printed bool
}

func (p *lineProgress) update(op *adminpb.Operation) {
	line := progressLine(op)
	if line == p.last {
		return
	}
	p.last, p.printed = line, true
	// Progress is best effort: a failed write shows when the result is
	// printed.
	_, _ = io.WriteString(p.w, printable(line)+"\n")
}

func (p *lineProgress) end(*adminpb.Operation, bool) {
	if p.printed {
		_, _ = io.WriteString(p.w, "\n") // set the result apart
	}
}

// barProgress redraws one line on a terminal.
type barProgress struct {
	bar *progressbar.ProgressBar
	w   io.Writer
}

// barDescriptionWidth keeps the redrawn line within a terminal's width:
// a line that wraps is not redrawn in place.
const barDescriptionWidth = 60

func newBarProgress(w io.Writer) *barProgress {
	return &barProgress{w: w, bar: progressbar.NewOptions(100,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetTheme(progressbar.ThemeASCII),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionShowDescriptionAtLineEnd(),
	)}
}

func (p *barProgress) update(op *adminpb.Operation) {
	p.bar.Describe(truncate(progressText(op), barDescriptionWidth))
	_ = p.bar.Set(percent(op))
}

func (p *barProgress) end(op *adminpb.Operation, complete bool) {
	if complete && op.GetState() == opDone {
		_ = p.bar.Finish()
	} else {
		_ = p.bar.Exit()
	}
	_, _ = io.WriteString(p.w, "\n\n")
}

// progressLine is one line of progress:
//
//	op 12 rebalance: running 40% (moves: 4 of 10 done, 0 failed)
func progressLine(op *adminpb.Operation) string {
	return fmt.Sprintf("op %d %s: %s %d%%", op.GetId(), op.GetKind(), op.GetState(), percent(op)) + stepSuffix(op)
}

// progressText is the bar's description: the line without the percentage
// the bar shows.
func progressText(op *adminpb.Operation) string {
	return fmt.Sprintf("op %d %s: %s", op.GetId(), op.GetKind(), op.GetState()) + stepSuffix(op)
}

func stepSuffix(op *adminpb.Operation) string {
	s := currentStep(op)
	if s == nil {
		return ""
	}
	if s.GetDetail() == "" {
		return " (" + s.GetName() + ")"
	}
	return " (" + s.GetName() + ": " + s.GetDetail() + ")"
}

// percent is the operation's progress in whole percent, 100 only when it
// is done.
func percent(op *adminpb.Operation) int {
	if op.GetState() == opDone {
		return 100
	}
	p := op.GetProgress()
	if math.IsNaN(p) || p < 0 {
		return 0
	}
	return min(int(math.Floor(p*100)), 99)
}

// currentStep is the step an operation is at: the last one running, else
// the one updated last (the later one on a tie, since steps are listed in
// the order they started).
func currentStep(op *adminpb.Operation) *adminpb.Step {
	steps := op.GetSteps()
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].GetState() == opRunning {
			return steps[i]
		}
	}
	var best *adminpb.Step
	var bestAt time.Time
	for _, s := range steps {
		at, _ := time.Parse(time.RFC3339Nano, s.GetAt())
		if best == nil || !at.Before(bestAt) {
			best, bestAt = s, at
		}
	}
	return best
}

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:max(n-1, 0)]), " ") + "…"
}
