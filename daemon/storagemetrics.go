package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cosmosd/cosmosd/storage"
)

// storageCollector exports Pebble's metrics of the node's store, and the
// space left on the file system under it, at scrape time: Metrics copies
// Pebble's counters under its mutex, cheap at scrape intervals, and keeps
// the write path free of bookkeeping. Write stalls come from the store's
// Pebble EventListener (storage.Engine.WriteStalls).
type storageCollector struct {
	e *storage.Engine

	compactions, compactDebt, compactRunning, flushes *prometheus.Desc
	diskUsage, memtable, memtables, l0Files, l0Sub    *prometheus.Desc
	readAmp, fsAvail, fsTotal                         *prometheus.Desc
	stalls, stallTime                                 *prometheus.Desc
}

func newStorageCollector(e *storage.Engine) *storageCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("cosmosd_storage_"+name, help, nil, nil)
	}
	return &storageCollector{
		e:              e,
		compactions:    d("compactions_total", "Pebble compactions run since the store opened."),
		compactDebt:    d("compaction_debt_bytes", "Estimated bytes Pebble must compact to reach a stable LSM shape."),
		compactRunning: d("compactions_in_progress", "Pebble compactions running now."),
		flushes:        d("flushes_total", "Memtable flushes since the store opened."),
		diskUsage:      d("disk_usage_bytes", "Bytes the store takes on disk (tables, WAL, blobs, manifests)."),
		memtable:       d("memtable_bytes", "Bytes allocated by memtables."),
		memtables:      d("memtables", "Memtables, the mutable one included."),
		l0Files:        d("l0_files", "Tables in L0; a growing count means compactions fall behind and writes will stall."),
		l0Sub:          d("l0_sublevels", "Sublevels of L0 (Pebble stalls writes at 20 by default)."),
		readAmp:        d("read_amplification", "Tables a point read may consult (L0 sublevels plus non-empty levels)."),
		fsAvail:        d("filesystem_available_bytes", "Bytes available to the node on the file system of the store."),
		fsTotal:        d("filesystem_size_bytes", "Size of the file system of the store."),
		stalls:         d("write_stalls_total", "Times Pebble stalled writes because compactions fell behind."),
		stallTime:      d("write_stall_seconds_total", "Time writes spent stalled by Pebble."),
	}
}

func (c *storageCollector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.compactions, c.compactDebt, c.compactRunning, c.flushes, c.diskUsage, c.memtable,
		c.memtables, c.l0Files, c.l0Sub, c.readAmp, c.fsAvail, c.fsTotal, c.stalls, c.stallTime}
}

// Describe implements prometheus.Collector.
func (c *storageCollector) Describe(ch chan<- *prometheus.Desc) { describeAll(ch, c.descs()) }

// Collect implements prometheus.Collector.
func (c *storageCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.e.Metrics()
	counter, gauge := constMetrics(ch)
	stalls, stalled := c.e.WriteStalls()
	counter(c.stalls, float64(stalls))
	counter(c.stallTime, stalled.Seconds())
	counter(c.compactions, float64(m.Compact.Count))
	gauge(c.compactDebt, float64(m.Compact.EstimatedDebt))
	gauge(c.compactRunning, float64(m.Compact.NumInProgress))
	counter(c.flushes, float64(m.Flush.Count))
	gauge(c.diskUsage, float64(m.DiskSpaceUsage()))
	gauge(c.memtable, float64(m.MemTable.Size))
	gauge(c.memtables, float64(m.MemTable.Count))
	gauge(c.l0Files, float64(m.Levels[0].TablesCount))
	gauge(c.l0Sub, float64(m.Levels[0].Sublevels))
	gauge(c.readAmp, float64(m.ReadAmp()))
	// A file system that cannot report its usage (an in-memory one in
	// tests) exports no capacity rather than zeros, which would fire the
	// disk-full alert.
	if du, err := c.e.FS().GetDiskUsage(c.e.Dir()); err == nil && du.TotalBytes > 0 {
		gauge(c.fsAvail, float64(du.AvailBytes))
		gauge(c.fsTotal, float64(du.TotalBytes))
	}
}
