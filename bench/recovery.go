package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/seglog/seglog/storage"
)

// Recovery measures storage.Open of one log of Size payload bytes (1 KiB
// records in batches of 100):
//
//   - after a clean Close, for each count in Segments (the log rolled into
//     that many segments), Opens times each; the figure is the open time.
//   - after a crash: the log's files are copied while it is open, before
//     Close (so the copy has no clean-shutdown marker and a recovery
//     point at 0), and each open of a fresh copy rescans and validates the
//     whole log. Its throughput is the bytes rescanned per second of Open,
//     beside a plain sequential read of the same bytes. The copy is in the
//     page cache: this is the engine's scan rate, not the disk's.
type Recovery struct {
	Size     int64 // payload bytes (64 MiB)
	Segments []int // clean-open variants ({1, 100, 1000})
	Opens    int   // clean opens per variant (10); unclean opens: 3
}

// Name returns "recovery".
func (w Recovery) Name() string { return "recovery" }

// Run measures every variant.
func (w Recovery) Run(ctx context.Context, env *Env) ([]Result, error) {
	if w.Size <= 0 {
		w.Size = 64 << 20
	}
	if len(w.Segments) == 0 {
		w.Segments = []int{1, 100, 1000}
	}
	if w.Opens <= 0 {
		w.Opens = 10
	}
	// Records of 1 KiB in batches of up to 100, as many batches as a
	// multiple of the largest segment count, so that every variant gets
	// exactly its number of segments.
	maxSegs := int64(slices.Max(w.Segments))
	batchSize := min(100, max(1, w.Size/recoveryRecordSize/maxSegs))
	totalBatches := max(1, w.Size/recoveryRecordSize/batchSize/maxSegs) * maxSegs
	records := totalBatches * batchSize
	env.progress.setTotal(int64(len(w.Segments)))
	var out []Result
	for vi, segs := range w.Segments {
		res, crashed, err := w.clean(ctx, env, segs, vi == 0, batchSize, totalBatches)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
		env.progress.add(1)

		if crashed != "" {
			r, err := w.unclean(ctx, env, crashed, records*recoveryRecordSize)
			_ = os.RemoveAll(crashed)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// recoveryRecordSize is the size of the records of a Recovery's log.
const recoveryRecordSize = 1024

// clean measures the clean opens of a log of totalBatches batches of
// batchSize records in segs segments; with keepCrashed it also returns a
// copy of the log taken before its Close.
func (w Recovery) clean(ctx context.Context, env *Env, segs int, keepCrashed bool, batchSize, totalBatches int64) (Result, string, error) {
	const recordSize = recoveryRecordSize
	records := totalBatches * batchSize
	name := fmt.Sprintf("recovery-clean-%dseg", segs)
	dir, err := env.workDir(name)
	if err != nil {
		return Result{}, "", err
	}
	segBytes, crashed, err := writeRecoveryLog(ctx, env, dir, segs, keepCrashed, batchSize, totalBatches)
	if err != nil {
		return Result{}, "", err
	}
	res := Result{Name: name, Workload: "recovery", LatencyOf: "Open after a clean Close"}
	res.param("log", formatBytes(records*recordSize))
	res.param("segments", segs)
	res.param("batch", batchSize)
	res.param("opens", w.Opens)
	h := NewHistogram()
	var openStats storage.OpenStats
	unlisted := 0
	for i := 0; i < w.Opens; i++ {
		t := time.Now()
		l, err := storage.Open(partitionDir(dir, 0), storage.Options{SegmentBytes: segBytes})
		d := time.Since(t)
		if err != nil {
			return Result{}, "", err
		}
		h.Record(d)
		res.Elapsed += d
		openStats = l.OpenStats()
		if openStats.DirUnchanged {
			unlisted++
		}
		if err := l.Close(); err != nil {
			return Result{}, "", err
		}
	}
	if !openStats.Clean {
		return Result{}, "", fmt.Errorf("bench: %s: open after a clean close was not clean", name)
	}
	res.Records = int64(w.Opens)
	res.Latency = h.Latency()
	res.metric("segments_found", float64(openStats.Segments))
	res.metric("open_p50_ms", float64(res.Latency.P50)/1e6)
	res.metric("unlisted_opens", float64(unlisted))
	res.Notes = append(res.Notes, fmt.Sprintf("%d of %d opens found the directory unchanged since the last clean close (its stamp in the marker) and did not list it; the first Close after writing records the stamp only once the clock has moved past the directory's last change", unlisted, w.Opens))
	cold, coldRead, ok, err := coldOpens(partitionDir(dir, 0), storage.Options{SegmentBytes: segBytes}, w.Opens)
	if err != nil {
		return Result{}, "", err
	}
	if ok {
		res.metric("cold_open_p50_ms", float64(cold.Latency().P50)/1e6)
		res.metric("cold_first_read_p50_ms", float64(coldRead.Latency().P50)/1e6)
		res.Notes = append(res.Notes, "cold: the log's files dropped from the page cache (posix_fadvise DONTNEED) before each open; first read: one ReadRecord at a random offset after it")
	}
	res.DiskBytes = diskUsage(dir)
	res.Bytes = records * recordSize
	res.finish()
	res.RecordsPerSec, res.MBPerSec = 0, 0 // the open time is the figure
	res.Notes = append(res.Notes, fmt.Sprintf("%s found; an open changes no file (the clean-shutdown marker goes at the first write)", countOf(openStats.Segments, "segment")))
	_ = os.RemoveAll(dir)
	return res, crashed, nil
}

// writeRecoveryLog writes totalBatches batches of batchSize records into
// one log under dir in segs segments and closes it; with keepCrashed it
// first copies the open log's files. It returns the segment size and the
// copy's directory.
func writeRecoveryLog(ctx context.Context, env *Env, dir string, segs int, keepCrashed bool, batchSize, totalBatches int64) (int64, string, error) {
	const recordSize = recoveryRecordSize
	// Size segments so that the log holds exactly segs of them: a
	// segment rolls when the next batch would take it past
	// SegmentBytes.
	batches, err := encodeBatches(1, int(batchSize), recordSize, 0, 9)
	if err != nil {
		return 0, "", err
	}
	batchLen := int64(len(batches[0]))
	segBytes := (totalBatches + int64(segs) - 1) / int64(segs) * batchLen
	p := Produce{RecordSize: recordSize, BatchSize: int(batchSize), Records: totalBatches * batchSize}.withDefaults()
	logs, err := openLogs(dir, 1, storage.Options{SegmentBytes: segBytes})
	if err != nil {
		return 0, "", err
	}
	if err := appendN(ctx, logs[0], p); err != nil {
		closeLogs(logs)
		return 0, "", err
	}
	crashed := ""
	if keepCrashed {
		crashed = filepath.Join(env.Dir, "recovery-crashed")
		if err := copyDir(partitionDir(dir, 0), crashed); err != nil {
			closeLogs(logs)
			return 0, "", err
		}
	}
	if err := closeLogs(logs); err != nil {
		return 0, "", err
	}
	return segBytes, crashed, nil
}

func (w Recovery) unclean(ctx context.Context, env *Env, crashed string, payload int64) (Result, error) {
	res := Result{Name: "recovery-unclean", Workload: "recovery", LatencyOf: "Open after a crash (full rescan)"}
	res.param("log", formatBytes(payload))
	res.param("segments", 1)
	const opens = 3
	res.param("opens", opens)
	h := NewHistogram()
	var scanned int64
	for i := 0; i < opens; i++ {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		dir := filepath.Join(env.Dir, fmt.Sprintf("recovery-unclean-%d", i))
		if err := copyDir(crashed, dir); err != nil {
			return res, err
		}
		t := time.Now()
		l, err := storage.Open(dir, storage.Options{})
		d := time.Since(t)
		if err != nil {
			return res, err
		}
		st := l.OpenStats()
		_ = l.Close()
		_ = os.RemoveAll(dir)
		if st.Clean || st.RecoveredBytes == 0 {
			return res, fmt.Errorf("bench: the crashed copy opened without a rescan (%+v)", st)
		}
		h.Record(d)
		res.Elapsed += d
		scanned += st.RecoveredBytes
	}
	res.Latency = h.Latency()
	res.Records = opens
	res.Bytes = scanned // scan rate: bytes rescanned per second of Open
	res.finish()
	res.RecordsPerSec = 0
	res.metric("scan_gb_per_sec", res.MBPerSec/1e3)
	res.Notes = append(res.Notes, "MB/s is log bytes rescanned (validated, indexes rebuilt) per second of Open, from the page cache")

	// Baseline: read the same bytes from a plain file.
	_, path, err := plainWrite(ctx, env.Dir, scanned/opens, 1<<20, 0)
	if path != "" {
		defer os.Remove(path)
	}
	if err != nil {
		return res, fmt.Errorf("bench: baseline: %w", err)
	}
	b, err := plainRead(ctx, path, 1<<20)
	if err != nil {
		return res, fmt.Errorf("bench: baseline: %w", err)
	}
	res.Baseline = &b
	res.finish()
	res.RecordsPerSec = 0
	return res, nil
}

// appendN appends p.Records records to l with AppendBatch, untimed.
func appendN(ctx context.Context, l *storage.Log, p Produce) error {
	batches, err := encodeBatches(4, p.BatchSize, p.RecordSize, 0, 9)
	if err != nil {
		return err
	}
	for i := int64(0); i*int64(p.BatchSize) < p.Records; i++ {
		if i&255 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if _, err := l.AppendBatch(batches[i%4]); err != nil {
			return err
		}
	}
	return nil
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o750); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	// Written back before the timed open, so that the open's own fsync of
	// what it recovered does not pay for the copy.
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
