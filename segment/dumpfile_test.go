package segment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWalkGoesOnPastABadChecksumAndStopsAtATornBatch(t *testing.T) {
	_, logPath, batches, full := closedSegment(t, 3)
	second := int64(len(batches[0]))

	walk := func(data []byte, path string) (positions []int64, bad []int64, err error, end int64) {
		w := NewWalk(bytes.NewReader(data), int64(len(data)), path)
		for w.Next() {
			positions = append(positions, w.Pos)
			if w.VerifyErr != nil {
				bad = append(bad, w.Pos)
			}
		}
		return positions, bad, w.Err(), w.End()
	}

	pos, bad, err, end := walk(full, logPath)
	require.NoError(t, err)
	assert.Len(t, pos, 3)
	assert.Empty(t, bad)
	assert.Equal(t, int64(len(full)), end)

	flipped := bytes.Clone(full)
	flipped[second+int64(len(batches[1]))-1] ^= 0xff // a byte of the second batch's records
	pos, bad, err, _ = walk(flipped, logPath)
	require.NoError(t, err)
	assert.Len(t, pos, 3, "the walk goes on past the bad checksum")
	assert.Equal(t, []int64{second}, bad)

	torn := full[:len(full)-5]
	pos, _, err, end = walk(torn, logPath)
	assert.Len(t, pos, 2)
	var ce *CorruptError
	assert.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, second+int64(len(batches[1])), end, "where the torn batch starts")

	renamed := filepath.Join(filepath.Dir(logPath), FileName(7, LogSuffix))
	_, _, err, _ = walk(full, renamed)
	assert.ErrorIs(t, err, ErrCorrupt, "offsets must follow on from the base offset in the name")
	_, _, err, _ = walk(full, "copy.log")
	assert.NoError(t, err, "a file not named like a segment has no base to follow")
}

func TestWalkStopAtEndsAtAWritersEndWithoutJudgingThePast(t *testing.T) {
	_, logPath, batches, full := closedSegment(t, 3)
	twoBatches := int64(len(batches[0]) + len(batches[1]))
	torn := full[:len(full)-5] // the third batch, at offset 6, half written
	for _, tc := range []struct {
		name    string
		data    []byte
		stopAt  int64
		batches int
		stopped bool
		err     bool
	}{
		{"a whole batch at the end offset is not read", full, 6, 2, true, false},
		{"a half batch past the end offset is not damage", torn, 6, 2, true, false},
		{"a half batch below the end offset is damage", torn, 9, 2, false, true},
		{"a file that ends below the end offset is read whole", full, 100, 3, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWalk(bytes.NewReader(tc.data), int64(len(tc.data)), logPath)
			w.StopAt(tc.stopAt)
			n := 0
			for w.Next() {
				n++
			}
			assert.Equal(t, tc.batches, n)
			assert.Equal(t, tc.stopped, w.Stopped())
			assert.Equal(t, tc.err, w.Err() != nil, "%v", w.Err())
			if tc.stopped {
				assert.Equal(t, twoBatches, w.End())
			}
		})
	}
}

func TestBaseOf(t *testing.T) {
	for _, tc := range []struct {
		path string
		base int64
		ok   bool
	}{
		{"d/00000000000000000042.log", 42, true},
		{"00000000000000000042.index", 42, true},
		{"/x/00000000000000000007.timeindex", 7, true},
		{"00000000000000000042.txt", 0, false},
		{"42.log", 0, false},
	} {
		base, ok := BaseOf(tc.path)
		assert.Equal(t, tc.ok, ok, tc.path)
		assert.Equal(t, tc.base, base, tc.path)
	}
}

func TestReadIndexFileDecodesWithTheBaseInItsName(t *testing.T) {
	dir, _, _, _ := closedSegment(t, 40)
	c, err := ReadIndexFile(filepath.Join(dir, FileName(0, IndexSuffix)))
	require.NoError(t, err)
	require.NotEmpty(t, c.Offsets)
	assert.NoError(t, c.Err)
	assert.Nil(t, c.Times)
	c, err = ReadIndexFile(filepath.Join(dir, FileName(0, TimeIndexSuffix)))
	require.NoError(t, err)
	assert.NotEmpty(t, c.Times)

	_, err = ReadIndexFile(filepath.Join(dir, FileName(99, IndexSuffix)))
	assert.ErrorIs(t, err, os.ErrNotExist)
	var pe *os.PathError
	assert.ErrorAs(t, err, &pe)
	_, err = ReadIndexFile(dir)
	assert.ErrorContains(t, err, "not a regular file")
}

func TestKafkaDumpLines(t *testing.T) {
	b, err := AppendBatch(nil, []Record{{Timestamp: 1000, Key: []byte("k"), Value: []byte("v\x00"),
		Headers: []RecordHeader{{Key: []byte("h"), Value: []byte("x")}}}}, EncodeOptions{})
	require.NoError(t, err)
	h, err := ParseHeader(b, DefaultLimits)
	require.NoError(t, err)
	line := KafkaBatchLine(h, 0, true)
	assert.True(t, strings.HasPrefix(line, "baseOffset: 0 lastOffset: 0 count: 1 "), line)
	assert.True(t, strings.HasSuffix(line, " isvalid: true"), line)

	var it RecordIter
	require.NoError(t, it.Reset(b, DefaultLimits))
	require.True(t, it.Next())
	assert.Equal(t, `| offset: 0 CreateTime: 1000 keySize: 1 valueSize: 2 sequence: -1 headerKeys: [h] key: k payload: "v\x00"`,
		KafkaRecordLine(it.Header(), it.Record(), 0))
	assert.Equal(t, `| offset: 0 CreateTime: 1000 keySize: 1 valueSize: 2 sequence: -1 headerKeys: [h] key: k payload: v...(2 bytes)`,
		KafkaRecordLine(it.Header(), it.Record(), 1))
}

func TestBatchJSONHoldsWhatTheBatchLineSays(t *testing.T) {
	b, err := AppendBatch(nil, []Record{{Timestamp: 1000, Value: []byte("a")}, {Timestamp: 1500, Value: []byte("b")}},
		EncodeOptions{Codec: CodecGzip, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 3})
	require.NoError(t, err)
	h, err := ParseHeader(b, DefaultLimits)
	require.NoError(t, err)
	got := NewBatchJSON(h, 64, true)
	assert.Equal(t, BatchJSON{BaseOffset: 0, LastOffset: 1, Count: 2, Position: 64, Size: len(b), Magic: 2, Codec: "gzip",
		TimestampType: "CreateTime", BaseTimestamp: 1000, MaxTimestamp: 1500, ProducerID: 7, ProducerEpoch: 1, BaseSequence: 3,
		LastSequence: 4, LeaderEpoch: h.LeaderEpoch, Checksum: fmt.Sprintf("%#x", h.Checksum), Valid: true}, got)
}
