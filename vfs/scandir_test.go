package vfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanned lists dir with ScanDir: name to type.
func scanned(t *testing.T, fsys FS, dir string) map[string]fs.FileMode {
	t.Helper()
	got := map[string]fs.FileMode{}
	require.NoError(t, ScanDir(fsys, dir, func(name string, typ fs.FileMode) error {
		got[strings.Clone(name)] = typ
		return nil
	}))
	return got
}

// TestScanDirAsReadDir: ScanDir sees what os.ReadDir sees, names and
// types, over several getdents buffers (5,000 entries), a 255-byte name,
// a directory, a symbolic link and a named pipe.
func TestScanDirAsReadDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 5000 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", i)), nil, 0o640))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, strings.Repeat("n", 255)), nil, 0o640))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o750))
	require.NoError(t, os.Symlink("sub", filepath.Join(dir, "link")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o640))

	want := map[string]fs.FileMode{}
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		want[e.Name()] = e.Type()
	}
	require.Len(t, want, 5004)
	assert.Equal(t, want, scanned(t, Default, dir))
	assert.Equal(t, want, scanned(t, readDirOnly{Default}, dir), "the ReadDir path")
	assert.Equal(t, fs.ModeSymlink, want["link"])

	stop := fmt.Errorf("stop")
	calls := 0
	err = ScanDir(Default, dir, func(string, fs.FileMode) error { calls++; return stop })
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, 1, calls)

	err = ScanDir(Default, filepath.Join(dir, "missing"), func(string, fs.FileMode) error { return nil })
	assert.ErrorIs(t, err, fs.ErrNotExist)
	err = ScanDir(Default, filepath.Join(dir, "fifo"), func(string, fs.FileMode) error { return nil })
	assert.Error(t, err, "not a directory")
}

// readDirOnly hides the OS file system's type, so ScanDir takes the
// ReadDir path.
type readDirOnly struct{ FS }
