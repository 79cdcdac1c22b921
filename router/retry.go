package router

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/consensus"
	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// The retry loop: which replicas a request tries, in which order, and what
// each answer means for the next step. The rules are the package
// documentation's; retry_test.go holds them for the loop alone and
// client_test.go end to end, over real stores and gRPC.

// candidates orders the nodes to try for desc.
func (r *Router) candidates(desc *kvpb.Descriptor, leader bool) []consensus.NodeID {
	var out []consensus.NodeID
	seen := map[consensus.NodeID]bool{}
	add := func(n consensus.NodeID) {
		if n != 0 && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	isReplica := func(n consensus.NodeID) bool {
		for _, rd := range desc.GetReplicas() {
			if consensus.NodeID(rd.GetNodeId()) == n && !rd.GetLearner() {
				return true
			}
		}
		return false
	}
	if h, ok := r.leaders.Load(desc.GetId()); ok && isReplica(h.(consensus.NodeID)) && !r.suspect(h.(consensus.NodeID)) {
		add(h.(consensus.NodeID))
	}
	if isReplica(r.cfg.NodeID) {
		add(r.cfg.NodeID)
	}
	voters := make([]consensus.NodeID, 0, len(desc.GetReplicas()))
	for _, rd := range desc.GetReplicas() {
		if !rd.GetLearner() {
			voters = append(voters, consensus.NodeID(rd.GetNodeId()))
		}
	}
	// Spread first attempts of different requests when there is no hint.
	rand.Shuffle(len(voters), func(i, j int) { voters[i], voters[j] = voters[j], voters[i] })
	var last []consensus.NodeID
	for _, v := range voters {
		if r.suspect(v) {
			last = append(last, v) // paused or cut off: only if nothing else answers
			continue
		}
		add(v)
	}
	for _, v := range last {
		add(v)
	}
	return out
}

// attempt is one try at one node; outcome says what to do next.
type outcome int

const (
	done         outcome = iota // return the result
	tryNext                     // try another node (not applied)
	refreshRoute                // wait for a newer ring, then look up again
	retryHint                   // retry on the hinted leader
	unavailable                 // this replica knows its group lacks a quorum (not applied)
)

// classify decides what an error means for routing.
func (r *Router) classify(desc *kvpb.Descriptor, node consensus.NodeID, err error, sent bool) outcome {
	switch partition.ErrorCode(err) {
	case kvpb.Error_NOT_LEADER:
		var pe *partition.Error
		if errors.As(err, &pe) && pe.PB.GetLeaderNode() != 0 && consensus.NodeID(pe.PB.GetLeaderNode()) != node {
			r.leaders.Store(desc.GetId(), consensus.NodeID(pe.PB.GetLeaderNode()))
			return retryHint
		}
		r.leaders.Delete(desc.GetId())
		return tryNext
	case kvpb.Error_RANGE_MISMATCH:
		return refreshRoute
	case kvpb.Error_NOT_FOUND:
		return tryNext
	case kvpb.Error_UNAVAILABLE:
		return unavailable
	case kvpb.Error_UNKNOWN:
		if !sent {
			return tryNext
		}
	}
	return done
}

// do runs call against the replicas of the partition the target names,
// retrying as the package documentation describes, until ctx ends.
func (r *Router) do(ctx context.Context, t Target, idempotent bool, call func(ctx context.Context, node consensus.NodeID, desc *kvpb.Descriptor) (sent bool, err error)) error {
	backoff := 5 * time.Millisecond
	var lastErr error
	var lastPart uint64
	// expired turns the end of the request's time into an error that says
	// which partition could not answer and why.
	expired := func() error {
		switch partition.ErrorCode(lastErr) {
		case kvpb.Error_INVALID, kvpb.Error_OVERLOADED, kvpb.Error_PARTITION_TOO_LARGE, kvpb.Error_UNAVAILABLE, kvpb.Error_TIMEOUT:
			return lastErr
		case kvpb.Error_NOT_LEADER:
			return partition.Errorf(kvpb.Error_UNAVAILABLE, "partition %d has no leader: fewer than a quorum of its replicas are reachable (%v)", lastPart, lastErr)
		}
		if lastErr == nil {
			lastErr = ctx.Err()
		}
		return partition.Errorf(kvpb.Error_TIMEOUT, "partition %d did not answer within the request timeout: %v", lastPart, lastErr)
	}
	for {
		if ctx.Err() != nil {
			return expired()
		}
		desc, err := r.lookup(t)
		if err != nil {
			lastErr = err
			if !r.waitMeta(ctx, backoff) {
				return lastErr
			}
			backoff = min(2*backoff, 200*time.Millisecond)
			continue
		}
		lastPart = desc.GetId()
		cands := r.candidates(desc, t.Leader)
		tried := map[consensus.NodeID]int{}
		// unavail is the last UNAVAILABLE answer of this round; other
		// says some replica answered anything else (a leader hint, a
		// replica not found), which leaves hope that another round works.
		var unavail error
		other := false
		unavailNodes := map[consensus.NodeID]bool{}
		var hints []consensus.NodeID
	nodes:
		for len(cands) > 0 {
			node := cands[0]
			cands = cands[1:]
			if tried[node] >= 2 {
				continue
			}
			tried[node]++
			callCtx, cancel := ctx, context.CancelFunc(func() {})
			if idempotent && len(cands) > 0 {
				// A read may try another replica when this one is slow to
				// answer (paused, cut off): give it part of the time left.
				if dl, ok := ctx.Deadline(); ok {
					callCtx, cancel = context.WithTimeout(ctx, time.Until(dl)/2)
				}
			}
			callCtx, stopWatch := r.watchSilence(callCtx, node)
			sent, err := call(callCtx, node, desc)
			wentSilent := errors.Is(context.Cause(callCtx), errSilent)
			stopWatch()
			cancel()
			if err == nil {
				if t.Leader {
					r.leaders.Store(desc.GetId(), node)
				}
				r.suspects.Delete(node)
				return nil
			}
			if wentSilent {
				// The node stopped sending heartbeats while the request
				// waited on it (paused, cut off, wedged): do not wait for
				// the request's deadline. A write may have reached it and
				// may yet commit, so its outcome is unknown; a read just
				// goes elsewhere.
				r.markSuspect(node)
				if h, ok := r.leaders.Load(desc.GetId()); ok && h.(consensus.NodeID) == node {
					r.leaders.Delete(desc.GetId())
				}
				if sent && !idempotent {
					return &inFlightError{partition.Errorf(kvpb.Error_TIMEOUT, "partition %d: node %d went silent while the write was in flight, so it may or may not have been applied", desc.GetId(), node)}
				}
				lastErr = fmt.Errorf("node %d went silent: %w", node, err)
				continue
			}
			lastErr = err
			if transportFailure(err) && (sent || !errors.Is(err, context.DeadlineExceeded)) {
				r.markSuspect(node)
			}
			if h, ok := r.leaders.Load(desc.GetId()); ok && h.(consensus.NodeID) == node && transportFailure(err) {
				// The hinted leader did not answer: forget the hint so
				// the next request (a driver retry) asks another replica
				// instead of waiting on the same node again.
				r.leaders.Delete(desc.GetId())
			}
			if ctx.Err() != nil {
				return expired()
			}
			outcome := r.classify(desc, node, err, sent && !idempotent)
			switch {
			case outcome == unavailable:
				unavailNodes[node] = true
			case outcome == retryHint:
				// A follower's hint may name a leader that has just
				// refused for lack of a quorum (the follower has not
				// noticed yet): that is no reason to keep trying.
				if h, ok := r.leaders.Load(desc.GetId()); ok {
					hints = append(hints, h.(consensus.NodeID))
				}
			case sent:
				other = true
			}
			switch outcome {
			case done:
				return err
			case unavailable:
				// The replica refused before proposing: its group cannot
				// reach a quorum as far as it knows. Another replica may
				// know better (it may have just restarted), so ask the rest.
				unavail = err
			case retryHint:
				if h, ok := r.leaders.Load(desc.GetId()); ok && !r.suspect(h.(consensus.NodeID)) {
					cands = append([]consensus.NodeID{h.(consensus.NodeID)}, cands...)
				}
			case refreshRoute:
				break nodes
			}
		}
		for _, h := range hints {
			other = other || !unavailNodes[h]
		}
		if unavail != nil && !other {
			// Every replica that answered said its group lacks a quorum,
			// and the rest could not be reached: fail now, as Cassandra's
			// Unavailable, instead of waiting out the request's time.
			return unavail
		}
		// Every candidate failed retryably: leadership is moving or the
		// ring changed. Back off a little and look again.
		if !r.waitMeta(ctx, backoff) {
			return expired()
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// waitMeta waits for a metadata change or d, whichever first; false when
// ctx ended.
func (r *Router) waitMeta(ctx context.Context, d time.Duration) bool {
	ch, unsub := r.meta.Subscribe()
	defer unsub()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-ch:
	case <-t.C:
	}
	return true
}

// transportFailure reports an error that says nothing about the partition,
// only that its node did not answer in time or could not be reached. A
// TIMEOUT the node itself answered (its group lost its quorum with the
// write in flight) is not one: the node is alive and still the best guess
// of the leader.
func transportFailure(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var inf *inFlightError
	if errors.As(err, &inf) {
		return true
	}
	// The status may be err itself or one it wraps ("node N: %w").
	// status.FromError(nil) reports OK, so nil is skipped.
	for e := err; e != nil; e = errors.Unwrap(e) {
		if s, ok := status.FromError(e); ok && s.Code() != codes.Unknown {
			return s.Code() == codes.Unavailable || s.Code() == codes.DeadlineExceeded
		}
	}
	return false
}

// inFlightError is the TIMEOUT of a write whose node failed while the write
// was in flight.
type inFlightError struct{ pe *partition.Error }

func (e *inFlightError) Error() string { return e.pe.Error() }
func (e *inFlightError) Unwrap() error { return e.pe }

// inFlight turns the failure of a node that had received a write into the
// timeout Cassandra gives when a write's outcome is unknown; the client
// may retry an idempotent statement.
func inFlight(part uint64, node consensus.NodeID, err error) error {
	if partition.ErrorCode(err) != kvpb.Error_UNKNOWN || !transportFailure(err) {
		return err
	}
	return &inFlightError{partition.Errorf(kvpb.Error_TIMEOUT, "partition %d: node %d failed while the write was in flight, so it may or may not have been applied: %v", part, node, err)}
}

// sentRPC reports whether a failed admin RPC may have reached the server.
// Admin calls (membership changes, leader transfers, splits) are checked
// again by the controller against the partition's descriptor, so an
// Unavailable is taken as not sent and retried elsewhere; writes never
// are (see remoteNode.write).
func sentRPC(err error) bool {
	s, ok := status.FromError(err)
	if !ok {
		return true
	}
	// Unavailable before the stream starts means the connection could not
	// be made; the request never left.
	return s.Code() != codes.Unavailable
}
