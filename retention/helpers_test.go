package retention

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
	"github.com/stretchr/testify/require"
)

// t0 is the fake "now" of the tests, in milliseconds.
var t0 = time.UnixMilli(1_700_000_000_000)

func smallLog() storage.Options {
	return storage.Options{SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 1024}
}

func openStore(t testing.TB, root string, opts storage.StoreOptions) *storage.Store {
	t.Helper()
	s, err := storage.OpenStore(root, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func val(off int64) []byte { return []byte(fmt.Sprintf("value-%06d", off)) }

// fillSegments appends nsegs segments of per records each, rolling after
// each one, so that the log holds nsegs sealed segments and an empty
// active one. Segment i's records have timestamp ts(i).
func fillSegments(t testing.TB, l *storage.Log, nsegs, per int, ts func(seg int) time.Time) {
	t.Helper()
	for i := 0; i < nsegs; i++ {
		recs := make([]storage.Record, per)
		for j := range recs {
			off := l.EndOffset() + int64(j)
			recs[j] = storage.Record{Timestamp: ts(i).UnixMilli(), Value: val(off)}
		}
		_, err := l.Append(recs...)
		require.NoError(t, err)
		require.NoError(t, l.Roll())
	}
}

func at(ts time.Time) func(int) time.Time { return func(int) time.Time { return ts } }

// makeTopic creates topic with n partitions, each filled by fillSegments.
func makeTopic(t testing.TB, s *storage.Store, topic string, n, nsegs, per int, ts func(int) time.Time) []*storage.Log {
	t.Helper()
	require.NoError(t, s.CreateTopic(topic, n, storage.TopicConfig{}))
	logs := make([]*storage.Log, n)
	for p := range logs {
		l, err := s.Log(topic, int32(p))
		require.NoError(t, err)
		fillSegments(t, l, nsegs, per, ts)
		logs[p] = l
	}
	return logs
}

// readAll reads from offset to the end, checking every value.
func readAll(t testing.TB, l *storage.Log, from int64) int64 {
	t.Helper()
	r := l.NewReader(from)
	want := from
	for r.Next() {
		require.Equal(t, want, r.Record().Offset)
		require.Equal(t, string(val(want)), string(r.Record().Value))
		want++
	}
	require.NoError(t, r.Err())
	return want
}

// fakeConsumed answers MinCommitted from a map; a missing topic has no
// reading group.
type fakeConsumed struct {
	mu     sync.Mutex
	topics map[string]map[int32]int64 // topic -> partition -> min committed
	panics map[string]bool            // "topic-p" -> panic when asked
}

func newFakeConsumed() *fakeConsumed {
	return &fakeConsumed{topics: map[string]map[int32]int64{}, panics: map[string]bool{}}
}

func (f *fakeConsumed) set(topic string, p int32, off int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.topics[topic] == nil {
		f.topics[topic] = map[int32]int64{}
	}
	f.topics[topic][p] = off
}

func (f *fakeConsumed) MinCommitted(topic string, p int32) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panics[storage.PartitionDir(topic, p)] {
		panic("fakeConsumed: asked to panic")
	}
	parts, ok := f.topics[topic]
	if !ok {
		return 0, false
	}
	return parts[p], true // a reader without a commit here: 0
}

// faultFS is vfs.Default whose Remove (or Rename), while armed, fails for
// paths that contain a string.
type faultFS struct {
	vfs.FS
	mu          sync.Mutex
	removeMatch string
	renameMatch string
	failed      atomic.Int64 // operations failed
}

func newFaultFS() *faultFS { return &faultFS{FS: vfs.Default} }

// failRemoves makes Remove fail for paths containing match ("" disarms).
func (f *faultFS) failRemoves(match string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removeMatch = match
}

// failRenames makes Rename fail when its target contains match.
func (f *faultFS) failRenames(match string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renameMatch = match
}

func (f *faultFS) hit(match, name string) bool {
	if match != "" && strings.Contains(name, match) {
		f.failed.Add(1)
		return true
	}
	return false
}

func (f *faultFS) Remove(name string) error {
	f.mu.Lock()
	match := f.removeMatch
	f.mu.Unlock()
	if f.hit(match, name) {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.EIO}
	}
	return f.FS.Remove(name)
}

func (f *faultFS) Rename(oldpath, newpath string) error {
	f.mu.Lock()
	match := f.renameMatch
	f.mu.Unlock()
	if f.hit(match, newpath) {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EIO}
	}
	return f.FS.Rename(oldpath, newpath)
}

// copyDir copies a directory tree as a crash would leave it: whatever is
// in the files now, with no clean-shutdown marker written.
func copyDir(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o750)
		}
		src, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer src.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		_, err = io.Copy(out, src)
		return errors.Join(err, out.Close())
	})
	require.NoError(t, err)
}

func segmentBases(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") {
			out = append(out, strings.TrimSuffix(e.Name(), ".log"))
		}
	}
	return out
}
