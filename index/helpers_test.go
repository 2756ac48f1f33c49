package index

import (
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs"
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

// testIndex is what both kinds of index do alike, as the tests use it.
type testIndex[E entry] interface {
	Append(a, b int64) error
	Len() int
	Entry(i int) E
	Last() (E, bool)
	Full() bool
	TruncateTo(offset int64) error
	Reset() error
	Sync() error
	Close() error
}

// kind is one kind of index, for the tests that run on both.
type kind[E entry, X testIndex[E]] struct {
	file   string                                                       // a file name for it
	size   int                                                          // its entry size
	open   func(path string, baseOffset int64, opts Options) (X, error) // OpenOffset or OpenTime
	decode func(b []byte, baseOffset int64) ([]E, error)                // DecodeOffsetEntries or DecodeTimeEntries
	entry  func(i int) E                                                // the standard test sequence
	// sane runs SanityCheck with bounds that hold every entry of the
	// standard test sequence.
	sane func(x X) error
}

var (
	offsetKind = kind[OffsetPosition, *OffsetIndex]{
		file: "00.index", size: OffsetEntrySize, open: OpenOffset, decode: DecodeOffsetEntries, entry: offsetEntry,
		sane: func(x *OffsetIndex) error { return x.SanityCheck(math.MaxUint32) },
	}
	timeKind = kind[TimeOffset, *TimeIndex]{
		file: "00.timeindex", size: TimeEntrySize, open: OpenTime, decode: DecodeTimeEntries, entry: timeEntry,
		sane: func(x *TimeIndex) error { return x.SanityCheck(testBase, math.MaxInt64) },
	}
)

// openKind opens the index of kind k at path with base offset testBase,
// and closes it when the test ends.
func openKind[E entry, X testIndex[E]](t testing.TB, k kind[E, X], path string, opts Options) X {
	t.Helper()
	x, err := k.open(path, testBase, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = x.Close() })
	return x
}

func openOffset(t testing.TB, path string, opts Options) *OffsetIndex {
	t.Helper()
	return openKind(t, offsetKind, path, opts)
}

func openTime(t testing.TB, path string, opts Options) *TimeIndex {
	t.Helper()
	return openKind(t, timeKind, path, opts)
}

// offsetEntry is the i-th entry of the standard test sequence.
func offsetEntry(i int) OffsetPosition {
	return OffsetPosition{Offset: testBase + 10*int64(i+1), Position: 4096 * int64(i+1)}
}

func timeEntry(i int) TimeOffset {
	return TimeOffset{Timestamp: 1_700_000_000_000 + 1000*int64(i), Offset: testBase + 10*int64(i+1)}
}

// fill appends entries 0 to n-1 of a test sequence and returns them.
func fill[E entry](t testing.TB, x testIndex[E], n int, entryAt func(int) E) []E {
	t.Helper()
	want := make([]E, 0, n)
	for i := range n {
		e := entryAt(i)
		require.NoError(t, x.Append(e.fields()))
		want = append(want, e)
	}
	return want
}

func fillOffset(t testing.TB, x *OffsetIndex, n int) []OffsetPosition {
	t.Helper()
	return fill(t, x, n, offsetEntry)
}

func fillTime(t testing.TB, x *TimeIndex, n int) []TimeOffset {
	t.Helper()
	return fill(t, x, n, timeEntry)
}

// entriesOf returns every entry in use.
func entriesOf[E entry](x testIndex[E]) []E {
	out := make([]E, 0, x.Len())
	for i := range x.Len() {
		out = append(out, x.Entry(i))
	}
	return out
}

func offsetEntries(x *OffsetIndex) []OffsetPosition { return entriesOf[OffsetPosition](x) }

func timeEntries(x *TimeIndex) []TimeOffset { return entriesOf[TimeOffset](x) }

// runReaders runs read(g, stopped) in goroutines g = 0, ..., n-1 while work
// runs in this one; then stopped returns true, and runReaders waits for the
// readers to return (also when work fails the test).
func runReaders(n int, read func(g int, stopped func() bool), work func()) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range n {
		wg.Go(func() { read(g, stop.Load) })
	}
	defer wg.Wait()
	defer stop.Store(true)
	work()
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
