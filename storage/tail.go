package storage

import (
	"context"
	"sync/atomic"
	"time"
)

// tailWaiters are the goroutines waiting for the tail of a log to move
// (Wait, WaitCommitted): notify is closed and replaced when the end or the
// high watermark advances and someone is waiting. Lock-free.
type tailWaiters struct {
	count  atomic.Int64 // goroutines in wait
	notify atomic.Pointer[chan struct{}]
}

func (w *tailWaiters) init() {
	ch := make(chan struct{})
	w.notify.Store(&ch)
}

// wake wakes every goroutine in wait; cheap when there are none.
func (w *tailWaiters) wake() {
	if w.count.Load() == 0 {
		return
	}
	ch := make(chan struct{})
	old := w.notify.Swap(&ch)
	close(*old)
}

// wait blocks until cond holds (nil), the context is done (its error) or
// closed reports the log closed (ErrClosed), rechecking them whenever wake
// is called and, unless poll is zero, every poll after calling refresh
// (a follower's, which has no appends in its process to wake it).
func (w *tailWaiters) wait(ctx context.Context, cond, closed func() bool, poll time.Duration, refresh func() error) error {
	w.count.Add(1)
	defer w.count.Add(-1)
	var tick <-chan time.Time
	if poll > 0 {
		t := time.NewTicker(poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		ch := *w.notify.Load()
		if cond() {
			return nil
		}
		if closed() {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-tick:
			if err := refresh(); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
