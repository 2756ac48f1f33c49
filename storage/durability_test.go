package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/faultfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regression tests for the durability and correctness defects of issue 12
// that need no power-cut simulation (those are in internal/crashtest).

// Offsets stop at MaxOffset: an append that would pass it is refused, and
// a segment named past it is refused at open.
func TestOffsetOverflowRefused(t *testing.T) {
	dir := t.TempDir()
	last := filepath.Join(dir, segment.FileName(MaxOffset, segment.LogSuffix))
	require.NoError(t, os.WriteFile(last, nil, 0o640))
	l := openLog(t, dir, small())
	require.Equal(t, int64(MaxOffset), l.EndOffset())

	_, err := l.Append(Record{Value: []byte("a")}, Record{Value: []byte("b")})
	assert.ErrorIs(t, err, ErrOffsetOverflow, "two records at the last offset")
	res, err := l.Append(Record{Value: []byte("last")})
	require.NoError(t, err)
	assert.Equal(t, int64(MaxOffset), res.LastOffset)
	assert.Equal(t, int64(math.MaxInt64), l.EndOffset())
	_, err = l.Append(Record{Value: []byte("one too many")})
	assert.ErrorIs(t, err, ErrOffsetOverflow)
	assert.Equal(t, int64(math.MaxInt64), l.EndOffset(), "nothing past the last offset")
	require.NoError(t, l.Close())

	// Reopened, the full log is readable and still refuses appends.
	l = openLog(t, dir, small())
	got, err := l.Read(MaxOffset, 1<<10)
	require.NoError(t, err)
	h, err := segment.ParseHeader(got, segment.DefaultLimits)
	require.NoError(t, err)
	assert.Equal(t, int64(MaxOffset), h.BaseOffset)
	_, err = l.Append(Record{Value: []byte("x")})
	assert.ErrorIs(t, err, ErrOffsetOverflow)

	dir2 := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir2, segment.FileName(math.MaxInt64, segment.LogSuffix)), nil, 0o640))
	_, err = Open(dir2, small())
	assert.ErrorIs(t, err, ErrCorrupt, "a segment that can hold no record")
}

// A sealed segment's deleted index files are rebuilt from its .log, after
// a clean or an unclean shutdown: reads, Segments and deletion work.
func TestMissingSealedIndexRebuilt(t *testing.T) {
	base := t.TempDir()
	orig := filepath.Join(base, "orig")
	segs := buildLog(t, orig, 600)
	require.Greater(t, len(segs), 3)
	victims := map[string][]string{
		"index":     {segment.IndexSuffix},
		"timeindex": {segment.TimeIndexSuffix},
		"both":      {segment.IndexSuffix, segment.TimeIndexSuffix},
	}
	for name, suffixes := range victims {
		for _, clean := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/clean", false: "/unclean"}[clean], func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "p")
				copyDir(t, orig, dir)
				if !clean {
					require.NoError(t, os.Remove(filepath.Join(dir, cleanShutdownFile)))
				}
				for _, sfx := range suffixes {
					require.NoError(t, os.Remove(filepath.Join(dir, segment.FileName(segs[1].BaseOffset, sfx))))
				}
				// Read-only first: it reads without the index and
				// creates nothing.
				ro := openReadOnly(t, dir, small())
				assert.Equal(t, int64(600), readAll(t, ro, 0))
				require.NoError(t, ro.Close())
				for _, sfx := range suffixes {
					assert.NoFileExists(t, filepath.Join(dir, segment.FileName(segs[1].BaseOffset, sfx)))
				}

				l := openLog(t, dir, small())
				got, err := l.Segments()
				require.NoError(t, err)
				assert.Equal(t, segs[1].MaxTimestamp, got[1].MaxTimestamp, "the rebuilt time index gives the same max timestamp")
				assert.Equal(t, segs[1].NextOffset, got[1].NextOffset)
				assert.Equal(t, int64(600), readAll(t, l, 0))
				off, err := l.OffsetForTime(1_000_000 + segs[1].BaseOffset + 3)
				require.NoError(t, err)
				assert.Equal(t, segs[1].BaseOffset+3, off)
				for _, sfx := range suffixes {
					assert.FileExists(t, filepath.Join(dir, segment.FileName(segs[1].BaseOffset, sfx)))
				}
				res, err := l.DeleteSegmentsBefore(segs[2].BaseOffset)
				require.NoError(t, err)
				assert.Equal(t, 2, res.Segments)
				assert.Equal(t, segs[2].BaseOffset, l.StartOffset())
			})
		}
	}
}

// A clean open verifies the active segment's tail: a last batch with a bad
// checksum is cut, not counted in the end offset.
func TestCleanOpenVerifiesTail(t *testing.T) {
	dir := t.TempDir()
	segs := buildLog(t, dir, 600)
	last := segs[len(segs)-1]
	p := last.Path
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	starts := batchStarts(t, b)
	lastBatch := starts[len(starts)-1]
	b[len(b)-2] ^= 0x40 // a value byte of the last batch: the header stays valid
	require.NoError(t, os.WriteFile(p, b, 0o640))

	l := openLog(t, dir, small())
	assert.False(t, l.OpenStats().Clean, "a damaged tail is not taken as clean")
	h, err := segment.ParseHeader(b[lastBatch:], segment.DefaultLimits)
	require.NoError(t, err)
	assertRecords(t, l, h.BaseOffset, "the bad batch is not part of the log")
	// Below the recovery point of the clean close: reported, not cut.
	require.NotNil(t, l.OpenStats().Damage)
	assert.Equal(t, int64(lastBatch), l.OpenStats().Damage.Pos)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, int64(len(b)), fi.Size(), "nothing cut below the recovery point")
}

// With the manifest and the clean marker present, segments gone since the
// clean close are noticed: gone from the front, the start moves up; gone
// from the middle, Open refuses and names the file.
func TestCleanOpenNoticesMissingSegments(t *testing.T) {
	orig := filepath.Join(t.TempDir(), "orig")
	segs := buildLog(t, orig, 600)
	require.Greater(t, len(segs), 3)
	t.Run("first", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "p")
		copyDir(t, orig, dir)
		removeSegmentFiles(t, dir, segs[0].BaseOffset)
		l := openLog(t, dir, small())
		assert.Equal(t, segs[1].BaseOffset, l.StartOffset())
		assert.Equal(t, int64(600), readAll(t, l, l.StartOffset()))
		_, err := l.Read(0, 100)
		assert.ErrorIs(t, err, ErrOffsetOutOfRange)
	})
	t.Run("middle", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "p")
		copyDir(t, orig, dir)
		removeSegmentFiles(t, dir, segs[2].BaseOffset)
		for i := 0; i < 2; i++ { // the refusal changes nothing: again
			_, err := Open(dir, small())
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), segment.FileName(segs[2].BaseOffset, segment.LogSuffix))
		}
	})
}

// Readers beside a Truncate never get an error other than
// ErrOffsetOutOfRange: the end is lowered before any byte is cut.
func TestTruncateBesideReaders(t *testing.T) {
	l := openFilled(t, t.TempDir(), Options{SegmentBytes: 64 << 10, IndexIntervalBytes: 256}, 2000, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for ctx.Err() == nil {
				off := max(l.EndOffset()-5, l.StartOffset())
				var err error
				if buf, err = l.ReadInto(buf, off, 1<<10); err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
					errs <- err
					return
				}
				if _, err := l.OffsetForTime(1_000_000 + off); err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; ctx.Err() == nil && i < 300; i++ {
		require.NoError(t, l.Truncate(l.EndOffset()-50))
		fill(t, l, 50, 10)
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err, "a reader beside Truncate")
	}
}

// Concurrent checkpoint writers (Sync checkpointing a moved high
// watermark, the interval flusher, rolls) never collide on a temporary
// file, and the files end with the last values.
func TestConcurrentCheckpoints(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, small())
	var wg sync.WaitGroup
	errs := make(chan error, 8*50*2)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := l.Append(Record{Value: []byte("v")}); err != nil {
					errs <- err
					return
				}
				if err := l.SetHighWatermark(l.EndOffset()); err != nil {
					errs <- err
					return
				}
				errs <- l.Sync()
				errs <- l.checkpoint() // as the interval flusher and rolls do
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.checkpoint())
	hw, ok, err := readCheckpoint(vfs.Default, dir, highWatermarkFile)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, l.HighWatermark(), hw)
	rp, ok, err := readCheckpoint(vfs.Default, dir, recoveryPointFile)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, l.EndOffset(), rp)
	matches, err := filepath.Glob(filepath.Join(dir, "*.tmp"))
	require.NoError(t, err)
	assert.Empty(t, matches, "no temporary file left behind")
}

// Sync is one fsync of the log (no checkpoint file when nothing but the
// log moved).
func TestSyncIsOneFsync(t *testing.T) {
	fsys := faultfs.New(vfs.Default)
	opts := small()
	opts.SegmentBytes = 1 << 20
	opts.FS = fsys
	l := openFilled(t, t.TempDir(), opts, 10, 10)
	require.NoError(t, l.Sync())
	for i := 0; i < 5; i++ {
		fill(t, l, 10, 10)
		fsys.Reset()
		require.NoError(t, l.Sync())
		assert.Equal(t, 1, fsys.Calls(faultfs.OpSync), "one fsync per Sync")
		assert.Zero(t, fsys.Calls(faultfs.OpSyncDir|faultfs.OpRename|faultfs.OpCreate), "no checkpoint file")
	}
}

// A roll whose index fsync fails fails the log: nothing past the segment
// is acknowledged until a reopen. With everything flushed before it, the
// roll seals the segment itself and returns the error; otherwise the
// background flusher seals it, and the log fails there, before the
// recovery point passes the segment.
func TestRollIndexFsyncFailureFailsLog(t *testing.T) {
	for _, flushed := range []bool{true, false} {
		t.Run(fmt.Sprintf("flushed=%v", flushed), func(t *testing.T) {
			dir := t.TempDir()
			fsys := faultfs.New(vfs.Default)
			l := openFilled(t, dir, smallOn(fsys), 20, 5)
			if flushed {
				require.NoError(t, l.Sync())
			}
			rolled := l.active()
			fsys.Add(faultfs.Rule{Ops: faultfs.OpSync, Path: segment.IndexSuffix, Err: syscall.EIO})
			err := l.Roll()
			if flushed {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrFailed)
			} else {
				require.NoError(t, err, "the roll leaves the seal to the background")
				require.Eventually(t, func() bool { return l.failure() != nil }, 30*time.Second, time.Millisecond)
				assert.Less(t, l.FlushedOffset(), rolled.NextOffset())
				if rp, ok, err := readCheckpoint(vfs.Default, dir, recoveryPointFile); ok && err == nil {
					assert.LessOrEqual(t, rp, rolled.Base())
				}
			}
			_, err = l.Append(Record{Value: []byte("after")})
			assert.ErrorIs(t, err, ErrFailed)
		})
	}
}

// A roll leaves the fsync of the sealed segment's .log to the background:
// appends go on while it runs, and the recovery point stays at the rolled
// segment's base until it is done, then moves past it.
func TestRollFsyncInBackground(t *testing.T) {
	dir := t.TempDir()
	release := make(chan struct{})
	opts := small()
	var hold atomic.Bool
	opts.OnFsync = func(time.Duration) { // holds the flusher after its fsync
		if hold.Load() {
			<-release
		}
	}
	l := openFilled(t, dir, opts, 20, 5)
	rolled := l.active()
	require.NoError(t, l.Sync())
	fill(t, l, 10, 5)
	hold.Store(true)
	require.NoError(t, l.Roll())
	fill(t, l, 20, 5) // not waiting for the fsync
	require.NoError(t, l.checkpoint())
	rp, ok, err := readCheckpoint(vfs.Default, dir, recoveryPointFile)
	require.NoError(t, err)
	if ok {
		assert.LessOrEqual(t, rp, rolled.Base(), "no recovery point past a rolled segment before its fsync")
	}
	assert.Less(t, l.FlushedOffset(), rolled.NextOffset())
	close(release)
	waitRollFlushed(t, l)
	rp, ok, err = readCheckpoint(vfs.Default, dir, recoveryPointFile)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, rolled.NextOffset(), rp, "checkpointed after the fsync")
	assert.Equal(t, rolled.NextOffset(), l.FlushedOffset())
}

// A rolled segment whose background fsync fails fails the log, as a failed
// fsync in an append does: nothing more is acknowledged, and the recovery
// point never passes the segment.
func TestRollFsyncFailureFailsLog(t *testing.T) {
	dir := t.TempDir()
	fsys := faultfs.New(vfs.Default)
	l := openFilled(t, dir, smallOn(fsys), 20, 5)
	rolled := l.active()
	fsys.Add(faultfs.Rule{Ops: faultfs.OpSync, Path: segment.LogSuffix, Every: true, Err: syscall.EIO})
	require.NoError(t, l.Roll(), "the roll does not wait for the fsync")
	require.Eventually(t, func() bool { return l.failure() != nil }, 30*time.Second, time.Millisecond)
	_, err := l.Append(Record{Value: []byte("after")})
	assert.ErrorIs(t, err, ErrFailed)
	assert.ErrorIs(t, l.Sync(), ErrFailed)
	st, err := l.Stats()
	require.NoError(t, err)
	assert.NotZero(t, st.FailedFsyncs)
	assert.Less(t, l.FlushedOffset(), rolled.NextOffset())
	if rp, ok, err := readCheckpoint(vfs.Default, dir, recoveryPointFile); ok && err == nil {
		assert.LessOrEqual(t, rp, rolled.Base())
	}
}

// The age of the active segment counts from its first batch's timestamp,
// which survives a reopen and a truncation: a process restarting more
// often than SegmentAge still rolls a quiet segment.
func TestSegmentAgeSurvivesReopenAndTruncate(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	now := t0
	opts := Options{SegmentAge: time.Hour, Now: func() time.Time { return now }}
	dir := t.TempDir()
	appendAt := func(t *testing.T, l *Log, n int) {
		for i := 0; i < n; i++ {
			_, err := l.Append(Record{Timestamp: now.UnixMilli(), Value: []byte("v")})
			require.NoError(t, err)
		}
	}
	segments := func(t *testing.T, l *Log) int {
		segs, err := l.Segments()
		require.NoError(t, err)
		return len(segs)
	}
	l := openLog(t, dir, opts)
	appendAt(t, l, 3)
	require.NoError(t, l.Close())

	// Restarts every 25 minutes: the first batch is over an hour old at
	// the third, and the segment rolls.
	for i := 0; i < 3; i++ {
		now = now.Add(25 * time.Minute)
		l = openLog(t, dir, opts)
		appendAt(t, l, 1)
		if i < 2 {
			assert.Equal(t, 1, segments(t, l), "restart %d: younger than an hour", i)
			require.NoError(t, l.Close())
		}
	}
	defer l.Close()
	assert.Equal(t, 2, segments(t, l), "the quiet segment rolled")

	// A truncation that keeps the active segment's first batch keeps its age.
	now = now.Add(2 * time.Hour)
	appendAt(t, l, 2)
	require.Equal(t, 3, segments(t, l))
	now = now.Add(2 * time.Hour)
	require.NoError(t, l.Truncate(l.EndOffset()-1))
	appendAt(t, l, 1)
	assert.Equal(t, 4, segments(t, l), "the age counts from the first batch, not the truncation")
}

// A read-only open of a partition no writer has opened yet is an empty
// log, and follows the writer once it starts.
func TestReadOnlyEmptyPartition(t *testing.T) {
	dir := t.TempDir()
	ro := openReadOnly(t, dir, small())
	assert.Equal(t, int64(0), ro.StartOffset())
	assert.Equal(t, int64(0), ro.EndOffset())
	got, err := ro.Read(0, 100)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = ro.Read(1, 100)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
	segs, err := ro.Segments()
	require.NoError(t, err)
	assert.Empty(t, segs)
	moved, err := ro.Refresh()
	require.NoError(t, err)
	assert.False(t, moved)

	w := openLog(t, dir, small())
	waited := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		waited <- ro.Wait(ctx, 0)
	}()
	fill(t, w, 100, 5)
	require.NoError(t, <-waited)
	_, err = ro.Refresh()
	require.NoError(t, err)
	assertRecords(t, ro, int64(100))
}

// OpenStore makes a root it creates durable: the parent's entry is
// fsynced (a failed parent fsync fails the open).
func TestOpenStoreSyncsNewRootParent(t *testing.T) {
	parent := t.TempDir()
	fsys := faultfs.New(vfs.Default)
	fsys.Add(faultfs.Rule{Ops: faultfs.OpSyncDir, Err: syscall.EIO})
	_, err := OpenStore(filepath.Join(parent, "data"), StoreOptions{Log: Options{FS: fsys}})
	require.Error(t, err, "the parent's fsync failed")
	assert.Contains(t, fsys.LastInjected(), parent)

	fsys.Reset()
	s, err := OpenStore(filepath.Join(parent, "data2"), StoreOptions{Log: Options{FS: fsys}})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, 1, fsys.Calls(faultfs.OpSyncDir), "one fsync: the parent of the new root")
}

// Stats counts appends, fsyncs and reads since Open, and OnFsync sees
// every fsync.
func TestStatsCounters(t *testing.T) {
	var observed atomic.Int64
	opts := small()
	opts.Sync = SyncAlways
	opts.OnFsync = func(d time.Duration) { observed.Add(1) }
	l := openFilled(t, t.TempDir(), opts, 30, 3)
	_, err := l.Read(0, 1<<20)
	require.NoError(t, err)
	st, err := l.Stats()
	require.NoError(t, err)
	assert.Equal(t, int64(10), st.AppendedBatches)
	assert.Equal(t, int64(30), st.AppendedRecords)
	assert.Positive(t, st.AppendedBytes)
	assert.GreaterOrEqual(t, st.Fsyncs, int64(10), "one per append at least (rolls add theirs)")
	assert.Equal(t, st.Fsyncs, observed.Load())
	assert.Positive(t, st.FsyncTime)
	assert.Positive(t, st.ReadBatchBytes)
	assert.Positive(t, st.OpenTime)
}

// ReadRecord returns exactly the record at each offset, from uncompressed
// and compressed batches, across segments, with headers; and the range
// errors of a read.
func TestReadRecord(t *testing.T) {
	for _, codec := range []segment.Codec{segment.CodecNone, segment.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			opts := small()
			opts.Compression = codec
			l := openLog(t, t.TempDir(), opts)
			for i := 0; i < 40; i++ {
				var recs []Record
				for j := 0; j < 7; j++ {
					off := l.EndOffset() + int64(j)
					recs = append(recs, Record{Timestamp: 1_000_000 + off, Key: []byte(fmt.Sprint(off)), Value: val(off),
						Headers: []segment.RecordHeader{{Key: []byte("h"), Value: []byte(fmt.Sprint(off))}}})
				}
				_, err := l.Append(recs...)
				require.NoError(t, err)
			}
			require.NoError(t, l.Roll())
			fill(t, l, 5, 5)
			var buf []byte
			for off := int64(0); off < 280; off++ {
				var rec Record
				var err error
				rec, buf, err = l.ReadRecord(buf, off)
				require.NoError(t, err)
				assert.Equal(t, off, rec.Offset)
				assert.Equal(t, string(val(off)), string(rec.Value))
				assert.Equal(t, fmt.Sprint(off), string(rec.Key))
				assert.Equal(t, int64(1_000_000+off), rec.Timestamp)
				require.Len(t, rec.Headers, 1)
				assert.Equal(t, fmt.Sprint(off), string(rec.Headers[0].Value))
			}
			_, _, err := l.ReadRecord(nil, l.EndOffset())
			assert.ErrorIs(t, err, ErrOffsetOutOfRange)
			_, _, err = l.ReadRecord(nil, -1)
			assert.ErrorIs(t, err, ErrOffsetOutOfRange)
		})
	}
}

// CloseUnflushed leaves no clean marker: the next Open recovers, and (the
// page cache surviving, as in a process exit) every record is there.
func TestCloseUnflushed(t *testing.T) {
	dir := t.TempDir()
	fsys := faultfs.New(vfs.Default)
	l := openFilled(t, dir, smallOn(fsys), 200, 5)
	waitRollFlushed(t, l) // its checkpoints are not CloseUnflushed's
	before := l.FlushedOffset()
	fsys.Reset()
	require.NoError(t, l.CloseUnflushed())
	assert.Zero(t, fsys.Calls(faultfs.OpCreate|faultfs.OpRename), "no checkpoint, no marker")
	assert.Zero(t, fsys.Calls(faultfs.OpSync|faultfs.OpSyncDir), "no fsync")
	assert.NoFileExists(t, filepath.Join(dir, cleanShutdownFile))
	_, err := l.Append(Record{Value: []byte("x")})
	assert.ErrorIs(t, err, ErrClosed)

	l = openLog(t, dir, small())
	assert.False(t, l.OpenStats().Clean)
	assert.Less(t, before, int64(200), "records were left unflushed")
	assert.Equal(t, int64(200), readAll(t, l, 0))
}

// BenchmarkClose: Close after 64 MiB of appends without fsync (it fsyncs
// them) beside CloseUnflushed (it does not), in the same run.
func BenchmarkClose(b *testing.B) {
	batch := encodedBatch(b, 100, 1024)
	for _, fast := range []bool{false, true} {
		b.Run(map[bool]string{false: "close", true: "close-unflushed"}[fast], func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				l, err := Open(b.TempDir(), Options{})
				if err != nil {
					b.Fatal(err)
				}
				for n := 0; n < (64<<20)/len(batch); n++ {
					if _, err := l.AppendBatch(batch); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if fast {
					err = l.CloseUnflushed()
				} else {
					err = l.Close()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A roll leaves the whole seal of the old segment to the background
// flusher (the indexes' trim waited for the journal for 50-100 ms under
// heavy writeback): until the flusher runs, the old segment's index
// files keep their full size; then they are trimmed and the recovery
// point passes the segment.
func TestRollLeavesSealToBackground(t *testing.T) {
	dir := t.TempDir()
	l := openFilled(t, dir, small(), 20, 5)
	rolled := l.active()
	release := holdFlusher(l)
	require.NoError(t, l.Roll())
	fill(t, l, 10, 5)
	assert.Equal(t, int64(small().MaxIndexBytes), indexFileSize(t, dir, rolled.Base()), "not trimmed by the roll")
	release()
	waitRollFlushed(t, l)
	assert.Less(t, indexFileSize(t, dir, rolled.Base()), int64(small().MaxIndexBytes), "trimmed by the flusher")
	assert.GreaterOrEqual(t, l.FlushedOffset(), rolled.NextOffset())
	assert.Equal(t, int64(30), readAll(t, l, 0))
}

// unsealedRolls counts the rolled segments whose seal waits for the
// flusher.
func unsealedRolls(l *Log) int {
	l.rollMu.Lock()
	defer l.rollMu.Unlock()
	n := 0
	for _, r := range l.rollPending {
		if r.unsealed {
			n++
		}
	}
	return n
}

// holdFlusher holds the background flusher of rolled segments out, as a
// group commit in progress would, until release is called.
func holdFlusher(l *Log) (release func()) {
	l.syncMu.Lock()
	for l.syncing {
		l.syncCond.Wait()
	}
	l.syncing = true
	l.syncMu.Unlock()
	return func() {
		l.syncMu.Lock()
		l.syncing = false
		l.syncCond.Broadcast()
		l.syncMu.Unlock()
	}
}

// indexFileSize returns the size of the offset index file of the segment
// at base in dir.
func indexFileSize(t testing.TB, dir string, base int64) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, segment.FileName(base, segment.IndexSuffix)))
	require.NoError(t, err)
	return fi.Size()
}

// A follower (another process's view) that opens while a rolled segment
// waits unsealed for the writer's flusher opens it as it opens the active
// segment: the flusher cutting its .log's tail and trimming its index
// under the follower's feet neither faults the follower (a map of the
// full-size index) nor makes it read the preallocated tail as data.
func TestFollowerOpensUnsealedRolledSegment(t *testing.T) {
	dir := t.TempDir()
	opts := rollOpts()
	w := openLog(t, dir, opts)
	fillSynced(t, w, 200, 5)
	rolled := w.active()
	requireZeroTail(t, rolled)
	release := holdFlusher(w)
	require.NoError(t, w.Roll())
	fill(t, w, 50, 5)
	require.Equal(t, int64(opts.MaxIndexBytes), indexFileSize(t, dir, rolled.Base()), "precondition: the rolled segment is unsealed")

	r := openReadOnly(t, dir, opts)
	require.Equal(t, int64(250), r.EndOffset())
	assert.Equal(t, int64(250), readAll(t, r, 0), "before the seal")
	release()
	waitRollFlushed(t, w)
	require.Less(t, indexFileSize(t, dir, rolled.Base()), int64(opts.MaxIndexBytes), "precondition: sealed by the flusher")

	fill(t, w, 20, 5)
	_, err := r.Refresh()
	require.NoError(t, err)
	assert.Equal(t, int64(270), r.EndOffset())
	for off := rolled.Base(); off < rolled.NextOffset(); off += 7 {
		rec, _, err := r.ReadRecord(nil, off)
		require.NoError(t, err, "offset %d", off)
		assert.Equal(t, string(val(off)), string(rec.Value))
	}
	assert.Equal(t, int64(270), readAll(t, r, 0), "after the seal")
	// A follower opened after the flusher passed the segment opens it
	// sealed, and reads the same.
	r2 := openReadOnly(t, dir, opts)
	assert.Equal(t, int64(270), readAll(t, r2, 0))
}

// Rolls leave at most maxUnsealedRolls segments unsealed to the flusher;
// past that a roll seals the old segment itself (all but the .log's
// fsync), so that a flusher that falls behind holds appenders back rather
// than leaving thousands of seals to a Checkpoint.
func TestRollBoundsUnsealedSegments(t *testing.T) {
	dir := t.TempDir()
	l := openFilled(t, dir, small(), 10, 5)
	release := holdFlusher(l)
	var rolled []int64
	for range maxUnsealedRolls + 3 {
		rolled = append(rolled, l.active().Base())
		require.NoError(t, l.Roll())
		fill(t, l, 10, 5)
	}
	full := 0
	for i, base := range rolled {
		if indexFileSize(t, dir, base) == int64(small().MaxIndexBytes) {
			full++
			assert.Less(t, i, maxUnsealedRolls, "segment %d left unsealed past the bound", i)
		}
	}
	assert.Equal(t, maxUnsealedRolls, full)
	assert.Equal(t, maxUnsealedRolls, unsealedRolls(l))
	release()
	require.NoError(t, l.Checkpoint())
	assert.Zero(t, unsealedRolls(l))
	for _, base := range rolled {
		assert.Less(t, indexFileSize(t, dir, base), int64(small().MaxIndexBytes))
	}
	end := int64(10 * (maxUnsealedRolls + 4))
	assert.Equal(t, end, l.FlushedOffset())
	assert.Equal(t, end, readAll(t, l, 0))
}
