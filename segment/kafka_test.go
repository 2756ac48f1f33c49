package segment_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/internal/kafkatest"
	"github.com/seglog/seglog/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kmsg (franz-go) decodes every batch seglog encodes, in every codec: a
// valid CRC, Kafka's header fields, and the same records.
func TestKmsgDecodesEncodedBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 25))
	type tc struct {
		name string
		recs []segment.Record
		opts segment.EncodeOptions
	}
	var cases []tc
	for _, codec := range []segment.Codec{segment.CodecNone, segment.CodecGzip, segment.CodecSnappy, segment.CodecLZ4, segment.CodecZstd} {
		cases = append(cases,
			tc{codec.String() + "/one record", []segment.Record{{Timestamp: 1700000000000, Value: []byte("v")}}, segment.EncodeOptions{Codec: codec}},
			tc{codec.String() + "/nulls and headers", []segment.Record{
				{Timestamp: 1700000000005, Key: []byte("k"), Value: nil},
				{Timestamp: 1700000000001, Key: nil, Value: []byte{}},
				{Timestamp: 1700000000009, Key: []byte{}, Value: []byte("x"), Headers: []segment.RecordHeader{{Key: []byte("h"), Value: nil}, {Key: []byte{}, Value: []byte("v")}}},
			}, segment.EncodeOptions{Codec: codec, ProducerID: 77, ProducerEpoch: 2, BaseSequence: 1000, LeaderEpoch: 5}},
			tc{codec.String() + "/random", randomRecords(rng, 1+rng.IntN(200)), segment.EncodeOptions{Codec: codec}},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := segment.AppendBatch(nil, c.recs, c.opts)
			require.NoError(t, err)
			d, err := kafkatest.Decode(b)
			require.NoError(t, err)
			kb := d.Batch
			assert.Equal(t, int8(2), kb.Magic)
			assert.Equal(t, int16(c.opts.Codec), kb.Attributes)
			assert.Equal(t, int32(len(c.recs)-1), kb.LastOffsetDelta)
			assert.Equal(t, int32(len(c.recs)), kb.NumRecords)
			assert.Equal(t, c.opts.LeaderEpoch, kb.PartitionLeaderEpoch)
			assert.Equal(t, c.recs[0].Timestamp, kb.FirstTimestamp)
			maxTS := c.recs[0].Timestamp
			for _, r := range c.recs {
				maxTS = max(maxTS, r.Timestamp)
			}
			assert.Equal(t, maxTS, kb.MaxTimestamp)
			if c.opts.ProducerID > 0 {
				assert.Equal(t, c.opts.ProducerID, kb.ProducerID)
				assert.Equal(t, c.opts.ProducerEpoch, kb.ProducerEpoch)
				assert.Equal(t, c.opts.BaseSequence, kb.FirstSequence)
			} else {
				assert.Equal(t, int64(-1), kb.ProducerID)
				assert.Equal(t, int16(-1), kb.ProducerEpoch)
				assert.Equal(t, int32(-1), kb.FirstSequence)
			}
			require.Len(t, d.Records, len(c.recs))
			for i, r := range c.recs {
				got := d.Records[i]
				assert.Equal(t, int32(i), got.OffsetDelta)
				assert.Equal(t, r.Timestamp, got.Timestamp)
				assert.Equal(t, r.Key, got.Key, "record %d key", i)
				assert.Equal(t, r.Value, got.Value, "record %d value", i)
				require.Len(t, got.Headers, len(r.Headers))
				for j, h := range r.Headers {
					assert.Equal(t, string(h.Key), got.Headers[j].Key)
					assert.Equal(t, h.Value, got.Headers[j].Value)
				}
			}
		})
	}
}

// Batches kmsg builds, in every codec (snappy raw and xerial-framed), with
// every kind of record and batch Kafka allows, pass CheckBatch and decode
// to the same records.
func TestKmsgBuiltBatchesDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 7))
	for _, spec := range kafkatest.ClientBatches(rng) {
		t.Run(spec.Name, func(t *testing.T) {
			b, err := kafkatest.Build(spec.Batch)
			require.NoError(t, err)
			h, err := segment.CheckBatch(b, segment.DefaultLimits, true)
			require.NoError(t, err)
			assert.Equal(t, spec.Batch.Attributes&kafkatest.AttrControl != 0, h.IsControl())
			assert.Equal(t, spec.Batch.Attributes&kafkatest.AttrTransactional != 0, h.IsTransactional())
			var it segment.RecordIter
			require.NoError(t, it.Reset(b, segment.DefaultLimits))
			i := 0
			for ; it.Next(); i++ {
				r, want := it.Record(), spec.Batch.Records[i]
				assert.Equal(t, int64(want.OffsetDelta), r.Offset)
				assert.Equal(t, want.Timestamp, r.Timestamp)
				assert.Equal(t, want.Key, r.Key)
				assert.Equal(t, want.Value, r.Value)
				require.Len(t, r.Headers, len(want.Headers))
				for j, hd := range want.Headers {
					assert.Equal(t, hd.Key, string(r.Headers[j].Key))
					assert.Equal(t, hd.Value, r.Headers[j].Value)
				}
			}
			require.NoError(t, it.Err())
			assert.Equal(t, len(spec.Batch.Records), i)
		})
	}
}

func randomRecords(rng *rand.Rand, n int) []segment.Record {
	bytesOf := func(k int) []byte {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	recs := make([]segment.Record, n)
	for i := range recs {
		recs[i].Timestamp = 1700000000000 + rng.Int64N(100000) - 50000
		if rng.IntN(4) > 0 {
			recs[i].Key = bytesOf(rng.IntN(20))
		}
		if rng.IntN(8) > 0 {
			recs[i].Value = bytesOf(rng.IntN(500))
		}
		for j := rng.IntN(3); j > 0; j-- {
			h := segment.RecordHeader{Key: bytesOf(rng.IntN(6))}
			if rng.IntN(3) > 0 {
				h.Value = bytesOf(rng.IntN(6))
			}
			recs[i].Headers = append(recs[i].Headers, h)
		}
	}
	return recs
}

// For random batches (sizes, timestamps out of order, gaps in offsets) and
// index intervals, a segment's .index and .timeindex after Close, and
// again after Recover rebuilt them, are what Kafka's LogSegment rule gives
// (kafkatest.Indexes, written from Kafka's source apart from this code).
func TestIndexesFollowKafkasRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 4096))
	for iter := 0; iter < 20; iter++ {
		interval := []int{1, 100, 512, 4096, 65536}[iter%5] // 0 would be the default, 4096
		dir := t.TempDir()
		const base = 1000
		opts := segment.Options{IndexIntervalBytes: interval, MaxIndexBytes: 1 << 20}
		s, err := segment.Create(dir, base, opts)
		require.NoError(t, err)
		next := int64(base)
		var log []byte
		for b := 0; b < 5+rng.IntN(60); b++ {
			spec := kafkatest.Batch{Attributes: kafkatest.Codecs[rng.IntN(len(kafkatest.Codecs))], LastOffsetDelta: -1,
				ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Records: kafkatest.RandomRecords(rng, 1+rng.IntN(8))}
			if rng.IntN(5) == 0 {
				spec.LastOffsetDelta = int32(len(spec.Records) + rng.IntN(5)) // gaps after the last record
			}
			batch, err := kafkatest.Build(spec)
			require.NoError(t, err)
			segment.SetBaseOffset(batch, next)
			h, err := segment.CheckBatch(batch, segment.DefaultLimits, true)
			require.NoError(t, err)
			_, err = s.Append(batch, h)
			require.NoError(t, err)
			log = append(log, batch...)
			next = h.NextOffset()
		}
		require.NoError(t, s.Close())
		wantIdx, wantTime, err := kafkatest.Indexes(log, base, interval)
		require.NoError(t, err)
		wantIdx, wantTime = append([]byte{}, wantIdx...), append([]byte{}, wantTime...) // empty files, not nil
		check := func(when string) {
			got, err := os.ReadFile(filepath.Join(dir, segment.FileName(base, segment.LogSuffix)))
			require.NoError(t, err)
			require.Equal(t, log, got, "the .log %s", when)
			got, err = os.ReadFile(filepath.Join(dir, segment.FileName(base, segment.IndexSuffix)))
			require.NoError(t, err)
			assert.Equal(t, wantIdx, got, ".index, interval %d, %s", interval, when)
			got, err = os.ReadFile(filepath.Join(dir, segment.FileName(base, segment.TimeIndexSuffix)))
			require.NoError(t, err)
			assert.Equal(t, wantTime, got, ".timeindex, interval %d, %s", interval, when)
		}
		check("after appends and Close")

		r := segment.Open(dir, base, next, opts)
		_, err = r.Recover()
		require.NoError(t, err)
		require.NoError(t, r.Close())
		check("after Recover")
	}
}
