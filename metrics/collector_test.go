package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/seglog/seglog/metrics"
	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/retention"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (a store's or
// cleaner's not closed).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is the cleaner's clock in the tests.
var t0 = time.Unix(1_700_000_000, 0)

// fixture is a small store with known contents, an offsets store and a
// cleaner that has run once.
type fixture struct {
	root  string
	store *storage.Store
	offs  *offsets.Store
	cl    *retention.Cleaner
	fsync *metrics.FsyncHistogram
	c     *metrics.Collector
	// o0 and o1 are the logs of orders-0 and orders-1; idle-0 is never
	// opened.
	o0, o1 *storage.Log
	// deleted are the bytes of the segments retention deleted from orders-0.
	deleted int64
	// read are the bytes reads returned.
	read int64
}

// newFixture builds, in order: topics orders (2 partitions) and idle (1);
// on orders-0 three batches of 5 records in three segments (two rolls), and a
// fourth of 2 records in the active one; on orders-1 one batch of 3
// records; a Sync of each; one read of orders-0 from offset 15; group
// billing commits orders-0 at 10 and idle-0 at 4, group audit orders-0 at
// 12 and orders-1 at 1; a consumed-policy retention run deletes orders-0's segments [0,5) and
// [5,10).
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir(), fsync: metrics.NewFsyncHistogram(nil)}
	var err error
	f.store, err = storage.OpenStore(f.root, storage.StoreOptions{Log: storage.Options{OnFsync: f.fsync.Observe}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.store.Close() })
	require.NoError(t, f.store.CreateTopic("orders", 2, storage.TopicConfig{}))
	require.NoError(t, f.store.CreateTopic("idle", 1, storage.TopicConfig{}))
	require.Empty(t, f.store.OpenPartitions(), "CreateTopic opened a log")

	f.o0, err = f.store.Log("orders", 0)
	require.NoError(t, err)
	f.o1, err = f.store.Log("orders", 1)
	require.NoError(t, err)
	for i := range 4 {
		n := 5
		if i == 3 {
			n = 2
		}
		recs := make([]storage.Record, n)
		for j := range recs {
			recs[j] = storage.Record{Timestamp: t0.UnixMilli(), Value: fmt.Appendf(nil, "order-%d-%d", i, j)}
		}
		_, err = f.o0.Append(recs...)
		require.NoError(t, err)
		if i < 2 {
			require.NoError(t, f.o0.Roll())
		}
	}
	_, err = f.o1.Append(storage.Record{Value: []byte("a")}, storage.Record{Value: []byte("b")}, storage.Record{Value: []byte("c")})
	require.NoError(t, err)
	require.NoError(t, f.o0.Sync())
	require.NoError(t, f.o1.Sync())

	b, err := f.o0.Read(15, 1<<20)
	require.NoError(t, err)
	f.read = int64(len(b))

	f.offs, err = offsets.Open(offsets.Dir(f.root), offsets.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.offs.Close() })
	require.NoError(t, f.offs.Commit("billing", "orders", 0, 10, ""))
	require.NoError(t, f.offs.Commit("billing", "idle", 0, 4, ""))
	require.NoError(t, f.offs.CommitBatch("audit", []offsets.Commit{{Topic: "orders", Partition: 0, Offset: 12}, {Topic: "orders", Partition: 1, Offset: 1}}))

	segs, err := f.o0.Segments()
	require.NoError(t, err)
	f.deleted = segs[0].Size + segs[1].Size
	f.cl, err = retention.New(f.store, f.offs, retention.Options{
		Default: retention.Policy{Consumed: true},
		Topics:  map[string]retention.Policy{"idle": {}}, // nothing to do: not even opened
		Now:     func() time.Time { return t0 },
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.cl.Close() })
	rep, err := f.cl.RunOnce(context.Background())
	require.NoError(t, err)
	require.Len(t, rep.Deletions, 2)
	require.Equal(t, int64(10), f.o0.StartOffset())
	// The deleted segments' files go in the background: the sizes below
	// are counted from the files.
	require.NoError(t, f.store.WaitDeleted(context.Background()))

	f.c = metrics.New(f.store, metrics.Options{Offsets: f.offs, Cleaner: f.cl, Fsync: f.fsync})
	return f
}

// logBytes sums the bytes of the batches in the .log files of a partition
// directory, as a scan of the files finds them (an active segment's file
// is preallocated past its last batch).
func logBytes(t *testing.T, dir string) int64 {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	var n int64
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		var sc segment.Scanner
		sc.Reset(nil, int64(len(data)), segment.ScanOptions{File: p, Buf: data})
		for sc.Next() {
		}
		require.NoError(t, sc.Err())
		n += sc.End()
	}
	return n
}

// expected is the text of the deterministic metrics of the fixture; the
// byte counts come from the files on disk.
const expected = `
# HELP seglog_appended_batches_total Batches appended to the partition since its log was opened (idempotent retries not counted).
# TYPE seglog_appended_batches_total counter
seglog_appended_batches_total{partition="0",topic="orders"} 4
seglog_appended_batches_total{partition="1",topic="orders"} 1
# HELP seglog_appended_bytes_total Bytes of the batches appended to the partition since its log was opened.
# TYPE seglog_appended_bytes_total counter
seglog_appended_bytes_total{partition="0",topic="orders"} {{.Appended0}}
seglog_appended_bytes_total{partition="1",topic="orders"} {{.Size1}}
# HELP seglog_appended_records_total Records appended to the partition since its log was opened.
# TYPE seglog_appended_records_total counter
seglog_appended_records_total{partition="0",topic="orders"} 17
seglog_appended_records_total{partition="1",topic="orders"} 3
# HELP seglog_fsyncs_total Fsyncs of the partition's segment files since its log was opened (one serves every append of a group commit).
# TYPE seglog_fsyncs_total counter
seglog_fsyncs_total{partition="0",topic="orders"} 3
seglog_fsyncs_total{partition="1",topic="orders"} 1
# HELP seglog_fsync_failures_total Fsyncs of the partition's segment files that failed since its log was opened (the first fails the log).
# TYPE seglog_fsync_failures_total counter
seglog_fsync_failures_total{partition="0",topic="orders"} 0
seglog_fsync_failures_total{partition="1",topic="orders"} 0
# HELP seglog_group_committed_offset Durable committed offset (the next to read) of a consumer group on a partition.
# TYPE seglog_group_committed_offset gauge
seglog_group_committed_offset{group="audit",partition="0",topic="orders"} 12
seglog_group_committed_offset{group="audit",partition="1",topic="orders"} 1
seglog_group_committed_offset{group="billing",partition="0",topic="idle"} 4
seglog_group_committed_offset{group="billing",partition="0",topic="orders"} 10
# HELP seglog_group_lag Records of the partition after the group's committed offset: log end offset minus committed offset (0 when committed is past the end); open partitions only.
# TYPE seglog_group_lag gauge
seglog_group_lag{group="audit",partition="0",topic="orders"} 5
seglog_group_lag{group="audit",partition="1",topic="orders"} 2
seglog_group_lag{group="billing",partition="0",topic="orders"} 7
# HELP seglog_log_end_offset Offset the next record appended to the partition gets.
# TYPE seglog_log_end_offset gauge
seglog_log_end_offset{partition="0",topic="orders"} 17
seglog_log_end_offset{partition="1",topic="orders"} 3
# HELP seglog_log_failed 1 when the partition's log has failed (an fsync failed) and refuses writes until it is reopened, else 0.
# TYPE seglog_log_failed gauge
seglog_log_failed{partition="0",topic="orders"} 0
seglog_log_failed{partition="1",topic="orders"} 0
# HELP seglog_log_flushed_offset Offset below which every record of the partition is fsynced.
# TYPE seglog_log_flushed_offset gauge
seglog_log_flushed_offset{partition="0",topic="orders"} 17
seglog_log_flushed_offset{partition="1",topic="orders"} 3
# HELP seglog_log_open_clean 1 when the partition's log had been closed cleanly before it was opened, else 0 (0 also after a read-only open, which does not check).
# TYPE seglog_log_open_clean gauge
seglog_log_open_clean{partition="0",topic="orders"} {{.Clean}}
seglog_log_open_clean{partition="1",topic="orders"} {{.Clean}}
# HELP seglog_log_recovered_bytes Bytes rescanned when the partition's log was opened.
# TYPE seglog_log_recovered_bytes gauge
seglog_log_recovered_bytes{partition="0",topic="orders"} 0
seglog_log_recovered_bytes{partition="1",topic="orders"} 0
# HELP seglog_log_segments Segments of the partition, the active one included.
# TYPE seglog_log_segments gauge
seglog_log_segments{partition="0",topic="orders"} 1
seglog_log_segments{partition="1",topic="orders"} 1
# HELP seglog_log_size_bytes Bytes of the partition's .log files.
# TYPE seglog_log_size_bytes gauge
seglog_log_size_bytes{partition="0",topic="orders"} {{.Size0}}
seglog_log_size_bytes{partition="1",topic="orders"} {{.Size1}}
# HELP seglog_log_start_offset First readable offset of the partition.
# TYPE seglog_log_start_offset gauge
seglog_log_start_offset{partition="0",topic="orders"} 10
seglog_log_start_offset{partition="1",topic="orders"} 0
# HELP seglog_open_partitions Partitions whose log is open.
# TYPE seglog_open_partitions gauge
seglog_open_partitions 2
# HELP seglog_offsets_groups Consumer groups of the offsets store (durable state).
# TYPE seglog_offsets_groups gauge
seglog_offsets_groups 2
# HELP seglog_offsets_positions Committed (group, topic, partition) positions of the offsets store (durable state).
# TYPE seglog_offsets_positions gauge
seglog_offsets_positions 4
# HELP seglog_read_bytes_total Bytes of batches returned by reads of the partition since its log was opened (zero-copy regions not counted).
# TYPE seglog_read_bytes_total counter
seglog_read_bytes_total{partition="0",topic="orders"} {{.Read}}
seglog_read_bytes_total{partition="1",topic="orders"} 0
# HELP seglog_retention_deleted_bytes_total Bytes of the segments retention deleted.
# TYPE seglog_retention_deleted_bytes_total counter
seglog_retention_deleted_bytes_total {{.Deleted}}
# HELP seglog_retention_deleted_segments_total Segments retention deleted.
# TYPE seglog_retention_deleted_segments_total counter
seglog_retention_deleted_segments_total 2
# HELP seglog_retention_failures_total Partitions a retention run could not clean, summed over runs.
# TYPE seglog_retention_failures_total counter
seglog_retention_failures_total 0
# HELP seglog_retention_last_run_timestamp_seconds When the last retention run started, in seconds since the Unix epoch (absent before the first run).
# TYPE seglog_retention_last_run_timestamp_seconds gauge
seglog_retention_last_run_timestamp_seconds 1.7e+09
# HELP seglog_retention_runs_total Retention runs, dry runs included.
# TYPE seglog_retention_runs_total counter
seglog_retention_runs_total 1
# HELP seglog_topics Topics of the store.
# TYPE seglog_topics gauge
seglog_topics 2
`

// deterministic are the metrics the expected text holds.
var deterministic = []string{
	"seglog_appended_batches_total", "seglog_appended_bytes_total", "seglog_appended_records_total",
	"seglog_fsyncs_total", "seglog_fsync_failures_total", "seglog_group_committed_offset", "seglog_group_lag",
	"seglog_log_end_offset", "seglog_log_failed", "seglog_log_flushed_offset", "seglog_log_open_clean", "seglog_log_recovered_bytes",
	"seglog_log_segments", "seglog_log_size_bytes", "seglog_log_start_offset", "seglog_open_partitions",
	"seglog_offsets_groups", "seglog_offsets_positions", "seglog_read_bytes_total",
	"seglog_retention_deleted_bytes_total", "seglog_retention_deleted_segments_total",
	"seglog_retention_failures_total", "seglog_retention_last_run_timestamp_seconds",
	"seglog_retention_runs_total", "seglog_topics",
}

func TestCollectMatchesStore(t *testing.T) {
	f := newFixture(t)
	before := f.store.OpenPartitions()

	size0, size1 := logBytes(t, f.o0.Dir()), logBytes(t, f.o1.Dir())
	var text strings.Builder
	require.NoError(t, template.Must(template.New("").Parse(expected)).Execute(&text, map[string]any{
		"Appended0": size0 + f.deleted, // every batch appended is in a .log or was deleted
		"Size0":     size0,
		"Size1":     size1,
		"Read":      f.read,
		"Deleted":   f.deleted,
		"Clean":     0, // new logs: no clean-shutdown marker to find
	}))
	// The read from 15 returned the last batch (offsets 15-16) only.
	assert.Positive(t, f.read)
	assert.Less(t, f.read, size0)

	require.NoError(t, testutil.CollectAndCompare(f.c, strings.NewReader(text.String()), deterministic...))
	assert.Equal(t, before, f.store.OpenPartitions(), "a scrape opened a partition")
	_, ok := openNames(f.store)["idle-0"]
	assert.False(t, ok, "idle-0 was opened")

	// The rest are timings and counts that vary: check them against the
	// store.
	mfs := gather(t, f.c)
	st0, err := f.o0.Stats()
	require.NoError(t, err)
	assert.InDelta(t, st0.FsyncTime.Seconds(), value(t, mfs, "seglog_fsync_seconds_total", "orders", "0"), 1e-9)
	assert.Positive(t, value(t, mfs, "seglog_fsync_seconds_total", "orders", "0"))
	assert.InDelta(t, st0.OpenTime.Seconds(), value(t, mfs, "seglog_log_open_seconds", "orders", "0"), 1e-9)
	assert.Positive(t, value(t, mfs, "seglog_log_open_seconds", "orders", "0"))
	assert.Equal(t, float64(f.store.OpenFiles()), value(t, mfs, "seglog_open_files"))
	assert.Positive(t, value(t, mfs, "seglog_open_files"))
	ost := f.offs.Stats()
	assert.Equal(t, float64(ost.JournalBytes), value(t, mfs, "seglog_offsets_journal_bytes"))
	assert.Equal(t, float64(3), value(t, mfs, "seglog_offsets_journal_records_total"))
	assert.Equal(t, float64(ost.Syncs), value(t, mfs, "seglog_offsets_fsyncs_total"))
	assert.Equal(t, float64(0), value(t, mfs, "seglog_offsets_compaction_failing"))
	assert.Equal(t, f.cl.Stats().LastElapsed.Seconds(), value(t, mfs, "seglog_retention_last_run_duration_seconds"))

	// The histogram saw every fsync of every log: 3 + 1 above.
	h := family(t, mfs, "seglog_fsync_duration_seconds").Metric[0].Histogram
	assert.Equal(t, uint64(4), h.GetSampleCount())
	st1, err := f.o1.Stats()
	require.NoError(t, err)
	assert.InDelta(t, (st0.FsyncTime + st1.FsyncTime).Seconds(), h.GetSampleSum(), 1e-9)
}

func TestScrapeFollowsAppends(t *testing.T) {
	f := newFixture(t)
	_, err := f.o1.Append(storage.Record{Value: []byte("d")})
	require.NoError(t, err)
	require.NoError(t, f.offs.Commit("audit", "orders", 1, 4, ""))
	require.NoError(t, f.offs.Commit("billing", "orders", 1, 100, "")) // past the end
	_, err = f.o1.Read(0, 1<<20)
	require.NoError(t, err)
	size1 := logBytes(t, f.o1.Dir())

	mfs := gather(t, f.c)
	assert.Equal(t, float64(size1), value(t, mfs, "seglog_appended_bytes_total", "orders", "1"))
	assert.Equal(t, float64(size1), value(t, mfs, "seglog_read_bytes_total", "orders", "1"))
	assert.Equal(t, float64(2), value(t, mfs, "seglog_appended_batches_total", "orders", "1"))
	assert.Equal(t, float64(4), value(t, mfs, "seglog_log_end_offset", "orders", "1"))
	assert.Equal(t, float64(3), value(t, mfs, "seglog_log_flushed_offset", "orders", "1"), "SyncNever: the append is not fsynced")
	lags := map[string]float64{}
	for _, m := range family(t, mfs, "seglog_group_lag").Metric {
		if labelValue(m, "partition") == "1" {
			lags[labelValue(m, "group")] = m.Gauge.GetValue()
		}
	}
	assert.Equal(t, map[string]float64{"audit": 0, "billing": 0}, lags)
}

func TestCount(t *testing.T) {
	f := newFixture(t)
	// 18 metrics for each of 2 open partitions; 3 store gauges; 4
	// committed offsets and 3 lags; 11 offsets-store metrics; 7 retention
	// metrics; 1 histogram.
	assert.Equal(t, 18*2+3+4+3+11+7+1, testutil.CollectAndCount(f.c))
	assert.Equal(t, 2, testutil.CollectAndCount(f.c, "seglog_log_end_offset"))

	// Without the optional parts, only the store's.
	bare := metrics.New(f.store, metrics.Options{})
	assert.Equal(t, 18*2+3, testutil.CollectAndCount(bare))
}

func TestLint(t *testing.T) {
	f := newFixture(t)
	problems, err := testutil.CollectAndLint(f.c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestPedantic registers the collector with a registry that checks every
// metric collected was described, consistently.
func TestPedantic(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(f.c))
	_, err := reg.Gather()
	require.NoError(t, err)
}

func TestNoPartitionOpened(t *testing.T) {
	root := t.TempDir()
	st, err := storage.OpenStore(root, storage.StoreOptions{})
	require.NoError(t, err)
	require.NoError(t, st.CreateTopic("t", 8, storage.TopicConfig{}))
	l, err := st.Log("t", 3)
	require.NoError(t, err)
	_, err = l.Append(storage.Record{Value: []byte("x")})
	require.NoError(t, err)
	offs, err := offsets.Open(offsets.Dir(root), offsets.Options{})
	require.NoError(t, err)
	defer offs.Close()
	for p := range int32(8) {
		require.NoError(t, offs.Commit("g", "t", p, 0, ""))
	}
	c := metrics.New(st, metrics.Options{Offsets: offs})
	before := st.OpenPartitions()
	require.Len(t, before, 1)

	// Eight committed offsets, one lag: the open partition's.
	assert.Equal(t, 8, testutil.CollectAndCount(c, "seglog_group_committed_offset"))
	assert.Equal(t, 1, testutil.CollectAndCount(c, "seglog_group_lag"))
	assert.Equal(t, before, st.OpenPartitions())
	require.NoError(t, st.Close())

	// A reopened store has no partition open: nothing per partition,
	// and still none open after the scrape.
	st, err = storage.OpenStore(root, storage.StoreOptions{})
	require.NoError(t, err)
	defer st.Close()
	c = metrics.New(st, metrics.Options{Offsets: offs})
	assert.Equal(t, 0, testutil.CollectAndCount(c, "seglog_log_end_offset"))
	assert.Equal(t, 0, testutil.CollectAndCount(c, "seglog_group_lag"))
	assert.Equal(t, 8, testutil.CollectAndCount(c, "seglog_group_committed_offset"))
	assert.Empty(t, st.OpenPartitions())
}

// TestDeletedTopic checks that a log closed between OpenPartitions and
// Stats (its topic deleted) is left out, not an error.
func TestDeletedTopic(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.store.DeleteTopic("orders"))
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(f.c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		assert.NotEqual(t, "seglog_log_end_offset", mf.GetName())
	}
}

func TestReadOnlyStore(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.cl.Close())
	require.NoError(t, f.offs.Close())
	require.NoError(t, f.store.Close())

	st, err := storage.OpenStore(f.root, storage.StoreOptions{Log: storage.Options{ReadOnly: true}})
	require.NoError(t, err)
	defer st.Close()
	offs, err := offsets.OpenReadOnly(offsets.Dir(f.root), offsets.Options{})
	require.NoError(t, err)
	defer offs.Close()
	_, err = st.Follower("orders", 0)
	require.NoError(t, err)
	c := metrics.New(st, metrics.Options{Offsets: offs})
	// A read-only open does not look at the clean-shutdown marker:
	// OpenStats.Clean is false, whatever the last close was.
	want := `
# HELP seglog_log_end_offset Offset the next record appended to the partition gets.
# TYPE seglog_log_end_offset gauge
seglog_log_end_offset{partition="0",topic="orders"} 17
# HELP seglog_log_start_offset First readable offset of the partition.
# TYPE seglog_log_start_offset gauge
seglog_log_start_offset{partition="0",topic="orders"} 10
# HELP seglog_log_open_clean 1 when the partition's log had been closed cleanly before it was opened, else 0 (0 also after a read-only open, which does not check).
# TYPE seglog_log_open_clean gauge
seglog_log_open_clean{partition="0",topic="orders"} 0
# HELP seglog_group_lag Records of the partition after the group's committed offset: log end offset minus committed offset (0 when committed is past the end); open partitions only.
# TYPE seglog_group_lag gauge
seglog_group_lag{group="audit",partition="0",topic="orders"} 5
seglog_group_lag{group="billing",partition="0",topic="orders"} 7
`
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want),
		"seglog_log_end_offset", "seglog_log_start_offset", "seglog_log_open_clean", "seglog_group_lag"))
}

func TestWriteText(t *testing.T) {
	f := newFixture(t)
	var buf bytes.Buffer
	require.NoError(t, metrics.WriteText(&buf, f.c))
	out := buf.String()
	assert.Contains(t, out, "# TYPE seglog_fsync_duration_seconds histogram\n")
	assert.Contains(t, out, `seglog_log_end_offset{partition="0",topic="orders"} 17`+"\n")
	assert.Contains(t, out, "seglog_fsync_duration_seconds_count 4\n")

	// Registering one collector twice is an error, and nothing is written.
	buf.Reset()
	require.Error(t, metrics.WriteText(&buf, f.c, f.c))
	assert.Empty(t, buf.String())
}

// openNames returns the open partitions' directory names.
func openNames(s *storage.Store) map[string]bool {
	m := map[string]bool{}
	for _, p := range s.OpenPartitions() {
		m[storage.PartitionDir(p.Topic, p.Partition)] = true
	}
	return m
}

func gather(t *testing.T, c prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	return mfs
}

func family(t *testing.T, mfs []*dto.MetricFamily, name string) *dto.MetricFamily {
	t.Helper()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// value returns the value of the gauge or counter name, with labels topic
// and partition when given.
func value(t *testing.T, mfs []*dto.MetricFamily, name string, topicPartition ...string) float64 {
	t.Helper()
	for _, m := range family(t, mfs, name).Metric {
		if len(topicPartition) == 2 && (labelValue(m, "topic") != topicPartition[0] || labelValue(m, "partition") != topicPartition[1]) {
			continue
		}
		if m.Gauge != nil {
			return m.Gauge.GetValue()
		}
		return m.Counter.GetValue()
	}
	t.Fatalf("no metric %s%v", name, topicPartition)
	return 0
}

// TestGroupNotUTF8 checks that a group name that is not UTF-8 (offsets
// allows any bytes) is quoted into a valid label value, not a panic or a
// failed scrape.
func TestGroupNotUTF8(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.offs.Commit("g\xff", "orders", 1, 2, ""))
	mfs := gather(t, f.c)
	var got []string
	for _, m := range family(t, mfs, "seglog_group_lag").Metric {
		if labelValue(m, "partition") == "1" {
			got = append(got, labelValue(m, "group"))
		}
	}
	assert.Equal(t, []string{"\"g\\xff\"", "audit"}, got)
}
