//go:build !linux

package vfs

// Allocate grows the file to off+n: without fallocate(2) the blocks are not
// reserved, so a later write through a memory map can still meet a full
// disk (as on Linux filesystems that cannot reserve blocks).
func (f osFile) Allocate(off, n int64) error {
	if n <= 0 {
		return nil
	}
	return growTo(f.File, off+n)
}

// Datasync is Sync where fdatasync(2) is not offered.
func (f osFile) Datasync() error { return f.Sync() }
