package storage

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
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
// checkpointed here but after a segment rolls, by the interval flusher
// and at Close, so a crash rescans at most the active segment and those
// whose background fsync after their roll had not finished. The high
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
	// Rolled segments whose background fsync has not run hold the
	// recovery point back: fsync them now.
	if err := l.syncRolledNow(); err != nil {
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
		rolled := i+1 < len(segs) && l.isRollPending(s)
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
			l.dropRollPending(s)
		}
	}
	if err := l.syncDirIfDue(); err != nil {
		return err
	}
	l.raiseFlushed(end)
	return nil
}

// syncDirIfDue fsyncs the directory if a roll left the new segment's entry
// to it (rollLocked). Whoever raises the flushed offset calls it first,
// holding the group-commit flag (l.syncing), so that no offset counts as
// flushed while the segment holding it could vanish in a crash.
func (l *Log) syncDirIfDue() error {
	due := l.dirSyncDue.Load()
	if due == l.dirSynced {
		return nil
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.dirSynced = due
	return nil
}

// sealRolled seals s, a segment that a roll left to the background
// flusher (see rollLocked), and makes its .log durable: Seal fsyncs the
// .log when it cuts a preallocated tail, the fdatasync after it covers a
// .log that had none (and finds nothing left to write otherwise).
func sealRolled(s *segment.Segment) error {
	if err := s.Seal(); err != nil {
		return err
	}
	return s.Sync()
}

// rolledSegment is a rolled segment that waits for the background
// flusher: its .log is not yet fsynced and, when unsealed is set, the roll
// left its whole seal to the flusher too (rollLocked).
type rolledSegment struct {
	seg      *segment.Segment
	unsealed bool
}

// maxUnsealedRolls bounds the rolled segments left unsealed to the
// flusher: past it a roll seals the old segment itself (without the
// .log's fsync), so that appenders wait for the journal again rather than
// pile up segments that a Checkpoint or Close must each seal (six fsyncs
// apiece). Eight 128 MiB segments are a gigabyte of burst.
const maxUnsealedRolls = 8

// rollIndexLocked returns where s is among the rolled segments waiting
// for the flusher, or -1. The caller holds rollMu.
func (l *Log) rollIndexLocked(s *segment.Segment) int {
	return slices.IndexFunc(l.rollPending, func(r rolledSegment) bool { return r.seg == s })
}

// isRollPending reports whether s waits for the background flusher.
func (l *Log) isRollPending(s *segment.Segment) bool {
	l.rollMu.Lock()
	defer l.rollMu.Unlock()
	return l.rollIndexLocked(s) >= 0
}

// addRollPending records that old is to be fsynced after its roll; the
// recovery point stays at or below its base until then. It returns how
// many other rolled segments wait unsealed (setUnsealed). A segment is
// recorded once: a roll that failed to create its successor left old
// active and recorded, and the next roll of it finds it there.
func (l *Log) addRollPending(old *segment.Segment) (unsealed int) {
	l.rollMu.Lock()
	defer l.rollMu.Unlock()
	found := false
	for _, r := range l.rollPending {
		switch {
		case r.seg == old:
			found = true
		case r.unsealed:
			unsealed++
		}
	}
	if !found {
		l.rollPending = append(l.rollPending, rolledSegment{seg: old})
	}
	return unsealed
}

// setUnsealed records whether the roll left old's seal to the flusher too.
func (l *Log) setUnsealed(old *segment.Segment, unsealed bool) {
	l.rollMu.Lock()
	defer l.rollMu.Unlock()
	if i := l.rollIndexLocked(old); i >= 0 {
		l.rollPending[i].unsealed = unsealed
	}
}

// lastRollPending returns the newest rolled segment waiting for the
// flusher, or nil.
func (l *Log) lastRollPending() *segment.Segment {
	l.rollMu.Lock()
	defer l.rollMu.Unlock()
	if len(l.rollPending) == 0 {
		return nil
	}
	return l.rollPending[len(l.rollPending)-1].seg
}

// dropRollPending removes the entry of s from the rolled segments
// to fsync.
func (l *Log) dropRollPending(s *segment.Segment) {
	l.rollMu.Lock()
	defer l.rollMu.Unlock()
	if i := l.rollIndexLocked(s); i >= 0 {
		l.rollPending = slices.Delete(l.rollPending, i, i+1)
	}
}

// rollFloor returns the base of the oldest rolled segment whose .log is
// not yet fsynced: the recovery point must not pass it.
func (l *Log) rollFloor() (int64, bool) {
	l.rollMu.Lock()
	defer l.rollMu.Unlock()
	if len(l.rollPending) == 0 {
		return 0, false
	}
	// The lowest base, not the first entry's: a truncation can leave a
	// re-rolled segment behind entries of higher bases.
	floor := l.rollPending[0].seg.Base()
	for _, r := range l.rollPending[1:] {
		floor = min(floor, r.seg.Base())
	}
	return floor, true
}

// startRollFlusherLocked starts the goroutine that fsyncs rolled
// segments, unless one runs. The caller holds writeMu and has checked
// that the log is open (so Close waits for the goroutine), and has
// published the segment that follows the one it rolled.
func (l *Log) startRollFlusherLocked() {
	l.rollMu.Lock()
	defer l.rollMu.Unlock()
	if l.rollFlusher {
		return
	}
	l.rollFlusher = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			_ = l.syncRolled(l.stop) // a failure is recorded in the log
			// Decided under rollMu: a roll that publishes a new segment
			// after this finds the flag down and starts another.
			l.rollMu.Lock()
			if !l.rollDueLocked() || l.failure() != nil || isClosed(l.stop) {
				l.rollFlusher = false
				l.rollMu.Unlock()
				return
			}
			l.rollMu.Unlock()
		}
	}()
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// rollDueLocked reports whether the oldest rolled segment not yet
// fsynced can be dealt with now: it is no longer the active segment (a
// roll in progress has not published its successor; a failed roll or a
// truncation left it active, and the next roll queues it again). While
// it is active the recovery point stays at or below its base, where a
// crash rescans from anyway. The caller holds rollMu.
func (l *Log) rollDueLocked() bool {
	return len(l.rollPending) > 0 && l.rollPending[0].seg != l.active()
}

// syncRolledNow is syncRolled for a caller that waits (Checkpoint, Close):
// it stops once the segments pending when it was called are done, so that
// appenders rolling meanwhile cannot keep it going forever.
func (l *Log) syncRolledNow() error {
	last := l.lastRollPending()
	if last == nil {
		return nil
	}
	return l.syncRolledUntil(nil, last)
}

// syncRolled seals and fsyncs each segment that a roll left to it, oldest
// first, while one is due (rollDueLocked), the log has not failed and
// stop is not closed (nil: never), fsyncs the directory for the segments
// the rolls created, and checkpoints the recovery point after each. It
// holds the group-commit flag, so that it never runs beside a Truncate
// (nor beside another fsync of the log). Once a rolled segment is
// fsynced, every offset below its end is: those before it are in
// segments fsynced before (by their rolls, in order, or by recovery).
func (l *Log) syncRolled(stop <-chan struct{}) error { return l.syncRolledUntil(stop, nil) }

// syncRolledUntil is syncRolled, stopping too once last (unless nil) is
// no longer pending.
func (l *Log) syncRolledUntil(stop <-chan struct{}, last *segment.Segment) error {
	for !isClosed(stop) {
		if err := l.failure(); err != nil {
			return fmt.Errorf("%w: %w", ErrFailed, err)
		}
		l.syncMu.Lock()
		for l.syncing {
			l.syncCond.Wait()
		}
		l.rollMu.Lock()
		if !l.rollDueLocked() || last != nil && l.rollIndexLocked(last) < 0 {
			l.rollMu.Unlock()
			l.syncMu.Unlock()
			return nil
		}
		s := l.rollPending[0].seg
		l.rollMu.Unlock()
		l.syncing = true
		l.syncMu.Unlock()
		err := l.syncRolledSegment(s)
		l.syncMu.Lock()
		l.syncing = false
		l.syncCond.Broadcast()
		l.syncMu.Unlock()
		if err != nil {
			return err
		}
		// Best effort, as the interval flusher's: a recovery point that
		// lags only means a longer rescan. None once Close began (
		// CloseUnflushed writes no checkpoint; Close writes its own).
		if !isClosed(stop) {
			_ = l.checkpointLazy()
		}
	}
	return nil
}

// syncRolledSegment seals s, a rolled segment that is not the active one,
// and fsyncs it (sealRolled) and the directory (syncDirIfDue), and raises
// the flushed offset to its end. Only the goroutine that set
// l.syncing calls it: no truncation changes s meanwhile. A segment
// deleted since has nothing left to make durable.
func (l *Log) syncRolledSegment(s *segment.Segment) error {
	t0 := time.Now()
	err := sealRolled(s)
	if !slices.Contains(l.segments(), s) || errors.Is(err, segment.ErrDeleted) {
		l.dropRollPending(s)
		return nil
	}
	l.noteFsync(time.Since(t0), err)
	if err != nil {
		// It stays pending: the recovery point never passes it.
		return l.fail(err)
	}
	l.dropRollPending(s)
	if err := l.syncDirIfDue(); err != nil {
		return err
	}
	l.raiseFlushed(s.NextOffset())
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
func (l *Log) checkpointWrote() (bool, error) { return l.writeRecoveryPoint(true) }

// checkpointLazy is checkpoint without the directory fsync
// (vfs.WriteFileAtomicLazy), for the background flusher of rolled
// segments: it only moves the recovery point forward, so after a crash
// the value before is as good; the directory's next fsync (a roll's, any
// other checkpoint's, Close's) makes it durable.
func (l *Log) checkpointLazy() error {
	_, err := l.writeRecoveryPoint(false)
	return err
}

func (l *Log) writeRecoveryPoint(durable bool) (bool, error) {
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	if l.damaged() != nil {
		// Its end is the damage, below the recovery point on disk: a lower
		// recovery point would let the next open cut acknowledged data.
		return false, nil
	}
	v := l.flushed.Load()
	if floor, ok := l.rollFloor(); ok && floor < v {
		// A rolled segment's .log is not yet fsynced (its tail's cut at
		// least): a crash must rescan it.
		v = floor
	}
	if v == l.checkpointed {
		if durable && l.ckptDirSyncPending {
			if err := l.opts.FS.SyncDir(l.dir); err != nil {
				return false, fmt.Errorf("storage: write %s: %w", recoveryPointFile, err)
			}
			l.ckptDirSyncPending = false
			return true, nil
		}
		return false, nil
	}
	write := writeCheckpoint
	if !durable {
		write = writeCheckpointLazy
	}
	if err := write(l.opts.FS, l.dir, recoveryPointFile, v, l.opts.FileMode); err != nil {
		return false, err
	}
	l.checkpointed = v
	l.ckptDirSyncPending = !durable
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
