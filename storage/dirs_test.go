package storage

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
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

func TestLogFiles(t *testing.T) {
	root := t.TempDir()
	s, err := OpenStore(root, StoreOptions{Log: Options{SegmentBytes: 200}})
	require.NoError(t, err)
	require.NoError(t, s.CreateTopic("t", 2, TopicConfig{}))
	require.NoError(t, s.CreateTopic("u", 1, TopicConfig{}))
	for p := int32(0); p < 2; p++ {
		l, err := s.Log("t", p)
		require.NoError(t, err)
		for range 3 {
			_, err := l.Append(Record{Value: make([]byte, 100)})
			require.NoError(t, err)
		}
	}
	require.NoError(t, s.Close())
	logs := func(dir string, bases ...int64) []string {
		var out []string
		for _, b := range bases {
			out = append(out, filepath.Join(root, dir, segment.FileName(b, segment.LogSuffix)))
		}
		return out
	}
	both := append(logs("t-0", 0, 1, 2), logs("t-1", 0, 1, 2)...)

	for _, tc := range []struct {
		name      string
		dir       string
		topic     string
		partition int32
		want      []string
		err       error
	}{
		{"a partition directory", filepath.Join(root, "t-1"), "", -1, logs("t-1", 0, 1, 2), nil},
		{"a topic's partitions in order", root, "t", -1, both, nil},
		{"one partition of a topic", root, "t", 1, logs("t-1", 0, 1, 2), nil},
		{"a partition that does not exist", root, "t", 2, nil, ErrUnknownTopic},
		{"a topic that does not exist", root, "nope", -1, nil, ErrUnknownTopic},
		{"a data root without a topic", root, "", -1, nil, ErrDataRoot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LogFiles(tc.dir, tc.topic, tc.partition)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
