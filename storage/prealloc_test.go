package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileSizeOf returns the size of the file at path.
func fileSizeOf(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

// The active segment's .log is preallocated past its data; every size the
// log reports is the data's, and sealed segments are exactly their data
// (once the background flusher sealed them after their roll).
func TestSegmentSizesAreLogical(t *testing.T) {
	dir := t.TempDir()
	opts := small()
	opts.SegmentBytes = 64 << 10
	l := openFilled(t, dir, opts, 3000, 7)
	// The active segment preallocates once synced.
	require.NoError(t, l.Sync())
	fill(t, l, 7, 7)
	waitRollFlushed(t, l)
	segs, err := l.Segments()
	require.NoError(t, err)
	require.Greater(t, len(segs), 2)
	var total int64
	for _, s := range segs {
		total += s.Size
		if s.Active {
			assert.Greater(t, fileSizeOf(t, s.Path), s.Size, "the active .log is preallocated")
		} else {
			assert.Equal(t, fileSizeOf(t, s.Path), s.Size, "sealed: exact")
		}
	}
	st, err := l.Stats()
	require.NoError(t, err)
	assert.Equal(t, total, st.Size)

	require.NoError(t, l.Close())
	l = openLog(t, dir, opts)
	require.True(t, l.OpenStats().Clean)
	again, err := l.Segments()
	require.NoError(t, err)
	assert.Equal(t, segs, again)
	for _, s := range again {
		assert.Equal(t, fileSizeOf(t, s.Path), s.Size, "a clean close leaves exact sizes")
	}
	assertRecords(t, l, 3007)
}

// A crash (the files as a SIGKILL leaves them) with a preallocated zero
// tail reopens with every record, and the recovery reports no damage.
func TestCrashWithPreallocatedTail(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Sync: SyncAlways, IndexIntervalBytes: 256}
	l := openFilled(t, dir, opts, 500, 5)
	segs, err := l.Segments()
	require.NoError(t, err)
	active := segs[len(segs)-1]
	require.Greater(t, fileSizeOf(t, active.Path), active.Size, "a zero tail to crash with")

	crashed := filepath.Join(t.TempDir(), "p")
	copyDir(t, dir, crashed)
	c := openLog(t, crashed, opts)
	st := c.OpenStats()
	assert.False(t, st.Clean)
	assert.Positive(t, st.RecoveredSegs)
	assert.Zero(t, st.TruncatedBytes, "a zero tail is not damage")
	assert.Zero(t, st.DeletedSegments)
	assertRecords(t, c, 500)
	after, err := c.Segments()
	require.NoError(t, err)
	assert.Equal(t, active.Size, after[len(after)-1].Size)
	fill(t, c, 50, 5)
	assertRecords(t, c, 550)
}

// A follower beside a preallocating writer sees exactly the complete
// batches, through rolls, and its sizes are the data's.
func TestFollowerBesidePreallocatingWriter(t *testing.T) {
	dir := t.TempDir()
	opts := small()
	opts.SegmentBytes = 32 << 10
	w := openFilled(t, dir, opts, 100, 4)
	ro := openReadOnly(t, dir, opts)
	assertRecords(t, ro, 100)
	for end := int64(100); end < 3000; end += 100 {
		// The active segment preallocates once synced.
		require.NoError(t, w.Sync())
		fill(t, w, 100, 1+int(end/100)%5)
		if segs, err := w.Segments(); err == nil && end == 100 {
			active := segs[len(segs)-1]
			require.Greater(t, fileSizeOf(t, active.Path), active.Size, "precondition: a preallocated tail")
		}
		_, err := ro.Refresh()
		require.NoError(t, err)
		assertRecords(t, ro, end+100)
	}
	ws, err := w.Segments()
	require.NoError(t, err)
	rs, err := ro.Segments()
	require.NoError(t, err)
	require.Len(t, rs, len(ws))
	for i := range ws {
		assert.Equal(t, ws[i].Size, rs[i].Size, "segment %d", i)
		assert.Equal(t, ws[i].NextOffset, rs[i].NextOffset, "segment %d", i)
	}
	// A truncation by the writer is seen, though the file is longer than
	// what the follower read.
	require.NoError(t, w.Truncate(2500))
	fill(t, w, 1, 1)
	_, err = ro.Refresh()
	require.NoError(t, err)
	assert.Equal(t, int64(2501), ro.EndOffset())
}
