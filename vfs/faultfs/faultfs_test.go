package faultfs_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/edsrzf/mmap-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/faultfs"
)

func TestOpString(t *testing.T) {
	assert.Equal(t, "sync", faultfs.OpSync.String())
	assert.Equal(t, "create|rename", (faultfs.OpCreate | faultfs.OpRename).String())
	assert.Equal(t, "none", faultfs.Op(0).String())
}

func TestFailNthCall(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New(vfs.Default)
	fs.FailNth(faultfs.OpSync, 1, nil)
	f, err := fs.OpenFile(filepath.Join(dir, "a"), os.O_RDWR|os.O_CREATE, 0o640)
	require.NoError(t, err)
	defer f.Close()
	assert.NoError(t, f.Sync(), "call 0 passes")
	err = f.Sync()
	assert.ErrorIs(t, err, syscall.EIO, "call 1 fails")
	assert.Contains(t, err.Error(), filepath.Join(dir, "a"), "the error names the file")
	assert.Contains(t, err.Error(), "sync")
	assert.NoError(t, f.Sync(), "call 2 passes: only the Nth fails")
	assert.Equal(t, 1, fs.Injected())
	assert.Equal(t, 3, fs.Calls(faultfs.OpSync))
	assert.Equal(t, 1, fs.Calls(faultfs.OpCreate))
	assert.Contains(t, fs.LastInjected(), "sync ")
}

func TestRules(t *testing.T) {
	enospc := syscall.ENOSPC
	tests := []struct {
		name  string
		rule  faultfs.Rule
		call  func(fs *faultfs.FS, dir string) error
		want  error // nil: the call succeeds
		count int   // faults injected
	}{
		{"create fails, open of an existing file passes",
			faultfs.Rule{Ops: faultfs.OpCreate, Every: true, Err: enospc},
			func(fs *faultfs.FS, dir string) error {
				f, err := fs.OpenFile(filepath.Join(dir, "existing"), os.O_RDWR|os.O_CREATE, 0o640)
				if err != nil {
					return err
				}
				f.Close()
				_, err = fs.OpenFile(filepath.Join(dir, "new"), os.O_RDWR|os.O_CREATE, 0o640)
				return err
			}, enospc, 1},
		{"path filter", faultfs.Rule{Ops: faultfs.OpRemove, Path: ".log", Every: true},
			func(fs *faultfs.FS, dir string) error {
				if err := fs.Remove(filepath.Join(dir, "existing")); err != nil {
					return err
				}
				return fs.Remove(filepath.Join(dir, "x.log"))
			}, syscall.EIO, 1},
		{"rename names both paths", faultfs.Rule{Ops: faultfs.OpRename, Path: "target"},
			func(fs *faultfs.FS, dir string) error {
				return fs.Rename(filepath.Join(dir, "existing"), filepath.Join(dir, "target"))
			}, syscall.EIO, 1},
		{"every from nth", faultfs.Rule{Ops: faultfs.OpMkdir, Nth: 1, Every: true},
			func(fs *faultfs.FS, dir string) error {
				var errs []error
				for _, d := range []string{"d1", "d2", "d3"} {
					errs = append(errs, fs.MkdirAll(filepath.Join(dir, d), 0o750))
				}
				if errs[0] != nil {
					return errors.New("first mkdir should pass")
				}
				return errors.Join(errs...)
			}, syscall.EIO, 2},
		{"syncdir", faultfs.Rule{Ops: faultfs.OpSyncDir, Err: syscall.ENOSPC},
			func(fs *faultfs.FS, dir string) error { return fs.SyncDir(dir) }, enospc, 1},
		{"readdir and lstat", faultfs.Rule{Ops: faultfs.OpReadDir | faultfs.OpLstat, Every: true},
			func(fs *faultfs.FS, dir string) error {
				_, err1 := fs.ReadDir(dir)
				_, err2 := fs.Lstat(dir)
				if err1 == nil || err2 == nil {
					return errors.New("want both to fail")
				}
				return err1
			}, syscall.EIO, 2},
		{"any error value", faultfs.Rule{Ops: faultfs.OpAllocate, Err: io.ErrUnexpectedEOF},
			func(fs *faultfs.FS, dir string) error {
				f, err := fs.OpenFile(filepath.Join(dir, "existing"), os.O_RDWR, 0)
				if err != nil {
					return err
				}
				defer f.Close()
				return f.Allocate(0, 4096)
			}, io.ErrUnexpectedEOF, 1},
		{"noop skips the call", faultfs.Rule{Ops: faultfs.OpRemove, Every: true, Noop: true},
			func(fs *faultfs.FS, dir string) error {
				if err := fs.Remove(filepath.Join(dir, "existing")); err != nil {
					return err
				}
				_, err := os.Stat(filepath.Join(dir, "existing"))
				return err
			}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "existing"), []byte("x"), 0o640))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "x.log"), []byte("x"), 0o640))
			fs := faultfs.New(nil)
			fs.Add(tt.rule)
			err := tt.call(fs, dir)
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.want)
				assert.Contains(t, err.Error(), dir, "the error names the path")
				assert.Contains(t, err.Error(), "injected")
			}
			assert.Equal(t, tt.count, fs.Injected())
		})
	}
}

func TestShortWrite(t *testing.T) {
	for _, at := range []bool{false, true} {
		dir := t.TempDir()
		fs := faultfs.New(vfs.Default)
		fs.Add(faultfs.Rule{Ops: faultfs.OpWrite | faultfs.OpWriteAt, ShortWrite: true})
		f, err := fs.OpenFile(filepath.Join(dir, "f"), os.O_RDWR|os.O_CREATE, 0o640)
		require.NoError(t, err)
		var n int
		if at {
			n, err = f.WriteAt([]byte("0123456789"), 0)
		} else {
			n, err = f.Write([]byte("0123456789"))
		}
		assert.Equal(t, 5, n)
		assert.ErrorIs(t, err, syscall.ENOSPC)
		assert.True(t, vfs.IsNoSpace(err))
		require.NoError(t, f.Close())
		b, err := os.ReadFile(filepath.Join(dir, "f"))
		require.NoError(t, err)
		assert.Equal(t, "01234", string(b), "half the buffer reached the file")
	}
}

func TestOSFileIsTheRealFile(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New(vfs.Default)
	fs.FailAll(faultfs.OpWriteAt, "", syscall.EIO)
	f, err := fs.OpenFile(filepath.Join(dir, "m"), os.O_RDWR|os.O_CREATE, 0o640)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Truncate(4096))
	osf := f.OSFile()
	require.NotNil(t, osf)
	m, err := mmap.Map(osf, mmap.RDWR, 0)
	require.NoError(t, err, "mmap works through the wrapper")
	copy(m, "mapped")
	require.NoError(t, m.Unmap())
	buf := make([]byte, 6)
	_, err = f.ReadAt(buf, 0)
	require.NoError(t, err)
	assert.Equal(t, "mapped", string(buf))
	_, err = f.WriteAt([]byte("x"), 0)
	assert.ErrorIs(t, err, syscall.EIO)
	assert.Equal(t, filepath.Join(dir, "m"), f.Name())
}

// TestSweep is the loop the package exists for: fail the i-th call until
// a workload runs with nothing left to inject.
func TestSweep(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New(vfs.Default)
	workload := func() error {
		return vfs.WriteFileAtomic(fs, filepath.Join(dir, "ckpt"), []byte("v"), 0o640)
	}
	require.NoError(t, workload())
	total := fs.Calls(faultfs.AllOps)
	require.Positive(t, total)
	failures := 0
	for i := 0; ; i++ {
		fs.Reset()
		fs.FailNth(faultfs.AllOps, i, nil)
		err := workload()
		if fs.Injected() == 0 {
			require.NoError(t, err)
			assert.Equal(t, total, i, "the sweep stops after the last call")
			break
		}
		if err != nil {
			failures++
			assert.ErrorIs(t, err, syscall.EIO)
		}
	}
	assert.Positive(t, failures)
}

func TestConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New(vfs.Default)
	fs.Add(faultfs.Rule{Ops: faultfs.OpSync, Nth: 50, Every: true})
	f, err := fs.OpenFile(filepath.Join(dir, "c"), os.O_RDWR|os.O_CREATE, 0o640)
	require.NoError(t, err)
	defer f.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				_, _ = f.ReadAt(make([]byte, 1), 0)
				if f.Sync() != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 50, failed, "calls 50 to 99 fail")
	assert.Equal(t, 50, fs.Injected())
	assert.Equal(t, 100, fs.Calls(faultfs.OpRead))
}
