package segment

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/vfs"
)

// noteBatch updates the writer's view after a batch at the end.
// The largest timestamp so far is kept with the offset the time index
// names for its batch (IndexOffset: the last offset, as Kafka's
// LogSegment keeps it).
func (s *Segment) noteBatch(h Header) {
	if h.MaxTimestamp > s.maxTS.Load() || s.maxTSOff.Load() < 0 {
		s.maxTS.Store(h.MaxTimestamp)
		s.maxTSOff.Store(h.IndexOffset())
	}
}

// Append writes an encoded batch, whose base offset must be NextOffset and
// whose header h the caller has verified, at the end of the segment, and
// adds index entries every IndexIntervalBytes. The new end is published
// only after the bytes are written. It does not sync. On error nothing is
// published and the file is cut back to its previous size.
func (s *Segment) Append(batch []byte, h Header) (pos int64, err error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	if !s.writable {
		return 0, ErrSealed
	}
	if h.BaseOffset != s.next.Load() {
		return 0, fmt.Errorf("segment: append at offset %d, next is %d", h.BaseOffset, s.next.Load())
	}
	pos = s.size.Load()
	if s.fullLocked(pos, len(batch), h) {
		return 0, ErrFull
	}
	// On any error below, the writer's view goes back to what it was.
	prevTS, prevTSOff, prevSince := s.maxTS.Load(), s.maxTSOff.Load(), s.sinceIndex
	defer func() {
		if err != nil {
			s.maxTS.Store(prevTS)
			s.maxTSOff.Store(prevTSOff)
			s.sinceIndex = prevSince
		}
	}()
	if _, err := s.log.WriteAt(batch, pos); err != nil {
		// Cut off whatever part reached the file so that the next append
		// and a reopen see the segment as it was.
		s.cutFailedLocked(pos)
		return 0, fmt.Errorf("segment: write %s at %d: %w", s.LogPath(), pos, err)
	}
	if err := s.addBatchLocked(h, pos, false); err != nil {
		s.cutFailedLocked(pos)
		return 0, fmt.Errorf("segment: %w", err)
	}
	if end := pos + int64(len(batch)); end > s.zeroed && s.preallocDue() {
		s.preallocate(end)
	} else if end > s.zeroed && end > s.allocated-fallocAhead(end)/2 {
		s.fallocate(end)
	}
	s.size.Store(pos + int64(len(batch)))
	s.next.Store(h.NextOffset())
	return pos, nil
}

// fullLocked is the one decision that the segment, holding size bytes,
// is full for a batch of n bytes that h describes: by the roll policy
// (Options.Roll: size and age, for a segment that holds data), by its
// hard limits (MaxSegmentBytes, offsets relative to the base in 32 bits)
// or because its indexes have no room for the entry the batch is due.
// The caller holds s.mu and is the writer.
func (s *Segment) fullLocked(size int64, n int, h Header) bool {
	if size+int64(n) > MaxSegmentBytes || h.NextOffset()-s.base > math.MaxUint32 {
		return true
	}
	if s.indexDue(size) && (s.oidx.Full() || s.tidx.Full()) {
		return true
	}
	if size == 0 {
		return false
	}
	roll := s.opts.Roll
	if roll.Bytes > 0 && size+int64(n) > roll.Bytes {
		return true
	}
	if roll.Age <= 0 || roll.Now == nil {
		return false
	}
	first, ok := s.FirstTimestamp()
	return ok && roll.Now().UnixMilli()-first >= roll.Age.Milliseconds()
}

// preallocChunk is how far past the data the .log is preallocated.
const preallocChunk = 256 << 10

// maxPreallocSyncGap is the most data one Sync may have covered for the
// next chunk to be preallocated: writers whose fsyncs cover more gain
// little or nothing (the zeros cost about as much as the journal commits
// they save: break-even near 64 KiB per fdatasync here, a 20% gain at
// 32 KiB, 35% at 10 KiB) and append past the end.
const maxPreallocSyncGap = preallocChunk / 8

// zeroChunk is what preallocate writes.
var zeroChunk [preallocChunk]byte

// preallocDue reports whether the next chunk past the data should be
// preallocated: preallocation works and the segment was synced since the
// last chunk, by a Sync that covered at most maxPreallocSyncGap bytes (a
// writer that fsyncs small appends).
func (s *Segment) preallocDue() bool {
	return !s.noPrealloc && s.syncs.Load() > s.preallocSyncs && s.syncGap.Load() <= maxPreallocSyncGap
}

// preallocate writes zeros past end, where an append just ended, up to
// preallocChunk past the data's end or the end of the preallocated part,
// but not past the roll size. Appends into written zeros make their
// fdatasync cheap: on ext4 and XFS an fdatasync after an append that
// extends the file, or writes into fallocated (unwritten) blocks, commits
// the journal for the new size or extents; one into blocks whose zeros an
// earlier fdatasync made durable flushes the data alone. The first Sync
// after a chunk pays its journal commit and its zeros, the Syncs of the
// appends within it do not: measured with 10 KiB appends, each followed by
// an fdatasync, 170 µs against 260 µs at the median (fallocate: 260 µs).
// A failed write (a full disk) stops preallocation for the segment; what
// part of the zeros reached the file is a zero tail, which scans read as
// the end of the data and Seal and Close cut.
//
// Only writers that fsync small appends preallocate (preallocDue): a
// writer that leaves the writeback to the OS, or fsyncs large amounts,
// would write every byte twice. And only on ext4 and XFS
// (vfs.OverwritesSyncCheaply): elsewhere the zeros cost writes and save
// nothing.
func (s *Segment) preallocate(end int64) {
	if s.checkPreallocFS(); s.noPrealloc {
		return
	}
	from := max(s.zeroed, end)
	target := s.preallocLimit(from + preallocChunk)
	s.preallocSyncs = s.syncs.Load()
	if target <= from {
		return
	}
	// At most one chunk: target-from <= len(zeroChunk).
	if _, err := s.log.WriteAt(zeroChunk[:target-from], from); err != nil {
		s.noPrealloc = true
		return
	}
	s.zeroed = target
	s.allocated = max(s.allocated, target)
}

// checkPreallocFS asks the file system, once, whether preallocating the
// .log pays (vfs.OverwritesSyncCheaply): where not, it turns both kinds
// off.
func (s *Segment) checkPreallocFS() {
	if s.preallocChecked {
		return
	}
	s.preallocChecked = true
	if !vfs.OverwritesSyncCheaply(s.log) {
		s.noPrealloc, s.noFallocate = true, true
	}
}

// preallocLimit caps a preallocation target at the roll size (the largest
// segment Options allow, less a batch) and MaxSegmentBytes.
func (s *Segment) preallocLimit(target int64) int64 {
	if roll := s.opts.MaxMapBytes - int64(s.opts.Limits.MaxBatchBytes); target > roll {
		target = roll
	}
	return min(target, MaxSegmentBytes)
}

// fallocChunk is the most fallocate reserves past the .log's data, and
// fallocMin the least.
const (
	fallocChunk = 4 << 20
	fallocMin   = 256 << 10
)

// fallocAhead is how far past end, the data's end, fallocate reserves:
// as much as the segment holds, at least fallocMin and at most
// fallocChunk, so that the disk a segment reserves beyond its data is
// bounded by its data (a store of many partitions written little
// reserves little) and a segment written fast gets a full chunk. The next
// reservation comes when the data is within half of it of the reserved
// part's end, so that an append of up to half of it never extends the
// file.
func fallocAhead(end int64) int64 { return min(max(end, fallocMin), fallocChunk) }

// fallocate reserves the .log's blocks with fallocate(2) up to
// fallocAhead(end) past end, where an append just ended (not past the roll
// size): for the appends past the zeros preallocate wrote, those of a
// writer that does not fsync small appends. On ext4 a pwrite into
// reserved (unwritten) blocks costs 20-28% less than one that extends
// the file, as it allocates nothing and sets no new size; a fallocate of
// 2 MiB takes 10-15 µs at the median (p99 about 110 µs, the slowest under
// 0.9 ms with another file fsynced 4 KiB at a time beside it), once per
// 2 MiB of appends. The reserved part reads as zeros: the same zero tail
// as preallocate's, which scans end at and recovery, Seal and Close cut.
// Only on ext4 and XFS (vfs.OverwritesSyncCheaply), where it was
// measured; elsewhere, and for the segment after a fallocate fails (a
// full disk, a file system without it), appends go past the end of the
// file. A failure changes nothing the append did.
func (s *Segment) fallocate(end int64) {
	if s.checkPreallocFS(); s.noFallocate {
		return
	}
	from := max(s.allocated, end)
	target := s.preallocLimit(end + fallocAhead(end))
	if target <= from {
		return
	}
	if err := s.log.Allocate(from, target-from); err != nil {
		s.noFallocate = true
		// Part of the range may be reserved: the file's size is unknown
		// past from, and whatever it holds there reads as zeros.
		if fi, err := s.log.Stat(); err == nil {
			s.allocated = max(from, fi.Size())
		}
		return
	}
	s.allocated = target
}

// cutFailedLocked cuts the .log back to pos after a failed append, and
// with it the preallocated part.
func (s *Segment) cutFailedLocked(pos int64) {
	_ = s.log.Truncate(pos)
	s.cutPreallocLocked(pos)
}

// cutPreallocLocked notes that the .log ends at pos: no preallocated part.
func (s *Segment) cutPreallocLocked(pos int64) {
	s.allocated = pos
	s.zeroed = min(s.zeroed, pos)
}

// trimLogLocked cuts a writable .log's preallocated tail, so that the file
// is exactly its data, and fsyncs the cut: a sealed segment's size is
// trusted from the file by every open after the recovery point passed it.
// The files need not be open. The caller holds s.mu for writing.
func (s *Segment) trimLogLocked() error { return s.cutTailLocked(true) }

// cutTailLocked is trimLogLocked, with the fsync only when sync is set.
func (s *Segment) cutTailLocked(sync bool) error {
	f := s.log
	if f == nil {
		var err error
		if f, err = s.opts.FS.OpenFile(s.LogPath(), os.O_RDWR|syscall.O_NOFOLLOW, 0); err != nil {
			return fmt.Errorf("segment: trim: %w", err)
		}
		defer f.Close()
	}
	size := s.size.Load()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("segment: trim: %w", err)
	}
	if size < 0 || fi.Size() <= size {
		return nil
	}
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("segment: truncate %s to %d: %w", s.LogPath(), size, err)
	}
	s.cutPreallocLocked(size)
	if !sync {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("segment: fsync %s: %w", s.LogPath(), err)
	}
	return nil
}

// indexDue reports whether the batch at pos gets index entries: Kafka's
// LogSegment rule, the first batch once more than IndexIntervalBytes of
// log data lie between the last entry's batch (or the start) and it.
func (s *Segment) indexDue(pos int64) bool {
	return s.sinceIndex > s.opts.IndexIntervalBytes && pos > 0
}

// addBatchLocked records the batch h, written at pos, in the writer state
// and, when due, in the indexes, as Kafka's LogSegment does: an offset
// entry naming the batch's last offset (IndexOffset) and its position, and
// a time entry of the largest timestamp so far and the last offset of its
// batch, if that timestamp is larger than the last entry's (or than -1,
// Kafka's "unknown", without entries). Append and recovery share this
// rule. With lenient (recovery), a full index or a full disk only skips
// the entries: indexes are derived data, lookups then scan further. On an
// error the indexes are as they were; the caller restores the rest.
func (s *Segment) addBatchLocked(h Header, pos int64, lenient bool) error {
	due := s.indexDue(pos)
	skip := func(err error) bool {
		return lenient && (errors.Is(err, index.ErrFull) || vfs.IsNoSpace(err))
	}
	if due {
		if err := s.oidx.Append(h.IndexOffset(), pos); err != nil && !skip(err) {
			return err
		}
	}
	s.noteBatch(h)
	if due {
		if s.timeEntryDue() {
			if err := s.tidx.Append(s.maxTS.Load(), s.maxTSOff.Load()); err != nil && !skip(err) {
				_ = s.oidx.TruncateTo(h.BaseOffset)
				return err
			}
		}
		s.sinceIndex = 0
	}
	if pos == 0 {
		s.firstTS.Store(h.MaxTimestamp)
	}
	s.sinceIndex += h.Size()
	return nil
}

// Sync flushes the .log to stable storage. The indexes are derived data:
// Seal makes them durable, and an active segment's indexes are rebuilt by
// recovery after a crash, so an fsync per append costs one fsync.
func (s *Segment) Sync() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	n := s.size.Load()
	if err := s.log.Datasync(); err != nil {
		return fmt.Errorf("segment: fsync %s: %w", s.LogPath(), err)
	}
	s.syncGap.Store(max(0, n-s.syncedSize.Swap(n)))
	s.syncs.Add(1)
	return nil
}

// Seal makes an active segment read-only: its .log cut back to its data
// (the preallocated tail goes; the cut is fsynced), a final time-index
// entry for its largest timestamp, then both indexes trimmed to their used
// length and fsynced. When the fsync fails, the next Seal (or closing the files)
// tries it again: Seal returns nil only once the indexes are durable.
func (s *Segment) Seal() error { return s.seal(true) }

// SealUnsynced is Seal without any fsync of the .log: the cut of its
// preallocated tail, like its data, is durable only once Sync returns nil
// (fdatasync commits a size change). The indexes are made durable as by
// Seal. Until that Sync, a crash may leave the .log with a zero tail or
// without its last batches: the caller keeps the segment where recovery
// rescans it (at or after the recovery point). A roll seals this way and
// leaves the .log's fsync, the expensive part, to the background.
func (s *Segment) SealUnsynced() error { return s.seal(false) }

func (s *Segment) seal(syncLog bool) error {
	if err := s.acquire(); err != nil {
		return err
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	// Deleted or closed while no lock was held.
	switch {
	case s.deleted:
		return ErrDeleted
	case s.closed:
		return ErrClosed
	}
	if !s.writable && !s.indexSyncPending {
		return nil
	}
	if s.log == nil {
		if err := s.openFilesLocked(); err != nil {
			return err
		}
	}
	if s.writable {
		if err := s.cutTailLocked(syncLog); err != nil {
			return err
		}
		if err := s.appendFinalTimeEntryLocked(); err != nil {
			return err
		}
		if err := errors.Join(s.oidx.Seal(), s.tidx.Seal()); err != nil {
			return fmt.Errorf("segment: seal: %w", err)
		}
		s.writable = false
		s.indexSyncPending = true
	}
	return s.syncSealedIndexesLocked()
}

// syncSealedIndexesLocked fsyncs the indexes of a segment that Seal trimmed
// and has not yet made durable. The recovery point moves past a sealed
// segment, so a crash never rescans it: its indexes must be durable
// (entries and trimmed size). The caller holds s.mu for writing.
func (s *Segment) syncSealedIndexesLocked() error {
	if !s.indexSyncPending || s.log == nil {
		return nil
	}
	if err := errors.Join(s.oidx.Sync(), s.tidx.Sync()); err != nil {
		return fmt.Errorf("segment: seal: %w", err)
	}
	s.indexSyncPending = false
	return nil
}

// timeEntryDue reports whether the largest timestamp so far goes into the
// time index: Kafka's TimeIndex.maybeAppend, which appends a timestamp
// larger than the last entry's, or than -1 when there is none.
func (s *Segment) timeEntryDue() bool {
	if s.maxTSOff.Load() < 0 {
		return false
	}
	last, ok := s.tidx.Last()
	if !ok {
		return s.maxTS.Load() > -1
	}
	return s.maxTS.Load() > last.Timestamp && s.maxTSOff.Load() > last.Offset
}

// appendFinalTimeEntryLocked adds the largest timestamp of the segment to
// its time index when the segment becomes inactive, as Kafka does.
func (s *Segment) appendFinalTimeEntryLocked() error {
	off := s.maxTSOff.Load()
	if !s.timeEntryDue() {
		return nil
	}
	if err := s.tidx.Append(s.maxTS.Load(), off); err != nil && !errors.Is(err, index.ErrFull) && !vfs.IsNoSpace(err) {
		return fmt.Errorf("segment: %w", err)
	}
	return nil
}

// TruncatedEnd returns what NextOffset becomes after TruncateTo(offset):
// the base offset of the batch that holds offset, or NextOffset when
// offset is at or past it. It changes nothing.
func (s *Segment) TruncatedEnd(offset int64) (int64, error) {
	if next := s.NextOffset(); offset >= next {
		return next, nil
	}
	_, h, err := s.Find(max(offset, s.base))
	if err != nil {
		return 0, err
	}
	return h.BaseOffset, nil
}

// TruncateTo removes every batch with a record at or after offset, with
// their index entries. When offset falls inside a batch the whole batch
// goes: the new NextOffset is its base offset. It returns the new
// NextOffset.
func (s *Segment) TruncateTo(offset int64) (int64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		if err := s.openFilesLocked(); err != nil {
			return 0, err
		}
	}
	if offset >= s.next.Load() {
		return s.next.Load(), nil
	}
	if !s.writable {
		if err := s.reopenWritableLocked(); err != nil {
			return 0, err
		}
	}
	pos, h, err := s.findLocked(max(offset, s.base))
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	newNext := s.base
	if err == nil {
		newNext = h.BaseOffset
	}
	if err := s.cutLocked(pos, newNext); err != nil {
		return 0, err
	}
	return newNext, nil
}

// cutLocked truncates the log at pos, whose first batch starts at newNext,
// drops index entries at and after it, and recomputes the writer state.
func (s *Segment) cutLocked(pos, newNext int64) error {
	s.cuts.Add(1) // what the point cache knows of this segment is stale
	if err := s.log.Truncate(pos); err != nil {
		return fmt.Errorf("segment: truncate %s to %d: %w", s.LogPath(), pos, err)
	}
	s.cutPreallocLocked(pos)
	if err := errors.Join(s.oidx.TruncateTo(newNext), s.tidx.TruncateTo(newNext)); err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	s.size.Store(pos)
	s.next.Store(newNext)
	if pos == 0 {
		s.firstTS.Store(math.MinInt64)
	}
	return s.rescanWriterStateLocked()
}

// rescanWriterStateLocked recomputes the max timestamp and the bytes since
// the last index entry by scanning from the last index entry.
func (s *Segment) rescanWriterStateLocked() error {
	s.maxTS.Store(math.MinInt64)
	s.maxTSOff.Store(-1)
	if last, ok := s.tidx.Last(); ok {
		s.maxTS.Store(last.Timestamp)
		s.maxTSOff.Store(last.Offset)
	}
	s.sinceIndex = 0
	var sc Scanner
	s.scan(&sc, s.size.Load(), ScanOptions{Start: s.oidx.Lookup(math.MaxInt64).Position})
	for sc.Next() {
		s.noteBatch(sc.Header())
		s.sinceIndex += sc.Header().Size()
	}
	return sc.Err()
}
