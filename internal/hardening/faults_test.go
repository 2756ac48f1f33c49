package hardening

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/offsets"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs/faultfs"
)

// reopen closes l (its error ignored: the log may be failed) and opens dir
// again over fs, checking it against m.
func reopen(t *testing.T, l *storage.Log, dir string, fs *faultfs.FS, m *model) *storage.Log {
	t.Helper()
	_ = l.Close()
	l, err := storage.Open(dir, smallLog(fs))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	require.NoError(t, m.check(l))
	return l
}

// TestFsyncFailure: after a failed fsync the log refuses every write with
// ErrFailed, even once the fault is gone, until it is reopened; reads keep
// working; the reopen keeps what was acknowledged and takes appends.
func TestFsyncFailure(t *testing.T) {
	tests := []struct {
		name string
		sync storage.SyncPolicy
		err  error
	}{
		{"Sync, EIO", storage.SyncNever, syscall.EIO},
		{"SyncAlways append, EIO", storage.SyncAlways, syscall.EIO},
		{"Sync, ENOSPC", storage.SyncNever, syscall.ENOSPC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fs := faultfs.New(nil)
			opts := smallLog(fs)
			opts.Sync = tt.sync
			l, err := storage.Open(dir, opts)
			require.NoError(t, err)
			m := newModel()
			appendN(t, l, m, "a", 8)
			require.NoError(t, l.Sync())
			m.synced()

			fs.FailAll(faultfs.OpSync, ".log", tt.err)
			v := value("b", 0)
			res, err := l.Append(storage.Record{Value: []byte(v)})
			if tt.sync == storage.SyncNever {
				require.NoError(t, err)
				m.appended(v, res, nil)
				err = l.Sync()
			} else {
				m.appended(v, res, err)
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, storage.ErrFailed)
			assert.ErrorIs(t, err, tt.err)
			assert.Equal(t, tt.err == syscall.ENOSPC, errors.Is(err, storage.ErrDiskFull), "ErrDiskFull iff the fsync said ENOSPC")
			assert.Contains(t, err.Error(), dir)

			fs.Clear()
			_, err = l.Append(storage.Record{Value: []byte(value("c", 0))})
			assert.ErrorIs(t, err, storage.ErrFailed, "append after a failed fsync")
			m.maybe[value("c", 0)] = true
			assert.ErrorIs(t, l.Truncate(1), storage.ErrFailed, "truncate after a failed fsync")
			assert.ErrorIs(t, l.Roll(), storage.ErrFailed, "roll after a failed fsync")
			assert.ErrorIs(t, l.Sync(), storage.ErrFailed, "sync after a failed fsync")
			require.NoError(t, m.check(l), "reads keep working")

			l = reopen(t, l, dir, fs, m)
			appendN(t, l, m, "d", 3)
			require.NoError(t, l.Close())
		})
	}
}

// TestDiskFull: ENOSPC when writing the .log, when reserving index blocks
// and when fsyncing. Appends fail with ErrDiskFull, reads keep working,
// and once space is back appends resume at the end offset (write and
// allocate), or after a reopen (fsync: the log is failed).
func TestDiskFull(t *testing.T) {
	tests := []struct {
		name      string
		rule      faultfs.Rule
		failed    bool // the log is failed and must be reopened
		indexOnly bool // only appends that add an index entry need the fault's call
	}{
		{"write", faultfs.Rule{Ops: faultfs.OpWriteAt, Path: ".log", Every: true, Err: syscall.ENOSPC}, false, false},
		{"short write", faultfs.Rule{Ops: faultfs.OpWriteAt, Path: ".log", Every: true, ShortWrite: true}, false, false},
		{"index allocate", faultfs.Rule{Ops: faultfs.OpAllocate, Path: ".index", Every: true, Err: syscall.ENOSPC}, false, true},
		{"time index allocate", faultfs.Rule{Ops: faultfs.OpAllocate, Path: ".timeindex", Every: true, Err: syscall.ENOSPC}, false, true},
		{"fsync with SyncAlways", faultfs.Rule{Ops: faultfs.OpSync, Every: true, Err: syscall.ENOSPC}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fs := faultfs.New(nil)
			opts := smallLog(fs)
			opts.SegmentBytes = 64 << 10 // one segment: the index fills
			if tt.failed {
				opts.Sync = storage.SyncAlways
			}
			l, err := storage.Open(dir, opts)
			require.NoError(t, err)
			m := newModel()
			appendN(t, l, m, "a", 1) // no index entry yet: the next append reserves index blocks
			require.NoError(t, l.Sync())
			m.synced()

			fs.Add(tt.rule)
			// Index faults hit only the append that adds an entry.
			var aerr error
			for i := 0; i < 20 && aerr == nil; i++ {
				aerr = m.appendNext(l, value("full", i))
			}
			require.Error(t, aerr, "an append must meet the full disk")
			require.Positive(t, fs.Injected())
			assert.ErrorIs(t, aerr, storage.ErrDiskFull)
			assert.ErrorIs(t, aerr, syscall.ENOSPC)
			assert.Contains(t, aerr.Error(), dir)
			assert.Equal(t, tt.failed, errors.Is(aerr, storage.ErrFailed))
			require.NoError(t, m.check(l), "reads keep working on a full disk")
			if !tt.indexOnly {
				// Still full: the next append fails the same way, the
				// end does not move.
				end := l.EndOffset()
				aerr = m.appendNext(l, value("still-full", 0))
				assert.True(t, isFailedOrFull(aerr), "%v", aerr)
				assert.Equal(t, end, l.EndOffset())
			}

			fs.Clear()
			if tt.failed {
				assert.ErrorIs(t, m.appendNext(l, value("space", 0)), storage.ErrFailed)
				l = reopen(t, l, dir, fs, m)
			}
			appendN(t, l, m, "b", 5)
			require.NoError(t, l.Sync())
			m.synced()
			require.NoError(t, m.check(l))
			l = reopen(t, l, dir, fs, m)
			require.NoError(t, l.Close())
		})
	}
}

// fullDisk makes every call that needs free blocks fail with ENOSPC.
func fullDisk(fs *faultfs.FS) {
	fs.Add(faultfs.Rule{Ops: faultfs.NeedSpace, Every: true, Err: syscall.ENOSPC})
}

// TestDeleteSegmentsOnFullDisk: retention must be able to free space when
// the disk is full. DeleteSegmentsBefore runs while no new file, directory
// or block can be had.
func TestDeleteSegmentsOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New(nil)
	l, err := storage.Open(dir, smallLog(fs))
	require.NoError(t, err)
	defer l.Close()
	m := newModel()
	appendN(t, l, m, "a", 20)
	require.NoError(t, l.Sync())
	m.synced()

	fullDisk(fs)
	require.True(t, isFailedOrFull(m.appendNext(l, value("full", 0))))
	m.deleted(10)
	res, err := l.DeleteSegmentsBefore(10)
	require.NoError(t, err, "deleting segments must not need free space")
	assert.Positive(t, res.Segments)
	require.NoError(t, m.check(l))
	fs.Clear()
	appendN(t, l, m, "b", 2)
	require.NoError(t, m.check(l))
}

// TestReopenOnFullDisk: a log closed without the clean marker (here: Close
// on a full disk cannot write it) must reopen, recovering, while the disk
// is still full, so that reads work and retention can free space.
func TestReopenOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New(nil)
	l, err := storage.Open(dir, smallLog(fs))
	require.NoError(t, err)
	m := newModel()
	appendN(t, l, m, "a", 20)
	require.NoError(t, l.Sync())
	m.synced()
	fullDisk(fs)
	err = l.Close()
	if err != nil {
		assert.ErrorIs(t, err, syscall.ENOSPC)
	}
	_, statErr := os.Lstat(filepath.Join(dir, ".clean-shutdown"))
	require.ErrorIs(t, statErr, os.ErrNotExist, "the marker cannot be written on a full disk")

	l, err = storage.Open(dir, smallLog(fs))
	require.NoError(t, err, "recovery must not need free space")
	defer l.Close()
	assert.False(t, l.OpenStats().Clean)
	require.NoError(t, m.check(l))
	fs.Clear()
	appendN(t, l, m, "b", 2)
	require.NoError(t, m.check(l))
}

// TestShortWriteLeavesNoPartialBatch: a write that stops half way (then
// ENOSPC) leaves no partial batch visible, and appends and reopens carry
// on cleanly, even when cutting the partial bytes off fails too.
func TestShortWriteLeavesNoPartialBatch(t *testing.T) {
	for _, truncateFails := range []bool{false, true} {
		name := map[bool]string{false: "cut back", true: "cut back fails"}[truncateFails]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fs := faultfs.New(nil)
			opts := smallLog(fs)
			opts.SegmentBytes = 64 << 10
			l, err := storage.Open(dir, opts)
			require.NoError(t, err)
			m := newModel()
			appendN(t, l, m, "a", 3)
			require.NoError(t, l.Sync())
			m.synced()
			segs, err := l.Segments()
			require.NoError(t, err)
			sizeBefore := segs[len(segs)-1].Size

			fs.Add(faultfs.Rule{Ops: faultfs.OpWriteAt, Path: ".log", ShortWrite: true})
			if truncateFails {
				fs.Add(faultfs.Rule{Ops: faultfs.OpTruncate, Path: ".log"})
			}
			// A big record so that the half written is more than a header.
			big := value("big", 0) + string(make([]byte, 2000))
			_, err = l.Append(storage.Record{Value: []byte(big)})
			require.Error(t, err)
			assert.ErrorIs(t, err, storage.ErrDiskFull)
			m.maybe[big] = true
			fs.Clear()
			segs, err = l.Segments()
			require.NoError(t, err)
			assert.Equal(t, sizeBefore, segs[len(segs)-1].Size, "the segment's size does not count the partial batch")
			if !truncateFails {
				fi, err := os.Stat(segs[len(segs)-1].Path)
				require.NoError(t, err)
				assert.Equal(t, sizeBefore, fi.Size(), "the partial batch was cut off the file")
			}
			require.NoError(t, m.check(l))
			// A small append after a big partial one: stray bytes may
			// follow it in the file.
			appendN(t, l, m, "b", 2)
			require.NoError(t, l.Sync())
			m.synced()
			l = reopen(t, l, dir, fs, m)
			appendN(t, l, m, "c", 2)
			require.NoError(t, m.check(l))
			// And after a crash-like reopen (no clean marker).
			require.NoError(t, l.Close())
			require.NoError(t, os.Remove(filepath.Join(dir, ".clean-shutdown")))
			l, err = storage.Open(dir, opts)
			require.NoError(t, err)
			defer l.Close()
			require.NoError(t, m.check(l))
		})
	}
}

// TestCheckpointRenameAndDirSyncFailures: the recovery-point and
// log-start-offset files are replaced by rename and a directory fsync.
// When either fails the caller gets an error naming the file, and the log
// stays consistent, now and after a reopen.
func TestCheckpointRenameAndDirSyncFailures(t *testing.T) {
	tests := []struct {
		name string
		rule faultfs.Rule
		file string // what the error must name
	}{
		{"rename recovery-point", faultfs.Rule{Ops: faultfs.OpRename, Path: "recovery-point", Every: true}, "recovery-point"},
		{"syncdir after recovery-point", faultfs.Rule{Ops: faultfs.OpSyncDir, Every: true}, "recovery-point"},
		{"rename log-start-offset", faultfs.Rule{Ops: faultfs.OpRename, Path: "log-start-offset", Every: true}, "log-start-offset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fs := faultfs.New(nil)
			l, err := storage.Open(dir, smallLog(fs))
			require.NoError(t, err)
			m := newModel()
			appendN(t, l, m, "a", 12)
			require.NoError(t, l.Sync())
			m.synced()

			appendN(t, l, m, "b", 1)
			fs.Add(tt.rule)
			if tt.file == "log-start-offset" {
				m.deleted(6)
				_, err = l.DeleteSegmentsBefore(6)
			} else {
				err = l.Checkpoint()
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, syscall.EIO)
			assert.Contains(t, err.Error(), tt.file)
			require.NoError(t, m.check(l))
			fs.Clear()
			if tt.file == "recovery-point" {
				// The fault is gone: the next Checkpoint writes it.
				require.NoError(t, l.Checkpoint())
				m.synced()
			}
			l = reopen(t, l, dir, fs, m)
			appendN(t, l, m, "c", 2)
			require.NoError(t, m.check(l))
		})
	}
}

// TestOffsetsCompactionFaults: the offsets store replaces its snapshot by
// rename and a directory fsync; when either fails, Compact says so, the
// store keeps working, and a reopen has every commit.
func TestOffsetsCompactionFaults(t *testing.T) {
	tests := []struct {
		name string
		rule faultfs.Rule
	}{
		{"rename snapshot", faultfs.Rule{Ops: faultfs.OpRename, Path: "snapshot"}},
		{"syncdir", faultfs.Rule{Ops: faultfs.OpSyncDir, Every: true}},
		{"create journal", faultfs.Rule{Ops: faultfs.OpCreate, Path: "journal", Err: syscall.ENOSPC}},
		{"write snapshot", faultfs.Rule{Ops: faultfs.OpWrite, Path: "snapshot", ShortWrite: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fs := faultfs.New(nil)
			s, err := offsets.Open(dir, offsets.Options{FS: fs})
			require.NoError(t, err)
			require.NoError(t, s.Commit("g", "t", 0, 10, "m"))
			fs.Add(tt.rule)
			err = s.Compact()
			require.Error(t, err)
			assert.Contains(t, err.Error(), dir)
			fs.Clear()
			require.NoError(t, s.Commit("g", "t", 1, 20, ""))
			require.NoError(t, s.Close())
			s, err = offsets.Open(dir, offsets.Options{FS: fs})
			require.NoError(t, err)
			defer s.Close()
			for p, want := range map[int32]int64{0: 10, 1: 20} {
				pos, err := s.Fetch("g", "t", p)
				require.NoError(t, err)
				assert.Equal(t, want, pos.Offset)
			}
		})
	}
}

// TestFailedAppendLeavesNoTrace: an append that fails on the time index
// (ENOSPC reserving its blocks) must not leave its timestamp behind: the
// segment's max timestamp, which retention by age and time lookups use,
// must come from records that are in the log.
func TestFailedAppendLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	fs := faultfs.New(nil)
	opts := smallLog(fs)
	opts.SegmentBytes = 64 << 10
	l, err := storage.Open(dir, opts)
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Append(storage.Record{Timestamp: 1000, Value: []byte(value("a", 0))})
	require.NoError(t, err)

	fs.Add(faultfs.Rule{Ops: faultfs.OpAllocate, Path: ".timeindex", Err: syscall.ENOSPC})
	const future = 9_000_000_000_000
	_, err = l.Append(storage.Record{Timestamp: future, Value: []byte(value("future", 0))})
	require.ErrorIs(t, err, storage.ErrDiskFull)
	require.Equal(t, int64(1), l.EndOffset())

	_, err = l.Append(storage.Record{Timestamp: 2000, Value: []byte(value("b", 0))})
	require.NoError(t, err)
	segs, err := l.Segments()
	require.NoError(t, err)
	assert.Equal(t, int64(2000), segs[len(segs)-1].MaxTimestamp, "the failed append's timestamp must not count")
}
