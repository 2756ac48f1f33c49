package segment

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edsrzf/mmap-go"
	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/vfs"
)

// File name suffixes of a segment's files.
const (
	LogSuffix       = ".log"
	IndexSuffix     = ".index"
	TimeIndexSuffix = ".timeindex"
)

// DefaultIndexIntervalBytes is the log data between two index entries.
const DefaultIndexIntervalBytes = 4096

// MaxSegmentBytes is the largest a segment can be: index entries hold
// 32-bit positions.
const MaxSegmentBytes = math.MaxUint32

var (
	// ErrClosed is returned by a segment that was closed.
	ErrClosed = errors.New("segment: closed")
	// ErrDeleted is returned by a segment whose files were deleted.
	ErrDeleted = errors.New("segment: deleted")
	// ErrSealed is returned by Append on a sealed segment.
	ErrSealed = errors.New("segment: sealed")
	// ErrFull is returned by Append when the batch does not fit: the
	// segment would pass MaxSegmentBytes or its index is full. Roll.
	ErrFull = errors.New("segment: full")
)

// CorruptError reports invalid bytes at a position of a segment's .log.
type CorruptError struct {
	File string
	Pos  int64
	Err  error
}

// Error says which file, where, and why.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s at byte %d: %v", e.File, e.Pos, e.Err)
}

// Unwrap returns the decoding error, which wraps ErrCorrupt.
func (e *CorruptError) Unwrap() error { return e.Err }

// Options configure a segment. The zero value is usable.
type Options struct {
	FS                 vfs.FS
	IndexIntervalBytes int         // default DefaultIndexIntervalBytes
	MaxIndexBytes      int         // default index.DefaultMaxBytes
	Limits             Limits      // default DefaultLimits
	FileMode           os.FileMode // default vfs.DefaultFileMode
	Budget             *Budget     // shared cap on open files; nil: none
	// ReadOnly never changes a file: a sealed segment whose index fails
	// its sanity check is read without rebuilding it (batches are still
	// checksummed when read). For tools and read-only logs.
	ReadOnly bool
	// MaxMapBytes is the address space an active segment's read-only
	// map of its .log reserves (default DefaultMaxMapBytes); reads past
	// it use pread. The log sets it to its roll size plus one batch.
	MaxMapBytes int64
	// Roll says when the segment is full before its hard limits: Append
	// then returns ErrFull, and the log rolls. Zero: never.
	Roll RollPolicy
}

// RollPolicy is when a segment that holds data is full: the batch to
// append would take it past Bytes, or its first batch's timestamp is Age
// or more before Now (as Kafka's segment.bytes and segment.ms). The age
// counts from a timestamp on disk, so it survives reopening and
// truncation.
type RollPolicy struct {
	Bytes int64         // 0: no size limit but MaxSegmentBytes
	Age   time.Duration // 0: none
	Now   func() time.Time
}

// DefaultMaxMapBytes is the default MaxMapBytes.
const DefaultMaxMapBytes = 1<<30 + DefaultMaxBatchBytes

func (o Options) withDefaults() Options {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = index.DefaultMaxBytes
	}
	o.Limits = o.Limits.withDefaults()
	if o.FileMode == 0 {
		o.FileMode = vfs.DefaultFileMode
	}
	if o.MaxMapBytes <= 0 {
		o.MaxMapBytes = DefaultMaxMapBytes
	}
	o.MaxMapBytes = min(o.MaxMapBytes, MaxSegmentBytes)
	return o
}

// FileName returns the file name of a segment file: the base offset in 20
// digits and the suffix.
func FileName(base int64, suffix string) string {
	return string(appendFileName(make([]byte, 0, nameDigits+len(suffix)), base, suffix))
}

// nameDigits is the number of decimal digits that name a segment file.
const nameDigits = 20

// appendFileName appends FileName(base, suffix) to b. An open of 1,000
// segments builds a name per segment; fmt took a third of its time.
func appendFileName(b []byte, base int64, suffix string) []byte {
	if base < 0 {
		return fmt.Appendf(b, "%020d%s", base, suffix) // never a real segment; kept distinct
	}
	var d [nameDigits]byte
	for i := nameDigits - 1; i >= 0; i-- {
		d[i] = byte('0' + base%10)
		base /= 10
	}
	return append(append(b, d[:]...), suffix...)
}

// ParseFileName parses a segment file name. ok is false for any name that
// is not exactly 20 decimal digits followed by the suffix.
func ParseFileName(name, suffix string) (base int64, ok bool) {
	if len(name) != nameDigits+len(suffix) || name[nameDigits:] != suffix {
		return 0, false
	}
	return parseDigits(name[:nameDigits])
}

// SplitFileName splits a name that starts with the 20 decimal digits of a
// segment file name into its base offset and the rest (the suffix, which
// may be anything); ok is false for any other name.
func SplitFileName(name string) (base int64, suffix string, ok bool) {
	if len(name) < nameDigits {
		return 0, "", false
	}
	base, ok = parseDigits(name[:nameDigits])
	return base, name[nameDigits:], ok
}

// parseDigits parses 20 decimal digits that fit an int64.
func parseDigits(digits string) (int64, bool) {
	var v uint64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxInt64-uint64(c-'0'))/10 {
			return 0, false // past MaxInt64
		}
		v = v*10 + uint64(c-'0')
	}
	return int64(v), true
}

// Segment is one .log file and its two indexes.
//
// Concurrency: one writer (Append, Seal, TruncateTo, Recover, Delete are
// called by one goroutine at a time, the log's writer) and any number of
// readers (Find, FindTime, ReadAt, ReadBatches, Size, NextOffset). Readers
// never wait for Append. Files are opened on first use and may be closed
// by the Budget while idle.
type Segment struct {
	dir     string
	base    int64
	opts    Options
	logPath atomic.Pointer[string] // built on first use (LogPath): an open of 1,000 sealed segments builds none

	// mu guards the open files and the lifecycle flags: readers and the
	// appender hold it for reading while they use the files; opening,
	// closing, sealing, truncating and deleting hold it for writing.
	mu       sync.RWMutex
	log      vfs.File
	data     mmap.MMap // the .log mapped read-only; nil: read with pread
	oidx     *index.OffsetIndex
	tidx     *index.TimeIndex
	writable bool // active: indexes are mapped read-write
	closed   bool
	deleted  bool
	removed  bool // every file of a deleted segment is gone
	follow   bool // a follower: read-only view of a segment another process appends to (OpenFollow)
	// indexSyncPending: the indexes were sealed (trimmed) but their fsync
	// has not succeeded yet; Seal and closing the files retry it.
	indexSyncPending bool

	used atomic.Bool   // set on use; cleared by the Budget's clock sweep
	cuts atomic.Uint64 // truncations: part of the point cache's keys

	refreshMu sync.Mutex // serializes Refresh of a tail segment; guards lastPos, lastSum
	lastPos   int64      // tail: position of the last batch read (-1: none)
	lastSum   uint64     // tail: its checksum

	// Published state, read without locks.
	size     atomic.Int64 // bytes of whole batches; -1 until known
	next     atomic.Int64 // offset after the last record
	maxTS    atomic.Int64 // largest record timestamp; math.MinInt64 when none
	maxTSOff atomic.Int64 // offset of the batch holding maxTS
	firstTS  atomic.Int64 // max timestamp of the first batch; math.MinInt64 when unknown or empty

	// Writer state, touched only by the writer.
	sinceIndex int // bytes appended since the last index entry
	// allocated is where the writable .log's preallocated part ends
	// (preallocate, fallocate): past size, the file holds zeros.
	allocated int64
	// zeroed is where the zeros preallocate wrote end (at most allocated;
	// 0 when unknown): between it and allocated, blocks fallocate reserved
	// or a zero tail recovery found.
	zeroed          int64
	noPrealloc      bool  // preallocating failed or does not pay: append past the end instead
	noFallocate     bool  // fallocate failed or does not pay
	preallocChecked bool  // the file system was asked whether preallocating pays
	preallocSyncs   int64 // syncs when the last chunk was preallocated

	// Set by Sync, read by the writer (preallocDue).
	syncs      atomic.Int64 // Syncs that succeeded
	syncedSize atomic.Int64 // size the last Sync made durable
	syncGap    atomic.Int64 // bytes between the last two Syncs (from 0 for the first)
}

func (s *Segment) path(suffix string) string {
	dir := filepath.Clean(s.dir) // as filepath.Join; no allocation when clean
	if dir == "." {
		return FileName(s.base, suffix)
	}
	b := make([]byte, 0, len(dir)+1+nameDigits+len(suffix))
	if dir != string(filepath.Separator) {
		b = append(b, dir...)
	}
	return string(appendFileName(append(b, filepath.Separator), s.base, suffix))
}

// Base returns the segment's base offset.
func (s *Segment) Base() int64 { return s.base }

// LogPath returns the path of the segment's .log file.
func (s *Segment) LogPath() string {
	if p := s.logPath.Load(); p != nil {
		return *p
	}
	p := s.path(LogSuffix)
	s.logPath.Store(&p) // racing callers build the same string
	return p
}

// NextOffset returns the offset after the segment's last record.
func (s *Segment) NextOffset() int64 { return s.next.Load() }

func newSegment(dir string, base int64, opts Options) *Segment {
	s := &Segment{dir: dir, base: base, opts: opts.withDefaults()}
	s.size.Store(-1)
	s.next.Store(base)
	s.maxTS.Store(math.MinInt64)
	s.maxTSOff.Store(-1)
	s.firstTS.Store(math.MinInt64)
	return s
}

// Create creates a new, empty, active segment. It fails if its .log exists.
func Create(dir string, base int64, opts Options) (*Segment, error) {
	s := newSegment(dir, base, opts)
	f, err := s.opts.FS.OpenFile(s.LogPath(), os.O_RDWR|os.O_CREATE|os.O_EXCL, s.opts.FileMode)
	if err != nil {
		return nil, fmt.Errorf("segment: create: %w", err)
	}
	_ = f.Close()
	s.writable = true
	s.size.Store(0)
	return s, nil
}

// Open returns a sealed segment without touching the disk: its files are
// opened on first use. next is the offset after its last record, which the
// caller knows from the next segment's base offset.
func Open(dir string, base, next int64, opts Options) *Segment {
	s := newSegment(dir, base, opts)
	s.next.Store(next)
	return s
}

// FirstTimestamp returns the max timestamp of the segment's first batch,
// which is what its age counts from (as Kafka's segment.ms does); ok is
// false for an empty segment. It is known for an active segment.
func (s *Segment) FirstTimestamp() (ts int64, ok bool) {
	ts = s.firstTS.Load()
	return ts, ts != math.MinInt64
}

// Known returns what the segment knows of itself without any I/O: its
// size (-1 if unknown) and its max timestamp and the offset of the batch
// holding it (-1 if unknown).
func (s *Segment) Known() (size, maxTS, maxTSOffset int64) {
	return s.size.Load(), s.maxTS.Load(), s.maxTSOff.Load()
}

// SetKnown records what a manifest says of a sealed segment that has not
// been opened, so that Size and MaxTimestamp need no I/O. Negative values
// mean unknown and are ignored.
func (s *Segment) SetKnown(size, maxTS, maxTSOffset int64) {
	if size >= 0 {
		s.size.CompareAndSwap(-1, size)
	}
	if maxTSOffset >= 0 && s.maxTSOff.Load() < 0 {
		s.maxTS.Store(maxTS)
		s.maxTSOff.Store(maxTSOffset)
	}
}

// Size returns the segment's size in bytes.
func (s *Segment) Size() (int64, error) {
	if n := s.size.Load(); n >= 0 {
		return n, nil
	}
	fi, err := s.opts.FS.Lstat(s.LogPath())
	if err != nil {
		return 0, fmt.Errorf("segment: %w", err)
	}
	s.size.CompareAndSwap(-1, fi.Size())
	return s.size.Load(), nil
}

// MaxTimestamp returns the largest record timestamp in the segment and the
// base offset of the batch that holds it; ok is false for an empty segment.
func (s *Segment) MaxTimestamp() (ts, offset int64, ok bool, err error) {
	if s.maxTSOff.Load() < 0 {
		// A sealed segment learns its max timestamp from its time index
		// when its files open; opening them is a no-op when they are.
		if err := s.acquire(); err != nil {
			return 0, 0, false, err
		}
		if s.maxTSOff.Load() < 0 && !s.writable && !s.follow {
			// No time-index entry (the index leaves out timestamp 0 at
			// the base offset, all zero bytes; or a full disk skipped
			// them): the batch headers say.
			var sc Scanner
			s.scan(&sc, s.size.Load(), ScanOptions{File: s.LogPath(), Window: recoverWindow})
			for sc.Next() {
				s.noteBatch(sc.Header())
			}
		}
		s.mu.RUnlock()
	}
	off := s.maxTSOff.Load()
	return s.maxTS.Load(), off, off >= 0, nil
}

// Close closes the files. An active segment's .log is cut back to its
// data (its preallocated tail goes, and the cut is fsynced) and its
// indexes are trimmed to their used length and fsynced, so that an open
// after a clean close can trust them (the .log's data is the caller's to
// fsync first). The segment cannot be used afterwards.
func (s *Segment) Close() error { return s.close(true) }

// CloseUnsynced closes the segment as Close does, but makes nothing
// durable and leaves an active .log's preallocated tail in place (zeros,
// which recovery reads as the end of the data): for a log closed without
// a clean shutdown, whose next open recovers anyway (storage's
// CloseUnflushed).
func (s *Segment) CloseUnsynced() error { return s.close(false) }

func (s *Segment) close(sync bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if sync && s.writable && !s.deleted {
		// Exact size for a clean reopen: no preallocated tail.
		err = s.trimLogLocked()
		if s.log != nil {
			// The largest timestamp goes into the time index, as
			// Kafka's LogSegment does when it closes.
			err = errors.Join(err, s.appendFinalTimeEntryLocked())
		}
	}
	err = errors.Join(err, s.closeFilesLocked())
	if s.opts.Budget != nil {
		s.opts.Budget.release(s)
	}
	if sync && err == nil && s.writable && !s.deleted {
		// Trimmed by closing (now or by an earlier eviction of the
		// files): make the indexes' entries and sizes durable.
		err = errors.Join(s.syncFile(s.path(IndexSuffix)), s.syncFile(s.path(TimeIndexSuffix)))
	}
	return err
}

// Delete waits for readers to finish, closes the files and removes them.
// Later calls on the segment return ErrDeleted.
func (s *Segment) Delete() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.deleted {
		s.deleted = true
		_ = s.closeFilesLocked()
		if s.opts.Budget != nil {
			s.opts.Budget.release(s)
		}
	}
	if s.removed {
		return nil
	}
	// A file that cannot be removed now is retried by the next Delete.
	var errs []error
	for _, suffix := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
		if err := s.opts.FS.Remove(s.path(suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("segment: delete: %w", err)
	}
	s.removed = true
	return nil
}
