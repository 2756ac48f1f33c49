package metrics

import (
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/retention"
	"github.com/seglog/seglog/storage"
)

// Options say what a Collector reads besides the storage.Store. Each field
// may be nil; its metrics are then left out.
type Options struct {
	// Offsets is the consumer offset store: committed offsets and lag per
	// group, and the store's own counters.
	Offsets *offsets.Store
	// Cleaner is the retention cleaner: its runs and what they deleted.
	Cleaner *retention.Cleaner
	// Fsync is the histogram the store's logs feed through
	// storage.Options.OnFsync; the Collector collects it.
	Fsync *FsyncHistogram
}

// Collector is a prometheus.Collector over a storage.Store and what Options
// name. A scrape opens no partition (see the package doc). Collect may run
// concurrently with itself and with everything the store does.
type Collector struct {
	store *storage.Store
	opts  Options

	part []partMetric // per open partition
	size *prometheus.Desc

	topics, openPartitions, openFiles *prometheus.Desc

	committed, lag *prometheus.Desc
	offs           []offsetsMetric

	retention []retentionMetric
	lastRun   *prometheus.Desc

	// names are the label names the label pairs point to.
	names struct{ group, partition, topic string }
}

// partMetric is one per-partition metric and how to read it.
type partMetric struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	val  func(*storage.Stats, *storage.OpenStats) float64
}

// offsetsMetric is one metric of the offsets store.
type offsetsMetric struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	val  func(*offsets.Stats) float64
}

// retentionMetric is one metric of the retention cleaner.
type retentionMetric struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	val  func(*retention.Stats) float64
}

var partLabels = []string{"topic", "partition"}

// New returns a Collector over store and what opts name. It reads nothing
// until it is collected.
func New(store *storage.Store, opts Options) *Collector {
	c := &Collector{store: store, opts: opts}
	c.names.group, c.names.partition, c.names.topic = "group", "partition", "topic"
	c.addPartitionMetrics()
	c.topics = prometheus.NewDesc("seglog_topics", "Topics of the store.", nil, nil)
	c.openPartitions = prometheus.NewDesc("seglog_open_partitions", "Partitions whose log is open.", nil, nil)
	c.openFiles = prometheus.NewDesc("seglog_open_files", "Files that partition segments hold open (and as many memory maps).", nil, nil)
	if opts.Offsets != nil {
		c.addOffsetsMetrics()
	}
	if opts.Cleaner != nil {
		c.addRetentionMetrics()
	}
	return c
}

// addPartitionMetrics adds the per-partition metrics to c.
func (c *Collector) addPartitionMetrics() {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	pd := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, partLabels, nil)
	}
	pm := func(name, help string, typ prometheus.ValueType, val func(*storage.Stats, *storage.OpenStats) float64) {
		c.part = append(c.part, partMetric{pd(name, help), typ, val})
	}
	pm("seglog_log_start_offset", "First readable offset of the partition.", gauge,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return float64(s.StartOffset) })
	pm("seglog_log_end_offset", "Offset the next record appended to the partition gets.", gauge,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return float64(s.EndOffset) })
	pm("seglog_log_flushed_offset", "Offset below which every record of the partition is fsynced.", gauge,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return float64(s.FlushedOffset) })
	pm("seglog_log_segments", "Segments of the partition, the active one included.", gauge,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return float64(s.Segments) })
	c.size = pd("seglog_log_size_bytes", "Bytes of the partition's .log files.")
	pm("seglog_appended_batches_total", "Batches appended to the partition since its log was opened (idempotent retries not counted).", counter,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return float64(s.AppendedBatches) })
	pm("seglog_appended_records_total", "Records appended to the partition since its log was opened.", counter,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return float64(s.AppendedRecords) })
	pm("seglog_appended_bytes_total", "Bytes of the batches appended to the partition since its log was opened.", counter,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return float64(s.AppendedBytes) })
	pm("seglog_fsyncs_total", "Fsyncs of the partition's segment files since its log was opened (one serves every append of a group commit).", counter,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return float64(s.Fsyncs) })
	pm("seglog_fsync_seconds_total", "Seconds spent in fsyncs of the partition's segment files since its log was opened.", counter,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return s.FsyncTime.Seconds() })
	pm("seglog_fsync_failures_total", "Fsyncs of the partition's segment files that failed since its log was opened (the first fails the log).", counter,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return float64(s.FailedFsyncs) })
	pm("seglog_log_failed", "1 when the partition's log has failed (an fsync failed) and refuses writes until it is reopened, else 0.", gauge,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return b2f(s.Failed != nil) })
	pm("seglog_read_bytes_total", "Bytes of batches returned by reads of the partition since its log was opened (zero-copy regions not counted).", counter,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return float64(s.ReadBatchBytes) })
	pm("seglog_log_open_seconds", "Seconds the partition's log took to open, recovery included.", gauge,
		func(s *storage.Stats, _ *storage.OpenStats) float64 { return s.OpenTime.Seconds() })
	pm("seglog_log_open_clean", "1 when the partition's log had been closed cleanly before it was opened, else 0 (0 also after a read-only open, which does not check).", gauge,
		func(_ *storage.Stats, o *storage.OpenStats) float64 { return b2f(o.Clean) })
	pm("seglog_log_recovered_segments", "Segments rescanned when the partition's log was opened.", gauge,
		func(_ *storage.Stats, o *storage.OpenStats) float64 { return float64(o.RecoveredSegs) })
	pm("seglog_log_recovered_bytes", "Bytes rescanned when the partition's log was opened.", gauge,
		func(_ *storage.Stats, o *storage.OpenStats) float64 { return float64(o.RecoveredBytes) })
	pm("seglog_log_truncated_bytes", "Bytes cut at the first invalid batch when the partition's log was opened.", gauge,
		func(_ *storage.Stats, o *storage.OpenStats) float64 { return float64(o.TruncatedBytes) })
}

// addOffsetsMetrics adds the offsets store's metrics to c.
func (c *Collector) addOffsetsMetrics() {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	groupLabels := []string{"group", "topic", "partition"}
	c.committed = prometheus.NewDesc("seglog_group_committed_offset", "Durable committed offset (the next to read) of a consumer group on a partition.", groupLabels, nil)
	c.lag = prometheus.NewDesc("seglog_group_lag", "Records of the partition after the group's committed offset: log end offset minus committed offset (0 when committed is past the end); open partitions only.", groupLabels, nil)
	om := func(name, help string, typ prometheus.ValueType, val func(*offsets.Stats) float64) {
		c.offs = append(c.offs, offsetsMetric{prometheus.NewDesc(name, help, nil, nil), typ, val})
	}
	om("seglog_offsets_groups", "Consumer groups of the offsets store (durable state).", gauge,
		func(s *offsets.Stats) float64 { return float64(s.Groups) })
	om("seglog_offsets_positions", "Committed (group, topic, partition) positions of the offsets store (durable state).", gauge,
		func(s *offsets.Stats) float64 { return float64(s.Positions) })
	om("seglog_offsets_journal_bytes", "Bytes of the offsets journal the store appends to or follows.", gauge,
		func(s *offsets.Stats) float64 { return float64(s.JournalBytes) })
	om("seglog_offsets_dropped_bytes", "Bytes the offsets store cut from journal tails since it was opened (read-only: found past the last valid record).", gauge,
		func(s *offsets.Stats) float64 { return float64(s.DroppedBytes) })
	om("seglog_offsets_journal_records_total", "Journal records the offsets store appended since it was opened.", counter,
		func(s *offsets.Stats) float64 { return float64(s.Records) })
	om("seglog_offsets_tailed_records_total", "Journal records of other stores on the directory that the offsets store read since it was opened.", counter,
		func(s *offsets.Stats) float64 { return float64(s.Tailed) })
	om("seglog_offsets_reloads_total", "Times the offsets store reread its directory after another store compacted.", counter,
		func(s *offsets.Stats) float64 { return float64(s.Reloads) })
	om("seglog_offsets_fsyncs_total", "Fsyncs of the offsets journal by the store since it was opened.", counter,
		func(s *offsets.Stats) float64 { return float64(s.Syncs) })
	om("seglog_offsets_compactions_total", "Compactions of the offsets journal by the store since it was opened.", counter,
		func(s *offsets.Stats) float64 { return float64(s.Compactions) })
	om("seglog_offsets_compaction_failing", "1 when the offsets store's last compaction failed, else 0.", gauge,
		func(s *offsets.Stats) float64 { return b2f(s.CompactErr != nil) })
	om("seglog_offsets_refresh_failing", "1 when the offsets store's last attempt to follow the journal failed, else 0.", gauge,
		func(s *offsets.Stats) float64 { return b2f(s.RefreshErr != nil) })
}

// addRetentionMetrics adds the retention cleaner's metrics to c.
func (c *Collector) addRetentionMetrics() {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	rm := func(name, help string, typ prometheus.ValueType, val func(*retention.Stats) float64) {
		c.retention = append(c.retention, retentionMetric{prometheus.NewDesc(name, help, nil, nil), typ, val})
	}
	rm("seglog_retention_runs_total", "Retention runs, dry runs included.", counter,
		func(s *retention.Stats) float64 { return float64(s.Runs) })
	rm("seglog_retention_dry_runs_total", "Retention dry runs.", counter,
		func(s *retention.Stats) float64 { return float64(s.DryRuns) })
	rm("seglog_retention_deleted_segments_total", "Segments retention deleted.", counter,
		func(s *retention.Stats) float64 { return float64(s.DeletedSegments) })
	rm("seglog_retention_deleted_bytes_total", "Bytes of the segments retention deleted.", counter,
		func(s *retention.Stats) float64 { return float64(s.DeletedBytes) })
	rm("seglog_retention_failures_total", "Partitions a retention run could not clean, summed over runs.", counter,
		func(s *retention.Stats) float64 { return float64(s.Failures) })
	rm("seglog_retention_last_run_duration_seconds", "Seconds the last retention run took.", gauge,
		func(s *retention.Stats) float64 { return s.LastElapsed.Seconds() })
	c.lastRun = prometheus.NewDesc("seglog_retention_last_run_timestamp_seconds", "When the last retention run started, in seconds since the Unix epoch (absent before the first run).", nil, nil)
}

// Describe sends the descriptors of every metric the Collector may collect.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.part {
		ch <- m.desc
	}
	ch <- c.size
	ch <- c.topics
	ch <- c.openPartitions
	ch <- c.openFiles
	if c.opts.Offsets != nil {
		ch <- c.committed
		ch <- c.lag
		for _, m := range c.offs {
			ch <- m.desc
		}
	}
	if c.opts.Cleaner != nil {
		for _, m := range c.retention {
			ch <- m.desc
		}
		ch <- c.lastRun
	}
	if c.opts.Fsync != nil {
		c.opts.Fsync.Describe(ch)
	}
}

// partKey names a partition.
type partKey struct {
	topic     string
	partition int32
}

// Collect reads the store (and the offsets store and cleaner, if any) and
// sends their metrics. It opens no partition. A log closed meanwhile (its
// topic deleted) is left out; a log whose size cannot be read sends an
// invalid seglog_log_size_bytes, which makes the scrape report the error.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	parts := c.store.OpenPartitions()
	var ends map[partKey]int64
	if c.opts.Offsets != nil {
		ends = make(map[partKey]int64, len(parts))
	}
	for _, p := range parts {
		st, err := p.Stats()
		if errors.Is(err, storage.ErrClosed) {
			continue
		}
		var ost storage.OpenStats // a follower's open recovers nothing
		if p.Log != nil {
			ost = p.Log.OpenStats()
		}
		labels := c.labels(strconv.FormatInt(int64(p.Partition), 10), p.Topic)
		// One allocation for the partition's metrics, which share labels.
		ms := make([]sample, len(c.part)+1)
		for i, m := range c.part {
			ms[i] = sample{m.desc, m.typ, m.val(&st, &ost), labels}
			ch <- &ms[i]
		}
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.size, err)
		} else {
			ms[len(c.part)] = sample{c.size, prometheus.GaugeValue, float64(st.Size), labels}
			ch <- &ms[len(c.part)]
		}
		if ends != nil {
			ends[partKey{p.Topic, p.Partition}] = st.EndOffset
		}
	}
	ch <- prometheus.MustNewConstMetric(c.topics, prometheus.GaugeValue, float64(len(c.store.Topics())))
	ch <- prometheus.MustNewConstMetric(c.openPartitions, prometheus.GaugeValue, float64(len(parts)))
	ch <- prometheus.MustNewConstMetric(c.openFiles, prometheus.GaugeValue, float64(c.store.OpenFiles()))

	if o := c.opts.Offsets; o != nil {
		c.collectOffsets(ch, o, ends)
	}
	if cl := c.opts.Cleaner; cl != nil {
		st := cl.Stats()
		for _, m := range c.retention {
			ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.val(&st))
		}
		if !st.LastRun.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.lastRun, prometheus.GaugeValue, float64(st.LastRun.UnixNano())/1e9)
		}
	}
	if c.opts.Fsync != nil {
		c.opts.Fsync.Collect(ch)
	}
}

// collectOffsets sends the offsets store's metrics: every durable position,
// with its lag where ends knows the partition's end offset.
func (c *Collector) collectOffsets(ch chan<- prometheus.Metric, o *offsets.Store, ends map[partKey]int64) {
	st := o.Stats()
	for _, m := range c.offs {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.val(&st))
	}
	for _, g := range o.Groups() {
		group := groupLabel(g)
		for _, pos := range o.Positions(g) {
			labels := c.labels(strconv.FormatInt(int64(pos.Partition), 10), pos.Topic, group)
			ms := make([]sample, 1, 2)
			ms[0] = sample{c.committed, prometheus.GaugeValue, float64(pos.Offset), labels}
			ch <- &ms[0]
			if end, ok := ends[partKey{pos.Topic, pos.Partition}]; ok {
				ms = append(ms, sample{c.lag, prometheus.GaugeValue, float64(max(end-pos.Offset, 0)), labels})
				ch <- &ms[1]
			}
		}
	}
}

// groupLabel is the label value of a consumer group. Group names are any
// bytes; a label value must be UTF-8, so a name that is not is quoted as
// Go quotes it ("\xff..."), which is.
func groupLabel(g string) string {
	if utf8.ValidString(g) {
		return g
	}
	return strconv.Quote(g)
}

// labels returns the label pairs of a metric, sorted by name as a
// prometheus.Metric must give them: partition, topic and, when given,
// group first.
func (c *Collector) labels(partition, topic string, group ...string) []*dto.LabelPair {
	lp := make([]*dto.LabelPair, 0, 3)
	if len(group) > 0 {
		lp = append(lp, &dto.LabelPair{Name: &c.names.group, Value: &group[0]})
	}
	return append(lp, &dto.LabelPair{Name: &c.names.partition, Value: &partition}, &dto.LabelPair{Name: &c.names.topic, Value: &topic})
}

// sample is a gauge or counter of a partition or a position: a
// prometheus.Metric cheaper than a const metric (one allocation per
// partition for all its metrics, the label pairs shared between them),
// which matters at thousands of partitions.
type sample struct {
	desc   *prometheus.Desc
	typ    prometheus.ValueType
	val    float64
	labels []*dto.LabelPair // sorted by name; read-only
}

// Desc returns the metric's descriptor.
func (s *sample) Desc() *prometheus.Desc { return s.desc }

// Write fills m with the value and labels.
func (s *sample) Write(m *dto.Metric) error {
	m.Label = s.labels
	if s.typ == prometheus.CounterValue {
		m.Counter = &dto.Counter{Value: &s.val}
	} else {
		m.Gauge = &dto.Gauge{Value: &s.val}
	}
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
