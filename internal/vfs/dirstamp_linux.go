package vfs

import (
	"fmt"
	"os"

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
	// The clock is read before the stat: a change after the stat falls at
	// or after this time. (Read after, a change between the two could
	// fall in the directory's tick and look settled.)
	var now unix.Timespec
	clockErr := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &now)
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return DirStamp{}, false, &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return DirStamp{}, false, fmt.Errorf("%w: %s is not a directory", ErrNoDirStamp, dir)
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
	if st.Ctim.Nsec == 0 {
		return DirStamp{}, false, fmt.Errorf("%w: %s has a change time in whole seconds", ErrNoDirStamp, dir)
	}
	s := DirStamp{Dev: uint64(st.Dev), Ino: st.Ino, Ctime: st.Ctim.Nano()}
	// Change times come from the coarse clock (the time of the last tick),
	// or a finer one on kernels with multigrain timestamps, never earlier
	// than the coarse clock: once the coarse clock is past s.Ctime, any
	// later change gets a later time.
	return s, clockErr == nil && now.Nano() > s.Ctime, nil
}
