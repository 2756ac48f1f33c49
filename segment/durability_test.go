package segment

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/faultfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileSize returns the size of the file at path.
func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

// copySegmentFiles copies the files of the segment at base from src to dst
// as they are now, as a SIGKILL leaves them (no Close, no trim).
func copySegmentFiles(t testing.TB, src, dst string, base int64) {
	t.Helper()
	for _, suffix := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
		b, err := os.ReadFile(filepath.Join(src, FileName(base, suffix)))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, FileName(base, suffix)), b, 0o640))
	}
}

// A segment never synced while active (a writer that leaves the
// writeback to the OS) reserves its blocks with fallocate: the first
// append reserves fallocMin past its batch, which reads as zeros, and the
// appends within it do not extend the file. The first Sync turns the
// zeros on: the next append writes a chunk of zeros past its batch,
// through the reserved part and on past it.
func TestAppendPreallocatesOnceSynced(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	defer s.Close()
	first := int64(len(appendN(t, s, 1, 3, 100)[0]))
	appendN(t, s, 9, 3, 100)
	size, err := s.Size()
	require.NoError(t, err)
	assert.Equal(t, first+fallocMin, fileSize(t, s.LogPath()), "not synced: blocks reserved past the first batch")
	assert.Zero(t, s.zeroed, "not synced: no zeros written")
	requireZeros(t, s.LogPath(), size, first+fallocMin-size)
	requireReserved(t, s.LogPath(), first+fallocMin)

	require.NoError(t, s.Sync())
	appendN(t, s, 1, 3, 100)
	size, err = s.Size()
	require.NoError(t, err)
	assert.Equal(t, size+int64(preallocChunk), s.zeroed, "synced: zeros a chunk past the batch")
	assert.Equal(t, max(first+fallocMin, size+int64(preallocChunk)), fileSize(t, s.LogPath()), "the zeros fill the reserved part and go on past it")
	require.NoError(t, s.Seal())
	assert.Equal(t, size, fileSize(t, s.LogPath()), "sealed: exactly the data")
}

// requireReserved requires the file at path to have disk blocks for at
// least its first n bytes (fallocated, not a hole).
func requireReserved(t *testing.T, path string, n int64) {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	require.GreaterOrEqual(t, st.Blocks*512, n, "blocks reserved")
}

// The appends of a writer that does not sync reserve the next part once
// they come within half of it of the end of the reserved part, so that
// they never extend the file; the part reserved grows with the segment's
// data, from fallocMin to fallocChunk, and never exceeds it. A batch
// larger than that is written past the end with a part reserved after it.
func TestAppendFallocatesAhead(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	defer s.Close()
	reservations := 0
	for range 200 { // 12 MiB in 60 KiB batches
		before := fileSize(t, s.LogPath())
		appendN(t, s, 1, 1, 60<<10)
		size, err := s.Size()
		require.NoError(t, err)
		after := fileSize(t, s.LogPath())
		if size > before-fallocAhead(size)/2 {
			reservations++
			require.Equal(t, size+fallocAhead(size), after, "reserved ahead at %d", size)
		} else {
			require.Equal(t, before, after, "within the reserved part at %d", size)
		}
		require.LessOrEqual(t, after-size, max(size, int64(fallocMin)), "the reserve is bounded by the data")
		requireReserved(t, s.LogPath(), after)
	}
	assert.Less(t, reservations, 20, "one reservation per half part, not per append")
	size, err := s.Size()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, fileSize(t, s.LogPath())-size, int64(fallocChunk/2), "full chunks once the segment holds more than one")

	appendN(t, s, 1, 1, 3*fallocChunk/2)
	size, err = s.Size()
	require.NoError(t, err)
	assert.Equal(t, size+fallocChunk, fileSize(t, s.LogPath()), "a chunk past a batch larger than a chunk")
	requireReserved(t, s.LogPath(), size+fallocChunk)
	require.NoError(t, s.Close())
	assert.Equal(t, size, fileSize(t, s.LogPath()), "closed: exact")
}

// A failed fallocate (a full disk, a file system without it) does not
// fail the append and stops reserving for the segment: the appends after
// it extend the file, as without preallocation.
func TestFailedFallocateFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"no space", syscall.ENOSPC},
		{"not supported", syscall.EOPNOTSUPP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, dir, s := createOnFaultFS(t)
			fsys.Add(faultfs.Rule{Ops: faultfs.OpAllocate, Path: LogSuffix, Every: true, Err: tc.err})
			batches := appendN(t, s, 1, 3, 100)
			assert.Equal(t, 1, fsys.Injected(), "the fallocate failed")
			for range 20 {
				batches = append(batches, appendN(t, s, 1, 3, 100<<10)...)
				size, err := s.Size()
				require.NoError(t, err)
				require.Equal(t, size, fileSize(t, s.LogPath()), "the appends extend the file")
			}
			assert.Equal(t, 1, fsys.Injected(), "no fallocate after the failure")
			assert.Equal(t, batches, readAllBatches(t, s))
			require.NoError(t, s.Close())
			r, err := OpenActive(dir, 0, testOpts())
			require.NoError(t, err)
			defer r.Close()
			assert.Equal(t, batches, readAllBatches(t, r))
		})
	}
}

// createOnFaultFS creates the segment at 0 in a new directory, on a
// faultfs over the real file system.
func createOnFaultFS(t *testing.T) (*faultfs.FS, string, *Segment) {
	t.Helper()
	fsys := faultfs.New(vfs.Default)
	opts := testOpts()
	opts.FS = fsys
	dir := t.TempDir()
	s, err := Create(dir, 0, opts)
	require.NoError(t, err)
	return fsys, dir, s
}

// A crash (no Close) with a reserved tail that was never written reopens
// with every record and reports no corruption: the unwritten blocks read
// as zeros, the zero tail of a preallocated .log.
func TestCrashWithReservedTailRecovers(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	batches := appendN(t, s, 30, 3, 100)
	size, err := s.Size()
	require.NoError(t, err)
	require.Greater(t, fileSize(t, s.LogPath()), size+fallocMin/2, "a reserved tail to crash with")

	// The crash: the active .log as it is, with its reserved tail (not a
	// copy, which would write the zeros).
	s.mu.Lock()
	require.NoError(t, s.closeFilesLocked())
	s.mu.Unlock()
	require.NoError(t, os.Rename(dir, dir+".crashed"))
	requireRecoversAll(t, dir+".crashed", batches, size)
}

// requireRecoversAll requires recovery of the segment at 0 in dir, which
// holds batches (size bytes) and a zero tail, to cut the tail, count
// nothing lost, and take appends after them.
func requireRecoversAll(t *testing.T, dir string, batches [][]byte, size int64) {
	t.Helper()
	r := Open(dir, 0, 0, testOpts())
	defer r.Close()
	cut, err := r.Recover()
	require.NoError(t, err)
	assert.Zero(t, cut, "nothing was lost")
	assert.Equal(t, batches, readAllBatches(t, r))
	assert.Equal(t, size, fileSize(t, r.LogPath()), "recovery cuts the zero tail")
	more := appendN(t, r, 3, 3, 100)
	assert.Equal(t, append(batches, more...), readAllBatches(t, r))
}

// requireZeros requires n bytes of zeros at off in the file at path.
func requireZeros(t *testing.T, path string, off, n int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, int64(len(b)), off+n)
	require.Equal(t, make([]byte, n), b[off:off+n], "zeros at [%d, %d)", off, off+n)
}

// Appends within the preallocated chunk do not extend the file; past it,
// the next chunk is preallocated only after another Sync, and a batch
// larger than a chunk is written past the end with a chunk after it.
func TestAppendPreallocates(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	require.NoError(t, s.Sync()) // synced: appends preallocate
	defer s.Close()
	appendN(t, s, 1, 3, 100)
	first, err := s.Size()
	require.NoError(t, err)
	appendN(t, s, 9, 3, 100)
	size, err := s.Size()
	require.NoError(t, err)
	assert.Equal(t, first+int64(preallocChunk), fileSize(t, s.LogPath()), "one chunk, past the first batch")
	assert.Less(t, size, first+int64(preallocChunk))

	// No Sync since the chunk: a batch past it gets no zeros, its blocks
	// reserved instead.
	appendN(t, s, 1, 1, preallocChunk)
	size, err = s.Size()
	require.NoError(t, err)
	assert.Equal(t, first+int64(preallocChunk), s.zeroed, "not synced since the last chunk: no zeros")
	assert.Equal(t, size+fallocAhead(size), fileSize(t, s.LogPath()), "reserved past the batch")

	// That Sync covered more than maxPreallocSyncGap; after a small one
	// the large batch gets a chunk after it.
	require.NoError(t, s.Sync())
	appendN(t, s, 1, 1, 100)
	require.NoError(t, s.Sync())
	appendN(t, s, 1, 1, 3*preallocChunk/2)
	size, err = s.Size()
	require.NoError(t, err)
	assert.Equal(t, size+int64(preallocChunk), s.zeroed, "synced: zeros a chunk past the large batch")
	requireZeros(t, s.LogPath(), size, preallocChunk)
	assert.Equal(t, int64(33), s.NextOffset())
}

// A writer whose Syncs cover more than maxPreallocSyncGap each gets no
// zeros (writing them first would double its disk writes), only reserved
// blocks; small Syncs turn the zeros on again.
func TestLargeSyncsDoNotPreallocate(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	defer s.Close()
	appendN(t, s, 1, 1, maxPreallocSyncGap+1024)
	require.NoError(t, s.Sync())
	for range 3 {
		appendN(t, s, 1, 1, maxPreallocSyncGap+1024)
		size, err := s.Size()
		require.NoError(t, err)
		assert.Zero(t, s.zeroed, "large syncs: no zeros")
		assert.Greater(t, fileSize(t, s.LogPath()), size+fallocAhead(size)/2, "large syncs: reserved blocks")
		require.NoError(t, s.Sync())
	}
	// Small syncs turn the zeros on again.
	appendN(t, s, 1, 3, 100)
	require.NoError(t, s.Sync())
	appendN(t, s, 1, 3, 100)
	size, err := s.Size()
	require.NoError(t, err)
	assert.Equal(t, size+int64(preallocChunk), s.zeroed, "small syncs: zeros")
	requireZeros(t, s.LogPath(), size, preallocChunk)
}

// Preallocation stops at the roll size (MaxMapBytes less a batch) unless
// a batch passes it.
func TestPreallocateCappedAtRollSize(t *testing.T) {
	dir := t.TempDir()
	opts := testOpts()
	opts.MaxMapBytes = 64<<10 + int64(DefaultLimits.MaxBatchBytes)
	s, err := Create(dir, 0, opts)
	require.NoError(t, err)
	require.NoError(t, s.Sync()) // synced: appends preallocate
	defer s.Close()
	appendN(t, s, 1, 1, 100)
	assert.Equal(t, int64(64<<10), fileSize(t, s.LogPath()))
	appendN(t, s, 1, 1, 100<<10)
	size, err := s.Size()
	require.NoError(t, err)
	assert.Equal(t, size, fileSize(t, s.LogPath()), "past the roll size: exactly the data")
}

// Seal and Close cut the preallocated tail: sealed segments and clean
// reopens have exact sizes.
func TestSealAndCloseLeaveExactSizes(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	require.NoError(t, s.Sync()) // synced: appends preallocate
	batches := appendN(t, s, 20, 3, 100)
	size, err := s.Size()
	require.NoError(t, err)
	require.Greater(t, fileSize(t, s.LogPath()), size)
	require.NoError(t, s.Seal())
	assert.Equal(t, size, fileSize(t, s.LogPath()), "sealed: exact")
	require.NoError(t, s.Close())
	sealed := Open(dir, 0, 60, testOpts())
	defer sealed.Close()
	got, err := sealed.Size()
	require.NoError(t, err)
	assert.Equal(t, size, got)
	assert.Equal(t, batches, readAllBatches(t, sealed))

	s = createT(t, dir, 60)
	require.NoError(t, s.Sync())
	batches = appendN(t, s, 20, 3, 100)
	size, err = s.Size()
	require.NoError(t, err)
	require.Greater(t, fileSize(t, s.LogPath()), size)
	require.NoError(t, s.Close())
	assert.Equal(t, size, fileSize(t, s.LogPath()), "closed: exact")
	s, err = OpenActive(dir, 60, testOpts())
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, batches, readAllBatches(t, s))
	// Appends after a clean reopen preallocate again.
	more := appendN(t, s, 2, 3, 100)
	assert.Equal(t, append(batches, more...), readAllBatches(t, s))
}

// Close cuts the tail even when the Budget has closed the files.
func TestCloseTrimsEvictedSegment(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	appendN(t, s, 5, 3, 100)
	s.mu.Lock()
	require.NoError(t, s.closeFilesLocked())
	s.mu.Unlock()
	size, err := s.Size()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Equal(t, size, fileSize(t, s.LogPath()))
}

// A crash (the files as a SIGKILL leaves them: no Close) with a
// preallocated zero tail reopens with every record and reports no
// corruption, both by recovery and by a clean open's tail check.
func TestCrashWithZeroTailRecovers(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	require.NoError(t, s.Sync()) // synced: appends preallocate
	defer s.Close()
	batches := appendN(t, s, 30, 3, 100)
	require.NoError(t, s.Sync())
	size, err := s.Size()
	require.NoError(t, err)
	require.Greater(t, fileSize(t, s.LogPath()), size, "a zero tail to crash with")

	crashed := t.TempDir()
	copySegmentFiles(t, dir, crashed, 0)
	a, err := OpenActive(crashed, 0, testOpts())
	require.NoError(t, err, "a zero tail is not corruption")
	assert.Equal(t, int64(90), a.NextOffset())
	assert.Equal(t, batches, readAllBatches(t, a))
	require.NoError(t, a.Close())
	assert.Equal(t, size, fileSize(t, a.LogPath()), "Close cuts the tail")

	crashed = t.TempDir()
	copySegmentFiles(t, dir, crashed, 0)
	requireRecoversAll(t, crashed, batches, size)
}

// A zeroed header followed by anything but zeros is still corruption:
// recovery cuts it and counts it, a scan reports ErrCorrupt.
func TestZeroedHeaderThenGarbageIsCorrupt(t *testing.T) {
	dir, logPath, batches, full := closedSegment(t, 10)

	for _, tail := range [][]byte{
		append(make([]byte, HeaderSize), 1),
		append(make([]byte, 200<<10), bytes.Repeat([]byte{0xee}, 10)...),
		append(append(make([]byte, HeaderSize), batches[0]...), make([]byte, 100)...),
	} {
		data := append(bytes.Clone(full), tail...)
		sc := NewScanner(bytes.NewReader(data), int64(len(data)), ScanOptions{Window: 4096})
		n := 0
		for sc.Next() {
			n++
		}
		require.ErrorIs(t, sc.Err(), ErrCorrupt)
		assert.Equal(t, len(batches), n)
		assert.Equal(t, int64(len(full)), sc.End())
		assert.False(t, sc.ZeroTail())
		sc = ScanBuffer(data, ScanOptions{})
		for sc.Next() {
		}
		require.ErrorIs(t, sc.Err(), ErrCorrupt)

		require.NoError(t, os.WriteFile(logPath, data, 0o640))
		_, err := OpenActive(dir, 0, testOpts())
		require.ErrorIs(t, err, ErrCorrupt)
		r := Open(dir, 0, 0, testOpts())
		cut, err := r.Recover()
		require.NoError(t, err)
		assert.Equal(t, int64(len(tail)), cut, "counted: not a zero tail")
		assert.Equal(t, batches, readAllBatches(t, r))
		require.NoError(t, r.Close())
	}
	// Zeros alone, of any length, are the end of the data.
	for _, n := range []int{1, HeaderSize - 1, HeaderSize, 300 << 10} {
		data := append(bytes.Clone(full), make([]byte, n)...)
		sc := NewScanner(bytes.NewReader(data), int64(len(data)), ScanOptions{Verify: true})
		k := 0
		for sc.Next() {
			k++
		}
		require.NoError(t, sc.Err(), "%d zeros", n)
		assert.True(t, sc.ZeroTail())
		assert.Equal(t, len(batches), k)
		assert.Equal(t, int64(len(full)), sc.End())
	}
}

// A file cut shorter than the size a scan was given (another process
// trimmed its preallocated tail meanwhile) ends the scan there, cleanly
// when the cut is at a batch boundary.
func TestScannerFileCutUnderIt(t *testing.T) {
	data, _ := logOf(t, 0, 10, 2, 50)
	r := bytes.NewReader(data)
	sc := NewScanner(r, int64(len(data))+preallocChunk, ScanOptions{Window: 1 << 20, Verify: true})
	n := 0
	for sc.Next() {
		n++
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, 10, n)
	assert.Equal(t, int64(len(data)), sc.End())

	cut := data[:len(data)-7]
	sc = NewScanner(bytes.NewReader(cut), int64(len(data))+preallocChunk, ScanOptions{})
	for sc.Next() {
	}
	require.ErrorIs(t, sc.Err(), ErrCorrupt, "a batch cut short is still damage")
}

// A failed preallocation (a full disk, here a short write of the zeros)
// does not fail the append and stops the zeros for the segment: the
// zeros that reached the file are a zero tail, written over by the next
// appends and cut by Close; past it, the appends reserve blocks as those
// of a writer that does not sync do.
func TestFailedPreallocationFallsBack(t *testing.T) {
	fsys, _, s := createOnFaultFS(t)
	require.NoError(t, s.Sync()) // synced: appends preallocate
	// The first WriteAt of the .log from here is the batch, the second
	// the zeros after it.
	fsys.Add(faultfs.Rule{Ops: faultfs.OpWriteAt, Path: LogSuffix, Nth: 1, ShortWrite: true})
	batches := appendN(t, s, 1, 3, 100)
	assert.Equal(t, 1, fsys.Injected(), "the zeros' write failed")
	first, err := s.Size()
	require.NoError(t, err)
	assert.Equal(t, first+preallocChunk/2, fileSize(t, s.LogPath()), "half the zeros reached the file")
	for range 20 {
		require.NoError(t, s.Sync())
		batches = append(batches, appendN(t, s, 1, 3, 4000)...)
	}
	assert.Equal(t, 1, fsys.Injected())
	size, err := s.Size()
	require.NoError(t, err)
	assert.Zero(t, s.zeroed, "no zeros after the failure")
	assert.Greater(t, fileSize(t, s.LogPath()), size+fallocAhead(size)/2, "the appends passed the zero tail and reserve blocks")
	assert.Equal(t, batches, readAllBatches(t, s))
	require.NoError(t, s.Close())
	assert.Equal(t, size, fileSize(t, s.LogPath()), "closed: exact")
}

// TruncateTo drops the preallocated part with the batches; appends after
// it, once synced, preallocate again.
func TestTruncateResetsAllocation(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	require.NoError(t, s.Sync()) // synced: appends preallocate
	defer s.Close()
	batches := appendN(t, s, 10, 3, 100)
	_, err := s.TruncateTo(15)
	require.NoError(t, err)
	size, err := s.Size()
	require.NoError(t, err)
	assert.Equal(t, size, fileSize(t, s.LogPath()))
	require.NoError(t, s.Sync())
	more := appendN(t, s, 2, 3, 100)
	assert.Equal(t, size+int64(len(more[0]))+preallocChunk, fileSize(t, s.LogPath()), "a chunk past the first batch after the Sync")
	assert.Equal(t, append(batches[:5:5], more...), readAllBatches(t, s))
}

// A follower beside a preallocating writer sees exactly the complete
// batches: the zero tail and a batch being written are "not yet", and a
// file longer than the data is not a truncation.
func TestFollowerBesidePreallocatingWriter(t *testing.T) {
	dir := t.TempDir()
	w := createT(t, dir, 0)
	defer w.Close()
	require.NoError(t, w.Sync()) // synced: appends preallocate
	written := appendN(t, w, 3, 2, 100)
	require.Greater(t, fileSize(t, w.LogPath()), w.size.Load(), "precondition: a preallocated tail")
	f, err := OpenFollow(dir, 0, testOpts())
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, int64(6), f.NextOffset())
	assert.Equal(t, written, readAllBatches(t, f))

	// Half a batch in the preallocated part: not there yet.
	other := createT(t, t.TempDir(), 6)
	require.NoError(t, other.Sync())
	next := appendN(t, other, 1, 2, 100)[0]
	require.NoError(t, other.Close())
	size, err := w.Size()
	require.NoError(t, err)
	lf, err := os.OpenFile(w.LogPath(), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = lf.WriteAt(next[:len(next)/2], size)
	require.NoError(t, err)
	grew, err := f.Refresh()
	require.NoError(t, err)
	assert.False(t, grew)
	shrunk, err := f.Shrunk()
	require.NoError(t, err)
	assert.False(t, shrunk, "a file longer than the data is not a truncation")
	_, err = lf.WriteAt(make([]byte, len(next)/2), size)
	require.NoError(t, err)
	require.NoError(t, lf.Close())

	// A writer appending while the follower refreshes.
	var wg sync.WaitGroup
	wg.Add(1)
	var more [][]byte
	var finished atomic.Bool
	go func() {
		defer wg.Done()
		defer finished.Store(true)
		for i := 0; i < 200; i++ {
			more = append(more, appendN(t, w, 1, 1+i%3, 50+i)...)
		}
	}()
	for done := false; !done; {
		done = finished.Load()
		_, err := f.Refresh()
		require.NoError(t, err)
		shrunk, err := f.Shrunk()
		require.NoError(t, err)
		require.False(t, shrunk)
	}
	wg.Wait()
	_, err = f.Refresh()
	require.NoError(t, err)
	assert.Equal(t, w.NextOffset(), f.NextOffset())
	assert.Equal(t, append(written, more...), readAllBatches(t, f))

	// A truncation by the writer is still seen, though the file grows
	// again past what the follower read.
	_, err = w.TruncateTo(10)
	require.NoError(t, err)
	require.NoError(t, w.Sync()) // the next append preallocates again
	appendN(t, w, 1, 1, 10)
	require.GreaterOrEqual(t, fileSize(t, w.LogPath()), f.size.Load(), "precondition: the file grew again past the follower's data")
	shrunk, err = f.Shrunk()
	require.NoError(t, err)
	assert.True(t, shrunk)
}

// indexSyncFails returns an active segment with some batches whose next
// index fsync fails.
func indexSyncFails(t *testing.T) (*Segment, *faultfs.FS) {
	fsys := faultfs.New(vfs.Default)
	opts := testOpts()
	opts.FS = fsys
	s, err := Create(t.TempDir(), 0, opts)
	require.NoError(t, err)
	appendN(t, s, 20, 5, 100)
	fsys.Add(faultfs.Rule{Ops: faultfs.OpSync, Path: IndexSuffix, Err: syscall.EIO})
	return s, fsys
}

// A Seal whose index fsync fails returns the error, and the next Seal
// fsyncs the indexes again instead of reporting success.
func TestSealRetriesFailedIndexFsync(t *testing.T) {
	s, fsys := indexSyncFails(t)
	defer s.Close()
	require.Error(t, s.Seal())
	before := fsys.Calls(faultfs.OpSync)
	require.NoError(t, s.Seal())
	assert.Equal(t, 2, fsys.Calls(faultfs.OpSync)-before, "the retried Seal fsyncs both indexes")
	require.NoError(t, s.Seal())
	assert.Equal(t, 2, fsys.Calls(faultfs.OpSync)-before, "once durable, Seal does nothing")
}

// Closing an active segment fsyncs its trimmed indexes (a clean open trusts
// them), and a missing index of a sealed segment is rebuilt on open.
func TestCloseSyncsActiveIndexes(t *testing.T) {
	s, _ := indexSyncFails(t)
	assert.Error(t, s.Close(), "the index fsync failed: Close says so")
}

func TestMissingSealedIndexRebuilt(t *testing.T) {
	dir := t.TempDir()
	s := createT(t, dir, 0)
	want := appendN(t, s, 40, 5, 200)
	next := s.NextOffset()
	require.NoError(t, s.Seal())
	require.NoError(t, s.Close())
	idx := filepath.Join(dir, FileName(0, IndexSuffix))
	fi, err := os.Stat(idx)
	require.NoError(t, err)
	require.NoError(t, os.Remove(idx))

	ro := Open(dir, 0, next, Options{IndexIntervalBytes: 512, ReadOnly: true})
	assert.Equal(t, want, readAllBatches(t, ro))
	require.NoError(t, ro.Close())
	assert.NoFileExists(t, idx, "a read-only open creates nothing")

	s = Open(dir, 0, next, testOpts())
	defer s.Close()
	assert.Equal(t, want, readAllBatches(t, s))
	got, err := os.Stat(idx)
	require.NoError(t, err)
	assert.Equal(t, fi.Size(), got.Size(), "the same entries as before")
}

// On a file system where overwriting written zeros saves no journal
// commit (here tmpfs), a synced segment does not preallocate.
func TestNoPreallocationWhereItDoesNotPay(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "seglog-segment")
	require.NoError(t, err, "a tmpfs at /dev/shm")
	defer os.RemoveAll(dir)
	s := createT(t, dir, 0)
	defer s.Close()
	require.NoError(t, s.Sync())
	batches := appendN(t, s, 3, 3, 100)
	require.False(t, vfs.OverwritesSyncCheaply(s.log), "precondition: /dev/shm is not ext4 or XFS")
	size, err := s.Size()
	require.NoError(t, err)
	assert.Equal(t, size, fileSize(t, s.LogPath()), "no zeros past the data")
	assert.Equal(t, batches, readAllBatches(t, s))
}
