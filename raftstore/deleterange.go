package raftstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// DeleteRange deletes the entries from min to max inclusive. Raft deletes
// a prefix (compaction after a snapshot), a suffix (a follower's
// conflicting entries) or everything (after installing a snapshot, since
// the store is monotonic); a range strictly inside the log returns
// ErrUnsupportedRange, as in raft-wal; a range outside it does nothing.
//
//   - A prefix: the segments wholly at or below max are deleted
//     (storage.Log.DeleteSegmentsBefore); the entries of the segment that
//     holds max stay, so FirstIndex may remain below max+1.
//   - A suffix: storage.Log.Truncate, which is fsynced before it returns.
//     When min falls inside a batch (one StoreLogs call), the entries of
//     that batch below min are first saved in a redo record (dir/tail-cut,
//     written atomically), the whole batch is truncated and they are
//     appended again, and the record is removed: a crash at any point
//     leaves them in place once Open has finished the cut.
//   - Everything: the active segment is rolled and every segment deleted;
//     offsets are not reused, and the next StoreLogs may start at any
//     index.
func (s *LogStore) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	start, end := s.log.StartOffset(), s.log.EndOffset()
	if start >= end {
		return nil
	}
	first, last := uint64(start+1+s.base), uint64(end+s.base)
	switch {
	case max < first || min > last:
		return nil
	case min <= first && max >= last:
		return s.deleteAllLocked()
	case min <= first:
		// Segments whose entries are all at or below max.
		if _, err := s.log.DeleteSegmentsBefore(int64(max) - s.base); err != nil {
			return fmt.Errorf("raftstore: delete logs up to %d: %w", max, err)
		}
		return nil
	case max >= last:
		off, _ := s.offsetOf(min) // first < min <= last: an offset in (start, end)
		return s.cutTailLocked(off)
	default:
		return fmt.Errorf("%w: [%d, %d] of [%d, %d]", ErrUnsupportedRange, min, max, first, last)
	}
}

// deleteAllLocked empties the log: roll, then delete every segment
// before the new (empty) active one.
func (s *LogStore) deleteAllLocked() error {
	if err := s.log.Roll(); err != nil {
		return fmt.Errorf("raftstore: delete all logs: %w", err)
	}
	if _, err := s.log.DeleteSegmentsBefore(s.log.EndOffset()); err != nil {
		return fmt.Errorf("raftstore: delete all logs: %w", err)
	}
	s.cache.clear()
	return nil
}

// cutTailLocked removes every entry at and after offset off (start < off <
// end), keeping those below it even when off falls inside a batch.
func (s *LogStore) cutTailLocked(off int64) error {
	b, err := s.readBatch(off)
	if err != nil {
		return fmt.Errorf("raftstore: delete logs from offset %d: %w", off, err)
	}
	if b.base == off {
		// A batch boundary: storage cuts exactly there.
		s.shapeMu.Lock()
		defer s.shapeMu.Unlock()
		s.cache.clear()
		if err := s.log.Truncate(off); err != nil {
			return fmt.Errorf("raftstore: delete logs from offset %d: %w", off, err)
		}
		return nil
	}
	// Inside a batch: storage would cut the whole batch. Save the part
	// kept, durably, before anything is cut.
	now := time.Now().UnixMilli()
	recs := make([]segment.Record, off-b.base)
	for i := range recs {
		recs[i] = segment.Record{Timestamp: now, Value: b.values[i]}
	}
	batch, err := segment.AppendBatch(nil, recs, segment.EncodeOptions{Codec: s.codec})
	if err != nil {
		return fmt.Errorf("raftstore: delete logs from offset %d: %w", off, err)
	}
	cut := cutRecord{base: b.base, end: off, batch: batch}
	path := filepath.Join(s.dir, CutFile)
	if err := vfs.WriteFileAtomic(s.fs, path, cut.encode(), s.mode); err != nil {
		return fmt.Errorf("raftstore: delete logs from offset %d: write %s: %w", off, path, err)
	}
	s.shapeMu.Lock()
	err = s.applyCutLocked(cut)
	s.shapeMu.Unlock()
	if err != nil {
		s.failed = err
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	if err := s.removeCutFile(); err != nil {
		s.failed = err
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return nil
}

// applyCutLocked truncates the log at the cut's base (the whole batch)
// and appends the kept records again, synced (even with Options.NoSync:
// the redo record is removed next). The caller holds wmu and
// shapeMu exclusively.
func (s *LogStore) applyCutLocked(c cutRecord) error {
	s.cache.clear()
	if end := s.log.EndOffset(); end > c.base {
		if err := s.log.Truncate(c.base); err != nil {
			return fmt.Errorf("truncate at %d: %w", c.base, err)
		}
	}
	if end := s.log.EndOffset(); end != c.base {
		return fmt.Errorf("%w: truncated at %d, the log ends at %d", ErrCorrupt, c.base, end)
	}
	batch := append([]byte(nil), c.batch...) // AppendBatch patches it
	res, err := s.log.AppendBatch(batch)
	if err != nil {
		return fmt.Errorf("append the entries kept at %d: %w", c.base, err)
	}
	if res.FirstOffset != c.base || res.LastOffset != c.end-1 {
		return fmt.Errorf("%w: the entries kept went to [%d, %d], want [%d, %d]", ErrCorrupt, res.FirstOffset, res.LastOffset, c.base, c.end-1)
	}
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("sync the entries kept at %d: %w", c.base, err)
	}
	return nil
}

// removeCutFile removes the redo record durably: nothing may be appended
// after a cut until its record is gone for good, or a crash would redo
// the cut over the new entries.
func (s *LogStore) removeCutFile() error {
	path := filepath.Join(s.dir, CutFile)
	if err := s.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// resumeCut finishes, at open, a cut from the back that a crash
// interrupted. The record exists only between its durable write and its
// durable removal, during which nothing else is written, so the log ends
// either where it did before the cut (past the record's end), at the
// record's base (truncated, not yet re-appended) or at its end (done).
func (s *LogStore) resumeCut() error {
	path := filepath.Join(s.dir, CutFile)
	data, err := vfs.ReadFile(s.fs, path, int64(s.lim.MaxBatchBytes)+64)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	cut, err := decodeCutRecord(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := segment.Verify(cut.batch, s.lim); err != nil {
		return fmt.Errorf("%s: %w: %w", path, ErrCorrupt, err)
	}
	start, end := s.log.StartOffset(), s.log.EndOffset()
	switch {
	case end == cut.end:
		// Done before the crash.
	case end >= cut.base && cut.base >= start:
		if err := s.applyCutLocked(cut); err != nil {
			return fmt.Errorf("finish the cut of %s: %w", path, err)
		}
	default:
		return fmt.Errorf("%w: %s cuts the batch at %d to end at %d, but the log holds [%d, %d)", ErrCorrupt, path, cut.base, cut.end, start, end)
	}
	return s.removeCutFile()
}
