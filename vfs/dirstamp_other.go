//go:build !linux

package vfs

// Elsewhere no file system's change times are vouched for: directories
// are always listed.
func statDirStamp(dir string) (DirStamp, bool, error) {
	return DirStamp{}, false, ErrNoDirStamp
}
