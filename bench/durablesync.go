package bench

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// DurableSync appends with the log's default sync policy (SyncNever: no
// fsync on append) and calls Log.Sync after every batch of BatchSize
// records, from one goroutine, for Duration: what a broker does that
// acknowledges a producer's request of BatchSize records once it is
// durable (the request arrives as one batch, so it is one AppendBatch of
// a batch encoded beforehand, then one Sync). The latency is of one Sync.
// Each Sync should cost one fdatasync of the active segment: the log's
// Stats count the fsyncs of segment files, and a file system wrapped
// around the log's counts every fsync, fdatasync and directory fsync it
// asks for. The baseline writes the same batch bytes to a plain file and
// fdatasyncs after each write.
type DurableSync struct {
	RecordSize int           // 1024
	BatchSize  int           // records per Sync (10)
	Duration   time.Duration // 2s
}

// Name returns "durable-sync".
func (w DurableSync) Name() string { return "durable-sync" }

func (w DurableSync) withDefaults() DurableSync {
	orDefault(&w.RecordSize, 1024)
	orDefault(&w.BatchSize, 10)
	orDefault(&w.Duration, DefaultDuration)
	return w
}

// Run measures the workload and its baseline.
func (w DurableSync) Run(ctx context.Context, env *Env) ([]Result, error) {
	w = w.withDefaults()
	batches, err := encodeBatches(producerSets, w.BatchSize, w.RecordSize, segment.CodecNone, 7)
	if err != nil {
		return nil, err
	}
	base, err := syncLoop{data: batches[0], datasync: true, timeSync: true}.run(ctx, env.Dir, w.Duration)
	if err != nil {
		return nil, fmt.Errorf("bench: baseline: %w", err)
	}
	dir, err := env.workDir(w.Name())
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res := Result{Name: w.Name(), Workload: "durable-sync", LatencyOf: "Log.Sync call (after one AppendBatch)"}
	res.param("record", formatBytes(int64(w.RecordSize)))
	res.param("batch", w.BatchSize)
	res.param("sync", storage.SyncNever)
	res.param("Log.Sync", "after every batch")
	res.param("duration", w.Duration)

	fs := &countingFS{FS: vfs.Default}
	l, err := storage.Open(partitionDir(dir, 0), storage.Options{Sync: storage.SyncNever, FS: fs})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	syncs, st, calls, err := w.loop(ctx, env, l, batches, fs, &res)
	if err != nil {
		return nil, err
	}
	res.Bytes = res.Records * int64(w.RecordSize)
	res.Baseline = &base
	res.finish()
	syncsPerSec := float64(syncs) / res.Elapsed.Seconds()
	res.Baseline.Ratio = syncsPerSec / base.OpsPerSec // Syncs/s over fdatasyncs/s
	res.metric("syncs", float64(syncs))
	res.metric("syncs_per_sec", syncsPerSec)
	res.metric("fsyncs_per_sync", float64(st)/float64(syncs))
	res.metric("fs_syncs_per_sync", float64(calls)/float64(syncs))
	res.Notes = append(res.Notes,
		fmt.Sprintf("%s Syncs/s; %.2f segment fsyncs per Sync (log Stats), %.2f sync calls per Sync at the file system (fsync, fdatasync, directory fsync)", formatRate(syncsPerSec), float64(st)/float64(syncs), float64(calls)/float64(syncs)),
		"vs base compares Syncs/s with the plain file's write+fdatasync/s")
	if err := l.Close(); err != nil {
		return nil, err
	}
	return []Result{res}, nil
}

// loop appends and syncs until Duration passes, filling res's Records,
// Elapsed, Latency and PeakRSS. It returns the Syncs made, the segment
// fsyncs the log's Stats counted meanwhile and the sync calls fs saw.
// The first append and Sync after Open come before, untimed: they also
// write what the log writes once per Open.
func (w DurableSync) loop(ctx context.Context, env *Env, l *storage.Log, batches [][]byte, fs *countingFS, res *Result) (syncs, fsyncs, calls int64, err error) {
	env.progress.setTotal(int64(w.Duration / time.Millisecond))
	h := NewHistogram()
	opened := fs.syncs.Load()
	if _, err := l.AppendBatch(batches[producerSets-1]); err != nil {
		return 0, 0, 0, err
	}
	if err := l.Sync(); err != nil {
		return 0, 0, 0, err
	}
	res.Notes = append(res.Notes, fmt.Sprintf("the first append and Sync after Open, untimed and not counted, made %s (what the log writes once per Open)", countOf(int(fs.syncs.Load()-opened), "sync call")))
	st0, err := l.Stats()
	if err != nil {
		return 0, 0, 0, err
	}
	calls0 := fs.syncs.Load()
	resetPeakRSS()
	begin := time.Now()
	for time.Since(begin) < w.Duration {
		if syncs&15 == 0 {
			if ctx.Err() != nil {
				return 0, 0, 0, ctx.Err()
			}
			env.progress.set(int64(time.Since(begin) / time.Millisecond))
		}
		if _, err := l.AppendBatch(batches[syncs%producerSets]); err != nil {
			return 0, 0, 0, err
		}
		t := time.Now()
		if err := l.Sync(); err != nil {
			return 0, 0, 0, err
		}
		h.Record(time.Since(t))
		syncs++
	}
	res.Elapsed = time.Since(begin)
	res.PeakRSS = peakRSS()
	calls = fs.syncs.Load() - calls0
	st1, err := l.Stats()
	if err != nil {
		return 0, 0, 0, err
	}
	res.Records = syncs * int64(w.BatchSize)
	res.Latency = h.Latency()
	return syncs, st1.Fsyncs - st0.Fsyncs, calls, nil
}

// countingFS is vfs.FS counting the sync calls of the files it opens and
// its directory fsyncs: every fsync the log asks for, whatever file.
type countingFS struct {
	vfs.FS
	syncs atomic.Int64
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countingFile{File: f, syncs: &c.syncs}, nil
}

func (c *countingFS) SyncDir(dir string) error {
	c.syncs.Add(1)
	return c.FS.SyncDir(dir)
}

type countingFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f countingFile) Sync() error {
	f.syncs.Add(1)
	return f.File.Sync()
}

func (f countingFile) Datasync() error {
	f.syncs.Add(1)
	return f.File.Datasync()
}
