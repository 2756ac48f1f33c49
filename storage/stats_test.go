package storage

import (
	"syscall"
	"testing"

	"github.com/seglog/seglog/internal/vfs"
	"github.com/seglog/seglog/internal/vfs/faultfs"
	"github.com/seglog/seglog/segment"
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
