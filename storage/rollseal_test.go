package storage

// Tests of a roll that leaves the old segment's seal to the background
// flusher: the recovery point, the sizes reported and the files on disk
// while seals are pending, and Checkpoint and Close under rolling load.

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/crashfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitForStack waits until some goroutine's stack contains all of fns.
func waitForStack(t *testing.T, fns ...string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	require.Eventually(t, func() bool {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			all := true
			for _, fn := range fns {
				all = all && strings.Contains(g, fn)
			}
			if all {
				return true
			}
		}
		return false
	}, 10*time.Second, 100*time.Microsecond, "a goroutine in %v", fns)
}

// rollBlockedOnRollMu is what waitForStack looks for: the roll waiting
// for roll.mu, which the test holds.
var rollBlockedOnRollMu = []string{"storage.(*Log).rollLocked", "sync.(*Mutex).Lock"}

// A roll registers the old segment with the flusher before it reads the
// flushed offset. Otherwise a group commit that raises the flushed offset
// to the end between the two, then a checkpoint (the interval flusher does
// both without writeMu), writes a recovery point at the old segment's end
// while the roll leaves it unsealed: a follower then maps its full-size
// index as sealed and faults once the flusher trims it. The test widens
// the window by holding roll.mu while the roll waits for it.
func TestRollRegistersBeforeReadingFlushed(t *testing.T) {
	dir := t.TempDir()
	opts := rollOpts()
	w := openLog(t, dir, opts)
	fillSynced(t, w, 200, 5)
	old := w.active()
	requireZeroTail(t, old)

	w.roll.mu.Lock()
	rolled := make(chan error, 1)
	go func() { rolled <- w.Roll() }()
	waitForStack(t, rollBlockedOnRollMu...)
	// The roll has decided background=true and has not registered old.
	require.NoError(t, w.Sync()) // flushed = end (old's end)
	release := holdFlusher(w)    // keep the flusher's seal out for now
	w.roll.mu.Unlock()
	require.NoError(t, w.checkpoint()) // as flushIfDirty / Checkpoint do
	require.NoError(t, <-rolled)

	rp, ok, err := readCheckpoint(w.opts.FS, dir, recoveryPointFile)
	require.NoError(t, err)
	require.True(t, ok)
	unsealed := indexFileSize(t, dir, old.Base()) == int64(opts.MaxIndexBytes)
	// The commit's own invariant: "A segment ends at or below the
	// recovery point only after the flusher sealed and fsynced it."
	assert.False(t, rp >= old.NextOffset() && unsealed,
		"recovery point %d is at/past the end %d of segment %d, which is still unsealed (index file %d bytes)",
		rp, old.NextOffset(), old.Base(), indexFileSize(t, dir, old.Base()))

	// Consequence: a follower opened now takes old for sealed
	// (segment.Open: full-size index mapped, .log size from the file
	// with its preallocated tail), and the flusher then trims under it.
	r := openReadOnly(t, dir, opts)
	require.Equal(t, int64(200), readAll(t, r, 0), "before the seal")
	release()
	waitRollFlushed(t, w)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("follower faulted reading segment %d after the writer sealed it: %v\n%s", old.Base(), p, firstFrames(debug.Stack()))
			}
		}()
		for off := old.Base(); off < old.NextOffset(); off += 7 {
			_, _, err := r.ReadRecord(nil, off)
			if !assert.NoError(t, err, "offset %d", off) {
				break
			}
		}
	}()
}

// firstFrames keeps the part of a stack trace that shows where a fault was.
func firstFrames(st []byte) string {
	lines := strings.Split(string(st), "\n")
	var keep []string
	for _, l := range lines {
		if strings.Contains(l, "seglog/index.") || strings.Contains(l, "seglog/segment.") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	return strings.Join(keep, "\n")
}

// A follower's OffsetForTime finds the largest timestamp of a rolled
// segment it opened as followed (past the writer's recovery point, or
// with that file missing), also when it is in an early batch
// (non-monotonic producer timestamps): a followed segment takes the
// largest timestamp of its time index, not only of the batches it scanned.
func TestFollowerOffsetForTimeOnRolledSegment(t *testing.T) {
	for _, mode := range []string{"unsealed window", "missing recovery point"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			opts := rollOpts()
			w := openLog(t, dir, opts)
			// First batch: the segment's largest timestamp. Then older ones.
			_, err := w.Append(Record{Timestamp: 9_000_000, Value: val(0)})
			require.NoError(t, err)
			fill(t, w, 199, 5) // timestamps 1_000_001 ...
			old := w.active()
			var release func()
			if mode == "unsealed window" {
				release = holdFlusher(w)
			}
			require.NoError(t, w.Roll())
			fill(t, w, 50, 5)
			if mode == "missing recovery point" {
				require.NoError(t, w.Checkpoint())
				require.NoError(t, os.Remove(filepath.Join(dir, recoveryPointFile)))
			}

			want, err := w.OffsetForTime(5_000_000)
			require.NoError(t, err)
			require.Equal(t, old.Base(), want, "the writer finds the first batch")

			r := openReadOnly(t, dir, opts)
			got, err := r.OffsetForTime(5_000_000)
			require.NoError(t, err)
			assert.Equal(t, want, got, "follower's OffsetForTime(5_000_000) (writer says %d, end is %d)", want, r.EndOffset())
			if release != nil {
				release()
				waitRollFlushed(t, w)
				got, err = r.OffsetForTime(5_000_000)
				require.NoError(t, err)
				assert.Equal(t, want, got, "after the writer sealed the segment")
			}
		})
	}
}

// The race of TestRollRegistersBeforeReadingFlushed, then a power cut
// before the flusher seals the segment: the segment must not be below a
// durable recovery point, where the next open would trust its
// preallocated zero tail as data.
func TestRollRaceThenPowerCut(t *testing.T) {
	dir := t.TempDir()
	fsys, err := crashfs.New(dir, crashfs.Options{Mode: crashfs.Strict})
	require.NoError(t, err)
	opts := rollOpts()
	opts.FS = fsys
	w, err := Open(dir, opts)
	require.NoError(t, err)
	fillSynced(t, w, 200, 5)
	old := w.active()
	dataSize, err := old.Size()
	require.NoError(t, err)
	requireZeroTail(t, old)

	w.roll.mu.Lock()
	rolled := make(chan error, 1)
	go func() { rolled <- w.Roll() }()
	waitForStack(t, rollBlockedOnRollMu...)
	require.NoError(t, w.Sync()) // all 200 records acknowledged durable
	release := holdFlusher(w)
	w.roll.mu.Unlock()
	require.NoError(t, w.checkpoint())
	require.NoError(t, <-rolled)
	// Appends go on; a replica's high watermark moves, and the next roll
	// checkpoints it (a durable write: the directory's fsync makes the
	// new segments' entries durable).
	fill(t, w, 50, 5)
	require.NoError(t, w.SetHighWatermark(250))
	require.NoError(t, w.Roll())

	_, rep, err := fsys.Restart(crashfs.Options{})
	require.NoError(t, err)
	t.Logf("%s", rep)
	release()
	_ = w.CloseUnflushed()

	opts.FS = vfs.Default
	l := openLog(t, dir, opts)
	st := l.OpenStats()
	t.Logf("reopen: %+v", st)
	assertRecords(t, l, 200)
	infos, err := l.Segments()
	require.NoError(t, err)
	require.NotEmpty(t, infos)
	fi, err := os.Stat(filepath.Join(dir, segment.FileName(old.Base(), segment.LogSuffix)))
	require.NoError(t, err)
	assert.Equal(t, dataSize, fi.Size(), "segment %d .log on disk: %d bytes of data, file %d bytes (preallocated tail kept: it ended at/below the recovery point, so it was not rescanned)", old.Base(), dataSize, fi.Size())
	assert.Equal(t, dataSize, infos[0].Size, "Segments() size of segment %d", old.Base())
	require.NoError(t, l.Close())
	l = openLog(t, dir, opts)
	assertRecords(t, l, 200)
}

// Checkpoint (and Close) while three appenders keep rolling small
// segments: syncRolled(nil) loops while a rolled segment is due, so it
// returned only once it overtook the rolls, which it did not while
// rolls cost no fsync and seals six: it now stops at the segments pending
// when it was called.
func TestCheckpointUnderRollingLoad(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, small())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for a := 0; a < 3; a++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := make([]byte, 200)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := l.Append(Record{Value: v}, Record{Value: v}); err != nil {
					return
				}
			}
		}()
	}
	// Under way: the appenders have rolled a few segments.
	require.Eventually(t, func() bool { return len(l.segments()) > 8 }, 30*time.Second, time.Millisecond, "the appenders roll segments")
	var worst time.Duration
	for i := 0; i < 5; i++ {
		done := make(chan error, 1)
		t0 := time.Now()
		go func() { done <- l.Checkpoint() }()
		select {
		case err := <-done:
			require.NoError(t, err)
			worst = max(worst, time.Since(t0))
		case <-time.After(10 * time.Second):
			l.roll.mu.Lock()
			pending := len(l.roll.pending)
			l.roll.mu.Unlock()
			st, _ := l.Stats()
			t.Logf("after 10 s: %d segments, %d rolled segments pending, %d unsealed, end %d, flushed %d", st.Segments, pending, unsealedRolls(l), l.EndOffset(), l.FlushedOffset())
			close(stop)
			wg.Wait()
			<-done
			t.Fatalf("Checkpoint did not return within 10 s under load (returned %v after the appenders stopped)", time.Since(t0))
		}
	}
	close(stop)
	wg.Wait()
	st, _ := l.Stats()
	t.Logf("worst Checkpoint %v; %d segments, unsealed now %d", worst, st.Segments, unsealedRolls(l))
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// A follower opened while rolled segments wait unsealed copies each one's
// full preallocated index files into the heap (copyFollowed: a buffer of
// the file's size, MaxIndexBytes = 10 MiB by default, kept alive by the
// entries' slice), and keeps them for as long as it lives.
func TestFollowerHeapWithUnsealedSegments(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 64 << 10} // default MaxIndexBytes (10 MiB)
	w := openFilled(t, dir, opts, 100, 5)
	release := holdFlusher(w)
	for i := 0; i < maxUnsealedRolls; i++ {
		require.NoError(t, w.Roll())
		fill(t, w, 100, 5)
	}
	before := heapInUse()
	r := openReadOnly(t, dir, opts)
	after := heapInUse()
	require.Equal(t, int64(900), r.EndOffset())
	grew := int64(after) - int64(before)
	t.Logf("follower of %d segments (%d unsealed): heap in use grew by %d MiB", len(r.segments()), maxUnsealedRolls, grew>>20)
	assert.Less(t, grew, int64(64<<20), "heap held by one partition's follower")
	release()
	waitRollFlushed(t, w)
	_, err := r.Refresh()
	require.NoError(t, err)
	t.Logf("after the writer sealed them: %d MiB still held", (int64(heapInUse())-int64(before))>>20)
}

// A follower that followed a segment as its tail keeps it followed after
// the writer rolls; its OffsetForTime still finds the segment's largest
// timestamp in an early batch.
func TestFollowedTailMaxTimestamp(t *testing.T) {
	dir := t.TempDir()
	opts := rollOpts()
	w := openLog(t, dir, opts)
	_, err := w.Append(Record{Timestamp: 9_000_000, Value: val(0)})
	require.NoError(t, err)
	fill(t, w, 199, 5)
	r := openReadOnly(t, dir, opts)
	require.NoError(t, w.Roll())
	fill(t, w, 50, 5)
	require.NoError(t, w.Checkpoint())
	_, err = r.Refresh()
	require.NoError(t, err)
	want, err := w.OffsetForTime(5_000_000)
	require.NoError(t, err)
	got, err := r.OffsetForTime(5_000_000)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
