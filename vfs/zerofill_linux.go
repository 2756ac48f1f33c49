package vfs

import "golang.org/x/sys/unix"

// OverwritesSyncCheaply reports whether f is on a file system where an
// fdatasync after writes over blocks already written and made durable
// flushes the data alone, while one after appends (a new size) or writes
// into fallocated blocks (unwritten extents to convert) also commits the
// journal: ext4 and XFS. Copy-on-write file systems (btrfs, ZFS) allocate
// new blocks for every overwrite anyway, and network file systems may
// report a full disk only at writeback: there, writing zeros ahead of
// the data to overwrite later costs writes and gains nothing.
func OverwritesSyncCheaply(f File) bool {
	if f == nil {
		return false
	}
	osf := f.OSFile()
	if osf == nil {
		return false
	}
	var sf unix.Statfs_t
	if err := unix.Fstatfs(int(osf.Fd()), &sf); err != nil {
		return false
	}
	switch int64(sf.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC:
		return true
	}
	return false
}
