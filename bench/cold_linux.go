package bench

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dropFromPageCache drops the cached pages of every file in dir
// (posix_fadvise DONTNEED; the files are closed and fsynced, so their
// pages are clean and go). Directory entries and inodes stay cached.
func dropFromPageCache(dir string) (bool, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return true, err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return true, err
		}
		err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		_ = f.Close()
		if err != nil {
			return true, err
		}
	}
	return true, nil
}
