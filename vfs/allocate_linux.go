package vfs

import (
	"os"
	"syscall"
)

// Allocate reserves the blocks with fallocate(2); where the filesystem
// cannot (tmpfs on old kernels, some network filesystems), it grows the
// file instead.
func (f osFile) Allocate(off, n int64) error {
	if n <= 0 {
		return nil
	}
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, off, n)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EOPNOTSUPP || err == syscall.ENOSYS {
			// The filesystem cannot reserve blocks (tmpfs on old kernels,
			// some network filesystems): grow the file instead.
			return growTo(f.File, off+n)
		}
		if err != nil {
			return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		}
		return nil
	}
}

// Datasync is fdatasync(2).
func (f osFile) Datasync() error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
		}
		return nil
	}
}
