package index

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOffsetLookup(t *testing.T) {
	x := openOffset(t, tempPath(t, "00.index"), Options{Writable: true})
	want := fillOffset(t, x, 3) // offsets 1010, 1020, 1030
	none := OffsetPosition{Offset: testBase, Position: 0}
	tests := []struct {
		name   string
		target int64
		want   OffsetPosition
	}{
		{"below the base", 0, none},
		{"at the base", testBase, none},
		{"before the first entry", 1009, none},
		{"at the first entry", 1010, want[0]},
		{"between entries", 1015, want[0]},
		{"at a middle entry", 1020, want[1]},
		{"just before an entry", 1029, want[1]},
		{"at the last entry", 1030, want[2]},
		{"after the last entry", 5000, want[2]},
		{"past a uint32 relative offset", math.MaxInt64, want[2]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, x.Lookup(tt.target))
		})
	}
	last, ok := x.Last()
	assert.True(t, ok)
	assert.Equal(t, want[2], last)
	assert.Equal(t, want, offsetEntries(x))
	assert.Equal(t, int64(testBase), x.BaseOffset())
}

func TestOffsetLookupEmpty(t *testing.T) {
	for _, writable := range []bool{true, false} {
		path := tempPath(t, "00.index")
		require.NoError(t, os.WriteFile(path, nil, 0o640))
		x := openOffset(t, path, Options{Writable: writable})
		assert.Equal(t, 0, x.Len())
		assert.Equal(t, OffsetPosition{Offset: testBase}, x.Lookup(testBase+100))
		_, ok := x.Last()
		assert.False(t, ok)
		assert.NoError(t, x.SanityCheck(0))
		assert.Panics(t, func() { x.Entry(0) })
	}
}

// TestOffsetLookupWarmSection compares lookups with a plain search over
// more entries than the warm section holds, around its first entry too.
func TestOffsetLookupWarmSection(t *testing.T) {
	x := openOffset(t, tempPath(t, "00.index"), Options{Writable: true})
	const n = 5000
	want := fillOffset(t, x, n)
	check := func(target int64) {
		t.Helper()
		i := sort.Search(n, func(i int) bool { return want[i].Offset > target })
		exp := OffsetPosition{Offset: testBase}
		if i > 0 {
			exp = want[i-1]
		}
		require.Equal(t, exp, x.Lookup(target), "target %d", target)
	}
	warmFirst := want[n-warmBytes/OffsetEntrySize].Offset
	for d := int64(-25); d <= 25; d++ {
		check(warmFirst + d)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		check(testBase - 5 + r.Int64N(10*n+20))
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	ox := openOffset(t, tempPath(t, "00.index"), Options{Writable: true})
	fillOffset(t, ox, 3000)
	tx := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true})
	fillTime(t, tx, 3000)
	allocs := testing.AllocsPerRun(100, func() {
		_ = ox.Lookup(testBase + 12345)
		_ = ox.Lookup(testBase + 29995)
		_, _ = tx.Lookup(timeEntry(1234).Timestamp)
		_, _ = tx.Lookup(timeEntry(2999).Timestamp)
	})
	assert.Zero(t, allocs)
}

func TestOffsetTruncateTo(t *testing.T) {
	tests := []struct {
		name   string
		offset int64
		keep   int
	}{
		{"below the base", 0, 0},
		{"at the base", testBase, 0},
		{"at the first entry", 1010, 0},
		{"just after the first entry", 1011, 1},
		{"at a middle entry", 1030, 2},
		{"between entries", 1035, 3},
		{"at the last entry", 1050, 4},
		{"after the last entry", 9999, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempPath(t, "00.index")
			x := openOffset(t, path, Options{Writable: true, MaxBytes: 4096})
			want := fillOffset(t, x, 5)
			require.NoError(t, x.TruncateTo(tt.offset))
			assert.Equal(t, tt.keep, x.Len())
			assert.Equal(t, want[:tt.keep], offsetEntries(x))
			if tt.keep > 0 {
				assert.Equal(t, want[tt.keep-1], x.Lookup(math.MaxInt64))
			} else {
				assert.Equal(t, OffsetPosition{Offset: testBase}, x.Lookup(math.MaxInt64))
			}
			// The dropped entries are zero in the file: a reopen after a
			// crash finds exactly the kept ones, and appends continue.
			crashed := path + ".crash"
			copyFile(t, path, crashed)
			y := openOffset(t, crashed, Options{Writable: true, MaxBytes: 4096})
			assert.Equal(t, want[:tt.keep], offsetEntries(y))
			e := offsetEntry(tt.keep)
			assert.NoError(t, x.Append(e.Offset, e.Position))
		})
	}
}

func TestOffsetReset(t *testing.T) {
	path := tempPath(t, "00.index")
	x := openOffset(t, path, Options{Writable: true, MaxBytes: 4096})
	fillOffset(t, x, 10)
	require.NoError(t, x.Reset())
	assert.Equal(t, 0, x.Len())
	assert.False(t, x.Full())
	assert.Equal(t, OffsetPosition{Offset: testBase}, x.Lookup(math.MaxInt64))
	assert.Equal(t, int64(4096), fileSize(t, path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, allZero(b), "the file is all zeros after Reset")
	want := fillOffset(t, x, 3)
	assert.Equal(t, want, offsetEntries(x))
	require.NoError(t, x.Close())
	assert.Equal(t, int64(3*OffsetEntrySize), fileSize(t, path))
}

func TestOffsetFull(t *testing.T) {
	path := tempPath(t, "00.index")
	// 37 bytes round down to 4 entries.
	x := openOffset(t, path, Options{Writable: true, MaxBytes: 4*OffsetEntrySize + 5})
	assert.Equal(t, int64(4*OffsetEntrySize), fileSize(t, path))
	want := fillOffset(t, x, 4)
	assert.True(t, x.Full())
	e := offsetEntry(4)
	assert.ErrorIs(t, x.Append(e.Offset, e.Position), ErrFull)
	assert.Equal(t, want, offsetEntries(x))
	require.NoError(t, x.TruncateTo(want[3].Offset))
	assert.False(t, x.Full())
	assert.NoError(t, x.Append(want[3].Offset, want[3].Position))

	_, err := OpenOffset(tempPath(t, "01.index"), 0, Options{Writable: true, MaxBytes: OffsetEntrySize - 1})
	assert.Error(t, err, "MaxBytes smaller than one entry")
}

func TestOffsetAppendErrors(t *testing.T) {
	tests := []appendCase{
		{"same offset", 1020, 9000, ErrOutOfOrder},
		{"smaller offset", 1015, 9000, ErrOutOfOrder},
		{"same position", 1030, 8192, ErrOutOfOrder},
		{"smaller position", 1030, 8000, ErrOutOfOrder},
		{"offset below the base", testBase - 1, 9000, nil},
		{"relative offset past uint32", testBase + math.MaxUint32 + 1, 9000, nil},
		{"position past uint32", 1030, math.MaxUint32 + 1, nil},
		{"negative position", 1030, -1, nil},
	}
	checkAppendErrors(t, offsetKind, tests) // after {1010, 4096}, {1020, 8192}
	t.Run("all-zero entry", func(t *testing.T) {
		x := openOffset(t, tempPath(t, "00.index"), Options{Writable: true, MaxBytes: 4096})
		assert.Error(t, x.Append(testBase, 0))
		assert.Equal(t, 0, x.Len())
		assert.NoError(t, x.Append(testBase, 1), "not all zero")
	})
	t.Run("uint32 edges", func(t *testing.T) {
		x := openOffset(t, tempPath(t, "00.index"), Options{Writable: true, MaxBytes: 4096})
		assert.NoError(t, x.Append(testBase+math.MaxUint32, math.MaxUint32))
		assert.Equal(t, OffsetPosition{Offset: testBase + math.MaxUint32, Position: math.MaxUint32}, x.Lookup(math.MaxInt64))
	})
}

// appendCase is an Append (offset, position or timestamp, offset) that
// fails on an index holding entries 0 and 1 of the standard sequence.
type appendCase struct {
	name string
	a, b int64
	is   error // nil: any error
}

// checkAppendErrors runs each case on a new index of kind k: Append fails
// and the index is unchanged.
func checkAppendErrors[E entry, X testIndex[E]](t *testing.T, k kind[E, X], tests []appendCase) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := openKind(t, k, tempPath(t, k.file), Options{Writable: true, MaxBytes: 4096})
			want := fill(t, x, 2, k.entry)
			err := x.Append(tt.a, tt.b)
			require.Error(t, err)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			assert.Equal(t, want, entriesOf[E](x), "unchanged")
		})
	}
}

func TestAppendNoSpace(t *testing.T) {
	fs := &noSpaceFS{FS: osFS()}
	path := tempPath(t, "00.index")
	x := openOffset(t, path, Options{FS: fs, Writable: true, MaxBytes: 1 << 20})
	tx := openTime(t, path+".time", Options{FS: fs, Writable: true, MaxBytes: 1 << 20})
	fs.full.Store(true)
	err := x.Append(1010, 4096)
	assert.True(t, errors.Is(err, syscall.ENOSPC), "got %v", err)
	assert.ErrorContains(t, err, "index: allocate "+path)
	_, err = tx.Append(1, 1010), tx.Append(1, 1010)
	assert.ErrorIs(t, err, syscall.ENOSPC)
	assert.Equal(t, 0, x.Len())
	assert.Equal(t, 0, tx.Len())
	fs.full.Store(false)
	require.NoError(t, x.Append(1010, 4096))
	// The first chunk is reserved: the next appends need no allocation.
	fs.full.Store(true)
	perChunk := allocChunk / OffsetEntrySize
	for i := 1; i < perChunk; i++ {
		e := offsetEntry(i)
		require.NoError(t, x.Append(e.Offset, e.Position), "entry %d", i)
	}
	e := offsetEntry(perChunk)
	assert.ErrorIs(t, x.Append(e.Offset, e.Position), syscall.ENOSPC)
	assert.Equal(t, perChunk, x.Len())
	fs.full.Store(false)
	assert.NoError(t, x.Append(e.Offset, e.Position))
}

func TestCloseIdempotentAndClosedErrors(t *testing.T) {
	x, err := OpenOffset(tempPath(t, "00.index"), testBase, Options{Writable: true})
	require.NoError(t, err)
	fillOffset(t, x, 2)
	require.NoError(t, x.Close())
	assert.NoError(t, x.Close())
	assert.ErrorIs(t, x.Append(5000, 99999), ErrClosed)
	assert.ErrorIs(t, x.TruncateTo(0), ErrClosed)
	assert.ErrorIs(t, x.Reset(), ErrClosed)
	assert.ErrorIs(t, x.Seal(), ErrClosed)
	assert.ErrorIs(t, x.Sync(), ErrClosed)
	assert.ErrorIs(t, x.SanityCheck(1<<30), ErrClosed)
	assert.Equal(t, 0, x.Len())
	assert.Equal(t, OffsetPosition{Offset: testBase}, x.Lookup(5000))
	assert.True(t, x.Full())

	tx, err := OpenTime(tempPath(t, "00.timeindex"), testBase, Options{Writable: true})
	require.NoError(t, err)
	require.NoError(t, tx.Close())
	assert.NoError(t, tx.Close())
	assert.ErrorIs(t, tx.Append(5, 5000), ErrClosed)
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := OpenOffset(dir+"/missing.index", 0, Options{})
	assert.ErrorIs(t, err, os.ErrNotExist, "read-only open does not create")
	assert.ErrorContains(t, err, "index: open "+dir+"/missing.index")
	_, err = OpenOffset(dir+"/00.index", -1, Options{Writable: true})
	assert.Error(t, err)
	_, err = OpenTime(dir+"/00.timeindex", -1, Options{Writable: true})
	assert.Error(t, err)
	_, err = OpenOffset(dir+"/no/such/dir/00.index", 0, Options{Writable: true})
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestCreatePerm(t *testing.T) {
	path := tempPath(t, "00.index")
	x := openOffset(t, path, Options{Writable: true, Perm: 0o600, MaxBytes: 4096})
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.Equal(t, path, x.Path())
}

func TestTimeLookup(t *testing.T) {
	x := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true})
	none := TimeOffset{Timestamp: -1, Offset: testBase}
	_, ok := x.Lookup(math.MaxInt64)
	assert.False(t, ok, "empty")
	entries := []TimeOffset{{-50, 1001}, {0, 1005}, {100, 1010}, {200, 1020}}
	for _, e := range entries {
		require.NoError(t, x.Append(e.Timestamp, e.Offset))
	}
	tests := []struct {
		name string
		ts   int64
		want TimeOffset
		ok   bool
	}{
		{"minimum timestamp", math.MinInt64, none, false},
		{"before the first entry", -51, none, false},
		{"at the first entry", -50, entries[0], true},
		{"between entries", -1, entries[0], true},
		{"at zero", 0, entries[1], true},
		{"at a middle entry", 100, entries[2], true},
		{"just before the last", 199, entries[2], true},
		{"at the last entry", 200, entries[3], true},
		{"after the last entry", math.MaxInt64, entries[3], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := x.Lookup(tt.ts)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
	last, ok := x.Last()
	assert.True(t, ok)
	assert.Equal(t, entries[3], last)
}

func TestTimeTruncateToAndReset(t *testing.T) {
	x := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true, MaxBytes: 4096})
	want := fillTime(t, x, 5) // offsets 1010 .. 1050
	require.NoError(t, x.TruncateTo(1031))
	assert.Equal(t, want[:3], timeEntries(x))
	require.NoError(t, x.TruncateTo(1030))
	assert.Equal(t, want[:2], timeEntries(x))
	got, ok := x.Lookup(math.MaxInt64)
	assert.True(t, ok)
	assert.Equal(t, want[1], got)
	require.NoError(t, x.Append(want[2].Timestamp, want[2].Offset))
	require.NoError(t, x.TruncateTo(0))
	assert.Equal(t, 0, x.Len())
	require.NoError(t, x.Append(want[0].Timestamp, want[0].Offset))
	require.NoError(t, x.Reset())
	assert.Equal(t, 0, x.Len())
	_, ok = x.Lookup(math.MaxInt64)
	assert.False(t, ok)
}

func TestTimeAppendErrors(t *testing.T) {
	tests := []appendCase{
		{"same timestamp", timeEntry(1).Timestamp, 1030, ErrOutOfOrder},
		{"smaller timestamp", timeEntry(0).Timestamp, 1030, ErrOutOfOrder},
		{"same offset", timeEntry(2).Timestamp, 1020, ErrOutOfOrder},
		{"smaller offset", timeEntry(2).Timestamp, 1015, ErrOutOfOrder},
		{"offset below the base", timeEntry(2).Timestamp, testBase - 1, nil},
		{"relative offset past uint32", timeEntry(2).Timestamp, testBase + math.MaxUint32 + 1, nil},
	}
	checkAppendErrors(t, timeKind, tests)
	t.Run("all-zero entry", func(t *testing.T) {
		// Timestamp 0 at the base offset is a valid entry that would be
		// all zero bytes: left out, not an error.
		x := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true, MaxBytes: 4096})
		assert.NoError(t, x.Append(0, testBase))
		assert.Equal(t, 0, x.Len(), "not written")
		e, ok := x.Lookup(0)
		assert.Equal(t, TimeOffset{Timestamp: -1, Offset: testBase}, e)
		assert.False(t, ok)
		assert.NoError(t, x.Append(0, testBase+1))
		assert.Equal(t, 1, x.Len())
	})
	t.Run("full", func(t *testing.T) {
		x := openTime(t, tempPath(t, "00.timeindex"), Options{Writable: true, MaxBytes: 2*TimeEntrySize + 11})
		fillTime(t, x, 2)
		assert.True(t, x.Full())
		e := timeEntry(2)
		assert.ErrorIs(t, x.Append(e.Timestamp, e.Offset), ErrFull)
	})
}
