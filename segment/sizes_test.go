package segment

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaxRecordBytesFitsTheLimits: a record of MaxRecordBytes bytes with
// the largest varints (the widest timestamp delta) encodes into a batch
// the limits accept, and one byte more does not fit under
// HeaderSize+MaxRecordOverhead.
func TestMaxRecordBytesFitsTheLimits(t *testing.T) {
	lim := Limits{MaxBatchBytes: 64 << 10, MaxRecordsBytes: 64 << 10}
	n := lim.MaxRecordBytes()
	require.Equal(t, 64<<10-HeaderSize-MaxRecordOverhead, n)
	recs := []Record{{Timestamp: math.MinInt64 / 2}, {Timestamp: math.MaxInt64 / 2, Key: bytes.Repeat([]byte("k"), n/2), Value: bytes.Repeat([]byte("v"), n-n/2)}}
	b, err := AppendBatch(nil, recs[1:], EncodeOptions{})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), lim.MaxBatchBytes)
	_, err = ValidateRecords(b, lim)
	assert.NoError(t, err)
	// Each record of a batch costs at most its bytes plus the overhead.
	b, err = AppendBatch(nil, []Record{recs[0], {Timestamp: recs[1].Timestamp, Value: []byte("x")}}, EncodeOptions{})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), HeaderSize+2*MaxRecordOverhead+1)
	assert.Equal(t, DefaultMaxBatchBytes-HeaderSize-MaxRecordOverhead, Limits{}.MaxRecordBytes())
}
