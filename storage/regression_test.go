package storage

import (
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An appender waiting for its fsync whose records a Truncate removed gets
// ErrTruncated, never an acknowledgement, and does not spin.
func TestTruncateBeforeFsyncIsNotAcknowledged(t *testing.T) {
	opts := small()
	opts.Sync = SyncAlways
	l := openFilled(t, t.TempDir(), opts, 5, 5)
	batch := mustBatch(t, "doomed")
	h := mustHeader(t, batch)
	l.writeMu.Lock()
	res, err := l.appendLocked(batch, h) // written, not yet synced
	gen := l.truncGen.Load()
	l.writeMu.Unlock()
	require.NoError(t, err)
	require.NoError(t, l.Truncate(res.FirstOffset))
	done := make(chan error, 1)
	go func() { done <- l.syncAppended(res, gen) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrTruncated)
	case <-time.After(5 * time.Second):
		t.Fatal("the appender spins after the truncation")
	}
	// Even once the end passes the offset again, it was not acknowledged.
	fill(t, l, 5, 5)
	assert.ErrorIs(t, l.syncAppended(res, gen), ErrTruncated)
}

func mustBatch(t testing.TB, v string) []byte {
	b, err := segment.AppendBatch(nil, []Record{{Timestamp: 1, Value: []byte(v)}}, segment.EncodeOptions{})
	require.NoError(t, err)
	return b
}

// A consumer that stops reading its zero-copy region holds up neither
// appends, rolls, deletions nor other readers.
func TestStalledRegionDoesNotBlockTheLog(t *testing.T) {
	l := openFilled(t, t.TempDir(), small(), 300, 3)
	reg, err := l.ReadRegion(0, 1<<20)
	require.NoError(t, err)
	pr, pw := io.Pipe()
	sent := make(chan error, 1)
	go func() { _, err := reg.WriteTo(pw); sent <- err }()
	// One byte read: WriteTo is under way, and stalls on the rest (a
	// pipe's write returns only once every byte is read).
	first := make([]byte, 1)
	_, err = io.ReadFull(pr, first)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fill(t, l, 300, 3)
		require.NoError(t, l.Roll())
		_, err := l.DeleteSegmentsBefore(l.EndOffset())
		require.NoError(t, err)
		_, err = l.Read(l.StartOffset(), 100)
		require.NoError(t, err)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled zero-copy reader blocks the log")
	}
	// The deleted segment is still sent whole to the slow consumer.
	rest, err := io.ReadAll(io.LimitReader(pr, reg.Length-1))
	require.NoError(t, err)
	assert.Equal(t, reg.Length, int64(len(first)+len(rest)))
	require.NoError(t, <-sent)
}

// Absurd read sizes neither panic nor allocate the world.
func TestReadSizeExtremes(t *testing.T) {
	l := openFilled(t, t.TempDir(), small(), 50, 5)
	for _, n := range []int{math.MaxInt, 1 << 40, 0, -5} {
		b, err := l.Read(10, n)
		require.NoError(t, err, "maxBytes %d", n)
		assert.NotEmpty(t, b)
		assert.LessOrEqual(t, len(b), MaxReadBytes)
	}
}

// A high watermark inside a batch: committed readers get the records below
// it, and continue when it moves.
func TestHighWatermarkInsideBatch(t *testing.T) {
	l := openFilled(t, t.TempDir(), small(), 10, 5) // batches [0,5) and [5,10)
	require.NoError(t, l.SetHighWatermark(7))
	r := l.NewCommittedReader(0)
	var got []int64
	for r.Next() {
		got = append(got, r.Record().Offset)
	}
	require.NoError(t, r.Err())
	assert.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6}, got)
	require.NoError(t, l.SetHighWatermark(10))
	for r.Next() {
		got = append(got, r.Record().Offset)
	}
	assert.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, got)
}

// Reads racing deletions from the front never skip offsets silently.
func TestReadBelowStartAfterDelete(t *testing.T) {
	l := openFilled(t, t.TempDir(), small(), 500, 5)
	require.NoError(t, l.Roll())
	_, err := l.DeleteSegmentsBefore(300)
	require.NoError(t, err)
	_, err = l.Read(l.StartOffset()-1, 100)
	assert.True(t, errors.Is(err, ErrOffsetOutOfRange), "%v", err)
}
