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

// Record is one record to append or one record read. Timestamps are
// milliseconds since the Unix epoch.
type Record = segment.Record

// AppendResult says which offsets an append was given.
type AppendResult struct {
	FirstOffset int64
	LastOffset  int64
	// Duplicate is set when the batch repeated one of its idempotent
	// producer's recent batches: nothing was written, and the offsets
	// are those the original got.
	Duplicate bool
}

var batchPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// Append builds one batch of recs (compressed with Options.Compression)
// and appends it. A record with a zero Timestamp gets the current time.
// It syncs as Options.Sync says.
func (l *Log) Append(recs ...Record) (AppendResult, error) {
	if len(recs) == 0 {
		return AppendResult{}, fmt.Errorf("%w: no records", ErrInvalidBatch)
	}
	var now int64
	for i := range recs {
		if recs[i].Timestamp == 0 {
			if now == 0 {
				now = l.opts.Now().UnixMilli()
			}
			recs[i].Timestamp = now
		}
	}
	bp := batchPool.Get().(*[]byte)
	defer batchPool.Put(bp)
	b, err := segment.AppendBatch((*bp)[:0], recs, segment.EncodeOptions{Codec: l.opts.Compression})
	*bp = b[:0]
	return l.appendEncoded(b, err)
}

func (l *Log) appendEncoded(b []byte, err error) (AppendResult, error) {
	if err != nil {
		return AppendResult{}, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	// Just encoded: its checksum is right, only the limits are checked.
	h, err := segment.ParseHeader(b, l.opts.Limits)
	if err != nil {
		return AppendResult{}, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	return l.append(b, h)
}

// AppendBatch appends a batch that a producer encoded (see
// segment.AppendBatch). It validates the batch's header, limits and
// checksum (and with Options.ValidateRecords every record); assigns offsets by
// patching the batch's base offset in place (the caller's slice is
// modified); and writes its bytes unchanged otherwise. It syncs as
// Options.Sync says.
func (l *Log) AppendBatch(batch []byte) (AppendResult, error) {
	var h segment.Header
	var err error
	if l.opts.ValidateRecords {
		h, err = segment.ValidateRecords(batch, l.opts.Limits)
	} else {
		h, err = segment.Verify(batch, l.opts.Limits)
	}
	if err != nil {
		return AppendResult{}, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	return l.append(batch, h)
}

func (l *Log) append(batch []byte, h segment.Header) (AppendResult, error) {
	l.appending.Add(1)
	l.writeMu.Lock()
	res, err := l.appendLocked(batch, h)
	if err != nil {
		l.writeMu.Unlock()
		l.appending.Add(-1)
		return res, err
	}
	gen := l.truncGen.Load()
	switch l.opts.Sync {
	case SyncAlways:
		l.writeMu.Unlock()
		l.appending.Add(-1)
		return res, l.syncAppended(res, gen)
	case SyncEveryN:
		l.sinceSync += int(h.RecordCount)
		if l.sinceSync >= l.opts.SyncEveryRecords {
			l.sinceSync = 0
			l.writeMu.Unlock()
			l.appending.Add(-1)
			return res, l.syncAppended(res, gen)
		}
	}
	l.writeMu.Unlock()
	l.appending.Add(-1)
	return res, nil
}

// checkWritableLocked is called by every writer before it changes files.
func (l *Log) checkWritableLocked() error {
	if l.closed.Load() {
		return ErrClosed
	}
	if l.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := l.failure(); err != nil {
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return l.durableMarkerRemovalLocked()
}

func (l *Log) appendLocked(batch []byte, h segment.Header) (AppendResult, error) {
	if err := l.checkWritableLocked(); err != nil {
		return AppendResult{}, err
	}
	if h.HasProducer() {
		dup, err := l.producers.check(h)
		if err != nil {
			return AppendResult{}, err
		}
		if dup != nil {
			return AppendResult{FirstOffset: dup.firstOffset, LastOffset: dup.lastOffset, Duplicate: true}, nil
		}
	}
	active := l.active()
	if l.shouldRollLocked(active, len(batch)) {
		if err := l.rollLocked(); err != nil {
			return AppendResult{}, err
		}
		active = l.active()
	}
	base := l.end.Load()
	if base > MaxOffset+1-int64(h.RecordCount) {
		return AppendResult{}, fmt.Errorf("%w: %d records at offset %d would pass the largest offset %d", ErrOffsetOverflow, h.RecordCount, base, MaxOffset)
	}
	if l.stampEpoch >= 0 && h.LeaderEpoch != l.stampEpoch {
		segment.SetLeaderEpoch(batch, l.stampEpoch)
		h.LeaderEpoch = l.stampEpoch
	}
	if err := l.noteEpochLocked(h.LeaderEpoch, base); err != nil {
		return AppendResult{}, err
	}
	segment.SetBaseOffset(batch, base)
	h.BaseOffset = base
	_, err := active.Append(batch, h)
	// Full, or sealed by a roll that failed half-way: roll (again).
	if errors.Is(err, segment.ErrFull) || errors.Is(err, segment.ErrSealed) {
		if err := l.rollLocked(); err != nil {
			return AppendResult{}, err
		}
		active = l.active()
		_, err = active.Append(batch, h)
	}
	if err != nil {
		return AppendResult{}, l.writeError(err)
	}
	if h.HasProducer() {
		l.producers.update(h, l.opts.Now().UnixMilli())
	}
	l.end.Store(h.NextOffset())
	l.wakeWaiters()
	return AppendResult{FirstOffset: base, LastOffset: h.LastOffset()}, nil
}

// writeError classifies a write error: a full disk wraps ErrDiskFull.
func (l *Log) writeError(err error) error {
	if vfs.IsNoSpace(err) {
		return fmt.Errorf("storage: append to %s: %w: %w", l.dir, ErrDiskFull, err)
	}
	return fmt.Errorf("storage: append to %s: %w", l.dir, err)
}

func (l *Log) shouldRollLocked(active *segment.Segment, n int) bool {
	size, err := active.Size()
	if err != nil || size == 0 {
		return false
	}
	if size+int64(n) > l.opts.SegmentBytes {
		return true
	}
	if l.opts.SegmentAge <= 0 {
		return false
	}
	// The age counts from the first batch's timestamp, which is on disk:
	// it survives reopening and truncation (as Kafka's segment.ms).
	first, ok := active.FirstTimestamp()
	return ok && l.opts.Now().UnixMilli()-first >= l.opts.SegmentAge.Milliseconds()
}

// rollLocked fsyncs and seals the active segment and starts a new one at
// the end offset, then checkpoints the recovery point.
func (l *Log) rollLocked() error {
	old := l.active()
	end := l.end.Load()
	if err := old.Sync(); err != nil {
		return l.fail(err)
	}
	if err := old.Seal(); err != nil {
		// The indexes may not be durable: nothing may be acknowledged
		// past this segment until a reopen recovers it.
		return l.fail(err)
	}
	// Best effort: a missing snapshot only means a longer rebuild.
	_ = l.writeProducerSnapshotLocked()
	seg, err := segment.Create(l.dir, end, l.opts.segmentOptions())
	if err != nil {
		return l.writeError(err)
	}
	// The new segment's directory entry is durable before anything in it
	// can be acknowledged.
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		_ = seg.Delete()
		return l.fail(err)
	}
	segs := append(l.segments(), seg)
	l.publish(segs)
	l.raiseFlushed(end)
	return l.checkpoint()
}

// Roll closes the active segment and starts a new one, if the active
// segment holds anything.
func (l *Log) Roll() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	if size, _ := l.active().Size(); size == 0 {
		return nil
	}
	return l.rollLocked()
}

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

// Sync fsyncs everything appended so far and checkpoints the recovery
// point.
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
	if err := l.checkpointHighWatermark(); err != nil {
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
		// Let appenders that are writing, or were woken by the previous
		// fsync, finish their write before this fsync starts, so that it
		// covers them too (a few yields, never a sleep).
		for i := 0; i < 16 && l.appending.Load() > 0; i++ {
			runtime.Gosched()
		}
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
		if err := s.Sync(); err != nil {
			if errors.Is(err, segment.ErrDeleted) {
				continue
			}
			return l.fail(err)
		}
	}
	l.raiseFlushed(end)
	return nil
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

func (l *Log) flushLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.flushIfDirty()
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

// segmentIndex returns the index of the last segment whose base is at or
// below offset (0 when offset is below them all).
func segmentIndex(segs []*segment.Segment, offset int64) int {
	lo, hi := 0, len(segs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if segs[m].Base() <= offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return max(lo-1, 0)
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
// retried by the next call.
func (l *Log) DeleteSegmentsBefore(offset int64) (DeleteResult, error) {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.closed.Load() {
		return DeleteResult{}, ErrClosed
	}
	if l.opts.ReadOnly {
		return DeleteResult{}, ErrReadOnly
	}
	if err := l.durableMarkerRemovalLocked(); err != nil {
		return DeleteResult{}, err
	}
	// Producers whose batches were all deleted expire after a while.
	l.producers.expire(l.start.Load(), l.opts.Now().Add(-l.opts.ProducerExpiry).UnixMilli())
	segs := l.segments()
	n := 0
	for n < len(segs)-1 && segs[n].NextOffset() <= offset && segs[n+1].Base() <= offset {
		n++
	}
	res := DeleteResult{StartOffset: l.start.Load()}
	var errs []error
	if n > 0 {
		newStart := segs[n].Base()
		if newStart > l.start.Load() {
			if err := writeCheckpoint(l.opts.FS, l.dir, logStartOffsetFile, newStart, l.opts.FileMode); err != nil {
				if !vfs.IsNoSpace(err) {
					return res, fmt.Errorf("storage: advance start offset of %s: %w", l.dir, err)
				}
				// A full disk cannot take the checkpoint, and deleting is
				// how space comes back: delete oldest first instead, each
				// removal durable before the next, so that a crash leaves
				// a prefix removed and no hole (Open starts at the first
				// segment left).
				return l.deleteOldestFirstLocked(segs, n)
			}
			l.start.Store(newStart)
			res.StartOffset = newStart
			l.clampHighWatermark()
			// In memory only: entries below the start offset are
			// harmless on disk, and the next write of the cache (a new
			// epoch, a truncation, Close) carries the change.
			l.epochMu.Lock()
			l.epochsDirty = l.epochs.truncateBefore(newStart) || l.epochsDirty
			l.epochMu.Unlock()
		}
		l.publish(segs[n:])
		l.pendingDelete = append(l.pendingDelete, segs[:n]...)
	}
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
	// The removals need no directory fsync: files that a crash brings
	// back lie below the durable start offset, and Open deletes them.
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
