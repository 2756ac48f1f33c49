package retention

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashFixture is a store (over a faultFS) with topic t, one partition of 4
// sealed segments of 5 records ([0,5) ... [15,20)) and 2 more records in
// the active segment, and a cleaner that deletes the first 3 segments.
func crashFixture(t *testing.T) (root string, fsys *faultFS, l *storage.Log, c *Cleaner) {
	root = t.TempDir()
	fsys = newFaultFS()
	opts := smallLog()
	opts.FS = fsys
	s := openStore(t, root, storage.StoreOptions{Log: opts})
	l = makeTopic(t, s, "t", 1, 4, 5, at(t0))[0]
	_, err := l.Append(storage.Record{Timestamp: t0.UnixMilli(), Value: val(20)}, storage.Record{Timestamp: t0.UnixMilli(), Value: val(21)})
	require.NoError(t, err)
	cons := newFakeConsumed()
	cons.set("t", 0, 15)
	c = newCleaner(t, s, cons, Options{Default: Policy{Consumed: true}})
	return root, fsys, l, c
}

// reopenCopy copies the store's directory while it is open, as a crash
// would leave it, and opens the copy's partition log.
func reopenCopy(t *testing.T, root string) *storage.Log {
	crashed := t.TempDir()
	copyDir(t, root, crashed)
	dir := filepath.Join(crashed, "t-0")
	_, err := os.Stat(filepath.Join(dir, ".clean-shutdown"))
	require.ErrorIs(t, err, os.ErrNotExist, "the copy is of a store that did not close")
	l, err := storage.Open(dir, smallLog())
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	require.False(t, l.OpenStats().Clean)
	return l
}

// assertConsistent checks a reopened log: it starts at start, holds every
// record from there to 22 with the right values, refuses offsets below the
// start, and has no file of a segment below the start nor an index without
// its log.
func assertConsistent(t *testing.T, l *storage.Log, start int64) {
	t.Helper()
	assert.Equal(t, start, l.StartOffset())
	assert.Equal(t, int64(22), l.EndOffset())
	assert.Equal(t, int64(22), readAll(t, l, start))
	if start > 0 {
		_, err := l.Read(start-1, 1<<10)
		assert.ErrorIs(t, err, storage.ErrOffsetOutOfRange)
	}
	ents, err := os.ReadDir(l.Dir())
	require.NoError(t, err)
	logs := map[int64]bool{}
	for _, e := range ents {
		if b, suffix, ok := segmentFile(e.Name()); ok && suffix == segment.LogSuffix {
			logs[b] = true
			assert.GreaterOrEqual(t, b, start, "segment %s below the start offset", e.Name())
		}
	}
	for _, e := range ents {
		if b, suffix, ok := segmentFile(e.Name()); ok && suffix != segment.LogSuffix {
			assert.True(t, logs[b], "%s has no .log", e.Name())
		}
		assert.False(t, strings.HasSuffix(e.Name(), ".tmp"), e.Name())
	}
	// The log keeps working.
	_, err = l.Append(storage.Record{Value: val(22)})
	require.NoError(t, err)
	assert.Equal(t, int64(23), readAll(t, l, start))
}

// segmentFile parses the name of one of a segment's files (its .log,
// .index or .timeindex): the segment's base offset and the file's suffix.
func segmentFile(name string) (base int64, suffix string, ok bool) {
	for _, suffix := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		if base, ok := segment.ParseFileName(name, suffix); ok {
			return base, suffix, true
		}
	}
	return 0, "", false
}

// A crash between the start-offset checkpoint and the removal of the files
// (simulated by a Remove that fails, then a copy of the open store's
// directory) reopens to a log that starts at the new start offset, with the
// leftover files gone. Each file of each deleted segment fails in turn.
// The store removes the files in the background: the failure is
// WaitDeleted's, not the run's.
func TestCrashBetweenCheckpointAndRemove(t *testing.T) {
	for _, base := range []string{"00000000000000000000", "00000000000000000005", "00000000000000000010"} {
		for _, suffix := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
			t.Run(base+suffix, func(t *testing.T) {
				root, fsys, l, c := crashFixture(t)
				fsys.failRemoves(string(filepath.Separator) + base + suffix)
				rep := runOnce(t, c)
				require.Empty(t, rep.Failures)
				assert.ErrorContains(t, c.store.WaitDeleted(context.Background()), "remove")
				assert.Len(t, rep.Deletions, 3, "the segments left the log")
				assert.Equal(t, int64(15), l.StartOffset())
				_, err := os.Stat(filepath.Join(root, "t-0", base+suffix))
				require.NoError(t, err, "the file that failed to go is still there")

				assertConsistent(t, reopenCopy(t, root), 15)
			})
		}
	}
}

// A crash before the start offset is durable (its rename fails) keeps
// everything: the deletion did not happen and the next run does it.
func TestCrashBeforeCheckpoint(t *testing.T) {
	root, fsys, l, c := crashFixture(t)
	fsys.failRenames(storage.LogStartOffsetFile)
	rep := runOnce(t, c)
	require.Len(t, rep.Failures, 1)
	assert.Empty(t, rep.Deletions)
	assert.Equal(t, int64(0), l.StartOffset())
	assert.Len(t, segmentBases(t, l.Dir()), 5)
	assertConsistent(t, reopenCopy(t, root), 0)

	fsys.failRenames("")
	rep = runOnce(t, c)
	assert.Empty(t, rep.Failures)
	assert.Len(t, rep.Deletions, 3)
	assert.Equal(t, int64(15), l.StartOffset())
}

// A crash right after a successful run reopens to the new start.
func TestCrashAfterRun(t *testing.T) {
	root, _, _, c := crashFixture(t)
	rep := runOnce(t, c)
	require.Empty(t, rep.Failures)
	assertConsistent(t, reopenCopy(t, root), 15)
}

// A crash after the run returned and before the store removed any file
// (removals that fail stand for the ones not made yet; the partition's
// own start-offset file, written without fsync, is lost too) reopens the
// store at the new start offset, from its one durable checkpoint, with
// the files below it removed by the open.
func TestCrashBeforeRemoval(t *testing.T) {
	root, fsys, l, c := crashFixture(t)
	fsys.failRemoves(string(filepath.Separator) + "0000000000000000")
	rep, err := c.RunOnce(context.Background())
	require.NoError(t, err)
	require.Empty(t, rep.Failures)
	assert.Len(t, rep.Deletions, 3)
	assert.Equal(t, int64(15), l.StartOffset())
	require.Error(t, c.store.WaitDeleted(context.Background()))

	crashed := t.TempDir()
	copyDir(t, root, crashed)
	require.NoError(t, os.Remove(filepath.Join(crashed, "t-0", storage.LogStartOffsetFile)))
	s := openStore(t, crashed, storage.StoreOptions{Log: smallLog()})
	reopened, err := s.Log("t", 0)
	require.NoError(t, err)
	assertConsistent(t, reopened, 15)
}

// Files that could not be removed in the background are removed by the
// next run, without waiting for a reopen.
func TestRetryRemovesLeftoverFiles(t *testing.T) {
	_, fsys, l, c := crashFixture(t)
	fsys.failRemoves(string(filepath.Separator) + "00000000000000000005.log")
	rep := runOnce(t, c)
	require.Empty(t, rep.Failures)
	require.Error(t, c.store.WaitDeleted(context.Background()))
	require.Contains(t, segmentBases(t, l.Dir()), "00000000000000000005")

	fsys.failRemoves("")
	failedBefore := fsys.failed.Load()
	rep = runOnce(t, c)
	assert.Empty(t, rep.Failures)
	assert.Empty(t, rep.Deletions, "nothing new to delete")
	assert.Equal(t, failedBefore, fsys.failed.Load())
	assert.Len(t, segmentBases(t, l.Dir()), 2, "the files that could not be removed are removed by the retry")
}
