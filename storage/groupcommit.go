package storage

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/segment"
)

// groupCommit is the fsync of appended data: one at a time, the others
// waiting for it and the next one covering everything appended meanwhile
// (Log.syncTo). The goroutine that sets syncing runs the fsync; mu guards
// only the flag, never an fsync.
type groupCommit struct {
	mu      sync.Mutex
	cond    *sync.Cond // signalled when syncing drops
	syncing bool       // an fsync of the log's segments is under way

	// flushed is published: every offset below it is fsynced.
	flushed atomic.Int64

	// dirSyncDue counts the rolls that left the directory's fsync to the
	// next raise of the flushed offset; dirSynced is the count the last
	// such fsync covered (guarded by the syncing flag: syncDirIfDue).
	dirSyncDue atomic.Int64
	dirSynced  int64

	sinceSync      int          // records appended since the last fsync (SyncEveryN); guarded by writeMu
	appending      atomic.Int64 // appenders between entering append and releasing writeMu
	appendsStarted atomic.Int64 // appends begun, ever (for gather)
}

func (c *groupCommit) init() { c.cond = sync.NewCond(&c.mu) }

// acquire waits until no fsync is under way and takes the flag: until
// release, no other fsync of the log (nor a Truncate) runs.
func (c *groupCommit) acquire() {
	c.mu.Lock()
	for c.syncing {
		c.cond.Wait()
	}
	c.syncing = true
	c.mu.Unlock()
}

// release drops the flag taken by acquire and wakes the waiters.
func (c *groupCommit) release() {
	c.mu.Lock()
	c.syncing = false
	c.cond.Broadcast()
	c.mu.Unlock()
}

// raise moves the flushed offset up to v (never down).
func (c *groupCommit) raise(v int64) {
	for {
		cur := c.flushed.Load()
		if v <= cur || c.flushed.CompareAndSwap(cur, v) {
			return
		}
	}
}

// gather lets appenders that are writing, or were woken by the previous
// fsync and are about to append again, write before the fsync starts, so
// that it covers them too: it yields while an append is under way or one
// started since its last yield (at most 16 yields, never a sleep).
func (c *groupCommit) gather() {
	for i := 0; i < 16; i++ {
		started := c.appendsStarted.Load()
		runtime.Gosched()
		if c.appending.Load() == 0 && c.appendsStarted.Load() == started {
			return
		}
	}
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

// syncTo returns once every offset below target is fsynced. Concurrent
// callers share fsyncs: while one runs, the others wait, and the next one
// covers everything appended meanwhile (group commit).
func (l *Log) syncTo(target int64) error {
	l.commit.mu.Lock()
	defer l.commit.mu.Unlock()
	for l.commit.flushed.Load() < target {
		if err := l.failure(); err != nil {
			return fmt.Errorf("%w: %w", ErrFailed, err)
		}
		if end := l.end.Load(); target > end {
			// A truncation removed the offsets this caller waits for.
			return fmt.Errorf("%w: offset %d is past the end %d", ErrTruncated, target-1, end)
		}
		if l.commit.syncing {
			l.commit.cond.Wait()
			continue
		}
		l.commit.syncing = true
		l.commit.mu.Unlock()
		l.commit.gather()
		err := l.syncOnce()
		l.commit.mu.Lock()
		l.commit.syncing = false
		l.commit.cond.Broadcast()
		if err != nil {
			return err
		}
	}
	return nil
}

// syncOnce fsyncs the segments that hold unflushed offsets. Only the
// goroutine that set l.commit.syncing calls it.
func (l *Log) syncOnce() error {
	end := l.end.Load()
	flushed := l.commit.flushed.Load()
	segs := l.segments()
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].Base() <= flushed {
			continue // wholly flushed
		}
		t0 := time.Now()
		rolled := i+1 < len(segs) && l.roll.isPending(s)
		var err error
		if rolled {
			err = sealRolled(s)
		} else {
			err = s.Sync()
		}
		if errors.Is(err, segment.ErrDeleted) {
			continue // deleted meanwhile: nothing to make durable
		}
		l.noteFsync(time.Since(t0), err)
		if err != nil {
			return l.fail(err)
		}
		if rolled {
			// A rolled segment whose background seal had not run: this
			// one sealed it and made it durable. Sealed again, it could
			// fail the log for nothing.
			l.roll.drop(s)
		}
	}
	if err := l.syncDirIfDue(); err != nil {
		return err
	}
	l.commit.raise(end)
	return nil
}

// syncDirIfDue fsyncs the directory if a roll left the new segment's entry
// to it (rollLocked). Whoever raises the flushed offset calls it first,
// holding the group-commit flag (l.commit.syncing), so that no offset counts as
// flushed while the segment holding it could vanish in a crash.
func (l *Log) syncDirIfDue() error {
	due := l.commit.dirSyncDue.Load()
	if due == l.commit.dirSynced {
		return nil
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.commit.dirSynced = due
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
