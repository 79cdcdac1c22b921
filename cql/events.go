package cql

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"reflect"
	"sync"
	"time"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cql/frame"
	"github.com/cosmosd/cosmosd/schema"
)

// EventSource turns changes of the cluster metadata into protocol events:
// schema changes made on any node, nodes joining and leaving. Every node
// pushes them to its own registered connections, so drivers learn of a
// change wherever it happened.
type EventSource struct {
	meta   *cluster.Meta
	logger *slog.Logger

	mu    sync.Mutex
	conns map[*conn]struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

// DownGrace is how long a node must stay unregistered before its
// STATUS_CHANGE DOWN goes out. A node whose registration lease lapsed
// while it kept serving (its etcd member paused, a keepalive stream stuck
// on it) registers again within seconds; telling drivers it went down
// made them drop a live host, and with several nodes at once (they share
// the etcd member) fail requests with "no hosts available". A node that
// returns within the grace with the same address is never announced as
// down, nor again as new; a node that really died is announced after its
// lease's TTL plus the grace, and drivers see its connections fail before
// that anyway.
const DownGrace = 5 * time.Second

// NewEventSource follows meta until Close.
func NewEventSource(meta *cluster.Meta, logger *slog.Logger) *EventSource {
	return newEventSource(meta, logger, DownGrace)
}

func newEventSource(meta *cluster.Meta, logger *slog.Logger, grace time.Duration) *EventSource {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	es := &EventSource{meta: meta, logger: logger, conns: map[*conn]struct{}{}, cancel: cancel, done: make(chan struct{})}
	ch, unsub := meta.Subscribe()
	prev := meta.State()
	go func() {
		defer close(es.done)
		defer unsub()
		gone := map[uint64]goneNode{}
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
			case <-timer.C:
			}
			cur := meta.State()
			now := time.Now()
			for _, ev := range debounceNodes(diffEvents(prev, cur), prev, cur, gone, now, grace) {
				es.broadcast(ev)
			}
			prev = cur
			if next, ok := nextDeadline(gone); ok {
				timer.Reset(max(time.Until(next), time.Millisecond))
			}
		}
	}()
	return es
}

// goneNode is a node whose registration disappeared, not yet announced
// as down.
type goneNode struct {
	addr     netip.AddrPort
	deadline time.Time
}

// debounceNodes announces the DOWN of a node that disappeared once it has
// stayed away for grace, and drops the NEW_NODE and UP of a node that
// comes back within it at the same address (see DownGrace). gone is the
// caller's state across calls.
func debounceNodes(evs []*frame.Event, prev, cur *cluster.State, gone map[uint64]goneNode, now time.Time, grace time.Duration) []*frame.Event {
	quiet := map[netip.AddrPort]bool{}
	for id, n := range prev.Nodes {
		if _, ok := cur.Nodes[id]; !ok {
			gone[id] = goneNode{addr: nodeAddrPort(n), deadline: now.Add(grace)}
		}
	}
	for id, n := range cur.Nodes {
		if g, ok := gone[id]; ok {
			delete(gone, id)
			if g.addr == nodeAddrPort(n) {
				quiet[g.addr] = true // back in time: drivers never saw it go
			} else {
				// Back at another address: the old one is down for good.
				evs = append(evs, &frame.Event{Type: frame.EventStatusChange, Change: frame.StatusDown, Addr: g.addr})
			}
		}
	}
	var out []*frame.Event
	for _, ev := range evs {
		if ev.Type != frame.EventSchemaChange && quiet[ev.Addr] {
			continue
		}
		out = append(out, ev)
	}
	for id, g := range gone {
		if !now.Before(g.deadline) {
			delete(gone, id)
			out = append(out, &frame.Event{Type: frame.EventStatusChange, Change: frame.StatusDown, Addr: g.addr})
		}
	}
	return out
}

// nextDeadline is the earliest deadline of gone.
func nextDeadline(gone map[uint64]goneNode) (time.Time, bool) {
	var next time.Time
	for _, g := range gone {
		if next.IsZero() || g.deadline.Before(next) {
			next = g.deadline
		}
	}
	return next, !next.IsZero()
}

// Close stops following. Safe to call twice.
func (es *EventSource) Close() {
	es.cancel()
	<-es.done
}

func (es *EventSource) subscribe(c *conn) func() {
	es.mu.Lock()
	es.conns[c] = struct{}{}
	es.mu.Unlock()
	return func() {
		es.mu.Lock()
		delete(es.conns, c)
		es.mu.Unlock()
	}
}

func (es *EventSource) broadcast(ev *frame.Event) {
	es.mu.Lock()
	conns := make([]*conn, 0, len(es.conns))
	for c := range es.conns {
		conns = append(conns, c)
	}
	es.mu.Unlock()
	for _, c := range conns {
		c.pushEvent(ev)
	}
}

// diffEvents lists the events between two metadata states.
func diffEvents(prev, cur *cluster.State) []*frame.Event {
	var out []*frame.Event
	schemaEv := func(change, target, ks, name string) {
		out = append(out, &frame.Event{Type: frame.EventSchemaChange, Schema: frame.SchemaChange{Change: change, Target: target, Keyspace: ks, Name: name}})
	}
	if prev.Schema != cur.Schema {
		ps, cs := prev.Schema, cur.Schema
		for name, ks := range cs.Keyspaces {
			old, ok := ps.Keyspaces[name]
			switch {
			case !ok:
				schemaEv("CREATED", "KEYSPACE", name, "")
			case !reflect.DeepEqual(old, ks):
				schemaEv("UPDATED", "KEYSPACE", name, "")
			}
		}
		for name := range ps.Keyspaces {
			if _, ok := cs.Keyspaces[name]; !ok {
				schemaEv("DROPPED", "KEYSPACE", name, "")
			}
		}
		tables := func(s *schema.Schema) map[string]*schema.Table {
			m := map[string]*schema.Table{}
			for _, byName := range s.Tables {
				for _, t := range byName {
					m[t.QualifiedName()] = t
				}
			}
			return m
		}
		pt, ct := tables(ps), tables(cs)
		for name, t := range ct {
			old, ok := pt[name]
			switch {
			case !ok:
				schemaEv("CREATED", "TABLE", t.Keyspace, t.Name)
			case !reflect.DeepEqual(old, t):
				schemaEv("UPDATED", "TABLE", t.Keyspace, t.Name)
			}
		}
		for name, t := range pt {
			if _, ok := ct[name]; !ok {
				schemaEv("DROPPED", "TABLE", t.Keyspace, t.Name)
			}
		}
	}
	for id, n := range cur.Nodes {
		if _, ok := prev.Nodes[id]; !ok {
			addr := nodeAddrPort(n)
			out = append(out, &frame.Event{Type: frame.EventTopologyChange, Change: frame.TopologyNewNode, Addr: addr},
				&frame.Event{Type: frame.EventStatusChange, Change: frame.StatusUp, Addr: addr})
		}
	}
	// A node that left is announced DOWN by debounceNodes, after a grace.
	return out
}

func nodeAddrPort(n *cluster.NodeInfo) netip.AddrPort {
	ap, err := netip.ParseAddrPort(n.CQLAddr)
	if err == nil {
		return ap
	}
	host, port, err := net.SplitHostPort(n.CQLAddr)
	if err != nil {
		return netip.AddrPort{}
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}
	}
	a, _ := netip.AddrFromSlice(ips[0])
	p, _ := netip.ParseAddrPort(net.JoinHostPort(a.Unmap().String(), port))
	return p
}
