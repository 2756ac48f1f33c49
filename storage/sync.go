package storage

import (
	"fmt"
	"sync"
	"time"

	"github.com/seglog/seglog/vfs"
)

func (l *Log) failure() error {
	if p := l.failedErr.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records an fsync failure: the log refuses writes from now on.
func (l *Log) fail(err error) error { return l.failOp("fsync", err) }

// failOp records a failure after which the files may not match what the
// log believes (a failed fsync, a truncation or deletion that stopped
// half-way): the log refuses writes until it is reopened and recovered.
func (l *Log) failOp(op string, err error) error {
	err = fmt.Errorf("storage: %s in %s: %w", op, l.dir, err)
	l.failedErr.CompareAndSwap(nil, &err)
	if vfs.IsNoSpace(err) {
		return fmt.Errorf("%w: %w: %w", ErrFailed, ErrDiskFull, err)
	}
	return fmt.Errorf("%w: %w", ErrFailed, err)
}

// Sync makes everything appended so far durable: one fdatasync of the
// active segment (and of any older segment not yet flushed), shared with
// concurrent callers (group commit). The recovery point is not
// checkpointed here but after a segment rolls, by the interval flusher
// and at Close, so a crash rescans at most the active segment and those
// whose background fsync after their roll had not finished. The high
// watermark is checkpointed if it moved since its last checkpoint (read-
// only followers in other processes read it from there).
func (l *Log) Sync() error {
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.syncTo(l.end.Load()); err != nil {
		return err
	}
	return l.checkpointHighWatermark()
}

// Checkpoint is Sync, then the recovery point written now, so that a
// crash from here rescans nothing before it. Rolls, the interval flusher
// and Close checkpoint on their own; Sync does not (it is one fdatasync).
func (l *Log) Checkpoint() error {
	if err := l.Sync(); err != nil {
		return err
	}
	// Rolled segments whose background fsync has not run hold the
	// recovery point back: fsync them now.
	if err := l.syncRolledNow(); err != nil {
		return err
	}
	return l.checkpoint()
}

// everyTick calls fn every d until stop is closed, then marks wg done:
// the SyncInterval flusher of a Log, or of a Store for all its logs.
func everyTick(wg *sync.WaitGroup, stop <-chan struct{}, d time.Duration, fn func()) {
	defer wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			fn()
		}
	}
}

// flushIfDirty fsyncs and checkpoints when there is unflushed data. The
// interval flusher calls it; errors stay recorded in the log (fail).
func (l *Log) flushIfDirty() {
	if l.closed.Load() || l.failure() != nil {
		return
	}
	if end := l.end.Load(); l.commit.flushed.Load() < end {
		if l.syncTo(end) == nil {
			_ = l.checkpoint()
		}
	}
}
