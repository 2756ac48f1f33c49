package storage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs/crashfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storeWithSegments opens a store over fsys at root with topic t of parts
// partitions, each filled with n records in small segments; the store is
// closed when the test ends.
func storeWithSegments(t *testing.T, root string, opts Options, parts, n int) *Store {
	t.Helper()
	opts.SegmentBytes, opts.IndexIntervalBytes, opts.MaxIndexBytes = 4096, 256, 1024
	s := openStore(t, root, StoreOptions{Log: opts})
	require.NoError(t, s.CreateTopic("t", parts, TopicConfig{}))
	for p := int32(0); p < int32(parts); p++ {
		l := partitionLog(t, s, "t", p)
		fill(t, l, n, 10)
		require.NoError(t, l.Sync())
	}
	return s
}

func TestAdvanceStartOffsets(t *testing.T) {
	root := t.TempDir()
	s := storeWithSegments(t, root, Options{}, 3, 1500)
	l0 := partitionLog(t, s, "t", 0)
	segs := l0.segments()
	require.Greater(t, len(segs), 4)
	want := segs[3].Base()

	require.NoError(t, s.AdvanceStartOffsets([]PartitionOffset{
		{"t", 0, want}, {"t", 0, 1}, // the higher offset of a partition counts
		{"t", 1, 0},      // nothing to delete
		{"nope", 0, 100}, // no such topic: left alone
	}))
	assert.Equal(t, want, l0.StartOffset(), "start moved at once")
	_, err := l0.ReadInto(nil, 0, 1)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
	assert.FileExists(t, filepath.Join(root, storeStartOffsetsFile))

	// The store's deleter removes the files in the background; a
	// DeleteSegmentsBefore afterwards finds nothing left to do.
	require.NoError(t, s.WaitDeleted(context.Background()))
	assert.NoFileExists(t, filepath.Join(root, "t-0", segment.FileName(segs[0].Base(), segment.LogSuffix)))
	res, err := l0.DeleteSegmentsBefore(want)
	require.NoError(t, err)
	assert.Zero(t, res.Segments)
	assert.Equal(t, want, res.StartOffset)
	v, ok, err := ReadCheckpoint(filepath.Join(root, "t-0"), LogStartOffsetFile)
	require.NoError(t, err)
	require.True(t, ok, "the partition's own file tells followers")
	assert.Equal(t, want, v)

	l1 := partitionLog(t, s, "t", 1)
	assert.Zero(t, l1.StartOffset())
	require.NoError(t, s.Close())

	s = openStore(t, root, StoreOptions{})
	l0 = partitionLog(t, s, "t", 0)
	assert.Equal(t, want, l0.StartOffset())
	assert.Equal(t, int64(1500), readAll(t, l0, want))
}

// TestAdvanceStartOffsetsPowerCut: the store's one durable write is what
// keeps deleted segments deleted after a power cut, though the partitions'
// own files were written without fsync and the removals were never
// fsynced: no hole, and the start where it was advanced.
func TestAdvanceStartOffsetsPowerCut(t *testing.T) {
	root := t.TempDir()
	fsys, err := crashfs.New(root, crashfs.Options{})
	require.NoError(t, err)
	s := storeWithSegments(t, root, Options{FS: fsys}, 2, 500)
	var want [2]int64
	var targets []PartitionOffset
	for p := range want {
		l := partitionLog(t, s, "t", int32(p))
		want[p] = l.segments()[2+p].Base()
		targets = append(targets, PartitionOffset{"t", int32(p), want[p]})
	}
	require.NoError(t, s.AdvanceStartOffsets(targets))
	l0 := partitionLog(t, s, "t", 0)
	_, err = l0.DeleteSegmentsBefore(want[0]) // partition 1 keeps its files
	require.NoError(t, err)

	fsys2, _, err := fsys.Restart(crashfs.Options{})
	require.NoError(t, err)
	_ = s.Close() // fails: the power went; it lets go of the lock
	s2 := openStore(t, root, StoreOptions{Log: Options{FS: fsys2}})
	for p := range want {
		l := partitionLog(t, s2, "t", int32(p))
		assert.Equal(t, want[p], l.StartOffset(), "partition %d", p)
		assert.Equal(t, int64(500), readAll(t, l, want[p]))
	}
}

// TestDeleteTopicDropsStartOffsets: a topic created again under the same
// name starts at 0, not at the old topic's start offset.
func TestDeleteTopicDropsStartOffsets(t *testing.T) {
	root := t.TempDir()
	s := storeWithSegments(t, root, Options{}, 1, 400)
	l := partitionLog(t, s, "t", 0)
	start := l.segments()[2].Base()
	require.NoError(t, s.AdvanceStartOffsets([]PartitionOffset{{"t", 0, start}}))
	require.Equal(t, start, l.StartOffset())
	require.NoError(t, s.DeleteTopic("t"))
	require.NoError(t, s.CreateTopic("t", 1, TopicConfig{}))
	l = partitionLog(t, s, "t", 0)
	fill(t, l, int(start)+50, 10)
	require.NoError(t, s.Close())

	s = openStore(t, root, StoreOptions{})
	l = partitionLog(t, s, "t", 0)
	assert.Zero(t, l.StartOffset())
	assert.Equal(t, start+50, readAll(t, l, 0))
}

// TestTruncateBelowAdvancedStart: once advanced, the start is the floor
// for Truncate too (the store's file would otherwise name a start above
// records written again).
func TestTruncateBelowAdvancedStart(t *testing.T) {
	s := storeWithSegments(t, t.TempDir(), Options{}, 1, 400)
	l := partitionLog(t, s, "t", 0)
	start := l.segments()[2].Base()
	require.NoError(t, s.AdvanceStartOffsets([]PartitionOffset{{"t", 0, start}}))
	assert.ErrorIs(t, l.Truncate(start-1), ErrOffsetOutOfRange)
	require.NoError(t, l.Truncate(start+10))
	assert.Equal(t, start+10, l.EndOffset())
}

func TestDamagedStoreStartOffsetsRefused(t *testing.T) {
	root := t.TempDir()
	s := storeWithSegments(t, root, Options{}, 1, 400)
	l := partitionLog(t, s, "t", 0)
	require.NoError(t, s.AdvanceStartOffsets([]PartitionOffset{{"t", 0, l.segments()[1].Base()}}))
	require.NoError(t, s.Close())
	path := filepath.Join(root, storeStartOffsetsFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)/2] ^= 1
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, err = OpenStore(root, StoreOptions{})
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, storeStartOffsetsFile)
}

func TestStartOffsetsCodec(t *testing.T) {
	m := map[string]int64{"a-0": 5, "a-1": 0, "b.c_d-12": MaxOffset, "x-y-3": 40}
	got, err := decodeStartOffsets(encodeStartOffsets(m))
	require.NoError(t, err)
	assert.Equal(t, m, got)
	for name, b := range map[string]string{
		"duplicate": "seglog log-start-offset-checkpoint v1 2\na 0 1\na 0 2\n",
		"count":     "seglog log-start-offset-checkpoint v1 3\na 0 1\n",
		"negative":  "seglog log-start-offset-checkpoint v1 1\na 0 -1\n",
		"topic":     "seglog log-start-offset-checkpoint v1 1\n.. 0 1\n",
		"fields":    "seglog log-start-offset-checkpoint v1 1\na 0\n",
	} {
		_, err := decodeStartOffsets(encodeChecked(splitLines(b)))
		assert.ErrorIs(t, err, ErrCorrupt, name)
	}
}

func splitLines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// TestDeleteTopicPowerCutKeepsStart cuts the power at every disk-changing
// operation of a DeleteTopic that follows an AdvanceStartOffsets (whose
// files the deleter removed without a directory fsync): a topic that
// comes back (its deletion was not acknowledged) starts where it was
// advanced, never below, and holds every record from there.
func TestDeleteTopicPowerCutKeepsStart(t *testing.T) {
	setup := func(t *testing.T, root string) (*crashfs.FS, *Store, int64) {
		fsys, err := crashfs.New(root, crashfs.Options{})
		require.NoError(t, err)
		s, err := OpenStore(root, StoreOptions{Log: Options{FS: fsys, SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 1024}})
		require.NoError(t, err)
		require.NoError(t, s.CreateTopic("t", 1, TopicConfig{}))
		l := partitionLog(t, s, "t", 0)
		fill(t, l, 500, 10)
		require.NoError(t, l.Sync())
		start := l.segments()[2].Base()
		require.NoError(t, s.AdvanceStartOffsets([]PartitionOffset{{"t", 0, start}}))
		require.NoError(t, s.WaitDeleted(context.Background()))
		return fsys, s, start
	}
	for k := int64(1); ; k++ {
		root := t.TempDir()
		fsys, s, start := setup(t, root)
		s2, done := cutDuring(t, fsys, s, root, k, func(s *Store) error { return s.DeleteTopic("t") })
		n, err := s2.Partitions("t")
		if done {
			assert.ErrorIs(t, err, ErrUnknownTopic, "the deletion returned: the topic is gone")
		}
		for p := int32(0); p < int32(n); p++ {
			l := partitionLog(t, s2, "t", p)
			assert.Equal(t, start, l.StartOffset(), "crash at operation %d of DeleteTopic: partition %d", k, p)
			assert.Equal(t, int64(500), readAll(t, l, l.StartOffset()), "crash at operation %d of DeleteTopic: partition %d", k, p)
		}
		require.NoError(t, s2.Close())
		if done {
			return
		}
	}
}
