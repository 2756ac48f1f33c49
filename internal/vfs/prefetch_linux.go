package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

func prefetch(path string, head, tail int64) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fd := int(f.Fd())
	if head < 0 {
		_ = unix.Fadvise(fd, 0, 0, unix.FADV_WILLNEED)
		return
	}
	if head > 0 {
		_ = unix.Fadvise(fd, 0, head, unix.FADV_WILLNEED)
	}
	if tail > 0 {
		fi, err := f.Stat()
		if err != nil {
			return
		}
		off := max(fi.Size()-tail, head)
		if off < fi.Size() {
			_ = unix.Fadvise(fd, off, fi.Size()-off, unix.FADV_WILLNEED)
		}
	}
}
