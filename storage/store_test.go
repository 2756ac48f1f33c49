package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateTopic(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"a.b_c-D9", true},
		{strings.Repeat("x", 249), true},
		{"", false},
		{".", false},
		{"..", false},
		{"../etc", false},
		{"a/b", false},
		{"/abs", false},
		{"nul\x00byte", false},
		{"space here", false},
		{"ünï", false},
		{strings.Repeat("x", 250), false},
		{strings.Repeat("y", 300), false},
	}
	root := t.TempDir()
	s, err := OpenStore(root, StoreOptions{})
	require.NoError(t, err)
	defer s.Close()
	for _, tc := range cases {
		err := ValidateTopic(tc.name)
		if tc.ok {
			assert.NoError(t, err, "%q", tc.name)
			continue
		}
		assert.ErrorIs(t, err, ErrInvalidTopic, "%q", tc.name)
		assert.ErrorIs(t, s.CreateTopic(tc.name, 1, TopicConfig{}), ErrInvalidTopic)
		_, err = s.Log(tc.name, 0)
		assert.ErrorIs(t, err, ErrInvalidTopic)
	}
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Empty(t, entries, "invalid names never touch the filesystem")
	parent, err := os.ReadDir(filepath.Dir(root))
	require.NoError(t, err)
	assert.Len(t, parent, 1, "nothing was created beside the root")
}

func TestStoreTopics(t *testing.T) {
	root := t.TempDir()
	s, err := OpenStore(root, StoreOptions{Log: small()})
	require.NoError(t, err)
	require.NoError(t, s.CreateTopic("orders", 3, TopicConfig{}))
	require.NoError(t, s.CreateTopic("orders", 3, TopicConfig{}), "creating again with the same count is fine")
	assert.ErrorIs(t, s.CreateTopic("orders", 2, TopicConfig{}), ErrTopicExists)
	require.NoError(t, s.CreateTopic("a-b-c", 2, TopicConfig{}))
	assert.Equal(t, []TopicInfo{{"a-b-c", 2}, {"orders", 3}}, s.Topics())
	_, err = s.Log("orders", 3)
	assert.ErrorIs(t, err, ErrInvalidPartition)
	_, err = s.Log("nope", 0)
	assert.ErrorIs(t, err, ErrUnknownTopic)

	var recs []Record
	for i := 0; i < 300; i++ {
		recs = append(recs, Record{Key: []byte(fmt.Sprintf("key-%d", i%17)), Value: []byte(fmt.Sprint(i))})
	}
	res, err := s.Produce("orders", recs...)
	require.NoError(t, err)
	byKey := map[string]int32{}
	for i, r := range res {
		k := string(recs[i].Key)
		if p, ok := byKey[k]; ok {
			assert.Equal(t, p, r.Partition, "a key always goes to the same partition")
		}
		byKey[k] = r.Partition
		p, err := s.Partition("orders", recs[i].Key)
		require.NoError(t, err)
		assert.Equal(t, p, r.Partition)
	}
	keyless, err := s.Produce("orders", Record{Value: []byte("a")}, Record{Value: []byte("b")})
	require.NoError(t, err)
	assert.Equal(t, keyless[0].Partition, keyless[1].Partition, "keyless records of one call stick together")
	require.NoError(t, s.Close())

	s, err = OpenStore(root, StoreOptions{Log: small()})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, []TopicInfo{{"a-b-c", 2}, {"orders", 3}}, s.Topics())
	total := int64(0)
	for p := int32(0); p < 3; p++ {
		l, err := s.Log("orders", p)
		require.NoError(t, err)
		total += l.EndOffset()
	}
	assert.Equal(t, int64(302), total)
	for i, r := range res {
		l, err := s.Log("orders", r.Partition)
		require.NoError(t, err)
		rd := l.NewReader(r.Offset)
		require.True(t, rd.Next())
		assert.Equal(t, recs[i].Value, rd.Record().Value)
	}
	require.NoError(t, s.DeleteTopic("orders"))
	assert.Equal(t, []TopicInfo{{"a-b-c", 2}}, s.Topics())
	_, err = os.Stat(filepath.Join(root, "orders-0"))
	assert.True(t, os.IsNotExist(err))
}

// The longest topic name (249 characters, as Kafka allows) is created
// with a configuration, deleted and created again: the hidden names its
// directories take on the way in and out fit a directory entry.
func TestLongestTopicNameCreatedAndDeleted(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, root, StoreOptions{Log: small()})
	name := strings.Repeat("t", MaxTopicLength)
	for range 2 {
		require.NoError(t, s.CreateTopic(name, 12, TopicConfig{RetentionBytes: 1 << 20}))
		fill(t, partitionLog(t, s, name, 11), 10, 5)
		require.NoError(t, s.DeleteTopic(name))
		_, err := s.Partitions(name)
		require.ErrorIs(t, err, ErrUnknownTopic)
	}
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range ents {
		assert.False(t, strings.HasSuffix(e.Name(), ".deleted"), "left behind: %s", e.Name())
	}
}

func TestStoreRefusesGapsAndSymlinks(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "t-0"), 0o750))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "t-2"), 0o750))
	_, err := OpenStore(root, StoreOptions{})
	assert.ErrorIs(t, err, ErrCorrupt)

	root = t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "t-0")))
	_, err = OpenStore(root, StoreOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "symbolic link")
}

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// TestStoreFileBudget opens thousands of partitions with reads spread over
// all of them and checks that open files stay within the budget.
func TestStoreFileBudget(t *testing.T) {
	const partitions = 1000
	const budget = 120
	root := t.TempDir()
	opts := small()
	opts.SegmentBytes = 1 << 20
	s, err := OpenStore(root, StoreOptions{Log: opts, MaxOpenFiles: budget})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.CreateTopic("many", partitions, TopicConfig{}))
	before := openFDs(t)
	for round := 0; round < 2; round++ {
		for p := int32(0); p < partitions; p++ {
			l, err := s.Log("many", p)
			require.NoError(t, err)
			if round == 0 {
				_, err = l.Append(Record{Value: []byte(fmt.Sprint(p))})
				require.NoError(t, err)
			}
			rd := l.NewReader(0)
			require.True(t, rd.Next(), "partition %d", p)
			assert.Equal(t, fmt.Sprint(p), string(rd.Record().Value))
			require.LessOrEqual(t, s.OpenFiles(), budget)
			if p%200 == 0 {
				assert.LessOrEqual(t, openFDs(t)-before, budget, "open descriptors at partition %d", p)
			}
		}
	}
	assert.LessOrEqual(t, openFDs(t)-before, budget)
}

// blockingFS blocks ReadDir of paths containing block until release closes.
type blockingFS struct {
	vfs.FS
	block   string
	entered chan struct{}
	release chan struct{}
}

func (b *blockingFS) ReadDir(name string) ([]os.DirEntry, error) {
	if strings.Contains(name, b.block) {
		b.entered <- struct{}{}
		<-b.release
	}
	return b.FS.ReadDir(name)
}

// One partition's slow open (a long recovery) holds up neither the other
// partitions nor a second caller's wait for it.
func TestStoreOpensPartitionsConcurrently(t *testing.T) {
	fsys := &blockingFS{FS: vfs.Default, block: "slow-0", entered: make(chan struct{}, 1), release: make(chan struct{})}
	s, err := OpenStore(t.TempDir(), StoreOptions{Log: Options{FS: fsys}})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.CreateTopic("slow", 1, TopicConfig{}))
	require.NoError(t, s.CreateTopic("fast", 1, TopicConfig{}))
	slow := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() {
			_, err := s.Log("slow", 0)
			slow <- err
		}()
	}
	<-fsys.entered // the slow partition is opening
	done := make(chan error, 1)
	go func() {
		l, err := s.Log("fast", 0)
		if err == nil {
			_, err = l.Append(Record{Value: []byte("v")})
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("opening one partition blocks the others")
	}
	close(fsys.release)
	require.NoError(t, <-slow)
	require.NoError(t, <-slow)
	a, err := s.Log("slow", 0)
	require.NoError(t, err)
	b, err := s.Log("slow", 0)
	require.NoError(t, err)
	assert.Same(t, a, b, "one Log per partition")
}

// A topic's configuration is stored with it, survives reopening, applies
// to its partitions' logs, is shown by TopicConfig and changed by
// AlterTopic; an invalid one is refused and writes nothing.
func TestTopicConfig(t *testing.T) {
	root := t.TempDir()
	s, err := OpenStore(root, StoreOptions{})
	require.NoError(t, err)
	cfg := TopicConfig{SegmentBytes: 4096, IndexIntervalBytes: 128, Sync: "always", Compression: "zstd", RetentionAge: 7 * 24 * time.Hour, RetentionConsumed: true}
	require.NoError(t, s.CreateTopic("orders", 2, cfg))
	require.NoError(t, s.CreateTopic("plain", 1, TopicConfig{}))
	err = s.CreateTopic("bad", 1, TopicConfig{Sync: "sometimes"})
	require.ErrorIs(t, err, ErrInvalidOptions)
	assert.NoDirExists(t, filepath.Join(root, "bad-0"))
	for i := 0; i < 200; i++ {
		_, err := s.Produce("orders", Record{Key: []byte(fmt.Sprint(i)), Value: make([]byte, 100)})
		require.NoError(t, err)
	}
	l, err := s.Log("orders", 1)
	require.NoError(t, err)
	assert.Equal(t, SyncAlways, l.opts.Sync)
	assert.Equal(t, segment.CodecZstd, l.opts.Compression)
	segs, err := l.Segments()
	require.NoError(t, err)
	assert.Greater(t, len(segs), 1, "rolled at the topic's 4 KiB, not the store's 1 GiB")
	require.NoError(t, s.Close())

	s, err = OpenStore(root, StoreOptions{})
	require.NoError(t, err)
	defer s.Close()
	got, err := s.TopicConfig("orders")
	require.NoError(t, err)
	assert.Equal(t, cfg, got)
	got, err = s.TopicConfig("plain")
	require.NoError(t, err)
	assert.Equal(t, TopicConfig{}, got)
	require.NoError(t, s.CreateTopic("orders", 3, TopicConfig{}), "a partition added later")
	got, err = ReadTopicConfig(filepath.Join(root, "orders-2"))
	require.NoError(t, err)
	assert.Equal(t, cfg, got, "the new partition has the topic's config")

	cfg.SegmentBytes, cfg.Sync = 1<<20, ""
	require.NoError(t, s.AlterTopic("orders", cfg))
	got, err = s.TopicConfig("orders")
	require.NoError(t, err)
	assert.Equal(t, cfg, got)
	assert.ErrorIs(t, s.AlterTopic("orders", TopicConfig{SegmentBytes: -1}), ErrInvalidOptions)
	assert.ErrorIs(t, s.AlterTopic("nope", cfg), ErrUnknownTopic)
}

// OpenPartitions lists the open logs only, sorted, and opens nothing.
func TestOpenPartitions(t *testing.T) {
	s, err := OpenStore(t.TempDir(), StoreOptions{})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.CreateTopic("b", 2, TopicConfig{}))
	require.NoError(t, s.CreateTopic("a", 3, TopicConfig{}))
	assert.Empty(t, s.OpenPartitions())
	for _, tp := range []struct {
		topic string
		p     int32
	}{{"b", 1}, {"a", 2}, {"a", 0}} {
		_, err := s.Log(tp.topic, tp.p)
		require.NoError(t, err)
	}
	var got []string
	for _, op := range s.OpenPartitions() {
		require.NotNil(t, op.Log)
		got = append(got, PartitionDir(op.Topic, op.Partition))
	}
	assert.Equal(t, []string{"a-0", "a-2", "b-1"}, got)
}
