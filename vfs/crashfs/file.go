package crashfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/seglog/seglog/vfs"
)

// file is an open file: the real one and its node.
type file struct {
	fs       *FS
	f        vfs.File
	n        *node
	readable bool
}

var _ vfs.File = (*file)(nil)

func (f *file) Name() string { return f.f.Name() }

// OSFile returns the real file, so that memory maps, flock and sendfile
// work. Writes through a map reach the model at the next Sync.
func (f *file) OSFile() *os.File { return f.f.OSFile() }

func (f *file) Read(p []byte) (int, error) {
	if err := f.fs.check("read", f.Name()); err != nil {
		return 0, err
	}
	return f.f.Read(p)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check("read", f.Name()); err != nil {
		return 0, err
	}
	return f.f.ReadAt(p, off)
}

func (f *file) Seek(offset int64, whence int) (int64, error) {
	if err := f.fs.check("seek", f.Name()); err != nil {
		return 0, err
	}
	return f.f.Seek(offset, whence)
}

func (f *file) Stat() (os.FileInfo, error) {
	if err := f.fs.check("stat", f.Name()); err != nil {
		return nil, err
	}
	return f.f.Stat()
}

func (f *file) Write(p []byte) (int, error) {
	if err := f.fs.step("write", f.Name()); err != nil {
		return 0, err
	}
	n, err := f.f.Write(p)
	f.noteSize()
	return n, err
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.step("writeat", f.Name()); err != nil {
		return 0, err
	}
	n, err := f.f.WriteAt(p, off)
	f.noteSize()
	return n, err
}

func (f *file) Truncate(size int64) error {
	if err := f.fs.step("truncate", f.Name()); err != nil {
		return err
	}
	err := f.f.Truncate(size)
	f.noteSize()
	return err
}

func (f *file) Allocate(off, n int64) error {
	if err := f.fs.step("allocate", f.Name()); err != nil {
		return err
	}
	err := f.f.Allocate(off, n)
	f.noteSize()
	return err
}

// noteSize records the file's size after an operation that may change it.
func (f *file) noteSize() {
	fi, err := f.f.Stat()
	if err != nil {
		return
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if k := len(f.n.sizes); k == 0 || f.n.sizes[k-1] != fi.Size() {
		f.n.sizes = append(f.n.sizes, fi.Size())
	}
}

// Close closes the real file; once crashed it still does, and returns an
// error wrapping ErrCrashed.
func (f *file) Close() error {
	err := f.f.Close()
	if cerr := f.fs.check("close", f.Name()); cerr != nil {
		return cerr
	}
	return err
}

// Sync makes the file's content as it is when Sync starts its durable
// content.
func (f *file) Sync() error {
	if err := f.fs.step("sync", f.Name()); err != nil {
		return err
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.crashed.Load() {
		return crashErr("sync", f.Name())
	}
	b, err := f.content()
	if err != nil {
		return err
	}
	if f.fs.opts.RealSync {
		if err := f.f.Sync(); err != nil {
			return err
		}
	}
	f.n.synced = b
	f.n.sizes = nil
	return nil
}

// Datasync is Sync: the model keeps a file's whole content at its last
// sync (fdatasync makes the data and size durable, which is all the model
// has of a file).
func (f *file) Datasync() error { return f.Sync() }

// content reads the whole real file through its descriptor (reopened
// read-only through /proc when it was opened write-only).
func (f *file) content() ([]byte, error) {
	var r interface {
		io.ReaderAt
		Stat() (os.FileInfo, error)
	} = f.f
	if !f.readable {
		osf := f.f.OSFile()
		if osf == nil {
			return nil, &os.PathError{Op: "sync", Path: f.Name(), Err: errors.New("crashfs: cannot read a write-only file without an OS file")}
		}
		rf, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(osf.Fd())))
		if err != nil {
			return nil, err
		}
		defer rf.Close()
		r = rf
	}
	fi, err := r.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	n, err := r.ReadAt(b, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(b)) {
		return nil, &os.PathError{Op: "sync", Path: f.Name(), Err: fmt.Errorf("crashfs: read the file: %w", err)}
	}
	return b, nil
}
