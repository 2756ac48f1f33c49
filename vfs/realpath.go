package vfs

import (
	"os"
	"path/filepath"
)

// RealPath returns path made absolute with every symbolic link resolved,
// the way the kernel resolves it: a relative path from the physical
// working directory, and ".." from the directory a link before it leads
// to. (filepath.Abs joins a relative path to $PWD, which names the
// working directory through the links a shell's cd went through, and
// cleans "link/.." away without looking at the link.)
func RealPath(path string) (string, error) {
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		if wd, err = filepath.EvalSymlinks(wd); err != nil {
			return "", err
		}
		path = wd + string(filepath.Separator) + path
	}
	return filepath.EvalSymlinks(path)
}
