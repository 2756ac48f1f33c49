package vfs

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// stampFilesystems are the local file systems whose directory change
// times have nanoseconds and come from this kernel's clock.
var stampFilesystems = map[int64]bool{
	unix.EXT4_SUPER_MAGIC:  true, // ext2, ext3 and ext4 (whole seconds with 128-byte inodes: see below)
	unix.XFS_SUPER_MAGIC:   true,
	unix.BTRFS_SUPER_MAGIC: true,
	unix.TMPFS_MAGIC:       true,
	unix.F2FS_SUPER_MAGIC:  true,
}

func statDirStamp(dir string) (DirStamp, bool, error) {
	boot, err := bootID()
	if err != nil {
		return DirStamp{}, false, fmt.Errorf("%w: %v", ErrNoDirStamp, err)
	}
	// The clock is read before the stat: a change after the stat falls at
	// or after this time. (Read after, a change between the two could
	// fall in the directory's tick and look settled.)
	var now unix.Timespec
	clockErr := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &now)
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID_UNIQUE, &st); err != nil {
		return DirStamp{}, false, &os.PathError{Op: "statx", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return DirStamp{}, false, fmt.Errorf("%w: %s is not a directory", ErrNoDirStamp, dir)
	}
	if st.Mask&unix.STATX_MNT_ID_UNIQUE == 0 || st.Mask&unix.STATX_CTIME == 0 {
		return DirStamp{}, false, fmt.Errorf("%w: no unique mount ID or change time for %s", ErrNoDirStamp, dir)
	}
	var sf unix.Statfs_t
	if err := unix.Statfs(dir, &sf); err != nil {
		return DirStamp{}, false, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	if !stampFilesystems[int64(sf.Type)] {
		return DirStamp{}, false, fmt.Errorf("%w: %s is on file system type %#x", ErrNoDirStamp, dir, sf.Type)
	}
	// A time without nanoseconds is most likely from a file system that
	// keeps whole seconds (ext4 with small inodes): two changes in one
	// second would look the same.
	if st.Ctime.Nsec == 0 {
		return DirStamp{}, false, fmt.Errorf("%w: %s has a change time in whole seconds", ErrNoDirStamp, dir)
	}
	s := DirStamp{
		Dev:   unix.Mkdev(st.Dev_major, st.Dev_minor),
		Ino:   st.Ino,
		Ctime: st.Ctime.Sec*1e9 + int64(st.Ctime.Nsec),
		Mount: st.Mnt_id,
		Boot:  boot,
	}
	// Change times come from the coarse clock (the time of the last tick),
	// or a finer one on kernels with multigrain timestamps, never earlier
	// than the coarse clock: once the coarse clock is past s.Ctime, any
	// later change gets a later time.
	return s, clockErr == nil && now.Nano() > s.Ctime, nil
}

// bootID returns the kernel's boot ID (a random UUID per boot).
var bootID = sync.OnceValues(func() ([16]byte, error) {
	var id [16]byte
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return id, err
	}
	h := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
	if len(h) != 32 {
		return id, fmt.Errorf("boot ID %q", b)
	}
	if _, err := hex.Decode(id[:], []byte(h)); err != nil {
		return id, fmt.Errorf("boot ID %q: %v", b, err)
	}
	return id, nil
})
