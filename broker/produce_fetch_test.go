package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/segment"
)

// engineBatch encodes n records as one batch with the engine's encoder.
func engineBatch(t *testing.T, n int, opts segment.EncodeOptions) []byte {
	t.Helper()
	recs := make([]segment.Record, n)
	for i := range recs {
		recs[i] = segment.Record{Key: []byte(fmt.Sprint("k", i)), Value: bytes.Repeat([]byte{byte(i)}, 100), Timestamp: 1_700_000_000_000 + int64(i)}
	}
	b, err := segment.AppendBatch(nil, recs, opts)
	require.NoError(t, err)
	return b
}

// produce sends one batch per partition of topic with the given acks and
// returns the response's partitions.
func produce(t *testing.T, cl *kgo.Client, topic string, acks int16, batches map[int32][]byte) []kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p, b := range batches {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, bytes.Clone(b)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	resp := roundTrip[*kmsg.ProduceResponse](t, cl, req)
	require.Len(t, resp.Topics, 1)
	return resp.Topics[0].Partitions
}

// fetchReq builds a fetch of one partition.
func fetchReq(id uuid, topic string, partition int32, offset int64, maxWait time.Duration, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(maxWait.Milliseconds()), 1, maxBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	return req
}

func fetchOne(t *testing.T, cl *kgo.Client, req *kmsg.FetchRequest) kmsg.FetchResponseTopicPartition {
	t.Helper()
	resp := roundTrip[*kmsg.FetchResponse](t, cl, req)
	require.Zero(t, resp.ErrorCode)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// stored is a batch as the log keeps it: its base offset patched.
func stored(b []byte, base int64) []byte {
	b = bytes.Clone(b)
	segment.SetBaseOffset(b, base)
	return b
}

func TestProducedBatchesAreFetchedByteForByte(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	id := createTopic(t, b, "p", 2, nil).TopicID
	cl := b.client()
	first, second := engineBatch(t, 3, segment.EncodeOptions{}), engineBatch(t, 2, segment.EncodeOptions{})

	got := produce(t, cl, "p", -1, map[int32][]byte{0: first, 1: first})
	for _, p := range got {
		assert.Zero(t, p.ErrorCode)
		assert.Equal(t, int64(0), p.BaseOffset)
	}
	got = produce(t, cl, "p", 1, map[int32][]byte{0: second})
	assert.Equal(t, int64(3), got[0].BaseOffset)

	p := fetchOne(t, cl, fetchReq(id, "p", 0, 0, 0, 1<<20))
	require.Zero(t, p.ErrorCode)
	assert.Equal(t, append(stored(first, 0), stored(second, 3)...), p.RecordBatches)
	assert.Equal(t, int64(5), p.HighWatermark)
	assert.Equal(t, int64(0), p.LogStartOffset)

	// A fetch inside the second batch returns it whole.
	p = fetchOne(t, cl, fetchReq(id, "p", 0, 4, 0, 1<<20))
	assert.Equal(t, stored(second, 3), p.RecordBatches)

	// A MaxBytes below the first batch still gets that batch, only it.
	p = fetchOne(t, cl, fetchReq(id, "p", 0, 0, 0, 1))
	assert.Equal(t, stored(first, 0), p.RecordBatches)

	// At the end: nothing; beyond it: OFFSET_OUT_OF_RANGE.
	p = fetchOne(t, cl, fetchReq(id, "p", 0, 5, 0, 1<<20))
	assert.Zero(t, p.ErrorCode)
	assert.Empty(t, p.RecordBatches)
	p = fetchOne(t, cl, fetchReq(id, "p", 0, 6, 0, 1<<20))
	assert.Equal(t, kerr.OffsetOutOfRange.Code, p.ErrorCode)
	p = fetchOne(t, cl, fetchReq(id, "p", 7, 0, 0, 1<<20))
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, p.ErrorCode)
	p = fetchOne(t, cl, fetchReq(uuid{9}, "p", 0, 0, 0, 1<<20))
	assert.Equal(t, kerr.UnknownTopicID.Code, p.ErrorCode)

	// Unknown partitions and bad batches are answered per partition.
	got = produce(t, cl, "p", 1, map[int32][]byte{9: first})
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, got[0].ErrorCode)
	bad := bytes.Clone(first)
	bad[len(bad)-1] ^= 0xff
	got = produce(t, cl, "p", 1, map[int32][]byte{0: bad})
	assert.Equal(t, kerr.CorruptMessage.Code, got[0].ErrorCode)
}

func TestFetchLongPollsUntilRecordsArrive(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	id := createTopic(t, b, "lp", 1, nil).TopicID
	cl := b.client()

	// Nothing arrives: the fetch waits MaxWait, then answers empty.
	start := time.Now()
	p := fetchOne(t, cl, fetchReq(id, "lp", 0, 0, 300*time.Millisecond, 1<<20))
	assert.Empty(t, p.RecordBatches)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)

	// Records arrive while it waits: it answers with them.
	done := make(chan kmsg.FetchResponseTopicPartition, 1)
	go func() {
		resp, err := cl.SeedBrokers()[0].Request(context.Background(), fetchReq(id, "lp", 0, 0, time.Minute, 1<<20))
		if err != nil {
			done <- kmsg.FetchResponseTopicPartition{ErrorCode: -1}
			return
		}
		done <- resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}()
	require.Eventually(t, func() bool { return b.srv.longPolls.Load() == 1 }, 10*time.Second, time.Millisecond)
	batch := engineBatch(t, 2, segment.EncodeOptions{})
	produce(t, b.client(), "lp", 1, map[int32][]byte{0: batch})
	select {
	case p := <-done:
		require.Zero(t, p.ErrorCode)
		assert.Equal(t, stored(batch, 0), p.RecordBatches)
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll did not answer")
	}
}

func TestShutdownAnswersAWaitingFetch(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	id := createTopic(t, b, "s", 1, nil).TopicID
	c := b.raw()
	req := fetchReq(id, "s", 0, 0, time.Hour, 1<<20)
	req.SetVersion(12)
	c.send(1, 12, 42, true, req.AppendTo(nil))
	require.Eventually(t, func() bool { return b.srv.longPolls.Load() == 1 }, 10*time.Second, time.Millisecond)
	b.stop()
	corr, body, err := c.recv()
	require.NoError(t, err, "the fetch in flight is answered before the connection closes")
	assert.Equal(t, int32(42), corr)
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	require.NoError(t, resp.ReadFrom(body[1:])) // after the header's tags
	assert.Empty(t, resp.Topics[0].Partitions[0].RecordBatches)
	closedByServer(t, c)
}

func TestIdempotentProducerDuplicatesAndErrors(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	createTopic(t, b, "i", 1, nil)
	cl := b.client()
	pid := roundTrip[*kmsg.InitProducerIDResponse](t, cl, kmsg.NewPtrInitProducerIDRequest()).ProducerID
	batch := func(epoch int16, seq int32) []byte {
		return engineBatch(t, 3, segment.EncodeOptions{ProducerID: pid + 1, ProducerEpoch: epoch, BaseSequence: seq})
	}
	first := produce(t, cl, "i", -1, map[int32][]byte{0: batch(0, 0)})[0]
	require.Zero(t, first.ErrorCode)
	tests := []struct {
		name       string
		batch      []byte
		code       int16
		baseOffset int64
	}{
		{"a retry is answered with the original offset", batch(0, 0), 0, first.BaseOffset},
		{"the next batch", batch(0, 3), 0, 3},
		{"a gap in sequences", batch(0, 10), kerr.OutOfOrderSequenceNumber.Code, -1},
		{"a new epoch from sequence 0", batch(1, 0), 0, 6},
		{"an old epoch is fenced", batch(0, 6), kerr.InvalidProducerEpoch.Code, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := produce(t, cl, "i", -1, map[int32][]byte{0: tt.batch})[0]
			assert.Equal(t, tt.code, got.ErrorCode)
			assert.Equal(t, tt.baseOffset, got.BaseOffset)
		})
	}
	l, err := b.store.Log("i", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(9), l.EndOffset(), "nothing written twice")
}

func TestProduceRefusals(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	createTopic(t, b, "r", 1, nil)
	cl := b.client()
	req := kmsg.NewPtrProduceRequest()
	txn := "t"
	req.TransactionID, req.Acks = &txn, -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "r"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = engineBatch(t, 1, segment.EncodeOptions{})
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	resp := roundTrip[*kmsg.ProduceResponse](t, cl, req)
	assert.Equal(t, kerr.TransactionalIDAuthorizationFailed.Code, resp.Topics[0].Partitions[0].ErrorCode)

	// acks=0 that fails: the connection is closed, so the client knows.
	c := b.raw()
	req.TransactionID, req.Acks = nil, 0
	req.Topics[0].Partitions[0].Partition = 3
	req.SetVersion(7)
	c.send(0, 7, 1, false, req.AppendTo(nil))
	closedByServer(t, c)

	// acks=0 that succeeds: no answer, and the next request's answer
	// comes first.
	c = b.raw()
	req.Topics[0].Partitions[0].Partition = 0
	c.send(0, 7, 1, false, req.AppendTo(nil))
	c.send(apiVersionsKey, 0, 2, false, nil)
	corr, _, err := c.recv()
	require.NoError(t, err)
	assert.Equal(t, int32(2), corr)
	l, err := b.store.Log("r", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1), l.EndOffset())
}

// resum sets a v2 batch's CRC-32C to match its bytes, as a producer that
// encoded the batch so would have.
func resum(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// largeBatch is a well-formed batch of at least n bytes.
func largeBatch(t *testing.T, n int) []byte {
	recs := make([]segment.Record, n/(1<<20)+1)
	for i := range recs {
		recs[i] = segment.Record{Value: make([]byte, 1<<20)}
	}
	b, err := segment.AppendBatch(nil, recs, segment.EncodeOptions{})
	require.NoError(t, err)
	return b
}

func TestProduceRefusesBadBatchesWithKafkasCodesAndStoresNothing(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	createTopic(t, b, "bad", 1, nil)
	cl := b.client()
	good := engineBatch(t, 3, segment.EncodeOptions{})
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name  string
		batch []byte
		code  int16
	}{
		{"a wrong CRC", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), kerr.CorruptMessage.Code},
		{"a records count below the records there", edit(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 2)
			return resum(b)
		}), kerr.InvalidRecord.Code},
		{"a last record longer than what is left", edit(func(b []byte) []byte {
			b = b[:len(b)-5]
			binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
			return resum(b)
		}), kerr.InvalidRecord.Code},
		{"magic 1", edit(func(b []byte) []byte { b[16] = 1; return b }), kerr.InvalidRecord.Code},
		{"magic 0", edit(func(b []byte) []byte { b[16] = 0; return b }), kerr.InvalidRecord.Code},
		{"two batches", append(bytes.Clone(good), good...), kerr.InvalidRecord.Code},
		{"no batch", []byte{}, kerr.InvalidRecord.Code},
		{"over the log's batch size limit", largeBatch(t, segment.DefaultMaxBatchBytes+1), kerr.MessageTooLarge.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := produce(t, cl, "bad", -1, map[int32][]byte{0: tt.batch})[0]
			assert.Equal(t, tt.code, got.ErrorCode, "%s", kerr.ErrorForCode(got.ErrorCode))
			assert.Equal(t, int64(-1), got.BaseOffset)
		})
	}
	l, err := b.store.Log("bad", 0)
	require.NoError(t, err)
	assert.Zero(t, l.EndOffset(), "no bad batch was stored")
	got := produce(t, cl, "bad", -1, map[int32][]byte{0: good})[0]
	assert.Zero(t, got.ErrorCode)
}

func TestFetchLimitsOfZeroStillReturnTheFirstBatchOnly(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	id := createTopic(t, b, "z", 2, nil).TopicID
	cl := b.client()
	var first [2][]byte
	for i := range 3 {
		batches := map[int32][]byte{0: engineBatch(t, 2, segment.EncodeOptions{}), 1: engineBatch(t, 2, segment.EncodeOptions{})}
		produce(t, cl, "z", -1, batches)
		if i == 0 {
			first = [2][]byte{stored(batches[0], 0), stored(batches[1], 0)}
		}
	}
	tests := []struct {
		name                   string
		maxBytes, partitionMax int32
	}{
		{"MaxBytes 0", 0, 1 << 20},
		{"MaxBytes 1", 1, 1 << 20},
		{"partition max bytes 0", 1 << 20, 0},
		{"both 0", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := fetchReq(id, "z", 0, 0, 0, tt.maxBytes)
			rp := req.Topics[0].Partitions[0]
			rp.Partition = 1
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
			for i := range req.Topics[0].Partitions {
				req.Topics[0].Partitions[i].PartitionMaxBytes = tt.partitionMax
			}
			resp := roundTrip[*kmsg.FetchResponse](t, cl, req)
			require.Len(t, resp.Topics[0].Partitions, 2)
			p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
			assert.Zero(t, p0.ErrorCode)
			assert.Zero(t, p1.ErrorCode)
			assert.Equal(t, first[0], p0.RecordBatches, "the first batch of the response, whatever the limits")
			assert.Empty(t, p1.RecordBatches, "nothing past the limits")
		})
	}
}

func TestFetchLongPollWaitsUntilMinBytesAccumulate(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	id := createTopic(t, b, "mb", 1, nil).TopicID
	cl := b.client()
	first, second := engineBatch(t, 1, segment.EncodeOptions{}), engineBatch(t, 1, segment.EncodeOptions{})
	done := make(chan kmsg.FetchResponseTopicPartition, 1)
	go func() {
		req := fetchReq(id, "mb", 0, 0, time.Minute, 1<<20)
		req.MinBytes = int32(len(first) + len(second))
		resp, err := b.client().SeedBrokers()[0].Request(context.Background(), req)
		if err != nil {
			done <- kmsg.FetchResponseTopicPartition{ErrorCode: -1}
			return
		}
		done <- resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	}()
	require.Eventually(t, func() bool { return b.srv.longPolls.Load() == 1 }, 10*time.Second, time.Millisecond)
	// One batch is less than MinBytes: the fetch goes on waiting, and
	// answers both batches once the second one arrives.
	produce(t, cl, "mb", 1, map[int32][]byte{0: first})
	produce(t, cl, "mb", 1, map[int32][]byte{0: second})
	select {
	case p := <-done:
		require.Zero(t, p.ErrorCode)
		assert.Equal(t, append(stored(first, 0), stored(second, 1)...), p.RecordBatches)
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll did not answer")
	}

	// A partition whose max bytes cut what it has cannot add to the
	// response by waiting: it is answered at once, short of MinBytes.
	req := fetchReq(id, "mb", 0, 0, time.Minute, 1<<20)
	req.MinBytes, req.Topics[0].Partitions[0].PartitionMaxBytes = 1<<20, 1
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	require.NoError(t, err, "the fetch waited for records that could not make it to MinBytes")
	assert.Equal(t, stored(first, 0), resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches)
}

func TestFetchLongPollAnswersAtOnceWhenAPartitionHasAnError(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	keptID := createTopic(t, b, "kept", 1, nil).TopicID
	tests := []struct {
		name   string
		offset int64        // of the second partition
		during func(string) // while the fetch waits
	}{
		{"an offset out of range", 5, nil},
		{"a topic deleted while the fetch waits", 0, func(topic string) {
			del := kmsg.NewPtrDeleteTopicsRequest()
			del.TopicNames = []string{topic}
			del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: &topic}}
			require.Zero(t, roundTrip[*kmsg.DeleteTopicsResponse](t, b.client(), del).Topics[0].ErrorCode)
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := fmt.Sprint("other", i)
			otherID := createTopic(t, b, other, 1, nil).TopicID
			req := fetchReq(keptID, "kept", 0, 0, time.Minute, 1<<20)
			req.Topics = append(req.Topics, fetchReq(otherID, other, 0, tt.offset, time.Minute, 1<<20).Topics[0])
			req.SetVersion(12) // topics by name: a deleted one is answered by name
			c := b.raw()
			c.send(1, 12, 1, true, req.AppendTo(nil))
			if tt.during != nil {
				require.Eventually(t, func() bool { return b.srv.longPolls.Load() == 1 }, 10*time.Second, time.Millisecond)
				tt.during(other)
			}
			_, body, err := c.recv() // within 10 s, against a MaxWait of a minute
			require.NoError(t, err, "the fetch waited with an error to answer")
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(12)
			require.NoError(t, resp.ReadFrom(body[1:]))
			require.Len(t, resp.Topics, 2)
			assert.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
			assert.NotZero(t, resp.Topics[1].Partitions[0].ErrorCode)
		})
	}
}

func TestProduceRefusesZstdBelowVersion7(t *testing.T) {
	b := startBroker(t, t.TempDir(), Options{})
	createTopic(t, b, "z", 1, nil)
	c := b.raw()
	for i, tt := range []struct {
		version int16
		code    int16
	}{
		{6, kerr.UnsupportedCompressionType.Code}, // zstd came with version 7
		{7, 0},
	} {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(tt.version)
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "z"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = engineBatch(t, 3, segment.EncodeOptions{Codec: segment.CodecZstd})
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
		req.Topics = []kmsg.ProduceRequestTopic{rt}
		c.send(0, tt.version, int32(i), false, req.AppendTo(nil))
		corr, body, err := c.recv()
		require.NoError(t, err)
		require.Equal(t, int32(i), corr)
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(tt.version)
		require.NoError(t, resp.ReadFrom(body))
		got := resp.Topics[0].Partitions[0]
		assert.Equal(t, tt.code, got.ErrorCode, "version %d: %s", tt.version, kerr.ErrorForCode(got.ErrorCode))
	}
	l, err := b.store.Log("z", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(3), l.EndOffset(), "only the version 7 batch is stored")
}
