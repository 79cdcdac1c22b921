package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"

	"github.com/cosmosd/cosmosd/consensus"
)

// notifyReady tells systemd (Type=notify) the node serves: called once the
// node has registered and every listener is open. Outside systemd it does
// nothing. It also starts the watchdog pings when the unit asks for them:
// a ping is sent only while the node is ready and its consensus engine
// makes progress (a cycle stuck on a dying disk stops them), so a wedged
// node gets restarted. Failed replicas do not stop the pings (the
// controller replaces them, and a restart loop would not help a replica
// that cannot apply an entry); they show in the unit's status line.
func (n *Node) notifyReady(ctx context.Context) {
	if ok, err := sd.SdNotify(false, sd.SdNotifyReady); err != nil {
		n.logger.Warn("systemd notify", "err", err)
	} else if ok {
		n.logger.Info("notified systemd: ready")
	}
	interval, err := sd.SdWatchdogEnabled(false)
	if err != nil || interval == 0 {
		return
	}
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		t := time.NewTicker(interval / 3)
		defer t.Stop()
		lastStatus := ""
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			failed, err := n.health()
			if status := healthStatus(failed, err); status != lastStatus {
				_, _ = sd.SdNotify(false, "STATUS="+status)
				lastStatus = status
			}
			if n.ready.Load() && n.meta.State() != nil && err == nil {
				_, _ = sd.SdNotify(false, sd.SdNotifyWatchdog)
			}
		}
	}()
}

// health reports the node's failed replicas and whether its consensus
// engine makes progress.
func (n *Node) health() (failed []uint64, err error) {
	if err = n.store.Err(); err != nil {
		err = fmt.Errorf("the store failed a write: %w", err)
	} else if h, ok := n.cons.(interface{ Healthy() error }); ok {
		err = h.Healthy()
	}
	for _, r := range n.parts.Replicas() {
		if r.Group().Status().Err != nil {
			failed = append(failed, r.ID())
		}
	}
	return failed, err
}

// healthStatus is the one-line status of health's result.
func healthStatus(failed []uint64, err error) string {
	switch {
	case err != nil:
		return "stalled: " + err.Error()
	case len(failed) > 0:
		return fmt.Sprintf("serving; %d failed replicas (partitions %v) awaiting replacement", len(failed), failed)
	}
	return "serving"
}

// notifyStopping tells systemd the node is shutting down.
func notifyStopping() { _, _ = sd.SdNotify(false, sd.SdNotifyStopping) }

// handOffLeadership moves the leadership of every partition this node leads
// to another live voter, so that clients see no leaderless partition while
// the node stops: a transfer takes one round trip, an election after a
// leader vanishes takes an election timeout. Best effort within ctx.
func (n *Node) handOffLeadership(ctx context.Context) {
	st := n.meta.State()
	var wg sync.WaitGroup
	moved := 0
	var mu sync.Mutex
	for _, r := range n.parts.Replicas() {
		if !r.Group().Status().IsLeader() {
			continue
		}
		var target consensus.NodeID
		for _, rd := range r.Descriptor().GetReplicas() {
			if rd.GetNodeId() != n.id && !rd.GetLearner() && st.Nodes[rd.GetNodeId()] != nil {
				target = consensus.NodeID(rd.GetNodeId())
				break
			}
		}
		if target == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.TransferLeader(ctx, target); err == nil {
				mu.Lock()
				moved++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if moved > 0 {
		n.logger.Info("handed off leadership", "partitions", moved)
	}
}
