package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// truncationFile holds the end offset of a truncation in progress: it is
// made durable before any file is cut, and removed (durably) once the cut,
// the removal of the later segments and the lowered recovery point are
// durable. An open that finds it truncates there before anything else, so
// that a power cut during Truncate never brings removed records back nor
// leaves a hole (segments after a cut one, whose removal was lost).
const truncationFile = "truncation-point"

// Truncate removes every record at and after offset, indexes included (a
// replica following a new leader). When offset falls inside a batch the
// whole batch goes, and EndOffset becomes that batch's base offset (as in
// Kafka). The end offset is lowered before any byte is cut: a reader at or
// past the new end gets ErrOffsetOutOfRange, one before it is unaffected.
// Everything it keeps is fsynced (older segments not yet flushed
// included, whatever the sync policy) and checkpointed before Truncate
// returns, and a crash at any point leaves the log either as it was or
// truncated.
// Truncating at or past EndOffset does nothing.
func (l *Log) Truncate(offset int64) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	if offset >= l.end.Load() {
		return nil
	}
	if offset < l.start.Load() {
		return fmt.Errorf("%w: truncate to %d below the start offset %d", ErrOffsetOutOfRange, offset, l.start.Load())
	}
	// Keep group commits out while the end moves backwards.
	l.syncMu.Lock()
	for l.syncing {
		l.syncCond.Wait()
	}
	l.syncing = true
	l.syncMu.Unlock()
	defer func() {
		l.syncMu.Lock()
		l.syncing = false
		l.syncCond.Broadcast()
		l.syncMu.Unlock()
	}()

	segs := l.segments()
	i := segmentIndex(segs, offset)
	newEnd, err := segs[i].TruncatedEnd(offset)
	if err != nil {
		return fmt.Errorf("storage: truncate %s: %w", l.dir, err)
	}
	if err := writeCheckpoint(l.opts.FS, l.dir, truncationFile, newEnd, l.opts.FileMode); err != nil {
		return fmt.Errorf("storage: truncate %s: %w", l.dir, err)
	}
	l.truncGen.Add(1)
	l.end.Store(newEnd)
	if l.flushed.Load() > newEnd {
		l.flushed.Store(newEnd)
	}
	l.clampHighWatermark()
	if err := l.cutLocked(segs, i, offset); err != nil {
		return err
	}
	// What the truncation keeps is durable before it returns: the older
	// segments not yet fsynced (rolled ones the background flusher has
	// not reached, or any under SyncNever) are fsynced here, so that the
	// recovery point written below covers only fsynced bytes. This
	// goroutine holds the group-commit flag, as syncOnce requires.
	if l.flushed.Load() < newEnd {
		if err := l.syncOnce(); err != nil {
			return err
		}
	}
	if newEnd < l.start.Load() {
		l.start.Store(newEnd)
	}
	l.sinceSync = 0
	l.epochMu.Lock()
	epochsChanged := l.epochs.truncateFrom(newEnd)
	l.epochMu.Unlock()
	if epochsChanged {
		if err := l.writeEpochCacheLocked(); err != nil {
			return err
		}
	}
	if err := l.rebuildProducersLocked(); err != nil {
		return err
	}
	if err := l.checkpointHighWatermark(); err != nil {
		return err
	}
	if err := l.checkpoint(); err != nil {
		return l.failOp("truncate", err)
	}
	return l.finishTruncationLocked()
}

// cutLocked truncates segs[i] at offset, deletes the segments after it and
// makes both durable (the segment's fsync, then the directory's). The end
// offset is already lowered. A failure fails the log: its files no longer
// match what it published, and a reopen finishes the truncation.
func (l *Log) cutLocked(segs []*segment.Segment, i int, offset int64) error {
	seg := segs[i]
	if _, err := seg.TruncateTo(offset); err != nil {
		return l.failOp("truncate", err)
	}
	l.publish(segs[:i+1])
	var errs []error
	for _, s := range segs[i+1:] {
		errs = append(errs, s.Delete())
		// Nothing of it is left to fsync (the caller holds the
		// group-commit flag: no flusher is at work on it).
		l.dropRollPending(s)
	}
	if err := errors.Join(errs...); err != nil {
		return l.failOp("truncate", err)
	}
	if err := seg.Sync(); err != nil {
		return l.fail(err)
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	return nil
}

// finishTruncationLocked removes the truncation marker durably: from then
// on appends may be acknowledged past it.
func (l *Log) finishTruncationLocked() error {
	if err := l.opts.FS.Remove(filepath.Join(l.dir, truncationFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return l.failOp("truncate", err)
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	return nil
}

// resumeTruncation finishes, at open, a truncation that a crash
// interrupted: segs were recovered from the segment holding the marker's
// offset (load lowers the recovery point to it), so their ends are true;
// everything at and after the marker goes. It returns the segments left.
func (l *Log) resumeTruncation(segs []*segment.Segment, end int64) ([]*segment.Segment, error) {
	i := segmentIndex(segs, end)
	if segs[len(segs)-1].NextOffset() > end {
		if err := l.cutLocked(segs, i, end); err != nil {
			return nil, err
		}
		segs = segs[:i+1]
	}
	return segs, nil
}

// DeleteResult says what DeleteSegmentsBefore removed.
type DeleteResult struct {
	Segments int
	Bytes    int64
	// StartOffset is the log's start offset afterwards.
	StartOffset int64
}

// DeleteSegmentsBefore deletes the oldest segments whose records are all
// below offset, never the active segment. It first advances StartOffset
// to the base of the first segment kept, durably (log-start-offset), and
// only then removes files, so a crash in between leaves no hole: Open
// finishes the deletion. Readers in a deleted segment finish their read or
// get ErrOffsetOutOfRange. A segment whose files cannot be removed is
// retried by the next call. After Store.AdvanceStartOffsets moved the
// start, it only removes the files (those the store's background deleter
// has not removed yet).
func (l *Log) DeleteSegmentsBefore(offset int64) (DeleteResult, error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if err := l.checkDeletableLocked(); err != nil {
		return DeleteResult{}, err
	}
	if err := l.durableMarkerRemovalLocked(); err != nil {
		return DeleteResult{}, err
	}
	// Producers whose batches were all deleted expire after a while.
	l.producers.expire(l.start.Load(), l.opts.Now().Add(-l.opts.ProducerExpiry).UnixMilli())
	segs, n := l.deletableBefore(offset)
	if n > 0 {
		if newStart := segs[n].Base(); newStart > l.start.Load() {
			if err := writeCheckpoint(l.opts.FS, l.dir, logStartOffsetFile, newStart, l.opts.FileMode); err != nil {
				if !vfs.IsNoSpace(err) {
					return DeleteResult{StartOffset: l.start.Load()}, fmt.Errorf("storage: advance start offset of %s: %w", l.dir, err)
				}
				// A full disk cannot take the checkpoint, and deleting is
				// how space comes back: delete oldest first instead, each
				// removal durable before the next, so that a crash leaves
				// a prefix removed and no hole (Open starts at the first
				// segment left).
				return l.deleteOldestFirstLocked(segs, n)
			}
			l.startFile = newStart
		}
		l.dropFrontLocked(segs, n)
	}
	if err := l.writeStartFileLocked(); err != nil {
		return DeleteResult{StartOffset: l.start.Load()}, err
	}
	return l.removePendingLocked()
}

// writeStartFileLocked writes the partition's own log-start-offset file,
// without fsync, when Store.AdvanceStartOffsets moved the start past it:
// the store's checkpoint holds the start durably; this file tells
// followers and a standalone open. The caller holds writeMu.
func (l *Log) writeStartFileLocked() error {
	start := l.start.Load()
	if l.startFile >= start {
		return nil
	}
	if err := vfs.ReplaceFile(l.opts.FS, filepath.Join(l.dir, logStartOffsetFile), encodeCheckpoint(logStartOffsetFile, start), l.opts.FileMode); err != nil {
		return fmt.Errorf("storage: write start offset of %s: %w", l.dir, err)
	}
	l.startFile = start
	return nil
}

// checkDeletableLocked says whether the log can delete from the front.
func (l *Log) checkDeletableLocked() error {
	if l.closed.Load() {
		return ErrClosed
	}
	if l.opts.ReadOnly {
		return ErrReadOnly
	}
	if d := l.damaged(); d != nil {
		return refuseDamaged(d)
	}
	return nil
}

// deletableBefore returns the segments and how many of them, from the
// front, hold only records below offset (never the active one).
func (l *Log) deletableBefore(offset int64) (segs []*segment.Segment, n int) {
	segs = l.segments()
	for n < len(segs)-1 && segs[n].NextOffset() <= offset && segs[n+1].Base() <= offset {
		n++
	}
	return segs, n
}

// dropFrontLocked takes segs[:n] out of the log: the start moves up to
// segs[n]'s base (in memory; the caller made it durable) and their files
// wait in pendingDelete. The caller holds writeMu.
func (l *Log) dropFrontLocked(segs []*segment.Segment, n int) {
	if newStart := segs[n].Base(); newStart > l.start.Load() {
		l.start.Store(newStart)
		l.clampHighWatermark()
		// In memory only: entries below the start offset are harmless on
		// disk, and the next write of the cache (a new epoch, a
		// truncation, Close) carries the change.
		l.epochMu.Lock()
		l.epochsDirty = l.epochs.truncateBefore(newStart) || l.epochsDirty
		l.epochMu.Unlock()
	}
	l.publish(segs[n:])
	l.pendingDelete = append(l.pendingDelete, segs[:n]...)
	l.manifestCurrent = false // it names the segments that left
}

// removePendingLocked removes the files of the segments taken out of the
// log. The removals need no directory fsync: files that a crash brings
// back lie below the durable start offset, and Open deletes them.
func (l *Log) removePendingLocked() (DeleteResult, error) {
	res := DeleteResult{StartOffset: l.start.Load()}
	var errs []error
	var failed []*segment.Segment
	for _, s := range l.pendingDelete {
		size, _ := s.Size()
		if err := s.Delete(); err != nil {
			errs = append(errs, err)
			failed = append(failed, s)
			continue
		}
		res.Segments++
		res.Bytes += size
	}
	l.pendingDelete = failed
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("storage: delete segments of %s: %w", l.dir, err)
	}
	return res, nil
}

// deleteOldestFirstLocked deletes segs[:n] one at a time, oldest first,
// fsyncing the directory after each, advancing the start offset in memory.
// It needs no free space. The caller holds writeMu.
func (l *Log) deleteOldestFirstLocked(segs []*segment.Segment, n int) (DeleteResult, error) {
	res := DeleteResult{StartOffset: l.start.Load()}
	for i := 0; i < n; i++ {
		size, _ := segs[i].Size()
		next := segs[i+1].Base()
		l.start.Store(next)
		l.publish(segs[i+1:])
		if err := segs[i].Delete(); err != nil {
			return res, l.failOp("delete segment", err)
		}
		if err := l.opts.FS.SyncDir(l.dir); err != nil {
			return res, l.fail(err)
		}
		res.Segments++
		res.Bytes += size
		res.StartOffset = next
	}
	l.clampHighWatermark()
	return res, nil
}
