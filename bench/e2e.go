package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"golang.org/x/sync/errgroup"
)

// EndToEnd runs, per partition, one producer appending pre-encoded
// batches and one tailing consumer (Wait, then ReadInto) at the same time,
// and measures the latency from append to delivery: from the moment the
// producer was due to append a batch (its schedule at Rate, so that a
// stall delays every batch behind it, with no coordinated omission; or
// the moment it called AppendBatch when Rate is 0) to the moment the
// consumer holds the batch's bytes.
type EndToEnd struct {
	Label      string
	RecordSize int   // 1024
	BatchSize  int   // 100
	Partitions int   // 1
	Records    int64 // in all (200,000)
	Rate       int   // records/s in all; 0: as fast as possible
}

// Name returns the result name.
func (w EndToEnd) Name() string {
	if w.Label != "" {
		return w.Label
	}
	return "end-to-end"
}

// Run measures the workload.
func (w EndToEnd) Run(ctx context.Context, env *Env) ([]Result, error) {
	if w.RecordSize <= 0 {
		w.RecordSize = 1024
	}
	if w.BatchSize <= 0 {
		w.BatchSize = 100
	}
	if w.Partitions <= 0 {
		w.Partitions = 1
	}
	if w.Records <= 0 {
		w.Records = 200_000
	}
	dir, err := env.workDir(w.Name())
	if err != nil {
		return nil, err
	}
	res := Result{Name: w.Name(), Workload: "end-to-end", LatencyOf: "append to delivery (batch due -> consumer holds it)"}
	res.param("record", formatBytes(int64(w.RecordSize)))
	res.param("batch", w.BatchSize)
	res.param("partitions", w.Partitions)
	res.param("producers", w.Partitions)
	res.param("consumers", w.Partitions)
	if w.Rate > 0 {
		res.param("rate", formatRate(float64(w.Rate))+" rec/s")
	} else {
		res.param("rate", "unlimited")
	}
	logs, err := openLogs(dir, w.Partitions, storage.Options{})
	if err != nil {
		return nil, err
	}
	defer func() { closeLogs(logs) }()

	batchesPer := (w.Records/int64(w.Partitions) + int64(w.BatchSize) - 1) / int64(w.BatchSize)
	var interval time.Duration // between one producer's batches
	if w.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(w.BatchSize) * float64(w.Partitions) / float64(w.Rate))
	}
	env.progress.setTotal(batchesPer * int64(w.Partitions) * int64(w.BatchSize))
	hists := make([]*Histogram, w.Partitions)
	var g errgroup.Group // every producer and consumer; Wait returns the first error
	resetPeakRSS()
	begin := time.Now()
	for p := 0; p < w.Partitions; p++ {
		l := logs[p]
		due := make([]atomic.Int64, batchesPer) // ns since begin when batch k was due
		batches, err := encodeBatches(4, w.BatchSize, w.RecordSize, segment.CodecNone, uint64(p+1))
		if err != nil {
			return nil, err
		}
		hists[p] = NewHistogram()
		pctx, stopConsumer := context.WithCancel(ctx)
		g.Go(func() error { // producer
			defer stopConsumer()
			for k := int64(0); k < batchesPer; k++ {
				var t time.Duration
				if interval > 0 {
					t = time.Duration(k) * interval
					if d := t - time.Since(begin); d > 0 {
						time.Sleep(d)
					}
				} else {
					t = time.Since(begin)
				}
				due[k].Store(int64(t))
				if _, err := l.AppendBatch(batches[k%4]); err != nil {
					return err
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
			return nil
		})
		g.Go(func() error { // tailing consumer
			h := hists[p]
			buf := make([]byte, 0, storage.DefaultReadBytes+segment.HeaderSize+64<<10)
			end := batchesPer * int64(w.BatchSize)
			for off := int64(0); off < end; {
				if err := l.Wait(pctx, off); err != nil {
					if pctx.Err() != nil && ctx.Err() == nil && l.EndOffset() > off {
						// The producer finished: drain without waiting.
					} else {
						return fmt.Errorf("bench: consumer at %d: %w", off, err)
					}
				}
				data, err := l.ReadInto(buf, off, storage.DefaultReadBytes)
				if err != nil {
					return err
				}
				now := time.Since(begin)
				first := off
				sc := segment.ScanBuffer(data, segment.ScanOptions{})
				for sc.Next() {
					k := sc.Header().BaseOffset / int64(w.BatchSize)
					h.Record(now - time.Duration(due[k].Load()))
					off = sc.Header().NextOffset()
				}
				if err := sc.Err(); err != nil {
					return err
				}
				env.progress.add(off - first)
			}
			return nil
		})
	}
	err = g.Wait()
	res.Elapsed = time.Since(begin)
	res.PeakRSS = peakRSS()
	if err != nil {
		return nil, err
	}
	h := NewHistogram()
	for _, x := range hists {
		h.Merge(x)
	}
	res.Latency = h.Latency()
	res.Records = batchesPer * int64(w.Partitions) * int64(w.BatchSize)
	res.Bytes = res.Records * int64(w.RecordSize)
	if err := closeLogs(logs); err != nil {
		return nil, err
	}
	logs = nil
	res.DiskBytes = diskUsage(dir)
	res.finish()
	if w.Rate > 0 {
		res.Notes = append(res.Notes, "throughput is the offered rate when the engine keeps up; latency is what to read")
	}
	return []Result{res}, nil
}
