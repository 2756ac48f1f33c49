//go:build !unix

package vfs

import "os"

// openFile is os.OpenFile where open_unix.go's shortcut is not offered.
func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
