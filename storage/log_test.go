package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendReadAcrossRolls(t *testing.T) {
	l := openFilled(t, t.TempDir(), small(), 2000, 7)
	segs, err := l.Segments()
	require.NoError(t, err)
	require.Greater(t, len(segs), 10, "segments rolled")
	assert.Equal(t, int64(2000), readAll(t, l, 0))
	for i := 1; i < len(segs); i++ {
		assert.Equal(t, segs[i-1].NextOffset, segs[i].BaseOffset)
	}
	// Reads at every segment boundary.
	for _, s := range segs {
		for _, off := range []int64{s.BaseOffset, s.NextOffset - 1} {
			if off < 0 || off >= 2000 {
				continue
			}
			b, err := l.Read(off, 1)
			require.NoError(t, err)
			h, err := segment.ParseHeader(b, segment.DefaultLimits)
			require.NoError(t, err)
			assert.LessOrEqual(t, h.BaseOffset, off)
			assert.GreaterOrEqual(t, h.LastOffset(), off)
			assert.Equal(t, h.Size(), len(b), "one whole batch when maxBytes is small")
		}
	}
}

func TestReadBoundaries(t *testing.T) {
	l := openLog(t, t.TempDir(), small())
	b, err := l.Read(0, 100)
	require.NoError(t, err)
	assert.Empty(t, b, "an empty log read at its end")
	fill(t, l, 100, 10)
	b, err = l.Read(100, 100)
	require.NoError(t, err)
	assert.Empty(t, b, "read at EndOffset: nothing, no error")
	_, err = l.Read(101, 100)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
	_, err = l.Read(-1, 100)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
	b, err = l.Read(55, 1<<20)
	require.NoError(t, err)
	var it segment.RecordIter
	require.NoError(t, it.Reset(b[:mustHeader(t, b).Size()], segment.DefaultLimits))
	require.True(t, it.Next())
	assert.Equal(t, int64(50), it.Record().Offset, "reads start at the batch that holds the offset")
}

func TestWaitWakesAndCancels(t *testing.T) {
	l := openLog(t, t.TempDir(), small())
	done := make(chan error, 1)
	go func() { done <- l.Wait(context.Background(), 0) }()
	waitForWaiters(t, l, 1)
	requireBlocked(t, done, "Wait returned before an append")
	fill(t, l, 1, 1)
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not wake on append")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- l.Wait(ctx, 1) }()
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	go func() { done <- l.Wait(context.Background(), 5) }()
	waitForWaiters(t, l, 1)
	require.NoError(t, l.Close())
	assert.ErrorIs(t, <-done, ErrClosed)
}

func TestTruncateThenAppend(t *testing.T) {
	dir := t.TempDir()
	l := openFilled(t, dir, small(), 1000, 1)
	require.NoError(t, l.Truncate(400))
	assert.Equal(t, int64(400), l.EndOffset())
	_, err := l.Read(401, 10)
	assert.ErrorIs(t, err, ErrOffsetOutOfRange)
	fill(t, l, 100, 3)
	assert.Equal(t, int64(500), readAll(t, l, 0))
	require.NoError(t, l.Close())
	l = openLog(t, dir, small())
	assertRecords(t, l, int64(500))
}

func TestCleanReopenDoesNotRescan(t *testing.T) {
	dir := t.TempDir()
	l := openFilled(t, dir, small(), 3000, 5)
	require.NoError(t, l.Close())
	l = openLog(t, dir, small())
	st := l.OpenStats()
	assert.True(t, st.Clean)
	assert.Zero(t, st.RecoveredSegs)
	assertRecords(t, l, int64(3000))
}

// copyDir copies a log directory as it is now: the state a crash leaves
// (without fsync the copy may hold more than the disk would, never less).
// A file that vanishes between the listing and its read (a checkpoint's
// temporary file renamed into place by the background flusher) is not
// part of that state and is left out.
func copyDir(t testing.TB, src, dst string) {
	require.NoError(t, os.MkdirAll(dst, 0o750))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o640))
	}
}

func TestUncleanReopenRescansOnlyPastRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	l := openFilled(t, dir, small(), 3000, 5)
	waitRollFlushed(t, l)
	segs, _ := l.Segments()
	crashed := filepath.Join(t.TempDir(), "crashed")
	copyDir(t, dir, crashed)
	require.NoError(t, l.Close())

	r := openLog(t, crashed, small())
	st := r.OpenStats()
	assert.False(t, st.Clean)
	assert.Equal(t, 1, st.RecoveredSegs, "only the active segment is past the recovery point (segments before it were fsynced after their roll) of %d", len(segs))
	assertRecords(t, r, int64(3000))
}

func TestOffsetForTime(t *testing.T) {
	l := openFilled(t, t.TempDir(), small(), 1000, 4) // record o has timestamp 1e6+o
	for _, tc := range []struct{ ts, want int64 }{{0, 0}, {1_000_000, 0}, {1_000_001, 1}, {1_000_500, 500}, {1_000_999, 999}, {1_001_000, 1000}} {
		got, err := l.OffsetForTime(tc.ts)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "ts %d", tc.ts)
	}
}

func TestRegionWriteTo(t *testing.T) {
	l := openFilled(t, t.TempDir(), small(), 300, 3)
	want, err := l.Read(30, 2000)
	require.NoError(t, err)
	reg, err := l.ReadRegion(30, 2000)
	require.NoError(t, err)
	assert.Equal(t, int64(len(want)), reg.Length)

	var buf bytes.Buffer
	n, err := io.Copy(&buf, reg)
	require.NoError(t, err)
	assert.Equal(t, int64(len(want)), n)
	assert.Equal(t, want, buf.Bytes())

	// Over a TCP socket the bytes go with sendfile.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(c)
		c.Close()
		got <- b
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	n, err = io.Copy(conn, reg)
	require.NoError(t, err)
	assert.Zero(t, n, "a region is consumed once")
	reg, err = l.ReadRegion(30, 2000)
	require.NoError(t, err)
	n, err = io.Copy(conn, reg)
	require.NoError(t, err)
	assert.Equal(t, int64(len(want)), n)
	require.NoError(t, conn.Close())
	assert.Equal(t, want, <-got)

	end, err := l.ReadRegion(300, 100)
	require.NoError(t, err)
	assert.Zero(t, end.Length)
}

func TestGroupCommitConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	opts := small()
	opts.Sync = SyncAlways
	opts.SegmentBytes = 1 << 20
	l := openLog(t, dir, opts)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				res, err := l.Append(Record{Value: []byte("x")})
				if !assert.NoError(t, err) {
					return
				}
				assert.GreaterOrEqual(t, l.FlushedOffset(), res.LastOffset+1, "an acknowledged append is flushed")
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(400), l.EndOffset())
	require.NoError(t, l.Close())
}

func TestClosedLog(t *testing.T) {
	l := openLog(t, t.TempDir(), small())
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	_, err := l.Append(Record{Value: []byte("x")})
	assert.ErrorIs(t, err, ErrClosed)
	_, err = l.Read(0, 10)
	assert.ErrorIs(t, err, ErrClosed)
	assert.True(t, errors.Is(l.Truncate(0), ErrClosed))
}

func TestAppendBatchValidation(t *testing.T) {
	good, err := segment.AppendBatch(nil, []Record{{Timestamp: 5, Value: []byte("v")}}, segment.EncodeOptions{})
	require.NoError(t, err)
	// A batch whose records are malformed but whose checksum is right:
	// one record header byte changed, then the checksum recomputed by
	// re-encoding the header fields through a patch-and-resum helper.
	bad := bytes.Clone(good)
	bad[segment.HeaderSize+3] = 2 // the record's offset delta: 1, past the batch's last offset delta (0)
	fixChecksum(bad)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-1] ^= 1

	for _, validate := range []bool{false, true} {
		opts := small()
		opts.ValidateRecords = validate
		l := openLog(t, t.TempDir(), opts)
		_, err = l.AppendBatch(bytes.Clone(flipped))
		assert.ErrorIs(t, err, ErrInvalidBatch)
		assert.ErrorIs(t, err, segment.ErrInvalid)
		assert.NotErrorIs(t, err, segment.ErrCorrupt, "a client's bad CRC is its mistake, not the disk's")
		_, err = l.AppendBatch([]byte("short"))
		assert.ErrorIs(t, err, ErrInvalidBatch)
		assert.NotErrorIs(t, err, segment.ErrCorrupt)
		_, err = l.AppendBatch(bytes.Clone(bad))
		if validate {
			assert.ErrorIs(t, err, ErrInvalidBatch)
			assert.ErrorIs(t, err, segment.ErrInvalid)
			assert.NotErrorIs(t, err, segment.ErrCorrupt)
		} else {
			require.NoError(t, err, "without ValidateRecords only header, limits and checksum are checked")
			r := l.NewReader(0)
			assert.False(t, r.Next())
			assert.ErrorIs(t, r.Err(), ErrCorrupt, "and a reader gets a clear error, never garbage")
		}
		res, err := l.AppendBatch(bytes.Clone(good))
		require.NoError(t, err)
		assert.Equal(t, res.FirstOffset, res.LastOffset)
		require.NoError(t, l.Close())
	}
}

// fixChecksum recomputes the checksum of a hand-edited batch.
func fixChecksum(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
}

// A read-only log follows a log that another process (here another Log
// on the same directory) writes: across rolls, waking by polling, and
// refusing every write.
func TestReadOnlyFollowsWriter(t *testing.T) {
	dir := t.TempDir()
	w := openFilled(t, dir, small(), 40, 4)

	r := openReadOnly(t, dir, small())
	assert.Equal(t, int64(40), r.EndOffset())
	// A follower has no write method; a writable open with ReadOnly set
	// is refused, pointing to OpenFollower.
	_, err := Open(dir, Options{ReadOnly: true})
	assert.ErrorIs(t, err, ErrReadOnly)

	done := make(chan int64)
	go func() {
		rd := r.NewReader(0)
		n := int64(0)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for n < 1000 {
			for rd.Next() {
				if rd.Record().Offset != n || string(rd.Record().Value) != string(val(n)) {
					t.Errorf("offset %d: got %d %q", n, rd.Record().Offset, rd.Record().Value)
				}
				n++
			}
			if rd.Err() != nil {
				t.Error(rd.Err())
				break
			}
			if n == 1000 {
				break
			}
			if err := r.Wait(ctx, rd.Offset()); err != nil {
				t.Error(err)
				break
			}
		}
		done <- n
	}()
	fill(t, w, 960, 6) // rolls many segments while the reader follows
	select {
	case n := <-done:
		assert.Equal(t, int64(1000), n)
	case <-time.After(30 * time.Second):
		t.Fatal("the read-only log did not follow the writer")
	}
	segs, err := r.Segments()
	require.NoError(t, err)
	assert.Greater(t, len(segs), 5)
}
