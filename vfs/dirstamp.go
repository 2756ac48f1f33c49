package vfs

import "errors"

// DirStamp identifies the entries of a directory at one moment: the
// directory's device and inode numbers and its change time (ctime, in
// nanoseconds since the Unix epoch), within one mount of its file system
// during one boot. Creating, removing or renaming an entry moves the
// change time forward, as chmod, chown and utimes do; no program can set
// it back (utimes sets the modification time, and moves the change time
// to now). A directory copied or restored elsewhere is another inode. An
// offline repair (fsck) can remove entries without moving the change
// time, but it needs the file system unmounted: the mount (its unique
// mount ID, never reused during a boot) or the boot is another. So a
// directory whose stamp equals one taken earlier holds the same entries,
// provided no change could have been given the same change time:
// StatDirStamp's settled says so.
type DirStamp struct {
	Dev   uint64
	Ino   uint64
	Ctime int64
	Mount uint64   // the mount's unique ID (statx STATX_MNT_ID_UNIQUE)
	Boot  [16]byte // the kernel's boot ID
}

// ErrNoDirStamp is StatDirStamp's error when the directory's change times
// cannot be relied on: a file system other than the OS's (a test's fault
// injection, say), one that keeps whole seconds only, or one not known to
// take its times from the local clock (a network file system, whose
// server's clock is not ours); or when the kernel gives no unique mount
// ID (Linux before 6.8).
var ErrNoDirStamp = errors.New("vfs: no reliable directory change time")

// StatDirStamp returns the stamp of directory dir, and settled: whether
// every later change of its entries will give it a different stamp. A
// change takes its time from the kernel's clock, which advances in ticks
// (1 to 10 ms); it is settled when that clock has already passed the
// directory's change time, so that no later change can fall on the same
// time. Right after a change it usually has not: a caller records a stamp
// only when it is settled, and tries again later otherwise.
func StatDirStamp(fsys FS, dir string) (s DirStamp, settled bool, err error) {
	if _, ok := fsys.(osFS); !ok {
		return DirStamp{}, false, ErrNoDirStamp
	}
	return statDirStamp(dir)
}
