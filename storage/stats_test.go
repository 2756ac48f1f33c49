package storage

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/faultfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatsFailedFsync: a failed fsync is counted as failed, not as an
// fsync, and Stats says the log failed, with the cause.
func TestStatsFailedFsync(t *testing.T) {
	fsys := faultfs.New(vfs.Default)
	opts := small()
	opts.FS = fsys
	l, err := Open(t.TempDir(), opts)
	require.NoError(t, err)
	defer l.Close()
	fill(t, l, 5, 5)
	require.NoError(t, l.Sync())
	st, err := l.Stats()
	require.NoError(t, err)
	require.NoError(t, st.Failed)
	fsyncs := st.Fsyncs
	require.Positive(t, fsyncs)

	fsys.Add(faultfs.Rule{Ops: faultfs.OpSync, Path: segment.LogSuffix, Err: syscall.EIO})
	fill(t, l, 5, 5)
	require.ErrorIs(t, l.Sync(), ErrFailed)
	st, err = l.Stats()
	require.NoError(t, err)
	assert.Equal(t, fsyncs, st.Fsyncs, "a failed fsync is not an fsync")
	assert.Equal(t, int64(1), st.FailedFsyncs)
	assert.ErrorIs(t, st.Failed, syscall.EIO)
}

// TestHighWatermarkNotRewritten: a high watermark no broker set is not
// written, and one read at open is not written again by the first Sync.
func TestHighWatermarkNotRewritten(t *testing.T) {
	dir := t.TempDir()
	fsys := faultfs.New(vfs.Default)
	opts := small()
	opts.FS = fsys
	l, err := Open(dir, opts)
	require.NoError(t, err)
	fill(t, l, 10, 5)
	require.NoError(t, l.Sync())
	assert.NoFileExists(t, filepath.Join(dir, highWatermarkFile))
	require.NoError(t, l.SetHighWatermark(7))
	require.NoError(t, l.Sync())
	v, ok, err := readCheckpoint(vfs.Default, dir, highWatermarkFile)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, int64(7), v)
	require.NoError(t, l.Close())

	l, err = Open(dir, opts)
	require.NoError(t, err)
	defer l.Close()
	fill(t, l, 10, 5) // the first append writes its own files (marker, epochs)
	renames := fsys.Calls(faultfs.OpRename)
	require.NoError(t, l.Sync())
	assert.Equal(t, renames, fsys.Calls(faultfs.OpRename), "no checkpoint replaced by the first Sync")
	assert.Equal(t, int64(7), l.HighWatermark())
}
