package segment

import (
	"errors"
	"fmt"
	"math"
)

// Read sizes of sequential scans: the tail of a clean open (about one
// index interval, usually), and recovery (whole segments).
const (
	tailWindow    = 64 << 10
	recoverWindow = 1 << 20
)

// OpenActive opens the last segment of a log for appending after a clean
// shutdown: it finds the end by scanning batch headers forward from the
// last index entry, which reads at most one index interval (and the zero
// tail a crash can leave of the preallocated part). A segment whose tail
// does not scan cleanly returns an error wrapping ErrCorrupt; the caller
// then calls Recover.
func OpenActive(dir string, base int64, opts Options) (*Segment, error) {
	s := newSegment(dir, base, opts)
	s.writable = true
	size, err := s.acquireStat()
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	// A damaged index is rebuilt by Recover: report it as corruption.
	if err := s.oidx.SanityCheck(size); err != nil {
		return s, &CorruptError{File: s.path(IndexSuffix), Pos: 0, Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}
	}
	// The tail, from the last index entry on, is verified batch by batch
	// (checksums included): a clean marker says the files were closed, not
	// that the disk kept every byte of the last writes.
	startPos, startOff, err := s.indexedStart(size)
	if err != nil {
		return s, err
	}
	var sc Scanner
	s.scan(&sc, size, ScanOptions{Start: startPos, Verify: true, CheckOffsets: true, FirstOffset: startOff, Window: tailWindow})
	for sc.Next() {
		s.noteBatch(sc.Header())
		s.sinceIndex += sc.Header().Size()
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	pos, next := sc.End(), sc.NextOffset()
	if err := s.tidx.SanityCheck(base, max(next, base+1)); err != nil {
		return s, &CorruptError{File: s.path(TimeIndexSuffix), Pos: 0, Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}
	}
	s.size.Store(pos)
	s.next.Store(next)
	s.allocated = size // past pos: a zero tail (preallocated, not written)
	if last, ok := s.tidx.Last(); ok && last.Timestamp > s.maxTS.Load() {
		s.maxTS.Store(last.Timestamp)
		s.maxTSOff.Store(last.Offset)
	}
	if err := s.loadFirstTimestampLocked(); err != nil {
		return s, err
	}
	return s, nil
}

// indexedStart returns the position of the batch the last offset-index
// entry names and that batch's base offset (0 and the segment's base
// without entries), where a scan of the tail starts. An entry that does
// not name the batch at its position (its last offset; its base offset
// in a version-1 batch) is corruption of the index.
func (s *Segment) indexedStart(size int64) (int64, int64, error) {
	e := s.oidx.Lookup(math.MaxInt64)
	if e.Position == 0 {
		return 0, s.base, nil
	}
	h, err := s.readHeader(e.Position, size)
	if err != nil {
		return 0, 0, &CorruptError{File: s.path(IndexSuffix), Pos: 0, Err: fmt.Errorf("%w: last entry names position %d: %w", ErrCorrupt, e.Position, err)}
	}
	if h.IndexOffset() != e.Offset {
		return 0, 0, &CorruptError{File: s.path(IndexSuffix), Pos: 0, Err: fmt.Errorf("%w: last entry names offset %d at position %d, where the batch has offsets [%d, %d]", ErrCorrupt, e.Offset, e.Position, h.BaseOffset, h.LastOffset())}
	}
	return e.Position, h.BaseOffset, nil
}

// loadFirstTimestampLocked reads the first batch's header for the
// segment's age (FirstTimestamp).
func (s *Segment) loadFirstTimestampLocked() error {
	s.firstTS.Store(math.MinInt64)
	if size := s.size.Load(); size > 0 {
		h, err := s.readHeader(0, size)
		if err != nil {
			return err
		}
		s.firstTS.Store(h.MaxTimestamp)
	}
	return nil
}

// rebuildSealedIndexesLocked rebuilds a sealed segment's indexes from its
// .log, which is trusted (it is below the recovery point).
func (s *Segment) rebuildSealedIndexesLocked() error {
	if err := s.reopenWritableLocked(); err != nil {
		return err
	}
	fail := func(err error) error {
		// Leave the files closed: the next use tries again.
		_ = s.closeFilesLocked()
		if s.opts.Budget != nil {
			s.opts.Budget.release(s)
		}
		s.writable = false
		return err
	}
	if _, err := s.scanLocked(false, 0); err != nil {
		return fail(err)
	}
	if err := s.appendFinalTimeEntryLocked(); err != nil {
		return fail(err)
	}
	if err := errors.Join(s.oidx.Seal(), s.tidx.Seal()); err != nil {
		return fail(fmt.Errorf("segment: seal: %w", err))
	}
	s.writable = false
	// Durable, files and directory entries, so that a crash does not
	// take the rebuilt indexes away again (the .log is not touched).
	if err := errors.Join(s.oidx.Sync(), s.tidx.Sync()); err != nil {
		return fail(fmt.Errorf("segment: rebuild index: %w", err))
	}
	if err := s.opts.FS.SyncDir(s.dir); err != nil {
		return fail(fmt.Errorf("segment: rebuild index: %w", err))
	}
	return nil
}

// Recover rescans the whole .log: it validates every batch (header,
// checksum, offsets following on from the segment's base), rebuilds both
// indexes, and cuts the file at the first invalid batch. It returns how
// many bytes were cut, not counting a zero tail (the preallocated part a
// crash leaves past the data), which is cut too. The segment is left writable (active); Seal it if
// it is not the last.
func (s *Segment) Recover() (truncated int64, err error) { return s.RecoverKeeping(0) }

// RecoverKeeping is Recover, except that an invalid batch that starts
// below offset keep (data the caller knows was fsynced) is not cut: it
// returns a *CorruptError at the batch and leaves the .log as it is, with
// the segment's end (Size, NextOffset) and indexes at the batch.
func (s *Segment) RecoverKeeping(keep int64) (truncated int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted {
		return 0, ErrDeleted
	}
	if err := s.reopenWritableLocked(); err != nil {
		return 0, err
	}
	return s.scanLocked(true, keep)
}

// scanLocked rescans the .log from the start, validating every batch and
// rebuilding both indexes. With cut it truncates the file at the first
// invalid batch (recovery of a segment past the recovery point), unless
// that batch starts below keep; without, an invalid batch is an error and
// nothing is cut (a sealed segment whose indexes are rebuilt: its data is
// below the recovery point).
func (s *Segment) scanLocked(cut bool, keep int64) (int64, error) {
	fi, err := s.log.Stat()
	if err != nil {
		return 0, fmt.Errorf("segment: %w", err)
	}
	fileSize := fi.Size()
	if err := errors.Join(s.oidx.Reset(), s.tidx.Reset()); err != nil {
		return 0, fmt.Errorf("segment: %w", err)
	}
	s.maxTS.Store(math.MinInt64)
	s.maxTSOff.Store(-1)
	s.firstTS.Store(math.MinInt64)
	s.sinceIndex = 0
	s.size.Store(0)
	s.next.Store(s.base)

	var sc Scanner
	s.scan(&sc, fileSize, ScanOptions{Verify: true, CheckOffsets: true, FirstOffset: s.base, Window: recoverWindow})
	pos, next := int64(0), s.base
	for sc.Next() {
		h := sc.Header()
		if h.NextOffset()-s.base > math.MaxUint32 {
			break // offsets past what the index can hold: invalid here
		}
		if err := s.addBatchLocked(h, sc.Pos(), true); err != nil {
			return 0, fmt.Errorf("segment: rebuild index: %w", err)
		}
		pos, next = sc.End(), h.NextOffset()
	}
	var corrupt *CorruptError
	if err := sc.Err(); err != nil && !errors.As(err, &corrupt) {
		return 0, err // an I/O error is not a reason to cut
	}
	// A zero tail (preallocated, never written) is cut but loses nothing:
	// it is not counted, and not corruption in a sealed segment.
	cutBytes, lost := fileSize-pos, fileSize-pos
	if sc.End() == pos && sc.ZeroTail() {
		lost = 0
	}
	if lost > 0 && !cut {
		return 0, &CorruptError{File: s.LogPath(), Pos: pos, Err: fmt.Errorf("%w: invalid batch in a sealed segment (%d bytes after it)", ErrCorrupt, cutBytes)}
	}
	if lost > 0 && next < keep {
		s.allocated = fileSize
		s.size.Store(pos)
		s.next.Store(next)
		reason := error(fmt.Errorf("%w: %d bytes after the last valid batch", ErrCorrupt, cutBytes))
		if err := sc.Err(); err != nil {
			reason = err
			if errors.As(err, &corrupt) {
				reason = corrupt.Err
			}
		}
		return 0, &CorruptError{File: s.LogPath(), Pos: pos, Err: fmt.Errorf("%w (below offset %d, which was fsynced: not cut)", reason, keep)}
	}
	s.allocated = fileSize
	if cutBytes > 0 && cut {
		if err := s.log.Truncate(pos); err != nil {
			return 0, fmt.Errorf("segment: truncate %s to %d: %w", s.LogPath(), pos, err)
		}
		s.cutPreallocLocked(pos)
	}
	s.size.Store(pos)
	s.next.Store(next)
	return lost, nil
}
