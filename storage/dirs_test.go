package storage

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/vfs"
)

func TestClassifyPartitionFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode fs.FileMode
		kind fileKind
		off  int64
	}{
		{"00000000000000000042.log", 0, fileSegment, 42},
		{"00000000000000000042.index", 0, fileOffsetIndex, 42},
		{"00000000000000000042.timeindex", 0, fileTimeIndex, 42},
		{"00000000000000000007.snapshot", 0, fileProducerSnapshot, 7},
		{"recovery-point", 0, fileCheckpoint, 0},
		{"log-start-offset", 0, fileCheckpoint, 0},
		{"high-watermark", 0, fileCheckpoint, 0},
		{"leader-epoch-checkpoint", 0, fileCheckpoint, 0},
		{"manifest", 0, fileManifest, 0},
		{".clean-shutdown", 0, fileCleanShutdown, 0},
		{"topic-config", 0, fileTopicConfig, 0},
		{"recovery-point.tmp", 0, fileLeftover, 0},
		{"partition.metadata.12-3.tmp", 0, fileOther, 0},
		{"00000000000000000042.log.deleted", 0, fileLeftover, 0},
		{"42.log", 0, fileRefused, 0},
		{"00000000000000000042.log", fs.ModeSymlink, fileRefused, 42},
		{"notes.txt", 0, fileOther, 0},
	} {
		k, off := classifyPartitionFile(tc.name, tc.mode)
		assert.Equal(t, tc.kind, k, tc.name)
		assert.Equal(t, tc.off, off, tc.name)
	}
	assert.Equal(t, "segment", fileSegment.String())
}

func TestListPartitionAndRoot(t *testing.T) {
	root := t.TempDir()
	s, err := OpenStore(root, StoreOptions{Log: Options{SegmentBytes: 200}})
	require.NoError(t, err)
	require.NoError(t, s.CreateTopic("t", 2, TopicConfig{}))
	l, err := s.Log("t", 0)
	require.NoError(t, err)
	for range 5 {
		_, err := l.Append(Record{Value: make([]byte, 100)})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	dir := filepath.Join(root, "t-0")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "00000000000000099999.index"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.tmp"), nil, 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "offsets"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, ".t-2.1.deleted"), 0o755))

	pl, err := listPartition(vfs.Default, dir)
	require.NoError(t, err)
	assert.True(t, pl.Clean)
	assert.Greater(t, len(pl.Segments), 1)
	assert.NoError(t, pl.Refused)
	leftovers := 0
	for _, f := range pl.Files {
		if f.Kind == fileLeftover {
			leftovers++
			assert.NotEmpty(t, f.Why)
		}
	}
	assert.Equal(t, 2, leftovers, "the orphaned index and the .tmp")

	rl, err := listRoot(root)
	require.NoError(t, err)
	require.Len(t, rl.Partitions, 2)
	assert.Equal(t, "t-1", rl.Partitions[1].Name)
	assert.Equal(t, []string{".t-2.1.deleted"}, rl.Leftovers)
	assert.Equal(t, []string{"offsets"}, rl.Other)
	assert.NoError(t, rl.Refused)
	assert.True(t, isPartitionDir(dir))
	assert.True(t, isPartitionDir(filepath.Join(root, "t-1")), "an empty partition")
	assert.False(t, isPartitionDir(root))
	t.Chdir(dir)
	assert.True(t, isPartitionDir("."), "the working directory is named by its own name")
	assert.False(t, isPartitionDir(".."))

	// What the store refuses, it says, with nothing changed.
	require.NoError(t, os.Rename(filepath.Join(root, "t-1"), filepath.Join(root, "t-3")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "12.log"), nil, 0o644))
	rl, err = listRoot(root)
	require.NoError(t, err)
	assert.ErrorIs(t, rl.Refused, ErrCorrupt)
	pl, err = listPartition(vfs.Default, dir)
	require.NoError(t, err)
	assert.ErrorIs(t, pl.Refused, ErrCorrupt)
	_, err = os.Stat(filepath.Join(dir, "x.tmp"))
	assert.NoError(t, err, "listing removes nothing")
}
