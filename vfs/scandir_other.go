//go:build !linux

package vfs

import "io/fs"

func scanOSDir(dir string, fn func(name string, typ fs.FileMode) error) error {
	return scanByReadDir(Default, dir, fn)
}
