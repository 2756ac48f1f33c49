package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/kafkatest"
	"github.com/seglog/seglog/segment"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every batch a Kafka client may send (built with kmsg) is accepted by
// AppendBatch and stored as it came: the bytes read back are the client's
// but for baseOffset (the offsets the log assigned) and
// partitionLeaderEpoch (the leader's epoch), the CRC still valid, the
// records the same. Record readers then skip the control records.
func TestClientBatchesStoredAsTheyCame(t *testing.T) {
	l, err := Open(t.TempDir(), Options{})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.SetLeaderEpoch(7))
	var data []Record // what a Reader must return
	for _, spec := range kafkatest.ClientBatches(rand.New(rand.NewPCG(1, 25))) {
		spec.Batch.LeaderEpoch = -1 // as a producer sends it
		orig, err := kafkatest.Build(spec.Batch)
		require.NoError(t, err, spec.Name)
		res, err := l.AppendBatch(bytes.Clone(orig))
		require.NoError(t, err, spec.Name)

		b, err := l.Read(res.FirstOffset, 1<<20)
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(b), len(orig))
		got := b[:len(orig)]
		assert.Equal(t, res.FirstOffset, int64(binary.BigEndian.Uint64(got)), spec.Name)
		assert.Equal(t, orig[8:12], got[8:12], "%s: batchLength", spec.Name)
		assert.Equal(t, int32(7), int32(binary.BigEndian.Uint32(got[12:])), "%s: the leader's epoch", spec.Name)
		assert.Equal(t, orig[16:], got[16:], "%s: every byte from the magic on as it came", spec.Name)
		d, err := kafkatest.Decode(got)
		require.NoError(t, err, "%s: kmsg reads it back, CRC valid", spec.Name)
		assert.Equal(t, res.FirstOffset+int64(d.Batch.LastOffsetDelta), res.LastOffset)

		var it segment.RecordIter
		require.NoError(t, it.Reset(got, segment.DefaultLimits))
		for i := 0; it.Next(); i++ {
			r, want := it.Record(), spec.Batch.Records[i]
			assert.Equal(t, res.FirstOffset+int64(want.OffsetDelta), r.Offset)
			assert.Equal(t, want.Key, r.Key)
			assert.Equal(t, want.Value, r.Value)
			if spec.Batch.Attributes&kafkatest.AttrControl == 0 {
				data = append(data, Record{Offset: r.Offset, Value: bytes.Clone(r.Value)})
			}
		}
		require.NoError(t, it.Err())
	}
	r := l.NewReader(0)
	var read []Record
	for r.Next() {
		read = append(read, Record{Offset: r.Record().Offset, Value: bytes.Clone(r.Record().Value)})
	}
	require.NoError(t, r.Err())
	assert.Equal(t, data, read, "every data record, no control record")
}

// A client's malformed or oversized batch is an error of its own
// (ErrInvalidBatch, segment.ErrInvalid or segment.ErrTooLarge), never
// ErrCorrupt, and nothing is written.
func TestMalformedClientBatchesAreInvalidNotCorrupt(t *testing.T) {
	good, err := kafkatest.Build(kafkatest.Batch{Attributes: kafkatest.CodecNone, LastOffsetDelta: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []kafkatest.Record{{Timestamp: 1, Value: []byte("first")}, {OffsetDelta: 1, Timestamp: 2, Value: []byte("second")}}})
	require.NoError(t, err)
	resum := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
		return b
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name     string
		batch    []byte
		validate bool
		tooLarge bool
	}{
		{"CRC mismatch", mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), false, false},
		{"shorter than a header", good[:40], false, false},
		{"cut short", good[:len(good)-3], false, false},
		{"version 1 from a client", mutate(func(b []byte) []byte { b[16] = 1; return b }), false, false},
		{"magic 0", mutate(func(b []byte) []byte { b[16] = 0; return b }), false, false},
		{"unknown codec", mutate(func(b []byte) []byte { b[22] |= 5; return resum(b) }), false, false},
		{"more records than offsets", mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 3); return resum(b) }), false, false},
		{"no records", mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 0); return resum(b) }), false, false},
		{"record offset delta past the last", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 0)
			binary.BigEndian.PutUint32(b[57:], 1)
			return resum(b)
		}), true, false},
		{"batch over MaxBatchBytes", bytes.Clone(good), false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{ValidateRecords: tc.validate}
			if tc.tooLarge {
				opts.Limits.MaxBatchBytes = len(good) - 1
			}
			l, err := Open(t.TempDir(), opts)
			require.NoError(t, err)
			defer l.Close()
			_, err = l.AppendBatch(tc.batch)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidBatch)
			assert.NotErrorIs(t, err, ErrCorrupt)
			assert.NotErrorIs(t, err, segment.ErrCorrupt)
			if tc.tooLarge {
				assert.ErrorIs(t, err, segment.ErrTooLarge)
			} else {
				assert.ErrorIs(t, err, segment.ErrInvalid)
			}
			assert.Equal(t, int64(0), l.EndOffset(), "nothing written")
		})
	}
}

// A LogAppendTime log stamps each batch's maxTimestamp with its clock at
// the append (and the timestamp-type bit), computes the CRC again, and
// every record reads with that time; nothing else changes.
func TestLogAppendTimeStampsBatches(t *testing.T) {
	now := time.UnixMilli(1800000000123)
	l, err := Open(t.TempDir(), Options{TimestampType: segment.LogAppendTime, Now: func() time.Time { return now }})
	require.NoError(t, err)
	defer l.Close()
	for _, codec := range kafkatest.Codecs {
		orig, err := kafkatest.Build(kafkatest.Batch{Attributes: codec, LastOffsetDelta: -1, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
			Records: kafkatest.RandomRecords(rand.New(rand.NewPCG(uint64(codec), 1)), 5)})
		require.NoError(t, err)
		res, err := l.AppendBatch(bytes.Clone(orig))
		require.NoError(t, err)
		b, err := l.Read(res.FirstOffset, 1<<20)
		require.NoError(t, err)
		got := b[:len(orig)]
		d, err := kafkatest.Decode(got)
		require.NoError(t, err, "CRC computed again")
		assert.Equal(t, now.UnixMilli(), d.Batch.MaxTimestamp)
		assert.Equal(t, codec|kafkatest.AttrLogAppendTime, d.Batch.Attributes)
		assert.Equal(t, orig[23:35], got[23:35], "lastOffsetDelta and baseTimestamp as they came")
		assert.Equal(t, orig[43:], got[43:], "producer fields and records as they came")
	}
	// Append's own batches too.
	_, err = l.Append(Record{Timestamp: 5, Value: []byte("own")})
	require.NoError(t, err)
	r := l.NewReader(0)
	n := 0
	for ; r.Next(); n++ {
		assert.Equal(t, now.UnixMilli(), r.Record().Timestamp)
	}
	require.NoError(t, r.Err())
	assert.Equal(t, 5*len(kafkatest.Codecs)+1, n)
	off, err := l.OffsetForTime(now.UnixMilli())
	require.NoError(t, err)
	assert.Equal(t, int64(0), off, "the time index holds the append time")
}

// A topic's timestamp type and Kafka codec names are kept with the topic
// and applied to its partitions; s2, a codec of the version-1 format, is
// read as snappy; unknown names are refused.
func TestTopicConfigKafkaSettings(t *testing.T) {
	root := t.TempDir()
	s, err := OpenStore(root, StoreOptions{})
	require.NoError(t, err)
	defer s.Close()
	cases := []struct {
		topic string
		cfg   TopicConfig
		codec segment.Codec
		ts    segment.TimestampType
	}{
		{"appendtime", TopicConfig{TimestampType: "LogAppendTime", Compression: "lz4"}, segment.CodecLZ4, segment.LogAppendTime},
		{"createtime", TopicConfig{TimestampType: "CreateTime", Compression: "gzip"}, segment.CodecGzip, segment.CreateTime},
		{"legacy", TopicConfig{Compression: "s2"}, segment.CodecSnappy, segment.CreateTime},
	}
	for _, tc := range cases {
		require.NoError(t, s.CreateTopic(tc.topic, 1, tc.cfg), tc.topic)
		l, err := s.Log(tc.topic, 0)
		require.NoError(t, err)
		assert.Equal(t, tc.codec, l.opts.Compression, tc.topic)
		assert.Equal(t, tc.ts, l.opts.TimestampType, tc.topic)
		got, err := s.TopicConfig(tc.topic)
		require.NoError(t, err)
		assert.Equal(t, tc.cfg, got, "stored and read back")
	}
	for _, bad := range []TopicConfig{{TimestampType: "WallClock"}, {Compression: "brotli"}} {
		assert.ErrorIs(t, s.CreateTopic("bad", 1, bad), ErrInvalidOptions)
	}
}
