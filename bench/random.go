package bench

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// RandomRead reads single records by random offset from a log of Size
// bytes of RecordSize records, one record per batch (BatchSize 1) unless
// set, uncompressed, warm in the page cache. One read is Log.ReadInto at
// the offset with a budget of one byte (so exactly one batch) and a
// decode of the batch up to the record; with Point, it is Log.ReadRecord,
// the point read, which in an uncompressed batch copies only the record.
//
// Besides the latency it measures the process's RSS growth: the RSS after
// the reads (the log still open) minus the RSS before Open, split into
// anonymous memory and file-backed pages (the mapped segment files the
// reads touched). The baseline preads RecordSize bytes of a plain file of
// the same payload size at the same positions (record i at
// i*RecordSize), with its own RSS growth.
type RandomRead struct {
	Label      string
	RecordSize int   // 1024
	BatchSize  int   // 1
	Size       int64 // payload bytes of the log (64 MiB)
	Reads      int   // 200,000
	Point      bool  // Log.ReadRecord instead of ReadInto and a decode
}

// Name returns the result name.
func (w RandomRead) Name() string {
	switch {
	case w.Label != "":
		return w.Label
	case w.Point:
		return "point-read"
	}
	return "random-read"
}

func (w RandomRead) withDefaults() RandomRead {
	orDefault(&w.RecordSize, 1024)
	orDefault(&w.BatchSize, 1)
	orDefault(&w.Size, DefaultLogSize)
	orDefault(&w.Reads, 200_000)
	return w
}

func (w RandomRead) newResult(records int64) Result {
	res := Result{Name: w.Name(), Workload: "random-read", LatencyOf: "read of one record (ReadInto + decode)"}
	if w.Point {
		res.Workload, res.LatencyOf = "point-read", "Log.ReadRecord call (one record)"
	}
	res.param("record", formatBytes(int64(w.RecordSize)))
	res.param("batch", w.BatchSize)
	res.param("log", formatBytes(records*int64(w.RecordSize)))
	res.param("reads", w.Reads)
	return res
}

// Run measures the workload.
func (w RandomRead) Run(ctx context.Context, env *Env) ([]Result, error) {
	w = w.withDefaults()
	records := w.Size / int64(w.RecordSize) / int64(w.BatchSize) * int64(w.BatchSize)
	if records == 0 {
		return nil, fmt.Errorf("bench: %s: a log of %s holds no batch", w.Name(), formatBytes(w.Size))
	}
	dir, err := env.dataset(ctx, dataSpec{w.RecordSize, w.BatchSize, 1, records})
	if err != nil {
		return nil, err
	}
	res := w.newResult(records)
	offs := make([]int64, w.Reads)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range offs {
		offs[i] = r.Int64N(records)
	}
	if err := warmFiles(dir); err != nil {
		return nil, err
	}
	env.progress.setTotal(int64(w.Reads))
	// Room for the batch and the index interval the log may read with it.
	buf := make([]byte, 0, w.BatchSize*(w.RecordSize+64)+segment.HeaderSize+64<<10)
	h := NewHistogram()
	resetPeakRSS()
	before := currentRSS()
	logs, err := openLogs(dir, 1, storage.Options{})
	if err != nil {
		return nil, err
	}
	defer closeLogs(logs)
	l := logs[0]
	if l.EndOffset() != records {
		return nil, fmt.Errorf("bench: data set holds %d records, want %d", l.EndOffset(), records)
	}
	begin := time.Now()
	if err := w.readAt(ctx, env, l, offs, buf, h); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(begin)
	growth := currentRSS().sub(before)
	res.PeakRSS = peakRSS()
	if err := l.Close(); err != nil {
		return nil, err
	}
	res.Records = int64(w.Reads)
	res.Bytes = res.Records * int64(w.RecordSize)
	res.Latency = h.Latency()

	base, baseGrowth, err := w.baseline(ctx, env, records, offs)
	if err != nil {
		return nil, err
	}
	res.Baseline = base
	res.finish()
	res.MBPerSec = 0 // compared by reads per second
	if before.Total > 0 {
		res.metric("rss_before_bytes", float64(before.Total))
		res.metric("rss_growth_bytes", float64(growth.Total))
		res.metric("rss_growth_anon_bytes", float64(growth.Anon))
		res.metric("rss_growth_file_bytes", float64(growth.File))
		res.metric("baseline_rss_growth_bytes", float64(baseGrowth.Total))
		res.Notes = append(res.Notes, fmt.Sprintf("RSS growth from before Open to after the reads: %s (file-backed %s: pages of the mapped segment files the reads touched; anonymous %s); the plain file's preads: %s",
			formatGrowth(growth.Total), formatGrowth(growth.File), formatGrowth(growth.Anon), formatGrowth(baseGrowth.Total)))
	}
	return []Result{res}, nil
}

// readAt reads the record at each of offs from l, reusing buf, timing
// each read in h, and checks that it is the record asked for.
func (w RandomRead) readAt(ctx context.Context, env *Env, l *storage.Log, offs []int64, buf []byte, h *Histogram) error {
	var it segment.RecordIter
	var rec segment.Record
	for i, off := range offs {
		if i&1023 == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			env.progress.add(min(1024, int64(len(offs)-i)))
		}
		t := time.Now()
		var err error
		if w.Point {
			rec, buf, err = l.ReadRecord(buf, off)
		} else {
			rec, err = readOne(l, &it, buf, off)
		}
		h.Record(time.Since(t))
		if err != nil {
			return err
		}
		if rec.Offset != off || len(rec.Value) != w.RecordSize {
			return fmt.Errorf("bench: read of record %d returned offset %d with %d value bytes", off, rec.Offset, len(rec.Value))
		}
	}
	return nil
}

// readOne reads the batch holding off with ReadInto and decodes it up to
// the record at off.
func readOne(l *storage.Log, it *segment.RecordIter, buf []byte, off int64) (segment.Record, error) {
	data, err := l.ReadInto(buf, off, 1)
	if err != nil {
		return segment.Record{}, err
	}
	if err := it.Reset(data, segment.DefaultLimits); err != nil {
		return segment.Record{}, err
	}
	for it.Next() {
		if it.Record().Offset == off {
			return *it.Record(), nil
		}
	}
	return segment.Record{}, fmt.Errorf("bench: record %d not found in its batch (%v)", off, it.Err())
}

// baseline writes a plain file of records records and preads the record
// at each of offs, returning the RSS growth of the preads too.
func (w RandomRead) baseline(ctx context.Context, env *Env, records int64, offs []int64) (*Baseline, rssSample, error) {
	_, path, err := plainWrite(ctx, env.Dir, records*int64(w.RecordSize), 1<<20, 0)
	if path != "" {
		defer os.Remove(path)
	}
	if err != nil {
		return nil, rssSample{}, fmt.Errorf("bench: baseline: %w", err)
	}
	pos := make([]int64, len(offs))
	for i, off := range offs {
		pos[i] = off * int64(w.RecordSize)
	}
	before := currentRSS()
	b, err := plainPreads(ctx, path, w.RecordSize, pos)
	if err != nil {
		return nil, rssSample{}, fmt.Errorf("bench: baseline: %w", err)
	}
	b.Name += " at the offsets the log read, times the record size"
	return &b, currentRSS().sub(before), nil
}

// warmFiles reads every regular file under dir once, with read(2) and
// not through a map (so the process's RSS does not grow), to have them in
// the page cache.
func warmFiles(dir string) error {
	buf := make([]byte, 1<<20)
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		for {
			if _, err := f.Read(buf); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	})
}
