package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosmosd/cosmosd/partition"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/test/blackbox"
)

// The operator changes the cluster's layout while the nemesis fails it
// and the clients use it: it splits partitions (`cosmosctl split`), moves
// replicas (`cosmosctl move`) and transfers leaderships (the internal
// TransferLeader call the controller uses; cosmosctl has no command for
// it). Operations may fail under faults; that is logged, not judged.

// maxPartitions caps the splits per table: every partition is a raft
// group of 4 replicas, and the machine has 2 cores.
const maxPartitions = 6

// opEvent is one cluster operation; times are since the run's start.
type opEvent struct {
	Kind       string // split, move, transfer
	Desc       string
	Start, End time.Duration
	Err        string
}

// Operator runs cluster operations until halted.
type Operator struct {
	c    *Cluster
	hist *history
	rng  *rand.Rand
	stop chan struct{}
	done sync.WaitGroup

	mu     sync.Mutex
	events []*opEvent
}

// StartOperator starts the operator with its own seeded random source.
func StartOperator(c *Cluster, hist *history, seed int64) *Operator {
	o := &Operator{c: c, hist: hist, rng: rand.New(rand.NewSource(seed + 7)), stop: make(chan struct{})}
	o.done.Add(1)
	go func() {
		defer o.done.Done()
		o.run()
	}()
	return o
}

// Halt stops the operator and waits for the operation under way.
func (o *Operator) Halt() {
	select {
	case <-o.stop:
	default:
		close(o.stop)
	}
	o.done.Wait()
}

// Events returns the operations so far.
func (o *Operator) Events() []*opEvent {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events)
}

func (o *Operator) run() {
	for {
		wait := time.Duration(4+o.rng.Intn(7)) * time.Second
		select {
		case <-o.stop:
			return
		case <-time.After(wait):
		}
		action := o.rng.Intn(4) // split, move, transfer, transfer
		pick := o.rng.Int63()   // drawn now so the sequence depends on the seed only
		ev := &opEvent{Start: o.hist.since()}
		var err error
		switch action {
		case 0:
			ev.Kind = "split"
			ev.Desc, err = o.split(pick)
		case 1:
			ev.Kind = "move"
			ev.Desc, err = o.move(pick)
		default:
			ev.Kind = "transfer"
			ev.Desc, err = o.transfer(pick)
		}
		ev.End = o.hist.since()
		if errors.Is(err, errNothingToDo) {
			continue
		}
		if err != nil {
			ev.Err = err.Error()
		}
		o.mu.Lock()
		o.events = append(o.events, ev)
		o.mu.Unlock()
	}
}

// errNothingToDo says an operation found nothing to act on; it is not
// recorded.
var errNothingToDo = errors.New("nothing to do")

// workloadParts returns the partitions of the workload's tables.
func (o *Operator) workloadParts() ([]blackbox.Partition, error) {
	parts, err := o.c.Ring()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(parts, func(p blackbox.Partition) bool {
		return p.Table != registerTable && p.Table != listTable && p.Table != counterTable
	}), nil
}

// split halves the widest partition of a table below maxPartitions.
func (o *Operator) split(pick int64) (string, error) {
	parts, err := o.workloadParts()
	if err != nil {
		return "split: ring", err
	}
	count := map[string]int{}
	for _, p := range parts {
		count[p.Table]++
	}
	var best *blackbox.Partition
	for i := range parts {
		p := &parts[i]
		if count[p.Table] >= maxPartitions {
			continue
		}
		if best == nil || uint64(p.End-p.Start) > uint64(best.End-best.Start) ||
			(p.End-p.Start == best.End-best.Start && (pick+int64(i))%2 == 0) {
			best = p
		}
	}
	if best == nil {
		return "", errNothingToDo // every table has maxPartitions
	}
	at := best.Start/2 + best.End/2 + 1
	desc := fmt.Sprintf("split P%d (%s) at %d", best.ID, best.Table, at)
	_, err = o.c.ctl().Run("split", "--partition", fmt.Sprint(best.ID), "--at", fmt.Sprint(at), "--wait", "--wait-timeout", "30s")
	return desc, err
}

// move moves a replica of a random partition to a node without one.
func (o *Operator) move(pick int64) (string, error) {
	parts, err := o.workloadParts()
	if err != nil || len(parts) == 0 {
		return "move: ring", err
	}
	r := rand.New(rand.NewSource(pick))
	p := parts[r.Intn(len(parts))]
	holds := map[uint64]bool{}
	for _, x := range p.Replicas {
		holds[x.NodeID] = true
	}
	var to []uint64
	for id := range o.c.liveIDs() {
		if n := o.c.byID(id); !holds[id] && n != nil && o.c.faultOf(n) == "" {
			to = append(to, id)
		}
	}
	if len(to) == 0 || len(p.Replicas) == 0 {
		return "", errNothingToDo
	}
	slices.Sort(to)
	from := p.Replicas[r.Intn(len(p.Replicas))].NodeID
	dst := to[r.Intn(len(to))]
	desc := fmt.Sprintf("move P%d (%s) n%d -> n%d", p.ID, p.Table, from, dst)
	_, err = o.c.ctl().Run("move", "--partition", fmt.Sprint(p.ID), "--from", fmt.Sprint(from), "--to", fmt.Sprint(dst), "--wait", "--wait-timeout", "30s")
	return desc, err
}

// transfer asks a partition's leader to hand leadership to another voter.
func (o *Operator) transfer(pick int64) (string, error) {
	parts, err := o.workloadParts()
	if err != nil || len(parts) == 0 {
		return "transfer: ring", err
	}
	r := rand.New(rand.NewSource(pick))
	p := parts[r.Intn(len(parts))]
	leader := o.c.byID(p.LeaderNode)
	var targets []uint64
	for _, x := range p.Replicas {
		if x.NodeID != p.LeaderNode && !x.Learner && x.Reachable {
			targets = append(targets, x.NodeID)
		}
	}
	if leader == nil || len(targets) == 0 {
		return "", errNothingToDo
	}
	target := targets[r.Intn(len(targets))]
	desc := fmt.Sprintf("transfer leadership of P%d (%s) n%d -> n%d", p.ID, p.Table, p.LeaderNode, target)
	conn, err := grpc.NewClient("passthrough:///"+leader.IP+":7000", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return desc, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kvpb.NewInternalClient(conn).TransferLeader(ctx, &kvpb.TransferLeaderRequest{PartitionId: p.ID, TargetNode: target})
	if err != nil {
		return desc, err
	}
	return desc, partition.FromPB(resp.GetError())
}
