package raftstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seglog/seglog/internal/vfs"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
)

// Names inside a LogStore's directory.
const (
	// LogDir is the storage.Log that holds the entries.
	LogDir = "log"
	// CutFile is the redo record of a DeleteRange from the back that cuts
	// inside a batch; it exists only while such a cut is in progress.
	CutFile = "tail-cut"
)

// MaxIndex is the largest raft index a LogStore accepts (2^62): far
// beyond any log, and small enough that index arithmetic on int64
// offsets cannot overflow.
const MaxIndex = 1 << 62

// batchOverhead over-estimates what the batch header and one record's
// framing add to the values, to split a StoreLogs call that would pass
// the log's batch limit.
const (
	batchOverhead  = segment.HeaderSize + 64
	recordOverhead = 32
)

// LogStore is a raft.LogStore and raft.MonotonicLogStore over one
// storage.Log. See the package doc for the mapping of indexes to offsets,
// the durability and the concurrency rules.
type LogStore struct {
	dir    string
	fs     vfs.FS
	mode   os.FileMode
	log    *storage.Log
	lim    segment.Limits
	codec  segment.Codec
	noSync bool

	// wmu serializes writers: StoreLogs, DeleteRange and Close. Helpers
	// that need it end in Locked.
	wmu sync.Mutex
	// failed is set when a cut from the back stopped half-way: writes
	// refuse until a reopen finishes the cut. Guarded by wmu.
	failed error
	// recs is StoreLogs' reused record slice. Guarded by wmu.
	recs []storage.Record

	// shapeMu guards base and closed. Writers hold it exclusively (with
	// wmu) to change the offset-to-index mapping (base) or to replace
	// entries at the back; readers (GetLog, FirstIndex, LastIndex) hold it
	// shared, so that they never map an index with a stale base or read a
	// batch while it is cut. Appends at the end and deletions from the
	// front do not take it: storage publishes both atomically.
	shapeMu sync.RWMutex
	// base maps offsets to indexes: index = offset + 1 + base. It is 0
	// unless the log was emptied and raft then stored an entry that does
	// not follow the old end (see the package doc).
	base   int64
	closed bool

	cache  *batchCache
	misses recentMisses
}

// OpenLogStore opens (creating if needed) the log store in dir: the
// storage.Log in dir/log, and the redo record of a cut from the back
// (dir/tail-cut) while one is in progress. It finishes a cut that a crash
// interrupted, then reads the first and last entries to learn (and check)
// the mapping of offsets to raft indexes. A second process opening the
// same directory gets storage.ErrLocked.
func OpenLogStore(dir string, opts Options) (*LogStore, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := vfs.MkdirAllDurable(opts.Log.FS, dir, opts.Log.DirMode); err != nil {
		return nil, fmt.Errorf("raftstore: open %s: %w", dir, err)
	}
	// StoreLogs syncs itself, once per call (Log.Sync: one fdatasync,
	// shared by concurrent callers), after the call's batches.
	lopts := opts.Log
	lopts.Sync = storage.SyncNever
	l, err := storage.Open(filepath.Join(dir, LogDir), lopts)
	if err != nil {
		return nil, fmt.Errorf("raftstore: open %s: %w", dir, err)
	}
	s := &LogStore{
		dir:    dir,
		fs:     opts.Log.FS,
		mode:   opts.Log.FileMode,
		log:    l,
		lim:    opts.Log.Limits,
		codec:  opts.Log.Compression,
		noSync: opts.NoSync,
		cache:  newBatchCache(opts.CacheBatches),
	}
	if err := s.resumeCut(); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("raftstore: open %s: %w", dir, err)
	}
	if err := s.loadBase(); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("raftstore: open %s: %w", dir, err)
	}
	return s, nil
}

// loadBase learns the offset-to-index mapping from the first entry and
// checks it against the last one.
func (s *LogStore) loadBase() error {
	start, end := s.log.StartOffset(), s.log.EndOffset()
	if start >= end {
		s.base = 0
		return nil
	}
	first, err := s.valueIndex(start)
	if err != nil {
		return err
	}
	s.base = int64(first) - 1 - start
	last, err := s.valueIndex(end - 1)
	if err != nil {
		return err
	}
	if want := uint64(end + s.base); last != want {
		return fmt.Errorf("%w: the entry at offset %d has index %d, the entry at offset %d has index %d, want %d", ErrCorrupt, start, first, end-1, last, want)
	}
	return nil
}

func (s *LogStore) valueIndex(off int64) (uint64, error) {
	b, err := s.readBatch(off)
	if err != nil {
		return 0, err
	}
	idx, err := entryIndex(b.values[off-b.base])
	if err != nil {
		return 0, fmt.Errorf("offset %d: %w", off, err)
	}
	return idx, nil
}

// FirstIndex returns the index of the first entry, 0 when the store is
// empty. Deleting a prefix frees whole segments only, so FirstIndex may
// stay below the max of the last DeleteRange (see the package doc).
func (s *LogStore) FirstIndex() (uint64, error) {
	s.shapeMu.RLock()
	defer s.shapeMu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	end := s.log.EndOffset()
	start := s.log.StartOffset()
	if start >= end {
		return 0, nil
	}
	return uint64(start + 1 + s.base), nil
}

// LastIndex returns the index of the last entry, 0 when the store is
// empty.
func (s *LogStore) LastIndex() (uint64, error) {
	s.shapeMu.RLock()
	defer s.shapeMu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	end := s.log.EndOffset()
	start := s.log.StartOffset()
	if start >= end {
		return 0, nil
	}
	return uint64(end + s.base), nil
}

// offsetOf maps an index to its offset; ok is false for an index that
// no offset can hold. The caller holds shapeMu or wmu.
func (s *LogStore) offsetOf(index uint64) (off int64, ok bool) {
	if index == 0 || index > MaxIndex {
		return 0, false
	}
	a := int64(index) - 1
	off = a - s.base
	if (s.base < 0 && off < a) || (s.base > 0 && off > a) || off < 0 {
		return 0, false
	}
	return off, true
}

// GetLog reads the entry at index into out. An index outside [FirstIndex,
// LastIndex] returns raft.ErrLogNotFound itself (raft compares with ==).
// Entries of the last few batches stored or read in index order come from
// a cache of decoded batches; any other read fetches the entry's batch and
// verifies its checksum (into a pooled buffer, unless the read follows
// the one before it, when the batch is kept in the cache). out never
// aliases the store's memory. Safe to call from any goroutine, beside
// writers.
func (s *LogStore) GetLog(index uint64, out *raft.Log) error {
	s.shapeMu.RLock()
	defer s.shapeMu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	off, ok := s.offsetOf(index)
	if !ok || off >= s.log.EndOffset() || off < s.log.StartOffset() {
		return raft.ErrLogNotFound
	}
	v := s.cache.get(off)
	if v == nil {
		if !s.misses.sequential(off) {
			// A read with no neighbour: decode it from a pooled buffer,
			// without copying or caching its batch.
			err := s.readEntry(off, out)
			if errors.Is(err, storage.ErrOffsetOutOfRange) {
				return raft.ErrLogNotFound // deleted from the front meanwhile
			}
			if err != nil {
				return fmt.Errorf("raftstore: get log %d (offset %d): %w", index, off, err)
			}
			return checkIndex(index, off, out)
		}
		b, err := s.readBatch(off)
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			return raft.ErrLogNotFound
		}
		if err != nil {
			return fmt.Errorf("raftstore: get log %d (offset %d): %w", index, off, err)
		}
		s.cache.put(b)
		v = b.values[off-b.base]
	}
	if err := decodeEntry(v, out); err != nil {
		return fmt.Errorf("raftstore: get log %d (offset %d): %w", index, off, err)
	}
	return checkIndex(index, off, out)
}

func checkIndex(index uint64, off int64, out *raft.Log) error {
	if out.Index != index {
		return fmt.Errorf("raftstore: get log %d (offset %d): %w: the entry there has index %d", index, off, ErrCorrupt, out.Index)
	}
	return nil
}

// batchReader is a reusable buffer and record iterator for reads that
// decode one entry of a batch.
type batchReader struct {
	buf []byte
	it  segment.RecordIter
}

var batchReaders = sync.Pool{New: func() any { return new(batchReader) }}

// maxPooledRead is the largest buffer returned to the pool.
const maxPooledRead = 1 << 20

// readEntry reads and verifies the batch holding offset off into a pooled
// buffer and decodes the entry at off into out (a copy).
func (s *LogStore) readEntry(off int64, out *raft.Log) error {
	r := batchReaders.Get().(*batchReader)
	defer func() {
		if cap(r.buf) <= maxPooledRead {
			batchReaders.Put(r)
		}
	}()
	data, err := s.log.ReadInto(r.buf, off, 1)
	if err != nil {
		return err
	}
	r.buf = data[:0]
	if len(data) == 0 {
		return fmt.Errorf("%w: offset %d", storage.ErrOffsetOutOfRange, off)
	}
	h, err := segment.ParseHeader(data, s.lim)
	if err != nil {
		return err
	}
	if h.Size() > len(data) {
		return fmt.Errorf("%w: batch of %d bytes, read %d", ErrCorrupt, h.Size(), len(data))
	}
	if err := r.it.Reset(data[:h.Size()], s.lim); err != nil {
		return err
	}
	for r.it.Next() {
		if rec := r.it.Record(); rec.Offset == off {
			return decodeEntry(rec.Value, out)
		}
	}
	if err := r.it.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: offset %d not in the batch read, [%d, %d)", ErrCorrupt, off, h.BaseOffset, h.NextOffset())
}

// readBatch reads and verifies the batch that holds offset off and splits
// it into its records' values, which alias memory of its own.
func (s *LogStore) readBatch(off int64) (*cachedBatch, error) {
	data, err := s.log.ReadInto(nil, off, 1)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: offset %d", storage.ErrOffsetOutOfRange, off)
	}
	h, err := segment.ParseHeader(data, s.lim)
	if err != nil {
		return nil, err
	}
	if h.Size() > len(data) {
		return nil, fmt.Errorf("%w: batch of %d bytes, read %d", ErrCorrupt, h.Size(), len(data))
	}
	// A fresh iterator: the values alias data or the iterator's own
	// decompression buffer, which nothing reuses.
	var it segment.RecordIter
	if err := it.Reset(data[:h.Size()], s.lim); err != nil {
		return nil, err
	}
	values := make([][]byte, 0, h.RecordCount)
	for it.Next() {
		r := it.Record()
		if r.Offset != h.BaseOffset+int64(len(values)) {
			return nil, fmt.Errorf("%w: record offset %d in the batch at %d", ErrCorrupt, r.Offset, h.BaseOffset)
		}
		values = append(values, r.Value)
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	b := &cachedBatch{base: h.BaseOffset, values: values}
	if off < b.base || off-b.base >= int64(len(values)) {
		return nil, fmt.Errorf("%w: offset %d not in the batch read, [%d, %d)", ErrCorrupt, off, b.base, b.base+int64(len(values)))
	}
	return b, nil
}

// StoreLog stores one entry (StoreLogs of one).
func (s *LogStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

// StoreLogs appends the entries as one batch and returns once it is
// durable: one Log.Sync (an fdatasync, shared with concurrent callers)
// after the append, unless Options.NoSync. The first entry must follow
// LastIndex, or the store must be empty (then any first index is
// accepted, which is what raft needs after removing all entries when it
// installs a snapshot); the entries must follow each other. Otherwise it
// returns an error wrapping ErrNonContiguous and stores nothing, as
// raft-wal does.
// A call whose entries would pass the log's batch limit
// (Options.Log.Limits.MaxBatchBytes, 16 MiB by default) is split into
// several batches, synced together; a crash may then keep a prefix of the
// call, which raft tolerates since the call did not return.
func (s *LogStore) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writableLocked(); err != nil {
		return err
	}
	for i, l := range logs {
		if l == nil {
			return fmt.Errorf("%w: entry %d of the call is nil", ErrInvalidEntry, i)
		}
	}
	first := logs[0].Index
	for i, l := range logs {
		if l.Index == 0 || l.Index > MaxIndex {
			return fmt.Errorf("%w: index %d", ErrInvalidEntry, l.Index)
		}
		if l.Index != first+uint64(i) {
			return fmt.Errorf("%w: entry %d of the call has index %d after %d", ErrNonContiguous, i, l.Index, logs[i-1].Index)
		}
		if !l.AppendedAt.IsZero() {
			if sec := l.AppendedAt.Unix(); sec < minUnixSeconds || sec > maxUnixSeconds {
				return fmt.Errorf("%w: index %d: AppendedAt %v", ErrInvalidEntry, l.Index, l.AppendedAt)
			}
		}
	}
	if first+uint64(len(logs))-1 > MaxIndex {
		return fmt.Errorf("%w: indexes up to %d", ErrInvalidEntry, first+uint64(len(logs))-1)
	}
	start, end := s.log.StartOffset(), s.log.EndOffset()
	if start < end {
		if last := uint64(end + s.base); first != last+1 {
			return fmt.Errorf("%w: StoreLogs from index %d, but the last index is %d", ErrNonContiguous, first, last)
		}
	} else if base := int64(first) - 1 - end; base != s.base {
		// An empty log takes any first index: the mapping moves so that
		// the next offset holds it.
		s.shapeMu.Lock()
		s.base = base
		s.shapeMu.Unlock()
	}

	// Encode every entry into one buffer, which the cache then keeps.
	size := 0
	for _, l := range logs {
		size += entrySize(l)
	}
	buf := make([]byte, 0, size)
	ends := make([]int, len(logs))
	for i, l := range logs {
		buf = appendEntry(buf, l)
		ends[i] = len(buf)
	}
	values := make([][]byte, len(logs))
	prev := 0
	for i, e := range ends {
		values[i] = buf[prev:e:e]
		prev = e
	}

	// One batch, unless that would pass the batch limit.
	limit := min(s.lim.MaxBatchBytes, s.lim.MaxRecordsBytes)
	for i := 0; i < len(values); {
		j, n := i, batchOverhead
		for j < len(values) && (j == i || n+len(values[j])+recordOverhead <= limit) {
			n += len(values[j]) + recordOverhead
			j++
		}
		s.recs = s.recs[:0]
		for _, v := range values[i:j] {
			s.recs = append(s.recs, storage.Record{Value: v})
		}
		want := s.log.EndOffset()
		res, err := s.log.Append(s.recs...)
		clear(s.recs)
		if err != nil {
			return fmt.Errorf("raftstore: store logs %d to %d: %w", logs[i].Index, logs[j-1].Index, err)
		}
		if res.FirstOffset != want || res.LastOffset != want+int64(j-i)-1 {
			return fmt.Errorf("raftstore: store logs %d to %d: appended at offsets [%d, %d], want [%d, %d]", logs[i].Index, logs[j-1].Index, res.FirstOffset, res.LastOffset, want, want+int64(j-i)-1)
		}
		s.cache.put(&cachedBatch{base: res.FirstOffset, values: values[i:j:j]})
		i = j
	}
	if s.noSync {
		return nil
	}
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("raftstore: store logs %d to %d: %w", first, logs[len(logs)-1].Index, err)
	}
	return nil
}

func (s *LogStore) writableLocked() error {
	if s.closed {
		return ErrClosed
	}
	if s.failed != nil {
		return fmt.Errorf("%w: %w", ErrFailed, s.failed)
	}
	return nil
}

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

// Close closes the log (cleanly: the next open reads no data). Later
// calls of any method return ErrClosed; Close itself may be called again.
func (s *LogStore) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.shapeMu.Lock()
	defer s.shapeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.cache.clear()
	if err := s.log.Close(); err != nil {
		return fmt.Errorf("raftstore: close %s: %w", s.dir, err)
	}
	return nil
}

// IsMonotonic reports true: the store keeps indexes dense, so raft removes
// every entry after restoring a snapshot instead of leaving a gap
// (raft.MonotonicLogStore).
func (s *LogStore) IsMonotonic() bool { return true }

var (
	_ raft.LogStore          = (*LogStore)(nil)
	_ raft.MonotonicLogStore = (*LogStore)(nil)
)
