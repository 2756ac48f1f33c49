package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// RandomRead reads single records by random offset from a log of Size
// bytes of RecordSize records, one record per batch (BatchSize 1) unless
// set, in the page cache. One read is Log.ReadInto at the offset with a
// budget of one byte (so exactly one batch) and a decode of the batch up
// to the record. The baseline preads RecordSize bytes at random aligned
// positions of a plain file of the same size.
type RandomRead struct {
	Label      string
	RecordSize int   // 1024
	BatchSize  int   // 1
	Size       int64 // payload bytes of the log (64 MiB)
	Reads      int   // 200,000
}

// Name returns the result name.
func (w RandomRead) Name() string {
	if w.Label != "" {
		return w.Label
	}
	return "random-read"
}

// Run measures the workload.
func (w RandomRead) Run(ctx context.Context, env *Env) ([]Result, error) {
	if w.RecordSize <= 0 {
		w.RecordSize = 1024
	}
	if w.BatchSize <= 0 {
		w.BatchSize = 1
	}
	if w.Size <= 0 {
		w.Size = 64 << 20
	}
	if w.Reads <= 0 {
		w.Reads = 200_000
	}
	records := w.Size / int64(w.RecordSize) / int64(w.BatchSize) * int64(w.BatchSize)
	dir, err := env.dataset(ctx, dataSpec{w.RecordSize, w.BatchSize, 1, records})
	if err != nil {
		return nil, err
	}
	res := Result{Name: w.Name(), Workload: "random-read", LatencyOf: "read of one record (ReadInto + decode)"}
	res.param("record", formatBytes(int64(w.RecordSize)))
	res.param("batch", w.BatchSize)
	res.param("log", formatBytes(records*int64(w.RecordSize)))
	res.param("reads", w.Reads)
	logs, err := openLogs(dir, 1, storage.Options{})
	if err != nil {
		return nil, err
	}
	defer closeLogs(logs)
	l := logs[0]
	if l.EndOffset() != records {
		return nil, fmt.Errorf("bench: data set holds %d records, want %d", l.EndOffset(), records)
	}
	offs := make([]int64, w.Reads)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range offs {
		offs[i] = r.Int64N(records)
	}
	env.progress.setTotal(int64(w.Reads))
	// Room for the batch and the index interval the log may read with it.
	buf := make([]byte, 0, w.BatchSize*(w.RecordSize+64)+segment.HeaderSize+64<<10)
	h := NewHistogram()
	resetPeakRSS()
	begin := time.Now()
	if err := w.readAt(ctx, env, l, offs, buf, h); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(begin)
	res.PeakRSS = peakRSS()
	res.Records = int64(w.Reads)
	res.Bytes = res.Records * int64(w.RecordSize)
	res.Latency = h.Latency()

	if res.Baseline, err = w.baseline(ctx, env, records); err != nil {
		return nil, err
	}
	res.finish()
	res.MBPerSec = 0 // compared by reads per second
	return []Result{res}, nil
}

// readAt reads the record at each of offs from l into buf, timing each
// read in h, and checks that it was found.
func (w RandomRead) readAt(ctx context.Context, env *Env, l *storage.Log, offs []int64, buf []byte, h *Histogram) error {
	var it segment.RecordIter
	for i, off := range offs {
		if i&1023 == 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			env.progress.add(1024)
		}
		t := time.Now()
		data, err := l.ReadInto(buf, off, 1)
		if err != nil {
			return err
		}
		if err := it.Reset(data, segment.DefaultLimits); err != nil {
			return err
		}
		found := false
		for it.Next() {
			if it.Record().Offset == off {
				found = true
				break
			}
		}
		h.Record(time.Since(t))
		if !found || len(it.Record().Value) != w.RecordSize {
			return fmt.Errorf("bench: record %d not found in its batch (%v)", off, it.Err())
		}
	}
	return nil
}

// baseline writes a plain file of records records and reads Reads random
// records of it.
func (w RandomRead) baseline(ctx context.Context, env *Env, records int64) (*Baseline, error) {
	_, path, err := plainWrite(ctx, env.Dir, records*int64(w.RecordSize), 1<<20, 0)
	if path != "" {
		defer os.Remove(path)
	}
	if err != nil {
		return nil, fmt.Errorf("bench: baseline: %w", err)
	}
	b, err := plainRandomRead(ctx, path, w.RecordSize, w.Reads)
	if err != nil {
		return nil, fmt.Errorf("bench: baseline: %w", err)
	}
	return &b, nil
}
