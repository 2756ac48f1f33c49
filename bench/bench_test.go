package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHistogramPercentiles(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	require.EqualValues(t, 10000, h.Count())
	l := h.Latency()
	require.NotNil(t, l)
	within := func(want, got time.Duration) {
		t.Helper()
		assert.InEpsilon(t, float64(want), float64(got), 0.002, "want %v got %v", want, got)
	}
	within(5000*time.Microsecond, l.P50)
	within(9900*time.Microsecond, l.P99)
	within(9990*time.Microsecond, l.P999)
	assert.Equal(t, 10000*time.Microsecond, l.Max, "max is exact")
	within(5000500*time.Nanosecond, l.Mean)
}

func TestHistogramEmptyClampAndMerge(t *testing.T) {
	h := NewHistogram()
	assert.Nil(t, h.Latency())
	h.Record(0)
	h.Record(-5)
	h.Record(200 * time.Second)
	assert.EqualValues(t, 3, h.Count())
	assert.EqualValues(t, 3, h.clamped)
	assert.Equal(t, 200*time.Second, h.Latency().Max, "the exact max survives clamping")

	a, b := NewHistogram(), NewHistogram()
	for i := 0; i < 99; i++ {
		a.Record(time.Microsecond)
	}
	b.Record(time.Second)
	a.Merge(b)
	a.Merge(nil)
	assert.EqualValues(t, 100, a.Count())
	assert.InEpsilon(t, float64(time.Microsecond), float64(a.Percentile(50)), 0.002)
	assert.InEpsilon(t, float64(time.Second), float64(a.Percentile(100)), 0.002)
	assert.Equal(t, time.Second, a.Latency().Max)
}

func TestFormatBytes(t *testing.T) {
	assert.Equal(t, "512B", formatBytes(512))
	assert.Equal(t, "1KiB", formatBytes(1024))
	assert.Equal(t, "1.5MiB", formatBytes(3<<19))
	assert.Equal(t, "2GiB", formatBytes(2<<30))
	assert.Equal(t, "850ns", formatDuration(850))
	assert.Equal(t, "1.50µs", formatDuration(1500))
	assert.Equal(t, "12.3ms", formatDuration(12300*time.Microsecond))
	assert.Equal(t, "1.23M", formatRate(1.234e6))
	assert.Equal(t, "146%", formatPercent(1.4567))
}

func TestStatusField(t *testing.T) {
	status := []byte("Name:\tx\nVmPeak:\t  2000 kB\nVmHWM:\t    5120 kB\nVmRSS:\t 100 kB\n")
	v, ok := statusField(status, "VmHWM:")
	require.True(t, ok)
	assert.EqualValues(t, 5120*1024, v)
	_, ok = statusField(status, "VmSwap:")
	assert.False(t, ok)
	resetPeakRSS()
	assert.Greater(t, peakRSS(), int64(0))
}

func sampleReport() *Report {
	h := NewHistogram()
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	r := Result{Name: "produce-1k", Workload: "produce", Records: 1000, Bytes: 1024000, Elapsed: time.Millisecond, Latency: h.Latency(), LatencyOf: "Log.AppendBatch call", DiskBytes: 1034000, PeakRSS: 5 << 20,
		Baseline: &Baseline{Name: "plain sequential write", Bytes: 1024000, Ops: 10, Elapsed: 2 * time.Millisecond}}
	r.param("record", "1KiB")
	r.Baseline.finish()
	r.finish()
	r.metric("x", 1.5)
	rep := &Report{Started: time.Unix(1700000000, 0).UTC(), Elapsed: time.Second, Host: Host{GOOS: "linux", GOARCH: "amd64", CPUs: 2, GoVersion: "go1.26"}, Config: Config{Size: 1 << 20}.WithDefaults(), Results: []Result{r}, Notes: []string{"a note"}}
	addTargets(rep, rep.Config)
	return rep
}

func TestResultRatesAndTargets(t *testing.T) {
	rep := sampleReport()
	r := rep.Results[0]
	assert.InEpsilon(t, 1e6, r.RecordsPerSec, 1e-9)
	assert.InEpsilon(t, 1024, r.MBPerSec, 1e-9)
	assert.InEpsilon(t, 2.0, r.Baseline.Ratio, 1e-9, "twice as fast as the plain write")
	names := map[string]bool{}
	for _, tg := range rep.Targets() {
		names[tg.Name] = tg.Met
	}
	assert.False(t, names["append 1KiB x100, no fsync: >= 2 GB/s"], "1.02 GB/s is below 2 GB/s")
	assert.True(t, names["append 1KiB x100, no fsync: >= 80% of plain write"])
	assert.True(t, names["bytes on disk <= 1.02x payload (1KiB, uncompressed)"])
}

func TestReportTable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, sampleReport().WriteTable(&buf))
	out := buf.String()
	for _, want := range []string{"workload", "produce-1k", "1.00M", "1024", "200%", "50.0µs", "99.0µs", "100µs", "1.010", "5MiB",
		"latency of Log.AppendBatch call", "baseline plain sequential write", "targets", "NOT MET", "met", "a note"} {
		assert.Contains(t, out, want)
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	rep := sampleReport()
	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	var back Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Equal(t, *rep, back)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &raw))
	res := raw["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"records_per_sec", "mb_per_sec", "latency", "baseline", "disk_bytes", "peak_rss_bytes", "targets"} {
		assert.Contains(t, res, k)
	}
	assert.Contains(t, res["latency"], "p999_ns")
}

func TestSuiteSelection(t *testing.T) {
	all, err := Suite(Config{})
	require.NoError(t, err)
	assert.Greater(t, len(all), 10)
	some, err := Suite(Config{Workloads: []string{"e2e", "durable"}})
	require.NoError(t, err)
	require.Len(t, some, 2)
	assert.Equal(t, "end-to-end", some[0].Name())
	assert.Equal(t, "durable", some[1].Name())
	some, err = Suite(Config{Workloads: []string{"durable-sync", "point-read"}})
	require.NoError(t, err)
	require.Len(t, some, 2)
	assert.Equal(t, "point-read", some[0].Name(), "in the order of Groups")
	assert.Equal(t, "durable-sync", some[1].Name())
	for _, full := range []bool{false, true} {
		names := map[string]bool{}
		ws, err := Suite(Config{Full: full})
		require.NoError(t, err)
		for _, w := range ws {
			names[w.Name()] = true
		}
		assert.True(t, names["durable-sync"] && names["point-read"], "full=%v", full)
	}
	_, err = Suite(Config{Workloads: []string{"nope"}})
	assert.ErrorContains(t, err, "unknown workload")
	c := Config{Full: true}.WithDefaults()
	assert.EqualValues(t, FullSize, c.Size)
	assert.EqualValues(t, FullLogSize, c.LogSize)
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, Config{Producers: 8}.Validate())
	for _, c := range []Config{
		{Size: 10, Producers: 1}, {LogSize: 10, Producers: 1}, {Workloads: []string{"nope"}, Producers: 1},
		{Duration: -time.Second, Producers: 1}, {Duration: time.Millisecond, Producers: 1}, {Producers: 0},
	} {
		assert.ErrorIs(t, c.Validate(), ErrUsage, "%+v", c)
	}
	err := RunCommand(context.Background(), Config{Workloads: []string{"offsets"}, Dir: "/proc/no/such/dir", Producers: 1}, CommandOptions{Quiet: true}, io.Discard, io.Discard)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrUsage, "a failure is no usage error")
}

// TestCommandSmallRun runs two quick workloads end to end through
// RunCommand and checks the JSON holds their figures.
func TestCommandSmallRun(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	err := RunCommand(context.Background(), Config{Workloads: []string{"produce", "consume"}, Dir: dir, Size: 2 << 20, Producers: 8}, CommandOptions{JSON: true}, &out, &errb)
	require.NoError(t, err, errb.String())
	assert.Contains(t, errb.String(), "bench: [1/")
	var rep Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	require.NotEmpty(t, rep.Results)
	byName := map[string]Result{}
	for _, r := range rep.Results {
		byName[r.Name] = r
		assert.Greater(t, r.RecordsPerSec, 0.0, r.Name)
		require.NotNil(t, r.Latency, r.Name)
		require.NotNil(t, r.Baseline, r.Name)
		assert.Greater(t, r.Baseline.Ratio, 0.0, r.Name)
	}
	assert.EqualValues(t, 2100, byName["produce-1k"].Records, "2 MiB of 1 KiB records, in whole batches of 100")
	assert.EqualValues(t, 2100, byName["consume-1k"].Records, "consume reads what produce wrote")
	assert.Greater(t, byName["produce-1k"].DiskBytes, byName["produce-1k"].Bytes)
	entries, err := filepathGlob(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "the working directory is removed")
}

func TestWorkloadsSmall(t *testing.T) {
	env := NewEnv(t.TempDir())
	ctx := context.Background()
	for _, w := range []Workload{
		EndToEnd{RecordSize: 256, BatchSize: 10, Partitions: 2, Records: 2000, Rate: 100_000},
		RandomRead{RecordSize: 512, Size: 1 << 20, Reads: 2000},
		Durable{RecordSize: 128, BatchSize: 10, Producers: []int{1, 4}, Duration: 100 * time.Millisecond},
		Recovery{Size: 2 << 20, Segments: []int{1, 10}, Opens: 2},
		Offsets{Committers: 2, Duration: 100 * time.Millisecond},
		Produce{Label: "zstd", RecordSize: 512, BatchSize: 10, Records: 1000, Path: PathRecords, Codec: 3},
	} {
		t.Run(w.Name(), func(t *testing.T) {
			rs, err := w.Run(ctx, env)
			require.NoError(t, err)
			require.NotEmpty(t, rs)
			for _, r := range rs {
				require.NotNil(t, r.Latency, r.Name)
				assert.Greater(t, r.Latency.Count, int64(0), r.Name)
				assert.False(t, strings.Contains(r.Name, " "), r.Name)
			}
		})
	}
}

// TestDurableSyncAndPointRead runs small durable-sync and point-read
// workloads, checks their figures, their targets and that the table
// report stays within 100 columns.
func TestDurableSyncAndPointRead(t *testing.T) {
	env := NewEnv(t.TempDir())
	ctx := context.Background()
	rs, err := DurableSync{RecordSize: 1024, BatchSize: 10, Duration: 100 * time.Millisecond}.Run(ctx, env)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	ds := rs[0]
	assert.Equal(t, "durable-sync", ds.Name)
	syncs := int64(ds.Metrics["syncs"])
	require.Greater(t, syncs, int64(0))
	assert.Equal(t, syncs*10, ds.Records, "10 records per Sync")
	assert.Equal(t, ds.Records*1024, ds.Bytes)
	assert.GreaterOrEqual(t, ds.Metrics["fsyncs_per_sync"], 1.0, "a Sync after an append fsyncs")
	assert.GreaterOrEqual(t, ds.Metrics["fs_syncs_per_sync"], ds.Metrics["fsyncs_per_sync"], "the file system sees every segment fsync")
	assert.Greater(t, ds.Metrics["syncs_per_sec"], 0.0)
	require.NotNil(t, ds.Latency)
	assert.Equal(t, syncs, ds.Latency.Count, "one latency per Sync")
	assert.Greater(t, ds.Latency.P50, time.Duration(0))
	require.NotNil(t, ds.Baseline)
	assert.Greater(t, ds.Baseline.Ops, int64(0))
	assert.Greater(t, ds.Baseline.Ratio, 0.0)
	require.NotNil(t, ds.Baseline.Latency)
	assert.Contains(t, ds.Baseline.Name, "fdatasync")

	rs, err = RandomRead{RecordSize: 1024, BatchSize: 100, Size: 2 << 20, Reads: 3000, Point: true}.Run(ctx, env)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	pr := rs[0]
	assert.Equal(t, "point-read", pr.Name)
	assert.EqualValues(t, 3000, pr.Records)
	assert.Greater(t, pr.RecordsPerSec, 0.0)
	require.NotNil(t, pr.Latency)
	assert.EqualValues(t, 3000, pr.Latency.Count)
	assert.Greater(t, pr.Latency.P50, time.Duration(0))
	assert.GreaterOrEqual(t, pr.Latency.Max, pr.Latency.P99)
	assert.Greater(t, pr.PeakRSS, int64(0))
	assert.Greater(t, pr.Metrics["rss_before_bytes"], 0.0, "RSS is reported")
	for _, k := range []string{"rss_growth_bytes", "rss_growth_anon_bytes", "rss_growth_file_bytes", "baseline_rss_growth_bytes"} {
		assert.Contains(t, pr.Metrics, k)
	}
	assert.LessOrEqual(t, pr.Metrics["rss_growth_file_bytes"], float64(4<<20), "at most the log and its indexes are mapped in")
	require.NotNil(t, pr.Baseline)
	assert.EqualValues(t, 3000, pr.Baseline.Ops)
	assert.Greater(t, pr.Baseline.Ratio, 0.0)
	require.NotNil(t, pr.Baseline.Latency)

	rep := &Report{Host: Host{GOOS: "linux", GOARCH: "amd64", CPUs: 2}, Config: Config{}.WithDefaults(), Results: []Result{ds, pr}}
	addTargets(rep, rep.Config)
	targets := map[string]Target{}
	for _, tg := range rep.Targets() {
		targets[tg.Name] = tg
	}
	require.Len(t, targets, 4)
	assert.Contains(t, targets, "Log.Sync after each 1KiB x10 batch: one fdatasync per Sync")
	assert.Contains(t, targets, "point read (ReadRecord) of one 1KiB record: p50 < 2µs")
	assert.Contains(t, targets, "point read (ReadRecord) of one 1KiB record: p99 < 5µs")
	rss, ok := targets["point-read: RSS growth <= 64 MiB (3000 reads of a 1.95MiB log)"]
	require.True(t, ok, "%v", targets)
	assert.True(t, rss.Met, "2 MiB cannot grow the RSS by 64 MiB: %+v", rss)
	var buf bytes.Buffer
	require.NoError(t, rep.WriteTable(&buf))
	for _, line := range strings.Split(buf.String(), "\n") {
		assert.LessOrEqual(t, len([]rune(line)), reportWidth, line)
	}
	for _, want := range []string{"durable-sync: record=1KiB", "point-read: record=1KiB", "+ fdatasync", "segment fsyncs per Sync", "RSS growth from"} {
		assert.Contains(t, buf.String(), want)
	}
}

func filepathGlob(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "*"))
}

// TestDurableFsyncFigures checks the group-commit figures of the durable
// workload: one goroutine gets an fsync per append, several share them.
func TestDurableFsyncFigures(t *testing.T) {
	env := NewEnv(t.TempDir())
	rs, err := Durable{RecordSize: 128, BatchSize: 10, Producers: []int{1, 4}, Duration: 200 * time.Millisecond}.Run(context.Background(), env)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	for _, r := range rs {
		fsyncs := r.Metrics["fsyncs"]
		require.Greater(t, fsyncs, 0.0, r.Name)
		appends := float64(r.Records / 10)
		assert.InDelta(t, appends, r.Metrics["appends_per_fsync"]*fsyncs, 0.5, "%s: appends per fsync times fsyncs is the appends", r.Name)
		assert.InDelta(t, fsyncs, r.Metrics["fsyncs_per_sec"]*r.Elapsed.Seconds(), 0.5, r.Name)
		assert.Greater(t, r.Metrics["fsync_mean_ns"], 0.0, r.Name)
		assert.Contains(t, strings.Join(r.Notes, "\n"), "appends per fsync", r.Name)
	}
	assert.LessOrEqual(t, rs[0].Metrics["appends_per_fsync"], 1.0, "one goroutine waits for its own fsync every time")
	assert.Greater(t, rs[1].Metrics["appends_per_fsync"], 1.0, "four goroutines share fsyncs")
}
