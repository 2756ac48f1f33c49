package storage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/crashfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// holdFS is an FS whose removals of segment files (or, with renames,
// replacements of a log-start-offset file), while held, wait until
// released; each one that waits says so on waiting first.
type holdFS struct {
	vfs.FS
	renames bool
	held    atomic.Bool
	waiting chan string
	release chan struct{}
	once    sync.Once
}

func newHoldFS(fsys vfs.FS) *holdFS {
	f := &holdFS{FS: fsys, waiting: make(chan string, 64), release: make(chan struct{})}
	f.held.Store(true)
	return f
}

func (f *holdFS) hold(name string) {
	if f.held.Load() {
		f.waiting <- name
		<-f.release
	}
}

func (f *holdFS) Remove(name string) error {
	if _, _, ok := segmentFileName(filepath.Base(name)); ok && !f.renames {
		f.hold(name)
	}
	return f.FS.Remove(name)
}

func (f *holdFS) Rename(from, to string) error {
	if filepath.Base(to) == LogStartOffsetFile && f.renames {
		f.hold(to)
	}
	return f.FS.Rename(from, to)
}

// let lets the held removals (and every later one) go.
func (f *holdFS) let() {
	f.held.Store(false)
	f.once.Do(func() { close(f.release) })
}

// segmentFileName parses the name of a segment's .log, .index or
// .timeindex.
func segmentFileName(name string) (base int64, suffix string, ok bool) {
	for _, suffix := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		if base, ok := segment.ParseFileName(name, suffix); ok {
			return base, suffix, true
		}
	}
	return 0, "", false
}

// filesBelow counts the segment files in dir whose base is below start.
func filesBelow(t testing.TB, dir string, start int64) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if base, _, ok := segmentFileName(e.Name()); ok && base < start {
			n++
		}
	}
	return n
}

// advanceAll advances every partition of topic t in s to the base of its
// fourth segment and returns the new starts.
func advanceAll(t *testing.T, s *Store, parts int) []int64 {
	t.Helper()
	want := make([]int64, parts)
	var targets []PartitionOffset
	for p := range want {
		l := partitionLog(t, s, "t", int32(p))
		want[p] = l.segments()[3].Base()
		targets = append(targets, PartitionOffset{"t", int32(p), want[p]})
	}
	require.NoError(t, s.AdvanceStartOffsets(targets))
	return want
}

// TestDeleterRemovesInBackground: AdvanceStartOffsets returns once the
// starts are durable, with the segments out of the logs and their files
// still there; the store's deleter removes them and writes each
// partition's own start-offset file; WaitDeleted says when the space is
// free.
func TestDeleterRemovesInBackground(t *testing.T) {
	root := t.TempDir()
	hold := newHoldFS(vfs.Default)
	s := storeWithSegments(t, root, Options{FS: hold}, 3, 1500)
	want := advanceAll(t, s, 3)
	<-hold.waiting // a removal has begun, and waits
	for p := range want {
		l := partitionLog(t, s, "t", int32(p))
		assert.Equal(t, want[p], l.StartOffset())
		_, err := l.ReadInto(nil, want[p]-1, 1)
		assert.ErrorIs(t, err, ErrOffsetOutOfRange, "below the start while the files are still there")
		assert.Equal(t, 9, filesBelow(t, filepath.Join(root, PartitionDir("t", int32(p))), want[p]), "partition %d", p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, s.WaitDeleted(ctx), context.Canceled)

	hold.let()
	require.NoError(t, s.WaitDeleted(context.Background()))
	for p := range want {
		dir := filepath.Join(root, PartitionDir("t", int32(p)))
		assert.Zero(t, filesBelow(t, dir, want[p]), "partition %d", p)
		v, ok, err := ReadCheckpoint(dir, LogStartOffsetFile)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, want[p], v, "the partition's own file, for followers")
		assert.Equal(t, int64(1500), readAll(t, partitionLog(t, s, "t", int32(p)), want[p]))
	}
	assert.Empty(t, s.DeletionFailures())
}

// TestDeleterStoppedByClose: Close stops the deleter after the logs its
// workers hold and leaves no goroutine; the other partitions keep their
// files below the durable start (with their own start-offset file
// written), and the next open removes them.
func TestDeleterStoppedByClose(t *testing.T) {
	root := t.TempDir()
	hold := newHoldFS(vfs.Default)
	const parts = 2 * deleteWorkers
	s, err := OpenStore(root, StoreOptions{Log: Options{FS: hold, SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 1024}})
	require.NoError(t, err)
	require.NoError(t, s.CreateTopic("t", parts, TopicConfig{}))
	for p := int32(0); p < parts; p++ {
		fill(t, partitionLog(t, s, "t", p), 1500, 10)
	}
	ignore := goleak.IgnoreCurrent()
	want := advanceAll(t, s, parts)
	for range deleteWorkers {
		<-hold.waiting // every worker holds a log
	}
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	require.Eventually(t, func() bool {
		s.deleter.mu.Lock()
		defer s.deleter.mu.Unlock()
		return s.deleter.stopped
	}, 10*time.Second, time.Millisecond)
	hold.let()
	require.NoError(t, <-closed)
	goleak.VerifyNone(t, ignore)

	left := 0
	for p := range want {
		dir := filepath.Join(root, PartitionDir("t", int32(p)))
		if filesBelow(t, dir, want[p]) > 0 {
			left++
		}
		v, ok, err := ReadCheckpoint(dir, LogStartOffsetFile)
		require.NoError(t, err)
		require.True(t, ok, "partition %d", p)
		assert.Equal(t, want[p], v, "partition %d: its own start-offset file", p)
	}
	assert.Equal(t, parts-deleteWorkers, left, "partitions whose files Close left")
	assert.ErrorIs(t, s.WaitDeleted(context.Background()), ErrClosed)

	// A standalone open agrees (the partition's own file) and removes them.
	l := openLog(t, filepath.Join(root, PartitionDir("t", parts-1)), small())
	assert.Equal(t, want[parts-1], l.StartOffset())
	assert.Zero(t, filesBelow(t, l.Dir(), want[parts-1]))
	require.NoError(t, l.Close())

	s = openStore(t, root, StoreOptions{})
	for p := range want {
		l := partitionLog(t, s, "t", int32(p))
		assert.Equal(t, want[p], l.StartOffset(), "partition %d", p)
		assert.Zero(t, filesBelow(t, l.Dir(), want[p]), "partition %d: removed by the open", p)
		assert.Equal(t, int64(1500), readAll(t, l, want[p]))
	}
}

// TestDeleterPowerCutBeforeRemoval: the power goes after the start offsets
// are durable and before any file is removed (the partitions' own
// start-offset files, written without fsync, may be lost too): the store
// reopens at the advanced starts and removes the files below them.
func TestDeleterPowerCutBeforeRemoval(t *testing.T) {
	root := t.TempDir()
	fsys, err := crashfs.New(root, crashfs.Options{})
	require.NoError(t, err)
	hold := newHoldFS(fsys)
	s := storeWithSegments(t, root, Options{FS: hold}, 2, 500)
	want := advanceAll(t, s, 2)
	<-hold.waiting

	fsys2, _, err := fsys.Restart(crashfs.Options{})
	require.NoError(t, err)
	hold.let()
	_ = s.Close() // fails: the power went
	s2 := openStore(t, root, StoreOptions{Log: Options{FS: fsys2}})
	for p := range want {
		l := partitionLog(t, s2, "t", int32(p))
		assert.Equal(t, want[p], l.StartOffset(), "partition %d", p)
		assert.Equal(t, int64(500), readAll(t, l, want[p]))
		assert.Zero(t, filesBelow(t, l.Dir(), want[p]), "partition %d: removed by the open", p)
	}
}

// TestDeleterBesideReaders: a reader that took a segment before it left
// the log reads it whole while its files wait for removal, and fails
// cleanly (ErrOffsetOutOfRange) once they are gone; readers and a
// follower running beside the deletion never see a wrong record.
func TestDeleterBesideReaders(t *testing.T) {
	root := t.TempDir()
	hold := newHoldFS(vfs.Default)
	hold.renames = true // the deleter stops before it touches a segment
	s := storeWithSegments(t, root, Options{FS: hold}, 1, 1500)
	l := partitionLog(t, s, "t", 0)
	early, err := l.ReadRegion(0, 1<<10)
	require.NoError(t, err)
	late, err := l.ReadRegion(0, 1<<10)
	require.NoError(t, err)
	want, err := l.Read(0, 1<<10)
	require.NoError(t, err)
	follower := openReadOnly(t, filepath.Join(root, PartitionDir("t", 0)), small())

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				from := l.StartOffset()
				r := l.NewReader(from)
				next := from
				for r.Next() {
					rec := r.Record()
					if !assert.Equal(t, next, rec.Offset) || !assert.Equal(t, string(val(next)), string(rec.Value)) {
						return
					}
					next++
				}
				if err := r.Err(); err != nil {
					assert.ErrorIs(t, err, ErrOffsetOutOfRange)
				}
			}
		}()
	}

	start := advanceAll(t, s, 1)[0]
	<-hold.waiting
	var buf bytes.Buffer
	_, err = early.WriteTo(&buf)
	require.NoError(t, err, "the files are still there")
	assert.Equal(t, want[:early.Length], buf.Bytes())

	hold.let()
	require.NoError(t, s.WaitDeleted(context.Background()))
	_, err = late.WriteTo(&buf)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange, "the segment was deleted")
	_, err = follower.Refresh()
	require.NoError(t, err)
	assert.Equal(t, start, follower.StartOffset(), "the follower read the partition's start-offset file")
	assert.Equal(t, int64(1500), readAll(t, follower, start))
	close(stop)
	wg.Wait()
}

// TestDeleterRetriesFailedRemovals: a removal that fails is reported
// (DeletionFailures, WaitDeleted) and tried again with the store's next
// deletion.
func TestDeleterRetriesFailedRemovals(t *testing.T) {
	root := t.TempDir()
	fail := &failRemoveFS{FS: vfs.Default}
	fail.match.Store("t-1" + string(filepath.Separator))
	s := storeWithSegments(t, root, Options{FS: fail}, 2, 1500)
	want := advanceAll(t, s, 2)
	err := s.WaitDeleted(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "t-1")
	f := s.DeletionFailures()
	require.Len(t, f, 1)
	assert.Equal(t, "t", f[0].Topic)
	assert.Equal(t, int32(1), f[0].Partition)
	assert.Zero(t, filesBelow(t, filepath.Join(root, "t-0"), want[0]))
	assert.Positive(t, filesBelow(t, filepath.Join(root, "t-1"), want[1]))

	fail.match.Store("")
	l0 := partitionLog(t, s, "t", 0)
	require.NoError(t, s.AdvanceStartOffsets([]PartitionOffset{{"t", 0, l0.segments()[1].Base()}}))
	require.NoError(t, s.WaitDeleted(context.Background()))
	assert.Zero(t, filesBelow(t, filepath.Join(root, "t-1"), want[1]), "retried with the next deletion")
	assert.Empty(t, s.DeletionFailures())
}

// failRemoveFS fails removals of segment files whose paths contain match.
type failRemoveFS struct {
	vfs.FS
	match atomic.Value // string
}

func (f *failRemoveFS) Remove(name string) error {
	_, _, seg := segmentFileName(filepath.Base(name))
	if m, _ := f.match.Load().(string); seg && m != "" && strings.Contains(name, m) {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrPermission}
	}
	return f.FS.Remove(name)
}
