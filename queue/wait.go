package queue

import (
	"context"
	"fmt"
	"time"
)

// clockReading reads the clock once, when first needed: a Get of an item
// without expiry, with no lease open, needs no time at all.
type clockReading struct {
	c  Clock
	t  time.Time
	ok bool
}

func (r *clockReading) now() time.Time {
	if !r.ok {
		r.t, r.ok = r.c.Now(), true
	}
	return r.t
}

// broadcastLocked wakes the waiting Get and Open calls.
func (q *Queue) broadcastLocked() {
	if q.waiters == 0 {
		return
	}
	close(q.changed)
	q.changed = make(chan struct{})
}

// waitSpec is what a Get or Open without an item waits for.
type waitSpec struct {
	changed   <-chan struct{}
	timeout   time.Duration // until the earliest lease deadline; < 0: none
	logOffset int64         // wait for a record here; < 0: the window is full
}

func (q *Queue) prepareWaitLocked(now *clockReading) waitSpec {
	q.waiters++
	w := waitSpec{changed: q.changed, timeout: -1, logOffset: -1}
	if len(q.deadlines) > 0 {
		w.timeout = max(0, q.deadlines[0].deadline.Sub(now.now()))
	}
	if q.next-q.pos-q.lostLen < int64(q.opts.Window) {
		w.logOffset = q.next
	}
	return w
}

// wait blocks until something may have made an item available: an
// append (Log.Wait, in a goroutine that it joins before returning), an
// abort, an expired lease, the head moving, or Close.
func (q *Queue) wait(ctx context.Context, w waitSpec) error {
	defer func() {
		q.mu.Lock()
		q.waiters--
		q.mu.Unlock()
	}()
	var timerC <-chan time.Time
	if w.timeout >= 0 {
		t := q.clock.NewTimer(w.timeout)
		defer t.Stop()
		timerC = t.C()
	}
	var logDone chan error
	if w.logOffset >= 0 {
		wctx, cancel := context.WithCancel(ctx)
		logDone = make(chan error, 1)
		go func() { logDone <- q.log.Wait(wctx, w.logOffset) }()
		defer func() {
			cancel()
			if logDone != nil {
				<-logDone
			}
		}()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-q.closing:
		return ErrClosed
	case <-w.changed:
	case <-timerC:
	case err := <-logDone:
		logDone = nil
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("queue %s: waiting for items: %w", q.key.Topic, err)
		}
	}
	// Woken as ctx ended too (select picks at random among ready
	// cases): the wait is over, and an item that came meanwhile stays.
	return ctx.Err()
}

// persist makes the state of change seq (or a later one) durable: it
// commits the latest position and confirmed-above set unless a commit
// since seq already has. One commit thus serves every Confirm that
// waited for the one before (group commit on top of the offsets store's).
// A failed commit makes the queue fail.
func (q *Queue) persist(seq uint64) error {
	q.commitMu.Lock()
	defer q.commitMu.Unlock()
	q.mu.Lock()
	if q.err != nil {
		err := q.err
		q.mu.Unlock()
		return err
	}
	if q.synced >= seq {
		q.mu.Unlock()
		return nil
	}
	pos, meta, cur := q.pos, encodeMeta(q.pos, q.done), q.seq
	q.mu.Unlock()
	err := q.ost.Commit(q.key.Group, q.key.Topic, q.key.Partition, pos, meta)
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil {
		q.err = fmt.Errorf("queue %s: commit position %d: %w", q.key.Topic, pos, err)
		q.broadcastLocked()
		return q.err
	}
	q.synced, q.committed = cur, pos
	q.stats.Commits++
	return nil
}

// sweepLoop runs Sweep every SweepInterval until Close.
func (q *Queue) sweepLoop() {
	defer close(q.sweepDone)
	for {
		t := q.clock.NewTimer(q.opts.SweepInterval)
		select {
		case <-q.closing:
			t.Stop()
			return
		case <-t.C():
		}
		// A failure stays in Stats.Err and fails every later call.
		_, _ = q.Sweep()
	}
}
