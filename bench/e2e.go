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

// withDefaults fills in the zero fields of w.
func (w EndToEnd) withDefaults() EndToEnd {
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
	return w
}

// newResult returns the workload's result with its parameters.
func (w EndToEnd) newResult() Result {
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
	return res
}

// Run measures the workload.
func (w EndToEnd) Run(ctx context.Context, env *Env) ([]Result, error) {
	w = w.withDefaults()
	dir, err := env.workDir(w.Name())
	if err != nil {
		return nil, err
	}
	res := w.newResult()
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
			return e2eProduce(ctx, l, batches, due, begin, interval)
		})
		g.Go(func() error { // tailing consumer
			return w.e2eConsume(ctx, pctx, env, l, hists[p], due, begin, batchesPer*int64(w.BatchSize))
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

// e2eProduce appends len(due) batches to l, cycling through batches, one
// every interval after begin (or as fast as possible when interval is 0),
// and stores in due when each batch was due.
func e2eProduce(ctx context.Context, l *storage.Log, batches [][]byte, due []atomic.Int64, begin time.Time, interval time.Duration) error {
	for k := int64(0); k < int64(len(due)); k++ {
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
		if _, err := l.AppendBatch(batches[k%int64(len(batches))]); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// e2eConsume tails l up to offset end (waiting with pctx, which ends when
// the producer is done) and records in h each batch's latency from when it
// was due.
func (w EndToEnd) e2eConsume(ctx, pctx context.Context, env *Env, l *storage.Log, h *Histogram, due []atomic.Int64, begin time.Time, end int64) error {
	buf := make([]byte, 0, storage.DefaultReadBytes+segment.HeaderSize+64<<10)
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
}
