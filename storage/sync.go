package storage

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/seglog/seglog/internal/vfs"
	"github.com/seglog/seglog/segment"
)

func (l *Log) raiseFlushed(v int64) {
	for {
		cur := l.flushed.Load()
		if v <= cur || l.flushed.CompareAndSwap(cur, v) {
			return
		}
	}
}

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
// checkpointed here but when a segment rolls, by the interval flusher and
// at Close, so a crash rescans at most the active segment. The high
// watermark is checkpointed if it moved since its last checkpoint (read-
// only followers in other processes read it from there).
func (l *Log) Sync() error {
	if l.closed.Load() {
		return ErrClosed
	}
	if l.opts.ReadOnly {
		return ErrReadOnly
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
	return l.checkpoint()
}

// syncAppended waits for an append's records to be fsynced. A truncation
// between the append and the fsync removed them: that is an error, never
// an acknowledgement.
func (l *Log) syncAppended(res AppendResult, gen int64) error {
	err := l.syncTo(res.LastOffset + 1)
	if err == nil && l.truncGen.Load() != gen && !res.Duplicate {
		err = fmt.Errorf("%w: offsets %d to %d were truncated before they were flushed", ErrTruncated, res.FirstOffset, res.LastOffset)
	}
	return err
}

// gatherAppenders lets appenders that are writing, or were woken by the
// previous fsync and are about to append again, write before the fsync
// starts, so that it covers them too: it yields while an append is under
// way or one started since its last yield (at most 16 yields, never a
// sleep).
func (l *Log) gatherAppenders() {
	for i := 0; i < 16; i++ {
		started := l.appendsStarted.Load()
		runtime.Gosched()
		if l.appending.Load() == 0 && l.appendsStarted.Load() == started {
			return
		}
	}
}

// syncTo returns once every offset below target is fsynced. Concurrent
// callers share fsyncs: while one runs, the others wait, and the next one
// covers everything appended meanwhile (group commit).
func (l *Log) syncTo(target int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	for l.flushed.Load() < target {
		if err := l.failure(); err != nil {
			return fmt.Errorf("%w: %w", ErrFailed, err)
		}
		if end := l.end.Load(); target > end {
			// A truncation removed the offsets this caller waits for.
			return fmt.Errorf("%w: offset %d is past the end %d", ErrTruncated, target-1, end)
		}
		if l.syncing {
			l.syncCond.Wait()
			continue
		}
		l.syncing = true
		l.syncMu.Unlock()
		l.gatherAppenders()
		err := l.syncOnce()
		l.syncMu.Lock()
		l.syncing = false
		l.syncCond.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

// syncOnce fsyncs the segments that hold unflushed offsets. Only the
// goroutine that set l.syncing calls it.
func (l *Log) syncOnce() error {
	end := l.end.Load()
	flushed := l.flushed.Load()
	segs := l.segments()
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].Base() <= flushed {
			continue // wholly flushed
		}
		t0 := time.Now()
		err := s.Sync()
		if errors.Is(err, segment.ErrDeleted) {
			continue // deleted meanwhile: nothing to make durable
		}
		l.noteFsync(time.Since(t0), err)
		if err != nil {
			return l.fail(err)
		}
	}
	l.raiseFlushed(end)
	return nil
}

// noteFsync counts an fsync of a segment and reports it to
// Options.OnFsync; a failed one only counts as failed.
func (l *Log) noteFsync(d time.Duration, err error) {
	if err != nil {
		l.counters.failedFsyncs.Add(1)
		return
	}
	l.counters.fsyncs.Add(1)
	l.counters.fsyncNanos.Add(int64(d))
	if l.opts.OnFsync != nil {
		l.opts.OnFsync(d)
	}
}

// flushLocked fsyncs everything; the caller holds writeMu.
func (l *Log) flushLocked() error {
	return l.syncTo(l.end.Load())
}

// checkpoint writes the flushed offset to recovery-point if it moved.
func (l *Log) checkpoint() error {
	_, err := l.checkpointWrote()
	return err
}

// checkpointWrote is checkpoint, reporting whether it wrote the file (and
// so fsynced the directory).
func (l *Log) checkpointWrote() (bool, error) {
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	v := l.flushed.Load()
	if v == l.checkpointed {
		return false, nil
	}
	if err := writeCheckpoint(l.opts.FS, l.dir, recoveryPointFile, v, l.opts.FileMode); err != nil {
		return false, err
	}
	l.checkpointed = v
	return true, nil
}

// checkpointLocked is checkpoint for callers that hold writeMu.
func (l *Log) checkpointLocked() error { return l.checkpoint() }

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
	if end := l.end.Load(); l.flushed.Load() < end {
		if l.syncTo(end) == nil {
			_ = l.checkpoint()
		}
	}
}
