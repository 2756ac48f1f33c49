package storage

import (
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A producer batch whose records carry timestamp 0 (the epoch: valid, and
// what a producer that sets none may send through AppendBatch) at a
// segment's base offset makes the time-index entry (0, relative offset 0),
// all zero bytes. The index refused it, and every append due an index
// entry failed from then on. The entry is now left out; the sealed
// segment learns its largest timestamp from its batches, before and after
// a reopen and in a follower, and OffsetForTime finds the records.
func TestZeroTimestampAtSegmentBase(t *testing.T) {
	dir := t.TempDir()
	opts := rollOpts()
	l := openLog(t, dir, opts)
	appendAt := func(ts int64, n int) {
		for i := 0; i < n; i++ {
			b, err := segment.AppendBatch(nil, []Record{{Timestamp: ts, Value: val(l.EndOffset())}}, segment.EncodeOptions{})
			require.NoError(t, err)
			_, err = l.AppendBatch(b)
			require.NoError(t, err, "append of a batch with timestamp %d", ts)
		}
	}
	appendAt(0, 20)
	require.NoError(t, l.Roll())
	appendAt(0, 5)
	appendAt(7, 5)
	require.NoError(t, l.Checkpoint())
	check := func(l logReader, when string) {
		assert.Equal(t, int64(30), readAll(t, l, 0), when)
		segs, err := l.Segments()
		require.NoError(t, err)
		require.Len(t, segs, 2, when)
		assert.Equal(t, int64(0), segs[0].MaxTimestamp, "%s: sealed segment of timestamp-0 records", when)
		assert.Equal(t, int64(7), segs[1].MaxTimestamp, when)
		for _, c := range []struct{ ts, want int64 }{{-5, 0}, {0, 0}, {1, 25}, {7, 25}, {8, 30}} {
			got, err := l.OffsetForTime(c.ts)
			require.NoError(t, err)
			assert.Equal(t, c.want, got, "%s: OffsetForTime(%d)", when, c.ts)
		}
	}
	check(l, "open")
	require.NoError(t, l.Close())
	l = openLog(t, dir, opts)
	check(l, "reopened")
	// A follower opens sealed segments without the manifest's figures.
	check(openReadOnly(t, dir, opts), "follower")
	require.NoError(t, l.Roll())
	require.NoError(t, l.Close())
	l = openLog(t, dir, opts)
	assert.Equal(t, int64(30), readAll(t, l, 0), "after sealing the second segment")
}
