package raftstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/storage"
	"github.com/seglog/seglog/vfs"
)

// entryData is the data of the test entry at index i in term t.
func entryData(i, t uint64) []byte {
	return []byte(fmt.Sprintf("entry-%d-term-%d-%s", i, t, string(make([]byte, int(i%17)))))
}

// entries returns n entries from index first in term t, with every field
// set in some of them (nil and empty data and extensions, zero and set
// times, several types).
func entries(first uint64, n int, t uint64) []*raft.Log {
	out := make([]*raft.Log, n)
	for k := range out {
		i := first + uint64(k)
		l := &raft.Log{Index: i, Term: t, Type: raft.LogType(i % 6), Data: entryData(i, t)}
		switch i % 4 {
		case 0:
			l.AppendedAt = time.Unix(1_700_000_000+int64(i), int64(i%1_000_000_000))
			l.Extensions = []byte("ext")
		case 1:
			l.AppendedAt = time.Date(2025, 6, 1, 12, 0, 0, int(i), time.UTC)
		case 2:
			l.Extensions = []byte{}
		}
		out[k] = l
	}
	return out
}

// norm is l as GetLog returns it: AppendedAt without a monotonic clock
// reading, in the local zone.
func norm(l *raft.Log) raft.Log {
	c := *l
	if !c.AppendedAt.IsZero() {
		c.AppendedAt = time.Unix(c.AppendedAt.Unix(), int64(c.AppendedAt.Nanosecond()))
	}
	return c
}

func smallOpts() Options {
	// Small segments, so that deletions from the front free some.
	return Options{Log: storage.Options{SegmentBytes: 2048, IndexIntervalBytes: 256, MaxIndexBytes: 4096}}
}

func openT(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func firstLast(t testing.TB, s raft.LogStore) (uint64, uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	require.NoError(t, err)
	l, err := s.LastIndex()
	require.NoError(t, err)
	return f, l
}

// requireEntries checks that every entry of want reads back equal.
func requireEntries(t testing.TB, s raft.LogStore, want []*raft.Log) {
	t.Helper()
	for _, w := range want {
		var got raft.Log
		require.NoError(t, s.GetLog(w.Index, &got), "index %d", w.Index)
		require.Equal(t, norm(w), got, "index %d", w.Index)
	}
}

func TestEmptyStore(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	f, l := firstLast(t, s)
	assert.Zero(t, f)
	assert.Zero(t, l)
	var out raft.Log
	for _, i := range []uint64{0, 1, 2, MaxIndex + 1} {
		assert.Same(t, raft.ErrLogNotFound, s.GetLog(i, &out), "index %d", i)
	}
	assert.NoError(t, s.DeleteRange(1, 10))
	assert.NoError(t, s.DeleteRange(0, 0))
	assert.NoError(t, s.StoreLogs(nil))
	assert.True(t, s.IsMonotonic())
}

func TestStoreAndGet(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"default", Options{}},
		{"no cache", Options{CacheBatches: -1}},
		{"zstd", Options{Log: storage.Options{Compression: segment.CodecZstd}}},
		{"one batch cached", Options{CacheBatches: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, tc.opts)
			want := entries(1, 10, 1)
			require.NoError(t, s.StoreLogs(want))
			one := entries(11, 1, 2)
			require.NoError(t, s.StoreLog(one[0]))
			want = append(want, one...)
			more := entries(12, 30, 2)
			require.NoError(t, s.StoreLogs(more))
			want = append(want, more...)

			f, l := firstLast(t, s)
			assert.Equal(t, uint64(1), f)
			assert.Equal(t, uint64(41), l)
			requireEntries(t, s, want)
			// Reading backwards and at random misses the cache too.
			for k := len(want) - 1; k >= 0; k-- {
				var got raft.Log
				require.NoError(t, s.GetLog(want[k].Index, &got))
				assert.Equal(t, norm(want[k]), got)
			}
			var out raft.Log
			assert.Same(t, raft.ErrLogNotFound, s.GetLog(0, &out))
			assert.Same(t, raft.ErrLogNotFound, s.GetLog(42, &out))

			// What GetLog returns is the caller's: changing it changes
			// nothing stored.
			var got raft.Log
			require.NoError(t, s.GetLog(3, &got))
			got.Data[0] ^= 0xff
			got.Data = append(got.Data, 'x')
			requireEntries(t, s, want[2:3])

			require.NoError(t, s.Close())
			s = openT(t, dir, tc.opts)
			f, l = firstLast(t, s)
			assert.Equal(t, uint64(1), f)
			assert.Equal(t, uint64(41), l)
			requireEntries(t, s, want)
		})
	}
}

func TestStoreLogsRefusesWhatRaftNeverSends(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	require.NoError(t, s.StoreLogs(entries(1, 5, 1)))
	cases := []struct {
		name string
		logs []*raft.Log
		want error
	}{
		{"gap after the last", entries(7, 2, 1), ErrNonContiguous},
		{"overlap with the last", entries(5, 2, 1), ErrNonContiguous},
		{"rewrite from the start", entries(1, 2, 1), ErrNonContiguous},
		{"gap inside the call", append(entries(6, 1, 1), entries(8, 1, 1)...), ErrNonContiguous},
		{"backwards inside the call", append(entries(6, 1, 1), entries(6, 1, 1)...), ErrNonContiguous},
		{"index 0", []*raft.Log{{Index: 0}}, ErrInvalidEntry},
		{"nil entry", []*raft.Log{nil}, ErrInvalidEntry},
		{"index past MaxIndex", []*raft.Log{{Index: MaxIndex + 1}}, ErrInvalidEntry},
		{"time before year 1", []*raft.Log{{Index: 6, AppendedAt: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)}}, ErrInvalidEntry},
	}
	for _, tc := range cases {
		err := s.StoreLogs(tc.logs)
		assert.ErrorIs(t, err, tc.want, tc.name)
		f, l := firstLast(t, s)
		assert.Equal(t, [2]uint64{1, 5}, [2]uint64{f, l}, "%s stored something", tc.name)
	}
	require.NoError(t, s.StoreLogs(entries(6, 2, 1)), "the store still takes the next index")
}

func TestEmptyStoreTakesAnyFirstIndex(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	want := entries(1000, 20, 7)
	require.NoError(t, s.StoreLogs(want))
	f, l := firstLast(t, s)
	assert.Equal(t, uint64(1000), f)
	assert.Equal(t, uint64(1019), l)
	var out raft.Log
	assert.Same(t, raft.ErrLogNotFound, s.GetLog(999, &out))
	assert.Same(t, raft.ErrLogNotFound, s.GetLog(1, &out))
	requireEntries(t, s, want)
	require.ErrorIs(t, s.StoreLogs(entries(1, 1, 7)), ErrNonContiguous)

	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	f, l = firstLast(t, s)
	assert.Equal(t, uint64(1000), f)
	assert.Equal(t, uint64(1019), l)
	requireEntries(t, s, want)
	require.NoError(t, s.StoreLogs(entries(1020, 1, 7)))
}

func TestDeleteRangeFront(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, smallOpts())
	var want []*raft.Log
	for i := 0; i < 40; i++ {
		b := entries(uint64(len(want))+1, 5, 1)
		require.NoError(t, s.StoreLogs(b))
		want = append(want, b...)
	}
	require.NoError(t, s.DeleteRange(1, 100))
	f, l := firstLast(t, s)
	assert.Greater(t, f, uint64(1), "whole segments below 100 were deleted")
	assert.LessOrEqual(t, f, uint64(101), "nothing above the range was deleted")
	assert.Equal(t, uint64(200), l)
	var out raft.Log
	assert.Same(t, raft.ErrLogNotFound, s.GetLog(f-1, &out))
	requireEntries(t, s, want[f-1:])

	// raft asks again from FirstIndex at its next compaction.
	require.NoError(t, s.DeleteRange(f, 150))
	f2, _ := firstLast(t, s)
	assert.Greater(t, f2, f)
	assert.LessOrEqual(t, f2, uint64(151))

	require.NoError(t, s.Close())
	s = openT(t, dir, smallOpts())
	f3, l3 := firstLast(t, s)
	assert.Equal(t, f2, f3)
	assert.Equal(t, uint64(200), l3)
	requireEntries(t, s, want[f3-1:])
	require.NoError(t, s.StoreLogs(entries(201, 3, 2)))
}

func TestDeleteRangeBack(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	a, b := entries(1, 10, 1), entries(11, 10, 1)
	require.NoError(t, s.StoreLogs(a))
	require.NoError(t, s.StoreLogs(b))

	// At a batch boundary.
	require.NoError(t, s.DeleteRange(11, 20))
	_, l := firstLast(t, s)
	assert.Equal(t, uint64(10), l)
	var out raft.Log
	assert.Same(t, raft.ErrLogNotFound, s.GetLog(11, &out))

	// Inside a batch: the entries below the cut stay.
	require.NoError(t, s.DeleteRange(5, 10))
	f, l := firstLast(t, s)
	assert.Equal(t, [2]uint64{1, 4}, [2]uint64{f, l})
	requireEntries(t, s, a[:4])
	assert.Same(t, raft.ErrLogNotFound, s.GetLog(5, &out))
	assert.NoFileExists(t, filepath.Join(dir, CutFile))

	// A new leader's entries take the indexes again.
	c := entries(5, 8, 2)
	require.NoError(t, s.StoreLogs(c))
	requireEntries(t, s, append(a[:4:4], c...))

	// A range that runs past the end is a suffix too; so is a cut of
	// one entry.
	require.NoError(t, s.DeleteRange(12, 1000))
	require.NoError(t, s.DeleteRange(11, 11))
	_, l = firstLast(t, s)
	assert.Equal(t, uint64(10), l)

	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	f, l = firstLast(t, s)
	assert.Equal(t, [2]uint64{1, 10}, [2]uint64{f, l})
	requireEntries(t, s, append(a[:4:4], c[:6]...))
}

func TestDeleteRangeAll(t *testing.T) {
	for _, min := range []uint64{0, 1} {
		t.Run(fmt.Sprint("from ", min), func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, smallOpts())
			for i := uint64(0); i < 10; i++ {
				require.NoError(t, s.StoreLogs(entries(1+i*5, 5, 1)))
			}
			// raft's removeOldLogs after installing a snapshot.
			require.NoError(t, s.DeleteRange(min, 50))
			f, l := firstLast(t, s)
			assert.Zero(t, f)
			assert.Zero(t, l)
			var out raft.Log
			assert.Same(t, raft.ErrLogNotFound, s.GetLog(50, &out))

			// The next entries follow the snapshot, not the old log.
			want := entries(5001, 5, 3)
			require.NoError(t, s.StoreLogs(want))
			f, l = firstLast(t, s)
			assert.Equal(t, [2]uint64{5001, 5005}, [2]uint64{f, l})
			requireEntries(t, s, want)

			require.NoError(t, s.Close())
			s = openT(t, dir, smallOpts())
			f, l = firstLast(t, s)
			assert.Equal(t, [2]uint64{5001, 5005}, [2]uint64{f, l})
			requireEntries(t, s, want)

			// Emptied and reopened before anything is stored: still empty,
			// and any index may come next, even a lower one.
			require.NoError(t, s.DeleteRange(0, 5005))
			require.NoError(t, s.Close())
			s = openT(t, dir, smallOpts())
			f, l = firstLast(t, s)
			assert.Zero(t, f+l)
			want = entries(3, 4, 4)
			require.NoError(t, s.StoreLogs(want))
			requireEntries(t, s, want)
		})
	}
}

func TestDeleteRangeOthers(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	require.NoError(t, s.StoreLogs(entries(10, 11, 1)))
	assert.ErrorIs(t, s.DeleteRange(12, 15), ErrUnsupportedRange, "a middle range")
	assert.NoError(t, s.DeleteRange(1, 9), "below the log")
	assert.NoError(t, s.DeleteRange(21, 30), "above the log")
	assert.NoError(t, s.DeleteRange(15, 12), "min > max")
	f, l := firstLast(t, s)
	assert.Equal(t, [2]uint64{10, 20}, [2]uint64{f, l})
	requireEntries(t, s, entries(10, 11, 1))
}

func TestLargeCallIsSplit(t *testing.T) {
	opts := Options{Log: storage.Options{Limits: segment.Limits{MaxBatchBytes: 4096}}}
	dir := t.TempDir()
	s := openT(t, dir, opts)
	want := entries(1, 60, 1)
	for _, l := range want {
		l.Data = append(l.Data, make([]byte, 300)...)
	}
	require.NoError(t, s.StoreLogs(want))
	requireEntries(t, s, want)
	segs, err := s.log.Segments()
	require.NoError(t, err)
	size := int64(0)
	for _, sg := range segs {
		size += sg.Size
	}
	assert.Greater(t, size, int64(4096), "several batches")
	// One entry over the limit alone is the log's error.
	big := entries(61, 1, 1)
	big[0].Data = make([]byte, 8192)
	assert.ErrorIs(t, s.StoreLogs(big), storage.ErrInvalidBatch)
	require.NoError(t, s.Close())
	s = openT(t, dir, opts)
	requireEntries(t, s, want)
}

func TestClosed(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	require.NoError(t, err)
	require.NoError(t, s.StoreLogs(entries(1, 3, 1)))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close twice")
	var out raft.Log
	_, err = s.FirstIndex()
	assert.ErrorIs(t, err, ErrClosed)
	_, err = s.LastIndex()
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, s.GetLog(1, &out), ErrClosed)
	assert.ErrorIs(t, s.StoreLogs(entries(4, 1, 1)), ErrClosed)
	assert.ErrorIs(t, s.DeleteRange(1, 2), ErrClosed)
	assert.ErrorIs(t, s.Set([]byte("k"), []byte("v")), ErrClosed)
	_, err = s.Get([]byte("k"))
	assert.ErrorIs(t, err, ErrClosed)
	_, err = s.GetUint64([]byte("k"))
	assert.ErrorIs(t, err, ErrClosed)
}

func TestOneOwner(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	_, err := Open(dir, Options{})
	assert.ErrorIs(t, err, ErrLocked)
	_, err = OpenLogStore(dir, Options{})
	assert.ErrorIs(t, err, storage.ErrLocked)
	require.NoError(t, s.Close())
	s2, err := Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, s2.Close())

	_, err = Open(dir, Options{Log: storage.Options{ReadOnly: true}})
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

// TestResumeCut puts a store in each state that a crash during a cut
// inside a batch can leave, and checks that Open finishes the cut.
func TestResumeCut(t *testing.T) {
	a, b := entries(1, 10, 1), entries(11, 10, 1)
	for _, state := range []string{"record written", "batch truncated", "kept entries appended"} {
		t.Run(state, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, Options{})
			require.NoError(t, s.StoreLogs(a))
			require.NoError(t, s.StoreLogs(b))
			// What DeleteRange(15, 20) would save: entries 11 to 14, at
			// offsets 10 to 13 of the batch at 10.
			kept := make([]segment.Record, 4)
			for i := range kept {
				kept[i] = segment.Record{Timestamp: 1, Value: appendEntry(nil, b[i])}
			}
			batch, err := segment.AppendBatch(nil, kept, segment.EncodeOptions{})
			require.NoError(t, err)
			cut := cutRecord{base: 10, end: 14, batch: batch}
			require.NoError(t, vfs.WriteFileAtomic(vfs.Default, filepath.Join(dir, CutFile), cut.encode(), 0o600))
			switch state {
			case "batch truncated":
				require.NoError(t, s.log.Truncate(10))
			case "kept entries appended":
				require.NoError(t, s.log.Truncate(10))
				_, err := s.log.AppendBatch(append([]byte(nil), batch...))
				require.NoError(t, err)
			}
			require.NoError(t, s.Close())

			s = openT(t, dir, Options{})
			f, l := firstLast(t, s)
			assert.Equal(t, [2]uint64{1, 14}, [2]uint64{f, l})
			requireEntries(t, s, append(a[:10:10], b[:4]...))
			assert.NoFileExists(t, filepath.Join(dir, CutFile))
			require.NoError(t, s.StoreLogs(entries(15, 2, 2)))
		})
	}

	t.Run("damaged record", func(t *testing.T) {
		dir := t.TempDir()
		s := openT(t, dir, Options{})
		require.NoError(t, s.StoreLogs(a))
		require.NoError(t, s.Close())
		cut := cutRecord{base: 0, end: 4, batch: []byte("not a batch")}.encode()
		cut[6] ^= 1
		require.NoError(t, os.WriteFile(filepath.Join(dir, CutFile), cut, 0o600))
		_, err := Open(dir, Options{})
		assert.ErrorIs(t, err, ErrCorrupt)
	})

	t.Run("record that does not fit the log", func(t *testing.T) {
		dir := t.TempDir()
		s := openT(t, dir, Options{})
		require.NoError(t, s.StoreLogs(a))
		require.NoError(t, s.Close())
		batch, err := segment.AppendBatch(nil, []segment.Record{{Timestamp: 1, Value: appendEntry(nil, b[0])}}, segment.EncodeOptions{})
		require.NoError(t, err)
		cut := cutRecord{base: 20, end: 21, batch: batch}.encode()
		require.NoError(t, os.WriteFile(filepath.Join(dir, CutFile), cut, 0o600))
		_, err = Open(dir, Options{})
		assert.ErrorIs(t, err, ErrCorrupt)
	})
}

// TestDamagedBatch flips a byte inside the records of a batch of a sealed
// segment (not its header, whose length field a lookup of the next batch
// may have to read: index entries name a batch's last offset): GetLog
// of its entries fails the batch's checksum, never returns garbage, and
// the other batches read well. (A flip in the active segment is storage's
// business: its open cuts the log at the damaged batch.)
func TestDamagedBatch(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, smallOpts())
	var want []*raft.Log
	for i := uint64(0); i < 20; i++ {
		b := entries(1+i*10, 10, 1)
		require.NoError(t, s.StoreLogs(b))
		want = append(want, b...)
	}
	segs, err := s.log.Segments()
	require.NoError(t, err)
	require.Greater(t, len(segs), 2)
	seg := segs[0]
	require.NoError(t, s.Close())

	f, err := os.OpenFile(seg.Path, os.O_RDWR, 0)
	require.NoError(t, err)
	// The middle of the records of the batch that holds the segment's
	// middle byte: not the first batch, which Open reads.
	fi, err := f.Stat()
	require.NoError(t, err)
	sc := segment.NewScanner(f, fi.Size(), segment.ScanOptions{})
	for sc.Next() && sc.End() <= seg.Size/2 {
	}
	require.NoError(t, sc.Err())
	pos := sc.Pos() + segment.HeaderSize + int64(sc.Header().Size()-segment.HeaderSize)/2
	buf := make([]byte, 1)
	_, err = f.ReadAt(buf, pos)
	require.NoError(t, err)
	buf[0] ^= 0x40
	_, err = f.WriteAt(buf, pos)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s = openT(t, dir, smallOpts())
	f1, l1 := firstLast(t, s)
	require.Equal(t, [2]uint64{1, 200}, [2]uint64{f1, l1})
	bad := 0
	for _, w := range want {
		var got raft.Log
		err := s.GetLog(w.Index, &got)
		if err != nil {
			require.ErrorIs(t, err, storage.ErrCorrupt, "index %d", w.Index)
			require.LessOrEqual(t, w.Index, uint64(seg.NextOffset), "only the damaged segment fails")
			bad++
			continue
		}
		require.Equal(t, norm(w), got, "index %d", w.Index)
	}
	assert.Equal(t, 10, bad, "one batch fails")
}

// TestConcurrentUse runs raft's pattern of use under the race detector:
// one goroutine stores, one compacts from the front, several read.
func TestConcurrentUse(t *testing.T) {
	s := openT(t, t.TempDir(), smallOpts())
	const total = 2000
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 16)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for next := uint64(1); next <= total; {
			n := 1 + int(next%7)
			if err := s.StoreLogs(entries(next, n, 1)); err != nil {
				errs <- err
				return
			}
			next += uint64(n)
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			f, err1 := s.FirstIndex()
			l, err2 := s.LastIndex()
			if err := errors.Join(err1, err2); err != nil {
				errs <- err
				return
			}
			if l > f+200 {
				if err := s.DeleteRange(f, l-200); err != nil {
					errs <- err
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for {
				select {
				case <-done:
					return
				default:
				}
				f, _ := s.FirstIndex()
				l, _ := s.LastIndex()
				if l == 0 {
					continue
				}
				i := f + rng.Uint64N(l-f+1)
				var out raft.Log
				err := s.GetLog(i, &out)
				if err == raft.ErrLogNotFound {
					continue // compacted meanwhile
				}
				if err != nil {
					errs <- err
					return
				}
				if out.Index != i || string(out.Data) != string(entryData(i, 1)) {
					errs <- fmt.Errorf("index %d read as %d %q", i, out.Index, out.Data)
					return
				}
				// Leave the writer the CPU (two cores run four goroutines).
				time.Sleep(20 * time.Microsecond)
			}
		}(uint64(r))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	_, l := firstLast(t, s)
	assert.GreaterOrEqual(t, l, uint64(total))
}
