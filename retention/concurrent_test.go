package retention

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Appends, reads (which commit their position), the background cleaner, a
// direct RunOnce loop, dry runs and FirstUnexpired all at once: run it with
// -race. Readers never see a wrong record; a reader that falls below the
// start offset gets ErrOffsetOutOfRange and resets.
func TestConcurrentAppendReadClean(t *testing.T) {
	opts := smallLog()
	opts.SegmentBytes = 1024
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: opts})
	const parts = 3
	require.NoError(t, s.CreateTopic("t", parts, storage.TopicConfig{}))
	logs := make([]*storage.Log, parts)
	for p := range logs {
		l, err := s.Log("t", int32(p))
		require.NoError(t, err)
		logs[p] = l
	}
	var clock atomic.Int64
	clock.Store(t0.UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	cons := newFakeConsumed()
	for p := range parts {
		cons.set("t", int32(p), 0)
	}
	var runs atomic.Int64
	c := newCleaner(t, s, cons, Options{
		Default:  Policy{Consumed: true, MaxAge: time.Minute, MaxBytes: 8 << 10, MinSegments: 2},
		Interval: time.Millisecond,
		Now:      now,
		Workers:  2,
		OnRun: func(r Report, err error) {
			runs.Add(1)
			assert.Empty(t, r.Failures)
		},
	})
	c.Start()
	dry := newCleaner(t, s, cons, Options{Default: Policy{MaxBytes: 1}, DryRun: true, Now: now})

	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	var resets, records atomic.Int64
	for p, l := range logs {
		wg.Add(1)
		go func() { // the one appender of this partition
			defer wg.Done()
			for ctx.Err() == nil {
				off := l.EndOffset()
				recs := []storage.Record{{Timestamp: clock.Add(10), Value: val(off)}, {Timestamp: clock.Load(), Value: val(off + 1)}}
				_, err := l.Append(recs...)
				assert.NoError(t, err)
			}
		}()
		for reader := range 2 {
			slow := reader == 1
			wg.Add(1)
			go func() { // a reader that commits where it is, or a slow one that falls behind
				defer wg.Done()
				pos := l.StartOffset()
				for ctx.Err() == nil {
					r := l.NewReader(pos)
					for r.Next() {
						rec := r.Record()
						if !assert.Equal(t, string(val(rec.Offset)), string(rec.Value)) {
							return
						}
						pos = rec.Offset + 1
						records.Add(1)
						if slow {
							time.Sleep(200 * time.Microsecond)
						}
					}
					if err := r.Err(); errors.Is(err, storage.ErrOffsetOutOfRange) {
						resets.Add(1)
						pos = l.StartOffset()
					} else if !assert.NoError(t, err) {
						return
					}
					if !slow {
						cons.set("t", int32(p), pos)
					}
					wctx, wcancel := context.WithTimeout(ctx, 5*time.Millisecond)
					_ = l.Wait(wctx, pos)
					wcancel()
				}
			}()
		}
	}
	wg.Add(1)
	go func() { // direct runs, dry runs and expiry checks beside the timer
		defer wg.Done()
		for ctx.Err() == nil {
			rep, err := c.RunOnce(ctx)
			if err == nil {
				assert.Empty(t, rep.Failures)
			}
			_, err = dry.RunOnce(ctx)
			assert.True(t, err == nil || errors.Is(err, context.DeadlineExceeded), err)
			for _, l := range logs {
				off, err := FirstUnexpired(l, l.StartOffset(), time.Minute, now())
				if err == nil {
					assert.GreaterOrEqual(t, off, l.StartOffset())
				} else {
					assert.ErrorIs(t, err, storage.ErrOffsetOutOfRange)
				}
			}
			clock.Add(1000)
		}
	}()
	wg.Wait()
	require.NoError(t, c.Close())

	t.Logf("records read %d, resets %d, background runs %d, segments deleted %d", records.Load(), resets.Load(), runs.Load(), c.Stats().DeletedSegments)
	assert.Positive(t, c.Stats().DeletedSegments)
	assert.Positive(t, runs.Load())
	for _, l := range logs {
		assert.Equal(t, l.EndOffset(), readAll(t, l, l.StartOffset()))
		segs, err := l.Segments()
		require.NoError(t, err)
		assert.GreaterOrEqual(t, len(segs), 1)
		assert.True(t, segs[len(segs)-1].Active)
	}
}

// Close stops the goroutine that Start began (and any run in progress) and
// leaves no goroutine behind.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	s := openStore(t, t.TempDir(), storage.StoreOptions{Log: smallLog()})
	makeTopic(t, s, "t", 8, 3, 2, at(t0.Add(-time.Hour)))
	ignore := goleak.IgnoreCurrent()

	var runs atomic.Int64
	var closed atomic.Bool
	c, err := New(s, nil, Options{Default: Policy{MaxAge: time.Minute}, Interval: time.Millisecond, Workers: 4,
		OnRun: func(Report, error) {
			assert.False(t, closed.Load(), "a run after Close returned")
			runs.Add(1)
		}})
	require.NoError(t, err)
	c.Start()
	c.Start() // once only
	require.Eventually(t, func() bool { return runs.Load() >= 3 }, 5*time.Second, time.Millisecond)
	done := make(chan struct{})
	go func() { // a direct run that Close interrupts or waits for
		defer close(done)
		_, err := c.RunOnce(context.Background())
		assert.True(t, err == nil || errors.Is(err, ErrClosed), err)
	}()
	require.NoError(t, c.Close())
	closed.Store(true)
	<-done

	// No goroutine of the cleaner is left, so nothing can run OnRun
	// later; one that ran after Close returned failed the assertion in
	// OnRun.
	goleak.VerifyNone(t, ignore)
}
