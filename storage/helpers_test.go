package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/crashfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Helpers shared by the package's tests.

// logReader is the read API a Log and a Follower share, for helpers that
// read either.
type logReader interface {
	NewReader(offset int64) *Reader
	Read(offset int64, maxBytes int) ([]byte, error)
	ReadRecord(buf []byte, offset int64) (Record, []byte, error)
	OffsetForTime(ts int64) (int64, error)
	StartOffset() int64
	EndOffset() int64
	Segments() ([]SegmentInfo, error)
}

// small makes segments roll often.
func small() Options {
	return Options{SegmentBytes: 4096, IndexIntervalBytes: 256, MaxIndexBytes: 1024}
}

// rollOpts makes segments of 64 KiB with a 1 MiB index, which stays
// preallocated (untrimmed) until the segment is sealed: the tests of a
// roll that leaves the seal to the background flusher see it.
func rollOpts() Options {
	return Options{SegmentBytes: 64 << 10, IndexIntervalBytes: 64, MaxIndexBytes: 1 << 20}
}

// smallOn is small over fsys.
func smallOn(fsys vfs.FS) Options {
	opts := small()
	opts.FS = fsys
	return opts
}

func val(off int64) []byte { return []byte(fmt.Sprintf("value-%06d", off)) }

// fill appends n records in batches of per, each value naming its offset.
func fill(t testing.TB, l *Log, n, per int) {
	t.Helper()
	for i := 0; i < n; i += per {
		var recs []Record
		for j := 0; j < per && i+j < n; j++ {
			off := l.EndOffset() + int64(j)
			recs = append(recs, Record{Timestamp: 1_000_000 + off, Key: []byte("k"), Value: val(off)})
		}
		res, err := l.Append(recs...)
		require.NoError(t, err)
		require.Equal(t, res.LastOffset-res.FirstOffset+1, int64(len(recs)))
	}
}

// readAll reads every record from offset to the end and checks its value.
func readAll(t testing.TB, l logReader, from int64) int64 {
	t.Helper()
	r := l.NewReader(from)
	want := from
	for r.Next() {
		rec := r.Record()
		require.Equal(t, want, rec.Offset)
		require.Equal(t, string(val(want)), string(rec.Value))
		want++
	}
	require.NoError(t, r.Err())
	return want
}

// openLog opens the log in dir with opts; it is closed when the test ends
// (closing it before is fine: Close is idempotent).
func openLog(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	return closeAtEnd(t, l, err)
}

// openFilled opens the log in dir with opts, as openLog does, and fills it
// with n records in batches of per.
func openFilled(t testing.TB, dir string, opts Options, n, per int) *Log {
	t.Helper()
	l := openLog(t, dir, opts)
	fill(t, l, n, per)
	return l
}

// fillSynced is fill with a Sync after the first batch: the active
// segment preallocates from then on (a segment preallocates once synced),
// so it has a zero tail past its data, as a writer that fsyncs leaves.
func fillSynced(t testing.TB, l *Log, n, per int) {
	t.Helper()
	fill(t, l, per, per)
	require.NoError(t, l.Sync())
	fill(t, l, n-per, per)
}

// requireZeroTail requires the .log of seg to be longer than its data.
func requireZeroTail(t testing.TB, seg *segment.Segment) {
	t.Helper()
	size, err := seg.Size()
	require.NoError(t, err)
	require.Greater(t, fileSizeOf(t, seg.LogPath()), size, "precondition: a preallocated tail past the data")
}

// openReadOnly opens a follower of the log in dir; it is closed when the
// test ends.
func openReadOnly(t testing.TB, dir string, opts Options) *Follower {
	t.Helper()
	f, err := OpenFollower(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// openStore opens the store at root with opts; it is closed when the test
// ends.
func openStore(t testing.TB, root string, opts StoreOptions) *Store {
	t.Helper()
	s, err := OpenStore(root, opts)
	return closeAtEnd(t, s, err)
}

// closeAtEnd fails the test on err, else has c closed when the test ends
// and returns it.
func closeAtEnd[C interface{ Close() error }](t testing.TB, c C, err error) C {
	t.Helper()
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// partitionLog returns the log of partition p of topic in s.
func partitionLog(t testing.TB, s *Store, topic string, p int32) *Log {
	t.Helper()
	l, err := s.Log(topic, p)
	require.NoError(t, err)
	return l
}

// assertRecords asserts that l ends at end and that every record from 0 up
// to it reads back as fill wrote it.
func assertRecords(t testing.TB, l logReader, end int64, msgAndArgs ...any) {
	t.Helper()
	assert.Equal(t, end, l.EndOffset(), msgAndArgs...)
	assert.Equal(t, end, readAll(t, l, 0), msgAndArgs...)
}

func mustHeader(t testing.TB, b []byte) segment.Header {
	h, err := segment.ParseHeader(b, segment.DefaultLimits)
	require.NoError(t, err)
	return h
}

// removeSegmentFiles removes the segment at base from dir: its .log and
// both indexes.
func removeSegmentFiles(t testing.TB, dir string, base int64) {
	t.Helper()
	for _, sfx := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
		require.NoError(t, os.Remove(filepath.Join(dir, segment.FileName(base, sfx))))
	}
}

// waitRollFlushed waits until the background flusher has fsynced every
// rolled segment (but one still active) and checkpointed after it.
func waitRollFlushed(t testing.TB, l *Log) {
	t.Helper()
	require.Eventually(t, func() bool {
		l.roll.mu.Lock()
		defer l.roll.mu.Unlock()
		return !l.roll.dueLocked(l.active()) && !l.roll.running
	}, 30*time.Second, time.Millisecond, "the background fsync of rolled segments")
}

// waitForWaiters waits until n goroutines are blocked in the log's Wait
// (or WaitCommitted): a test that then checks they have not returned
// checks a waiter that is really waiting.
func waitForWaiters(t testing.TB, l *Log, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return l.tail.count.Load() == n }, 10*time.Second, time.Millisecond, "waiters registered")
}

// requireBlocked checks that nothing has arrived on done yet.
func requireBlocked(t testing.TB, done <-chan error, msg string) {
	t.Helper()
	select {
	case err := <-done:
		require.Failf(t, msg, "returned %v", err)
	default:
	}
}

// cutDuring cuts the power at the k-th disk-changing operation of call on
// the store s over fsys (or right after call, when it makes fewer: done),
// and returns the store reopened at root over what survived, closed when
// the test ends. A call that was not cut must succeed.
func cutDuring(t *testing.T, fsys *crashfs.FS, s *Store, root string, k int64, call func(*Store) error) (reopened *Store, done bool) {
	t.Helper()
	fsys.CrashAfter(k)
	err := call(s)
	if done = !fsys.Crashed(); done {
		require.NoError(t, err)
		fsys.CrashNow()
	}
	next, _, err := fsys.Restart(crashfs.Options{})
	require.NoError(t, err)
	_ = s.Close() // fails once crashed; it lets go of the lock
	s, err = OpenStore(root, StoreOptions{Log: Options{FS: next}})
	return closeAtEnd(t, s, err), done
}
