package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// AppendPath is how a produce workload hands records to the log.
type AppendPath int

const (
	// PathBatch appends batches that the producer encoded beforehand with
	// Log.AppendBatch: what a broker does with a producer's request. Only
	// the append is timed.
	PathBatch AppendPath = iota
	// PathRecords appends records with Log.Append, which encodes (and
	// compresses) each batch: the encoding is timed too.
	PathRecords
)

// String names the append call: AppendBatch or Append.
func (p AppendPath) String() string {
	if p == PathRecords {
		return "Append"
	}
	return "AppendBatch"
}

// Produce appends records to Partitions logs from Producers goroutines
// (producer i writes to partition i mod Partitions), Records in all or for
// Duration. Its baseline is a plain sequential write of the same payload
// bytes, one batch per write, with an fsync where the workload syncs.
type Produce struct {
	Label      string        // result name; default "produce"
	RecordSize int           // value bytes per record (1024)
	BatchSize  int           // records per batch (100)
	Partitions int           // logs (1)
	Producers  int           // goroutines (1)
	Codec      segment.Codec // compression (none)
	Path       AppendPath    // AppendBatch (pre-encoded) or Append
	Sync       storage.SyncPolicy
	SyncEvery  int   // records between fsyncs for SyncEveryN
	Records    int64 // records to append (rounded up to whole batches)
	// Duration, when Records is 0, runs for this long instead.
	Duration time.Duration
	// ValidateRecords sets storage.Options.ValidateRecords: AppendBatch
	// decodes every record, not only the header and checksum.
	ValidateRecords bool
	// SegmentBytes is storage.Options.SegmentBytes (default 1 GiB).
	SegmentBytes int64
	// NoBaseline skips the plain-file measurement.
	NoBaseline bool
}

// Name returns the result name.
func (w Produce) Name() string {
	if w.Label != "" {
		return w.Label
	}
	return "produce"
}

func (w Produce) withDefaults() Produce {
	if w.RecordSize <= 0 {
		w.RecordSize = 1024
	}
	if w.BatchSize <= 0 {
		w.BatchSize = 100
	}
	if w.Partitions <= 0 {
		w.Partitions = 1
	}
	if w.Producers <= 0 {
		w.Producers = 1
	}
	if w.Records <= 0 && w.Duration <= 0 {
		w.Records = 100_000
	}
	if w.SyncEvery <= 0 {
		w.SyncEvery = storage.DefaultSyncEveryN
	}
	return w
}

// Run measures the workload and, unless the data is compressed or synced,
// keeps it as a data set for later consume and random-read workloads.
func (w Produce) Run(ctx context.Context, env *Env) ([]Result, error) {
	w = w.withDefaults()
	dir, err := env.workDir(w.Name())
	if err != nil {
		return nil, err
	}
	syncEvery := 0
	switch w.Sync {
	case storage.SyncAlways:
		syncEvery = 1
	case storage.SyncEveryN:
		syncEvery = max(1, w.SyncEvery/w.BatchSize)
	}
	baseline := func(bytes int64, prev *Baseline) (*Baseline, error) {
		if w.NoBaseline {
			return nil, nil
		}
		settle()
		b, path, err := plainWrite(ctx, env.Dir, bytes, w.RecordSize*w.BatchSize, syncEvery)
		if path != "" {
			os.Remove(path)
		}
		settle()
		if err != nil {
			return nil, fmt.Errorf("bench: baseline: %w", err)
		}
		if prev != nil && prev.MBPerSec > b.MBPerSec {
			return prev, nil
		}
		return &b, nil
	}
	// The baseline runs before and after the workload and the faster of
	// the two counts: on a noisy machine the plain file gets its best.
	var base *Baseline
	if w.Records > 0 {
		if base, err = baseline(w.Records*int64(w.RecordSize), nil); err != nil {
			return nil, err
		}
	}
	res, err := w.run(ctx, env, dir, env.progress)
	if err != nil {
		return nil, err
	}
	if res.Baseline, err = baseline(res.Bytes, base); err != nil {
		return nil, err
	}
	res.finish()
	if w.Codec == segment.CodecNone && w.Records > 0 && w.Producers == w.Partitions {
		env.datasets[dataSpec{w.RecordSize, w.BatchSize, w.Partitions, res.Records}] = dir
	}
	return []Result{res}, nil
}

// newResult returns the workload's result with its parameters.
func (w Produce) newResult() Result {
	res := Result{Name: w.Name(), Workload: "produce"}
	res.param("record", formatBytes(int64(w.RecordSize)))
	res.param("batch", w.BatchSize)
	res.param("partitions", w.Partitions)
	res.param("producers", w.Producers)
	res.param("codec", w.Codec)
	res.param("path", w.Path)
	res.param("sync", w.Sync)
	if w.Sync == storage.SyncEveryN {
		res.param("sync-every", w.SyncEvery)
	}
	if w.ValidateRecords {
		res.param("validate", "records")
	}
	res.LatencyOf = "Log." + w.Path.String() + " call (one batch)"
	return res
}

// producerSets is how many batches (or record sets) each producer
// prepares and cycles through.
const producerSets = 4

// producerData prepares producer i's batches (PathBatch) or record sets
// (PathRecords).
func (w Produce) producerData(i int) (batches [][]byte, recSets [][]segment.Record, err error) {
	const k = producerSets
	if w.Path == PathBatch {
		batches, err = encodeBatches(k, w.BatchSize, w.RecordSize, w.Codec, uint64(i*k+1))
	} else {
		for j := 0; j < k; j++ {
			recSets = append(recSets, makeRecords(w.BatchSize, w.RecordSize, w.Codec != segment.CodecNone, uint64(i*k+j+1)))
		}
	}
	return batches, recSets, err
}

// produceLoop appends one producer's batches to l until claimed passes
// totalBatches (or, when Records is 0, until Duration after begin), timing
// each append in h, and returns the records appended.
func (w Produce) produceLoop(ctx context.Context, l *storage.Log, batches [][]byte, recSets [][]segment.Record, h *Histogram, begin time.Time, claimed *atomic.Int64, totalBatches int64, prog *progress) (int64, error) {
	const k = producerSets
	var count int64
	deadline := begin.Add(w.Duration)
	for j := 0; ; j++ {
		if w.Records > 0 {
			if claimed.Add(1) > totalBatches {
				break
			}
		} else if time.Now().After(deadline) {
			break
		}
		if j&255 == 0 && ctx.Err() != nil {
			return count, ctx.Err()
		}
		t := time.Now()
		var err error
		if w.Path == PathBatch {
			_, err = l.AppendBatch(batches[j%k])
		} else {
			_, err = l.Append(recSets[j%k]...)
		}
		h.Record(time.Since(t))
		if err != nil {
			return count, err
		}
		count += int64(w.BatchSize)
		if w.Records > 0 {
			prog.add(int64(w.BatchSize))
		} else if j&15 == 0 {
			prog.set(int64(time.Since(begin) / time.Millisecond))
		}
	}
	return count, nil
}

// run appends into dir and measures; it does not measure the baseline.
func (w Produce) run(ctx context.Context, env *Env, dir string, prog *progress) (Result, error) {
	res := w.newResult()
	opts := storage.Options{Compression: w.Codec, Sync: w.Sync, SyncEveryRecords: w.SyncEvery, ValidateRecords: w.ValidateRecords, SegmentBytes: w.SegmentBytes}
	logs, err := openLogs(dir, w.Partitions, opts)
	if err != nil {
		return res, err
	}
	defer func() { closeLogs(logs) }()

	totalBatches := (w.Records + int64(w.BatchSize) - 1) / int64(w.BatchSize)
	if w.Records > 0 {
		prog.setTotal(totalBatches * int64(w.BatchSize))
	} else {
		prog.setTotal(int64(w.Duration / time.Millisecond))
	}
	var claimed atomic.Int64
	hists := make([]*Histogram, w.Producers)
	counts := make([]int64, w.Producers)
	errs := make([]error, w.Producers)
	ready, start := sync.WaitGroup{}, make(chan struct{})
	var done sync.WaitGroup
	var begin time.Time
	for i := 0; i < w.Producers; i++ {
		ready.Add(1)
		done.Add(1)
		go func(i int) {
			defer done.Done()
			h := NewHistogram()
			hists[i] = h
			l := logs[i%w.Partitions]
			batches, recSets, err := w.producerData(i)
			errs[i] = err
			ready.Done()
			<-start
			if errs[i] != nil {
				return
			}
			counts[i], errs[i] = w.produceLoop(ctx, l, batches, recSets, h, begin, &claimed, totalBatches, prog)
		}(i)
	}
	ready.Wait()
	resetPeakRSS()
	begin = time.Now()
	close(start)
	done.Wait()
	res.Elapsed = time.Since(begin)
	res.PeakRSS = peakRSS()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	h := NewHistogram()
	for i := range hists {
		h.Merge(hists[i])
		res.Records += counts[i]
	}
	res.Latency = h.Latency()
	res.Bytes = res.Records * int64(w.RecordSize)
	if w.Sync == storage.SyncAlways {
		// Before Close, whose own fsyncs are not the workload's.
		if err := fsyncFigures(logs, &res); err != nil {
			return res, err
		}
	}
	if err := closeLogs(logs); err != nil {
		return res, err
	}
	logs = nil
	res.DiskBytes = diskUsage(dir)
	res.finish()
	return res, nil
}

// Durable appends with an fsync before every append returns
// (storage.SyncAlways), from one goroutine and then from each count in
// Producers, all into one log, for Duration each. Concurrent appenders
// share fsyncs (group commit), so N goroutines should get far more than
// one. The baseline is one goroutine writing the same batch to a plain
// file and fsyncing after each write: the fsync-bound rate of this disk.
type Durable struct {
	RecordSize int           // 1024
	BatchSize  int           // 10
	Producers  []int         // {1, 8}
	Duration   time.Duration // per variant (2s)
}

// Name returns "durable".
func (w Durable) Name() string { return "durable" }

// Run measures every variant.
func (w Durable) Run(ctx context.Context, env *Env) ([]Result, error) {
	if w.RecordSize <= 0 {
		w.RecordSize = 1024
	}
	if w.BatchSize <= 0 {
		w.BatchSize = 10
	}
	if len(w.Producers) == 0 {
		w.Producers = []int{1, 8}
	}
	if w.Duration <= 0 {
		w.Duration = 2 * time.Second
	}
	base, err := plainFsyncLoop(ctx, env.Dir, w.RecordSize*w.BatchSize, w.Duration)
	if err != nil {
		return nil, fmt.Errorf("bench: baseline: %w", err)
	}
	var out []Result
	var one float64
	for _, n := range w.Producers {
		p := Produce{Label: fmt.Sprintf("durable-%dp", n), RecordSize: w.RecordSize, BatchSize: w.BatchSize, Producers: n, Sync: storage.SyncAlways, Duration: w.Duration}.withDefaults()
		dir, err := env.workDir(p.Label)
		if err != nil {
			return nil, err
		}
		res, err := p.run(ctx, env, dir, env.progress)
		if err != nil {
			return nil, err
		}
		res.Workload = "durable"
		b := base
		res.Baseline = &b
		res.finish()
		res.Baseline.Ratio = res.RecordsPerSec / float64(w.BatchSize) / base.OpsPerSec // appends/s over fsyncs/s
		appendsPerSec := res.RecordsPerSec / float64(w.BatchSize)
		res.metric("appends_per_sec", appendsPerSec)
		if n == 1 {
			one = appendsPerSec
		} else if one > 0 {
			res.metric("speedup_vs_1", appendsPerSec/one)
			res.Notes = append(res.Notes, fmt.Sprintf("group commit: %.2fx the appends/s of one goroutine", appendsPerSec/one))
		}
		res.Notes = append(res.Notes, "vs base compares appends/s with the plain file's write+fsync/s")
		out = append(out, res)
		_ = os.RemoveAll(dir)
	}
	return out, nil
}

// fsyncFigures adds the segment fsyncs the logs made since Open to res:
// fsyncs per second, appends (batches) per fsync and the mean fsync time.
// With SyncAlways every append waits for an fsync, so appends per fsync
// is how many appenders each one served (group commit).
func fsyncFigures(logs []*storage.Log, res *Result) error {
	var fsyncs, batches int64
	var spent time.Duration
	for _, l := range logs {
		st, err := l.Stats()
		if err != nil {
			return err
		}
		fsyncs += st.Fsyncs
		batches += st.AppendedBatches
		spent += st.FsyncTime
	}
	if fsyncs == 0 || res.Elapsed <= 0 {
		return fmt.Errorf("bench: %s: no fsync in %d appends with SyncAlways", res.Name, batches)
	}
	res.metric("fsyncs", float64(fsyncs))
	res.metric("fsyncs_per_sec", float64(fsyncs)/res.Elapsed.Seconds())
	res.metric("appends_per_fsync", float64(batches)/float64(fsyncs))
	res.metric("fsync_mean_ns", float64(spent)/float64(fsyncs))
	res.Notes = append(res.Notes, fmt.Sprintf("%s fsyncs/s, %.2f appends per fsync, fsync mean %s",
		sig3(float64(fsyncs)/res.Elapsed.Seconds()), float64(batches)/float64(fsyncs), formatDuration(spent/time.Duration(fsyncs))))
	return nil
}
