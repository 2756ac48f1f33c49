package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seglog/seglog/segment"
)

// TestCallerMistakesDoNotLookLikeCorruption checks that what a caller
// gets wrong (a batch over the size limit, a malformed or badly checksummed
// batch, a bad topic name, a sequence out of order) is an error of its own
// cause, never one that errors.Is reports as ErrCorrupt: a broker must
// tell a client's mistake from a bad disk.
func TestCallerMistakesDoNotLookLikeCorruption(t *testing.T) {
	encode := func(t *testing.T, opts segment.EncodeOptions, n int) []byte {
		recs := make([]segment.Record, n)
		for i := range recs {
			recs[i] = segment.Record{Timestamp: 1_000 + int64(i), Value: []byte("a value of some length")}
		}
		b, err := segment.AppendBatch(nil, recs, opts)
		require.NoError(t, err)
		return b
	}
	cases := []struct {
		name  string
		do    func(t *testing.T, l *Log) error
		cause error
	}{
		{"too large", func(t *testing.T, l *Log) error {
			_, err := l.Append(Record{Value: make([]byte, 4096)})
			return err
		}, ErrTooLarge},
		{"too large, encoded by the producer", func(t *testing.T, l *Log) error {
			_, err := l.AppendBatch(encode(t, segment.EncodeOptions{}, 200))
			return err
		}, ErrTooLarge},
		{"checksum mismatch", func(t *testing.T, l *Log) error {
			b := encode(t, segment.EncodeOptions{}, 1)
			b[len(b)-1] ^= 0xff
			_, err := l.AppendBatch(b)
			return err
		}, ErrInvalidBatch},
		{"cut short", func(t *testing.T, l *Log) error {
			b := encode(t, segment.EncodeOptions{}, 1)
			_, err := l.AppendBatch(b[:len(b)-3])
			return err
		}, ErrInvalidBatch},
		{"garbage", func(t *testing.T, l *Log) error {
			_, err := l.AppendBatch([]byte("not a batch at all, but long enough to have a header of sixty-one bytes"))
			return err
		}, ErrInvalidBatch},
		{"sequence out of order", func(t *testing.T, l *Log) error {
			_, err := l.AppendBatch(encode(t, segment.EncodeOptions{ProducerID: 7}, 1))
			require.NoError(t, err)
			_, err = l.AppendBatch(encode(t, segment.EncodeOptions{ProducerID: 7, BaseSequence: 5}, 1))
			return err
		}, ErrOutOfOrderSequence},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := small()
			opts.Limits.MaxBatchBytes = 2048
			l := openLog(t, t.TempDir(), opts)
			err := tc.do(t, l)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.cause)
			assert.NotErrorIs(t, err, ErrCorrupt, "a caller's mistake reported as corruption: %v", err)
		})
	}
	t.Run("invalid topic", func(t *testing.T) {
		s := openStore(t, t.TempDir(), StoreOptions{})
		_, err := s.Log("no/slashes", 0)
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrInvalidTopic)
		assert.NotErrorIs(t, err, ErrCorrupt)
	})
}
