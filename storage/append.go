package storage

import (
	"errors"
	"fmt"
	"sync"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
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
	h, err := segment.CheckHeader(b, l.opts.Limits)
	if err != nil {
		return AppendResult{}, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	return l.append(b, h)
}

// AppendBatch appends a Kafka RecordBatch v2 that a producer encoded (a
// Kafka client, or segment.AppendBatch), as it came. It validates the
// batch's header, limits and CRC (and with Options.ValidateRecords every
// record); assigns offsets and the leader epoch by patching baseOffset and
// partitionLeaderEpoch in place (the caller's slice is modified; neither
// is covered by the CRC); and writes every other byte unchanged, except
// in a LogAppendTime log (Options.TimestampType), which stamps
// maxTimestamp and computes the CRC again. Kafka's batches are accepted
// as Kafka accepts them: offset deltas need not be dense, and control and
// transactional batches are stored like any other. A malformed batch is
// an error wrapping ErrInvalidBatch and segment.ErrInvalid (with
// segment.ErrTooLarge for one over the limits), never ErrCorrupt. It
// syncs as Options.Sync says.
func (l *Log) AppendBatch(batch []byte) (AppendResult, error) {
	h, err := segment.CheckBatch(batch, l.opts.Limits, l.opts.ValidateRecords)
	if err != nil {
		return AppendResult{}, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	}
	return l.append(batch, h)
}

func (l *Log) append(batch []byte, h segment.Header) (AppendResult, error) {
	l.appendsStarted.Add(1)
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
		l.sinceSync += int(h.Offsets())
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
	if d := l.damaged(); d != nil {
		return refuseDamaged(d)
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
	if base > MaxOffset+1-h.Offsets() {
		return AppendResult{}, fmt.Errorf("%w: %d offsets at offset %d would pass the largest offset %d", ErrOffsetOverflow, h.Offsets(), base, MaxOffset)
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
	if l.opts.TimestampType == segment.LogAppendTime {
		h = segment.SetLogAppendTime(batch, h, l.opts.Now().UnixMilli())
	}
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
	l.counters.appendedBatches.Add(1)
	l.counters.appendedRecords.Add(int64(h.RecordCount))
	l.counters.appendedBytes.Add(int64(len(batch)))
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

// rollLocked seals the active segment and starts a new one at the end
// offset. Unless everything in it is flushed already, the seal and the
// fsyncs are left to the background (syncRolled), as Kafka flushes a
// rolled segment after the roll: the appender waits neither for gigabytes
// of writeback nor for the journal. Until the flusher is done with the
// segment the recovery point stays at or below its base, so a crash
// rescans it; a failure fails the log.
func (l *Log) rollLocked() error {
	old := l.active()
	end := l.end.Load()
	// With everything flushed, a recovery point at the end may have been
	// written already, which a crash would trust: then the segment is
	// sealed durably now (there is no data left to write back). Otherwise
	// the whole seal is left to the background flusher (sealRolled): the
	// cut of the .log's preallocated tail, the final time entry, the
	// indexes' trim (an ftruncate that waited 50-100 ms for the journal
	// under heavy writeback here) and every fsync. Until then the old
	// segment stays as it was, read as the active one is, and followers
	// in other processes open it as they open the active one (it is past
	// the recovery point: loadFollower). Past maxUnsealedRolls segments
	// waiting for their seal, the roll seals old itself, all but the
	// .log's fsync, and the flusher only fsyncs it.
	//
	// Registered before flushed is read: from here on no checkpoint moves
	// the recovery point past old until the flusher is done with it, and
	// one that did not see old registered read flushed before this roll
	// did (writeRecoveryPoint reads it before rollFloor), so when it
	// wrote old's end the roll seals old durably itself.
	waiting := l.addRollPending(old)
	background := l.flushed.Load() < end
	unsealed := background && waiting < maxUnsealedRolls
	l.setUnsealed(old, unsealed)
	switch {
	case !background:
		if err := old.Seal(); err != nil {
			// The indexes may not be durable: nothing may be
			// acknowledged past this segment until a reopen recovers it.
			return l.fail(err)
		}
		l.dropRollPending(old)
	case !unsealed:
		if err := old.SealUnsynced(); err != nil {
			return l.fail(err)
		}
	}
	// Best effort: a missing snapshot only means a longer rebuild.
	_ = l.writeProducerSnapshotLocked()
	seg, err := segment.Create(l.dir, end, l.opts.segmentOptions())
	if err != nil {
		return l.writeError(err)
	}
	// The new segment's directory entry is durable before anything in it
	// can be acknowledged. With nothing to acknowledge yet (background),
	// the directory's fsync goes to whoever next raises the flushed
	// offset, the background flusher or a Sync (syncDirIfDue): under
	// heavy writeback it waited 50-100 ms for the journal here.
	if background {
		l.dirSyncDue.Add(1)
	} else if err := l.opts.FS.SyncDir(l.dir); err != nil {
		_ = seg.Delete()
		return l.fail(err)
	}
	segs := append(l.segments(), seg)
	l.publish(segs)
	if background {
		l.startRollFlusherLocked()
	}
	if err := l.checkpointHighWatermark(); err != nil {
		return err
	}
	if background {
		// The recovery point cannot pass old before its fsync: the
		// flusher checkpoints after it. A write now (fsyncs behind the
		// writeback that just began) would gain nothing.
		return nil
	}
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
