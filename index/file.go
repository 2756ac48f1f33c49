package index

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"sync/atomic"
	"syscall"

	"github.com/edsrzf/mmap-go"

	"github.com/seglog/seglog/vfs"
)

const (
	// allocChunk is how far ahead of the entries Append reserves disk
	// blocks, so that writes through the map never meet a full disk.
	allocChunk = 64 << 10
	// warmBytes is the size of the "warm section": the most recent
	// entries, searched first when the target is in them. Lookups near
	// the end of the log (the common case: consumers that keep up) then
	// touch only the last few pages, which stay in memory. Kafka uses 8 KiB.
	warmBytes = 8 << 10
)

// entryFile is a file of fixed-width entries mapped into memory: the
// mechanics shared by OffsetIndex and TimeIndex. It knows entries only as
// byte slices and columns.
//
// Concurrency: one writer. len, entry, last and upperBound may run beside
// append; they load the entry count once (atomically) and read only the
// entries below it, which append never changes, and the summary keys of
// those entries (see summary for the order of publication). Every other
// method runs alone.
type entryFile struct {
	heap bool // m is a copy in memory (a followed index), not a map
	fs   vfs.FS
	path string
	file vfs.File     // nil once closed
	m    mmap.MMap    // the mapping; nil when the file is empty or closed
	size int          // entry size in bytes
	cols []column     // the columns that strictly increase across entries
	warm int          // entries in the warm section
	n    atomic.Int64 // entries in use; stored after their bytes are written

	// sum is the summary of cols[0] (see summary), stored before the
	// count that covers its keys; nil until the first search of an index
	// opened read-only or followed, and after Close.
	sum atomic.Pointer[summary]

	limit     int   // entries the index may hold: appends fail with ErrFull at limit
	capBytes  int64 // a writable index's configured size (MaxBytes rounded down)
	allocated int64 // bytes of the file reserved with Allocate, from 0
	openSize  int64 // the file's size at open, or 0 after Reset; reported by sanityCheck when not a multiple of size
	writable  bool  // mapped read-write and accepting appends
	openedRW  bool  // the file is open for writing (writable now, or sealed)
	closed    bool
}

func openEntryFile(path string, size int, cols []column, opts Options) (*entryFile, error) {
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	f := &entryFile{fs: fs, path: path, size: size, cols: cols, warm: warmBytes / size}
	if !opts.Writable {
		if err := f.openReadOnly(opts.Follow); err != nil {
			return nil, err
		}
		return f, nil
	}
	maxBytes := opts.MaxBytes
	if maxBytes == 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxBytes < size {
		return nil, fmt.Errorf("index: open %s: MaxBytes %d holds no entry of %d bytes", path, opts.MaxBytes, size)
	}
	f.capBytes = int64(maxBytes - maxBytes%size)
	perm := opts.Perm
	if perm == 0 {
		perm = vfs.DefaultFileMode
	}
	if err := f.openWritable(perm); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *entryFile) openReadOnly(follow bool) error {
	file, err := f.fs.OpenFile(f.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if follow && errors.Is(err, os.ErrNotExist) {
		// The writer creates its index on the segment's first append:
		// until then a followed index has no entries.
		return nil
	}
	if err != nil {
		return fmt.Errorf("index: open %s: %w", f.path, err)
	}
	fi, err := file.Stat()
	if err != nil {
		_ = file.Close()
		return fmt.Errorf("index: stat %s: %w", f.path, err)
	}
	sz := fi.Size()
	if sz > math.MaxInt {
		_ = file.Close()
		return fmt.Errorf("index: open %s: %d bytes cannot be mapped", f.path, sz)
	}
	if follow {
		// Another process writes, truncates and trims this file: a map
		// of it could fault. Copy the entries in use instead.
		return f.copyFollowed(file, sz)
	}
	if sz > 0 {
		if f.m, err = mmap.MapRegion(file.OSFile(), int(sz), mmap.RDONLY, 0, 0); err != nil {
			_ = file.Close()
			return fmt.Errorf("index: mmap %s: %w", f.path, err)
		}
	}
	f.file = file
	f.openSize = sz
	n := int(sz / int64(f.size))
	f.n.Store(int64(n))
	f.limit = n
	return nil
}

// maxFollowedBytes bounds the copy of a followed index.
const maxFollowedBytes = 64 << 20

// copyFollowed reads a followed index into memory (closing the file): the entries
// before the first all-zero one, as they are now. It reads a chunk at a
// time up to that entry and keeps exactly the entries: the file of an
// active segment is preallocated to its full size, mostly zeros.
func (f *entryFile) copyFollowed(file vfs.File, sz int64) error {
	defer file.Close()
	sz = min(sz, maxFollowedBytes)
	sz -= sz % int64(f.size)
	buf := make([]byte, min(sz, followChunk-followChunk%int64(f.size)))
	entries := []byte{}
	for off := int64(0); off < sz; off += int64(len(buf)) {
		b := buf[:min(int64(len(buf)), sz-off)]
		n, err := file.ReadAt(b, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("index: read %s: %w", f.path, err)
		}
		b = b[:n-n%f.size]
		k := sort.Search(len(b)/f.size, func(i int) bool { return allZero(b[i*f.size : (i+1)*f.size]) })
		entries = append(entries, b[:k*f.size]...)
		if k*f.size < len(buf) {
			break // the first all-zero entry, or the end of the file
		}
	}
	k := len(entries) / f.size
	f.m = mmap.MMap(entries)
	f.heap = true
	f.n.Store(int64(k))
	f.limit = k
	return nil
}

// followChunk is how much of a followed index copyFollowed reads at once.
const followChunk = 64 << 10

func (f *entryFile) openWritable(perm os.FileMode) (err error) {
	file, err := f.fs.OpenFile(f.path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return fmt.Errorf("index: open %s: %w", f.path, err)
	}
	defer func() {
		if err != nil {
			_ = file.Close()
		}
	}()
	fi, err := file.Stat()
	if err != nil {
		return fmt.Errorf("index: stat %s: %w", f.path, err)
	}
	sz := fi.Size()
	if sz > math.MaxInt {
		return fmt.Errorf("index: open %s: %d bytes cannot be mapped", f.path, sz)
	}
	mapLen := sz
	if sz < f.capBytes {
		// Sparse: blocks are reserved by append, a chunk at a time.
		if err := file.Truncate(f.capBytes); err != nil {
			return fmt.Errorf("index: truncate %s: %w", f.path, err)
		}
		mapLen = f.capBytes
	}
	m, err := mmap.MapRegion(file.OSFile(), int(mapLen), mmap.RDWR, 0, 0)
	if err != nil {
		return fmt.Errorf("index: mmap %s: %w", f.path, err)
	}
	f.file, f.m, f.openSize = file, m, sz
	f.writable, f.openedRW = true, true

	// Valid entries are never all zero and the preallocated tail is all
	// zeros: the used entries end at the first all-zero entry.
	// Only the file's size before it was grown can hold entries; a new
	// file holds none, so opening it touches no page of the mapping.
	whole := int(mapLen / int64(f.size))
	used := int(min(sz, mapLen) / int64(f.size))
	n := sort.Search(used, func(i int) bool { return allZero(f.m[i*f.size : (i+1)*f.size]) })
	f.n.Store(int64(n))
	f.limit = whole
	if sz > f.capBytes {
		f.limit = n // larger than MaxBytes: keep the entries, take no more
	}
	if n > 0 {
		f.sum.Store(f.buildSummary(n, f.groups(n)))
	}
	return nil
}

// len returns the number of entries in use. It may run beside append.
func (f *entryFile) len() int { return int(f.n.Load()) }

// entry returns entry i's bytes, which stay valid until the next Seal,
// TruncateTo, Reset or Close. It may run beside append.
func (f *entryFile) entry(i int) []byte {
	if n := f.len(); i < 0 || i >= n {
		panic(fmt.Sprintf("index: entry %d out of range [0, %d)", i, n))
	}
	return f.m[i*f.size : (i+1)*f.size : (i+1)*f.size]
}

// last returns the last entry's bytes. It may run beside append.
func (f *entryFile) last() ([]byte, bool) {
	n := f.len()
	if n == 0 {
		return nil, false
	}
	return f.m[(n-1)*f.size : n*f.size : n*f.size], true
}

// upperBound returns the number of leading entries whose column c is at or
// below target: the index of the first entry above it. c must increase
// across entries. It searches the warm section (the last entries, whose
// pages are likely in memory) when the target is at or after its first
// entry; otherwise, for c = cols[0], it searches the summary for the group
// of entries that holds the answer and then that group only. It may run
// beside append, and allocates only when it builds the summary of an index
// opened read-only or followed.
func (f *entryFile) upperBound(c column, target uint64) int {
	n := f.len() // first: see summary
	m, size := f.m, f.size
	hi := n
	if w := f.warm; n > w {
		if c.at(m, (n-w)*size) <= target {
			return searchHot(m, size, c, n-w+1, n, target)
		}
		hi = n - w
	}
	if hi <= 1<<groupShift || c != f.cols[0] {
		return searchMap(m, size, c, 0, hi, target)
	}
	// g groups start at or below target: the answer is in group g-1.
	g := f.summaryFor(n).upperBound(f.groups(hi), target)
	if g == 0 {
		return 0
	}
	first, end := (g-1)<<groupShift, g<<groupShift
	if end > hi {
		return searchMap(m, size, c, first+1, hi, target) // a group cut short
	}
	return searchGroup(m, size, c, first, target)
}

// full reports whether append cannot add an entry: the index is at its
// limit, read-only or closed.
func (f *entryFile) full() bool { return f.closed || f.len() >= f.limit }

// checkWritable returns the error append would return for the index's
// state, before the caller validates an entry.
func (f *entryFile) checkWritable() error {
	switch {
	case f.closed:
		return ErrClosed
	case !f.writable:
		return ErrReadOnly
	}
	return nil
}

// append adds an entry of f.size bytes, which the caller has validated.
// It reserves disk blocks ahead of the entry first; on any error nothing
// has changed. Only the writer calls it.
func (f *entryFile) append(b []byte) error {
	if err := f.checkWritable(); err != nil {
		return err
	}
	n := f.len()
	if n >= f.limit {
		return ErrFull
	}
	off := n * f.size
	if err := f.reserve(int64(off + f.size)); err != nil {
		return err
	}
	copy(f.m[off:off+f.size], b)
	if n&(1<<groupShift-1) == 0 {
		f.addKey(n, b) // after the bytes, before the count
	}
	f.n.Store(int64(n + 1)) // publish after the bytes and the summary
	return nil
}

// reserve makes sure that disk blocks back the file up to end, reserving a
// chunk ahead and never past the mapping.
func (f *entryFile) reserve(end int64) error {
	if end <= f.allocated {
		return nil
	}
	upTo := (end + allocChunk - 1) / allocChunk * allocChunk
	if ml := int64(len(f.m)); upTo > ml {
		upTo = ml
	}
	if err := f.file.Allocate(f.allocated, upTo-f.allocated); err != nil {
		return fmt.Errorf("index: allocate %s [%d, %d): %w", f.path, f.allocated, upTo, err)
	}
	f.allocated = upTo
	return nil
}

// truncate keeps the first k entries and zeroes the rest in the file. It
// runs alone. On an index that cannot be written it is an error
// (ErrReadOnly) unless nothing would be dropped.
func (f *entryFile) truncate(k int) error {
	if f.closed {
		return ErrClosed
	}
	n := f.len()
	if k >= n {
		return nil
	}
	if !f.writable {
		return ErrReadOnly
	}
	f.n.Store(int64(k))
	clear(f.m[k*f.size : n*f.size])
	return nil
}

// reset drops every entry: the file is emptied and preallocated again, so
// nothing of its old content (a torn tail, stray bytes past the entries)
// survives. It runs alone. On an index that cannot be written it is an
// error (ErrReadOnly) unless the index is already empty. If it fails, the
// index holds no entries and takes no appends: close it.
func (f *entryFile) reset() error {
	if f.closed {
		return ErrClosed
	}
	if !f.writable {
		if f.len() == 0 && f.openSize%int64(f.size) == 0 {
			return nil
		}
		return ErrReadOnly
	}
	f.n.Store(0)       // the summary's array is kept for the next appends
	f.writable = false // until the new mapping is in place
	if err := f.unmap(); err != nil {
		return err
	}
	if err := f.file.Truncate(0); err != nil {
		return fmt.Errorf("index: truncate %s: %w", f.path, err)
	}
	if err := f.file.Truncate(f.capBytes); err != nil {
		return fmt.Errorf("index: truncate %s: %w", f.path, err)
	}
	m, err := mmap.MapRegion(f.file.OSFile(), int(f.capBytes), mmap.RDWR, 0, 0)
	if err != nil {
		return fmt.Errorf("index: mmap %s: %w", f.path, err)
	}
	f.m = m
	f.writable = true
	f.limit = int(f.capBytes) / f.size
	f.allocated = 0
	f.openSize = 0
	return nil
}

// sanityCheck checks the file size and that the used entries are not all
// zero and strictly increase in every column of f.cols. It may run beside
// append, and reads every entry: O(n).
func (f *entryFile) sanityCheck() error {
	if f.closed {
		return ErrClosed
	}
	if r := f.openSize % int64(f.size); r != 0 {
		return fmt.Errorf("%w: %s: size %d is not a multiple of the entry size %d", ErrCorrupt, f.path, f.openSize, f.size)
	}
	n := f.len()
	for i := 0; i < n; i++ {
		off := i * f.size
		if allZero(f.m[off : off+f.size]) {
			return fmt.Errorf("%w: %s: entry %d is all zero", ErrCorrupt, f.path, i)
		}
		if i == 0 {
			continue
		}
		for _, c := range f.cols {
			if prev, cur := c.at(f.m, off-f.size), c.at(f.m, off); cur <= prev {
				return fmt.Errorf("%w: %s: entry %d does not follow entry %d (bytes %d..%d)", ErrCorrupt, f.path, i, i-1, c.off, c.off+c.width-1)
			}
		}
	}
	return nil
}

// seal trims a writable index to its used length and maps it read-only
// (or unmaps it when empty). It does not sync: call sync first for
// durability. It runs alone; on a read-only index it does nothing.
func (f *entryFile) seal() error {
	if f.closed {
		return ErrClosed
	}
	if !f.writable {
		return nil
	}
	used := int64(f.len() * f.size)
	if err := f.file.Truncate(used); err != nil {
		return fmt.Errorf("index: truncate %s: %w", f.path, err)
	}
	// The old mapping now reaches past the end of the file: take no more
	// appends whatever happens next. Reads stay below used.
	f.writable = false
	f.limit = f.len()
	f.allocated = 0
	f.openSize = used
	f.trimSummary()
	var m mmap.MMap
	if used > 0 {
		var err error
		if m, err = mmap.MapRegion(f.file.OSFile(), int(used), mmap.RDONLY, 0, 0); err != nil {
			return fmt.Errorf("index: mmap %s: %w", f.path, err)
		}
	}
	if err := f.unmap(); err != nil {
		_ = m.Unmap()
		return err
	}
	f.m = m
	return nil
}

// sync flushes written entries to stable storage: msync of a writable
// mapping, then fsync of the file. An index opened read-only has nothing
// to flush. It is called by the writer, not beside append.
func (f *entryFile) sync() error {
	if f.closed {
		return ErrClosed
	}
	if f.writable && f.m != nil {
		if err := f.m.Flush(); err != nil {
			return fmt.Errorf("index: msync %s: %w", f.path, err)
		}
	}
	if f.openedRW {
		if err := f.file.Sync(); err != nil {
			return fmt.Errorf("index: fsync %s: %w", f.path, err)
		}
	}
	return nil
}

// close trims a writable index to its used length, unmaps and closes the
// file. It runs alone, and a second call does nothing.
func (f *entryFile) close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	var errs []error
	wasWritable := f.writable
	f.writable = false
	used := int64(f.len() * f.size)
	f.n.Store(0)
	f.sum.Store(nil)
	errs = append(errs, f.unmap())
	if wasWritable {
		if err := f.file.Truncate(used); err != nil {
			errs = append(errs, fmt.Errorf("index: truncate %s: %w", f.path, err))
		}
	}
	if f.file != nil {
		if err := f.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("index: close %s: %w", f.path, err))
		}
	}
	f.file = nil
	return errors.Join(errs...)
}

func (f *entryFile) unmap() error {
	if f.m == nil {
		return nil
	}
	if f.heap {
		f.m = nil
		return nil
	}
	err := f.m.Unmap()
	f.m = nil
	if err != nil {
		return fmt.Errorf("index: munmap %s: %w", f.path, err)
	}
	return nil
}
