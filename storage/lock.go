package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// dirLock is an exclusive advisory lock (flock) on a directory itself, so
// that no lock file is added to the layout. The kernel drops it when the
// process dies, so a crash never leaves a stale lock.
type dirLock struct{ f *os.File }

func lockDir(dir string) (*dirLock, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("storage: lock %s: %w", dir, err)
	}
	return &dirLock{f: f}, nil
}

// unlock releases the lock; it is safe on a nil lock and twice.
func (d *dirLock) unlock() {
	if d != nil && d.f != nil {
		d.f.Close()
		d.f = nil
	}
}
