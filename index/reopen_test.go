package index

import (
	"bytes"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReopen checks that a writable reopen keeps exactly the entries, after
// a clean Close (file trimmed) and after a crash (file left preallocated).
func TestReopen(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := map[bool]string{false: "after Close", true: "after a crash"}[crash]
		t.Run("offset "+name, func(t *testing.T) { testReopen(t, offsetKind, crash) })
		t.Run("time "+name, func(t *testing.T) { testReopen(t, timeKind, crash) })
	}
}

func testReopen[E entry, X testIndex[E]](t *testing.T, k kind[E, X], crash bool) {
	const maxBytes = 1 << 16
	capBytes := int64(maxBytes / k.size * k.size) // MaxBytes rounded down to whole entries
	path := tempPath(t, k.file)
	x, err := k.open(path, testBase, Options{Writable: true, MaxBytes: maxBytes})
	require.NoError(t, err)
	want := fill(t, x, 100, k.entry)
	if crash {
		// The file as a crash leaves it: preallocated, not trimmed.
		copyFile(t, path, path+".crash")
		require.NoError(t, x.Close())
		path += ".crash"
		require.Equal(t, capBytes, fileSize(t, path))
	} else {
		require.NoError(t, x.Close())
		require.Equal(t, int64(100*k.size), fileSize(t, path))
	}
	y := openKind(t, k, path, Options{Writable: true, MaxBytes: maxBytes})
	assert.Equal(t, capBytes, fileSize(t, path))
	assert.Equal(t, want, entriesOf[E](y))
	assert.NoError(t, k.sane(y))
	assert.False(t, y.Full())
	a, b := want[99].fields()
	assert.ErrorIs(t, y.Append(a, b+1), ErrOutOfOrder)
	e := k.entry(100)
	require.NoError(t, y.Append(e.fields()))
	assert.Equal(t, append(want, e), entriesOf[E](y))
	require.NoError(t, y.Close())
	z := openKind(t, k, path, Options{})
	assert.Equal(t, append(want, e), entriesOf[E](z))
}

func TestReopenEmptyCreatedFile(t *testing.T) {
	path := tempPath(t, "00.index")
	x, err := OpenOffset(path, testBase, Options{Writable: true})
	require.NoError(t, err)
	require.NoError(t, x.Close())
	assert.Equal(t, int64(0), fileSize(t, path), "trimmed to nothing")
	y := openOffset(t, path, Options{Writable: true})
	assert.Equal(t, 0, y.Len())
	assert.Equal(t, int64(DefaultMaxBytes), fileSize(t, path))
}

func TestReopenLargerThanMaxBytes(t *testing.T) {
	path := tempPath(t, "00.index")
	x, err := OpenOffset(path, testBase, Options{Writable: true, MaxBytes: 4096})
	require.NoError(t, err)
	want := fillOffset(t, x, 10)
	copyFile(t, path, path+".crash") // 4096 bytes, 10 entries then zeros
	require.NoError(t, x.Close())

	for _, p := range []string{path, path + ".crash"} {
		y := openOffset(t, p, Options{Writable: true, MaxBytes: 5 * OffsetEntrySize})
		assert.Equal(t, want, offsetEntries(y))
		assert.True(t, y.Full())
		e := offsetEntry(10)
		assert.ErrorIs(t, y.Append(e.Offset, e.Position), ErrFull)
		assert.Equal(t, want[4], y.Lookup(want[4].Offset))
		require.NoError(t, y.Close())
		assert.Equal(t, int64(10*OffsetEntrySize), fileSize(t, p))
	}
}

func TestSeal(t *testing.T) {
	t.Run("offset", func(t *testing.T) {
		path := tempPath(t, "00.index")
		x := openOffset(t, path, Options{Writable: true})
		want := fillOffset(t, x, 2000)
		require.NoError(t, x.Sync())
		require.NoError(t, x.Seal())
		assert.Equal(t, int64(2000*OffsetEntrySize), fileSize(t, path))
		assert.True(t, x.Full())
		assert.Equal(t, want, offsetEntries(x))
		for i, e := range want {
			require.Equal(t, e, x.Lookup(e.Offset+5), "entry %d", i)
		}
		e := offsetEntry(2000)
		assert.ErrorIs(t, x.Append(e.Offset, e.Position), ErrReadOnly)
		assert.ErrorIs(t, x.TruncateTo(want[5].Offset), ErrReadOnly)
		assert.NoError(t, x.TruncateTo(math.MaxInt64), "nothing to drop")
		assert.ErrorIs(t, x.Reset(), ErrReadOnly)
		assert.NoError(t, x.Seal(), "sealing twice")
		assert.NoError(t, x.Sync())
		assert.NoError(t, x.SanityCheck(math.MaxUint32))
		require.NoError(t, x.Close())
		assert.Equal(t, int64(2000*OffsetEntrySize), fileSize(t, path))
	})
	t.Run("time", func(t *testing.T) {
		path := tempPath(t, "00.timeindex")
		x := openTime(t, path, Options{Writable: true})
		want := fillTime(t, x, 2000)
		require.NoError(t, x.Seal())
		assert.Equal(t, int64(2000*TimeEntrySize), fileSize(t, path))
		assert.Equal(t, want, timeEntries(x))
		for _, e := range want {
			got, ok := x.Lookup(e.Timestamp + 1)
			require.True(t, ok)
			require.Equal(t, e, got)
		}
	})
	t.Run("empty", func(t *testing.T) {
		path := tempPath(t, "00.index")
		x := openOffset(t, path, Options{Writable: true})
		require.NoError(t, x.Seal())
		assert.Equal(t, int64(0), fileSize(t, path))
		assert.Equal(t, OffsetPosition{Offset: testBase}, x.Lookup(math.MaxInt64))
		assert.NoError(t, x.Reset(), "already empty")
		assert.NoError(t, x.Close())
	})
}

// TestReadOnlyOpenNeverWrites opens files, valid and damaged, read-only and
// calls every method: the bytes and size stay as they were.
func TestReadOnlyOpenNeverWrites(t *testing.T) {
	valid := rawOffset([2]uint32{10, 4096}, [2]uint32{20, 8192})
	files := []struct {
		name string
		data []byte
	}{
		{"empty", []byte{}},
		{"valid", valid},
		{"partial entry", append(valid, 1, 2, 3)},
		{"out of order", rawOffset([2]uint32{20, 8192}, [2]uint32{10, 4096})},
		{"preallocated tail", append(valid, make([]byte, 4096)...)},
		{"garbage", bytes.Repeat([]byte{0xff, 0x00, 0x7f}, 1001)},
	}
	for _, tt := range files {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opath, tpath := dir+"/00.index", dir+"/00.timeindex"
			require.NoError(t, os.WriteFile(opath, tt.data, 0o640))
			require.NoError(t, os.WriteFile(tpath, tt.data, 0o640))
			before := map[string]os.FileInfo{}
			for _, p := range []string{opath, tpath} {
				fi, err := os.Stat(p)
				require.NoError(t, err)
				before[p] = fi
			}

			x, err := OpenOffset(opath, testBase, Options{})
			require.NoError(t, err)
			assert.Equal(t, len(tt.data)/OffsetEntrySize, x.Len())
			_ = x.SanityCheck(1 << 20)
			_ = x.Lookup(testBase + 15)
			_ = x.Lookup(math.MaxInt64)
			_, _ = x.Last()
			assert.True(t, x.Full())
			assert.Error(t, x.Append(math.MaxUint32, math.MaxUint32))
			_ = x.TruncateTo(testBase + 15)
			_ = x.TruncateTo(testBase)
			_ = x.Reset()
			assert.NoError(t, x.Seal())
			assert.NoError(t, x.Sync())
			require.NoError(t, x.Close())

			y, err := OpenTime(tpath, testBase, Options{})
			require.NoError(t, err)
			assert.Equal(t, len(tt.data)/TimeEntrySize, y.Len())
			_ = y.SanityCheck(testBase, testBase+100)
			_, _ = y.Lookup(0)
			_, _ = y.Lookup(math.MaxInt64)
			assert.Error(t, y.Append(math.MaxInt64, testBase+math.MaxUint32))
			_ = y.TruncateTo(testBase + 1)
			_ = y.Reset()
			assert.NoError(t, y.Seal())
			require.NoError(t, y.Close())

			for _, p := range []string{opath, tpath} {
				got, err := os.ReadFile(p)
				require.NoError(t, err)
				assert.Equal(t, tt.data, got, p)
				after, err := os.Stat(p)
				require.NoError(t, err)
				assert.Equal(t, before[p].Size(), after.Size(), p)
				assert.Equal(t, before[p].ModTime(), after.ModTime(), p)
			}
		})
	}
}

// A followed index is copied into memory up to its first all-zero entry,
// a chunk at a time: the copy holds exactly the entries before the zero
// tail of a preallocated file, across chunk boundaries (the time index's
// 12-byte entries do not divide 64 KiB), at the end of a file without a
// zero tail, and in a file whose size is not a multiple of the entry size.
func TestFollowedCopyStopsAtZeroTail(t *testing.T) {
	per := func(size int) []int { // entry counts around followChunk
		n := followChunk / size
		return []int{0, 1, n - 1, n, n + 1, 3*n + 7}
	}
	t.Run("offset", func(t *testing.T) {
		for _, n := range per(OffsetEntrySize) {
			for _, tail := range []int{0, 5, 3 * followChunk} {
				raw := make([][2]uint32, n)
				for i := range raw {
					raw[i] = [2]uint32{uint32(i + 1), uint32(4096 * (i + 1))}
				}
				data := append(rawOffset(raw...), make([]byte, tail)...)
				path := tempPath(t, "00.index")
				require.NoError(t, os.WriteFile(path, data, 0o640))
				x := openOffset(t, path, Options{Follow: true})
				require.Equal(t, n, x.Len(), "%d entries, %d zero bytes after", n, tail)
				if n > 0 {
					assert.Equal(t, OffsetPosition{Offset: testBase + int64(n), Position: 4096 * int64(n)}, x.Entry(n-1))
					assert.Equal(t, x.Entry(n/2), x.Lookup(x.Entry(n/2).Offset))
				}
			}
		}
	})
	t.Run("time", func(t *testing.T) {
		for _, n := range per(TimeEntrySize) {
			for _, tail := range []int{0, 5, 3 * followChunk} {
				raw := make([]rawTimeEntry, n)
				for i := range raw {
					raw[i] = rawTimeEntry{int64(1000 + i), uint32(i + 1)}
				}
				data := append(rawTime(raw...), make([]byte, tail)...)
				path := tempPath(t, "00.timeindex")
				require.NoError(t, os.WriteFile(path, data, 0o640))
				x := openTime(t, path, Options{Follow: true})
				require.Equal(t, n, x.Len(), "%d entries, %d zero bytes after", n, tail)
				if n > 0 {
					last, ok := x.Last()
					require.True(t, ok)
					assert.Equal(t, TimeOffset{Timestamp: int64(1000 + n - 1), Offset: testBase + int64(n)}, last)
				}
			}
		}
	})
}
