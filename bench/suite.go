package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/segment"
)

// Config chooses the sizes of a suite run.
type Config struct {
	// Dir is where the suite makes its temporary working directory
	// ("": the system's temporary directory). Put it on the disk to measure.
	Dir string `json:"dir"`
	// Keep leaves the working directory for seglog dump instead of
	// removing it.
	Keep bool `json:"keep"`
	// Size is the payload of each produce workload and what consume reads
	// (256 MiB; 2 GiB with Full).
	Size int64 `json:"size"`
	// LogSize is the log of random-read, point-read and recovery (64 MiB;
	// 512 MiB with Full).
	LogSize int64 `json:"log_size"`
	// Duration is the length of each durable, durable-sync, offsets and
	// end-to-end variant (2s; 5s with Full).
	Duration time.Duration `json:"duration_ns"`
	// Producers is N of the durable group-commit variant and the
	// concurrent offsets committers (8).
	Producers int `json:"producers"`
	// Full sets the sizes that seglog's performance targets are stated for
	// where a size is not given.
	Full bool `json:"full"`
	// Workloads selects workload groups by name (all when empty).
	Workloads []string `json:"workloads,omitempty"`
	// Extra are groups of workloads defined outside this package (a
	// protocol server's, which this package may not import), run after
	// the groups of Groups, and selected by name like them.
	Extra []ExtraGroup `json:"-"`
}

// ExtraGroup is a group of workloads defined outside this package.
// Workloads returns them for a Config with its defaults filled.
type ExtraGroup struct {
	Name      string
	Workloads func(c Config) []Workload
}

// groupNames returns the names of Groups and of c's extra groups.
func (c Config) groupNames() []string {
	names := slices.Clone(Groups)
	for _, g := range c.Extra {
		names = append(names, g.Name)
	}
	return names
}

// Groups lists the workload groups a suite can run, in order.
var Groups = []string{"produce", "consume", "end-to-end", "random-read", "point-read", "durable", "durable-sync", "recovery", "offsets"}

// Default sizes.
const (
	DefaultSize     = 256 << 20
	DefaultLogSize  = 64 << 20
	DefaultDuration = 2 * time.Second
	FullSize        = 2 << 30
	FullLogSize     = 512 << 20
	FullDuration    = 5 * time.Second
)

// WithDefaults fills unset sizes.
func (c Config) WithDefaults() Config {
	size, logSize, d := int64(DefaultSize), int64(DefaultLogSize), DefaultDuration
	if c.Full {
		size, logSize, d = FullSize, FullLogSize, FullDuration
	}
	if c.Size <= 0 {
		c.Size = size
	}
	if c.LogSize <= 0 {
		c.LogSize = logSize
	}
	if c.Duration <= 0 {
		c.Duration = d
	}
	if c.Producers <= 0 {
		c.Producers = 8
	}
	return c
}

func canonicalGroup(name string, names []string) (string, bool) {
	switch name {
	case "e2e", "endtoend":
		name = "end-to-end"
	case "random", "randomread":
		name = "random-read"
	}
	return name, slices.Contains(names, name)
}

type suiteEntry struct {
	group string
	w     Workload
}

// Suite returns the workloads of a run, in order.
func Suite(c Config) ([]Workload, error) {
	c = c.WithDefaults()
	want := map[string]bool{}
	for _, n := range c.Workloads {
		g, ok := canonicalGroup(n, c.groupNames())
		if !ok {
			return nil, fmt.Errorf("unknown workload %q (want one of %s)", n, strings.Join(c.groupNames(), ", "))
		}
		want[g] = true
	}
	k1 := c.Size / 1024
	e2eRate := 100_000
	// A roll costs several fsyncs and file creations (about 25 ms on a
	// slow virtual disk), so the 1,000-segment log is built only in the
	// full preset.
	segCounts := []int{1, 100}
	if c.Full {
		segCounts = append(segCounts, 1000)
	}
	all := []suiteEntry{
		{"produce", Produce{Label: "produce-1k", RecordSize: 1024, BatchSize: 100, Records: k1}},
		{"produce", Produce{Label: "produce-100b", RecordSize: 100, BatchSize: 100, Records: c.Size / 100}},
		{"produce", Produce{Label: "produce-100b-validate", RecordSize: 100, BatchSize: 100, Records: c.Size / 400, ValidateRecords: true}},
		{"produce", Produce{Label: "produce-1k-4p", RecordSize: 1024, BatchSize: 100, Partitions: 4, Producers: 4, Records: k1}},
		{"produce", Produce{Label: "produce-1k-zstd-append", RecordSize: 1024, BatchSize: 100, Codec: segment.CodecZstd, Path: PathRecords, Records: k1 / 4}},
		{"produce", Produce{Label: "produce-1k-lz4-append", RecordSize: 1024, BatchSize: 100, Codec: segment.CodecLZ4, Path: PathRecords, Records: k1 / 4}},
		{"consume", Consume{Label: "consume-1k", RecordSize: 1024, BatchSize: 100, Records: k1}},
		{"consume", Consume{Label: "consume-1k-reader", RecordSize: 1024, BatchSize: 100, Records: k1, Mode: ModeRecords}},
		{"consume", Consume{Label: "consume-1k-4p-2c", RecordSize: 1024, BatchSize: 100, Partitions: 4, Consumers: 2, Records: k1}},
		{"end-to-end", EndToEnd{Label: "end-to-end", RecordSize: 1024, BatchSize: 100, Rate: e2eRate, Records: int64(float64(e2eRate) * c.Duration.Seconds())}},
		{"random-read", RandomRead{Label: "random-read", RecordSize: 1024, Size: c.LogSize}},
		{"point-read", RandomRead{Label: "point-read", RecordSize: 1024, BatchSize: 100, Size: c.LogSize, Reads: 100_000, Point: true}},
		{"durable", Durable{RecordSize: 1024, BatchSize: 10, Producers: []int{1, c.Producers}, Duration: c.Duration}},
		{"durable-sync", DurableSync{RecordSize: 1024, BatchSize: 10, Duration: c.Duration}},
		{"recovery", Recovery{Size: c.LogSize, Segments: segCounts}},
		{"offsets", Offsets{Label: "offsets-1c-always", Committers: 1, Sync: offsets.SyncAlways, Duration: c.Duration / 2}},
		{"offsets", Offsets{Label: fmt.Sprintf("offsets-%dc-always", c.Producers), Committers: c.Producers, Sync: offsets.SyncAlways, Duration: c.Duration / 2}},
		{"offsets", Offsets{Label: "offsets-1c-never", Committers: 1, Sync: offsets.SyncNever, Duration: c.Duration / 2}},
	}
	for _, g := range c.Extra {
		for _, w := range g.Workloads(c) {
			all = append(all, suiteEntry{g.Name, w})
		}
	}
	var out []Workload
	for _, e := range all {
		if len(want) == 0 || want[e.group] {
			out = append(out, e.w)
		}
	}
	return out, nil
}

// Run runs the suite of c, showing progress on progressW (nil: none),
// and returns the report. On an error the report holds the results
// measured before it.
func Run(ctx context.Context, c Config, progressW io.Writer) (*Report, error) {
	c = c.WithDefaults()
	ws, err := Suite(c)
	if err != nil {
		return nil, err
	}
	if c.Dir != "" {
		if err := os.MkdirAll(c.Dir, 0o750); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp(c.Dir, "seglog-bench-")
	if err != nil {
		return nil, err
	}
	rep := &Report{Started: time.Now(), Config: c, Host: Host{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Dir: dir, Kernel: kernelRelease()}}
	if c.Keep {
		rep.Notes = append(rep.Notes, "data kept in "+dir+" (seglog dump reads it)")
	} else {
		defer os.RemoveAll(dir)
	}
	env := NewEnv(dir)
	env.progress = newProgress(progressW, len(ws))
	defer env.progress.close()
	var runErr error
	for _, w := range ws {
		env.progress.begin(w.Name())
		settle()
		rs, err := w.Run(ctx, env)
		env.progress.end(err)
		if err != nil {
			runErr = fmt.Errorf("bench: %s: %w", w.Name(), err)
			break
		}
		rep.Results = append(rep.Results, rs...)
	}
	rep.Elapsed = time.Since(rep.Started)
	addTargets(rep, c)
	rep.Notes = append(rep.Notes,
		"throughput counts payload (record values); MB = 10^6 bytes; rec/s counts records, or operations where there are no records (reads, opens, commits)",
		"vs base: the workload's throughput over a plain file doing the same work in the same directory in this run (see each baseline); figures on a shared or busy machine are noisy, compare within one run",
		"data is read from the page cache: it was just written",
		"each workload, and each produce workload's baselines, start once the writeback before them is done (sync(2))",
	)
	if !c.Full && (c.Size < FullSize || c.LogSize < FullLogSize) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("sizes are reduced to run in about a minute (produce %s, logs %s, no 1,000-segment open); the targets are stated for 2 GiB / 1 GiB / 512 MiB: run with --full for those", formatBytes(c.Size), formatBytes(c.LogSize)))
	}
	return rep, runErr
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// addTargets checks seglog's performance targets against the results that
// measure them.
func addTargets(rep *Report, c Config) {
	find := func(name string) *Result {
		for i := range rep.Results {
			if rep.Results[i].Name == name {
				return &rep.Results[i]
			}
		}
		return nil
	}
	ratio := func(r *Result) float64 {
		if r.Baseline == nil {
			return 0
		}
		return r.Baseline.Ratio
	}
	if r := find("produce-1k"); r != nil {
		r.target("append 1KiB x100, no fsync: >= 2 GB/s", fmt.Sprintf("%.2f GB/s", r.MBPerSec/1e3), r.MBPerSec >= 2000)
		r.target("append 1KiB x100, no fsync: >= 80% of plain write", formatPercent(ratio(r)), ratio(r) >= 0.8)
		over := float64(r.DiskBytes) / float64(max(r.Bytes, 1))
		r.target("bytes on disk <= 1.02x payload (1KiB, uncompressed)", fmt.Sprintf("%.4fx", over), over <= 1.02)
		r.target(fmt.Sprintf("peak RSS < 64 MiB appending (2 GiB in the target; here %s)", formatBytes(r.Bytes)), formatBytes(r.PeakRSS), r.PeakRSS > 0 && r.PeakRSS < 64<<20)
	}
	if r := find("produce-100b"); r != nil {
		r.target("append 100B x100: >= 8M records/s", formatRate(r.RecordsPerSec)+" rec/s", r.RecordsPerSec >= 8e6)
	}
	var one float64
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Workload != "durable" {
			continue
		}
		if r.Name == "durable-1p" {
			one = r.Metrics["appends_per_sec"]
			r.target("durable 1KiB x10, fsync per batch: >= plain write+fsync rate", formatPercent(ratio(r)), ratio(r) >= 1)
		} else if s, ok := r.Metrics["speedup_vs_1"]; ok && one > 0 {
			r.target(fmt.Sprintf("durable, %s goroutines syncing each append: >= 5x one goroutine", strings.TrimSuffix(strings.TrimPrefix(r.Name, "durable-"), "p")), fmt.Sprintf("%.2fx", s), s >= 5)
		}
	}
	if r := find("consume-1k"); r != nil {
		r.target("sequential read from page cache: >= 4 GB/s", fmt.Sprintf("%.2f GB/s", r.MBPerSec/1e3), r.MBPerSec >= 4000)
		r.target("sequential read: >= 80% of plain read", formatPercent(ratio(r)), ratio(r) >= 0.8)
	}
	if r := find("random-read"); r != nil && r.Latency != nil {
		r.target("random read of one 1KiB record: p50 < 1µs", formatDuration(r.Latency.P50), r.Latency.P50 < time.Microsecond)
		r.target("random read of one 1KiB record: p99 < 2µs", formatDuration(r.Latency.P99), r.Latency.P99 < 2*time.Microsecond)
	}
	if r := find("point-read"); r != nil && r.Latency != nil {
		r.target("point read (ReadRecord) of one 1KiB record: p50 < 2µs", formatDuration(r.Latency.P50), r.Latency.P50 < 2*time.Microsecond)
		r.target("point read (ReadRecord) of one 1KiB record: p99 < 5µs", formatDuration(r.Latency.P99), r.Latency.P99 < 5*time.Microsecond)
	}
	for _, name := range []string{"random-read", "point-read"} {
		if r := find(name); r != nil {
			g, ok := r.Metrics["rss_growth_bytes"]
			measured := "not measured"
			if ok {
				measured = formatGrowth(int64(g))
			}
			r.target(fmt.Sprintf("%s: RSS growth <= 64 MiB (%s reads of a %s log)", name, paramValue(r, "reads"), paramValue(r, "log")), measured, ok && g <= 64<<20)
		}
	}
	if r := find("durable-sync"); r != nil {
		f, calls := r.Metrics["fsyncs_per_sync"], r.Metrics["fs_syncs_per_sync"]
		r.target("Log.Sync after each 1KiB x10 batch: one fdatasync per Sync", fmt.Sprintf("%.2f segment fsyncs, %.2f sync calls in all", f, calls), f == 1 && calls == 1)
	}
	for i := range rep.Results {
		r := &rep.Results[i]
		if strings.HasPrefix(r.Name, "recovery-clean-") && r.Latency != nil {
			segs := paramValue(r, "segments") + " segments"
			if segs == "1 segments" {
				segs = "1 segment"
			}
			r.target(fmt.Sprintf("open after clean close (%s, %s): p50 < 2 ms", paramValue(r, "log"), segs), fmt.Sprintf("p50 %s, max %s", formatDuration(r.Latency.P50), formatDuration(r.Latency.Max)), r.Latency.P50 < 2*time.Millisecond)
			if cold, ok := r.Metrics["cold_open_p50_ms"]; ok {
				first := r.Metrics["cold_first_read_p50_ms"]
				r.target(fmt.Sprintf("cold open and first read (%s, %s): p50 < 3 ms", paramValue(r, "log"), segs),
					fmt.Sprintf("p50 open %.2f ms + first read %.2f ms", cold, first), cold+first < 3)
			}
		}
	}
	if r := find("recovery-unclean"); r != nil {
		r.target("unclean recovery scan: >= 1 GB/s", fmt.Sprintf("%.2f GB/s", r.MBPerSec/1e3), r.MBPerSec >= 1000)
	}
}

func paramValue(r *Result, name string) string {
	for _, p := range r.Params {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}
