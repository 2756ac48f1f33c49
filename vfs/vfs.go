// Package vfs is seglog's filesystem seam: the few file operations the
// engine performs, behind an interface, so that tests can inject faults
// (short writes, ENOSPC, failing fsync, failing rename) while production
// code calls the os package directly.
//
// Only what the engine uses is here. Every implementation must behave like
// the os package: errors are *os.PathError or wrap a syscall.Errno, so that
// errors.Is(err, syscall.ENOSPC) works whatever FS produced them.
package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
)

// Default permissions for what the engine creates: the data is not readable
// by other users.
const (
	DefaultFileMode os.FileMode = 0o640
	DefaultDirMode  os.FileMode = 0o750
)

// File is an open file. It is safe to call ReadAt from many goroutines at
// once; every other method is called by one goroutine at a time.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Seeker
	io.Closer

	// Sync flushes the file's data and metadata to stable storage (fsync).
	Sync() error
	// Datasync flushes the file's data, and the metadata needed to read
	// it back (its size), to stable storage (fdatasync): what an append
	// needs, without the timestamps that Sync also writes.
	Datasync() error
	// Truncate changes the file's size; growing it leaves a sparse hole.
	Truncate(size int64) error
	// Allocate reserves disk blocks for the byte range [off, off+n),
	// growing the file if needed, so that later writes to the range
	// (including writes through a memory map) cannot fail for lack of
	// space. It returns an error wrapping syscall.ENOSPC on a full disk.
	Allocate(off, n int64) error
	// Stat returns the file's metadata.
	Stat() (os.FileInfo, error)
	// Name returns the path the file was opened with.
	Name() string
	// OSFile returns the *os.File underneath, which memory mapping and
	// sendfile need. Wrappers that inject faults return the file they wrap.
	OSFile() *os.File
}

// FS is a filesystem. All paths are ordinary OS paths.
type FS interface {
	// OpenFile opens a file like os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a path and everything under it.
	RemoveAll(name string) error
	// Rename renames a file, replacing the target atomically.
	Rename(oldpath, newpath string) error
	// MkdirAll creates a directory and any parents that are missing.
	MkdirAll(path string, perm os.FileMode) error
	// ReadDir lists a directory in no particular order (sorting thousands
	// of segment names costs more than the listing; callers sort what
	// they need).
	ReadDir(name string) ([]os.DirEntry, error)
	// Lstat describes a path without following a final symbolic link.
	Lstat(name string) (os.FileInfo, error)
	// SyncDir fsyncs a directory, making the creation, removal and
	// renaming of its entries durable.
	SyncDir(dir string) error
}

// Default is the FS over the os package.
var Default FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) OSFile() *os.File { return f.File }

func growTo(f *os.File, size int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() >= size {
		return nil
	}
	return f.Truncate(size)
}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(name string) ([]os.DirEntry, error) {
	d, err := openFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}
func (osFS) Lstat(name string) (os.FileInfo, error) { return os.Lstat(name) }

func (osFS) SyncDir(dir string) error {
	d, err := openFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}

// tmpSeq numbers the temporary files of WriteFileAtomic, so that two
// concurrent replacements of one path never write the same temporary file.
var tmpSeq atomic.Uint64

// TempSuffix ends the name of every temporary file WriteFileAtomic creates:
// a name ending in it is a leftover of an interrupted write, safe to remove
// on open.
const TempSuffix = ".tmp"

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old content or the new, never a mix: it writes a temporary file beside
// path (a name of its own per call, so concurrent calls do not collide;
// the last rename wins), fsyncs it, renames it over path and fsyncs the
// directory.
func WriteFileAtomic(fs FS, path string, data []byte, perm os.FileMode) error {
	return replaceFile(fs, path, data, perm, true, true)
}

// WriteFileAtomicLazy is WriteFileAtomic without the directory fsync: the
// new content is durable before it replaces the old, so a crash leaves
// one or the other (never a mix, nor an empty file), but which one is
// only decided by the directory's next fsync. For a file whose old
// content stays as good as the new (a checkpoint that only moves
// forward).
func WriteFileAtomicLazy(fs FS, path string, data []byte, perm os.FileMode) error {
	return replaceFile(fs, path, data, perm, true, false)
}

// MkdirAllDurable creates path and any missing parents, like MkdirAll, and
// makes each creation durable: it fsyncs the parent of every directory it
// created (a directory's entry lives in its parent), deepest first, so that
// after a power cut the directory either exists with every parent or was
// never acknowledged. An existing directory costs one Lstat.
func MkdirAllDurable(fs FS, path string, perm os.FileMode) error {
	path = filepath.Clean(path)
	var missing []string
	for p := path; ; {
		fi, err := fs.Lstat(p)
		if err == nil {
			if !fi.IsDir() {
				return &os.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
			}
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, p)
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(path, perm); err != nil {
		return err
	}
	for _, p := range missing {
		if err := fs.SyncDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

// ReadFile reads a whole file, refusing one larger than limit bytes so that
// a damaged or hostile file cannot cause a huge allocation.
func ReadFile(fs FS, path string, limit int64) ([]byte, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d allowed: %w", path, fi.Size(), limit, ErrTooLarge)
	}
	buf := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return buf, nil
}

// ErrTooLarge is returned by ReadFile for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// IsNoSpace reports whether err means the disk is full (ENOSPC or EDQUOT).
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// ReplaceFile replaces path with data as WriteFileAtomic does, but without
// fsync: readers see the old content or the new, never a mix, while the
// system runs; after a power cut the file may hold either, or be empty or
// damaged. For files whose content is made durable elsewhere.
func ReplaceFile(fs FS, path string, data []byte, perm os.FileMode) error {
	return replaceFile(fs, path, data, perm, false, false)
}

func replaceFile(fs FS, path string, data []byte, perm os.FileMode, syncFile, syncDir bool) (err error) {
	tmp := path + "." + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(tmpSeq.Add(1), 10) + TempSuffix
	f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = fs.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if syncFile {
		if err = f.Sync(); err != nil {
			_ = f.Close()
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = fs.Rename(tmp, path); err != nil || !syncDir {
		return err
	}
	return fs.SyncDir(filepath.Dir(path))
}
