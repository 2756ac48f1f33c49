package segment

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"

	"github.com/edsrzf/mmap-go"
	"github.com/seglog/seglog/index"
)

// acquireStat is acquire, also returning the .log's size on disk. On
// success the caller must RUnlock s.mu.
func (s *Segment) acquireStat() (int64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	fi, err := s.log.Stat()
	if err != nil {
		s.mu.RUnlock()
		return 0, fmt.Errorf("segment: %w", err)
	}
	return fi.Size(), nil
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
	if !s.writable && !s.follow {
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
	} else if s.follow {
		// A followed segment scans only the batches after its last
		// offset-index entry (Refresh): the time index holds the largest
		// timestamp before them.
		if last, ok := s.tidx.Last(); ok && (s.maxTSOff.Load() < 0 || last.Timestamp > s.maxTS.Load()) {
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
	iopts := index.Options{FS: s.opts.FS, MaxBytes: s.opts.MaxIndexBytes, Writable: s.writable, Follow: s.follow, Perm: s.opts.FileMode}
	for {
		if oidx, err = index.OpenOffset(s.path(IndexSuffix), s.base, iopts); err == nil {
			if tidx, err = index.OpenTime(s.path(TimeIndexSuffix), s.base, iopts); err == nil {
				return oidx, tidx, missing, nil
			}
			_ = oidx.Close()
		}
		if missing || s.writable || s.follow || !errors.Is(err, os.ErrNotExist) {
			return nil, nil, false, fmt.Errorf("segment: %w", err)
		}
		// A follower reads a missing file as empty.
		missing, iopts.Follow = true, true
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

// dropMappedPages releases the pages reads faulted into the .log's map,
// unless a writer holds the segment (then the next release does).
func (s *Segment) dropMappedPages() {
	if !s.mu.TryRLock() {
		return
	}
	defer s.mu.RUnlock()
	if s.data != nil {
		_ = dropMapPages(s.data)
	}
}

// noteMappedRead counts n bytes read through the map against the Budget.
func (s *Segment) noteMappedRead(n int64) {
	if s.opts.Budget != nil {
		s.opts.Budget.noteMappedRead(n)
	}
}

// pread reads len(p) bytes at pos, from the map when there is one. The
// caller holds s.mu and reads below the published size.
func (s *Segment) pread(p []byte, pos int64) error {
	if d := s.data; d != nil && pos >= 0 && pos+int64(len(p)) <= int64(len(d)) {
		s.noteMappedRead(int64(len(p)))
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
