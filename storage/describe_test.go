package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFollowerDescribeListsSegmentsWithFirstTimestampsAndRecords(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, small())
	require.NoError(t, err)
	defer l.Close()
	const base = int64(1_700_000_000_000)
	for i := 0; i < 60; i++ {
		_, err := l.Append(Record{Timestamp: base + int64(i)*10, Value: make([]byte, 200)})
		require.NoError(t, err)
	}
	require.NoError(t, l.Sync())
	f := openReadOnly(t, dir, small())

	d, err := f.Describe()
	require.NoError(t, err)
	require.Greater(t, len(d.Segments), 3, "precondition: several segments")
	assert.Equal(t, int64(0), d.StartOffset)
	assert.Equal(t, int64(60), d.EndOffset)
	var records, bytes int64
	for i, s := range d.Segments {
		assert.Equal(t, base+s.BaseOffset*10, s.FirstTimestamp, "segment %d: its first batch's timestamp", s.BaseOffset)
		assert.Equal(t, s.NextOffset-s.BaseOffset, s.Records)
		assert.Equal(t, i == len(d.Segments)-1, s.Active)
		records += s.Records
		bytes += s.Size
	}
	assert.Equal(t, int64(60), records)
	assert.Equal(t, bytes, d.Bytes)

	// The writer deletes the oldest segments after the follower listed
	// them: Describe follows, without an error.
	cut := d.Segments[2].BaseOffset
	_, err = l.DeleteSegmentsBefore(cut)
	require.NoError(t, err)
	d, err = f.Describe()
	require.NoError(t, err)
	assert.Equal(t, cut, d.StartOffset)
	assert.Equal(t, cut, d.Segments[0].BaseOffset)
}
