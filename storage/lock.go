package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// dirLock is an exclusive advisory lock (flock) on a directory itself, so
// that no lock file is added to the layout. The kernel drops it when the
// process dies, so a crash never leaves a stale lock.
type dirLock struct{ f *os.File }

// lockBusyWait is how long lockDir keeps trying a lock that is busy
// before it answers ErrLocked. A writer holds its lock for as long as
// it runs, so waiting changes nothing there; but Check and WriterEnd
// take a shared lock for an instant to ask whether a writer holds the
// directory, and a writer opening in that instant must not fail.
const lockBusyWait = 100 * time.Millisecond

func lockDir(dir string) (*dirLock, error) {
	return lockDirWaiting(dir, lockBusyWait, nil)
}

// lockDirWaiting takes the lock, retrying every millisecond while it is
// busy, for up to wait; onBusy, when set, is called after each busy try.
func lockDirWaiting(dir string, wait time.Duration, onBusy func()) (*dirLock, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: lock %s: %w", dir, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &dirLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("storage: lock %s: %w", dir, err)
		}
		if onBusy != nil {
			onBusy()
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		time.Sleep(time.Millisecond)
	}
}

// unlock releases the lock; it is safe on a nil lock and twice.
func (d *dirLock) unlock() {
	if d != nil && d.f != nil {
		d.f.Close()
		d.f = nil
	}
}
