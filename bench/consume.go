package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// ConsumeMode is how a consumer reads.
type ConsumeMode int

const (
	// ModeFetch reads whole batches with Log.ReadInto, FetchBytes at a
	// time, into a reused buffer, without decoding records: what a broker
	// serving a fetch does.
	ModeFetch ConsumeMode = iota
	// ModeRecords iterates records with a Reader, decoding each.
	ModeRecords
)

// String names the read call: ReadInto or Reader.
func (m ConsumeMode) String() string {
	if m == ModeRecords {
		return "Reader"
	}
	return "ReadInto"
}

// Consume reads a data set sequentially from offset 0. With Consumers at
// most Partitions, the partitions are divided among the consumers;
// otherwise consumer i reads partition i mod Partitions whole (a fan-out).
// The data set is what an earlier produce workload with the same record
// size, batch size, partitions and count wrote, or is written first
// (untimed). It is read from the page cache. The baseline reads a plain
// file of the payload bytes of one consumer, FetchBytes per read, from as
// many readers at once as there are consumers.
type Consume struct {
	Label      string
	RecordSize int   // 1024
	BatchSize  int   // 100
	Partitions int   // 1
	Records    int64 // 100,000
	Consumers  int   // 1
	Mode       ConsumeMode
	FetchBytes int // 1 MiB
}

// Name returns the result name.
func (w Consume) Name() string {
	if w.Label != "" {
		return w.Label
	}
	return "consume"
}

// withDefaults fills in the zero fields of w and rounds Records up to whole
// batches.
func (w Consume) withDefaults() Consume {
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
		w.Records = 100_000
	}
	w.Records = (w.Records + int64(w.BatchSize) - 1) / int64(w.BatchSize) * int64(w.BatchSize)
	if w.Consumers <= 0 {
		w.Consumers = 1
	}
	if w.FetchBytes <= 0 {
		w.FetchBytes = storage.DefaultReadBytes
	}
	return w
}

// Run measures the workload.
func (w Consume) Run(ctx context.Context, env *Env) ([]Result, error) {
	w = w.withDefaults()
	dir, err := env.dataset(ctx, dataSpec{w.RecordSize, w.BatchSize, w.Partitions, w.Records})
	if err != nil {
		return nil, err
	}
	res := Result{Name: w.Name(), Workload: "consume", LatencyOf: "Log.ReadInto call"}
	res.param("record", formatBytes(int64(w.RecordSize)))
	res.param("batch", w.BatchSize)
	res.param("partitions", w.Partitions)
	res.param("consumers", w.Consumers)
	res.param("read", w.Mode)
	res.param("fetch", formatBytes(int64(w.FetchBytes)))
	if w.Mode == ModeRecords {
		res.LatencyOf = "Reader.Next call, sampled every 1024 records"
	}
	logs, err := openLogs(dir, w.Partitions, storage.Options{})
	if err != nil {
		return nil, err
	}
	defer closeLogs(logs)
	assign, total := w.assign(logs)
	env.progress.setTotal(total)
	if err := w.consume(ctx, env, assign, &res); err != nil {
		return nil, err
	}
	if res.Records != total {
		return nil, fmt.Errorf("bench: %s read %d records, want %d", w.Name(), res.Records, total)
	}

	// Baseline: a plain file of the bytes one consumer reads, read by as
	// many readers at once as there are consumers.
	if res.Baseline, err = w.baseline(ctx, env, res.Bytes/int64(w.Consumers)); err != nil {
		return nil, err
	}
	res.finish()
	return []Result{res}, nil
}

// assign returns the logs each consumer reads and the records they hold
// in all.
func (w Consume) assign(logs []*storage.Log) ([][]*storage.Log, int64) {
	var total int64
	assign := make([][]*storage.Log, w.Consumers)
	for c := range assign {
		if w.Consumers <= w.Partitions {
			for p := c; p < w.Partitions; p += w.Consumers {
				assign[c] = append(assign[c], logs[p])
			}
		} else {
			assign[c] = []*storage.Log{logs[c%w.Partitions]}
		}
		for _, l := range assign[c] {
			total += l.EndOffset() - l.StartOffset()
		}
	}
	return assign, total
}

// consume runs the consumers over their assigned logs at once and records
// the elapsed time, peak RSS, records, bytes and latency in res.
func (w Consume) consume(ctx context.Context, env *Env, assign [][]*storage.Log, res *Result) error {
	hists := make([]*Histogram, w.Consumers)
	counts := make([]int64, w.Consumers)
	payload := make([]int64, w.Consumers)
	errs := make([]error, w.Consumers)
	var wg sync.WaitGroup
	resetPeakRSS()
	begin := time.Now()
	for c := 0; c < w.Consumers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			h := NewHistogram()
			hists[c] = h
			for _, l := range assign[c] {
				var n, b int64
				var err error
				if w.Mode == ModeFetch {
					n, err = fetchAll(ctx, l, w.FetchBytes, h, env.progress)
					b = n * int64(w.RecordSize)
				} else {
					n, b, err = readAll(ctx, l, h, env.progress)
				}
				counts[c] += n
				payload[c] += b
				if err != nil {
					errs[c] = err
					return
				}
			}
		}(c)
	}
	wg.Wait()
	res.Elapsed = time.Since(begin)
	res.PeakRSS = peakRSS()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	h := NewHistogram()
	for c := range hists {
		h.Merge(hists[c])
		res.Records += counts[c]
		res.Bytes += payload[c]
	}
	res.Latency = h.Latency()
	return nil
}

// baseline writes a plain file of perReader bytes and reads it from as
// many readers at once as there are consumers, twice; the faster read
// counts.
func (w Consume) baseline(ctx context.Context, env *Env, perReader int64) (*Baseline, error) {
	_, path, err := plainWrite(ctx, env.Dir, perReader, 1<<20, 0)
	if path != "" {
		defer os.Remove(path)
	}
	if err != nil {
		return nil, fmt.Errorf("bench: baseline: %w", err)
	}
	// The faster of two baseline reads counts: on a noisy machine the
	// plain file gets its best.
	var b Baseline
	for i := 0; i < 2; i++ {
		bi, err := plainReadParallel(ctx, path, w.FetchBytes, w.Consumers)
		if err != nil {
			return nil, fmt.Errorf("bench: baseline: %w", err)
		}
		if bi.MBPerSec > b.MBPerSec {
			b = bi
		}
	}
	return &b, nil
}

// fetchAll reads l from its start to its end, maxBytes per ReadInto, and
// returns the records read.
func fetchAll(ctx context.Context, l *storage.Log, maxBytes int, h *Histogram, prog *progress) (int64, error) {
	// Room for the fetch and the index interval the log may read with it.
	buf := make([]byte, 0, maxBytes+segment.HeaderSize+64<<10)
	off, end := l.StartOffset(), l.EndOffset()
	var n int64
	for i := 0; off < end; i++ {
		if i&63 == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
		t := time.Now()
		data, err := l.ReadInto(buf, off, maxBytes)
		h.Record(time.Since(t))
		if err != nil {
			return n, err
		}
		if len(data) == 0 {
			return n, fmt.Errorf("bench: empty read at offset %d of %d", off, end)
		}
		first := off
		sc := segment.ScanBuffer(data, segment.ScanOptions{})
		for sc.Next() {
			if bh := sc.Header(); bh.NextOffset() > off {
				n += bh.NextOffset() - max(off, bh.BaseOffset)
				off = bh.NextOffset()
			}
		}
		if err := sc.Err(); err != nil {
			return n, err
		}
		prog.add(off - first)
	}
	return n, nil
}

// readAll iterates every record of l with a Reader and returns the
// records and their payload bytes. One Next in 1024 is timed.
func readAll(ctx context.Context, l *storage.Log, h *Histogram, prog *progress) (n, bytes int64, err error) {
	r := l.NewReader(l.StartOffset())
	end := l.EndOffset()
	for {
		var ok bool
		if n&1023 == 0 {
			if ctx.Err() != nil {
				return n, bytes, ctx.Err()
			}
			t := time.Now()
			ok = r.Next()
			h.Record(time.Since(t))
			prog.add(1024)
		} else {
			ok = r.Next()
		}
		if !ok {
			break
		}
		rec := r.Record()
		n++
		bytes += int64(len(rec.Key) + len(rec.Value))
	}
	if r.Err() != nil {
		return n, bytes, r.Err()
	}
	if r.Offset() != end {
		return n, bytes, fmt.Errorf("bench: reader stopped at %d, end %d", r.Offset(), end)
	}
	return n, bytes, nil
}

// plainReadParallel runs plainRead from readers goroutines at once and
// sums their bytes over the longest elapsed time.
func plainReadParallel(ctx context.Context, path string, chunk, readers int) (Baseline, error) {
	if readers <= 1 {
		return plainRead(ctx, path, chunk)
	}
	bs := make([]Baseline, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range bs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			bs[i], errs[i] = plainRead(ctx, path, chunk)
		}(i)
	}
	wg.Wait()
	out := Baseline{Name: fmt.Sprintf("%s, %d readers at once", bs[0].Name, readers), Elapsed: time.Since(begin)}
	for _, b := range bs {
		out.Bytes += b.Bytes
		out.Ops += b.Ops
	}
	out.finish()
	return out, errors.Join(errs...)
}
