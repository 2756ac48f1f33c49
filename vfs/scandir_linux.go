package vfs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"
)

// direntBufs holds getdents buffers between ScanDir calls.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// The layout of struct linux_dirent64: d_ino uint64, d_off int64,
// d_reclen uint16, d_type uint8, then d_name, NUL-terminated and padded.
const (
	direntReclen = 16
	direntType   = 18
	direntName   = 19
)

func scanOSDir(dir string, fn func(name string, typ fs.FileMode) error) error {
	f, err := openFile(dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	for {
		var n int
		var gerr error
		if err := conn.Read(func(fd uintptr) bool {
			for {
				n, gerr = syscall.Getdents(int(fd), buf)
				if gerr != syscall.EINTR {
					return true
				}
			}
		}); err != nil {
			return err
		}
		if gerr != nil {
			return &os.PathError{Op: "getdents", Path: dir, Err: gerr}
		}
		if n <= 0 {
			return nil
		}
		if err := scanDirents(dir, buf[:n], fn); err != nil {
			return err
		}
	}
}

// scanDirents calls fn for each entry of b, the output of one getdents.
func scanDirents(dir string, b []byte, fn func(name string, typ fs.FileMode) error) error {
	for len(b) > 0 {
		if len(b) < direntName {
			return fmt.Errorf("getdents %s: %d bytes left, less than an entry", dir, len(b))
		}
		reclen := int(binary.NativeEndian.Uint16(b[direntReclen:]))
		if reclen <= direntName || reclen > len(b) {
			return fmt.Errorf("getdents %s: entry length %d out of range", dir, reclen)
		}
		nameb := b[direntName:reclen]
		if i := bytes.IndexByte(nameb, 0); i >= 0 {
			nameb = nameb[:i]
		}
		ino := binary.NativeEndian.Uint64(b)
		typ, known := direntMode(b[direntType])
		b = b[reclen:]
		if ino == 0 || len(nameb) == 0 || string(nameb) == "." || string(nameb) == ".." {
			continue // an unused slot, or the directory itself or its parent
		}
		name := unsafe.String(&nameb[0], len(nameb)) // valid until the buffer is reused
		if !known {
			fi, err := os.Lstat(filepath.Join(dir, name))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // removed since it was listed
				}
				return err
			}
			typ = fi.Mode().Type()
		}
		if err := fn(name, typ); err != nil {
			return err
		}
	}
	return nil
}

// direntMode maps a d_type to type bits; known is false for DT_UNKNOWN
// (file systems that do not fill d_type), which needs an lstat.
func direntMode(t uint8) (mode fs.FileMode, known bool) {
	switch t {
	case syscall.DT_REG:
		return 0, true
	case syscall.DT_DIR:
		return fs.ModeDir, true
	case syscall.DT_LNK:
		return fs.ModeSymlink, true
	case syscall.DT_FIFO:
		return fs.ModeNamedPipe, true
	case syscall.DT_SOCK:
		return fs.ModeSocket, true
	case syscall.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case syscall.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}
