package vfs_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/faultfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MkdirAllDurable fsyncs the parent of every directory it creates, and
// nothing when the path exists.
func TestMkdirAllDurable(t *testing.T) {
	root := t.TempDir()
	fsys := faultfs.New(vfs.Default)
	require.NoError(t, vfs.MkdirAllDurable(fsys, filepath.Join(root, "a", "b", "c"), 0o750))
	assert.DirExists(t, filepath.Join(root, "a", "b", "c"))
	assert.Equal(t, 3, fsys.Calls(faultfs.OpSyncDir), "the parents of a, b and c")
	fsys.Reset()
	require.NoError(t, vfs.MkdirAllDurable(fsys, filepath.Join(root, "a", "b", "c"), 0o750))
	assert.Zero(t, fsys.Calls(faultfs.OpSyncDir|faultfs.OpMkdir))

	require.NoError(t, os.WriteFile(filepath.Join(root, "file"), nil, 0o640))
	assert.Error(t, vfs.MkdirAllDurable(fsys, filepath.Join(root, "file", "x"), 0o750), "a file in the way")
}

// Concurrent WriteFileAtomic calls on one path never collide: each uses a
// temporary file of its own, and the file holds one of the values whole.
func TestWriteFileAtomicConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt")
	var wg sync.WaitGroup
	errs := make(chan error, 16*20)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				errs <- vfs.WriteFileAtomic(vfs.Default, path, []byte("value-of-some-length"), 0o640)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "value-of-some-length", string(b))
	left, err := filepath.Glob(filepath.Join(dir, "*"+vfs.TempSuffix))
	require.NoError(t, err)
	assert.Empty(t, left)
}
