package daemon

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cosmosd/cosmosd/consensus/raft"
)

// partitionCollector exports the node's replicas at scrape time: size, rows,
// throughput and leadership per physical partition. Reading at scrape time
// keeps the request path free of metric bookkeeping.
type partitionCollector struct {
	n *Node

	bytes, rows, logical, ruRate, ruShare, leader *prometheus.Desc
	throttled                                     *prometheus.Desc
	replicas, leaders, failed                     *prometheus.Desc
}

func newPartitionCollector(n *Node) *partitionCollector {
	labels := []string{"partition", "table"}
	d := func(name, help string, l []string) *prometheus.Desc {
		return prometheus.NewDesc("cosmosd_"+name, help, l, nil)
	}
	return &partitionCollector{
		n:         n,
		bytes:     d("partition_bytes", "Bytes stored in the physical partition (this replica).", labels),
		rows:      d("partition_rows", "Rows stored in the physical partition.", labels),
		logical:   d("partition_logical_partitions", "Logical partitions in the physical partition.", labels),
		ruRate:    d("partition_request_units_per_second", "Request units per second served by this replica (10 s average).", labels),
		ruShare:   d("partition_request_units_share", "Provisioned RU/s share of the partition (0 = unlimited).", labels),
		throttled: d("partition_throttled_requests_total", "Requests refused for throughput by this replica.", labels),
		leader:    d("partition_leader", "1 when this replica leads its partition.", labels),
		replicas:  d("replicas", "Partition replicas on this node.", nil),
		leaders:   d("leaders", "Partition leaders on this node.", nil),
		failed:    d("failed_replicas", "Replicas on this node that stopped on a failure and await replacement.", nil),
	}
}

// Describe implements prometheus.Collector.
func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.bytes, c.rows, c.logical, c.ruRate, c.ruShare, c.throttled, c.leader, c.replicas, c.leaders, c.failed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	resp, err := c.n.parts.Status(nil, true)
	if err != nil {
		return
	}
	st := c.n.meta.State()
	leaders, failed := 0, 0
	for _, r := range resp.GetReplicas() {
		if r.GetFailed() != "" {
			failed++
		}
		d := r.GetDesc()
		table := strconv.FormatUint(d.GetTableId(), 10)
		if t := st.Schema.ByID[d.GetTableId()]; t != nil {
			table = t.QualifiedName()
		}
		l := []string{strconv.FormatUint(d.GetId(), 10), table}
		g := func(desc *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, l...)
		}
		g(c.bytes, float64(r.GetBytes()))
		g(c.rows, float64(r.GetRows()))
		g(c.logical, float64(r.GetLogicalPartitions()))
		g(c.ruRate, r.GetRuPerSec())
		g(c.ruShare, r.GetRuShare())
		ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.CounterValue, float64(r.GetThrottled()), l...)
		lead := 0.0
		if r.GetLeader() {
			lead = 1
			leaders++
		}
		g(c.leader, lead)
	}
	ch <- prometheus.MustNewConstMetric(c.replicas, prometheus.GaugeValue, float64(len(resp.GetReplicas())))
	ch <- prometheus.MustNewConstMetric(c.leaders, prometheus.GaugeValue, float64(leaders))
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, float64(failed))
}

// requestMetrics count CQL requests by opcode and outcome, and the request
// units they were charged, and time them by kind of statement and table.
type requestMetrics struct {
	requests *prometheus.CounterVec
	units    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// Kinds of statement the latency histogram tells apart (label "kind").
// Conditional statements (IF ...) are "lwt" whatever their verb: their
// Paxos-like read-then-write costs several times a plain write.
const (
	kindRead  = "read"
	kindWrite = "write"
	kindBatch = "batch"
	kindLWT   = "lwt"
	kindDDL   = "ddl"
	kindOther = "other"
)

// latencyBuckets span a lease read served from memory (~100us) to the
// request timeout (10 s).
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newRequestMetrics(reg *prometheus.Registry) *requestMetrics {
	m := &requestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cosmosd_cql_requests_total",
			Help: "CQL requests served by this node, by opcode and outcome (ok or the CQL error code)."}, []string{"op", "outcome"}),
		units: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cosmosd_request_units_total",
			Help: "Request units charged to CQL requests coordinated by this node."}, []string{"op"}),
	}
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "cosmosd_cql_request_duration_seconds",
		Help:    "Time this node took to answer CQL statements it coordinated, by kind (read, write, batch, lwt, ddl, other) and table (keyspace.table; empty when none).",
		Buckets: latencyBuckets}, []string{"kind", "table"})
	reg.MustRegister(m.requests, m.units, m.duration)
	return m
}

// observeDuration records the time one statement took. table is the
// qualified table name, never anything derived from the request's values,
// which keeps the series bounded by the schema; an unknown kind is
// recorded as "other" for the same reason.
func (m *requestMetrics) observeDuration(kind, table string, d time.Duration) {
	switch kind {
	case kindRead, kindWrite, kindBatch, kindLWT, kindDDL:
	default:
		kind = kindOther
	}
	m.duration.WithLabelValues(kind, table).Observe(d.Seconds())
}

// observe records one request.
func (m *requestMetrics) observe(op string, charge float64, errCode int32, failed bool) {
	outcome := "ok"
	if failed {
		outcome = "0x" + strconv.FormatInt(int64(errCode), 16)
	}
	m.requests.WithLabelValues(op, outcome).Inc()
	if charge > 0 {
		m.units.WithLabelValues(op).Add(charge)
	}
}

// raftCollector exports the raft engine's counters at scrape time: the
// rate of wal_sync_seconds_total over wal_syncs_total is the disk's sync
// latency as acknowledgements see it, and that of proposal_seconds_total
// over proposals_total the mean commit and apply latency.
type raftCollector struct {
	e                                  *raft.Engine
	cycles, cycleTime, syncs, syncTime *prometheus.Desc
	leaderChanges, proposals, propTime *prometheus.Desc
	propApplied, propQueue             *prometheus.Desc
	propCommit, propAnswer             *prometheus.Desc
	snapsSent, snapsRecv               *prometheus.Desc
	groups, led, leaderless, logBytes  *prometheus.Desc
}

func newRaftCollector(e *raft.Engine) *raftCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("cosmosd_raft_"+name, help, nil, nil)
	}
	return &raftCollector{
		e:             e,
		cycles:        d("cycles_total", "Scheduling cycles the raft engine ran."),
		cycleTime:     d("cycle_seconds_total", "Time spent in scheduling cycles."),
		syncs:         d("wal_syncs_total", "WAL syncs that acknowledgements waited for."),
		syncTime:      d("wal_sync_seconds_total", "Time from requesting those syncs to their completion."),
		leaderChanges: d("leader_changes_total", "Times a local replica saw its group's leader change."),
		proposals:     d("proposals_total", "Commands proposed through local replicas."),
		propTime:      d("proposal_seconds_total", "Total time of those proposals from submission to applied or failed."),
		propApplied:   d("proposals_applied_total", "Proposals that returned their applied result; the three stage totals below split their time."),
		propQueue:     d("proposal_queue_seconds_total", "Time of applied proposals from submission until raft took them (waiting for a scheduling cycle)."),
		propCommit:    d("proposal_commit_seconds_total", "Time of applied proposals from raft taking them until applied (replication, the quorum's syncs, commit)."),
		propAnswer:    d("proposal_answer_seconds_total", "Time of applied proposals from applied until the caller resumed (batch commit, wake-up)."),
		snapsSent:     d("snapshots_sent_total", "Snapshots streamed to followers."),
		snapsRecv:     d("snapshots_received_total", "Snapshots received and installed."),
		groups:        d("groups", "Raft groups with a replica on this node."),
		led:           d("groups_led", "Raft groups this node's replica leads."),
		leaderless:    d("groups_leaderless", "Raft groups whose local replica knows no live leader."),
		logBytes:      d("log_bytes", "Estimated bytes of the local replicas' raft logs (restarts from 0 with the process)."),
	}
}

func (c *raftCollector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.cycles, c.cycleTime, c.syncs, c.syncTime, c.leaderChanges, c.proposals, c.propTime,
		c.propApplied, c.propQueue, c.propCommit, c.propAnswer, c.snapsSent, c.snapsRecv, c.groups, c.led, c.leaderless, c.logBytes}
}

// Describe implements prometheus.Collector.
func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) { describeAll(ch, c.descs()) }

// Collect implements prometheus.Collector.
func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.e.Stats()
	counter, gauge := constMetrics(ch)
	counter(c.cycles, float64(st.Cycles))
	counter(c.cycleTime, st.CycleTime.Seconds())
	counter(c.syncs, float64(st.Syncs))
	counter(c.syncTime, st.SyncTime.Seconds())
	counter(c.leaderChanges, float64(st.LeaderChanges))
	counter(c.proposals, float64(st.Proposals))
	counter(c.propTime, st.ProposeTime.Seconds())
	counter(c.propApplied, float64(st.ProposalsApplied))
	counter(c.propQueue, st.ProposeQueueTime.Seconds())
	counter(c.propCommit, st.ProposeCommitTime.Seconds())
	counter(c.propAnswer, st.ProposeAnswerTime.Seconds())
	counter(c.snapsSent, float64(st.SnapshotsSent))
	counter(c.snapsRecv, float64(st.SnapshotsReceived))
	gauge(c.groups, float64(st.Groups))
	gauge(c.led, float64(st.Led))
	gauge(c.leaderless, float64(st.Leaderless))
	gauge(c.logBytes, float64(st.LogBytes))
}

// describeAll sends descs, for collectors whose metrics are fixed.
func describeAll(ch chan<- *prometheus.Desc, descs []*prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// constMetrics returns functions that send a counter's and a gauge's value
// read at scrape time.
func constMetrics(ch chan<- prometheus.Metric) (counter, gauge func(d *prometheus.Desc, v float64)) {
	counter = func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge = func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	return counter, gauge
}
