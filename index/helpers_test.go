package index

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/internal/vfs"
)

const testBase = 1000

// noSpaceFS is vfs.Default whose files' Allocate fails with ENOSPC while
// full is set, as on a full disk.
type noSpaceFS struct {
	vfs.FS
	full atomic.Bool
}

type noSpaceFile struct {
	vfs.File
	fs *noSpaceFS
}

func (fs *noSpaceFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := fs.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSpaceFile{File: f, fs: fs}, nil
}

func (f noSpaceFile) Allocate(off, n int64) error {
	if f.fs.full.Load() {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Allocate(off, n)
}

func tempPath(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(t.TempDir(), name)
}

func openOffset(t testing.TB, path string, opts Options) *OffsetIndex {
	t.Helper()
	x, err := OpenOffset(path, testBase, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = x.Close() })
	return x
}

func openTime(t testing.TB, path string, opts Options) *TimeIndex {
	t.Helper()
	x, err := OpenTime(path, testBase, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = x.Close() })
	return x
}

// offsetEntry is the i-th entry of the standard test sequence.
func offsetEntry(i int) OffsetPosition {
	return OffsetPosition{Offset: testBase + 10*int64(i+1), Position: 4096 * int64(i+1)}
}

func timeEntry(i int) TimeOffset {
	return TimeOffset{Timestamp: 1_700_000_000_000 + 1000*int64(i), Offset: testBase + 10*int64(i+1)}
}

func fillOffset(t testing.TB, x *OffsetIndex, n int) []OffsetPosition {
	t.Helper()
	want := make([]OffsetPosition, 0, n)
	for i := range n {
		e := offsetEntry(i)
		require.NoError(t, x.Append(e.Offset, e.Position))
		want = append(want, e)
	}
	return want
}

func fillTime(t testing.TB, x *TimeIndex, n int) []TimeOffset {
	t.Helper()
	want := make([]TimeOffset, 0, n)
	for i := range n {
		e := timeEntry(i)
		require.NoError(t, x.Append(e.Timestamp, e.Offset))
		want = append(want, e)
	}
	return want
}

func offsetEntries(x *OffsetIndex) []OffsetPosition {
	out := make([]OffsetPosition, 0, x.Len())
	for i := range x.Len() {
		out = append(out, x.Entry(i))
	}
	return out
}

func timeEntries(x *TimeIndex) []TimeOffset {
	out := make([]TimeOffset, 0, x.Len())
	for i := range x.Len() {
		out = append(out, x.Entry(i))
	}
	return out
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o640))
}

// rawOffset encodes entries as an offset index file's bytes.
func rawOffset(entries ...[2]uint32) []byte {
	b := make([]byte, len(entries)*OffsetEntrySize)
	for i, e := range entries {
		encodeOffsetEntry(b[i*OffsetEntrySize:], e[0], e[1])
	}
	return b
}

type rawTimeEntry struct {
	ts  int64
	rel uint32
}

func rawTime(entries ...rawTimeEntry) []byte {
	b := make([]byte, len(entries)*TimeEntrySize)
	for i, e := range entries {
		encodeTimeEntry(b[i*TimeEntrySize:], e.ts, e.rel)
	}
	return b
}

func osFS() vfs.FS { return vfs.Default }
