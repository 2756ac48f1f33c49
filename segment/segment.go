package segment

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/edsrzf/mmap-go"
	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/internal/vfs"
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
	return fmt.Sprintf("%020d%s", base, suffix)
}

// ParseFileName parses a segment file name. ok is false for any name that
// is not exactly 20 decimal digits followed by the suffix.
func ParseFileName(name, suffix string) (base int64, ok bool) {
	if len(name) != 20+len(suffix) || name[20:] != suffix {
		return 0, false
	}
	for _, c := range name[:20] {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
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
	logPath string

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
	tail     bool // read-only view of a segment another process appends to
	// indexSyncPending: the indexes were sealed (trimmed) but their fsync
	// has not succeeded yet; Seal and closing the files retry it.
	indexSyncPending bool

	used atomic.Bool // set on use; cleared by the Budget's clock sweep

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
}

func (s *Segment) path(suffix string) string {
	return filepath.Join(s.dir, FileName(s.base, suffix))
}

// Base returns the segment's base offset.
func (s *Segment) Base() int64 { return s.base }

// LogPath returns the path of the segment's .log file.
func (s *Segment) LogPath() string { return s.logPath }

// NextOffset returns the offset after the segment's last record.
func (s *Segment) NextOffset() int64 { return s.next.Load() }

func newSegment(dir string, base int64, opts Options) *Segment {
	s := &Segment{dir: dir, base: base, opts: opts.withDefaults()}
	s.logPath = s.path(LogSuffix) // on every error path and read: built once
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

// OpenActive opens the last segment of a log for appending after a clean
// shutdown: it finds the end by scanning batch headers forward from the
// last index entry, which reads at most one index interval. A segment whose
// tail does not scan cleanly returns an error wrapping ErrCorrupt; the
// caller then calls Recover.
func OpenActive(dir string, base int64, opts Options) (*Segment, error) {
	s := newSegment(dir, base, opts)
	s.writable = true
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	fi, err := s.log.Stat()
	if err != nil {
		return s, fmt.Errorf("segment: %w", err)
	}
	// A damaged index is rebuilt by Recover: report it as corruption.
	if err := s.oidx.SanityCheck(fi.Size()); err != nil {
		return s, &CorruptError{File: s.path(IndexSuffix), Pos: 0, Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}
	}
	// The tail, from the last index entry on, is verified batch by batch
	// (checksums included): a clean marker says the files were closed, not
	// that the disk kept every byte of the last writes.
	start := s.oidx.Lookup(math.MaxInt64)
	pos, next := start.Position, start.Offset
	var buf []byte
	for pos < fi.Size() {
		h, err := s.readHeader(pos, fi.Size())
		if err == nil && h.BaseOffset != next {
			err = &CorruptError{File: s.LogPath(), Pos: pos, Err: fmt.Errorf("%w: batch base offset %d, expected %d", ErrCorrupt, h.BaseOffset, next)}
		}
		if err == nil {
			buf, err = s.verifyAtLocked(buf, pos, h)
		}
		if err != nil {
			return s, err
		}
		s.noteBatch(h)
		s.sinceIndex += h.Size()
		pos += int64(h.Size())
		next = h.NextOffset()
	}
	if err := s.tidx.SanityCheck(base, max(next, base+1)); err != nil {
		return s, &CorruptError{File: s.path(TimeIndexSuffix), Pos: 0, Err: fmt.Errorf("%w: %w", ErrCorrupt, err)}
	}
	s.size.Store(pos)
	s.next.Store(next)
	if last, ok := s.tidx.Last(); ok && last.Timestamp > s.maxTS.Load() {
		s.maxTS.Store(last.Timestamp)
		s.maxTSOff.Store(last.Offset)
	}
	if err := s.loadFirstTimestampLocked(); err != nil {
		return s, err
	}
	return s, nil
}

// verifyAtLocked reads the batch with header h at pos into buf (grown as
// needed) and verifies it whole, checksum included.
func (s *Segment) verifyAtLocked(buf []byte, pos int64, h Header) ([]byte, error) {
	if cap(buf) < h.Size() {
		buf = make([]byte, h.Size())
	}
	buf = buf[:h.Size()]
	if err := s.pread(buf, pos); err != nil {
		return buf, fmt.Errorf("segment: read %s at %d: %w", s.LogPath(), pos, err)
	}
	if _, err := Verify(buf, s.opts.Limits); err != nil {
		return buf, &CorruptError{File: s.LogPath(), Pos: pos, Err: err}
	}
	return buf, nil
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

// FirstTimestamp returns the max timestamp of the segment's first batch,
// which is what its age counts from (as Kafka's segment.ms does); ok is
// false for an empty segment. It is known for an active segment.
func (s *Segment) FirstTimestamp() (ts int64, ok bool) {
	ts = s.firstTS.Load()
	return ts, ts != math.MinInt64
}

// OpenTail opens, read-only, the active segment of a log that another
// process is appending to: it changes nothing on disk. Its end is the last
// complete, valid batch found by scanning from the last index entry; a
// batch being written is simply not there yet. Refresh looks again.
func OpenTail(dir string, base int64, opts Options) (*Segment, error) {
	s := newSegment(dir, base, opts)
	s.tail = true
	s.lastPos = -1
	s.size.Store(0)
	if _, err := s.Refresh(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Shrunk reports whether the writer truncated a tail segment (OpenTail)
// under this view: the file is shorter than what the view has read, or the
// last batch it read is no longer there (truncated, then written again).
func (s *Segment) Shrunk() (bool, error) {
	if err := s.acquire(); err != nil {
		return false, err
	}
	defer s.mu.RUnlock()
	fi, err := s.log.Stat()
	if err != nil {
		return false, fmt.Errorf("segment: %w", err)
	}
	if fi.Size() < s.size.Load() {
		return true, nil
	}
	s.refreshMu.Lock()
	pos, sum := s.lastPos, s.lastSum
	s.refreshMu.Unlock()
	if pos < 0 {
		return false, nil
	}
	var hb [HeaderSize]byte
	if _, err := s.log.ReadAt(hb[:], pos); err != nil {
		return true, nil
	}
	h, err := ParseHeader(hb[:], s.opts.Limits)
	return err != nil || h.Checksum != sum, nil
}

// Refresh extends a tail segment (OpenTail) over the complete batches the
// writer has appended since, and reports whether it grew.
func (s *Segment) Refresh() (bool, error) {
	if err := s.acquire(); err != nil {
		return false, err
	}
	defer s.mu.RUnlock()
	fi, err := s.log.Stat()
	if err != nil {
		return false, fmt.Errorf("segment: %w", err)
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	pos, next := s.size.Load(), s.next.Load()
	if pos == 0 {
		start := s.oidx.Lookup(math.MaxInt64)
		if start.Position < fi.Size() {
			pos, next = start.Position, start.Offset
		}
	}
	grew := false
	for pos < fi.Size() {
		h, err := s.readHeader(pos, fi.Size())
		if err != nil || h.BaseOffset != next {
			break // a batch being written, or not ours to judge: stop here
		}
		buf := make([]byte, h.Size())
		if _, err := s.log.ReadAt(buf, pos); err != nil {
			break
		}
		if _, err := Verify(buf, s.opts.Limits); err != nil {
			break
		}
		s.noteBatch(h)
		s.lastPos, s.lastSum = pos, h.Checksum
		pos += int64(h.Size())
		next = h.NextOffset()
		grew = true
	}
	if grew {
		s.size.Store(pos)
		s.next.Store(next)
	}
	return grew, nil
}

// acquire makes sure the files are open and returns with s.mu held for
// reading; the caller must RUnlock it.
func (s *Segment) acquire() error {
	if !s.used.Load() {
		s.used.Store(true)
	}
	for {
		s.mu.RLock()
		switch {
		case s.deleted:
			s.mu.RUnlock()
			return ErrDeleted
		case s.closed:
			s.mu.RUnlock()
			return ErrClosed
		case s.log != nil:
			return nil
		}
		s.mu.RUnlock()
		s.mu.Lock()
		err := s.openFilesLocked()
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

func (s *Segment) openFilesLocked() error {
	if s.log != nil || s.deleted || s.closed {
		return nil
	}
	if s.opts.Budget != nil {
		s.opts.Budget.admit(s)
	}
	err := s.openFiles()
	if err != nil && s.opts.Budget != nil {
		s.opts.Budget.release(s)
	}
	return err
}

func (s *Segment) openFiles() error {
	flag := os.O_RDONLY
	if s.writable {
		flag = os.O_RDWR
	}
	// O_NOFOLLOW: a segment file replaced by a symbolic link is refused,
	// so nothing outside the directory is ever read or written.
	f, err := s.opts.FS.OpenFile(s.LogPath(), flag|syscall.O_NOFOLLOW, s.opts.FileMode)
	if err != nil {
		return fmt.Errorf("segment: open: %w", err)
	}
	oidx, tidx, missing, err := s.openIndexes()
	if err != nil {
		_ = f.Close()
		return err
	}
	if s.size.Load() < 0 {
		fi, err := f.Stat()
		if err != nil {
			_, _, _ = f.Close(), oidx.Close(), tidx.Close()
			return fmt.Errorf("segment: %w", err)
		}
		s.size.Store(fi.Size())
	}
	s.log, s.oidx, s.tidx = f, oidx, tidx
	s.mapLog()
	if !s.writable && !s.tail {
		// A sealed segment's indexes are derived data written before it
		// was sealed; check them once as they are mapped, and rebuild
		// them from the log if they are missing or not sane (never when
		// read-only: a missing index then reads as empty, and lookups
		// scan from the start).
		if !s.opts.ReadOnly && (missing || s.oidx.SanityCheck(s.size.Load()) != nil || s.tidx.SanityCheck(s.base, s.next.Load()) != nil) {
			if err := s.rebuildSealedIndexesLocked(); err != nil {
				return err
			}
		}
		if last, ok := s.tidx.Last(); ok {
			s.maxTS.Store(last.Timestamp)
			s.maxTSOff.Store(last.Offset)
		}
	}
	return nil
}

// openIndexes opens both index files. A sealed segment's index file that
// is gone (deleted by hand, or never made durable before a crash) opens as
// an empty index, and missing says so: the caller rebuilds it.
func (s *Segment) openIndexes() (oidx *index.OffsetIndex, tidx *index.TimeIndex, missing bool, err error) {
	iopts := index.Options{FS: s.opts.FS, MaxBytes: s.opts.MaxIndexBytes, Writable: s.writable, Live: s.tail, Perm: s.opts.FileMode}
	for {
		if oidx, err = index.OpenOffset(s.path(IndexSuffix), s.base, iopts); err == nil {
			if tidx, err = index.OpenTime(s.path(TimeIndexSuffix), s.base, iopts); err == nil {
				return oidx, tidx, missing, nil
			}
			_ = oidx.Close()
		}
		if missing || s.writable || s.tail || !errors.Is(err, os.ErrNotExist) {
			return nil, nil, false, fmt.Errorf("segment: %w", err)
		}
		// Live opening reads a missing file as empty.
		missing, iopts.Live = true, true
	}
}

// closeFilesLocked closes the files; the caller holds s.mu for writing and
// unregisters s from the budget when it is not the budget evicting s.
func (s *Segment) closeFilesLocked() error {
	if s.log == nil {
		return nil
	}
	// A sealed index whose fsync failed is not closed without trying it
	// again (a read-only reopen could not).
	syncErr := s.syncSealedIndexesLocked()
	var unmapErr error
	if s.data != nil {
		unmapErr = s.data.Unmap()
		s.data = nil
	}
	err := errors.Join(syncErr, unmapErr, s.oidx.Close(), s.tidx.Close(), s.log.Close())
	s.log, s.oidx, s.tidx = nil, nil, nil
	return err
}

// mapLog maps the .log read-only so that reads copy from the page cache
// without a system call: a sealed segment at its size, an active one at
// MaxSegmentBytes (address space only; pages past the end of the file are
// never touched, since reads stay below the published size and truncation
// holds s.mu for writing). Where mapping fails, reads fall back to pread.
// The caller holds s.mu for writing.
func (s *Segment) mapLog() {
	n := s.size.Load()
	if s.writable {
		n = max(n, s.opts.MaxMapBytes)
	}
	osf := s.log.OSFile()
	if n <= 0 || osf == nil {
		return
	}
	if m, err := mmap.MapRegion(osf, int(n), mmap.RDONLY, 0, 0); err == nil {
		s.data = m
	}
}

// pread reads len(p) bytes at pos, from the map when there is one. The
// caller holds s.mu and reads below the published size.
func (s *Segment) pread(p []byte, pos int64) error {
	if d := s.data; d != nil && pos >= 0 && pos+int64(len(p)) <= int64(len(d)) {
		return guardFault(s.LogPath(), func() error {
			copy(p, d[pos:pos+int64(len(p))])
			return nil
		})
	}
	_, err := s.log.ReadAt(p, pos)
	return err
}

// ErrIO reports a failed read of a memory-mapped segment (the disk
// returned an error, or the file was cut under the map by someone else).
var ErrIO = errors.New("segment: i/o error")

// guardFault runs fn, which reads a memory map, turning the fault that a
// failed page-in raises into an error instead of a crash.
func guardFault(path string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading %s through its memory map: %v", ErrIO, path, r)
		}
	}()
	return fn()
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
		s.mu.RUnlock()
	}
	off := s.maxTSOff.Load()
	return s.maxTS.Load(), off, off >= 0, nil
}

// noteBatch updates the writer's view after a batch at the end.
func (s *Segment) noteBatch(h Header) {
	if h.MaxTimestamp > s.maxTS.Load() || s.maxTSOff.Load() < 0 {
		s.maxTS.Store(h.MaxTimestamp)
		s.maxTSOff.Store(h.BaseOffset)
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
	if pos+int64(len(batch)) > MaxSegmentBytes || h.NextOffset()-s.base > math.MaxUint32 {
		return 0, ErrFull
	}
	index := s.sinceIndex >= s.opts.IndexIntervalBytes && pos > 0
	if index && (s.oidx.Full() || s.tidx.Full()) {
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
		_ = s.log.Truncate(pos)
		return 0, fmt.Errorf("segment: write %s at %d: %w", s.LogPath(), pos, err)
	}
	if index {
		if err := s.oidx.Append(h.BaseOffset, pos); err != nil {
			_ = s.log.Truncate(pos)
			return 0, fmt.Errorf("segment: %w", err)
		}
		s.sinceIndex = 0
	}
	s.noteBatch(h)
	if index {
		if last, ok := s.tidx.Last(); !ok || s.maxTS.Load() > last.Timestamp {
			if off := s.maxTSOff.Load(); !ok || off > last.Offset {
				if err := s.tidx.Append(s.maxTS.Load(), off); err != nil {
					_ = s.oidx.TruncateTo(h.BaseOffset)
					_ = s.log.Truncate(pos)
					return 0, fmt.Errorf("segment: %w", err)
				}
			}
		}
	}
	if pos == 0 {
		s.firstTS.Store(h.MaxTimestamp)
	}
	s.sinceIndex += len(batch)
	s.size.Store(pos + int64(len(batch)))
	s.next.Store(h.NextOffset())
	return pos, nil
}

// Sync flushes the .log to stable storage. The indexes are derived data:
// Seal makes them durable, and an active segment's indexes are rebuilt by
// recovery after a crash, so an fsync per append costs one fsync.
func (s *Segment) Sync() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("segment: fsync %s: %w", s.LogPath(), err)
	}
	return nil
}

// Seal makes an active segment read-only: a final time-index entry for its
// largest timestamp, then both indexes trimmed to their used length and
// fsynced. When the fsync fails, the next Seal (or closing the files)
// tries it again: Seal returns nil only once the indexes are durable.
func (s *Segment) Seal() error {
	if err := s.acquire(); err != nil {
		return err
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.writable && !s.indexSyncPending {
		return nil
	}
	if s.log == nil {
		if err := s.openFilesLocked(); err != nil {
			return err
		}
	}
	if s.writable {
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

func (s *Segment) appendFinalTimeEntryLocked() error {
	off := s.maxTSOff.Load()
	if off < 0 {
		return nil
	}
	last, ok := s.tidx.Last()
	if ok && (s.maxTS.Load() <= last.Timestamp || off <= last.Offset) {
		return nil
	}
	if err := s.tidx.Append(s.maxTS.Load(), off); err != nil && !errors.Is(err, index.ErrFull) && !vfs.IsNoSpace(err) {
		return fmt.Errorf("segment: %w", err)
	}
	return nil
}

// readHeader reads and checks the batch header at pos of a log of size
// bytes, and that the whole batch lies within it.
func (s *Segment) readHeader(pos, size int64) (Header, error) {
	var buf [HeaderSize]byte
	if size-pos < HeaderSize {
		return Header{}, &CorruptError{File: s.LogPath(), Pos: pos, Err: fmt.Errorf("%w: %d bytes left, less than a batch header", ErrCorrupt, size-pos)}
	}
	if err := s.pread(buf[:], pos); err != nil {
		return Header{}, fmt.Errorf("segment: read %s at %d: %w", s.LogPath(), pos, err)
	}
	h, err := ParseHeader(buf[:], s.opts.Limits)
	if err != nil {
		return h, &CorruptError{File: s.LogPath(), Pos: pos, Err: err}
	}
	if pos+int64(h.Size()) > size {
		return h, &CorruptError{File: s.LogPath(), Pos: pos, Err: fmt.Errorf("%w: batch of %d bytes runs past the end of the file (%d)", ErrCorrupt, h.Size(), size)}
	}
	return h, nil
}

// Find returns the position and header of the batch that holds offset: an
// index lookup, then a forward scan of batch headers. It returns io.EOF
// when offset is at or past NextOffset.
func (s *Segment) Find(offset int64) (int64, Header, error) {
	if err := s.acquire(); err != nil {
		return 0, Header{}, err
	}
	defer s.mu.RUnlock()
	return s.findLocked(offset)
}

func (s *Segment) findLocked(offset int64) (int64, Header, error) {
	size := s.size.Load()
	if offset >= s.next.Load() {
		return size, Header{}, io.EOF
	}
	start := s.oidx.Lookup(offset)
	pos := start.Position
	for pos < size {
		h, err := s.readHeader(pos, size)
		if err != nil {
			return pos, h, err
		}
		if h.LastOffset() >= offset {
			return pos, h, nil
		}
		pos += int64(h.Size())
	}
	return size, Header{}, io.EOF
}

// FindTime returns the position and header of the first batch whose max
// timestamp is at or after ts, and io.EOF when there is none.
func (s *Segment) FindTime(ts int64) (int64, Header, error) {
	if err := s.acquire(); err != nil {
		return 0, Header{}, err
	}
	defer s.mu.RUnlock()
	// Entries with a timestamp below ts say that every record up to their
	// offset is older than ts: start after the last of them.
	from := s.base
	if ts > math.MinInt64 {
		if e, ok := s.tidx.Lookup(ts - 1); ok {
			from = e.Offset
		}
	}
	size := s.size.Load()
	pos, h, err := s.findLocked(from)
	for err == nil {
		if h.MaxTimestamp >= ts {
			return pos, h, nil
		}
		pos += int64(h.Size())
		if pos >= size {
			return pos, Header{}, io.EOF
		}
		h, err = s.readHeader(pos, size)
	}
	return pos, h, err
}

// ReadAt reads len(p) bytes at pos of the .log, which must lie within the
// published size.
func (s *Segment) ReadAt(p []byte, pos int64) (int, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	if pos < 0 || pos+int64(len(p)) > s.size.Load() {
		return 0, fmt.Errorf("segment: read of %d bytes at %d past the end (%d) of %s: %w", len(p), pos, s.size.Load(), s.LogPath(), io.EOF)
	}
	if err := s.pread(p, pos); err != nil {
		return 0, err
	}
	return len(p), nil
}

// DupFile returns a new descriptor of the segment's .log (dup(2)) and the
// published size, for a zero-copy send that must not hold the segment's
// lock while a slow socket drains: the descriptor stays readable after the
// segment is closed or deleted; the caller closes it. A truncation after
// the call shows as a short read.
func (s *Segment) DupFile() (*os.File, int64, error) {
	if err := s.acquire(); err != nil {
		return nil, 0, err
	}
	defer s.mu.RUnlock()
	osf := s.log.OSFile()
	if osf == nil {
		return nil, 0, fmt.Errorf("segment: %s has no OS file to duplicate", s.LogPath())
	}
	rc, err := osf.SyscallConn()
	if err != nil {
		return nil, 0, err
	}
	var fd int
	var dupErr error
	if err := rc.Control(func(sfd uintptr) { fd, dupErr = syscall.Dup(int(sfd)) }); err != nil {
		return nil, 0, err
	}
	if dupErr != nil {
		return nil, 0, fmt.Errorf("segment: dup %s: %w", s.LogPath(), dupErr)
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), s.LogPath()), s.size.Load(), nil
}

// Region pins the segment's open .log for a short read: fn gets the
// file, and the segment cannot be closed, truncated or deleted until fn
// returns. Do not wait on anything slow in fn (see DupFile).
func (s *Segment) Region(fn func(f vfs.File, size int64) error) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	return fn(s.log, s.size.Load())
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
	if err := s.log.Truncate(pos); err != nil {
		return fmt.Errorf("segment: truncate %s to %d: %w", s.LogPath(), pos, err)
	}
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
	start := s.oidx.Lookup(math.MaxInt64)
	size := s.size.Load()
	s.sinceIndex = 0
	for pos := start.Position; pos < size; {
		h, err := s.readHeader(pos, size)
		if err != nil {
			return err
		}
		s.noteBatch(h)
		s.sinceIndex += h.Size()
		pos += int64(h.Size())
	}
	return nil
}

func (s *Segment) reopenWritableLocked() error {
	if s.log != nil {
		if err := s.closeFilesLocked(); err != nil {
			return err
		}
		if s.opts.Budget != nil {
			s.opts.Budget.release(s)
		}
	}
	s.writable = true
	return s.openFilesLocked()
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
	if _, err := s.scanLocked(false); err != nil {
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
// many bytes were cut. The segment is left writable (active); Seal it if
// it is not the last.
func (s *Segment) Recover() (truncated int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted {
		return 0, ErrDeleted
	}
	if err := s.reopenWritableLocked(); err != nil {
		return 0, err
	}
	return s.scanLocked(true)
}

// scanLocked rescans the .log from the start, validating every batch and
// rebuilding both indexes. With cut it truncates the file at the first
// invalid batch (recovery of a segment past the recovery point); without,
// an invalid batch is an error and nothing is cut (a sealed segment whose
// indexes are rebuilt: its data is below the recovery point).
func (s *Segment) scanLocked(cut bool) (int64, error) {
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

	const chunk = 1 << 20
	buf := make([]byte, 0, chunk)
	var bufPos int64 // file position of buf[0]
	pos, next := int64(0), s.base
	for pos < fileSize {
		// Make sure buf holds the header, then the whole batch.
		need := int64(HeaderSize)
		var h Header
		var herr error
		for {
			if pos+need > bufPos+int64(len(buf)) {
				n := max(need, min(chunk, fileSize-pos))
				if n > int64(cap(buf)) {
					buf = make([]byte, 0, n)
				}
				if pos+n > fileSize {
					n = fileSize - pos
				}
				buf = buf[:n]
				if _, err := s.log.ReadAt(buf, pos); err != nil {
					return 0, fmt.Errorf("segment: read %s at %d: %w", s.LogPath(), pos, err)
				}
				bufPos = pos
				if int64(len(buf)) < need {
					herr = fmt.Errorf("%w: %d bytes left, need %d", ErrCorrupt, len(buf), need)
					break
				}
			}
			b := buf[pos-bufPos:]
			if need == HeaderSize {
				h, herr = ParseHeader(b, s.opts.Limits)
				if herr != nil {
					break
				}
				need = int64(h.Size())
				continue
			}
			_, herr = Verify(b[:need], s.opts.Limits)
			break
		}
		if herr == nil && h.BaseOffset != next {
			herr = fmt.Errorf("%w: batch base offset %d, expected %d", ErrCorrupt, h.BaseOffset, next)
		}
		if herr == nil && h.NextOffset()-s.base > math.MaxUint32 {
			herr = fmt.Errorf("%w: offset %d too far from the segment base %d", ErrCorrupt, h.LastOffset(), s.base)
		}
		if herr != nil {
			break
		}
		if s.sinceIndex >= s.opts.IndexIntervalBytes && pos > 0 {
			// A full index, or a full disk, only makes lookups scan
			// further: indexes are derived data, recovery goes on.
			if err := s.oidx.Append(h.BaseOffset, pos); err != nil && !errors.Is(err, index.ErrFull) && !vfs.IsNoSpace(err) {
				return 0, fmt.Errorf("segment: rebuild index: %w", err)
			}
			s.noteBatch(h)
			if last, ok := s.tidx.Last(); !ok || (s.maxTS.Load() > last.Timestamp && s.maxTSOff.Load() > last.Offset) {
				if err := s.tidx.Append(s.maxTS.Load(), s.maxTSOff.Load()); err != nil && !errors.Is(err, index.ErrFull) && !vfs.IsNoSpace(err) {
					return 0, fmt.Errorf("segment: rebuild time index: %w", err)
				}
			}
			s.sinceIndex = 0
		}
		if pos == 0 {
			s.firstTS.Store(h.MaxTimestamp)
		}
		s.noteBatch(h)
		s.sinceIndex += h.Size()
		pos += int64(h.Size())
		next = h.NextOffset()
	}
	cutBytes := fileSize - pos
	if cutBytes > 0 && !cut {
		return 0, &CorruptError{File: s.LogPath(), Pos: pos, Err: fmt.Errorf("%w: invalid batch in a sealed segment (%d bytes after it)", ErrCorrupt, cutBytes)}
	}
	if cutBytes > 0 {
		if err := s.log.Truncate(pos); err != nil {
			return 0, fmt.Errorf("segment: truncate %s to %d: %w", s.LogPath(), pos, err)
		}
	}
	s.size.Store(pos)
	s.next.Store(next)
	return cutBytes, nil
}

// Close closes the files. An active segment's indexes are trimmed to
// their used length and fsynced, so that an open after a clean close can
// trust them (the .log is the caller's to fsync first). The segment cannot
// be used afterwards.
func (s *Segment) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.closeFilesLocked()
	if s.opts.Budget != nil {
		s.opts.Budget.release(s)
	}
	if err == nil && s.writable && !s.deleted {
		// Trimmed by closing (now or by an earlier eviction of the
		// files): make the indexes' entries and sizes durable.
		err = errors.Join(s.syncFile(s.path(IndexSuffix)), s.syncFile(s.path(TimeIndexSuffix)))
	}
	return err
}

// syncFile fsyncs a closed file by path; a file that does not exist has
// nothing to make durable.
func (s *Segment) syncFile(path string) error {
	f, err := s.opts.FS.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("segment: fsync %s: %w", path, err)
	}
	return nil
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

// ReadBatches reads whole batches starting with the one that holds offset,
// stopping before a batch whose base offset is at or past limit, at most
// maxBytes in all but always the first batch. It reuses dst's memory. It
// does one read for the common case: from the index entry at or below
// offset, one index interval plus maxBytes, scanning the batch headers in
// memory. It returns io.EOF when offset is at or past NextOffset or limit.
func (s *Segment) ReadBatches(dst []byte, offset int64, maxBytes int, limit int64) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	size := s.size.Load()
	if offset >= s.next.Load() || offset >= limit {
		return nil, io.EOF
	}
	maxBytes = max(maxBytes, 1)
	start := s.oidx.Lookup(offset).Position
	// Small reads (a record by offset) come straight from the map: no
	// system call. Large ones (a consumer's fetch) use pread, which copies
	// without faulting every page into this process's page tables.
	if d := s.data; d != nil && size <= int64(len(d)) && maxBytes <= mappedReadMax {
		var out []byte
		err := guardFault(s.LogPath(), func() (err error) {
			out, err = s.readBatchesMapped(dst, d[:size], start, offset, maxBytes, limit)
			return err
		})
		return out, err
	}
	want := min(int64(maxBytes), size) + int64(s.opts.IndexIntervalBytes) + 2*HeaderSize
	buf, err := s.readInto(dst, start, min(want, size-start))
	if err != nil {
		return nil, err
	}
	// Find the batch that holds offset.
	p := int64(0)
	for {
		h, err := s.headerIn(buf, start, p, size)
		if err != nil {
			return nil, err
		}
		if h.LastOffset() >= offset {
			break
		}
		p += int64(h.Size())
		if start+p >= size {
			return nil, io.EOF
		}
		if p+HeaderSize > int64(len(buf)) {
			// Past what was read: continue with a fresh read there.
			start += p
			p = 0
			if buf, err = s.readInto(buf, start, min(want, size-start)); err != nil {
				return nil, err
			}
		}
	}
	// Take whole batches from p.
	first, q := p, p
	for start+q < size {
		h, err := s.headerIn(buf, start, q, size)
		if err != nil {
			if q > first && errors.Is(err, errNeedMore) {
				break
			}
			return nil, err
		}
		if h.BaseOffset >= limit || (q > first && q+int64(h.Size())-first > int64(maxBytes)) {
			break
		}
		if q+int64(h.Size()) > int64(len(buf)) {
			if q > first {
				break
			}
			// The first batch is larger than what was read: read it whole.
			if buf, err = s.readInto(buf, start+q, int64(h.Size())); err != nil {
				return nil, err
			}
			start, first, q = start+q, 0, 0
		}
		q += int64(h.Size())
	}
	// Return the batches at the start of the buffer, so that a caller
	// that passes the result back keeps the whole buffer's capacity.
	if first > 0 {
		copy(buf, buf[first:q])
	}
	return buf[:q-first], nil
}

// readBatchesMapped is ReadBatches over the mapped file d (the whole
// published log): headers are parsed in place and only the batches
// returned are copied.
func (s *Segment) readBatchesMapped(dst, d []byte, pos, offset int64, maxBytes int, limit int64) ([]byte, error) {
	size := int64(len(d))
	for {
		h, err := s.headerIn(d, 0, pos, size)
		if err != nil {
			return nil, err
		}
		if h.LastOffset() >= offset {
			break
		}
		if pos += int64(h.Size()); pos >= size {
			return nil, io.EOF
		}
	}
	first, q := pos, pos
	for q < size {
		h, err := s.headerIn(d, 0, q, size)
		if err != nil {
			return nil, err
		}
		if h.BaseOffset >= limit || (q > first && q+int64(h.Size())-first > int64(maxBytes)) {
			break
		}
		q += int64(h.Size())
	}
	n := q - first
	if int64(cap(dst)) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	copy(dst, d[first:q])
	return dst, nil
}

var errNeedMore = errors.New("header not in buffer")

// mappedReadMax is the largest maxBytes that ReadBatches serves from the map.
const mappedReadMax = 64 << 10

// headerIn parses the header at buf[p:], which holds the file from start.
func (s *Segment) headerIn(buf []byte, start, p, size int64) (Header, error) {
	if p+HeaderSize > int64(len(buf)) {
		if start+p+HeaderSize > size {
			return Header{}, &CorruptError{File: s.LogPath(), Pos: start + p, Err: fmt.Errorf("%w: %d bytes left, less than a batch header", ErrCorrupt, size-start-p)}
		}
		return Header{}, errNeedMore
	}
	h, err := ParseHeader(buf[p:], s.opts.Limits)
	if err != nil {
		return h, &CorruptError{File: s.LogPath(), Pos: start + p, Err: err}
	}
	if start+p+int64(h.Size()) > size {
		return h, &CorruptError{File: s.LogPath(), Pos: start + p, Err: fmt.Errorf("%w: batch of %d bytes runs past the end of the file (%d)", ErrCorrupt, h.Size(), size)}
	}
	return h, nil
}

func (s *Segment) readInto(dst []byte, pos, n int64) ([]byte, error) {
	if int64(cap(dst)) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	// Always pread: this serves the large reads (see mappedReadMax).
	if _, err := s.log.ReadAt(dst, pos); err != nil {
		return nil, fmt.Errorf("segment: read %s at %d: %w", s.LogPath(), pos, err)
	}
	return dst, nil
}
