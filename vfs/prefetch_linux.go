package vfs

import (
	"os"
	"unsafe"

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

func cachedPages(path string) ([]bool, error) {
	f, err := openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return nil, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return nil, &os.PathError{Op: "mincore", Path: path, Err: errno}
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 != 0
	}
	return out, nil
}
