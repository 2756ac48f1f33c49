package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seglog/seglog/offsets"
)

// Offsets measures consumer-offset commits: Committers goroutines, each a
// consumer group, commit increasing offsets round-robin over Partitions
// partitions of one topic for Duration, with the store's Sync policy.
// With SyncAlways the baseline is the fsync-bound rate of a plain file
// (one goroutine writing 64 bytes and fsyncing), so the ratio shows what
// group commit gains; with other policies there is no baseline.
type Offsets struct {
	Label      string
	Committers int // 1
	Partitions int // 100
	Sync       offsets.SyncPolicy
	Duration   time.Duration // 2s
}

// Name returns the result name.
func (w Offsets) Name() string {
	if w.Label != "" {
		return w.Label
	}
	return "offsets"
}

// Run measures the workload.
func (w Offsets) Run(ctx context.Context, env *Env) ([]Result, error) {
	if w.Committers <= 0 {
		w.Committers = 1
	}
	if w.Partitions <= 0 {
		w.Partitions = 100
	}
	if w.Duration <= 0 {
		w.Duration = 2 * time.Second
	}
	dir, err := env.workDir(w.Name())
	if err != nil {
		return nil, err
	}
	res := Result{Name: w.Name(), Workload: "offsets", LatencyOf: "Store.Commit call"}
	res.param("committers", w.Committers)
	res.param("partitions", w.Partitions)
	res.param("sync", w.Sync)
	res.param("duration", w.Duration)
	st, err := offsets.Open(dir, offsets.Options{Sync: w.Sync})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	env.progress.setTotal(int64(w.Duration / time.Millisecond))
	hists := make([]*Histogram, w.Committers)
	counts := make([]int64, w.Committers)
	errs := make([]error, w.Committers)
	var wg sync.WaitGroup
	resetPeakRSS()
	begin := time.Now()
	deadline := begin.Add(w.Duration)
	for c := 0; c < w.Committers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			h := NewHistogram()
			hists[c] = h
			counts[c], errs[c] = w.commitLoop(ctx, env, st, c, h, begin, deadline)
		}(c)
	}
	wg.Wait()
	res.Elapsed = time.Since(begin)
	res.PeakRSS = peakRSS()
	if err := errors.Join(append(errs, ctx.Err())...); err != nil {
		return nil, err
	}
	h := NewHistogram()
	for c := range hists {
		h.Merge(hists[c])
		res.Records += counts[c]
	}
	res.Latency = h.Latency()
	stats := st.Stats()
	if err := st.Close(); err != nil {
		return nil, err
	}
	res.DiskBytes = diskUsage(dir)
	if stats.Syncs > 0 {
		res.metric("commits_per_fsync", float64(res.Records)/float64(stats.Syncs))
		res.Notes = append(res.Notes, fmt.Sprintf("%.1f commits per fsync", float64(res.Records)/float64(stats.Syncs)))
	}
	if w.Sync == offsets.SyncAlways {
		b, err := plainFsyncLoop(ctx, env.Dir, 64, min(w.Duration, time.Second))
		if err != nil {
			return nil, fmt.Errorf("bench: baseline: %w", err)
		}
		res.Baseline = &b
	}
	res.finish()
	res.DiskBytes = 0 // journal and snapshot: not payload
	return []Result{res}, nil
}

// commitLoop commits as committer c (group "group-c") until deadline or
// until ctx ends, timing each Commit in h, and returns the commits made.
func (w Offsets) commitLoop(ctx context.Context, env *Env, st *offsets.Store, c int, h *Histogram, begin, deadline time.Time) (int64, error) {
	var count int64
	group := fmt.Sprintf("group-%d", c)
	for i := int64(0); ; i++ {
		t := time.Now()
		if t.After(deadline) || ctx.Err() != nil {
			break
		}
		if err := st.Commit(group, "topic", int32(i%int64(w.Partitions)), i, ""); err != nil {
			return count, err
		}
		h.Record(time.Since(t))
		count++
		if c == 0 && i&63 == 0 {
			env.progress.set(int64(time.Since(begin) / time.Millisecond))
		}
	}
	return count, nil
}
