package segment

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/seglog/seglog/internal/vfs"
	"github.com/seglog/seglog/internal/vfs/faultfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
